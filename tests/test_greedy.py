"""The class-by-class greedy cd of 1-vs-all (isvm.solvers.greedy) against independent QPs.

test_solvers_qp.py checks ``solve(..., "ova")`` (this solver) against clarabel on random
problems; here the paths it adds are checked: shrinking and its exact restore of the
scores, a variable list over some of the points (as a fold's), the per-class step cap,
a kernel with a zero diagonal entry, and the switch back to cyclic cd.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import coding_qp, rbf_problem

from isvm.methods import coefficient_matrix, get_formulation, separable_by_column
from isvm.solvers import SolverState, run_solver, solve, variable_list

TOL = 1e-7


def qp_alpha(K, y, n_classes, C, points=None):
    """The 1-vs-all QP optimum over the variables of ``points`` (all by default)."""
    return coding_qp(K, get_formulation("ova").encode(y, n_classes), C, points)[0]


def exact_scores(state: SolverState) -> np.ndarray:
    return (state.K @ coefficient_matrix(state.alpha, state.coding)).T


def test_only_1_vs_all_is_separable_by_column():
    y = np.arange(12) % 3
    separable = {
        name: separable_by_column(get_formulation(name).encode(y, 3))
        for name in ("ova", "isvm", "ww", "ww_paper", "llw", "isvm_neg", "scatter")
    }
    assert separable == {name: name == "ova" for name in separable}


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_greedy_reaches_the_qp_optimum_with_exact_scores(seed, shrinking):
    """Over more steps than one shrinking interval, with or without shrinking: the QP's
    optimum (alpha is unique for 1-vs-all) and S equal to K times the coefficients."""
    n_classes = 2 + seed % 3
    K, y = rbf_problem(seed, 150, n_classes, gamma=(5.0, 10.0)[seed % 2])
    C = (0.5, 5.0, 50.0)[seed % 3]
    coding = get_formulation("ova").encode(y, n_classes)
    state = SolverState.start(K, coding)
    var_i, var_j = variable_list(coding)
    epochs, converged, viol = run_solver(state, var_i, var_j, C, tol=TOL, shrinking=shrinking)
    assert converged and viol <= TOL
    assert epochs > 1  # some class took more steps than its variables: a shrinking pass
    np.testing.assert_allclose(state.alpha, qp_alpha(K, y, n_classes, C), atol=1e-4 * C)
    np.testing.assert_allclose(state.S, exact_scores(state), atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_greedy_over_some_points_keeps_every_points_scores_exact(seed):
    """A list without some points (a fold's): the listed variables reach their own QP's
    optimum, the others keep their warm values, and the scores stay exact at every point,
    the left-out ones included."""
    n_classes = 3
    K, y = rbf_problem(100 + seed, 80, n_classes)
    C = 2.0
    coding = get_formulation("ova").encode(y, n_classes)
    start = SolverState.start(K, coding)
    var_i, var_j = variable_list(coding)
    run_solver(start, var_i, var_j, C, tol=TOL)
    out = np.array([seed, 40 + seed])  # held out
    points = np.setdiff1d(np.arange(len(y)), out)
    sub_i, sub_j = variable_list(coding, points)
    state = SolverState.start(
        K, coding, np.where(np.isin(np.arange(len(y)), out)[:, None], 0, start.alpha)
    )
    _, converged, _ = run_solver(state, sub_i, sub_j, C, tol=TOL)
    assert converged
    np.testing.assert_allclose(state.alpha, qp_alpha(K, y, n_classes, C, points), atol=1e-4 * C)
    assert np.all(state.alpha[out] == 0.0)
    np.testing.assert_allclose(state.S, exact_scores(state), atol=1e-9)


def test_each_class_has_its_own_step_cap():
    """At a tiny cap every class still takes its steps (none is starved by a slow one),
    the solve says it did not converge, and the epochs it reports equal the cap."""
    K, y = rbf_problem(7, 60, 3, gamma=0.5)
    result = solve(K, y, 3, "ova", 10.0, tol=1e-9, max_iter=3)
    assert not result.converged
    assert result.iterations == 3
    assert np.all((result.alpha > 0).sum(axis=0) > 0)


def test_a_zero_diagonal_entry_goes_to_its_bound():
    """A precomputed linear kernel with a zero row (K_ii = 0): that variable's gradient
    is constant, so its optimum is a bound, as the QP says."""
    gen = np.random.default_rng(3)
    X = gen.normal(size=(30, 3))
    X[4] = 0.0
    y = np.arange(30) % 3
    K = X @ X.T
    result = solve(K, y, 3, "ova", 1.0, tol=TOL)
    assert result.converged
    np.testing.assert_allclose(result.alpha, qp_alpha(K, y, 3, 1.0), atol=1e-4)
    assert np.all(result.alpha[4] == 1.0)


def test_greedy_false_is_the_cyclic_solver():
    """greedy=False (the LOO engine's full fits) runs the permuted cd, bit for bit."""
    K, y = rbf_problem(11, 50, 3)
    results = [
        solve_state(K, y, greedy=False),
        solve_state(K, y, greedy=True, block=False),
    ]
    np.testing.assert_array_equal(results[0].alpha, results[1].alpha)
    greedy = solve_state(K, y)
    assert not np.array_equal(greedy.alpha, results[0].alpha)


def solve_state(K, y, **kwargs) -> SolverState:
    coding = get_formulation("ova").encode(y, 3)
    state = SolverState.start(K, coding)
    var_i, var_j = variable_list(coding)
    run_solver(state, var_i, var_j, 1.0, tol=1e-4, seed=5, **kwargs)
    return state
