"""The Snakemake workflow: lint, dry-runs, config validation, the smoke run end to end,
byte-identical tables, the report, and an interrupted run that resumes.

The smoke run (config/smoke.yaml, about 2 minutes on 2 cores) is done once per
test session and shared, also between pytest-xdist workers (a file lock guards
it). Tests that run snakemake are marked ``workflow``; ``-m "not workflow"``
skips them. The first tests of the module check the ``isvm tables`` code on
synthetic records without snakemake.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isvm.experiment import tables

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "Snakefile"
SMOKE = ROOT / "config" / "smoke.yaml"
#: where the smoke config's outputs land, relative to the working directory
RUN = Path("results") / "smoke"
PAPER = ROOT / "config" / "paper.yaml"
PAPER_NS500 = ROOT / "config" / "paper_ns500.yaml"

#: Files of results/smoke/tables that the smoke config must produce.
TABLE_FILES = sorted(
    f"{stem}.{ext}"
    for stem in (
        "table2",
        "table3",
        "table3_long",
        "table3_vs_paper",
        "table3_rows",
        "table4",
        "table4_long",
        "table4_vs_paper",
        "loo_diagnostics",
        "table5",
        "sensitivity",
        "sensitivity_datasets",
    )
    for ext in ("csv", "md")
)


# ------------------------------------------------------------ isvm tables (unit)


def synthetic_records(seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    rows = []
    for ds, ns, method, sub, gamma, C in itertools.product(
        ("iris", "wine"), (50, 100), ("isvm", "ova", "ww"), range(3), (5.0, 10.0), (0.1, 0.6)
    ):
        acc = float(np.clip(0.9 - 0.02 * C + 0.02 * gen.standard_normal(), 0, 1))
        rows.append(
            {
                "dataset": ds,
                "Ns": ns,
                "method": method,
                "subsample": sub,
                "gamma": gamma,
                "C": C,
                "loo_accuracy": round(acc * ns) / ns,
                "n_errors": 0,
                "n_support": 10,
                "iterations": 5,
                "converged": True,
                "n_uncertified": 0,
                "n_capped": 0,
                "seconds": gen.random(),
            }
        )
    return pd.DataFrame(rows)


def _write_all(records: pd.DataFrame, out: Path) -> dict[str, bytes]:
    settings = {"config": "synthetic", "n_subsamples": 3}
    tables.write_study_tables(records, out / "tables", settings=settings)
    tables.write_timing(records, out / "timing", settings=settings)
    return {p.name: p.read_bytes() for p in sorted((out / "tables").iterdir())}


def test_tables_do_not_depend_on_seconds_or_row_order(tmp_path):
    recs = synthetic_records()
    first = _write_all(recs, tmp_path / "a")
    shuffled = recs.sample(frac=1.0, random_state=1).assign(seconds=lambda d: d["seconds"] * 7)
    second = _write_all(shuffled, tmp_path / "b")
    assert first == second
    assert {"table3.csv", "table4.csv", "table3_vs_paper.md", "loo_diagnostics.csv"} <= set(first)
    assert not any("time" in name for name in first)  # timing lives elsewhere
    assert (tmp_path / "a" / "timing" / "training_time.csv").exists()


def test_tables_state_their_settings(tmp_path):
    _write_all(synthetic_records(), tmp_path)
    for name in ("table3.md", "table4.md", "loo_diagnostics.md"):
        text = (tmp_path / "tables" / name).read_text()
        assert "- config: synthetic" in text and "- n_subsamples: 3" in text, name
        assert "cells in this run: iris (Ns 50, 100); wine (Ns 50, 100)" in text, name
    t4 = pd.read_csv(tmp_path / "tables" / "table4.csv")
    assert list(t4["n_datasets"]) == [2, 2]


def test_tables_cli_errors_are_one_line(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    tables.add_arguments(parser)
    args = parser.parse_args(["--records", str(tmp_path / "missing.parquet"), "--setting", "x"])
    assert tables.run(args) == 2
    assert capsys.readouterr().err.startswith("isvm tables: error:")


# ------------------------------------------------------------------ snakemake


def snakemake(
    *args: object, cwd: Path | None = None, timeout: float = 900, numba_cache: Path | None = None
):
    """Run snakemake on the project's Snakefile; returns the CompletedProcess.

    ``numba_cache``: a numba cache of the run's own instead of the session's shared one.
    """
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), *map(str, args)]
    env = _env()
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    return subprocess.run(
        cmd, cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout, env=env
    )


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # One numba cache for every run of the session (the project's, as a run in the
    # repository would use), not one per working directory: each would compile anew.
    # Runs that compile other kernels than the smoke config's take a private copy
    # (snakemake(numba_cache=...)): numba's cache is not safe for two processes adding
    # different signatures of one function at once (each rewrites the index; a
    # mismatched entry loads the wrong machine code: a segfault, seen in CI). So not the
    # test processes' own cache either (NUMBA_CACHE_DIR, which .ci/run sets): they add
    # signatures while these runs load. ISVM_TEST_WORKFLOW_NUMBA_CACHE names another.
    default = ROOT / "resources" / "numba-cache"
    env["NUMBA_CACHE_DIR"] = os.environ.get("ISVM_TEST_WORKFLOW_NUMBA_CACHE", str(default))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _tail(proc, n: int = 60) -> str:
    return "\n".join((proc.stdout + proc.stderr).splitlines()[-n:])


@contextlib.contextmanager
def _file_lock(path: Path):
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _shared_dir(tmp_path_factory) -> Path:
    """A directory shared by the xdist workers of this session (not across sessions)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """The smoke config run end to end once, in its own directory; returns that directory."""
    shared = _shared_dir(tmp_path_factory)
    workdir = shared / "smoke_reference"
    with _file_lock(shared / "smoke_reference.lock"):
        status = shared / "smoke_reference.status"
        if not status.exists():
            workdir.mkdir(exist_ok=True)
            start = time.perf_counter()
            proc = snakemake("--directory", workdir, "--cores", 2, "--configfile", SMOKE)
            (workdir / "snakemake.log").write_text(proc.stdout + proc.stderr)
            status.write_text(
                f"ok {time.perf_counter() - start:.1f}" if proc.returncode == 0 else _tail(proc)
            )
    text = status.read_text()
    if not text.startswith("ok"):
        pytest.fail(f"the smoke run failed:\n{text}")
    return workdir


