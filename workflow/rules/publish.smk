# Publishing (isvm.publish): the table, figure and consistency jobs write under
# results/<run>/.staging/; rule publish copies all of it to
# results/<run>/{tables,figures,timing}/ once every one of them has succeeded, so a
# failed rerun loses only staged files. The report entries (captions) are on the
# published files.


localrules:
    publish,


rule publish:
    input:
        STAGED,
    output:
        [published_output(f) for f in STAGED],
    log:
        f"{LOGS}/publish.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        caption=SETTINGS_TEXT,  # the report's captions state the settings
        near=config["figures"]["near"],
    shell:
        "python -m isvm publish --staged {input} --to {output} > {log} 2>&1"
