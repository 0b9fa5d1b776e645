"""Weighted problems: a point's multipliers bounded by C times its weight.

The solvers take weights through :func:`isvm.solvers.weighted` (a scaled kernel and
per-point margins), so the reference here is the direct one: the box QP with
per-variable upper bounds ``C w_i``, built entry by entry from the paper's formulas
and solved by clarabel (:mod:`test_solvers_qp`). The LOO engine with weights is
checked against weighted refits, fold by fold.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from problems import random_points
from qpsolvers import Problem, solve_problem
from sklearn.utils.class_weight import compute_sample_weight
from test_solvers_qp import reference_q, reference_scores, to_matrix, to_vector

from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.loo import loo_grid, loo_refit
from isvm.methods import class_scores, dual_coefficients, get_formulation
from isvm.solvers import solve

METHODS = ("isvm", "ova", "ww", "ww_paper")
TOL = 1e-7


def weighted_problem(seed: int, n_max: int = 40):
    rng = np.random.default_rng(seed)
    n_classes = (2, 3, 4)[seed % 3]
    n = int(rng.integers(12, n_max + 1))
    X, y, X_new = random_points(rng, n, n_classes, int(rng.integers(2, 6)), 30)
    weights = rng.uniform(0.2, 3.0, n)
    C = (0.3, 2.0, 20.0)[seed % 3]
    gamma = (2.0, 5.0, 10.0)[(seed // 3) % 3]
    return X, y, n_classes, weights, C, gamma, X_new


def qp_weighted(Q, ub):
    """``argmax 1'a - 1/2 a'Qa`` on the box ``[0, ub]`` by clarabel."""
    n = Q.shape[0]
    problem = Problem(sp.csc_matrix(Q), -np.ones(n), lb=np.zeros(n), ub=ub)
    solution = solve_problem(
        problem, solver="clarabel", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    assert solution.found
    return np.clip(solution.x, 0.0, ub)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("solver", ["cd", "mu", "smo"])
@pytest.mark.parametrize("seed", range(6))
def test_weighted_solve_matches_the_qp_with_per_point_bounds(method, solver, seed):
    X, y, n_classes, weights, C, gamma, X_new = weighted_problem(seed, 25 if solver != "cd" else 40)
    K = rbf_kernel(X, X, gamma)
    Q, var = reference_q(K, y, n_classes, method)
    ub = np.array([C * weights[i] for i, _ in var])
    a_ref = qp_weighted(Q, ub)
    tol = TOL if solver == "cd" else 1e-5
    stop = {} if solver == "cd" else {"criterion": "max", "max_iter": 100_000 * len(var)}
    result = solve(
        K, y, n_classes, method, C, solver=solver, tol=tol, sample_weight=weights, **stop
    )
    a = to_vector(result.alpha, var)
    assert np.all(a >= 0.0) and np.all(a <= ub * (1 + 1e-12))
    ref_obj = float(a_ref.sum() - 0.5 * a_ref @ Q @ a_ref)
    obj = float(a.sum() - 0.5 * a @ Q @ a)
    assert obj == pytest.approx(ref_obj, rel=1e-5, abs=1e-6)
    assert result.objective == pytest.approx(obj, rel=1e-9, abs=1e-9)
    # KKT of the weighted problem, in its own variables
    g = 1.0 - Q @ a
    viol = np.where(a <= 0, np.maximum(g, 0), np.where(a >= ub, np.maximum(-g, 0), np.abs(g)))
    assert viol.max() <= 50 * tol * weights.max() / weights.min()
    K_new = rbf_kernel(X_new, X, gamma)
    ours = reference_scores(K_new, to_matrix(a, var, len(y), n_classes), y, n_classes, method)
    ref = reference_scores(K_new, to_matrix(a_ref, var, len(y), n_classes), y, n_classes, method)
    assert np.abs(ours - ref).max() <= 1e-3 * max(1.0, np.abs(ref).max())
    # the library's decision from the returned multipliers is the paper's
    formulation = get_formulation(method)
    coding = formulation.encode(y, n_classes)
    lib = class_scores(K_new @ dual_coefficients(result.alpha, coding, formulation), 0.0)
    agree = np.argmax(lib, axis=1) == np.argmax(ours, axis=1)
    assert agree.mean() >= 0.95


def test_unit_weights_give_the_unweighted_solution_bit_for_bit():
    X, y, n_classes, _, C, gamma, _ = weighted_problem(1)
    K = rbf_kernel(X, X, gamma)
    plain = solve(K, y, n_classes, "isvm", C, tol=1e-6)
    ones = solve(K, y, n_classes, "isvm", C, tol=1e-6, sample_weight=np.ones(len(y)))
    assert np.array_equal(plain.alpha, ones.alpha)
    assert plain.iterations == ones.iterations


@pytest.mark.parametrize("bad", [np.array([1.0, 0.0]), np.array([1.0, np.nan]), np.ones(3)])
def test_bad_weights_are_refused(bad):
    K = np.eye(2)
    with pytest.raises(ValueError, match="weights"):
        solve(K, np.array([0, 1]), 2, "isvm", 1.0, sample_weight=bad)


@pytest.mark.parametrize("method", ["isvm", "ova", "ww", "llw", "scatter"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("active_set", [True, False])
def test_weighted_engine_equals_weighted_refits(method, seed, active_set):
    X, y, n_classes, weights, _, _, _ = weighted_problem(100 + seed, 30)
    gammas, Cs = [2.0, 8.0], [0.2, 1.0, 4.0, 30.0]
    frame, pred = loo_grid(
        X,
        y,
        method,
        gammas,
        Cs,
        tol=1e-4,
        sample_weight=weights,
        active_set=active_set,
        return_predictions=True,
    )
    ref_frame, ref_pred, gap = loo_refit(X, y, method, gammas, Cs, tol=1e-10, sample_weight=weights)
    clear = gap > 1e-6  # a refit's own near-tie decides nothing
    assert np.array_equal(pred[clear], ref_pred[clear])
    assert frame["n_uncertified"].sum() <= 2


def test_weights_change_the_loo_predictions():
    """Not a no-op: heavy weights on one class move predictions towards it."""
    X, y, n_classes, _, _, _, _ = weighted_problem(7, 40)
    heavy = np.where(y == 0, 20.0, 0.05)
    _, plain = loo_grid(X, y, "isvm", [5.0], [5.0], return_predictions=True)
    _, tilted = loo_grid(X, y, "isvm", [5.0], [5.0], sample_weight=heavy, return_predictions=True)
    assert np.count_nonzero(tilted == 0) > np.count_nonzero(plain == 0)


def test_duplicates_with_different_weights_stay_exact():
    """Identical rows of different weights are distinct points of the scaled kernel."""
    X, y, n_classes, weights, _, _, _ = weighted_problem(11, 24)
    X = np.vstack([X, X[:4]])
    y = np.concatenate([y, y[:4]])
    weights = np.concatenate([weights, weights[:4] * 2.5])
    _, pred = loo_grid(
        X, y, "isvm", [5.0], [0.5, 5.0], sample_weight=weights, return_predictions=True
    )
    _, ref, gap = loo_refit(X, y, "isvm", [5.0], [0.5, 5.0], tol=1e-10, sample_weight=weights)
    clear = gap > 1e-6
    assert np.array_equal(pred[clear], ref[clear])


def test_refit_only_methods_refuse_weights():
    X, y, *_ = weighted_problem(0, 15)
    with pytest.raises(ValueError, match="only the exact engine"):
        loo_refit(X, y, "cs", [5.0], [1.0], sample_weight=np.ones(len(y)))


# ---------------------------------------------------------------- estimators

ESTIMATORS = [
    "InhibitorySVC",
    "OneVsAllSVC",
    "WestonWatkinsSVC",
    "LeeLinWahbaSVC",
    "ScatterSVC",
    "CrammerSingerSVC",
]


def _estimator(name: str, **params):
    import isvm

    return getattr(isvm, name)(tol=1e-9, random_state=0, gamma=5.0, C=2.0, **params)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_class_weight_is_its_sample_weights(name):

    X, y, *_ = weighted_problem(2, 40)
    for class_weight in ("balanced", {0: 3.0, 1: 0.5}):
        by_class = _estimator(name, class_weight=class_weight).fit(X, y)
        by_sample = _estimator(name).fit(X, y, sample_weight=compute_sample_weight(class_weight, y))
        assert np.array_equal(by_class.dual_coef_, by_sample.dual_coef_)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_weight_of_two_is_a_duplicate_and_zero_drops_the_point(name):
    X, y, _, _, _, _, X_new = weighted_problem(5, 30)
    weights = np.ones(len(y))
    weights[:3] = 2.0
    weights[3:6] = 0.0
    weighted_fit = _estimator(name).fit(X, y, sample_weight=weights)
    keep = np.concatenate([np.arange(6, len(y)), np.arange(3)])
    expanded = _estimator(name).fit(np.vstack([X[:3], X[keep]]), np.concatenate([y[:3], y[keep]]))
    a = weighted_fit.class_scores(X_new)
    b = expanded.class_scores(X_new)
    assert np.abs(a - b).max() <= 1e-5 * max(1.0, np.abs(b).max())
    assert np.all(weighted_fit.dual_coef_[3:6] == 0.0)


def test_class_weight_errors_name_the_problem():
    X, y, *_ = weighted_problem(2, 20)
    with pytest.raises(ValueError, match="class_weight names classes not in y"):
        _estimator("InhibitorySVC", class_weight={7: 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="every sample weight is zero"):
        _estimator("InhibitorySVC").fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="class_weight"):
        _estimator("InhibitorySVC", class_weight="uniform").fit(X, y)


@pytest.mark.parametrize("name", ["glass", "vehicle"])
@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_weighted_engine_equals_weighted_refits_on_real_sets(name, method):
    """Two of the paper's data sets (60 z-scored rows, the paper's gammas), weighted
    "balanced" by class: the engine's held-out predictions are the weighted refits'."""
    data = load_dataset(name, source="bundled", scaling="zscore")
    idx = np.random.default_rng(5).choice(data.y.shape[0], 60, replace=False)
    X, y = data.X[idx], data.y[idx]
    weights = compute_sample_weight("balanced", y)
    gammas, Cs = [5.0, 10.0], [0.6, 5.1, 30.1]
    frame, pred = loo_grid(X, y, method, gammas, Cs, sample_weight=weights, return_predictions=True)
    _, ref_pred, gap = loo_refit(X, y, method, gammas, Cs, tol=1e-10, sample_weight=weights)
    clear = gap > 1e-6
    assert clear.mean() > 0.95
    assert np.array_equal(pred[clear], ref_pred[clear])
    _, plain = loo_grid(X, y, method, gammas, Cs, return_predictions=True)
    assert not np.array_equal(plain, pred)  # the weights mattered