@pytest.mark.workflow
def test_lint_is_clean():
    proc = snakemake("--lint", timeout=300)
    assert proc.returncode == 0, _tail(proc)


@pytest.mark.workflow
def test_snakefmt_is_clean():
    files = [SNAKEFILE, *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    snakefmt = Path(sys.executable).parent / "snakefmt"
    if not snakefmt.exists():
        pytest.skip("snakefmt is not installed next to this interpreter")
    proc = subprocess.run(
        [str(snakefmt), "--check", *map(str, files)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _expected_loo_jobs(config_path: Path) -> int:
    """LOO jobs a config asks for: (data set, Ns) cells x methods x chunks."""
    import yaml

    cfg = yaml.safe_load(config_path.read_text())
    sizes = cfg["sizes"]
    cells = sum(len(sizes.get(ds, sizes["default"])) for ds in cfg["datasets"])
    chunks = -(-cfg["n_subsamples"] // cfg["reps_per_job"])
    return cells * len(cfg["methods"]) * chunks


def test_paper_config_asks_for_the_paper_study():
    assert _expected_loo_jobs(PAPER) == 51 * 3 * 10  # 51 cells, 3 methods, 100 subsamples / 10


def test_the_ns500_config_is_the_paper_config_on_its_ns500_cells():
    """config/paper_ns500.yaml builds row 500's tables from paper.yaml's records, so every
    setting but the cells must stay paper.yaml's (a copy that could drift)."""
    import yaml

    from isvm import study

    paper = yaml.safe_load(PAPER.read_text())
    ns500 = yaml.safe_load(PAPER_NS500.read_text())
    assert ns500.pop("name") == PAPER.stem  # the same results/paper/ folder and records
    assert study.cells(ns500) == [cell for cell in study.cells(paper) if cell[1] == 500]
    for key in ("datasets", "sizes"):
        del paper[key], ns500[key]
    assert ns500 == paper


@pytest.mark.workflow
@pytest.mark.parametrize("config", [PAPER, PAPER_NS500, ROOT / "config" / "config.yaml"])
def test_dry_run(config, tmp_path):
    loo_jobs = _expected_loo_jobs(config)
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", config, "--quiet", "rules")
    assert proc.returncode == 0, _tail(proc)
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) == 2)
    assert counts.get("loo") == str(loo_jobs), proc.stdout


@pytest.mark.workflow
def test_default_config_is_used_without_configfile(tmp_path):
    proc = snakemake("-n", "--directory", tmp_path, "--quiet", "rules")
    assert proc.returncode == 0, _tail(proc)
    assert "fetch_data" in proc.stdout and " 14" in proc.stdout


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = SMOKE.read_text()
    assert old in text, old
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.workflow
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("n_subsamples: 2", "n_subsample: 2", "'n_subsample' was unexpected"),
        ("  source: bundled", "  sourse: bundled", "'sourse' was unexpected"),
        ("pooling: per_subsample", "pooling: pool", "'pool' is not one of"),
        ("  scaling: zscore", "  scaling: standard", "'standard' is not one of"),
        (
            "  n_subsamples: 2\n  scalings",
            "  n_subsamples: 3\n  scalings",
            "config key 'sensitivity.n_subsamples': 3 is more than n_subsamples (2)",
        ),
        ("n_subsamples: 2", "n_subsamples: 0", "config key 'n_subsamples': 0 is less than"),
        ("default: [30, 50]", "default: [30, x]", "config key 'sizes.default.1': 'x' is not of"),
        (
            "datasets: [iris, wine, glass]",
            "datasets: [iris, wine, glas]",
            "config key 'datasets': unknown data set 'glas': not one of the paper's",
        ),
        (
            "default: [30, 50]",
            "default: [30, 160]",
            "config key 'sizes.default': Ns 160 is larger than data set 'iris' (150 rows)",
        ),
        (
            "default: [30, 50]",
            "default: [30, 50]\n  yeast: [50]",
            "config key 'sizes.yeast': 'yeast' is not in datasets",
        ),
        ("{start: 0.1, stop: 2.0,", "{start: 3.0, stop: 2.0,", "config key 'grid.C': start"),
        (
            "datasets: [iris, wine, glass]",
            "datasets: [iris, plants]\nown_datasets: {plants: {file: none.csv, target: kind}}",
            "config key 'own_datasets.plants.file': no file none.csv (relative to ",
        ),
        (
            "methods: [isvm, ova, ww]",
            "methods: [isvm, svx]\nown_methods: {svx: {estimator: sklearn.svm.SVX}}",
            "config key 'own_methods.svx': cannot import 'sklearn.svm.SVX'",
        ),
        (
            "methods: [isvm, ova, ww]",
            "methods: [isvm, ova]\ncomparisons: [[isvm, ww]]",
            "config key 'comparisons': ['isvm', 'ww']: 'ww' is not in methods",
        ),
        (
            "methods: [isvm, ova, ww]",
            "methods: [isvm, ova, svm]",
            "config key 'methods': unknown method 'svm': not built in",
        ),
    ],
)
def test_bad_config_stops_with_a_message_naming_it(tmp_path, old, new, message):
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", _variant(tmp_path, old, new))
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, _tail(proc)


