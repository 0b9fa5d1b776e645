"""The class-by-class full fit of a separable dual (1-vs-all): :mod:`isvm.loo.separable`.

Checked against the dense finish of the whole problem and the independent QP: the same
optimum, free set, inverse and outside products (up to order), each class's inverse
updated along the C path, and LOO predictions equal to refits."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from problems import clustered
from test_active_set import assert_same_inverse_and_products
from test_loo import NEAR_TIE
from test_solvers_qp import make_problem, max_kkt, objective, qp_solve, reference_q, to_vector

from isvm.kernels import rbf_kernel
from isvm.loo import loo_grid, loo_refit
from isvm.loo.full_fit import exact_full_fit, q_block
from isvm.loo.separable import exact_separable_fit, separable_method, separable_parts
from isvm.loo.settings import DEFAULT_SETTINGS
from isvm.methods import FORMULATIONS, get_formulation
from isvm.solvers import SolverState, problem_of, run_solver, variable_list


def _ova(y, n_classes):
    coding = get_formulation("ova").encode(y, n_classes)
    var_i, var_j = variable_list(coding)
    return coding, var_i, var_j, separable_parts(coding)


@pytest.mark.parametrize("method", sorted(set(FORMULATIONS) - {"ova"}))
def test_only_one_vs_all_is_separable(method):
    """Every coupled formulation (a mean term, or a column shared by a point's
    variables) keeps the dense finish."""
    assert separable_parts(get_formulation(method).encode(np.arange(12) % 4, 4)) is None


def test_one_vs_all_parts_are_its_classes_binary_problems():
    y = np.arange(12) % 3
    coding, var_i, var_j, parts = _ova(y, 3)
    assert [part.column for part in parts] == [0, 1, 2]
    K = rbf_kernel(np.random.default_rng(0).random((12, 2)), gamma=1.0)
    prob = problem_of(K, coding, var_i, var_j)
    for part in parts:
        ids = part.var_ids
        assert np.array_equal(var_j[ids], np.full(12, part.column))
        sub = problem_of(K, part.coding, part.points, np.zeros(12, dtype=np.int64))
        # the class's block of Q is the binary problem's Q; other classes' blocks are 0
        np.testing.assert_allclose(
            q_block(prob, ids, ids), q_block(sub, np.arange(12), np.arange(12))
        )
        others = np.flatnonzero(var_j != part.column)
        assert not q_block(prob, ids, others).any()


@pytest.mark.parametrize("seed", range(8))
def test_separable_fit_reaches_the_qp_optimum(seed):
    X, y, n_classes, C, gamma, _ = make_problem(seed, 40)
    K = rbf_kernel(X, gamma=gamma)
    coding, var_i, var_j, parts = _ova(y, n_classes)
    state = SolverState.start(K, coding)
    run_solver(state, var_i, var_j, C, tol=1e-2)
    fit = exact_separable_fit(K, parts, var_i.shape[0], state.alpha, C, max_free=3000)
    assert fit is not None
    Q, var = reference_q(K, y, n_classes, "ova")
    a = to_vector(fit.alpha, var)
    best = objective(Q, qp_solve(Q, C))
    assert a.min() >= 0.0 and a.max() <= C
    assert objective(Q, a) >= best - 1e-9 * max(1.0, abs(best))
    assert max_kkt(Q, a, C) < 1e-7
    fresh = SolverState.start(K, coding, fit.alpha)
    np.testing.assert_allclose(fit.S, fresh.S, atol=1e-9)


@pytest.mark.parametrize("n_classes", [3, 10])
def test_separable_fit_along_the_c_path_equals_the_dense_finish(n_classes):
    """Optimum, free set, H^-1 (block diagonal), Q[out, F] and Q[out, F] H^-1 equal the
    dense finish's up to the order of F and of the outside rows, each class's inverse
    is updated from its own at the previous C, and the merged inverse inverts Q_FF."""
    X, y = clustered(5, 60 if n_classes < 10 else 50, n_classes)
    K = rbf_kernel(X, gamma=5.0)
    coding, var_i, var_j, parts = _ova(y, n_classes)
    prob = problem_of(K, coding, var_i, var_j)
    previous, used = None, []
    for C in np.round(np.arange(0.6, 12.0, 0.5), 9):
        state = SolverState.start(K, coding)
        run_solver(state, var_i, var_j, C, tol=0.1)
        fit = exact_separable_fit(
            K, parts, var_i.shape[0], state.alpha, C, max_free=3000, previous=previous
        )
        dense = exact_full_fit(K, coding, var_i, var_j, state.alpha, C)
        if previous is not None:
            # a class whose face was empty at the previous C has nothing to update
            used += [part.products_updated for part in fit.parts if part.free_vars.size]
        np.testing.assert_allclose(fit.alpha, dense.alpha, atol=1e-8 * C)
        np.testing.assert_array_equal(fit.status, dense.status)
        assert_same_inverse_and_products(fit, dense)
        H = q_block(prob, fit.free_vars, fit.free_vars)
        np.testing.assert_allclose(H @ fit.Hinv, np.eye(H.shape[0]), atol=1e-6)
        previous = fit
    assert sum(used) >= len(used) // 2 > 0, (
        f"the updates were used {sum(used)} of {len(used)} times"
    )


@pytest.mark.parametrize("scaling", ["zscore", "minmax"])
def test_loo_with_the_separable_finish_equals_refits(scaling, monkeypatch):
    """LOO predictions with the class-by-class finish (always, and switching with the
    dense one along the path by the free-set size) equal the dense finish's and those
    of refitting every fold, on overlapping classes in both scalings."""
    import isvm.loo.driver as driver

    X, y = clustered(3, 45, 5, spread=0.4)
    if scaling == "zscore":
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    gammas, Cs = [1.0, 5.0], [0.1, 0.6, 1.1, 5.1, 20.1]
    calls = {"separable": [], "dense": 0, "free": []}

    def separable(K, parts, n_var, alpha0, C, **kwargs):
        previous = kwargs["previous"]
        calls["separable"].append(previous is not None and previous.parts is not None)
        calls["free"].append(np.count_nonzero((alpha0 > 0.0) & (alpha0 < C)))
        return exact_separable_fit(K, parts, n_var, alpha0, C, **kwargs)

    def dense(*args, **kwargs):
        calls["dense"] += 1
        return exact_full_fit(*args, **kwargs)

    monkeypatch.setattr(driver, "exact_separable_fit", separable)
    monkeypatch.setattr(driver, "exact_full_fit", dense)
    runs = {}
    for name in ("dense", "separable", "switching"):
        if name == "dense":
            settings = replace(DEFAULT_SETTINGS, separable_finish=False)
        elif name == "separable":
            settings = replace(DEFAULT_SETTINGS, separable_min_free=0)
        else:  # the finish's free-set sizes straddle the threshold
            assert min(calls["free"]) < max(calls["free"])
            free = sorted(calls["free"])
            settings = replace(DEFAULT_SETTINGS, separable_min_free=free[len(free) // 2])
        calls.update(separable=[], dense=0, free=[])
        runs[name] = loo_grid(X, y, "ova", gammas, Cs, settings=settings, return_predictions=True)
        n_sep = len(calls["separable"])
        if name == "dense":
            assert n_sep == 0 and calls["dense"] > 0
        elif name == "separable":  # along the path each class's finish starts from its own
            assert calls["dense"] == 0 and any(calls["separable"])
        else:
            assert n_sep > 0 and calls["dense"] > 0, "the path should switch finishes"
    frame, pred = runs["separable"]
    for name in ("dense", "switching"):
        np.testing.assert_array_equal(runs[name][1], pred)
    _, ref, gap = loo_refit(X, y, "ova", gammas, Cs, tol=1e-9)
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()
    assert frame["converged"].all()


def test_separable_method_names_one_vs_all_alone():
    assert [m for m in sorted(FORMULATIONS) if separable_method(m)] == ["ova"]
