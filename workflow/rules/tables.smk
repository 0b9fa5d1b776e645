# Tables 2-4, the LOO diagnostics (tables/) and the training-time table
# (timing/: wall-clock, so kept apart from the byte-reproducible tables).


rule tables:
    input:
        records=loo_files(),
        datasets=[dataset_file(ds) for ds in DATASETS],
    output:
        table2=f"{TABLES}/table2.csv",
        table2_md=f"{TABLES}/table2.md",
        table3=f"{TABLES}/table3.csv",
        table3_md=f"{TABLES}/table3.md",
        table3_long=f"{TABLES}/table3_long.csv",
        table3_long_md=f"{TABLES}/table3_long.md",
        table3_vs_paper=f"{TABLES}/table3_vs_paper.csv",
        table3_vs_paper_md=f"{TABLES}/table3_vs_paper.md",
        table3_rows=f"{TABLES}/table3_rows.csv",
        table3_rows_md=f"{TABLES}/table3_rows.md",
        table4=f"{TABLES}/table4.csv",
        table4_md=f"{TABLES}/table4.md",
        table4_long=f"{TABLES}/table4_long.csv",
        table4_long_md=f"{TABLES}/table4_long.md",
        table4_vs_paper=f"{TABLES}/table4_vs_paper.csv",
        table4_vs_paper_md=f"{TABLES}/table4_vs_paper.md",
        diagnostics=f"{TABLES}/loo_diagnostics.csv",
        diagnostics_md=f"{TABLES}/loo_diagnostics.md",
        timing=f"{TIMING}/training_time.csv",
        timing_md=f"{TIMING}/training_time.md",
    log:
        f"{LOGS}/tables.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        settings=SETTINGS_ARGS,
        caption=SETTINGS_TEXT,
        percentiles=" ".join(map(str, config["percentiles"])),
        pooling=config["pooling"],
        methods=" ".join(METHODS),
        comparisons=study.comparison_args(config),
        out_dir=parent_of("table2"),
        timing_dir=parent_of("timing"),
    shell:
        "python -m isvm tables --records {input.records} --datasets {input.datasets}"
        " --percentiles {params.percentiles} --pooling {params.pooling}"
        " --methods {params.methods} {params.comparisons} {params.settings}"
        " --out-dir {params.out_dir} --timing-dir {params.timing_dir} > {log} 2>&1"


# Config key `sensitivity`: Table 3 under each reading of what the paper leaves open.
if SENSITIVITY:

    rule sensitivity:
        input:
            records=SENSITIVITY_FILES,
        output:
            table=f"{TABLES}/sensitivity.csv",
            table_md=f"{TABLES}/sensitivity.md",
            datasets=f"{TABLES}/sensitivity_datasets.csv",
            datasets_md=f"{TABLES}/sensitivity_datasets.md",
            figure=f"{FIGURES}/sensitivity.png",
            figure_pdf=f"{FIGURES}/sensitivity.pdf",
        log:
            f"{LOGS}/sensitivity.log",
        conda:
            "../../envs/isvm.yaml"
        params:
            n_subsamples=SENSITIVITY["n_subsamples"],
            scalings=" ".join(SENSITIVITY["scalings"]),
            poolings=" ".join(SENSITIVITY["poolings"]),
            ww_methods=" ".join(SENSITIVITY["ww_methods"]),
            percentiles=" ".join(map(str, config["percentiles"])),
            settings=SETTINGS_ARGS,
            caption=SETTINGS_TEXT,
            out_dir=parent_of("table"),
        shell:
            "python -m isvm sensitivity --records {input.records}"
            " --n-subsamples {params.n_subsamples} --scalings {params.scalings}"
            " --poolings {params.poolings} --ww-methods {params.ww_methods}"
            " --percentiles {params.percentiles} {params.settings}"
            " --out-dir {params.out_dir} --figure {output.figure}"
            " --caption {params.caption:q} > {log} 2>&1"
