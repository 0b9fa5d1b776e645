"""isvm.LOOSearchCV's scoring, refit and input checks.

Every metric is computed on a candidate's N pooled LOO predictions, so the reference is
``cross_val_predict(estimator, X, y, cv=LeaveOneOut())`` followed by the metric, for each
engine route; refit follows GridSearchCV's rules (a metric name with several metrics, a
callable). The estimators are solved tightly (tol=1e-8) so that the refits are exact.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from problems import clustered
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    log_loss,
    make_scorer,
)
from sklearn.model_selection import GridSearchCV, LeaveOneOut, cross_val_predict

import isvm.search
from isvm import (
    InhibitorySVC,
    LeeLinWahbaSVC,
    LOOSearchCV,
    OneVsAllSVC,
    ScatterSVC,
    WestonWatkinsSVC,
)
from isvm.search import continuous_target

TIGHT = {"tol": 1e-8, "random_state": 0}
GRID = {"C": [0.5, 5.0], "gamma": [2.0]}
#: on the wine subsample, small C predicts the large classes more often: balanced
#: accuracy and macro F1 differ from the accuracy there, for every route and scaling
WINE_GRID = {"C": [0.02, 0.5, 5.0], "gamma": [1.0]}
F1_MACRO = make_scorer(f1_score, average="macro")


#: the engine's estimators at a tight tolerance, with the route LOOSearchCV takes
ENGINE_CASES = [
    (InhibitorySVC(**TIGHT), "engine:isvm"),
    (OneVsAllSVC(**TIGHT), "engine:ova"),
    (WestonWatkinsSVC(**TIGHT), "engine:ww"),
    (LeeLinWahbaSVC(**TIGHT), "engine:llw"),
    (ScatterSVC(**TIGHT), "engine:scatter"),
]


def _wine(scaling: str, n_per_class=(24, 16, 8)):
    """An imbalanced subsample of wine (48 rows), z-scored or [0, 1]-scaled: the balanced
    accuracy and macro F1 of its LOO predictions differ from their accuracy."""
    X, y = load_wine(return_X_y=True)
    gen = np.random.default_rng(0)
    idx = np.concatenate(
        [gen.choice(np.flatnonzero(y == c), k, replace=False) for c, k in enumerate(n_per_class)]
    )
    X, y = X[idx], y[idx]
    if scaling == "zscore":
        return (X - X.mean(axis=0)) / X.std(axis=0), y
    return (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0)), y


def _small(seed: int = 0, n: int = 24):
    return clustered(seed=seed, n=n, n_classes=3, spread=0.3)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.parametrize("scaling", ["zscore", "minmax"])
@pytest.mark.parametrize(
    "estimator, route", ENGINE_CASES[:3], ids=[route for _, route in ENGINE_CASES[:3]]
)
def test_metrics_are_those_of_the_pooled_loo_predictions(estimator, route, scaling):
    """balanced accuracy and macro F1 (by name and as a scorer) equal cross_val_predict's
    LOO predictions then the metric, at every candidate."""
    X, y = _wine(scaling)
    scoring = {"balanced_accuracy": "balanced_accuracy", "f1": F1_MACRO, "accuracy": "accuracy"}
    search = LOOSearchCV(estimator, WINE_GRID, scoring=scoring, refit="balanced_accuracy")
    results = search.fit(X, y).cv_results_
    assert set(results["loo_route"]) == {route}
    assert search.loo_predictions_.shape == (len(results["params"]), y.shape[0])
    for k, params in enumerate(results["params"]):
        ref = cross_val_predict(clone(estimator).set_params(**params), X, y, cv=LeaveOneOut())
        ours = search.loo_predictions_[k]
        assert np.count_nonzero(ours != ref) <= results["n_uncertified"][k]
        assert results["mean_test_balanced_accuracy"][k] == balanced_accuracy_score(y, ours)
        assert results["mean_test_f1"][k] == f1_score(y, ours, average="macro")
        assert results["mean_test_accuracy"][k] == accuracy_score(y, ours)
    balanced = results["mean_test_balanced_accuracy"]
    for other in (balanced, results["mean_test_f1"]):  # so that a mix-up would show
        assert not np.array_equal(other, results["mean_test_accuracy"])
    assert search.best_index_ == int(np.flatnonzero(balanced == balanced.max())[0])
    assert search.best_score_ == balanced[search.best_index_]


def test_pooled_balanced_accuracy_differs_from_gridsearch_per_fold_mean():
    """GridSearchCV(cv=LeaveOneOut()) averages one-point folds: its balanced accuracy is
    the accuracy; LOOSearchCV's is that of the N held-out predictions."""
    X, y = _wine("zscore")
    grid = {"C": [0.05], "gamma": [1.0]}  # errors mostly in the small classes
    ours = LOOSearchCV(InhibitorySVC(**TIGHT), grid, scoring="balanced_accuracy").fit(X, y)
    with pytest.warns(UserWarning):  # sklearn: a one-point fold has a single class
        ref = GridSearchCV(
            InhibitorySVC(**TIGHT), grid, scoring="balanced_accuracy", cv=LeaveOneOut()
        ).fit(X, y)
    predictions = ours.loo_predictions_[0]
    assert ours.best_score_ == balanced_accuracy_score(y, predictions)
    assert ref.best_score_ == accuracy_score(y, predictions)
    assert ours.best_score_ != ref.best_score_


