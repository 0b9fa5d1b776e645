# The LOO grid: one job per (data set, Ns, method, chunk of reps_per_job
# subsamples). Each subsample's solver streams derive from (seed, data set, Ns,
# subsample) alone, so chunking and threads never change a number.


# Compile the numba kernels once before the LOO jobs (on the submit host), so that
# concurrent first jobs do not each compile them and their timing stays clean.
localrules:
    numba_warmup,


rule numba_warmup:
    output:
        NUMBA_WARMUP,
    log:
        "resources/logs/numba_warmup.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        source=SOURCE_HASH,  # a changed package reruns it (rerun trigger: params)
    shell:
        "python -m isvm warmup --out {output} > {log} 2>&1"


rule loo:
    input:
        data="resources/datasets/{scaling}/{ds}.npz",
        subsamples=f"{RUN_DIR}/subsamples/{{ds}}/Ns{{ns}}.npy",
        # ancient: a warm-up rerun after a source change must not make every LOO output stale
        warmup=ancient(NUMBA_WARMUP),
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
    shell:
        "python -m isvm loo --data {input.data} --subsamples {input.subsamples}"
        " --method {wildcards.method} --chunk {wildcards.chunk}"
        " --reps-per-job {params.reps} {params.grid} --threads {threads}"
        " --seed {params.seed} --out {output} > {log} 2>&1"
