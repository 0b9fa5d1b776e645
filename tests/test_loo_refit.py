"""Refit LOO (isvm.loo.refit): the methods the exact engine cannot serve, in the workflow.

Each refit method's LOO predictions are checked against fitting its public estimator
on the RBF features of every fold (no precomputed kernel, no shared code but the
estimator); the formulation path against the engine; the records' solver outcomes
(iteration cap, nothing certified) and the names the workflow accepts.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from problems import clustered
from sklearn.multiclass import OneVsRestClassifier

from isvm.baselines import BandedSVC, KernelPerceptron, one_vs_one
from isvm.data import load_dataset, save_npz
from isvm.estimators import CrammerSingerSVC, OneVsAllSVC
from isvm.loo import LOO_METHODS, REFIT_METHODS, loo_grid, loo_records, loo_refit
from isvm.loo.cli import run_chunk
from isvm.loo.records import GRID_COLUMNS, RECORD_COLUMNS
from isvm.methods import FORMULATIONS
from isvm.seeding import derive_seed, rng

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-8
#: predictions may differ only where the top two scores are this close
NEAR_TIE = 1e-5


def _problem(seed: int, n: int = 18, n_classes: int = 3):
    return clustered(seed, n, n_classes, n_features=3, spread=0.3)


def _public_estimator(method: str, C: float, gamma: float, seed: int):
    """The method's estimator as a user builds it, on RBF features (not a kernel)."""
    state = seed % 2**32
    if method == "cs":
        return CrammerSingerSVC(C=C, gamma=gamma, tol=TOL, random_state=state)
    if method == "ovo":
        return one_vs_one(OneVsAllSVC(C=C, gamma=gamma, tol=TOL, random_state=state))
    if method == "perceptron":
        return KernelPerceptron(gamma=gamma, random_state=state)
    if method == "bsvm":
        return OneVsRestClassifier(
            BandedSVC(C=C, C_high=C, gamma=gamma, tol=TOL, random_state=state)
        )
    raise AssertionError(method)


@pytest.mark.parametrize("method", sorted(REFIT_METHODS))
@pytest.mark.parametrize("seed", range(2))
def test_refit_predictions_are_those_of_the_public_estimator(method, seed):
    X, y = _problem(seed, n_classes=(3, 4)[seed])
    gammas, Cs = [5.0], [0.3, 4.0]
    frame, pred, gap = loo_refit(X, y, method, gammas, Cs, tol=TOL, seed=seed)
    assert list(frame.columns) == list(GRID_COLUMNS)
    n = y.shape[0]
    differ = 0
    for row, C in enumerate(Cs):
        fitted_at = C if REFIT_METHODS[method].uses_C else Cs[0]  # no C: fitted once
        for p in range(n):
            keep = np.arange(n) != p
            est = _public_estimator(method, C, 5.0, derive_seed(seed, "refit", 5.0, fitted_at, p))
            expected = est.fit(X[keep], y[keep]).predict(X[p : p + 1])[0]
            if expected != pred[row, p]:
                differ += 1
                assert gap[row, p] < NEAR_TIE, (method, C, p, gap[row, p])
        assert frame["n_errors"].iloc[row] == int((pred[row] != y).sum())
    assert differ <= 1
    assert frame["converged"].all() and (frame["n_capped"] == 0).all()
    assert (frame["n_uncertified"] == n).all()  # a refit certifies nothing


@pytest.mark.parametrize("method", ["llw", "ww"])
def test_formulations_refit_like_the_engine(method):
    X, y = _problem(3, n=20)
    _, engine = loo_grid(X, y, method, [5.0], [0.5, 6.0], return_predictions=True)
    frame, ref, gap = loo_refit(X, y, method, [5.0], [0.5, 6.0], tol=1e-9)
    assert ((engine != ref) <= (gap < NEAR_TIE)).all()
    assert list(frame.columns) == list(GRID_COLUMNS)


def test_perceptron_ignores_C():
    X, y = _problem(1)
    frame, pred, _ = loo_refit(X, y, "perceptron", [5.0, 10.0], [0.1, 1.0, 2.0])
    for _, g in frame.groupby("gamma"):
        assert g["loo_accuracy"].nunique() == 1 and g["iterations"].nunique() == 1
    assert (pred[0] == pred[1]).all() and (pred[3] == pred[5]).all()


def test_a_class_with_one_point_is_predicted_away_when_held_out():
    X, y = _problem(2, n=12, n_classes=2)
    y = y.copy()
    y[0] = 2  # class 2 has one point: its fold trains on two classes
    for method in REFIT_METHODS:
        _, pred, _ = loo_refit(X, y, method, [5.0], [1.0])
        assert pred[0, 0] != 2, method
    X2, y2 = X[:5], np.array([0, 1, 1, 1, 1])  # the fold without point 0 has one class
    for method in REFIT_METHODS:
        frame, pred, _ = loo_refit(X2, y2, method, [5.0], [1.0])
        assert pred[0, 0] == 1 and frame["converged"].all(), method