def test_one_metric_other_than_accuracy_has_no_split_keys():
    X, y = _small()
    search = LOOSearchCV(InhibitorySVC(), GRID, scoring="f1_macro").fit(X, y)
    results = search.cv_results_
    assert not search.multimetric_ and "split0_test_score" not in results
    assert np.isnan(results["std_test_score"]).all()
    expected = [f1_score(y, p, average="macro") for p in search.loo_predictions_]
    np.testing.assert_array_equal(results["mean_test_score"], expected)
    assert search.best_score_ == max(expected)
    assert search.score(X, y) == f1_score(y, search.predict(X), average="macro")


def test_accuracy_keeps_the_folds_zero_one_scores():
    X, y = _small()
    search = LOOSearchCV(InhibitorySVC(), GRID, scoring=make_scorer(accuracy_score)).fit(X, y)
    results = search.cv_results_
    folds = np.column_stack([results[f"split{k}_test_score"] for k in range(y.shape[0])])
    np.testing.assert_array_equal(folds, search.loo_predictions_ == y)
    np.testing.assert_array_equal(results["mean_test_score"], folds.mean(axis=1))


def test_several_metrics_with_refit_naming_one():
    X, y = _small(seed=1)
    search = LOOSearchCV(
        InhibitorySVC(), GRID, scoring=["accuracy", "f1_macro"], refit="f1_macro"
    ).fit(X, y)
    results = search.cv_results_
    assert search.multimetric_ and set(search.scorer_) == {"accuracy", "f1_macro"}
    for key in ("mean_test_", "std_test_", "rank_test_"):
        assert f"{key}accuracy" in results and f"{key}f1_macro" in results
    assert "split0_test_accuracy" in results and "split0_test_f1_macro" not in results
    assert "mean_test_score" not in results
    assert search.best_index_ == int(results["rank_test_f1_macro"].argmin())
    assert search.best_score_ == results["mean_test_f1_macro"][search.best_index_]
    assert search.score(X, y) == f1_score(y, search.predict(X), average="macro")
    none = LOOSearchCV(InhibitorySVC(), GRID, scoring=["accuracy", "f1_macro"], refit=False)
    none.fit(X, y)
    assert not hasattr(none, "best_index_") and not hasattr(none, "best_score_")


def test_refit_callable_picks_best_index_and_sets_no_best_score():
    """A callable refit chooses best_index_ from cv_results_, here the worst candidate."""
    X, y = _small(seed=2)
    grid = {"C": [0.001, 0.5, 5.0], "gamma": [2.0]}

    def worst(results) -> int:
        return int(np.argmin(results["mean_test_score"]))

    search = LOOSearchCV(InhibitorySVC(), grid, refit=worst).fit(X, y)
    means = search.cv_results_["mean_test_score"]
    assert means.min() < means.max()  # the choice is not the accuracy's best
    assert search.best_index_ == worst(search.cv_results_)
    assert search.best_params_ == search.cv_results_["params"][search.best_index_]
    assert not hasattr(search, "best_score_")
    assert search.best_estimator_.C == search.best_params_["C"]
    multi = LOOSearchCV(
        InhibitorySVC(), GRID, scoring=["accuracy", "balanced_accuracy"], refit=lambda r: 0
    ).fit(X, y)
    assert multi.best_index_ == 0 and multi.best_estimator_.C == 0.5
    with pytest.raises(TypeError, match="not an integer"):
        LOOSearchCV(InhibitorySVC(), GRID, refit=lambda r: 0.5).fit(X, y)
    with pytest.raises(IndexError, match="out of range"):
        LOOSearchCV(InhibitorySVC(), GRID, refit=lambda r: 7).fit(X, y)