@pytest.mark.workflow
def test_schema_errors_are_one_line_each(tmp_path):
    variant = _variant(tmp_path, "n_subsamples: 2", "n_subsample: 2")
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", variant)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "config key '(top level)': Additional properties are not allowed" in out
    assert len(out.splitlines()) < 30, _tail(proc)  # not the whole schema


@pytest.mark.workflow
def test_nested_overrides_are_typed(tmp_path):
    """`--config` values inside braces arrive as strings; they are read as numbers."""
    proc = snakemake(
        "-n",
        "--directory",
        tmp_path,
        "--configfile",
        SMOKE,
        "--quiet",
        "rules",
        "--config",
        "sizes={default: [30]}",
        "grid={gammas: [5], C: {start: 0.1, stop: 1, step: 0.5}}",
        "percentiles=[10, 50]",
        "data={source: bundled, scaling: none}",
    )
    assert proc.returncode == 0, _tail(proc)
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) == 2)
    # iris, wine, glass at Ns 30 x 3 methods: unscaled (the study), zscore and minmax (sensitivity)
    assert counts.get("loo") == str(3 * 3 * 3)


@pytest.mark.workflow
def test_defaults_are_filled(tmp_path):
    minimal = tmp_path / "minimal.yaml"
    minimal.write_text(
        "datasets: [iris]\nsizes: {default: [30]}\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1.0, step: 0.5}}\n"
    )
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", minimal, "-p")
    assert proc.returncode == 0, _tail(proc)
    out = proc.stdout
    assert "--n-subsamples 10 --seed 2012" in out  # schema defaults
    assert "--source bundled --scaling zscore" in out
    assert "rule sensitivity" not in out  # only with the sensitivity key
    assert "--draws 100000" in out


