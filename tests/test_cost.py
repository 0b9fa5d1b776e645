"""The study cost estimator (python -m isvm cost)."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pandas as pd
import pytest

import isvm.experiment.cost as cost
from isvm.cli import main
from isvm.experiment.cost import (
    COMPILE,
    checked,
    estimate,
    format_duration,
    loo_jobs,
    read_config,
    rule_counts,
    sampled_path_starts,
    study_cost,
    subsample_seconds,
    summary,
    wall_seconds,
)

SMOKE = Path(__file__).resolve().parents[1] / "config" / "smoke.yaml"
#: isvm cost reads a config as the Snakefile does, with snakemake's validate (the
#: workflow extra; the tests at the dependency floors run without it)
needs_snakemake = pytest.mark.skipif(
    find_spec("snakemake") is None, reason="isvm cost reads configs with snakemake"
)
GRID = {"gammas": [5], "C": {"start": 0.1, "stop": 1, "step": 0.5}}


def tiny(**keys) -> dict:
    """A config of a few small cells, the schema's defaults filled in."""
    config = {"datasets": ["wine"], "sizes": {"default": [20]}, "n_subsamples": 1, "seed": 0}
    return checked(config | {"methods": ["ova"], "grid": GRID} | keys)


def test_durations_read_in_seconds_minutes_or_hours():
    assert format_duration(4.25) == "4.2 s"
    assert format_duration(42) == "42 s"
    assert format_duration(150) == "2.5 min"
    assert format_duration(99 * 60) == "99.0 min"
    assert format_duration(7200) == "2.00 h"
    assert format_duration(42, core=True) == "42 core-s"
    assert format_duration(600, core=True) == "10.0 core-min"
    assert format_duration(16.5 * 3600, core=True) == "16.50 core-hours"


@needs_snakemake
def test_the_config_is_read_as_the_workflow_reads_it(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "datasets: [wine]\nsizes: {default: [30]}\nsensitivity: null\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1, step: 0.5}}\n"
    )
    config = read_config(path)
    assert config["n_subsamples"] == 10 and config["methods"] == ["isvm", "ova", "ww"]
    assert config["solver"] == {"name": "cd", "tol": 0.001, "max_iter": None}
    assert config["consistency"] == {"draws": 100000, "L": [2, 3, 4, 5]}
    assert config["reps_per_job"] == 5 and "sensitivity" not in config
    path.write_text(path.read_text() + "sensitivity: {n_subsamples: 20}\n")
    with pytest.raises(ValueError, match="sensitivity.n_subsamples"):
        read_config(path)  # more than n_subsamples: isvm.study's cross-field check


@needs_snakemake
def test_loo_jobs_are_the_workflows_record_files():
    config = read_config(SMOKE)
    jobs = loo_jobs(config)
    assert len(jobs) == 36  # docs/workflow.md: the smoke config's LOO jobs
    assert jobs.groupby("part").size().to_dict() == {"sensitivity": 18, "study": 18}
    assert set(jobs.loc[jobs["part"] == "sensitivity", "scaling"]) == {"minmax"}
    counts = rule_counts(config, jobs)
    assert counts["fetch_data"] == 6 and counts["subsample"] == 6
    assert counts["figure_curves"] == 3 and counts["sensitivity"] == 1
    assert len(loo_jobs(config, ["iris"])) == 12


@needs_snakemake
def test_chunks_hold_reps_per_job_subsamples_and_the_rest():
    config = tiny(
        n_subsamples=5,
        reps_per_job=2,
        methods=["ova", "ww"],
        sensitivity={"n_subsamples": 3, "scalings": ["minmax"], "ww_methods": ["ww_paper"]},
    )
    jobs = loo_jobs(config)
    study = jobs[jobs["part"] == "study"]
    assert study.groupby("method")["subsamples"].apply(list).to_dict() == {
        "ova": [2, 2, 1],
        "ww": [2, 2, 1],
    }
    # the sensitivity study's chunks are the study's files under another scaling:
    # chunk 1 runs subsamples 2 and 3, as the `loo` rule runs it
    sens = jobs[jobs["part"] == "sensitivity"]
    assert sorted(sens["method"].unique()) == ["isvm", "ova", "ww_paper"]
    assert sens.groupby("method")["subsamples"].sum().tolist() == [4, 4, 4]


def test_path_starts_are_spread_and_leave_room_for_the_lead_in():
    starts = sampled_path_starts(100, 4, 6)
    assert starts[0] == 2 and starts[-1] == 94 and len(starts) == 4
    assert sampled_path_starts(5, 4, 6) == []


