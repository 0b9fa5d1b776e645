"""``python -m isvm select``: the best parameters printed, the grid CSV and the plot written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from problems import clustered

from isvm.cli import main
from isvm.data.preprocess import scale
from isvm.search import LOOSearchCV
from isvm.select import METHODS, build_estimator


@pytest.fixture
def table(tmp_path):
    X, y = clustered(seed=2, n=30, n_classes=3, n_features=3, spread=0.3)
    frame = pd.DataFrame(X * [1.0, 10.0, 100.0], columns=["a", "b", "c"])
    frame.insert(1, "kind", np.array(["x", "y", "z"])[y])
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_select_prints_the_best_and_writes_the_grid_and_plot(table, tmp_path, capsys):
    path, frame = table
    out = tmp_path / "out"
    argv = ["select", "--data", str(path), "--target", "kind", "--method", "ww"]
    argv += ["--gammas", "2", "8", "--C", "0.5", "5", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    X = scale(frame[["a", "b", "c"]].to_numpy(), "zscore")
    ref = LOOSearchCV(build_estimator("ww"), {"C": [0.5, 5.0], "gamma": [2.0, 8.0]})
    ref.fit(X, frame["kind"].to_numpy())
    best = ref.best_params_
    assert f"best: gamma = {best['gamma']:g}, C = {best['C']:g}" in printed
    assert f"LOO accuracy {100 * ref.best_score_:.2f}%" in printed
    grid = pd.read_csv(out / "loo_grid.csv")
    assert len(grid) == 4 and list(grid["gamma"]) == [2.0, 2.0, 8.0, 8.0]
    expected = pd.DataFrame(ref.cv_results_["params"]).assign(
        acc=ref.cv_results_["mean_test_score"]
    )
    merged = grid.merge(expected, on=["gamma", "C"])
    np.testing.assert_array_equal(merged["loo_accuracy"], merged["acc"])
    assert (out / "loo_vs_C.png").stat().st_size > 1000


def test_select_errors_are_one_line(table, capsys):
    path, _ = table
    assert main(["select", "--data", str(path), "--target", "label"]) == 2
    assert "no column 'label'" in capsys.readouterr().err
    assert main(["select", "--data", str(path), "--target", "kind", "--C", "-1"]) == 2
    assert "C must be positive" in capsys.readouterr().err


def test_every_method_builds_the_estimator_of_that_loo_method():
    for method in METHODS:
        assert build_estimator(method)._loo_method() == method
