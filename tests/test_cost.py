"""The study cost estimator (python -m isvm cost)."""

from __future__ import annotations

import pytest

from isvm.cli import main
from isvm.experiment.cost import estimate, read_config, sampled_path_starts, summary


def test_path_starts_are_spread_and_leave_room_for_the_lead_in():
    starts = sampled_path_starts(100, 4, 6)
    assert starts[0] == 2 and starts[-1] == 94 and len(starts) == 4
    assert sampled_path_starts(5, 4, 6) == []


def test_estimate_of_a_small_config(tmp_path):
    config = {
        "datasets": ["wine", "iris"],
        "sizes": {"default": [30], "iris": [20, 30]},
        "n_subsamples": 10,
        "seed": 1,
        "methods": ["isvm", "ova"],
        "grid": {"gammas": [5], "C": {"start": 0.1, "stop": 5, "step": 0.5}},
    }
    frame = estimate(config, stretches=2, points=2, log=lambda _: None)
    assert len(frame) == 6  # wine 30, iris 20 and 30, two methods each
    assert (frame["seconds_per_subsample"] > 0).all()
    assert frame["core_hours"].tolist() == pytest.approx(
        (frame["seconds_per_subsample"] * 10 / 3600).tolist()
    )
    text = summary(frame, cores=2)
    assert "| 20 |" in text and "| all |" in text and "on 2 cores" in text


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
    config = {
        "datasets": ["wine"],
        "sizes": {"default": [20]},
        "n_subsamples": 1,
        "seed": 0,
        "methods": ["ova", "ww"],
        "grid": {"gammas": [5], "C": {"start": 0.1, "stop": 1, "step": 0.5}},
    }
    estimate(config, stretches=1, points=1, log=lambda _: None)
    assert calls[0] == ("warm", ["ova", "ww"])
    assert {name for kind, name in calls[1:]} == {"ova", "ww"}
    assert all(kind == "time" for kind, _ in calls[1:])


def test_cli_errors_name_the_problem(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [wine]\n")
    assert main(["cost", "--configfile", str(bad)]) == 2
    assert "missing key(s) sizes" in capsys.readouterr().err
    with pytest.raises(ValueError, match="sizes.default"):
        bad.write_text(
            "datasets: [wine]\nsizes: {wine: [30]}\nn_subsamples: 1\nseed: 0\n"
            "grid: {gammas: [5], C: {start: 0.1, stop: 1, step: 0.5}}\nmethods: [isvm]\n"
        )
        read_config(bad)


def test_cli_refuses_an_unknown_data_set_and_bad_counts(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(
        "datasets: [nosuchdata]\nsizes: {default: [30]}\nn_subsamples: 1\nseed: 0\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 1, step: 0.5}}\nmethods: [isvm]\n"
    )
    assert main(["cost", "--configfile", str(config)]) == 2
    assert "nosuchdata" in capsys.readouterr().err
    assert main(["cost", "--configfile", str(config), "--cores", "0"]) == 2
    assert "--cores" in capsys.readouterr().err


def test_cli_prints_settings_and_summary(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(
        "datasets: [wine]\nsizes: {default: [20]}\nn_subsamples: 3\nseed: 0\n"
        "grid: {gammas: [5], C: {start: 0.1, stop: 3, step: 0.5}}\nmethods: [ova]\n"
    )
    assert main(["cost", "--configfile", str(config), "--stretches", "1", "--points", "2"]) == 0
    out = capsys.readouterr().out
    assert "Settings:" in out and "3 subsamples" in out and "| all |" in out
