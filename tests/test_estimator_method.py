"""A config's own scikit-learn classifier through the study's LOO (isvm.loo.estimator_method).

Its LOO predictions are checked against scikit-learn's own ``cross_val_predict`` with
``LeaveOneOut`` (C and gamma / n_features set by hand, no shared code); the grid axes an
estimator lacks are computed once; the records do not depend on the number of worker
processes; every bad definition gets its one-line message; ``isvm loo --estimator``
writes the records' columns, the same on a second run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneOut, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

from isvm.data import load_dataset, save_npz
from isvm.loo import loo_records
from isvm.loo.estimator_method import (
    definition_problems,
    estimator_method,
    grid_note,
    loo_estimator,
)
from isvm.loo.records import GRID_COLUMNS, RECORD_COLUMNS
from isvm.seeding import derive_seed, rng

SVC_DEF = {"estimator": "sklearn.svm.SVC", "params": {"decision_function_shape": "ovr"}}
LOGISTIC_DEF = {"estimator": "sklearn.linear_model.LogisticRegression"}
KNN_DEF = {"estimator": "sklearn.neighbors.KNeighborsClassifier", "params": {"n_neighbors": 3}}
TREES_DEF = {"estimator": "sklearn.ensemble.ExtraTreesClassifier", "params": {"n_estimators": 3}}
#: given out of order: gamma stays as given, C comes back ascending
GAMMAS, CS = [5.0, 1.0], [4.0, 0.5]
KEPT = [c for c in GRID_COLUMNS if c != "seconds"]


@pytest.fixture(scope="module")
def wine():
    """40 rows of scikit-learn's wine, z-scored, with the class names as labels."""
    data = load_wine()
    idx = rng(0, "estimator-method").choice(data.target.shape[0], 40, replace=False)
    X = data.data[idx]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, data.target_names[data.target[idx]]


def _reference(estimator, X, y):
    """scikit-learn's LOO predictions, with nothing of ours in between."""
    return cross_val_predict(clone(estimator), X, y, cv=LeaveOneOut())


def test_svc_is_scikit_learns_leave_one_out(wine):
    X, y = wine
    M = X.shape[1]
    method = estimator_method("svc", SVC_DEF)
    assert method.uses_C and method.uses_gamma
    assert grid_note(method, M) == (
        "C = grid C, gamma = grid gamma / 13 features (scikit-learn's per-distance convention)"
    )
    frame, preds = loo_estimator(X, y, method, GAMMAS, CS, seed=3, return_predictions=True)
    assert list(frame.columns) == list(GRID_COLUMNS)
    assert frame[["gamma", "C"]].to_numpy().tolist() == [[5, 0.5], [5, 4], [1, 0.5], [1, 4]]
    assert preds.shape == (4, 40)
    for row, pred in zip(frame.itertuples(), preds, strict=True):
        svc = SVC(decision_function_shape="ovr", C=row.C, gamma=row.gamma / M)
        expected = _reference(svc, X, y)
        np.testing.assert_array_equal(pred, expected)
        assert row.n_errors == np.count_nonzero(expected != y)
        assert row.loo_accuracy == pytest.approx(np.mean(expected == y))
        assert row.n_support == svc.fit(X, y).support_.shape[0]
        assert row.seconds > 0
    assert (frame["n_uncertified"] == 40).all() and frame["converged"].all()
    assert (frame["iterations"] > 0).all() and (frame["n_capped"] == 0).all()


def test_logistic_regression_has_no_gamma(wine):
    X, y = wine
    method = estimator_method("logistic", LOGISTIC_DEF)
    assert method.uses_C and not method.uses_gamma
    assert grid_note(method, 13) == "C = grid C; no gamma: one LOO per C, the same at every gamma"
    frame, preds = loo_estimator(X, y, method, GAMMAS, CS, return_predictions=True)
    for row, pred in zip(frame.itertuples(), preds, strict=True):
        np.testing.assert_array_equal(pred, _reference(LogisticRegression(C=row.C), X, y))
    first, second = frame.iloc[:2], frame.iloc[2:]  # gamma 5, then gamma 1: the same LOO
    pd.testing.assert_frame_equal(
        second.drop(columns=["gamma", "seconds"]).reset_index(drop=True),
        first.drop(columns=["gamma", "seconds"]).reset_index(drop=True),
    )
    assert (first["seconds"] > 0).all() and (second["seconds"] == 0).all()
    assert (second["gamma"] == 1.0).all()


def test_an_estimator_without_C_and_gamma_runs_one_loo(wine):
    X, y = wine
    method = estimator_method("knn3", KNN_DEF)
    assert not method.uses_C and not method.uses_gamma and not method.seeded
    assert grid_note(method, 13) == "no C, no gamma: one LOO for the whole grid"
    frame, preds = loo_estimator(X, y, method, GAMMAS, CS, return_predictions=True)
    expected = _reference(KNeighborsClassifier(n_neighbors=3), X, y)
    assert all((pred == expected).all() for pred in preds)
    assert frame[KEPT[2:]].nunique().max() == 1  # every column but the grid's is the same
    assert frame["seconds"].iloc[0] > 0 and (frame["seconds"].iloc[1:] == 0).all()
    assert (frame["n_support"] == 0).all() and (frame["iterations"] == 0).all()