@pytest.mark.workflow
@pytest.mark.parametrize(
    ("sensitivity", "loo_jobs"),
    [
        ("", 3),  # no key: the study alone (iris Ns 30, 3 methods, 1 chunk)
        ("sensitivity: null\n", 3),
        # defaults: 3 scalings x (isvm, ova, ww, ww_paper); zscore isvm/ova/ww are the study's
        ("sensitivity: {n_subsamples: 1}\n", 3 + 1 + 4 + 4),
    ],
)
def test_sensitivity_key_and_its_defaults(tmp_path, sensitivity, loo_jobs):
    minimal = tmp_path / "minimal.yaml"
    minimal.write_text(
        "datasets: [iris]\nsizes: {default: [30]}\nn_subsamples: 2\nreps_per_job: 2\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1.0, step: 0.5}}\n" + sensitivity
    )
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", minimal, "--quiet", "rules")
    assert proc.returncode == 0, _tail(proc)
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) == 2)
    assert counts.get("loo") == str(loo_jobs), proc.stdout
    assert ("sensitivity" in counts) == (loo_jobs > 3)


@pytest.mark.workflow
def test_every_method_runs_through_the_workflow_to_table3(tmp_path, smoke_run):
    """Each method of the schema, engine or refit LOO, gets its LOO records and Table 3 columns.

    It compiles kernels (other formulations, the refit baselines) that the smoke runs
    sharing the session's numba cache do not: it runs on a copy of that cache, taken
    once the smoke run has filled it.
    """
    from isvm.loo import LOO_METHODS

    shared_cache = Path(_env()["NUMBA_CACHE_DIR"])
    private_cache = tmp_path / "numba-cache"
    if shared_cache.is_dir():
        shutil.copytree(shared_cache, private_cache)

    methods = sorted(LOO_METHODS)
    every = tmp_path / "every.yaml"
    every.write_text(
        f"datasets: [iris]\nsizes: {{default: [20]}}\nn_subsamples: 1\nreps_per_job: 1\n"
        f"grid: {{gammas: [5], C: {{start: 0.1, stop: 1.0, step: 0.8}}}}\n"
        f"methods: [{', '.join(methods)}]\n"
    )
    target = "results/every/.staging/tables/table3.csv"
    proc = snakemake(
        target,
        "--directory",
        tmp_path,
        "--cores",
        2,
        "--configfile",
        every,
        numba_cache=private_cache,
    )
    assert proc.returncode == 0, _tail(proc)
    t3 = pd.read_csv(tmp_path / target)
    assert [c for c in t3.columns if c.endswith("_10")] == [
        f"{m}_10" for m in _table_order(methods)
    ]
    assert t3.filter(like="_50").notna().all().all()
    diagnostics = pd.read_csv(tmp_path / "results/every/.staging/tables/loo_diagnostics.csv")
    refit = diagnostics["method"].map(LOO_METHODS) == "refit"
    assert (diagnostics.loc[refit, "uncertified_folds"] == 2 * 20).all()  # 2 C values x 20 folds


def _table_order(methods: list[str]) -> list[str]:
    from isvm.experiment.pooling import PAPER_METHODS

    return [m for m in PAPER_METHODS if m in methods] + sorted(set(methods) - set(PAPER_METHODS))


@pytest.mark.workflow
def test_smoke_run_produces_every_table_and_figure(smoke_run):
    got = sorted(p.name for p in (smoke_run / RUN / "tables").iterdir())
    assert got == TABLE_FILES
    # every LOO job compiled or loaded the numba kernels before its clock started
    logs = list((smoke_run / RUN / "logs" / "loo").rglob("*.log"))
    assert logs and all("(untimed)" in log.read_text() for log in logs)
    timing = smoke_run / RUN / "timing"
    assert sorted(p.name for p in timing.iterdir()) == ["training_time.csv", "training_time.md"]
    figs = {p.name for p in (smoke_run / RUN / "figures").iterdir()}
    for stem in (
        "loo_curves_iris",
        "loo_curves_wine",
        "loo_curves_glass",
        "near_best",
        "table3_differences",
        "table3_vs_paper",
        "isvm_advantage",
        "consistency",
    ):
        assert {f"{stem}.png", f"{stem}.pdf"} <= figs, stem
    # every table states the settings that produced it
    for name in TABLE_FILES:
        if name.endswith(".md") and name != "table5.md":
            text = (smoke_run / RUN / "tables" / name).read_text()
            assert "- n_subsamples: 2" in text and "- seed: 2012" in text, name
            assert "- grid: gamma 5, 10 x C 0.1 to 1.5 step 0.7 (3 values)" in text, name
    # Table 3 has the smoke cells and, for Ns = 50, the paper's cells beside ours
    t3 = pd.read_csv(smoke_run / RUN / "tables" / "table3.csv")
    assert sorted(zip(t3["dataset"], t3["Ns"], strict=True)) == [
        ("Glass", 30),
        ("Glass", 50),
        ("Iris", 30),
        ("Iris", 50),
        ("Wine", 30),
        ("Wine", 50),
    ]
    comp = pd.read_csv(smoke_run / RUN / "tables" / "table3_vs_paper.csv")
    both = comp[comp["present"] == "both"]
    assert set(both["Ns"]) == {50} and len(both) == 3 * 9
    t4 = pd.read_csv(smoke_run / RUN / "tables" / "table4.csv")
    assert list(t4["Ns"]) == [30, 50] and list(t4["n_datasets"]) == [3, 3]