def test_the_iteration_cap_is_recorded():
    X, y = _problem(4, n=24)
    with np.errstate(all="ignore"):
        frame, _, _ = loo_refit(X, y, "cs", [5.0], [40.0], max_iter=1)
    assert not frame["converged"].iloc[0]
    assert frame["n_capped"].iloc[0] > 0


def test_unknown_method_names_the_choices():
    X, y = _problem(0)
    with pytest.raises(ValueError, match="unknown method 'xyz'; choose one of .*'cs'"):
        loo_refit(X, y, "xyz", [5.0], [1.0])


def test_every_method_has_one_way_to_loo():
    assert set(LOO_METHODS) == set(FORMULATIONS) | set(REFIT_METHODS)
    assert not set(FORMULATIONS) & set(REFIT_METHODS)
    assert {m for m, how in LOO_METHODS.items() if how == "engine"} == set(FORMULATIONS)


def test_the_config_schema_names_every_loo_method_and_the_config_accepts_it():
    from isvm.study import config_problems

    schema = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())
    described = re.findall(r"\w+", schema["properties"]["methods"]["description"])
    assert set(LOO_METHODS) <= set(described)
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    assert config_problems({**config, "methods": sorted(LOO_METHODS)}) == []
    problems = config_problems({**config, "methods": ["isvm", "svm"]})
    assert (
        problems == [("methods", problems[0][1])]
        and "unknown method 'svm': not built in" in problems[0][1]
    )


@pytest.fixture(scope="module")
def iris_npz(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "iris.npz"
    save_npz(load_dataset("iris", source="bundled", scaling="zscore"), path)
    return path


def test_cli_runs_a_refit_method(iris_npz, tmp_path):
    from isvm.cli import main

    idx = np.stack([rng(2, "refit-cli", r).choice(150, 15, replace=False) for r in range(2)])
    np.save(tmp_path / "sub.npy", idx)
    out = tmp_path / "loo" / "0.parquet"
    grid = "--method cs --reps-per-job 2 --gammas 5 --C-start 0.1 --C-stop 1.5 --C-step 0.7"
    code = main(
        ["loo", "--data", str(iris_npz), "--subsamples", str(tmp_path / "sub.npy")]
        + [*grid.split(), "--out", str(out)]
    )
    assert code == 0
    records = pd.read_parquet(out)
    assert list(records.columns) == list(RECORD_COLUMNS)
    assert len(records) == 2 * 2 and set(records["method"]) == {"cs"}
    assert (records["n_uncertified"] == 15).all()


def test_run_chunk_refuses_an_unknown_method(iris_npz, tmp_path):
    np.save(tmp_path / "sub.npy", np.arange(20).reshape(1, 20) * 7)
    grid = dict(gammas=[5.0], Cs=np.array([1.0]), tol=1e-3, max_iter=None, threads=1, seed=0)
    with pytest.raises(ValueError, match="unknown method 'svm'"):
        run_chunk(iris_npz, tmp_path / "sub.npy", "svm", 0, 1, **grid)


def test_one_vs_one_refits_only_the_pairs_of_the_held_out_class(monkeypatch):
    """The shortcut (pairs without y_p kept from the full fit) gives the whole-fold refits."""
    X, y = _problem(5, n=20, n_classes=4)
    y = y.copy()
    y[3] = 0  # class 3 keeps 4 points; no class is a singleton here
    Cs = [0.3, 4.0]
    frame, pred, gap = loo_refit(X, y, "ovo", [5.0], Cs, tol=TOL)
    whole = REFIT_METHODS["ovo"]._replace(fold_from_full=None)
    monkeypatch.setitem(REFIT_METHODS, "ovo", whole)
    frame_w, pred_w, gap_w = loo_refit(X, y, "ovo", [5.0], Cs, tol=TOL)
    assert ((pred != pred_w) <= (np.minimum(gap, gap_w) < NEAR_TIE)).all()
    assert (frame["n_support"] == frame_w["n_support"]).all()  # the same full fit
    # L - 1 = 3 of the 6 pairs refit per fold instead of all 6
    assert (frame["iterations"] < frame_w["iterations"]).all()


def test_loo_records_serves_each_method_its_way():
    X, y = _problem(6)
    kept = [c for c in GRID_COLUMNS if c != "seconds"]
    grid = ([5.0], [0.5, 2.0])
    engine = loo_records(X, y, "llw", *grid, seed=3)[kept]
    pd.testing.assert_frame_equal(engine, loo_grid(X, y, "llw", *grid, seed=3)[kept])
    refit = loo_records(X, y, "cs", *grid, seed=3)[kept]
    pd.testing.assert_frame_equal(refit, loo_refit(X, y, "cs", *grid, seed=3)[0][kept])
    with pytest.raises(ValueError, match="unknown method 'xyz'; choose one of"):
        loo_records(X, y, "xyz", [5.0], [1.0])
