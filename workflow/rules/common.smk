# Shared by every rule: the config's cross-field checks, cells, settings text, LOO file
# lists and the registry of published tables and figures (all from isvm.study), `part`,
# the staging and report helpers. Imports only isvm's light modules (isvm.study, isvm.source:
# standard library and NumPy, no numba), from this checkout's src/ whether or not the
# package is installed in snakemake's environment.

import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

ROOT = Path(workflow.basedir)

# Rules call `python -m isvm`. Put the interpreter that runs snakemake first on
# PATH, so `.venv/bin/snakemake` works without activating the venv; with
# `--sdm conda` the rule's environment (envs/isvm.yaml) is activated on top.
os.environ.update(
    PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
)
# envs/isvm.yaml pip-installs the project from here (`-e ${ISVM_ROOT}`).
os.environ.setdefault("ISVM_ROOT", str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
from isvm.source import workflow_numba_cache

#: numba's on-disk cache, in the working directory, so that every LOO job reads what
#: the first ones compiled (each job warms up its method before its clock starts;
#: local jobs inherit the variable, SLURM jobs re-read this Snakefile in the same
#: directory), one folder per source hash: numba keys a kernel on its own file only,
#: so after an edit of another module a cached caller would keep the old callee
#: compiled into it. A NUMBA_CACHE_DIR already set in the environment is kept.
NUMBA_CACHE = workflow_numba_cache()
os.environ.setdefault("NUMBA_CACHE_DIR", str(NUMBA_CACHE))

from isvm import study


def config_error(key, message):
    raise WorkflowError(f"config key '{key}': {message}")


DATASETS = list(config["datasets"])
METHODS = list(config["methods"])
CONFIGFILES = list(workflow.overwrite_configfiles)
for _key, _message in study.config_problems(config):
    config_error(_key, _message)  # the first problem stops the run


def sizes_of(ds):
    """The training-set sizes of data set ``ds``, ascending."""
    return study.sizes_of(config, ds)


_name, _problem = study.run_name(config, CONFIGFILES)
if _problem:
    config_error("name", _problem)
#: The run's name and folder: every output of this config lands under results/<name>/.
RUN = _name
RUN_DIR = f"results/{RUN}"

CELLS = study.cells(config)
#: the feature scaling of the study (data sets are kept per scaling)
SCALING = config["data"]["scaling"]


def dataset_file(ds, scaling=SCALING):
    return f"resources/datasets/{scaling}/{ds}.npz"


#: data sets and methods the config defines (config keys `own_datasets`, `own_methods`)
OWN_DATASETS = config.get("own_datasets") or {}
OWN_METHODS = config.get("own_methods") or {}


def own_dataset_input(wildcards):
    """The local file of an `own_datasets` entry (none for the registry's and OpenML's)."""
    definition = OWN_DATASETS.get(wildcards.ds) or {}
    return [definition["file"]] if definition.get("file") else []


def definition_arg(option, definition):
    """`--OPTION JSON` for a definition of the config (None: nothing)."""
    if definition is None:
        return ""
    return f"--{option} {shlex.quote(json.dumps(definition, sort_keys=True))}"


def own_dataset_args(wildcards):
    """`--definition JSON` for an `own_datasets` entry, else nothing."""
    return definition_arg("definition", OWN_DATASETS.get(wildcards.ds))


def own_method_args(wildcards):
    """`--estimator JSON` for an `own_methods` entry, else nothing."""
    return definition_arg("estimator", OWN_METHODS.get(wildcards.method))


def loo_files(ds=None, scaling=SCALING, methods=METHODS, cells=CELLS):
    """LOO record files: the study's (of one data set when ``ds`` is given) by default."""
    return study.loo_files(
        config, RUN_DIR, dataset=ds, scaling=scaling, methods=methods, selected=cells
    )


#: the sensitivity study (config key `sensitivity`): readings of what the paper leaves open
SENSITIVITY = config.get("sensitivity")
SENSITIVITY_METHODS = study.sensitivity_methods(config)
SENSITIVITY_FILES = study.sensitivity_files(config, RUN_DIR)

#: config key `part`: only these cells' LOO records (the study's and the sensitivity
#: study's), in the whole run's paths, so that parts add up to the whole
PART = config.get("part")
PART_FILES = []
if PART:
    _part_cells = study.part_cells(config)
    PART_FILES = loo_files(cells=_part_cells) + study.sensitivity_files(
        config, RUN_DIR, _part_cells
    )
    print(
        f"part {PART}: the LOO records of {len(_part_cells)} (data set, Ns) cells only; "
        "the same command without `part` builds the tables",
        file=sys.stderr,
    )

#: The settings every table and figure states (isvm.study.settings).
SETTINGS = study.settings(config, CONFIGFILES)

#: The settings as one line (figure footers and report captions).
SETTINGS_TEXT = "Settings: " + "; ".join(f"{k}: {v}" for k, v in SETTINGS.items())

#: The settings as `--setting=KEY=VALUE` arguments of `isvm tables`.
SETTINGS_ARGS = " ".join(shlex.quote(f"--setting={k}={v}") for k, v in SETTINGS.items())


def loo_grid_args():
    """The grid and solver arguments of `isvm loo`."""
    return study.loo_grid_args(config)


def parent_of(name):
    """A params function: the directory of output ``name``."""
    return lambda wildcards, output: str(Path(output[name]).parent)


#: Tables, figures and timing are built under STAGE and copied to RUN_DIR by rule
#: publish once all of them are built (workflow/rules/publish.smk): Snakemake deletes
#: a job's outputs before running it and after a failure, so a failed rerun of a
#: table or figure job must not own the published files.
STAGE = f"{RUN_DIR}/.staging"
TABLES = f"{STAGE}/tables"
FIGURES = f"{STAGE}/figures"
TIMING = f"{STAGE}/timing"
LOGS = f"{RUN_DIR}/logs"
#: Everything the publish step copies from STAGE to RUN_DIR (registry: isvm.study.outputs)
STAGED = study.output_files(config, STAGE)


wildcard_constraints:
    ds="|".join(DATASETS),
    ns=r"\d+",
    method="|".join(sorted(set(METHODS) | set(SENSITIVITY_METHODS))),
    scaling="|".join(sorted({SCALING, *(SENSITIVITY or {}).get("scalings", [])})),
    chunk=r"\d+",


def published(path):
    """Where staged file ``path`` (under STAGE) is published (under RUN_DIR)."""
    return RUN_DIR + path[len(STAGE) :]


#: caption file (workflow/report/), category and labels of each reported file
REPORTED = study.reported(config)


def published_output(staged):
    """The published path of ``staged``, flagged for the report where it has a caption."""
    path = published(staged)
    entry = REPORTED.get(path[len(RUN_DIR) + 1 :])
    if entry is None:
        return path
    caption, category, labels = entry
    extra = {"subcategory": "LOO accuracy against C"} if caption == "loo_curves" else {}
    return report(
        path,
        caption=f"../report/{caption}.rst",
        category=category,
        labels=labels,
        **extra,
    )


def record_run():
    """Write results/<run>/run.json: how this run was started, for workflow/report.py."""
    settings = workflow.config_settings
    record = {
        "name": RUN,
        "snakefile": str(Path(workflow.main_snakefile).resolve()),
        "workdir": str(Path.cwd()),
        "configfiles": [str(Path(f).resolve()) for f in workflow.overwrite_configfiles],
        "config_args": list(settings.config_args or []),
    }
    Path(RUN_DIR).mkdir(parents=True, exist_ok=True)
    Path(RUN_DIR, "run.json").write_text(json.dumps(record, indent=1) + "\n")


onstart:
    record_run()