@pytest.mark.workflow
def test_nothing_to_do_after_the_smoke_run(smoke_run):
    proc = snakemake("-n", "--directory", smoke_run, "--configfile", SMOKE)
    assert proc.returncode == 0, _tail(proc)
    assert "Nothing to be done" in proc.stdout + proc.stderr, _tail(proc)


@pytest.mark.workflow
def test_a_source_change_or_a_deleted_numba_cache_redoes_no_job(smoke_run, tmp_path):
    """No job depends on numba's cache (each LOO job warms up inside itself): a changed
    package, whose kernels go to a new cache folder, and a deleted cache leave every
    finished record and table in place."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Snakefile", "workflow", "config", "src"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, repo / name)
    with (repo / "src" / "isvm" / "warmup.py").open("a") as handle:
        handle.write("# a changed source file\n")
    workdir = tmp_path / "copy"
    shutil.copytree(smoke_run, workdir, symlinks=True)
    shutil.rmtree(workdir / "resources" / "numba-cache", ignore_errors=True)
    proc = snakemake(
        "-n",
        "-s",
        repo / "Snakefile",
        "--directory",
        workdir,
        "--configfile",
        SMOKE,
        numba_cache=workdir / "resources" / "numba-cache",
    )
    assert proc.returncode == 0, _tail(proc)
    assert "Nothing to be done" in proc.stdout + proc.stderr, _tail(proc)


@pytest.mark.workflow
def test_records_copied_into_a_fresh_directory_are_kept(smoke_run, tmp_path):
    """Restoring committed records of a study still in parts (docs/results/ns500): with
    the inputs in place (copied here, as fresh files, instead of made again: the same
    bytes) and the LOO records copied in after them, only the missing record is run.
    (With the numba warm-up as a rule whose marker every LOO job read, the missing
    marker scheduled that rule, and Snakemake then reran all 36 records.)"""
    workdir = tmp_path / "fresh"
    # copied as `cp -r` does: new modification times, the records newer than the inputs
    for part in ("resources/datasets", f"{RUN}/subsamples", f"{RUN}/loo"):
        shutil.copytree(smoke_run / part, workdir / part, copy_function=shutil.copyfile)
    (workdir / RUN / "loo/zscore/iris/Ns30/isvm/0.parquet").unlink()  # a part still to run
    proc = snakemake("-n", "--directory", workdir, "--configfile", SMOKE, "--quiet", "rules")
    assert proc.returncode == 0, _tail(proc)
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) == 2)
    assert counts.get("loo") == "1" and "tables" in counts, proc.stdout
    assert not {"fetch_data", "subsample"} & set(counts), proc.stdout


@pytest.mark.workflow
def test_report(smoke_run, tmp_path):
    report = tmp_path / "report.html"
    proc = snakemake("--directory", smoke_run, "--configfile", SMOKE, "--report", report)
    assert proc.returncode == 0, _tail(proc)
    html = report.read_text(errors="replace")
    assert len(html) > 100_000 and "table3_differences.png" in html


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _incomplete_marked(workdir: Path, rel: str) -> bool:
    """Whether snakemake marked output ``rel`` incomplete (.snakemake/incomplete)."""
    name = base64.urlsafe_b64encode(rel.encode()).decode()
    return (workdir / ".snakemake" / "incomplete" / name).exists()


@pytest.mark.workflow
def test_interrupted_run_resumes_without_redoing_jobs(request, tmp_path):
    """Kill a smoke run (SIGINT to its process group) once some LOO outputs exist, then
    resume: completed outputs keep their mtimes and the tables equal the reference run's."""
    workdir = tmp_path / "interrupted"
    workdir.mkdir()
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir)]
    cmd += ["--cores", "1", "--configfile", str(SMOKE)]
    log = (workdir.parent / "first.log").open("w")
    # A run launched in the background by a non-interactive shell inherits an ignored
    # SIGINT; restore the default so that the interrupt below really interrupts.
    proc = subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=_env(),
        preexec_fn=_default_sigint,
    )
    loo_dir = workdir / RUN / "loo"
    deadline = time.monotonic() + 600
    try:
        while len(list(loo_dir.glob("*/*/*/*/*.parquet"))) < 3:
            assert proc.poll() is None, "the run ended before it could be interrupted"
            assert time.monotonic() < deadline, "no LOO output after 600 s"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    assert proc.returncode != 0, "the run was not interrupted"
    assert not (workdir / RUN / "tables" / "table3.csv").exists(), "interrupted too late"

    before = {
        p.relative_to(workdir).as_posix(): p.stat().st_mtime_ns
        for sub in ("resources/datasets", "results/smoke/subsamples", "results/smoke/loo")
        for p in (workdir / sub).rglob("*")
        if p.is_file()
    }
    done_loo = [f for f in before if f.startswith("results/smoke/loo/") and f.endswith(".parquet")]
    assert done_loo, "no completed LOO output to keep"

    # outputs of jobs that were running when the run was killed are marked incomplete
    kept = [f for f in before if not _incomplete_marked(workdir, f)]
    proc2 = snakemake(
        "--directory", workdir, "--cores", 2, "--configfile", SMOKE, "--rerun-incomplete"
    )
    assert proc2.returncode == 0, _tail(proc2)
    changed = [f for f in kept if (workdir / f).stat().st_mtime_ns != before[f]]
    assert not changed, f"completed outputs were recomputed: {changed}"
    assert len(kept) >= len(before) - 1
    n_loo = len(list(loo_dir.glob("*/*/*/*/*.parquet")))
    assert n_loo == 18 + 18  # the study (zscore) and, for the sensitivity study, minmax
    ran = (proc2.stdout + proc2.stderr).count("rule loo:")
    assert ran == n_loo - len([f for f in done_loo if f in kept]), _tail(proc2)

    # the reference run is requested only now, so that both runs can proceed side by side
    ref = request.getfixturevalue("smoke_run") / RUN / "tables"
    for name in TABLE_FILES:
        assert (workdir / RUN / "tables" / name).read_bytes() == (ref / name).read_bytes(), name


