# Data sets (resources/datasets/{scaling}/{ds}.npz) and the seeded subsamples
# (results/<run>/subsamples/{ds}/Ns{ns}.npy). Both are quick and run on the submit
# host: compute nodes often have no internet, and hundreds of one-second jobs
# would only flood a scheduler.


localrules:
    fetch_data,
    subsample,


# A data set of `own_datasets` is read from its definition (passed as JSON, so an edit
# of it reruns the job), and its local file is an input (an edit of the file too).
rule fetch_data:
    input:
        own_dataset_input,
    output:
        "resources/datasets/{scaling}/{ds}.npz",
    log:
        "resources/logs/data/{scaling}/{ds}.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        source=config["data"]["source"],
        definition=own_dataset_args,
    shell:
        "python -m isvm data fetch {wildcards.ds} --source {params.source}"
        " --scaling {wildcards.scaling} --cache-dir resources/openml-cache"
        " {params.definition} --out {output} > {log} 2>&1"


# Subsamples come from the study's scaling; rows and labels are the same under every
# scaling (isvm.data.preprocess.scale), so the sensitivity study uses them too.
rule subsample:
    input:
        dataset_file("{ds}"),
    output:
        f"{RUN_DIR}/subsamples/{{ds}}/Ns{{ns}}.npy",
    log:
        f"{LOGS}/subsamples/{{ds}}/Ns{{ns}}.log",
    conda:
        "../../envs/isvm.yaml"
    params:
        n_subsamples=config["n_subsamples"],
        seed=config["seed"],
    shell:
        "python -m isvm subsample --data {input} --ns {wildcards.ns}"
        " --n-subsamples {params.n_subsamples} --seed {params.seed}"
        " --out {output} > {log} 2>&1"
