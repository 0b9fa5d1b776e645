# Table 5: the Monte Carlo check of Bayes consistency (isvm.experiment.consistency).


rule consistency:
    output:
        table5=f"{TABLES}/table5.csv",
        table5_md=f"{TABLES}/table5.md",
        figure=f"{FIGURES}/consistency.png",
        figure_pdf=f"{FIGURES}/consistency.pdf",
    log:
        f"{LOGS}/consistency.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        draws=config["consistency"]["draws"],
        L=" ".join(map(str, config["consistency"]["L"])),
        seed=config["seed"],
        stem=lambda wildcards, output: output.table5[: -len(".csv")],
    shell:
        "python -m isvm consistency table --draws {params.draws} --seed {params.seed}"
        " --L {params.L} --out-stem {params.stem} --figure {output.figure}"
        " > {log} 2>&1"
