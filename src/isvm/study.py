"""A study config read as the workflow needs it: its cells, its checks, its settings text.

The Snakefile validates the config against ``config/schema.yaml`` and then asks this
module what the schema cannot say (:func:`config_problems`), which (data set, Ns) cells
to run (:func:`cells`, :func:`part_cells`), the settings every table and figure states
(:func:`settings`) and the grid arguments of ``isvm loo`` (:func:`loo_grid_args`).
Light on purpose (the data registry and the C grid: standard library and NumPy), so
that parsing the Snakefile loads no engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from isvm.data.registry import REGISTRY
from isvm.loo.grid import c_grid

Config = Mapping[str, Any]

#: a run name: results/<name>/
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def sizes_of(config: Config, dataset: str) -> list[int]:
    """The training-set sizes of ``dataset``, ascending (its own list, else ``default``)."""
    sizes = config["sizes"]
    return sorted(sizes.get(dataset, sizes["default"]))


def cells(config: Config) -> list[tuple[str, int]]:
    """Every (data set, Ns) of the study, in config order."""
    return [(ds, ns) for ds in config["datasets"] for ns in sizes_of(config, ds)]


def part_cells(config: Config) -> list[tuple[str, int]]:
    """The cells config key ``part`` selects (all of them without it)."""
    part = config.get("part") or {}
    datasets = part.get("datasets", config["datasets"])
    return [
        (ds, ns) for ds, ns in cells(config) if ds in datasets and ns in part.get("sizes", [ns])
    ]


def c_values(config: Config) -> list[float]:
    """The C grid the LOO jobs run (:func:`isvm.loo.grid.c_grid`)."""
    C = config["grid"]["C"]
    return [float(c) for c in c_grid(C["start"], C["stop"], C["step"])]


def run_name(config: Config, configfiles: Sequence[str | Path]) -> tuple[str, str | None]:
    """(config key ``name``, or the last config file's stem, or 'config'; a problem or None)."""
    if config.get("name"):
        return config["name"], None
    stem = Path(configfiles[-1]).stem if configfiles else "config"
    if not RUN_NAME.fullmatch(stem):
        return stem, (
            f"the config file's stem '{stem}' is not a usable run name; "
            "set `name:` (letters, digits, '_', '.', '-') in the config"
        )
    return stem, None


def _n_rows(config: Config, problems: list[tuple[str, str]]) -> dict[str, int]:
    """Rows of every data set of the config: the registry's, or an ``own_datasets``
    entry's by loading it (its problems appended to ``problems``)."""
    own = config.get("own_datasets") or {}
    rows = {}
    for ds in config["datasets"]:
        if ds in REGISTRY and ds not in own:
            rows[ds] = REGISTRY[ds].n_rows
        elif ds in own:
            n_rows, found = own_dataset_rows(ds, own[ds])
            problems += found
            if n_rows is not None:
                rows[ds] = n_rows
        else:
            problems.append(
                (
                    "datasets",
                    f"unknown data set '{ds}': not one of the paper's "
                    f"({', '.join(sorted(REGISTRY))}) nor of own_datasets "
                    f"({', '.join(own) or 'none defined'})",
                )
            )
    return rows


def own_dataset_rows(
    name: str, definition: Mapping[str, Any]
) -> tuple[int | None, list[tuple[str, str]]]:
    """Rows of an ``own_datasets`` entry after its preprocessing, found by loading it,
    or None and its problems as (config key, message) (:mod:`isvm.data.own`)."""
    from isvm.data.load import load_own
    from isvm.data.own import DefinitionError

    try:
        return load_own(name, definition, "none").n_examples, []
    except DefinitionError as exc:  # every problem of a definition is one
        return None, [(exc.key, exc.message)]


def _method_problems(config: Config) -> list[tuple[str, str]]:
    """Methods that are neither built in nor defined under ``own_methods``, and the
    ``own_methods`` definitions that do not resolve to a scikit-learn classifier."""
    from isvm.experiment.lrt import check_pairs
    from isvm.loo.refit import LOO_METHODS

    own = config.get("own_methods") or {}
    problems = []
    pairs = config.get("comparisons") or ()
    for pair in pairs:
        missing = [m for m in pair if m not in config["methods"]]
        if missing:
            problems.append(("comparisons", f"{list(pair)}: '{missing[0]}' is not in methods"))
    try:
        if pairs:
            check_pairs(pairs)
    except ValueError as exc:  # a method against itself, a column twice
        problems.append(("comparisons", str(exc)))
    for method in config["methods"]:
        if method not in LOO_METHODS and method not in own:
            problems.append(
                (
                    "methods",
                    f"unknown method '{method}': not built in ({', '.join(sorted(LOO_METHODS))}) "
                    f"nor defined under own_methods ({', '.join(own) or 'none defined'})",
                )
            )
    if own:
        from isvm.loo.estimator_method import definition_problems, name_problems

        for name, definition in own.items():
            found = name_problems(name) + definition_problems(name, definition)
            problems += [(f"own_methods.{name}", m) for m in found]
    return problems


def config_problems(config: Config) -> list[tuple[str, str]]:
    """What the schema cannot express, as (dotted key, message); empty when all is well."""
    problems: list[tuple[str, str]] = []
    datasets, sizes = list(config["datasets"]), config["sizes"]
    n_rows_of = _n_rows(config, problems)
    problems += _method_problems(config)
    for key in sizes:
        if key != "default" and key not in datasets:
            problems.append(
                (
                    f"sizes.{key}",
                    f"'{key}' is not in datasets ({', '.join(datasets)}); "
                    "list it there or remove its sizes",
                )
            )
    for ds in n_rows_of:
        n_rows = n_rows_of[ds]
        too_big = [ns for ns in sizes_of(config, ds) if ns > n_rows]
        if too_big:
            own = ds in sizes
            hint = "" if own else f"; give {ds} its own list under sizes.{ds}"
            problems.append(
                (
                    f"sizes.{ds}" if own else "sizes.default",
                    f"Ns {', '.join(map(str, too_big))} is larger than data set '{ds}' "
                    f"({n_rows} rows){hint}",
                )
            )
    C = config["grid"]["C"]
    if not C["start"] < C["stop"]:
        problems.append(("grid.C", f"start ({C['start']}) must be below stop ({C['stop']})"))
    for q in config["percentiles"]:
        if not 0 < q <= 100:
            problems.append(("percentiles", f"{q} is not in (0, 100]"))
    sens = config.get("sensitivity")
    if sens and sens["n_subsamples"] > config["n_subsamples"]:
        problems.append(
            (
                "sensitivity.n_subsamples",
                f"{sens['n_subsamples']} is more than n_subsamples ({config['n_subsamples']})",
            )
        )
    part = config.get("part")
    if part:
        missing = [ds for ds in part.get("datasets", []) if ds not in datasets]
        if missing:
            problems.append(
                (
                    "part.datasets",
                    f"'{missing[0]}' is not in datasets ({', '.join(datasets)})",
                )
            )
        elif not part_cells(config):
            problems.append(("part", f"{dict(part)} selects no (data set, Ns) cell of this config"))
    return problems


def _fmt(x: float) -> str:
    return f"{x:g}"


def settings(config: Config, configfiles: Sequence[str | Path]) -> dict[str, object]:
    """The settings every table and figure states, in order.

    Nothing that cannot change a number (chunking, threads, ``part``), so that tables
    stay byte-identical across those.
    """
    grid, solver, Cs = config["grid"], config["solver"], c_values(config)
    datasets = list(config["datasets"])
    max_iter = solver["max_iter"] if solver["max_iter"] is not None else "default"
    return {
        "config": ", ".join(Path(f).name for f in configfiles or ["config/config.yaml"]),
        "datasets": ", ".join(datasets),
        "sizes (Ns)": "; ".join(
            f"{ds} {', '.join(map(str, sizes_of(config, ds)))}" for ds in datasets
        ),
        "n_subsamples": config["n_subsamples"],
        "grid": (
            f"gamma {', '.join(map(_fmt, grid['gammas']))} x C {_fmt(Cs[0])} to "
            f"{_fmt(Cs[-1])} step {_fmt(grid['C']['step'])} ({len(Cs)} values)"
        ),
        "methods": ", ".join(config["methods"]),
        "solver": f"{solver['name']}, tol {_fmt(solver['tol'])}, max_iter {max_iter}",
        "seed": config["seed"],
        "pooling (ranking)": config["pooling"],
        "percentiles": ", ".join(map(_fmt, config["percentiles"])),
        "data": f"source {config['data']['source']}, scaling {config['data']['scaling']}",
        **_own_settings(config),
    }


def _describe(definition: Mapping[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(definition.items()))


def _own_settings(config: Config) -> dict[str, str]:
    """The definitions of the config's own data sets, methods and Table 4 pairs, where
    it has them (absent otherwise, so that the paper's tables keep their bytes)."""
    out = {}
    own_data = config.get("own_datasets") or {}
    if own_data:
        out["own data sets"] = "; ".join(f"{k}: {_describe(v)}" for k, v in own_data.items())
    own_methods = config.get("own_methods") or {}
    if own_methods:
        from isvm.loo.estimator_method import estimator_method, grid_note

        out["own methods (refit LOO)"] = "; ".join(
            f"{k}: {v['estimator']}({_describe(v.get('params') or {})}), "
            + grid_note(estimator_method(k, v))
            for k, v in own_methods.items()
        )
    if config.get("comparisons"):
        out["Table 4 pairs"] = ", ".join(f"{m} vs {r}" for m, r in config["comparisons"])
    return out


def comparison_args(config: Config) -> str:
    """Table 4's pairs as ``isvm tables`` arguments (``--comparisons METHOD:RIVAL ...``;
    nothing without the ``comparisons`` key: the paper's pairs)."""
    pairs = config.get("comparisons")
    return " ".join(["--comparisons", *(f"{m}:{r}" for m, r in pairs)]) if pairs else ""


def loo_grid_args(config: Config) -> str:
    """The grid and solver arguments of ``isvm loo``."""
    C, solver = config["grid"]["C"], config["solver"]
    args = ["--gammas", *map(str, config["grid"]["gammas"])]
    args += ["--C-start", str(C["start"]), "--C-stop", str(C["stop"])]
    args += ["--C-step", str(C["step"]), "--tol", str(solver["tol"])]
    if solver["max_iter"] is not None:
        args += ["--max-iter", str(solver["max_iter"])]
    return " ".join(args)


def sensitivity_methods(config: Config) -> list[str]:
    """The methods of the sensitivity study (none without the ``sensitivity`` key)."""
    sens = config.get("sensitivity")
    return ["isvm", "ova", *sens["ww_methods"]] if sens else []


def _n_chunks(n_subsamples: int, config: Config) -> int:
    """LOO jobs for ``n_subsamples`` subsamples, ``reps_per_job`` each."""
    return -(-int(n_subsamples) // int(config["reps_per_job"]))


def loo_files(
    config: Config,
    run_dir: str,
    *,
    dataset: str | None = None,
    scaling: str | None = None,
    methods: Sequence[str] | None = None,
    n_chunks: int | None = None,
    selected: Sequence[tuple[str, int]] | None = None,
) -> list[str]:
    """LOO record files under ``run_dir``: the study's (of one data set when ``dataset``
    is given) unless the scaling, methods, number of chunks or cells say otherwise."""
    scaling = config["data"]["scaling"] if scaling is None else scaling
    methods = list(config["methods"]) if methods is None else methods
    if n_chunks is None:
        n_chunks = _n_chunks(config["n_subsamples"], config)
    return [
        f"{run_dir}/loo/{scaling}/{ds}/Ns{ns}/{m}/{c}.parquet"
        for ds, ns in (cells(config) if selected is None else selected)
        if dataset is None or ds == dataset
        for m in methods
        for c in range(n_chunks)
    ]


def sensitivity_files(
    config: Config, run_dir: str, selected: Sequence[tuple[str, int]] | None = None
) -> list[str]:
    """The sensitivity study's LOO record files (none without the ``sensitivity`` key)."""
    sens = config.get("sensitivity")
    if not sens:
        return []
    n_chunks = _n_chunks(sens["n_subsamples"], config)
    return sorted(
        {
            f
            for scaling in sens["scalings"]
            for f in loo_files(
                config,
                run_dir,
                scaling=scaling,
                methods=sensitivity_methods(config),
                n_chunks=n_chunks,
                selected=selected,
            )
        }
    )


TABLE = ("csv", "md")
FIGURE = ("png", "pdf")


def outputs(config: Config) -> dict[str, tuple[tuple[str, ...], str | None, dict | None]]:
    """Every table and figure a run publishes, in one place: its path under the run's
    staging folder, without extension -> (extensions, report caption file in
    workflow/report/ or None, the report's labels). Adding a table or figure is one
    entry here plus the output of the job that makes it."""
    out: dict[str, tuple[tuple[str, ...], str | None, dict | None]] = {
        "tables/table2": (TABLE, "table2", {"table": "2: data sets"}),
        "tables/table3": (TABLE, "table3", {"table": "3: top-q% mean LOO accuracy"}),
        "tables/table3_long": (TABLE, None, None),
        "tables/table3_vs_paper": (TABLE, "table3_vs_paper", {"table": "3 vs the paper"}),
        "tables/table3_rows": (TABLE, "table3_rows", {"table": "3 vs the paper, per row of Ns"}),
        "tables/table4": (TABLE, "table4", {"table": "4: likelihood-ratio tests"}),
        "tables/table4_long": (TABLE, None, None),
        "tables/table4_vs_paper": (TABLE, "table4_vs_paper", {"table": "4 vs the paper"}),
        "tables/loo_diagnostics": (TABLE, "loo_diagnostics", {"table": "LOO diagnostics"}),
        "tables/table5": (TABLE, "table5", {"table": "5: Bayes consistency"}),
        "timing/training_time": (TABLE, "training_time", {"table": "training time"}),
    }
    for ds in config["datasets"]:
        labels = {"figure": "LOO accuracy against C", "data set": ds}
        out[f"figures/loo_curves_{ds}"] = (FIGURE, "loo_curves", labels)
    out.update(
        {
            "figures/near_best": (
                (*FIGURE, "csv"),  # the shares drawn, beside the figure
                "near_best",
                {"figure": "share of the grid near the best"},
            ),
            "figures/table3_differences": (
                FIGURE,
                "table3_differences",
                {"figure": "Table 3 differences"},
            ),
            "figures/table3_vs_paper": (
                FIGURE,
                "table3_scatter",
                {"figure": "Table 3: ours vs the paper"},
            ),
            "figures/isvm_advantage": (
                FIGURE,
                "isvm_advantage",
                {"figure": "ISVM minus rival against Ns"},
            ),
            "figures/consistency": (
                FIGURE,
                "consistency",
                {"figure": "Bayes consistency (Table 5)"},
            ),
        }
    )
    if config.get("sensitivity"):
        out["tables/sensitivity"] = (
            TABLE,
            "sensitivity",
            {"table": "3: sensitivity to the readings"},
        )
        out["tables/sensitivity_datasets"] = (TABLE, None, None)
        out["figures/sensitivity"] = (FIGURE, "sensitivity", {"figure": "Table 3 sensitivity"})
    return out


def output_files(config: Config, stage: str) -> list[str]:
    """The files of :func:`outputs` under ``stage``."""
    return [
        f"{stage}/{stem}.{ext}" for stem, (exts, _, _) in outputs(config).items() for ext in exts
    ]


def reported(config: Config) -> dict[str, tuple[str, str, dict]]:
    """Caption file, report category and labels of each reported output, by its path
    under the run's folder (the first extension of its :func:`outputs` entry)."""
    return {
        f"{stem}.{exts[0]}": (
            caption,
            "Tables" if stem.startswith(("tables/", "timing/")) else "Figures",
            labels,
        )
        for stem, (exts, caption, labels) in outputs(config).items()
        if caption is not None
    }