@pytest.mark.workflow
def test_chunking_does_not_change_a_number(smoke_run, tmp_path):
    """The smoke run's chunk of two subsamples equals two chunks of one subsample each."""
    outs = []
    for chunk in (0, 1):
        out = tmp_path / f"{chunk}.parquet"
        args = (
            "loo --data resources/datasets/zscore/iris.npz"
            " --subsamples results/smoke/subsamples/iris/Ns30.npy --method isvm"
            f" --chunk {chunk} --reps-per-job 1 --gammas 5 10 --C-start 0.1 --C-stop 2.0"
            " --C-step 0.7 --tol 0.001 --threads 2 --seed 2012"
        )
        cmd = [sys.executable, "-m", "isvm", *args.split(), "--out", str(out)]
        proc = subprocess.run(cmd, cwd=smoke_run, capture_output=True, text=True, env=_env())
        assert proc.returncode == 0, proc.stderr
        outs.append(pd.read_parquet(out))
    chunks = pd.concat(outs, ignore_index=True)
    both = pd.read_parquet(smoke_run / RUN / "loo/zscore/iris/Ns30/isvm/0.parquet")
    assert len(both) == 2 * 2 * 3
    pd.testing.assert_frame_equal(
        chunks.drop(columns="seconds"), both.drop(columns="seconds"), check_exact=True
    )


# ------------------------------------------------ hard kill, failed reruns, run names


def _loo_outputs(workdir: Path) -> list[Path]:
    return list((workdir / RUN / "loo").glob("*/*/*/*/*.parquet"))


