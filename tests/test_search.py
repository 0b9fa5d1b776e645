"""isvm.LOOSearchCV against GridSearchCV(cv=LeaveOneOut()); its API, errors and checks.

The reference is scikit-learn's own search over the same estimator and grid: every
fold refit from zero. The engine's folds are exact for the fold problem's optimum, so
the estimators here are solved tightly (tol=1e-8) for the refits to be exact as well;
a grid point may still differ where the engine reports uncertified folds (near-ties),
and then by at most those folds.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import clustered, random_points
from sklearn.base import clone
from sklearn.datasets import load_iris, load_wine
from sklearn.model_selection import GridSearchCV, LeaveOneOut
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_estimators import WEIGHTS_UP_TO_TOL

import isvm.search
from isvm import (
    BandedSVC,
    CrammerSingerSVC,
    InhibitorySVC,
    KernelPerceptron,
    LeeLinWahbaSVC,
    LOOSearchCV,
    OneVsAllSVC,
    ScatterSVC,
    WestonWatkinsSVC,
    one_vs_one,
)
from isvm.kernels import rbf_kernel

TIGHT = {"tol": 1e-8, "random_state": 0}  # refits as exact as the engine (refit routes: any tol)
GRID = {"C": [0.3, 3.0], "gamma": [2.0, 8.0]}

#: (estimator, grid, route of every candidate): one per method of isvm.loo.LOO_METHODS
METHODS = {
    "isvm": (InhibitorySVC(**TIGHT), GRID, "engine:isvm"),
    "ova": (OneVsAllSVC(**TIGHT), GRID, "engine:ova"),
    "ww": (WestonWatkinsSVC(**TIGHT), GRID, "engine:ww"),
    "ww_paper": (WestonWatkinsSVC(ww_kernel="paper", **TIGHT), GRID, "engine:ww_paper"),
    "llw": (LeeLinWahbaSVC(**TIGHT), GRID, "engine:llw"),
    "scatter": (ScatterSVC(**TIGHT), GRID, "engine:scatter"),
    "cs": (CrammerSingerSVC(**TIGHT), GRID, "refit:cs"),
    "perceptron": (KernelPerceptron(random_state=0), {"gamma": [2.0, 8.0]}, "refit"),
    "ovo": (
        one_vs_one(OneVsAllSVC(random_state=0)),
        {"estimator__C": [0.3, 3.0], "estimator__gamma": [8.0]},
        "refit",
    ),
    "bsvm": (
        OneVsRestClassifier(BandedSVC(random_state=0)),
        {"estimator__C": [0.3, 3.0], "estimator__gamma": [8.0]},
        "refit",
    ),
}


def _small(seed: int, n: int = 24, n_classes: int = 3):
    X, y, _ = random_points(np.random.default_rng(seed), n, n_classes, 3, 0)
    return X, y


def _real(loader, n: int, seed: int):
    """A z-scored random subsample of a scikit-learn data set, every class twice or more."""
    X, y = loader(return_X_y=True)
    idx = np.random.default_rng(seed).choice(y.shape[0], n, replace=False)
    X = X[idx]
    return (X - X.mean(axis=0)) / X.std(axis=0), y[idx]


def assert_same_search(ours: LOOSearchCV, ref: GridSearchCV) -> None:
    """Same candidates in the same order, same LOO accuracy at every one (bar reported
    near-ties), same std and rank where equal, same best candidate."""
    n = ours.n_splits_
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    mine, theirs = ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    uncertified = ours.cv_results_["n_uncertified"]
    exact = np.asarray([r.startswith("engine") for r in ours.cv_results_["loo_route"]])
    settled = exact & (uncertified == 0) | ~exact
    np.testing.assert_array_equal(mine[settled], theirs[settled])
    assert np.all(np.abs(mine - theirs) <= uncertified / n + 1e-12)
    if np.array_equal(mine, theirs):
        splits = [f"split{k}_test_score" for k in range(n)]
        for key in ("std_test_score", "rank_test_score", *splits):
            np.testing.assert_array_equal(ours.cv_results_[key], ref.cv_results_[key])
        assert ours.best_index_ == ref.best_index_
        assert ours.best_params_ == ref.best_params_
        assert ours.best_score_ == ref.best_score_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(METHODS))
def test_equals_gridsearch_loo_for_every_method(name):
    estimator, grid, route = METHODS[name]
    X, y = _small(seed=len(name))
    ours = LOOSearchCV(estimator, grid).fit(X, y)
    ref = GridSearchCV(estimator, grid, cv=LeaveOneOut()).fit(X, y)
    assert set(ours.cv_results_["loo_route"]) == {route}
    assert_same_search(ours, ref)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


@pytest.mark.parametrize(
    "loader, estimator",
    [(load_wine, InhibitorySVC(**TIGHT)), (load_iris, WestonWatkinsSVC(**TIGHT))],
    ids=["wine-isvm", "iris-ww"],
)
def test_equals_gridsearch_loo_on_real_data(loader, estimator):
    X, y = _real(loader, 36, seed=1)
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [1.0, 10.0]}
    ours = LOOSearchCV(estimator, grid).fit(X, y)
    ref = GridSearchCV(estimator, grid, cv=LeaveOneOut()).fit(X, y)
    assert_same_search(ours, ref)
    assert ours.best_params_ == ref.best_params_


def test_other_parameters_are_an_outer_loop_and_kernels_mix_routes():
    """A gridded ww_kernel and kernel: one engine path per setting, the linear kernel refit."""
    X, y = _small(seed=3)
    grid = [
        {"C": [0.3, 3.0], "ww_kernel": ["full", "paper"], "gamma": [4.0]},
        {"C": [0.3], "kernel": ["linear", "poly"], "degree": [2]},
    ]
    est = WestonWatkinsSVC(**TIGHT)
    ours = LOOSearchCV(est, grid).fit(X, y)
    ref = GridSearchCV(est, grid, cv=LeaveOneOut()).fit(X, y)
    routes = list(ours.cv_results_["loo_route"])
    assert routes == ["engine:ww", "engine:ww_paper"] * 2 + ["refit"] * 2
    assert_same_search(ours, ref)
    for key in ("param_C", "param_kernel", "param_gamma"):
        np.testing.assert_array_equal(ours.cv_results_[key].mask, ref.cv_results_[key].mask)


def test_a_precomputed_kernel_is_refit_on_its_slices():
    X, y = _small(seed=4)
    K = rbf_kernel(X, gamma=4.0)
    est = InhibitorySVC(kernel="precomputed", **TIGHT)
    ours = LOOSearchCV(est, {"C": [0.3, 3.0]}).fit(K, y)
    ref = GridSearchCV(est, {"C": [0.3, 3.0]}, cv=LeaveOneOut()).fit(K, y)
    assert list(ours.cv_results_["loo_route"]) == ["refit", "refit"]
    assert_same_search(ours, ref)
    engine = LOOSearchCV(InhibitorySVC(gamma=4.0, **TIGHT), {"C": [0.3, 3.0]}).fit(X, y)
    np.testing.assert_array_equal(
        engine.cv_results_["mean_test_score"], ours.cv_results_["mean_test_score"]
    )


def test_ties_go_to_the_first_candidate_in_params_order():
    """Many C values on a separable problem tie; the first of the best wins, as in sklearn."""
    X, y = clustered(seed=5, n=21, n_classes=3, spread=0.05)
    grid = {"C": [0.5, 1.0, 2.0, 4.0], "gamma": [3.0, 1.0]}
    ours = LOOSearchCV(InhibitorySVC(**TIGHT), grid).fit(X, y)
    means = ours.cv_results_["mean_test_score"]
    assert np.count_nonzero(means == means.max()) > 1
    assert ours.best_index_ == int(np.flatnonzero(means == means.max())[0])
    ref = GridSearchCV(InhibitorySVC(**TIGHT), grid, cv=LeaveOneOut()).fit(X, y)
    assert_same_search(ours, ref)


def test_string_labels_and_pipeline_after_a_scaler():
    X, y = _small(seed=6)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    search = LOOSearchCV(InhibitorySVC(random_state=0), GRID)
    pipe = make_pipeline(StandardScaler(), search).fit(10 * X + 3, names)
    direct = clone(search).fit(StandardScaler().fit_transform(10 * X + 3), y)
    fitted = pipe[-1]
    np.testing.assert_array_equal(
        fitted.cv_results_["mean_test_score"], direct.cv_results_["mean_test_score"]
    )
    assert set(pipe.predict(10 * X + 3)) <= set(names)
    np.testing.assert_array_equal(fitted.classes_, names[np.unique(y, return_index=True)[1]])
    assert pipe.score(10 * X + 3, names) == fitted.best_estimator_.score(
        StandardScaler().fit_transform(10 * X + 3), names
    )


def test_clone_get_params_and_refit_false():
    search = LOOSearchCV(InhibitorySVC(C=2.0), GRID, n_jobs=1, verbose=0)
    params = search.get_params()
    assert params["estimator__C"] == 2.0 and params["param_grid"] == GRID
    copy = clone(search).set_params(estimator__gamma=3.0, refit=False)
    assert copy.estimator.gamma == 3.0 and search.estimator.gamma == 5.0
    X, y = _small(seed=7)
    copy.fit(X, y)
    assert not hasattr(copy, "best_estimator_") and copy.best_params_ in GRID_LIST
    with pytest.raises(AttributeError, match="refit=False"):
        copy.predict(X)


GRID_LIST = [{"C": C, "gamma": g} for C in GRID["C"] for g in GRID["gamma"]]


def test_verbose_prints_one_line_per_grid_point(capsys):
    X, y = _small(seed=8)
    grid = {"C": [0.3, 3.0], "gamma": [4.0], "kernel": ["rbf", "linear"]}
    LOOSearchCV(InhibitorySVC(), grid, verbose=1).fit(X, y)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[LOOSearchCV]")]
    assert len(lines) == 4
    assert (
        sum("engine:isvm" in ln for ln in lines) == 2 and sum(" refit " in ln for ln in lines) == 2
    )


def test_grid_summary_is_the_papers_view():
    X, y = _small(seed=9)
    search = LOOSearchCV(InhibitorySVC(), {"C": [0.1, 1.0, 10.0], "gamma": [1.0, 10.0]}).fit(X, y)
    means = np.sort(search.cv_results_["mean_test_score"])[::-1]
    summary = search.grid_summary(qs=(50,), near=0.0)
    assert summary["top50_mean"] == pytest.approx(means[:3].mean())
    assert summary["near_best_share"] == pytest.approx(np.mean(means == means[0]))


@pytest.mark.parametrize(
    "grid, match",
    [
        ({"C": [1.0], "kernal": ["rbf"]}, "has no parameter 'kernal'"),
        ({"C": [1.0, 0.0]}, "C must be positive finite numbers"),
        ({"gamma": [-2.0]}, r"ours = SVC's gamma x n_features"),
        ({"C": [np.inf]}, "C must be positive finite numbers"),
        ({"C": [1.0], "kernel": ["rbf", "cosine"]}, r"'kernel' parameter of \w+ must be a str"),
    ],
)
def test_bad_grid_fails_before_any_work(monkeypatch, grid, match):
    _no_work(monkeypatch)
    X, y = _small(seed=10)
    with pytest.raises(ValueError, match=match):
        LOOSearchCV(InhibitorySVC(), grid).fit(X, y)


def test_bad_data_fails_before_any_work(monkeypatch):
    _no_work(monkeypatch)
    X, y = _small(seed=11)
    with pytest.raises(ValueError, match="at least 2 classes"):
        LOOSearchCV(InhibitorySVC(), GRID).fit(X, np.zeros_like(y))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LOOSearchCV(InhibitorySVC(), GRID).fit(X, y)


def _no_work(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(isvm.search, "_loo_path", refuse)
    monkeypatch.setattr(isvm.search, "_refit_folds", refuse)


def test_a_single_sample_class_is_refused(monkeypatch):
    """LOO cannot score a class of one sample (its fold has none of it to learn from):
    a one-line error before any work, for the engine and for refits alike."""
    _no_work(monkeypatch)
    X, y = _small(seed=12)
    y[0] = 3  # the only sample of class 3
    for estimator in (InhibitorySVC(), KernelPerceptron()):
        with pytest.raises(ValueError, match="class 3 has a single sample"):
            LOOSearchCV(estimator, {"gamma": [1.0]}).fit(X, y)


@parametrize_with_checks(
    [LOOSearchCV(InhibitorySVC(gamma=20.0, random_state=0), {"C": [0.5, 2.0]})],
    expected_failed_checks=lambda estimator: {
        "check_sample_weight_equivalence_on_dense_data": WEIGHTS_UP_TO_TOL
    },
)
def test_sklearn_meta_estimator_checks(estimator, check):
    """scikit-learn's checks, as they apply to a search over a classifier (array API
    skipped by scikit-learn without SCIPY_ARRAY_API). The inner estimator is seeded:
    check_fit_idempotent cannot seed a nested random_state, and GridSearchCV fails it
    the same way with an unseeded randomised estimator."""
    check(estimator)