def test_a_short_path_is_timed_whole_and_a_long_one_sampled():
    calls = []

    def run(gammas, Cs, cache):
        calls.append(len(Cs))
        return pd.DataFrame({"seconds": [0.01] * len(Cs)})

    seconds = subsample_seconds(run, [5.0, 10.0], list(range(3)), stretches=4, points=6)
    assert calls == [3, 3] and seconds > 0  # the smoke grid: was 0 before
    calls.clear()
    seconds = subsample_seconds(run, [5.0], list(range(100)), stretches=4, points=6)
    assert calls == [1, 8, 8, 8, 8]
    assert seconds == pytest.approx(0.01 * 100)


@needs_snakemake
def test_estimate_of_a_small_config():
    config = tiny(
        datasets=["wine", "iris"],
        sizes={"default": [30], "iris": [20, 30]},
        n_subsamples=10,
        methods=["isvm", "ova"],
        grid={"gammas": [5], "C": {"start": 0.1, "stop": 5, "step": 0.5}},
    )
    frame = estimate(config, stretches=2, points=2, log=lambda _: None)
    assert len(frame) == 6  # wine 30, iris 20 and 30, two methods each
    assert (frame["seconds_per_subsample"] > 0).all()
    assert (frame["jobs"] == 2).all() and (frame["subsamples"] == 10).all()
    assert frame["core_hours"].tolist() == pytest.approx(
        (frame["seconds_per_subsample"] * 10 / 3600).tolist()
    )


@needs_snakemake
def test_own_data_sets_and_methods_are_estimated(tmp_path, monkeypatch):
    """An own_datasets CSV and an own_methods classifier get their cells timed, and
    only the built-in methods are warmed up (nothing of scikit-learn's compiles)."""
    from isvm.data import load_dataset

    monkeypatch.chdir(tmp_path)
    wine = load_dataset("wine", "bundled", "none")
    frame = pd.DataFrame(wine.X, columns=wine.feature_names)
    frame["cultivar"] = [wine.class_names[i] for i in wine.y]
    frame.to_csv("wine.csv", index=False)
    warmed = []
    monkeypatch.setattr("isvm.warmup.warm_up", lambda methods: warmed.append(methods) or 0.0)
    config = tiny(
        datasets=["my_wine"],
        own_datasets={"my_wine": {"file": "wine.csv", "target": "cultivar"}},
        methods=["ova", "svc"],
        own_methods={"svc": {"estimator": "sklearn.svm.SVC"}},
    )
    cells = estimate(config, log=lambda _: None)
    assert cells["method"].tolist() == ["ova", "svc"]
    assert (cells["seconds_per_subsample"] > 0).all()
    assert warmed == [["ova"]]


@needs_snakemake
def test_the_methods_are_warmed_up_before_any_cell_is_timed(monkeypatch):
    """A fresh checkout compiles the engine for minutes on its first LOO call: billed
    to the first cell, it made abalone Ns 50 ISVM read 81 s per subsample (0.4 s)."""
    import isvm.loo.refit
    import isvm.warmup

    calls = []
    monkeypatch.setattr(
        isvm.warmup, "warm_up", lambda methods: calls.append(("warm", methods)) or 0.0
    )
    real = isvm.loo.refit.loo_records

    def timed(*args, **kwargs):
        calls.append(("time", args[2]))
        return real(*args, **kwargs)

    monkeypatch.setattr(isvm.loo.refit, "loo_records", timed)
    estimate(tiny(methods=["ova", "ww"]), stretches=1, points=1, log=lambda _: None)
    assert calls[0] == ("warm", ["ova", "ww"])
    assert {name for kind, name in calls[1:]} == {"ova", "ww"}
    assert all(kind == "time" for kind, _ in calls[1:])


def test_wall_time_runs_jobs_in_parallel_and_compiles_first():
    lines = pd.DataFrame(
        [
            {"part": COMPILE, "core_seconds": 75.0, "longest": 75.0, "stage": "serial"},
            {"part": "a", "core_seconds": 100.0, "longest": 10.0, "stage": "parallel"},
            {"part": "b", "core_seconds": 20.0, "longest": 20.0, "stage": "parallel"},
            {"part": "c", "core_seconds": 8.0, "longest": 4.0, "stage": "tail"},
        ]
    )
    assert wall_seconds(lines, 2) == pytest.approx(75 + 60 + 8)
    assert wall_seconds(lines, 2, with_compile=False) == pytest.approx(60 + 8)
    assert wall_seconds(lines, 64) == pytest.approx(75 + 20 + 8)  # the longest job


@pytest.fixture
def quick(monkeypatch):
    """No LOO job process started: a fixed start of 2 s."""
    monkeypatch.setattr(cost, "loo_job_seconds", lambda method: 2.0)


