# The LOO grid: one job per (data set, Ns, method, chunk of reps_per_job
# subsamples). Each subsample's solver streams derive from (seed, data set, Ns,
# subsample) alone, so chunking and threads never change a number.


rule loo:
    input:
        data="resources/datasets/{scaling}/{ds}.npz",
        subsamples=f"{RUN_DIR}/subsamples/{{ds}}/Ns{{ns}}.npy",
    output:
        f"{RUN_DIR}/loo/{{scaling}}/{{ds}}/Ns{{ns}}/{{method}}/{{chunk}}.parquet",
    log:
        f"{LOGS}/loo/{{scaling}}/{{ds}}/Ns{{ns}}/{{method}}/{{chunk}}.log",
    conda:
        "../../envs/isvm.yaml"
    threads: config["loo_threads"]
    resources:
        mem_mb=lambda wc: 4000 if wc.ds == "mnist" else 2000,
    params:
        grid=loo_grid_args(),
        reps=config["reps_per_job"],
        seed=config["seed"],
        estimator=own_method_args,
    shell:
        "python -m isvm loo --data {input.data} --subsamples {input.subsamples}"
        " --method {wildcards.method} {params.estimator} --chunk {wildcards.chunk}"
        " --reps-per-job {params.reps} {params.grid} --threads {threads}"
        " --seed {params.seed} --out {output} > {log} 2>&1"
