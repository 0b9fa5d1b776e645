# Publishing: the table, figure and consistency jobs write under results/<run>/.staging/;
# rule publish copies all of it to results/<run>/{tables,figures,timing}/ once every
# one of them has succeeded. Snakemake deletes a job's outputs before running it and
# after it fails, so a failed rerun now loses only staged files: the published tables
# of the last complete run stay. The report entries (captions) are on the published files.


localrules:
    publish,


rule publish:
    input:
        STAGED,
    output:
        [published_output(f) for f in STAGED],
    log:
        f"{LOGS}/publish.log",
    params:
        caption=SETTINGS_TEXT,  # the report's captions state the settings
        near=config["figures"]["near"],
    run:
        publish(input, output, log[0])
