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


def config_problems(config: Config) -> list[tuple[str, str]]:
    """What the schema cannot express, as (dotted key, message); empty when all is well."""
    problems = []
    datasets, sizes = list(config["datasets"]), config["sizes"]
    for key in sizes:
        if key != "default" and key not in datasets:
            problems.append(
                (
                    f"sizes.{key}",
                    f"'{key}' is not in datasets ({', '.join(datasets)}); "
                    "list it there or remove its sizes",
                )
            )
    for ds in datasets:
        n_rows = REGISTRY[ds].n_rows
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
    }


def loo_grid_args(config: Config) -> str:
    """The grid and solver arguments of ``isvm loo``."""
    C, solver = config["grid"]["C"], config["solver"]
    args = ["--gammas", *map(str, config["grid"]["gammas"])]
    args += ["--C-start", str(C["start"]), "--C-stop", str(C["stop"])]
    args += ["--C-step", str(C["step"]), "--tol", str(solver["tol"])]
    if solver["max_iter"] is not None:
        args += ["--max-iter", str(solver["max_iter"])]
    return " ".join(args)
