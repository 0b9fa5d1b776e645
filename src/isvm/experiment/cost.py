"""``python -m isvm cost``: what a study config costs, in core-hours, before running it.

For every cell (data set, Ns) and method of the config it times a sample of the LOO
work on the study's own first subsample and scales it to the cell: per gamma, the
first grid point of the C path (a cold start) and ``stretches`` evenly spaced
stretches of ``points`` grid points, each run after ``LEAD_IN`` untimed grid points,
so that a stretch costs what it costs inside a run that walks the whole path. Before
any timing the config's methods are warmed up (:func:`isvm.warmup.warm_up`, as every
LOO job of the workflow does before its clock starts), so that numba's compilation of
a fresh checkout (one to three minutes) is not billed to the first cell. The
mean seconds per grid point of the stretches stand for the rest of the path; the
sum over gammas is one subsample's cost, times ``n_subsamples`` the cell's. Refit
methods (:data:`isvm.loo.LOO_METHODS`) are timed the same way. Times are this
machine's, one thread per job (the workflow's ``loo_threads`` divide a job's wall
time, not its core time). An estimate is within about a factor of two of a full run
of the same subsample (docs/benchmarks.md): a stretch run on its own starts without
the path's history (the engine's mode, the folds' previous solutions).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from isvm.loo.grid import c_grid

REQUIRED = ("datasets", "sizes", "n_subsamples", "seed", "grid", "methods")
#: untimed grid points run before each timed stretch, so that it starts warm
LEAD_IN = 2


def read_config(path: Path) -> dict:
    """The study config (YAML), with a clear error naming a missing key."""
    with open(path, encoding="utf-8") as fh:
        config = yaml.safe_load(fh) or {}
    missing = [key for key in REQUIRED if key not in config]
    if missing:
        raise ValueError(f"{path}: missing key(s) {', '.join(missing)}")
    if "default" not in config["sizes"]:
        raise ValueError(f"{path}: sizes.default is missing")
    return config


def sampled_path_starts(n_c: int, stretches: int, points: int) -> list[int]:
    """First indices (>= LEAD_IN) of the timed stretches, spread evenly along n_c values."""
    last = n_c - points
    if last < LEAD_IN:
        return []
    return sorted({int(round(s)) for s in np.linspace(LEAD_IN, last, stretches)})


def subsample_seconds(
    X: np.ndarray,
    y: np.ndarray,
    method: str,
    gammas: list[float],
    Cs: np.ndarray,
    *,
    tol: float,
    stretches: int,
    points: int,
) -> float:
    """Estimated seconds of one subsample's LOO grid (all gammas and C values)."""
    from isvm.loo.refit import loo_records

    cache: dict = {}
    total = 0.0
    for gamma in gammas:
        first = loo_records(X, y, method, [gamma], Cs[:1], tol=tol, kernel_cache=cache)
        seconds, counted = 0.0, 0
        for start in sampled_path_starts(len(Cs), stretches, points):
            path = Cs[start - LEAD_IN : start + points]
            frame = loo_records(X, y, method, [gamma], path, tol=tol, kernel_cache=cache)
            seconds += float(frame["seconds"].iloc[LEAD_IN:].sum())
            counted += len(path) - LEAD_IN
        rest = (seconds / counted) * (len(Cs) - 1) if counted else 0.0
        total += float(first["seconds"].iloc[0]) + rest
    return total