@needs_snakemake
def test_every_part_of_the_workflow_is_a_line(quick):
    config = tiny(
        methods=["ova", "ww"],
        sensitivity={"n_subsamples": 1, "scalings": ["zscore", "minmax"], "ww_methods": ["ww"]},
        consistency={"draws": 300, "L": [2, 3]},
    )
    cells, lines = study_cost(config, stretches=1, points=1, log=lambda _: None)
    parts = lines.set_index("part")
    assert parts.loc[COMPILE, "core_seconds"] > 0  # measured, or the fresh checkout's figure
    start = parts.loc["LOO jobs: start (Python, imports, data, cached kernels)"]
    assert start["jobs"] == 6 and start["core_seconds"] == 12
    assert parts.loc["LOO cells: study", "jobs"] == 2
    assert parts.loc["LOO cells: sensitivity", "jobs"] == 4  # zscore isvm; minmax isvm, ova, ww
    assert parts.loc["Table 5 consistency Monte Carlo", "core_seconds"] > 0
    assert "fetch_data 2 x" in parts.loc["other jobs", "how"]
    assert "sensitivity 1 x" in parts.loc["other jobs", "how"]
    assert parts.loc["tables -> figures_table3 -> publish", "stage"] == "tail"
    assert (lines["core_seconds"] > 0).all()
    text = summary(cells, lines, cores=2)
    assert "| 20 |" in text and "| all |" in text and "Wall time on 2 cores" in text
    assert "0.00" not in text


@needs_snakemake
def test_the_compile_is_measured_where_this_process_compiles(monkeypatch):
    import isvm.warmup

    monkeypatch.setattr(isvm.warmup, "cold", lambda folder: True)
    monkeypatch.setattr(isvm.warmup, "warm_up_shared", lambda methods: (61.5, True))
    assert cost.compile_seconds(["isvm"], log=lambda _: None) == (61.5, True)
    monkeypatch.setattr(isvm.warmup, "cold", lambda folder: False)
    monkeypatch.setattr(isvm.warmup, "warm_up_shared", lambda methods: (0.8, False))
    assert cost.compile_seconds(["isvm"], log=lambda _: None) == (cost.COMPILE_SECONDS, False)


@needs_snakemake
def test_a_study_of_own_classifiers_only_compiles_nothing(quick, tmp_path, monkeypatch):
    compiled = []
    monkeypatch.setattr(cost, "compile_seconds", lambda methods, log: compiled.append(methods))
    config = tiny(
        methods=["knn"],
        own_methods={"knn": {"estimator": "sklearn.neighbors.KNeighborsClassifier"}},
    )
    cells, lines = study_cost(config, stretches=1, points=1, log=lambda _: None)
    parts = lines.set_index("part")
    assert compiled == [] and parts.loc[COMPILE, "core_seconds"] == 0
    assert parts.loc[COMPILE, "how"] == "no method of the LOO engine: nothing to compile"
    assert cells["method"].tolist() == ["knn"] and (cells["seconds_per_subsample"] > 0).all()


def test_a_loo_jobs_start_is_timed_on_a_real_job():
    seconds = cost.loo_job_seconds("ova", repeats=1)
    assert 0.1 < seconds < 60


@needs_snakemake
def test_cli_errors_name_the_problem(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [wine]\n")
    assert main(["cost", "--configfile", str(bad)]) == 2
    assert "'sizes' is a required property" in capsys.readouterr().err
    bad.write_text(
        "datasets: [wine]\nsizes: {wine: [30]}\nn_subsamples: 1\nseed: 0\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1, step: 0.5}}\nmethods: [isvm]\n"
    )
    with pytest.raises(ValueError, match="sizes"):
        read_config(bad)


@needs_snakemake
def test_cli_refuses_an_unknown_data_set_and_bad_counts(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(
        "datasets: [nosuchdata]\nsizes: {default: [30]}\nn_subsamples: 1\nseed: 0\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1, step: 0.5}}\nmethods: [isvm]\n"
    )
    assert main(["cost", "--configfile", str(config)]) == 2
    assert "nosuchdata" in capsys.readouterr().err
    config.write_text(config.read_text().replace("nosuchdata", "wine"))
    assert main(["cost", "--configfile", str(config), "--cores", "0"]) == 2
    assert "--cores" in capsys.readouterr().err
    assert main(["cost", "--configfile", str(config), "--datasets", "iris"]) == 2
    assert "--datasets: iris" in capsys.readouterr().err


@needs_snakemake
def test_cli_prints_settings_lines_and_totals(tmp_path, capsys, quick):
    config = tmp_path / "c.yaml"
    config.write_text(
        "datasets: [wine]\nsizes: {default: [20]}\nn_subsamples: 3\nseed: 0\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 3, step: 0.5}}\nmethods: [ova]\n"
        "consistency: {draws: 200, L: [2]}\n"
    )
    out_csv = tmp_path / "cells.csv"
    args = ["--stretches", "1", "--points", "2", "--out", str(out_csv)]
    assert main(["cost", "--configfile", str(config), *args]) == 0
    out = capsys.readouterr().out
    assert "Settings:" in out and "3 subsamples" in out and "| all |" in out
    assert COMPILE in out and "Table 5 consistency Monte Carlo" in out
    assert "Wall time on 2 cores" in out
    assert len(pd.read_csv(out_csv)) == 1