def _no_work(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(isvm.search, "_loo_path", refuse)
    monkeypatch.setattr(isvm.search, "_refit_folds", refuse)


@pytest.mark.parametrize(
    "scoring, match",
    [
        ("roc_auc", r"'roc_auc'.* needs decision_function or predict_proba"),
        ("neg_log_loss", r"'neg_log_loss'.* needs predict_proba"),
        (["accuracy", "roc_auc_ovr"], r"scoring\['roc_auc_ovr'\] needs predict_proba"),
        ({"ll": make_scorer(log_loss, response_method="predict_proba")}, r"\['ll'\] needs"),
        (lambda est, X, y: 1.0, "not a scikit-learn scorer"),
        ("f1", r"scoring='f1' fails on these labels: .*average"),
        ("no_such_metric", "not a valid scoring value"),
        (["accuracy", "accuracy"], "twice"),
    ],
    ids=["roc_auc", "log_loss", "list", "dict", "callable", "binary_f1", "unknown", "twice"],
)
def test_bad_scoring_fails_before_any_work(monkeypatch, scoring, match):
    _no_work(monkeypatch)
    X, y = _small()
    with pytest.raises(ValueError, match=match):
        LOOSearchCV(InhibitorySVC(), GRID, scoring=scoring, refit=False).fit(X, y)


@pytest.mark.parametrize("refit", [True, "balanced", None])
def test_several_metrics_need_refit_to_name_one(monkeypatch, refit):
    _no_work(monkeypatch)
    X, y = _small()
    search = LOOSearchCV(InhibitorySVC(), GRID, scoring=["accuracy", "f1_macro"], refit=refit)
    with pytest.raises(ValueError, match="refit must name one of them"):
        search.fit(X, y)


def test_bad_targets_fail_in_one_line_before_any_work(monkeypatch):
    _no_work(monkeypatch)
    X, y = _small()
    search = LOOSearchCV(InhibitorySVC(), GRID)
    with pytest.raises(ValueError, match=r"classes 0, 1 have a single sample each") as caught:
        search.fit(X[:2], np.array([0, 1]))
    assert "\n" not in str(caught.value)
    y_one = y.copy()
    y_one[0] = 7
    with pytest.raises(ValueError, match=r"at least 2 samples of every class.*class 7 has"):
        search.fit(X, y_one)
    with pytest.raises(ValueError, match=r"classes 'a', 'b' have a single sample each"):
        search.fit(X, np.array(["a", "b", *["c"] * 11, *["d"] * 11]))
    continuous = np.random.default_rng(0).normal(size=y.shape[0])
    with pytest.raises(ValueError, match=r"looks continuous.*allow_continuous_target=True"):
        search.fit(X, continuous)
    with pytest.raises(ValueError, match="continuous"):  # insisting: sklearn refuses floats
        clone(search).set_params(allow_continuous_target=True).fit(X, continuous)


def test_continuous_target_rule():
    rng = np.random.default_rng(0)
    assert continuous_target(rng.normal(size=40)) is not None
    assert continuous_target(rng.normal(size=40).round(3).astype(str)) is not None
    assert continuous_target(np.arange(40) % 20 * 1.0) is None  # whole numbers
    assert continuous_target(np.repeat([0.5, 1.5, 2.5], 10)) is None  # few distinct values
    assert continuous_target(np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.1])) is not None  # > N/2
    assert continuous_target(np.repeat(np.arange(12) + 0.5, 2)) is not None  # > 10 distinct
    assert continuous_target(np.array(["a", "b"] * 20)) is None


def test_insisting_on_a_continuous_looking_target():
    """12 decimal labels of 2 samples each look continuous; as strings, with
    allow_continuous_target=True, they are classified."""
    X, _ = clustered(seed=3, n=24, n_classes=12, spread=0.05)
    labels = np.repeat(np.arange(12) + 0.5, 2).astype(str)
    X = X[np.argsort(np.arange(24) % 12, kind="stable")]
    with pytest.raises(ValueError, match="looks continuous"):
        LOOSearchCV(InhibitorySVC(), {"C": [1.0]}).fit(X, labels)
    search = LOOSearchCV(InhibitorySVC(), {"C": [1.0]}, allow_continuous_target=True)
    assert search.fit(X, labels).best_score_ >= 0


def test_constant_columns_warn_once_and_are_kept(recwarn):
    X, y = _small()
    X = np.column_stack([X[:, 0], np.full(y.shape[0], 3.0), X[:, 1:]])
    frame = pd.DataFrame(X, columns=["a", "flat", "b", "c", "d"])
    search = LOOSearchCV(InhibitorySVC(), GRID).fit(frame, y)
    messages = [str(w.message) for w in recwarn if "constant" in str(w.message)]
    assert len(messages) == 1
    assert "'flat' of 5 are kept" in messages[0] and "n_features = 5" in messages[0]
    assert search.best_estimator_.n_features_in_ == 5