def estimate(
    config: dict,
    *,
    stretches: int = 4,
    points: int = 6,
    datasets: list[str] | None = None,
    log=print,
) -> pd.DataFrame:
    """One row per (data set, Ns, method): estimated seconds per subsample and core-hours."""
    from isvm.data import load_dataset
    from isvm.experiment.subsample import draw_subsamples
    from isvm.warmup import warm_up

    warm = warm_up(config["methods"])
    log(f"warm-up (numba's kernels loaded or compiled, not timed): {warm:.1f} s")
    grid = config["grid"]
    gammas = [float(g) for g in grid["gammas"]]
    Cs = c_grid(grid["C"]["start"], grid["C"]["stop"], grid["C"]["step"])
    tol = float(config.get("solver", {}).get("tol", 1e-3))
    scaling = config.get("data", {}).get("scaling", "zscore")
    n_sub = int(config["n_subsamples"])
    rows = []
    for name in datasets or config["datasets"]:
        data = load_dataset(name, source="bundled", scaling=scaling)
        for ns in sorted(config["sizes"].get(name, config["sizes"]["default"])):
            idx = draw_subsamples(data.y, ns, 1, seed=int(config["seed"]), dataset=name)[0]
            X, y = data.X[idx], data.y[idx]
            for method in config["methods"]:
                start = time.perf_counter()
                seconds = subsample_seconds(
                    X, y, method, gammas, Cs, tol=tol, stretches=stretches, points=points
                )
                rows.append(
                    {
                        "dataset": name,
                        "Ns": ns,
                        "method": method,
                        "seconds_per_subsample": seconds,
                        "core_hours": seconds * n_sub / 3600.0,
                        "sampled_seconds": time.perf_counter() - start,
                    }
                )
                log(
                    f"{name} Ns {ns} {method}: {seconds:.1f} s per subsample, "
                    f"{seconds * n_sub / 3600:.2f} core-hours"
                )
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame, cores: int) -> str:
    """Core-hours per row of Ns and in total, and the wall time on ``cores`` cores."""
    lines = ["| Ns | core-hours |", "|---|---|"]
    for ns, group in frame.groupby("Ns"):
        lines.append(f"| {ns} | {group['core_hours'].sum():.2f} |")
    total = frame["core_hours"].sum()
    lines.append(f"| all | {total:.2f} |")
    lines.append("")
    lines.append(
        f"Total {total:.2f} core-hours: about {total / cores:.1f} h of wall time on "
        f"{cores} cores (perfectly packed; the estimate itself took "
        f"{frame['sampled_seconds'].sum() / 60:.1f} min)."
    )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm cost``."""
    parser.add_argument("--configfile", type=Path, required=True, help="the study config (YAML)")
    parser.add_argument("--cores", type=int, default=2, help="cores for the wall-time figure")
    parser.add_argument("--stretches", type=int, default=4, help="timed stretches per C path")
    parser.add_argument("--points", type=int, default=6, help="grid points per stretch")
    parser.add_argument("--datasets", nargs="+", help="only these data sets of the config")
    parser.add_argument("--out", type=Path, help="also write the per-cell table as CSV")


def run(args: argparse.Namespace) -> int:
    """Print the settings, the per-cell estimates and the summary."""
    from isvm._memory import keep_freed_memory
    from isvm.data.registry import DataError

    keep_freed_memory()  # as the workflow's LOO jobs run (isvm.loo.cli)

    try:
        config = read_config(args.configfile)
        if args.cores < 1 or args.stretches < 1 or args.points < 1:
            raise ValueError("--cores, --stretches and --points must be >= 1")
        frame = estimate(
            config, stretches=args.stretches, points=args.points, datasets=args.datasets
        )
    except (DataError, OSError, ValueError, KeyError) as exc:
        print(f"isvm cost: error: {exc}", file=sys.stderr)
        return 2
    grid = config["grid"]
    print(
        f"Settings: {args.configfile}; {config['n_subsamples']} subsamples; gamma "
        f"{', '.join(map(str, grid['gammas']))} x C {grid['C']['start']} to {grid['C']['stop']} "
        f"step {grid['C']['step']}; methods {', '.join(config['methods'])}; sampled on the "
        f"first subsample, {args.stretches} stretches x {args.points} grid points per path; "
        "one thread, this machine.\n"
    )
    print(frame.to_markdown(index=False, floatfmt=".2f"))
    print()
    print(summary(frame, args.cores))
    if args.out:
        frame.to_csv(args.out, index=False)
    return 0
