"""``python -m isvm cost``: what a study config costs, before running it.

The config is read as the Snakefile reads it (``workflow/rules/config.smk``'s checks,
the schema's defaults filled in, :func:`isvm.study.config_problems`), and the estimate
has one line per thing the workflow pays for:

* numba's compilation of the LOO kernels, once per fresh cache and one process at a
  time: measured where this process compiles them (a cold cache), else
  :data:`COMPILE_SECONDS`;
* the LOO jobs' start: every job (:func:`isvm.study.loo_files`) is a process that starts
  Python, imports, loads its data and its cached kernels before its clock starts, timed
  here on one real ``isvm loo`` of a tiny grid, times the number of jobs;
* the LOO cells of the study and of the sensitivity study (config key ``sensitivity``):
  per gamma, the first grid point of the C path (a cold start) and ``stretches`` evenly
  spaced stretches of ``points`` grid points, each after ``LEAD_IN`` untimed ones, on
  the cell's first subsample, scaled to the path and to the subsamples of its jobs; a
  path no longer than the stretches is timed whole. Refit methods the same way;
* Table 5's Monte Carlo (config key ``consistency``): a sample of the draws of every
  (loss, L) cell timed with the real code and scaled;
* the other jobs and Snakemake itself, at fixed costs measured on a 2-core machine
  (:data:`JOB_SECONDS`, :data:`SNAKEMAKE_SECONDS`).

Core time is summed; the wall time on ``--cores N`` runs the jobs N at a time, the
compilation and the final tables -> figures -> publish chain one after another. Times
are this machine's, one thread per job. A cell's estimate is within about a factor of
two of a full run of it (docs/benchmarks.md): a stretch run on its own lacks the path's
history (the engine's mode, the folds' previous solutions).
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import yaml

from isvm import study
from isvm.loo.grid import c_grid

#: the checkout: the workflow's schema and config checks live there
ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "config" / "schema.yaml"
#: untimed grid points run before each timed stretch, so that it starts warm
LEAD_IN = 2
#: compilation of the LOO kernels from an empty numba cache, in seconds of one core,
#: where this process finds them cached and cannot measure it: ``python -m isvm
#: warmup`` (every method) took 65 s on the 2-core dev machine, 2026-12-05 (isvm, ova
#: and ww: 62 s, as in the smoke run's first LOO job)
COMPILE_SECONDS = 65.0
#: seconds of one job of each other rule (Python's start, imports, reading, writing,
#: plotting) as (fixed, per data set of the config): the smoke and default runs'
#: Snakemake metadata on the 2-core dev machine, alone, 2026-12-05
JOB_SECONDS: dict[str, tuple[float, float]] = {
    "fetch_data": (0.6, 0.0),
    "subsample": (0.4, 0.0),
    "consistency": (1.5, 0.0),
    "figure_curves": (1.6, 0.0),
    "figure_near_best": (1.0, 0.13),
    "sensitivity": (1.5, 0.0),
    "tables": (0.7, 0.22),
    "figures_table3": (1.6, 0.09),
    "publish": (0.1, 0.0),
}
#: the rules that run one after another once the LOO records are done
TAIL_RULES = ("tables", "figures_table3", "publish")
#: Snakemake itself, seconds: (start and end - parse, DAG, lock; per job - spawn,
#: bookkeeping), from the same runs
SNAKEMAKE_SECONDS = (2.5, 0.1)
#: draws timed per (loss, L) cell of Table 5
CONSISTENCY_SAMPLE = 2000
#: the name of the compile line (the only one left out of the warm-cache totals)
COMPILE = "numba compilation (once per empty cache, one process at a time)"


def format_duration(seconds: float, core: bool = False) -> str:
    """``seconds`` as seconds, minutes or hours, whichever reads without rounding to zero."""
    unit = "core-" if core else ""
    if seconds < 100:
        return f"{seconds:.1f} {unit}s" if seconds < 10 else f"{seconds:.0f} {unit}s"
    if seconds < 100 * 60:
        return f"{seconds / 60:.1f} {unit}min"
    return f"{seconds / 3600:.2f} {unit}hours" if core else f"{seconds / 3600:.2f} h"


@functools.cache
def _workflow_config() -> ModuleType:
    """``workflow/rules/config.smk`` (plain Python: ``typed``, ``check_schema``) as a module."""
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    path = ROOT / "workflow" / "rules" / "config.smk"
    if not (path.exists() and SCHEMA.exists()):
        raise ValueError(f"isvm cost reads a config as the workflow does: {path} not found")
    loader = SourceFileLoader("_isvm_config_smk", str(path))
    module = module_from_spec(spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def checked(config: dict) -> dict:
    """``config`` as the Snakefile reads it: typed, checked, the schema's defaults filled."""
    try:
        from snakemake.exceptions import WorkflowError
        from snakemake.utils import validate
    except ImportError:
        raise ValueError(
            "isvm cost checks a config as the workflow does: install snakemake "
            "(pip install -e '.[workflow]')"
        ) from None
    smk = _workflow_config()
    config = smk.typed(dict(config))
    for key in ("sensitivity", "part"):  # null: not run, the whole study
        if config.get(key, False) is None:
            del config[key]
    try:
        smk.check_schema(config, SCHEMA)
        validate(config, str(SCHEMA))  # fills in the defaults
    except WorkflowError as exc:
        raise ValueError(str(exc)) from None
    problems = study.config_problems(config)
    if problems:  # the first stops the run, as in the Snakefile
        raise ValueError("config key '{}': {}".format(*problems[0]))
    return config