@pytest.mark.workflow
def test_a_study_in_parts_then_hard_killed_resumes_to_the_same_tables(request, tmp_path):
    """Run one part of the smoke study (`part: {sizes: [30]}`: its LOO records only),
    then the whole study with the same command minus `part`; SIGKILL it (its whole
    process group, as a power loss would) once some more LOO outputs exist. The same
    command again removes the dead run's locks by itself, redoes none of the part's
    records and finishes with tables byte-identical to one uninterrupted run's."""
    workdir = tmp_path / "killed"
    workdir.mkdir()
    profile = ROOT / "workflow" / "profiles" / "default"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir)]
    cmd += ["--workflow-profile", str(profile), "--configfile", str(SMOKE)]
    part = subprocess.run(
        [*cmd, "--config", "part={sizes: [30]}"],
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
    )
    assert part.returncode == 0, _tail(part)
    part_records = {p: p.stat().st_mtime_ns for p in _loo_outputs(workdir)}
    # iris, wine, glass at Ns 30: the study (zscore) and the sensitivity study's minmax
    assert len(part_records) == 18 and all("/Ns30/" in str(p) for p in part_records)
    assert not (workdir / RUN / "tables").exists(), "a part builds no tables"

    with (tmp_path / "first.log").open("w") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=_env()
        )
        deadline = time.monotonic() + 600
        try:
            while len(_loo_outputs(workdir)) < len(part_records) + 3:
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "no LOO output after 600 s"
                time.sleep(0.2)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert list((workdir / ".snakemake" / "locks").glob("*.lock")), "the kill left no lock"
    assert not (workdir / RUN / "tables" / "table3.csv").exists(), "killed too late"

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=_env())
    assert again.returncode == 0, _tail(again)
    assert "Removed the locks of an earlier snakemake run" in again.stderr, _tail(again)
    assert not list((workdir / ".snakemake" / "isvm-owners").iterdir())  # records removed
    assert {p: p.stat().st_mtime_ns for p in part_records} == part_records, "part redone"
    ref = request.getfixturevalue("smoke_run") / RUN / "tables"
    for name in TABLE_FILES:
        assert (workdir / RUN / "tables" / name).read_bytes() == (ref / name).read_bytes(), name


@pytest.mark.workflow
def test_a_part_must_select_a_cell_of_the_study(tmp_path):
    for value, message in [
        ("part={sizes: [31]}", "config key 'part': {'sizes': [31]} selects no (data set, Ns)"),
        ("part={datasets: [letter]}", "config key 'part.datasets': 'letter' is not in datasets"),
        ("part={Ns: [30]}", "config key 'part': Additional properties are not allowed"),
    ]:
        proc = snakemake("-n", "--directory", tmp_path, "--configfile", SMOKE, "--config", value)
        assert proc.returncode != 0 and message in proc.stdout + proc.stderr, _tail(proc)


def _process_start(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


@pytest.mark.workflow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("owner", ["live", "other_host", "none"])
def test_a_lock_that_may_be_live_is_not_removed(tmp_path, owner):
    """Locks whose owner is alive, on another host, or unknown stay; snakemake refuses."""
    import json
    import socket

    minimal = tmp_path / "minimal.yaml"
    minimal.write_text(
        "datasets: [iris]\nsizes: {default: [30]}\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1.0, step: 0.5}}\n"
    )
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text("resources/datasets/zscore/iris.npz\n")  # an output
    live = subprocess.Popen(["sleep", "120"])
    try:
        records = tmp_path / ".snakemake" / "isvm-owners"
        records.mkdir()
        host = socket.gethostname() if owner == "live" else "another-host.example"
        if owner != "none":
            boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            record = {
                "host": host,
                "pid": live.pid,
                "start": _process_start(live.pid),
                "boot_id": boot_id,
            }
            (records / f"{host}-{live.pid}.json").write_text(json.dumps(record))
        proc = snakemake("--directory", tmp_path, "--cores", 1, "--configfile", minimal)
    finally:
        live.kill()
        live.wait()
    assert proc.returncode != 0
    assert "cannot be locked" in proc.stdout + proc.stderr, _tail(proc)
    assert (locks / "0.output.lock").exists()
    assert not (tmp_path / RUN.parent / "minimal").exists()  # nothing ran


@pytest.mark.workflow
def test_a_failed_rerun_keeps_the_published_tables(smoke_run, tmp_path):
    """A rerun whose tables job fails leaves the last run's tables and figures in place:
    the jobs build under .staging/ and rule publish copies only after all succeeded."""
    workdir = tmp_path / "copy"
    shutil.copytree(smoke_run, workdir, symlinks=True)
    published = {
        p.relative_to(workdir): p.read_bytes()
        for d in ("tables", "figures", "timing")
        for p in (workdir / RUN / d).iterdir()
    }
    assert len(published) > 40
    # a corrupt (and so newer) LOO record: the tables, sensitivity and figure jobs that
    # read it rerun and fail (each deletes its outputs), and rule publish never runs
    (workdir / RUN / "loo/zscore/iris/Ns30/isvm/0.parquet").write_bytes(b"not parquet")
    proc = snakemake("--directory", workdir, "--cores", 2, "--configfile", SMOKE)
    assert proc.returncode != 0, _tail(proc)
    out = proc.stdout + proc.stderr
    assert "Error in rule" in out and "rule publish:" not in out, _tail(proc)
    after = {
        p.relative_to(workdir): p.read_bytes()
        for d in ("tables", "figures", "timing")
        for p in (workdir / RUN / d).iterdir()
    }
    assert after == published


@pytest.mark.workflow
def test_runs_of_different_configs_do_not_share_a_folder(tmp_path):
    named = _variant(tmp_path, "\nn_subsamples: 2", "\nn_subsamples: 2\nname: tiny")
    for config, run in (
        (SMOKE, "smoke"),
        (named, "tiny"),
        (ROOT / "config" / "config.yaml", "config"),
    ):
        proc = snakemake("-n", "--directory", tmp_path, "--configfile", config, "-p")
        assert proc.returncode == 0, _tail(proc)
        outs = [w for w in proc.stdout.split() if w.startswith("results/")]
        assert outs and all(w.startswith(f"results/{run}/") for w in outs), (run, outs[:5])
    bad = _variant(tmp_path, "\nn_subsamples: 2", "\nn_subsamples: 2\nname: 'a b'")
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", bad)
    assert proc.returncode != 0
    assert "config key 'name': 'a b' does not match" in proc.stdout + proc.stderr, _tail(proc)


@pytest.mark.workflow
def test_report_command_needs_no_flags(smoke_run):
    """workflow/report.py replays the run's recorded --configfile (results/smoke/run.json)."""
    report = smoke_run / RUN / "report.html"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "workflow" / "report.py"), "smoke"],
        cwd=smoke_run,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert proc.returncode == 0, _tail(proc)
    html = report.read_text(errors="replace")
    assert len(html) > 100_000 and "table3_differences.png" in html


