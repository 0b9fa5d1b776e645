"""The paper's proposed consistent ISVM ("eliminating the positive examples from the
primal", section 11) is Lee-Lin-Wahba: checked from its own primal, not assumed.

- the **primal** of the ISVM without its positive examples, written as the paper's
  ISVM primal with the j = y_i constraints removed (inhibited scores g = f - mean(f),
  no sum-to-zero constraint on the w_m), is solved by clarabel; the library's
  ``isvm_neg`` dual (built from the ISVM coding) must reach its optimum and give its
  scores, and Lee-Lin-Wahba's at the same C must give the same scores;
- the exact LOO engine gives ``isvm_neg`` the same predictions as ``llw``;
- Table 5's loss: its conditional risk at ``(L - 1) f`` is ``(L - 1)`` times
  Lee-Lin-Wahba's (margin 1/(L-1)) at ``f``, so both pick the same class: consistent.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from problems import clustered, random_points
from qpsolvers import Problem, solve_problem

from isvm.data import load_dataset
from isvm.experiment.consistency import inconsistency_rate
from isvm.experiment.consistency_losses import make_loss, minimise_fast
from isvm.kernels import rbf_kernel
from isvm.loo import loo_grid
from isvm.methods import class_scores, dual_coefficients, dual_matrix, get_formulation
from isvm.seeding import rng
from isvm.solvers import solve

CLARABEL = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)


def isvm_without_positives_primal(K, y, L: int, C: float):
    """min 1/2 sum_m b_m'K b_m + C sum_(j != y_i) xi_ij,  xi_ij >= 1 + (K (b_j - b_bar))_i,
    xi >= 0, by clarabel; returns (optimal value, inhibited class-score coefficients)."""
    n = len(y)
    var = [(i, j) for i in range(n) for j in range(L) if j != y[i]]
    nb, nx = n * L, len(var)
    M = np.eye(L) - np.ones((L, L)) / L  # g = M f: the inhibited scores
    P = np.zeros((nb + nx, nb + nx))
    P[:nb, :nb] = np.kron(np.eye(L), K)  # b stored class-major: b[m * n + i]
    q = np.concatenate([np.zeros(nb), np.full(nx, C)])
    G = np.zeros((2 * nx, nb + nx))
    h = np.zeros(2 * nx)
    for v, (i, j) in enumerate(var):
        for m in range(L):  # (K (M b)_j)_i - xi <= -1
            G[v, m * n : (m + 1) * n] = M[j, m] * K[i]
        G[v, nb + v] = -1.0
        h[v] = -1.0
        G[nx + v, nb + v] = -1.0
    problem = Problem(sp.csc_matrix(P), q, sp.csc_matrix(G), h)
    sol = solve_problem(problem, solver="clarabel", **CLARABEL)
    assert sol.found, "clarabel failed on the primal"
    x = sol.x
    beta = (np.kron(M, np.eye(n)) @ x[:nb]).reshape(L, n).T
    return float(0.5 * x @ P @ x + q @ x), beta


def scores(K_new, alpha, y, L: int, method: str):
    formulation = get_formulation(method)
    coding = formulation.encode(np.asarray(y, dtype=np.int64), L)
    return class_scores(K_new @ dual_coefficients(alpha, coding, formulation), coding.mean_coef)


@pytest.mark.parametrize("seed", range(6))
def test_the_dual_is_lee_lin_wahbas(seed):
    gen = np.random.default_rng(seed)
    L = 2 + seed % 4
    X, y, _ = random_points(gen, 15, L, 3, 1)
    K = rbf_kernel(X, gamma=5.0)
    neg, llw = get_formulation("isvm_neg"), get_formulation("llw")
    a, b = neg.encode(y, L), llw.encode(y, L)
    np.testing.assert_array_equal(a.var_mask, b.var_mask)
    np.testing.assert_array_equal(dual_matrix(K, a), dual_matrix(K, b))
    # and it is the ISVM dual restricted to the negative variables
    isvm = get_formulation("isvm").encode(y, L)
    keep = a.var_mask.ravel()
    Q_isvm = dual_matrix(K, isvm)
    np.testing.assert_array_equal(dual_matrix(K, a)[np.ix_(keep, keep)], Q_isvm[np.ix_(keep, keep)])
    assert not a.var_mask[np.arange(len(y)), y].any()


@pytest.mark.parametrize("seed", range(6))
def test_matches_its_primal_and_lee_lin_wahba(seed):
    gen = np.random.default_rng(2000 + seed)
    L = 2 + seed % 4
    C = (0.1, 1.0, 10.0)[seed % 3]
    X, y, X_new = random_points(gen, int(gen.integers(12, 31)), L, 3, 30)
    K, K_new = rbf_kernel(X, gamma=5.0), rbf_kernel(X_new, X, gamma=5.0)
    value, beta = isvm_without_positives_primal(K, y, L, C)
    ref = K_new @ beta
    res = solve(K, y, L, "isvm_neg", C, solver="cd", tol=1e-8, max_iter=10**6)
    other = solve(K, y, L, "llw", C, solver="cd", tol=1e-8, max_iter=10**6)
    assert res.converged and other.converged
    assert res.objective == pytest.approx(value, rel=1e-6)  # strong duality
    assert other.objective == pytest.approx(value, rel=1e-6)
    ours = scores(K_new, res.alpha, y, L, "isvm_neg")
    theirs = scores(K_new, other.alpha, y, L, "llw")
    scale = np.abs(ref).max()
    np.testing.assert_allclose(ours, ref, atol=1e-4 * scale)
    np.testing.assert_allclose(theirs, ref, atol=1e-4 * scale)
    clear = np.ptp(np.sort(ref, axis=1)[:, -2:], axis=1) > 1e-3 * scale
    assert clear.mean() >= 0.8
    np.testing.assert_array_equal(ours[clear].argmax(1), theirs[clear].argmax(1))
    np.testing.assert_array_equal(ours[clear].argmax(1), ref[clear].argmax(1))


@pytest.mark.parametrize("case", ["random", "wine"])
def test_loo_predictions_equal_lee_lin_wahbas(case):
    if case == "random":
        X, y = clustered(3, 36, 4)
    else:
        data = load_dataset("wine", source="bundled")
        idx = rng(7, "test-loo", "wine").choice(data.y.shape[0], 40, replace=False)
        X, y = data.X[idx], data.y[idx]
    grid = ([5.0, 10.0], [0.1, 1.1, 10.1, 40.1])
    frame, pred = loo_grid(X, y, "isvm_neg", *grid, return_predictions=True)
    ref_frame, ref = loo_grid(X, y, "llw", *grid, return_predictions=True)
    np.testing.assert_array_equal(pred, ref)
    np.testing.assert_array_equal(frame["n_errors"], ref_frame["n_errors"])


@pytest.mark.parametrize("L", [3, 4, 5])
def test_table5_loss_is_lee_lin_wahba_rescaled(L):
    neg, llw = make_loss("isvm_neg", L), make_loss("llw", L)
    gen = np.random.default_rng(L)
    p = gen.dirichlet(np.ones(L), size=200)
    f = gen.normal(size=(200, L))
    f -= f.mean(axis=1, keepdims=True)
    for r in range(len(p)):  # R_neg((L-1) f) = (L-1) R_llw(f) on sum-zero f
        assert neg.risk(p[r], (L - 1) * f[r])[0] == pytest.approx((L - 1) * llw.risk(p[r], f[r])[0])
    v_neg, i_neg, _ = minimise_fast(neg, p)
    v_llw, _, _ = minimise_fast(llw, p)
    np.testing.assert_allclose(v_neg, (L - 1) * v_llw, rtol=1e-7)
    assert inconsistency_rate("isvm_neg", L, 2000, 2012).rate_pct == 0.0
    assert inconsistency_rate("isvm", L, 2000, 2012).rate_pct > 0.0 or L == 3