def read_config(path: Path) -> dict:
    """The study config (YAML) as the workflow reads it (:func:`checked`)."""
    with open(path, encoding="utf-8") as fh:
        config = yaml.safe_load(fh) or {}
    if not isinstance(config, dict):
        raise ValueError(f"{path}: not a mapping of config keys")
    return checked(config)


def sampled_path_starts(n_c: int, stretches: int, points: int) -> list[int]:
    """First indices (>= LEAD_IN) of the timed stretches, spread evenly along n_c values."""
    last = n_c - points
    if last < LEAD_IN:
        return []
    return sorted({int(round(s)) for s in np.linspace(LEAD_IN, last, stretches)})


def loo_jobs(config: dict, datasets: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per LOO job of the workflow (its record files: the study's and the
    sensitivity study's): scaling, dataset, Ns, method, chunk, subsamples, part."""
    own = study.loo_files(config, "run")
    files = dict.fromkeys([*own, *study.sensitivity_files(config, "run")])
    own = set(own)
    reps, n_sub = int(config["reps_per_job"]), int(config["n_subsamples"])
    rows = []
    for path in files:
        _, _, scaling, name, ns, method, chunk = path.split("/")
        c = int(chunk.removesuffix(".parquet"))
        rows.append(
            {
                "scaling": scaling,
                "dataset": name,
                "Ns": int(ns.removeprefix("Ns")),
                "method": method,
                "chunk": c,
                "subsamples": min(reps, n_sub - c * reps),
                "part": "study" if path in own else "sensitivity",
            }
        )
    frame = pd.DataFrame(rows)
    if datasets is not None:
        frame = frame[frame["dataset"].isin(list(datasets))].reset_index(drop=True)
    return frame


def cell_data(name: str, config: dict, scaling: str):
    """Data set ``name`` under ``scaling``: the one place a cell's data are loaded (an
    ``own_datasets`` entry as the config defines it; the 14 from the bundled snapshot,
    so that the estimate never downloads)."""
    from isvm.data import load_dataset, load_own

    own = (config.get("own_datasets") or {}).get(name)
    if own is not None:
        return load_own(name, own, scaling)
    return load_dataset(name, source="bundled", scaling=scaling)


def method_records(
    X: np.ndarray,
    y: np.ndarray,
    method: str,
    gammas: list[float],
    Cs: np.ndarray,
    config: dict,
    *,
    seed: int,
    cache: dict,
) -> pd.DataFrame:
    """LOO records of ``method`` on (X, y): the one place a cell runs a method."""
    from isvm.loo.estimator_method import estimator_method
    from isvm.loo.refit import loo_records

    own = (config.get("own_methods") or {}).get(method)
    if own is not None:  # a config's scikit-learn classifier, one worker as a job runs it
        return loo_records(X, y, estimator_method(method, own), gammas, Cs, seed=seed)
    solver = config.get("solver", {})
    return loo_records(
        X,
        y,
        method,
        gammas,
        Cs,
        tol=float(solver.get("tol", 1e-3)),
        max_iter=solver.get("max_iter"),
        seed=seed,
        kernel_cache=cache,
    )


def subsample_seconds(
    run: Callable[[list[float], np.ndarray, dict], pd.DataFrame],
    gammas: list[float],
    Cs: np.ndarray,
    *,
    stretches: int,
    points: int,
) -> float:
    """Estimated seconds of one subsample's LOO grid; ``run(gammas, Cs, kernel_cache)``
    runs the method on it."""
    cache: dict = {}
    total = 0.0
    for gamma in gammas:
        starts = sampled_path_starts(len(Cs), stretches, points)
        if not starts or len(Cs) <= LEAD_IN + stretches * points:
            start = time.perf_counter()  # short: the whole path, as the job runs it
            run([gamma], Cs, cache)
            total += time.perf_counter() - start
            continue
        first = run([gamma], Cs[:1], cache)
        seconds, counted = 0.0, 0
        for s in starts:
            frame = run([gamma], Cs[s - LEAD_IN : s + points], cache)
            seconds += float(frame["seconds"].iloc[LEAD_IN:].sum())
            counted += len(frame) - LEAD_IN
        total += float(first["seconds"].iloc[0]) + seconds / counted * (len(Cs) - 1)
    return total


def uses_gamma(method: str, config: dict) -> bool:
    """Whether ``method``'s LOO differs between gammas: an own classifier without a
    ``gamma`` parameter runs one C path, repeated over the gammas."""
    own = (config.get("own_methods") or {}).get(method)
    if own is None:
        return True
    from isvm.loo.estimator_method import estimator_method

    return estimator_method(method, own).uses_gamma


def all_methods(config: dict) -> list[str]:
    """The methods of the study and of the sensitivity study, in order."""
    return list(dict.fromkeys([*config["methods"], *study.sensitivity_methods(config)]))


def builtin_methods(config: dict) -> list[str]:
    """:func:`all_methods` but the config's own (scikit-learn: nothing to compile)."""
    own = config.get("own_methods") or {}
    return [m for m in all_methods(config) if m not in own]


def estimate(
    config: dict,
    *,
    stretches: int = 4,
    points: int = 6,
    datasets: list[str] | None = None,
    log=print,
) -> pd.DataFrame:
    """One row per LOO cell (scaling, data set, Ns, method): its jobs, subsamples,
    estimated seconds per subsample and core-hours."""
    from isvm.experiment.subsample import draw_subsamples
    from isvm.seeding import derive_seed
    from isvm.warmup import warm_up

    warm = warm_up(builtin_methods(config))  # nothing compiles inside a cell's clock
    log(f"warm-up (numba's kernels loaded or compiled, not timed): {warm:.1f} s")
    gammas = [float(g) for g in config["grid"]["gammas"]]
    C = config["grid"]["C"]
    Cs = c_grid(C["start"], C["stop"], C["step"])
    seed = int(config["seed"])
    keys = ["scaling", "dataset", "Ns", "method", "part"]
    cells = loo_jobs(config, datasets).groupby(keys, sort=False)["subsamples"].agg(["size", "sum"])
    data, rows = {}, []
    for (scaling, name, ns, method, part), (jobs, n_sub) in cells.iterrows():
        ns = int(ns)
        if (name, scaling) not in data:
            data[name, scaling] = cell_data(name, config, scaling)
        ds = data[name, scaling]
        idx = draw_subsamples(ds.y, ns, 1, seed=seed, dataset=ds.stream_name)[0]
        X, y, sub_seed = ds.X[idx], ds.y[idx], derive_seed(seed, "loo", ds.stream_name, ns, 0)

        def run(g, c, cache, X=X, y=y, method=method, sub_seed=sub_seed):
            return method_records(X, y, method, g, c, config, seed=sub_seed, cache=cache)

        start = time.perf_counter()
        paths = gammas if uses_gamma(method, config) else gammas[:1]  # the rest repeat it
        seconds = subsample_seconds(run, paths, Cs, stretches=stretches, points=points)
        core = seconds * n_sub
        rows.append(
            dict(zip(keys, (scaling, name, ns, method, part), strict=True))
            | {"jobs": int(jobs), "subsamples": int(n_sub), "seconds_per_subsample": seconds}
            | {"core_hours": core / 3600.0, "sampled_seconds": time.perf_counter() - start}
        )
        log(
            f"{name} Ns {ns} {method} ({scaling}, {part}): {seconds:.3g} s per subsample, "
            f"{format_duration(core, core=True)}"
        )
    return pd.DataFrame(rows)


def compile_seconds(methods: list[str], log=print) -> tuple[float, bool]:
    """numba's compilation of ``methods``' LOO kernels: (seconds, measured here).

    Measured where this process compiles them (numba's cache is cold), else
    :data:`COMPILE_SECONDS`. Either way the kernels are loaded afterwards.
    """
    from isvm.warmup import cache_dir, cold, warm_up_shared

    was_cold = cold(cache_dir())
    seconds, compiled = warm_up_shared(methods)
    if was_cold and compiled:
        log(f"numba compiled the LOO kernels in {seconds:.1f} s (cache {cache_dir()} was empty)")
        return seconds, True
    log(f"LOO kernels loaded from numba's cache in {seconds:.1f} s (compilation not measured)")
    return COMPILE_SECONDS, False


def loo_job_seconds(method: str, repeats: int = 2) -> float:
    """Wall seconds of one ``python -m isvm loo`` process on a tiny grid (Python's start,
    imports, the data, the cached kernels, one grid point, the records written): the
    fixed cost of a LOO job. The least of ``repeats`` runs."""
    from isvm.data import save_npz
    from isvm.experiment.subsample import draw_subsamples
    from isvm.warmup import cache_dir

    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir())}  # the kernels just loaded
    with tempfile.TemporaryDirectory() as tmp:
        iris = cell_data("iris", {}, "zscore")
        data, sub = save_npz(iris, Path(tmp, "iris.npz")), Path(tmp, "sub.npy")
        np.save(sub, draw_subsamples(iris.y, 15, 1, seed=0, dataset="iris"))
        command = [sys.executable, "-m", "isvm", "loo", "--data", str(data)]
        command += ["--subsamples", str(sub), "--method", method, "--chunk", "0"]
        command += ["--reps-per-job", "1", "--gammas", "5", "--C-start", "1", "--C-stop", "2"]
        command += ["--C-step", "1", "--seed", "0", "--out", str(Path(tmp, "out.parquet"))]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            proc = subprocess.run(command, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode:
                raise ValueError(f"a LOO job of {method} failed: {proc.stderr[-500:]}")
    return min(times)


def consistency_seconds(config: dict, sample: int = CONSISTENCY_SAMPLE) -> float:
    """Seconds of Table 5's Monte Carlo (every loss, the config's L and draws): per
    cell, ``sample`` draws timed twice (the second without the one-off candidates),
    scaled to the draws."""
    from isvm.experiment.consistency import inconsistency_rate
    from isvm.experiment.consistency_losses import LOSSES

    draws, seed = int(config["consistency"]["draws"]), int(config["seed"])
    n = min(draws, sample)
    total = 0.0
    for loss in LOSSES:
        for L in config["consistency"]["L"]:
            start = time.perf_counter()
            inconsistency_rate(loss, int(L), n, seed)
            first = time.perf_counter() - start
            if n == draws:
                total += first
                continue
            start = time.perf_counter()
            inconsistency_rate(loss, int(L), n, seed)
            again = time.perf_counter() - start
            total += max(first - again, 0.0) + again * draws / n
    return total


def rule_counts(config: dict, jobs: pd.DataFrame) -> dict[str, int]:
    """How many jobs of each rule but ``loo`` the workflow runs for ``jobs``' cells."""
    names = list(dict.fromkeys(jobs["dataset"]))
    scaling = config["data"]["scaling"]
    fetched = {(scaling, name) for name in names} | set(
        zip(jobs["scaling"], jobs["dataset"], strict=True)
    )
    counts = dict.fromkeys(JOB_SECONDS, 1)
    counts["fetch_data"] = len(fetched)
    counts["subsample"] = len(set(zip(jobs["dataset"], jobs["Ns"], strict=True)))
    counts["figure_curves"] = len(names)
    counts["sensitivity"] = int(bool(config.get("sensitivity")))
    return counts


def _line(part: str, jobs: int, core: float, longest: float, stage: str, how: str) -> dict:
    """One line of the estimate; ``stage``: serial, parallel or tail (:func:`wall_seconds`)."""
    keys = ("part", "jobs", "core_seconds", "longest", "stage", "how")
    return dict(zip(keys, (part, jobs, core, longest, stage, how), strict=True))


def _rule_seconds(rule: str, n_datasets: int) -> float:
    fixed, per_dataset = JOB_SECONDS[rule]
    return fixed + per_dataset * n_datasets


def other_lines(config: dict, jobs: pd.DataFrame) -> list[dict]:
    """The lines of the jobs but ``loo``'s and of Snakemake itself."""
    counts = rule_counts(config, jobs)
    n_data = counts["figure_curves"]
    each = {r: _rule_seconds(r, n_data) for r in counts if counts[r] and r != "consistency"}
    lines = []
    for name, rules, stage in (
        ("other jobs", [r for r in each if r not in TAIL_RULES], "parallel"),
        (" -> ".join(TAIL_RULES), [r for r in each if r in TAIL_RULES], "tail"),
    ):
        how = ", ".join(f"{r} {counts[r]} x {each[r]:.1f} s" for r in rules)
        core = sum(counts[r] * each[r] for r in rules)
        n = sum(counts[r] for r in rules)
        lines.append(_line(name, n, core, max(each[r] for r in rules), stage, how))
    start, per_job = SNAKEMAKE_SECONDS
    n_jobs = len(jobs) + sum(counts.values())
    lines.append(_line("snakemake: start", 0, start, start, "serial", "parse, DAG, lock"))
    lines.append(
        _line(
            "snakemake: per job",
            0,
            per_job * n_jobs,
            per_job,
            "parallel",
            f"{n_jobs} x {per_job} s",
        )
    )
    return lines


def study_lines(
    config: dict,
    cells: pd.DataFrame,
    jobs: pd.DataFrame,
    *,
    compiled: tuple[float, bool],
    job_start: float,
    consistency: float,
) -> pd.DataFrame:
    """The estimate's lines: part, jobs, core_seconds, longest (its longest job), stage, how."""
    seconds, measured = compiled
    how = (
        "no method of the LOO engine: nothing to compile"
        if seconds == 0
        else "measured here (numba's cache was empty)"
        if measured
        else (
            f"numba's cache was warm here: a fresh checkout's figure, {COMPILE_SECONDS:.0f} s "
            "(2-core machine, 2026-12-05)"
        )
    )
    lines = [_line(COMPILE, 1, seconds, seconds, "serial", how)]
    work = jobs.merge(cells, on=["scaling", "dataset", "Ns", "method", "part"], suffixes=("", "_"))
    longest = job_start + float((work["subsamples"] * work["seconds_per_subsample"]).max())
    lines.append(
        _line(
            "LOO jobs: start (Python, imports, data, cached kernels)",
            len(jobs),
            len(jobs) * job_start,
            job_start,
            "parallel",
            f"{len(jobs)} x {job_start:.1f} s (one `isvm loo` of a tiny grid, timed here)",
        )
    )
    for part in ("study", "sensitivity"):
        sel = cells[cells["part"] == part]
        if len(sel):
            core = float(sel["core_hours"].sum()) * 3600
            how = f"{len(sel)} cells, {int(sel['subsamples'].sum())} subsamples, C paths sampled"
            lines.append(
                _line(f"LOO cells: {part}", int(sel["jobs"].sum()), core, longest, "parallel", how)
            )
    mc, fixed = config["consistency"], _rule_seconds("consistency", 0)
    how = (
        f"its job: {fixed:.1f} s and L {', '.join(map(str, mc['L']))} x {mc['draws']:,} draws "
        f"per loss, {min(mc['draws'], CONSISTENCY_SAMPLE):,} a cell timed"
    )
    core = consistency + fixed
    lines.append(_line("Table 5 consistency Monte Carlo", 1, core, core, "parallel", how))
    return pd.DataFrame(lines + other_lines(config, jobs))


def wall_seconds(lines: pd.DataFrame, cores: int, with_compile: bool = True) -> float:
    """Wall time on ``cores`` cores: the serial and tail lines one after another, the
    parallel lines ``cores`` at a time (never less than their longest job)."""
    rows = lines if with_compile else lines[lines["part"] != COMPILE]
    parallel = rows[rows["stage"] == "parallel"]
    spread = max(float(parallel["core_seconds"].sum()) / cores, float(parallel["longest"].max()))
    return float(rows.loc[rows["stage"] != "parallel", "core_seconds"].sum()) + spread


def study_cost(
    config: dict,
    *,
    stretches: int = 4,
    points: int = 6,
    datasets: list[str] | None = None,
    log=print,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the LOO cells of :func:`estimate`, the lines of :func:`study_lines`)."""
    engine = builtin_methods(config)  # own classifiers compile nothing
    compiled = compile_seconds(engine, log) if engine else (0.0, False)
    job_start = loo_job_seconds(engine[0] if engine else "ova")
    log(f"a LOO job's start: {job_start:.1f} s")
    cells = estimate(config, stretches=stretches, points=points, datasets=datasets, log=log)
    consistency = consistency_seconds(config)
    log(f"Table 5 Monte Carlo: {format_duration(consistency)}")
    jobs = loo_jobs(config, datasets)
    lines = study_lines(
        config, cells, jobs, compiled=compiled, job_start=job_start, consistency=consistency
    )
    return cells, lines


def run_cache() -> tuple[Path, bool]:
    """numba's cache a workflow run in this directory uses, and whether it is warm."""
    from isvm.source import workflow_numba_cache
    from isvm.warmup import cold

    folder = Path(os.environ.get("NUMBA_CACHE_DIR") or workflow_numba_cache())
    return folder, not cold(folder)


def summary(cells: pd.DataFrame, lines: pd.DataFrame, cores: int) -> str:
    """LOO core time per row of Ns, the lines, the totals and the wall times on ``cores``."""
    out = ["| Ns | LOO core time |", "|---|---|"]
    for ns, group in cells.groupby("Ns"):
        out.append(f"| {ns} | {format_duration(group['core_hours'].sum() * 3600, core=True)} |")
    out += ["", "| part | jobs | core time | how |", "|---|---:|---:|---|"]
    for row in lines.itertuples():
        jobs = row.jobs or ""
        out.append(
            f"| {row.part} | {jobs} | {format_duration(row.core_seconds, True)} | {row.how} |"
        )
    total = float(lines["core_seconds"].sum())
    warm = total - float(lines.loc[lines["part"] == COMPILE, "core_seconds"].sum())
    out.append(
        f"| all | | {format_duration(total, True)} | "
        f"{format_duration(warm, True)} with numba's cache warm |"
    )
    folder, is_warm = run_cache()
    out += [
        "",
        f"Total: {format_duration(total, True)} from an empty numba cache, "
        f"{format_duration(warm, True)} with it warm (a run in this directory uses "
        f"{folder}: {'warm' if is_warm else 'empty'}).",
        f"Wall time on {cores} cores: about {format_duration(wall_seconds(lines, cores))} "
        f"from an empty cache, {format_duration(wall_seconds(lines, cores, False))} with it "
        f"warm (jobs {cores} at a time; the compilation and {' -> '.join(TAIL_RULES)} one "
        f"after another). The estimate itself sampled the cells for "
        f"{format_duration(float(cells['sampled_seconds'].sum()))}.",
    ]
    return "\n".join(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm cost``."""
    parser.add_argument("--configfile", type=Path, required=True, help="the study config (YAML)")
    parser.add_argument("--cores", type=int, default=2, help="cores for the wall-time figure")
    parser.add_argument("--stretches", type=int, default=4, help="timed stretches per C path")
    parser.add_argument("--points", type=int, default=6, help="grid points per stretch")
    parser.add_argument("--datasets", nargs="+", help="only these data sets of the config")
    parser.add_argument("--out", type=Path, help="also write the per-cell table as CSV")


def settings_line(config: dict, args: argparse.Namespace) -> str:
    """What the estimate is of."""
    grid = config["grid"]
    sens = config.get("sensitivity")
    return (
        f"Settings: {args.configfile}; {config['n_subsamples']} subsamples, "
        f"{config['reps_per_job']} per job; gamma {', '.join(map(str, grid['gammas']))} x C "
        f"{grid['C']['start']} to {grid['C']['stop']} step {grid['C']['step']}; methods "
        f"{', '.join(config['methods'])}; sensitivity "
        + (
            f"{', '.join(sens['scalings'])} x {', '.join(study.sensitivity_methods(config))} "
            f"on {sens['n_subsamples']} subsamples"
            if sens
            else "none"
        )
        + f"; sampled on the first subsample, {args.stretches} stretches x {args.points} grid "
        "points per path; one thread, this machine.\n"
    )


def run(args: argparse.Namespace) -> int:
    """Print the settings, the per-cell estimates, the lines and the totals."""
    from isvm._memory import keep_freed_memory
    from isvm.data.registry import DataError

    keep_freed_memory()  # as the workflow's LOO jobs run (isvm.loo.cli)
    try:
        config = read_config(args.configfile)
        if args.cores < 1 or args.stretches < 1 or args.points < 1:
            raise ValueError("--cores, --stretches and --points must be >= 1")
        unknown = set(args.datasets or []) - set(config["datasets"])
        if unknown:
            raise ValueError(f"--datasets: {', '.join(sorted(unknown))} not in the config")
        cells, lines = study_cost(
            config, stretches=args.stretches, points=args.points, datasets=args.datasets
        )
    except (DataError, OSError, ValueError, KeyError) as exc:
        print(f"isvm cost: error: {exc}", file=sys.stderr)
        return 2
    print(settings_line(config, args))
    shown = cells.drop(columns=["core_hours", "sampled_seconds"]).assign(
        core_time=[format_duration(h * 3600, core=True) for h in cells["core_hours"]]
    )
    print(shown.to_markdown(index=False, floatfmt=".3g"))
    print()
    print(summary(cells, lines, args.cores))
    if args.out:
        cells.to_csv(args.out, index=False)
    return 0