# ------------------------------------------------------------ your own study


@pytest.mark.workflow
def test_an_own_study_runs_a_csv_an_openml_id_and_a_scikit_learn_method(
    tmp_path, smoke_run, fake_openml
):
    """`own_datasets` (a CSV export of wine, iris by OpenML id from a cached copy) and
    `own_methods` (scikit-learn's SVC) run through the workflow to Tables 2-4. The CSV
    with `seed_name: wine` gives the registry's wine records in every column but
    `seconds`: the same arrays, the same subsamples, the same solver streams."""
    from isvm.data import load_dataset, load_own

    wine = load_dataset("wine", "bundled", "none")
    frame = pd.DataFrame(wine.X, columns=wine.feature_names)
    frame.insert(0, "cultivar", [wine.class_names[i] for i in wine.y])
    frame.sample(frac=1.0, random_state=1).to_csv(tmp_path / "wine.csv", index=False)
    fake_openml.add("iris")  # fill the run's OpenML cache; the run itself is offline
    load_own("flowers", {"openml_id": 61}, cache_dir=tmp_path / "resources" / "openml-cache")
    shared_cache = Path(_env()["NUMBA_CACHE_DIR"])
    private_cache = tmp_path / "numba-cache"
    if shared_cache.is_dir():
        shutil.copytree(shared_cache, private_cache)
    config = tmp_path / "own.yaml"
    config.write_text(
        "datasets: [wine, my_wine, flowers]\n"
        "own_datasets:\n"
        "  my_wine: {file: wine.csv, target: cultivar, seed_name: wine}\n"
        "  flowers: {openml_id: 61}\n"
        "sizes: {default: [20]}\nn_subsamples: 2\nreps_per_job: 2\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1.0, step: 0.8}}\n"
        "methods: [isvm, svc]\n"
        "own_methods: {svc: {estimator: sklearn.svm.SVC}}\n"
        "comparisons: [[isvm, svc]]\n"
    )
    target = "results/own/.staging/tables/table4.csv"
    proc = snakemake(
        target, "--directory", tmp_path, "--cores", 2, "--configfile", config,
        numba_cache=private_cache,
    )  # fmt: skip
    assert proc.returncode == 0, _tail(proc)
    loo = tmp_path / "results/own/loo/zscore"
    for method in ("isvm", "svc"):
        ours = pd.read_parquet(loo / f"my_wine/Ns20/{method}/0.parquet")
        ref = pd.read_parquet(loo / f"wine/Ns20/{method}/0.parquet")
        same = [c for c in ref.columns if c not in ("dataset", "seconds")]
        pd.testing.assert_frame_equal(ours[same], ref[same])
    tables = tmp_path / "results/own/.staging/tables"
    t2 = pd.read_csv(tables / "table2.csv").set_index("dataset")
    assert t2.loc["my_wine", "base_flag"] == "no paper row" and t2.loc["flowers", "classes"] == 3
    t3 = pd.read_csv(tables / "table3.csv")
    assert {"isvm_10", "svc_10"} <= set(t3.columns) and t3["svc_50"].notna().all()
    assert "isvm vs svc" in (tables / "table4.md").read_text()