def test_the_first_fit_announces_the_compile_once(monkeypatch, tmp_path, capsys):
    """With numba's cache cold (an empty folder), the first fit of a process says that it
    compiles the solvers, once; with a solver kernel cached it stays silent."""
    import isvm.estimators
    import isvm.warmup

    monkeypatch.setattr(isvm.warmup, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(isvm.warmup, "_announced", set())
    X, y = _small()
    InhibitorySVC().fit(X, y)
    OneVsAllSVC().fit(X, y)
    err = capsys.readouterr().err
    assert err.count(isvm.estimators.FIT_COMPILE_NOTE) == 1
    assert "python -m isvm warmup" in isvm.estimators.FIT_COMPILE_NOTE
    (tmp_path / "solvers_0").mkdir()
    (tmp_path / "solvers_0" / "epochs.block_epochs-293.py311.nbi").write_bytes(b"")
    monkeypatch.setattr(isvm.warmup, "_announced", set())
    InhibitorySVC().fit(X, y)
    assert isvm.estimators.FIT_COMPILE_NOTE not in capsys.readouterr().err


WEIGHTINGS = ["balanced", "dict", "sample_weight"]


def _weighting(kind: str, y):
    """(estimator params, fit params) of one kind of weighting."""
    if kind == "balanced":
        return {"class_weight": "balanced"}, {}
    if kind == "dict":
        return {"class_weight": {0: 0.5, 1: 1.0, 2: 3.0}}, {}
    gen = np.random.default_rng(3)
    return {}, {"sample_weight": gen.uniform(0.05, 10.0, y.shape[0])}  # wide: they must matter


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.parametrize("kind", WEIGHTINGS)
@pytest.mark.parametrize("scaling", ["zscore", "minmax"])
@pytest.mark.parametrize("estimator, route", ENGINE_CASES, ids=[route for _, route in ENGINE_CASES])
def test_weighted_metrics_are_those_of_weighted_refits(estimator, route, scaling, kind):
    """With class weights (each fold's fit computes "balanced" from its own labels) or
    sample weights (each fold's fit gets its points'), balanced accuracy and macro F1
    equal cross_val_predict's LOO predictions then the metric."""
    X, y = _wine(scaling)
    params, fit_params = _weighting(kind, y)
    estimator = clone(estimator).set_params(**params)
    scoring = {"balanced_accuracy": "balanced_accuracy", "f1": F1_MACRO}
    search = LOOSearchCV(estimator, WINE_GRID, scoring=scoring, refit="balanced_accuracy")
    results = search.fit(X, y, **fit_params).cv_results_
    assert set(results["loo_route"]) == {route}
    plain = LOOSearchCV(clone(estimator).set_params(class_weight=None), WINE_GRID).fit(X, y)
    assert not np.array_equal(plain.loo_predictions_, search.loo_predictions_)
    for k, grid_params in enumerate(results["params"]):
        ref = cross_val_predict(
            clone(estimator).set_params(**grid_params), X, y, cv=LeaveOneOut(), params=fit_params
        )
        ours = search.loo_predictions_[k]
        assert np.count_nonzero(ours != ref) <= results["n_uncertified"][k]
        assert results["mean_test_balanced_accuracy"][k] == balanced_accuracy_score(y, ours)
        assert results["mean_test_f1"][k] == f1_score(y, ours, average="macro")
    best = clone(estimator).set_params(**search.best_params_).fit(X, y, **fit_params)
    assert np.array_equal(best.dual_coef_, search.best_estimator_.dual_coef_)


def test_zero_sample_weights_are_served_by_refits():
    X, y = _wine("zscore")
    weights = np.ones(y.shape[0])
    weights[:3] = 0.0
    search = LOOSearchCV(InhibitorySVC(**TIGHT), GRID).fit(X, y, sample_weight=weights)
    assert set(search.cv_results_["loo_route"]) == {"refit"}
    ref = cross_val_predict(
        InhibitorySVC(**TIGHT, C=0.5, gamma=2.0),
        X,
        y,
        cv=LeaveOneOut(),
        params={"sample_weight": weights},
    )
    assert np.array_equal(search.loo_predictions_[0], ref)


def test_sample_weight_for_an_estimator_without_it_is_refused():
    from sklearn.neighbors import KNeighborsClassifier

    X, y = _small()
    with pytest.raises(ValueError, match="takes no sample_weight"):
        LOOSearchCV(KNeighborsClassifier(), {"n_neighbors": [1]}).fit(
            X, y, sample_weight=np.ones(y.shape[0])
        )
