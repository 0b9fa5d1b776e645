# Table 5: the Monte Carlo check of Bayes consistency (isvm.experiment.consistency).


rule consistency:
    output:
        table5=report(
            f"{TABLES}/table5.csv",
            caption="../report/table5.rst",
            category="Tables",
            labels={"table": "5: Bayes consistency"},
        ),
        table5_md=f"{TABLES}/table5.md",
        figure=report(
            f"{FIGURES}/consistency.png",
            caption="../report/consistency.rst",
            category="Figures",
            labels={"figure": "Bayes consistency (Table 5)"},
        ),
        figure_pdf=f"{FIGURES}/consistency.pdf",
    log:
        "results/logs/consistency.log",
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