def test_every_fold_is_seeded_from_the_study_seed(wine):
    X, y = wine
    method = estimator_method("trees", TREES_DEF)
    assert method.seeded
    gamma, C, seed = 5.0, 1.0, 7
    frame, preds = loo_estimator(X, y, method, [gamma], [C], seed=seed, return_predictions=True)
    expected = []
    for p in range(y.shape[0]):
        keep = np.arange(y.shape[0]) != p
        state = derive_seed(seed, "refit", gamma, C, p) % 2**32
        trees = ExtraTreesClassifier(n_estimators=3, random_state=state).fit(X[keep], y[keep])
        expected.append(trees.predict(X[p : p + 1])[0])
    np.testing.assert_array_equal(preds[0], expected)
    fixed = estimator_method("trees", {**TREES_DEF, "params": {"random_state": 0}})
    assert not fixed.seeded and fixed.build(gamma, C, 13, seed).random_state == 0


@pytest.mark.parametrize("definition", [SVC_DEF, TREES_DEF], ids=["svc", "trees"])
def test_worker_processes_change_no_number(wine, definition):
    X, y = wine
    method = estimator_method("m", definition)
    one = loo_estimator(X, y, method, GAMMAS, CS, seed=1, n_jobs=1)
    two = loo_estimator(X, y, method, GAMMAS, CS, seed=1, n_jobs=2)
    pd.testing.assert_frame_equal(one[KEPT], two[KEPT])


def test_capped_fits_are_counted(wine):
    X, y = wine
    capped = {**LOGISTIC_DEF, "params": {"max_iter": 1}}
    frame = loo_estimator(X, y, estimator_method("logistic", capped), [5.0], [1.0])
    assert frame["n_capped"].tolist() == [41] and not frame["converged"].any()
    assert frame["iterations"].tolist() == [41]


def test_a_fold_left_with_one_class_predicts_it():
    X = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 100.0]).reshape(10, 1)
    y = np.array([0] * 9 + [1])  # held out, the last point leaves one class
    method = estimator_method("knn1", {**KNN_DEF, "params": {"n_neighbors": 1}})
    _, preds = loo_estimator(X, y, method, [5.0], [1.0], return_predictions=True)
    assert (preds[0] == 0).all()


def test_inputs_are_checked(wine):
    X, y = wine
    method = estimator_method("knn3", KNN_DEF)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        loo_estimator(bad, y, method, [5.0], [1.0])
    with pytest.raises(ValueError, match="with y's 40 rows"):
        loo_estimator(X[:-1], y, method, [5.0], [1.0])
    with pytest.raises(ValueError, match="repeated gamma or C"):
        loo_estimator(X, y, method, [5.0], [1.0, 1.0])


def test_loo_records_serves_an_estimator(wine):
    X, y = wine
    method = estimator_method("knn3", KNN_DEF)
    frame, preds = loo_records(X, y, method, [5.0], CS, seed=2, return_predictions=True)
    direct = loo_estimator(X, y, method, [5.0], CS, seed=2)
    pd.testing.assert_frame_equal(frame[KEPT], direct[KEPT])
    assert preds.shape == (2, 40)


_SVC_PARAMS = "C, break_ties, cache_size, class_weight, coef0, decision_function_shape, degree"


