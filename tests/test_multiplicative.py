"""The multiplicative solver ``mu`` (Cristianini, Campbell, Shawe-Taylor) against an independent QP.

The reference problems, dense Q (built entry by entry from the paper's formulas), the
clarabel optimum and the reference class scores are those of tests/test_solvers_qp.py.
``mu`` applies to every formulation (its rule needs no sign structure of Q), so each
formulation is checked; the objective must match to 1e-6 relative, the KKT residual
(re-evaluated on the independent Q) must be below tol, predictions must be identical
away from near-ties, the cap must be reported, and the dual objective must never
decrease (guaranteed by the backtracked step; see isvm.solvers.multiplicative).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_solvers_qp import (
    METHODS,
    TOL,
    assert_same_scores,
    library_scores,
    max_kkt,
    objective,
    reference,
    to_vector,
)

from isvm import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC
from isvm.methods import get_formulation
from isvm.solvers import SOLVERS, SolverState, problem_of, solve, variable_list
from isvm.solvers.multiplicative import WARM_FLOOR, mu_epochs

#: N up to 40; seeds 0..9 cover every (C, gamma) of COMBOS: C in {0.1, 1, 10, 50}
SEEDS = range(10)
N_MAX = 40
CAP = 10**6


def mu_solve(ref, method, **kw):
    kw.setdefault("tol", TOL)
    kw.setdefault("max_iter", CAP)
    return solve(ref["K"], ref["y"], ref["L"], method, ref["C"], solver="mu", **kw)


def traced(ref, method, cap):
    """Run the kernel directly with an objective trace: (result tuple, trace, alpha)."""
    coding = get_formulation(method).encode(np.asarray(ref["y"], dtype=np.int64), ref["L"])
    state = SolverState.start(ref["K"], coding)
    var_i, var_j = variable_list(coding)
    prob = problem_of(state.K, coding, var_i, var_j)
    trace = np.zeros(cap + 1)
    out = mu_epochs(prob, float(ref["C"]), state.dual, TOL, cap, WARM_FLOOR, trace)
    return out, trace[: out[4]], state.alpha


def test_registered():
    assert "mu" in SOLVERS


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", METHODS)
def test_matches_independent_qp(method, seed):
    """Objective within 1e-6 relative, KKT <= tol on the independent Q, same predictions."""
    ref = reference(method, seed, N_MAX)
    res = mu_solve(ref, method)
    assert res.solver == "mu"
    assert res.converged
    assert 0 < res.iterations < CAP
    assert res.kkt_violation <= TOL
    a = to_vector(res.alpha, ref["var"])
    assert np.all((a >= 0) & (a <= ref["C"]))
    assert np.abs(res.alpha).sum() == pytest.approx(np.abs(a).sum())  # 0 off the variables
    assert abs(res.objective - ref["obj"]) <= 1e-6 * abs(ref["obj"])
    assert res.objective == pytest.approx(objective(ref["Q"], a), rel=1e-9)
    assert max_kkt(ref["Q"], a, ref["C"]) <= TOL * (1 + 1e-3) + 1e-9
    assert res.duality_gap >= -1e-9 * abs(ref["obj"])
    scores = library_scores(ref["K_new"], res.alpha, ref["y"], ref["L"], method)
    assert_same_scores(scores, ref["scores"])


@pytest.mark.parametrize("method", METHODS)
def test_objective_never_decreases(method):
    """Every accepted step satisfies the relative-smoothness test, so W is monotone."""
    ref = reference(method, 1, N_MAX)
    (steps, converged, _, accepted, written), trace, _ = traced(ref, method, 50_000)
    assert converged
    assert written == accepted + 1 and accepted <= steps
    slack = 1e-12 * np.abs(trace).max()
    assert np.all(np.diff(trace) >= -slack)
    assert trace[-1] <= ref["obj"] * (1 + 1e-12)
    assert trace[-1] == pytest.approx(ref["obj"], rel=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_iteration_cap_is_reported(method):
    """A tiny cap: converged False, the cap as the count, the true violation."""
    ref = reference(method, 4, N_MAX)
    res = mu_solve(ref, method, max_iter=2)
    a = to_vector(res.alpha, ref["var"])
    assert not res.converged
    assert res.iterations == 2
    assert res.kkt_violation > TOL
    assert res.kkt_violation == pytest.approx(max_kkt(ref["Q"], a, ref["C"]), rel=1e-8)


def test_ill_conditioned_problem_honest_at_the_cap():
    """WW, C = 50, lambda_min(Q) ~ 4e-3: mu crawls (cd: ~1,200 epochs) and must say so."""
    ref = reference("ww", 15, N_MAX)
    res = mu_solve(ref, "ww", max_iter=20_000)
    a = to_vector(res.alpha, ref["var"])
    assert not res.converged
    assert res.iterations == 20_000
    assert res.kkt_violation == pytest.approx(max_kkt(ref["Q"], a, ref["C"]), rel=1e-8)
    assert abs(res.objective - ref["obj"]) <= 1e-5 * ref["obj"]


@pytest.mark.parametrize("method", METHODS)
def test_warm_start_reaches_the_cold_optimum(method):
    """From the optimum at a nearby C (below, and above: clipped), zeros raised to the floor."""
    ref = reference(method, 3, 25)
    C = ref["C"]
    for C_near in (0.8 * C, 1.25 * C):
        near = solve(ref["K"], ref["y"], ref["L"], method, C_near, solver="cd", tol=TOL)
        warm = mu_solve(ref, method, alpha0=near.alpha)
        assert warm.converged
        assert warm.objective == pytest.approx(ref["obj"], rel=1e-6)
        assert np.all(warm.alpha <= C)
        scores = library_scores(ref["K_new"], warm.alpha, ref["y"], ref["L"], method)
        assert_same_scores(scores, ref["scores"])


def test_deterministic():
    """No randomness: the seed changes nothing, bitwise."""
    ref = reference("isvm", 10, 20)
    first = mu_solve(ref, "isvm", seed=1)
    second = mu_solve(ref, "isvm", seed=2)
    assert np.array_equal(first.alpha, second.alpha)
    assert first.iterations == second.iterations


@pytest.mark.parametrize(
    "estimator",
    [
        InhibitorySVC(C=5.0, solver="mu", tol=1e-5),
        OneVsAllSVC(C=5.0, solver="mu", tol=1e-5),
        WestonWatkinsSVC(C=5.0, solver="mu", tol=1e-5),
        WestonWatkinsSVC(C=5.0, solver="mu", tol=1e-5, ww_kernel="paper"),
    ],
)
def test_estimators_accept_mu(estimator):
    """solver="mu" through the estimators: converged, the same predictions as cd."""
    gen = np.random.default_rng(0)
    X = gen.random((30, 3))
    y = gen.integers(0, 3, 30)
    X_new = gen.random((50, 3))
    estimator.fit(X, y)
    assert estimator.converged_
    cd = type(estimator)(**{**estimator.get_params(), "solver": "cd", "tol": 1e-8}).fit(X, y)
    assert estimator.objective_ == pytest.approx(cd.objective_, rel=1e-5)
    scores = estimator.class_scores(X_new)
    ref = cd.class_scores(X_new)
    assert_same_scores(scores, ref, rtol=1e-2)


def test_unknown_solver_is_a_clear_error():
    ref = reference("isvm", 0, 20)
    with pytest.raises(ValueError, match="unknown solver 'mux'.*'mu'"):
        solve(ref["K"], ref["y"], ref["L"], "isvm", 1.0, solver="mux")
    with pytest.raises(ValueError, match=r"'solver' parameter of \w+ must be a str among"):
        InhibitorySVC(solver="mux").fit(np.eye(3), [0, 1, 2])
