"""Re-run of Huerta et al. (2012), "Inhibition in Multiclass Classification", section 9.

data -> subsamples -> LOO grid -> tables -> figures (-> workflow/report.py).
Rules live in workflow/rules/*.smk and call the package's CLI (python -m isvm);
the logic lives in src/isvm. See README.md and docs/workflow.md.

    snakemake --workflow-profile workflow/profiles/default               # config/config.yaml
    snakemake --cores 2 --configfile config/smoke.yaml                   # about a minute
    snakemake --workflow-profile workflow/profiles/slurm --configfile config/paper.yaml
    python workflow/report.py smoke                                      # HTML report of a run
"""

from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


# Before Snakemake takes its lock: remove it if a killed run of this directory left it.
include: "workflow/rules/resume.smk"


# A --configfile replaces config/config.yaml instead of being merged into it, so
# that e.g. the smoke config's `sizes` is not mixed with the default's.
if not workflow.overwrite_configfiles:

    configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


include: "workflow/rules/config.smk"


config.update(typed(dict(config)))
# `sensitivity: null` means "not run", `part: null` "the whole study"
for _key in ("sensitivity", "part"):
    if config.get(_key, False) is None:
        del config[_key]
check_schema(config, Path(workflow.basedir) / "config" / "schema.yaml")
validate(config, "config/schema.yaml")  # fills in the defaults


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/loo.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/consistency.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/publish.smk"


rule all:
    default_target: True
    input:
        PART_FILES if PART else [published(f) for f in STAGED],
