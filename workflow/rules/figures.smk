# Figures (PNG for the report, PDF beside each), every one with the settings
# in its footer.


rule figure_curves:
    input:
        records=lambda wc: loo_files(wc.ds),
    output:
        png=f"{FIGURES}/loo_curves_{{ds}}.png",
        pdf=f"{FIGURES}/loo_curves_{{ds}}.pdf",
    log:
        f"{LOGS}/figures/loo_curves_{{ds}}.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        near=config["figures"]["near"],
        caption=SETTINGS_TEXT,
    shell:
        "python -m isvm figures curves --records {input.records} --dataset {wildcards.ds}"
        " --near {params.near} --caption {params.caption:q} --out {output.png}"
        " > {log} 2>&1"


rule figure_near_best:
    input:
        records=loo_files(),
    output:
        png=f"{FIGURES}/near_best.png",
        pdf=f"{FIGURES}/near_best.pdf",
        csv=f"{FIGURES}/near_best.csv",
    log:
        f"{LOGS}/figures/near_best.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        caption=SETTINGS_TEXT,
    shell:
        "python -m isvm figures near-best --records {input.records}"
        " --caption {params.caption:q} --csv {output.csv} --out {output.png}"
        " > {log} 2>&1"


rule figures_table3:
    input:
        table3=f"{TABLES}/table3.csv",
        vs_paper=f"{TABLES}/table3_vs_paper.csv",
    output:
        heatmap=f"{FIGURES}/table3_differences.png",
        heatmap_pdf=f"{FIGURES}/table3_differences.pdf",
        scatter=f"{FIGURES}/table3_vs_paper.png",
        scatter_pdf=f"{FIGURES}/table3_vs_paper.pdf",
        advantage=f"{FIGURES}/isvm_advantage.png",
        advantage_pdf=f"{FIGURES}/isvm_advantage.pdf",
    log:
        f"{LOGS}/figures/table3.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        percentiles=" ".join(map(str, config["percentiles"])),
        caption=SETTINGS_TEXT,
    shell:
        "python -m isvm figures table3 --table3 {input.table3} --vs-paper {input.vs_paper}"
        " --percentiles {params.percentiles} --caption {params.caption:q}"
        " --heatmap {output.heatmap} --scatter {output.scatter}"
        " --advantage {output.advantage} > {log} 2>&1"