@pytest.mark.parametrize(
    "definition, message",
    [
        (
            {"estimator": "sklearn.svm.SVX"},
            "cannot import 'sklearn.svm.SVX': module 'sklearn.svm' has no attribute 'SVX'",
        ),
        (
            {"estimator": "no_such_package.Thing"},
            "cannot import 'no_such_package.Thing': No module named 'no_such_package'",
        ),
        ({"estimator": "SVC"}, "estimator: 'SVC' is not a dotted import path"),
        ({"params": {}}, "estimator: missing (an import path such as 'sklearn.svm.SVC')"),
        ("sklearn.svm.SVC", "must be a mapping with the keys estimator and params"),
        (
            {"estimator": "sklearn.svm.SVC", "parms": {}},
            "unknown key 'parms' (the keys: estimator, params)",
        ),
        (
            {"estimator": "sklearn.svm.SVC", "params": [1]},
            "params: must be a mapping of parameter names to values",
        ),
        ({"estimator": "sklearn.svm.l1_min_c"}, "'sklearn.svm.l1_min_c' is not a class"),
        (
            {"estimator": "sklearn.preprocessing.StandardScaler"},
            "'sklearn.preprocessing.StandardScaler' is not a scikit-learn classifier "
            "(sklearn.base.is_classifier is False)",
        ),
        (
            {"estimator": "sklearn.svm.SVR"},
            "'sklearn.svm.SVR' is not a scikit-learn classifier",
        ),
        (
            {"estimator": "collections.OrderedDict"},
            "'collections.OrderedDict' is not a scikit-learn estimator (it has no get_params)",
        ),
        (
            {"estimator": "sklearn.multiclass.OneVsRestClassifier"},
            "cannot build 'sklearn.multiclass.OneVsRestClassifier' without arguments: "
            "OneVsRestClassifier.__init__() missing 1 required positional argument",
        ),
        (
            {"estimator": "sklearn.svm.SVC", "params": {"foo": 1}},
            f"'sklearn.svm.SVC' has no parameter 'foo' (its parameters: {_SVC_PARAMS}",
        ),
        (
            {"estimator": "sklearn.svm.SVC", "params": {"C": 1.0}},
            "params.C: C and gamma come from the study's grid; do not fix them here",
        ),
        (
            {"estimator": "sklearn.svm.SVC", "params": {"gamma": "scale"}},
            "params.gamma: C and gamma come from the study's grid; do not fix them here",
        ),
        (
            {**KNN_DEF, "params": {"C": 1.0}},
            "'sklearn.neighbors.KNeighborsClassifier' has no parameter 'C'",
        ),
        (
            {"estimator": "sklearn.svm.SVC", "params": {"kernel": "precomputed"}},
            "params.kernel: the folds are refit on the features, not on a kernel",
        ),
        (
            {"estimator": "sklearn.svm.SVC", "params": {"kernel": "foo"}},
            "params: The 'kernel' parameter of SVC must be",
        ),
    ],
)
def test_a_bad_definition_gets_one_line(definition, message):
    problems = definition_problems("mine", definition)
    assert len(problems) == 1 and "\n" not in problems[0]
    assert problems[0].startswith(message)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        estimator_method("mine", definition)


def test_the_name_is_checked():
    assert definition_problems("mine", SVC_DEF) == []
    with pytest.raises(ValueError, match=r"^'ova' is a built-in method; name yours apart$"):
        estimator_method("ova", SVC_DEF)
    with pytest.raises(ValueError, match=re.escape("method name '2svc' must match [A-Za-z]")):
        estimator_method("2svc", SVC_DEF)


def test_the_module_is_light_at_import():
    code = (
        "import sys, isvm.loo.estimator_method; "
        "print(sorted({'sklearn', 'joblib', 'numba'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def iris_npz(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "iris.npz"
    save_npz(load_dataset("iris", source="bundled", scaling="zscore"), path)
    return path


def _loo_cli(data, subsamples, out, method: str, *extra: str) -> list[str]:
    grid = "--reps-per-job 2 --gammas 5 10 --C-start 0.1 --C-stop 1.5 --C-step 0.7 --seed 4"
    return ["loo", "--data", str(data), "--subsamples", str(subsamples), "--method", method] + [
        *grid.split(),
        "--out",
        str(out),
        *extra,
    ]


def test_cli_runs_an_estimator(iris_npz, tmp_path, capsys):
    from isvm.cli import main

    idx = np.stack([rng(5, "estimator-cli", r).choice(150, 15, replace=False) for r in range(2)])
    sub = tmp_path / "sub.npy"
    np.save(sub, idx)
    definition = json.dumps(SVC_DEF)
    first, second = tmp_path / "loo" / "0.parquet", tmp_path / "again" / "0.parquet"
    assert main(_loo_cli(iris_npz, sub, first, "mysvc", "--estimator", definition)) == 0
    log = capsys.readouterr().err
    assert "mysvc: sklearn.svm.SVC, C = grid C, gamma = grid gamma / 4 features" in log
    assert "numba" not in log  # no engine warm-up
    records = pd.read_parquet(first)
    assert list(records.columns) == list(RECORD_COLUMNS)
    assert len(records) == 2 * 2 * 2 and set(records["method"]) == {"mysvc"}
    assert (records["n_uncertified"] == 15).all()
    assert not first.with_suffix(".partial").exists()
    extra = ["--estimator", definition, "--threads", "2"]
    assert main(_loo_cli(iris_npz, sub, second, "mysvc", *extra)) == 0
    again = pd.read_parquet(second)
    kept = [c for c in RECORD_COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(records[kept], again[kept])


@pytest.mark.parametrize(
    "method, extra, message",
    [
        ("mine", ["--estimator", '{"estimator": "sklearn.svm.SVX"}'], "--estimator: cannot"),
        ("ova", ["--estimator", json.dumps(SVC_DEF)], "--estimator: 'ova' is a built-in"),
        ("mine", ["--estimator", "{"], "--estimator: Expecting property name"),
        ("mine", [], "unknown method 'mine'"),
    ],
)
def test_cli_refuses_a_bad_method(iris_npz, tmp_path, capsys, method, extra, message):
    from isvm.cli import main

    np.save(tmp_path / "sub.npy", np.arange(30).reshape(2, 15))
    out = tmp_path / "0.parquet"
    assert main(_loo_cli(iris_npz, tmp_path / "sub.npy", out, method, *extra)) == 2
    assert f"isvm loo: error: {message}" in capsys.readouterr().err
    assert not out.exists() and not out.with_suffix(".partial").exists()
