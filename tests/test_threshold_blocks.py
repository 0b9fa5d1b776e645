"""The threshold passes of exact block steps (isvm.solvers.epochs.threshold_blocks), the
estimators' cd wherever a point's multipliers are coupled, against independent QPs.

test_solvers_qp.py checks ``solve`` (this solver, for ISVM and WW) against clarabel
on its reference problems; here every coupled formulation is checked on random
problems (objective, KKT residual, the unique primal scores and the predictions), and
the paths of its own: a variable list over some of the points (as a fold's), the
iteration cap, a zero row of K, and ``greedy=False``, which keeps the permuted epochs.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import coding_qp, rbf_problem

from isvm.methods import (
    FORMULATIONS,
    class_scores,
    coefficient_matrix,
    dual_matrix,
    get_formulation,
    separable_by_column,
)
from isvm.solvers import (
    SolverState,
    _core,
    problem_of,
    run_solver,
    solve,
    variable_list,
)
from isvm.solvers.epochs import block_epochs

TOL = 1e-7

#: the formulations whose cd is threshold_blocks: coupled multipliers per point
COUPLED = sorted(
    name
    for name, coding in ((n, f.encode(np.arange(6) % 3, 3)) for n, f in FORMULATIONS.items())
    if coding.block_sigma != 0.0 and not separable_by_column(coding)
)


def objective(K, coding, alpha):
    a = alpha[coding.var_mask]
    Q = dual_matrix(K, coding)[np.ix_(coding.var_mask.ravel(), coding.var_mask.ravel())]
    return float(a.sum() - 0.5 * a @ Q @ a)


def scores(K, coding, alpha):
    """The class scores at the training points: the primal's, unique where alpha is not."""
    return class_scores(K @ coefficient_matrix(alpha, coding), coding.mean_coef)


def test_the_coupled_formulations_are_the_expected_ones():
    assert {"isvm", "isvm_neg", "llw", "ww", "ww_paper"} <= set(COUPLED)
    assert "ova" not in COUPLED


@pytest.mark.parametrize("method", COUPLED)
@pytest.mark.parametrize("seed", range(3))
def test_reaches_the_qp_optimum(method, seed):
    """Objective, KKT residual, exact scores, primal scores and predictions of the QP's
    optimum, at a small, a middle and a large C (mostly free multipliers)."""
    n_classes = 3 + seed % 2
    K, y = rbf_problem(seed, 60, n_classes, gamma=(5.0, 20.0, 2.0)[seed])
    C = (0.5, 5.0, 50.0)[seed]
    coding = get_formulation(method).encode(y, n_classes)
    state = SolverState.start(K, coding)
    var_i, var_j = variable_list(coding)
    epochs, converged, viol = run_solver(state, var_i, var_j, C, tol=TOL)
    assert converged and viol <= TOL and epochs >= 1
    ref, ref_obj = coding_qp(K, coding, C)
    assert objective(K, coding, state.alpha) == pytest.approx(ref_obj, rel=1e-7, abs=1e-7)
    np.testing.assert_allclose(state.S, (K @ coefficient_matrix(state.alpha, coding)).T, atol=1e-9)
    ours, theirs = scores(K, coding, state.alpha), scores(K, coding, ref)
    np.testing.assert_allclose(ours, theirs, atol=1e-4 * max(1.0, np.abs(theirs).max()))
    top = np.sort(theirs, axis=1)
    clear = top[:, -1] - top[:, -2] > 1e-3
    np.testing.assert_array_equal(ours.argmax(1)[clear], theirs.argmax(1)[clear])


@pytest.mark.parametrize("method", ["isvm", "ww"])
def test_over_some_points_keeps_the_others_and_every_score_exact(method):
    """A list without some points (a fold's): the listed variables reach their own QP's
    objective, the others keep their values, and S is exact at every point."""
    K, y = rbf_problem(21, 50, 3)
    C = 3.0
    coding = get_formulation(method).encode(y, 3)
    full = SolverState.start(K, coding)
    run_solver(full, *variable_list(coding), C, tol=TOL)
    out = np.array([3, 30])
    points = np.setdiff1d(np.arange(len(y)), out)
    start = np.where(np.isin(np.arange(len(y)), out)[:, None], 0.0, full.alpha)
    state = SolverState.start(K, coding, start)
    _, converged, _ = run_solver(state, *variable_list(coding, points), C, tol=TOL)
    assert converged
    assert np.all(state.alpha[out] == 0.0)
    _, ref_obj = coding_qp(K, coding, C, points)
    assert objective(K, coding, state.alpha) == pytest.approx(ref_obj, rel=1e-7, abs=1e-7)
    np.testing.assert_allclose(state.S, (K @ coefficient_matrix(state.alpha, coding)).T, atol=1e-9)


def test_the_cap_is_reported():
    """At a cap of one epoch's worth of block steps the solve says it did not converge
    and reports the cap."""
    K, y = rbf_problem(5, 80, 4, gamma=0.5)
    result = solve(K, y, 4, "isvm", 50.0, tol=1e-9, max_iter=1)
    assert not result.converged
    assert result.iterations == 1
    assert result.kkt_violation > 1e-9


@pytest.mark.parametrize("method", ["isvm", "ww"])
def test_a_zero_row_of_k_goes_to_its_bounds(method):
    """A precomputed linear kernel with a zero row (K_ii = 0): that point's gradients are
    constant, so its multipliers end at the bounds they point to, as the QP says."""
    gen = np.random.default_rng(3)
    X = gen.normal(size=(30, 3))
    X[4] = 0.0
    y = np.arange(30) % 3
    K = X @ X.T
    result = solve(K, y, 3, method, 1.0, tol=TOL)
    assert result.converged
    coding = get_formulation(method).encode(y, 3)
    ref, ref_obj = coding_qp(K, coding, 1.0)
    assert objective(K, coding, result.alpha) == pytest.approx(ref_obj, rel=1e-7, abs=1e-7)
    np.testing.assert_array_equal(
        result.alpha[4][coding.var_mask[4]], ref[4][coding.var_mask[4]].round()
    )


def test_greedy_false_is_the_permuted_epochs():
    """greedy=False (the LOO engine's full fits) runs block_epochs bit for bit; the
    default (the estimators') runs the threshold passes, to the same optimum."""
    K, y = rbf_problem(11, 50, 3)
    coding = get_formulation("isvm").encode(y, 3)
    var_i, var_j = variable_list(coding)
    cyclic = SolverState.start(K, coding)
    run_solver(cyclic, var_i, var_j, 2.0, tol=1e-6, seed=5, greedy=False)
    direct = SolverState.start(K, coding)
    blocks = _core.Blocks(
        np.unique(var_i), coding.var_mask, coding.block_w, float(coding.block_sigma)
    )
    block_epochs(
        problem_of(K, coding, var_i, var_j),
        blocks,
        2.0,
        direct.dual,
        1e-6,
        10_000,
        _core.rng_state(np.uint64(5)),
        _core.NO_TARGET,
        _core.FALSE,
    )
    np.testing.assert_array_equal(cyclic.alpha, direct.alpha)
    threshold = SolverState.start(K, coding)
    run_solver(threshold, var_i, var_j, 2.0, tol=1e-6, seed=5)
    assert not np.array_equal(threshold.alpha, cyclic.alpha)
    np.testing.assert_allclose(
        scores(K, coding, threshold.alpha), scores(K, coding, cyclic.alpha), atol=1e-4
    )
