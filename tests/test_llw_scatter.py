"""Lee-Lin-Wahba and the Scatter SVM against independent QPs of their primals and duals.

Nothing here uses :mod:`isvm.methods` to build a reference:

- the **primal** of each method is solved by clarabel (qpsolvers) in its kernel
  representation ``w_m = sum_i beta_im phi(x_i)`` (representer theorem), with the
  sum-to-zero constraint of Lee-Lin-Wahba as an explicit equality and the Scatter
  SVM's mean hypothesis ``w_bar = mean_m w_m`` written out as in Jenssen et al. (2012),
  eq. 13 (margin fixed to 1). Strong duality: the primal optimum equals the dual
  optimum, so the library's dual objective is checked against it, and the class
  scores at fresh points against the primal's (w is unique);
- the **dual** is formed densely, entry by entry, from the formulas derived in
  docs/methods.md, to re-evaluate the library's objective and KKT violation;
- the published parametrisations are checked too: LLW with margin 1/(L-1) at
  C/(L-1) (scores divided by L-1), and the Scatter SVM's own dual, eq. 15
  (``0 <= a <= mu``, ``sum a = L``), at ``mu = C L / sum(alpha)``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from problems import clustered, random_points
from qpsolvers import Problem, solve_problem
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_estimators import expected_failures

from isvm import LeeLinWahbaSVC, ScatterSVC
from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.loo import loo_grid, loo_refit
from isvm.methods import class_scores, dual_coefficients, get_formulation
from isvm.seeding import rng
from isvm.solvers import solve

METHODS = ("llw", "scatter")
SOLVERS = ("cd", "smo", "sgd")
SEEDS = range(8)
CS = (0.1, 1.0, 10.0, 50.0)
TOL = 1e-6
NEAR_TIE = 1e-6
CLARABEL = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)


def make_problem(seed: int):
    """L = 2..5, N <= 40 with every class present, gamma 5 or 10, and 40 fresh points."""
    gen = np.random.default_rng(1000 + seed)
    n_classes = 2 + seed % 4
    C = CS[seed % len(CS)]
    gamma = (5.0, 10.0)[seed % 2]
    n = int(gen.integers(12, 41))
    m = int(gen.integers(2, 6))
    X, y, X_new = random_points(gen, n, n_classes, m, 40)
    return X, y, n_classes, C, gamma, X_new


def variables(y, n_classes: int, method: str) -> list[tuple[int, int]]:
    if method == "llw":
        return [(i, j) for i in range(len(y)) for j in range(n_classes) if j != y[i]]
    return [(i, int(y[i])) for i in range(len(y))]


def dense_dual(K, y, n_classes: int, method: str):
    """The derived dual matrix, entry by entry (docs/methods.md)."""
    var = variables(y, n_classes, method)
    Q = np.empty((len(var), len(var)))
    for a, (i, j) in enumerate(var):
        for b, (i2, j2) in enumerate(var):
            # LLW: <-e_j, M (-e_j')>; Scatter: <e_(y_i), M e_(y_i')>; M = I - 11'/L
            Q[a, b] = K[i, i2] * (float(j == j2) - 1.0 / n_classes)
    return Q, var


def primal_qp(K, y, n_classes: int, method: str, C: float, margin: float = 1.0):
    """The primal by clarabel; returns (optimal value, beta (N x L) of the class scores).

    LLW: min 1/2 sum_m b_m'K b_m + C sum xi_ij, xi_ij >= (K b_j)_i + margin (j != y_i),
    xi >= 0, sum_m b_m = 0 (sum_m w_m = 0 for the span of a positive definite K).
    Scatter (eq. 13, rho = 1, hinge): w_m = K-span of b_m, free; with d_m = b_m - mean(b),
    min 1/2 sum_m d_m'K d_m + C sum xi_i, xi_i >= 1 - (K d_(y_i))_i, xi >= 0.
    Class scores at x are k(x)' beta_m: beta = b (LLW) or d (Scatter).
    """
    n, L = len(y), n_classes
    var = variables(y, n_classes, method)
    nb, nx = n * L, len(var)
    Mc = np.eye(L) - np.ones((L, L)) / L if method == "scatter" else np.eye(L)
    P = np.zeros((nb + nx, nb + nx))
    P[:nb, :nb] = np.kron(Mc, K)  # b stored class-major: b[m * n + i]
    q = np.concatenate([np.zeros(nb), np.full(nx, C)])
    G = np.zeros((2 * nx, nb + nx))
    h = np.zeros(2 * nx)
    for v, (i, j) in enumerate(var):
        G[v, nb + v] = -1.0
        if method == "llw":  # (K b_j)_i - xi <= -margin
            G[v, j * n : (j + 1) * n] = K[i]
            h[v] = -margin
        else:  # -(K d_(y_i))_i - xi <= -1, d_m = sum_m' Mc[m, m'] b_m'
            for m2 in range(L):
                G[v, m2 * n : (m2 + 1) * n] = -Mc[j, m2] * K[i]
            h[v] = -1.0
        G[nx + v, nb + v] = -1.0
    A = b = None
    if method == "llw":
        A = np.hstack([np.kron(np.ones((1, L)), np.eye(n)), np.zeros((n, nx))])
        b = np.zeros(n)
    problem = Problem(
        sp.csc_matrix(0.5 * (P + P.T)),
        q,
        sp.csc_matrix(G),
        h,
        None if A is None else sp.csc_matrix(A),
        b,
    )
    sol = solve_problem(problem, solver="clarabel", **CLARABEL)
    assert sol.found, "clarabel failed on the primal"
    x = sol.x
    value = 0.5 * x @ P @ x + q @ x
    beta = (np.kron(Mc, np.eye(n)) @ x[:nb]).reshape(L, n).T
    return float(value), beta


def scatter_paper_dual(K, y, n_classes: int, mu: float):
    """Eq. 15 without bias: min 1/2 a' Kc a, 0 <= a <= mu, sum a = L; Kc as eq. 7."""
    n = len(y)
    same = y[:, None] == y[None, :]
    Kc = K * np.where(same, n_classes - 1.0, -1.0)
    problem = Problem(
        sp.csc_matrix(Kc),
        np.zeros(n),
        A=sp.csc_matrix(np.ones((1, n))),
        b=np.array([float(n_classes)]),
        lb=np.zeros(n),
        ub=np.full(n, mu),
    )
    sol = solve_problem(problem, solver="clarabel", **CLARABEL)
    assert sol.found, "clarabel failed on eq. 15"
    a = np.clip(sol.x, 0.0, mu)
    return a, Kc


def max_kkt(Q, a, C: float) -> float:
    g = 1.0 - Q @ a
    p = np.where(a <= 0.0, np.maximum(g, 0.0), np.where(a >= C, np.maximum(-g, 0.0), np.abs(g)))
    return float(p.max())


def library_scores(K_new, alpha, y, n_classes: int, method: str):
    formulation = get_formulation(method)
    coding = formulation.encode(np.asarray(y, dtype=np.int64), n_classes)
    return class_scores(K_new @ dual_coefficients(alpha, coding, formulation), coding.mean_coef)


def assert_same_scores(scores, ref, rtol: float = 1e-4):
    scale = max(np.abs(ref).max(), 1e-12)
    np.testing.assert_allclose(scores, ref, rtol=0, atol=rtol * scale)
    top2 = np.sort(ref, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 1e-4 * scale
    assert clear.sum() >= 0.8 * len(clear), "too many near-ties to compare predictions"
    np.testing.assert_array_equal(scores[clear].argmax(axis=1), ref[clear].argmax(axis=1))


@functools.cache
def reference(method: str, seed: int):
    X, y, L, C, gamma, X_new = make_problem(seed)
    K = rbf_kernel(X, gamma=gamma)
    K_new = rbf_kernel(X_new, X, gamma=gamma)
    value, beta = primal_qp(K, y, L, method, C)
    Q, var = dense_dual(K, y, L, method)
    return dict(K=K, K_new=K_new, y=y, L=L, C=C, value=value, scores=K_new @ beta, Q=Q, var=var)


def lib_solve(ref, method: str, solver: str, **kw):
    n_var = len(ref["var"])
    if solver == "cd":
        kw.setdefault("max_iter", 10**6)
    else:
        kw.setdefault("max_iter", 100_000 * n_var)
        kw.setdefault("criterion", "max")
    return solve(ref["K"], ref["y"], ref["L"], method, ref["C"], solver=solver, tol=TOL, **kw)


#: largest relative |library dual objective - primal optimum| seen, for the report
WORST: dict[str, float] = {}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("method", METHODS)
def test_matches_independent_primal_qp(method, solver, seed):
    """Dual objective = primal optimum (1e-6 rel.), KKT <= tol on the dense dual, same scores."""
    ref = reference(method, seed)
    res = lib_solve(ref, method, solver)
    assert res.converged and res.kkt_violation <= TOL
    a = np.array([res.alpha[i, j] for i, j in ref["var"]])
    assert np.abs(res.alpha).sum() == pytest.approx(np.abs(a).sum())  # zeros off the variables
    assert np.all((a >= 0) & (a <= ref["C"]))
    rel = abs(res.objective - ref["value"]) / abs(ref["value"])
    WORST[f"{method}/{solver}"] = max(WORST.get(f"{method}/{solver}", 0.0), rel)
    print(f"{method} {solver} seed {seed}: |dual - primal| / primal = {rel:.2e}")
    assert rel <= 1e-6
    Q = ref["Q"]
    assert res.objective == pytest.approx(float(a.sum() - 0.5 * a @ Q @ a), rel=1e-9)
    assert max_kkt(Q, a, ref["C"]) <= TOL * (1 + 1e-3) + 1e-9
    assert_same_scores(
        library_scores(ref["K_new"], res.alpha, ref["y"], ref["L"], method), ref["scores"]
    )


@pytest.mark.parametrize("seed", range(4))
def test_llw_published_margin_is_the_same_classifier(seed):
    """Margin 1/(L-1) at C/(L-1): scores are the margin-1 scores divided by L-1."""
    ref = reference("llw", seed)
    L = ref["L"]
    res = lib_solve(ref, "llw", "cd")
    _, beta = primal_qp(ref["K"], ref["y"], L, "llw", ref["C"] / (L - 1), margin=1.0 / (L - 1))
    ours = library_scores(ref["K_new"], res.alpha, ref["y"], L, "llw")
    assert_same_scores(ours / (L - 1), ref["K_new"] @ beta)
    assert np.abs(ours.sum(axis=1)).max() <= 1e-10 * np.abs(ours).max()  # sum_m f_m = 0


@pytest.mark.parametrize("seed", range(6))
def test_scatter_is_the_papers_dual_at_mu(seed):
    """alpha at C gives a = L alpha / sum(alpha), optimal for eq. 15 at mu = C L / sum(alpha)."""
    ref = reference("scatter", seed)
    L, y = ref["L"], ref["y"]
    res = lib_solve(ref, "scatter", "cd")
    alpha = res.alpha[np.arange(len(y)), y]
    mu = ref["C"] * L / alpha.sum()
    a_ref, Kc = scatter_paper_dual(ref["K"], y, L, mu)
    a = L * alpha / alpha.sum()
    assert a.sum() == pytest.approx(L) and a.max() <= mu * (1 + 1e-12)
    best = 0.5 * a_ref @ Kc @ a_ref
    assert 0.5 * a @ Kc @ a == pytest.approx(best, rel=1e-6)
    # prototype scores m_c' psi(x) (eq. 18, no bias), mean-subtracted, both duals
    proto = np.zeros((len(y), L))
    proto[np.arange(len(y)), y] = a_ref
    paper = class_scores(ref["K_new"] @ proto, 1.0 / L)
    ours = library_scores(ref["K_new"], res.alpha, y, L, "scatter")
    assert_same_scores(ours * L / alpha.sum(), paper, rtol=1e-3)
    fitted = ScatterSVC(C=ref["C"], kernel="precomputed", tol=1e-8).fit(ref["K"], y)
    assert fitted.mu_ == pytest.approx(mu, rel=1e-4)


def test_two_classes_llw_equals_scatter():
    """For L = 2 both duals are K (I(y=y') - 1/2) over one variable per point."""
    X, y, _, _, gamma, X_new = make_problem(4)
    a = LeeLinWahbaSVC(C=3.0, gamma=gamma, tol=1e-9, random_state=0).fit(X, y)
    b = ScatterSVC(C=3.0, gamma=gamma, tol=1e-9, random_state=0).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(a.decision_function(X_new), b.decision_function(X_new), atol=1e-6)


@parametrize_with_checks(
    [LeeLinWahbaSVC(), ScatterSVC(), ScatterSVC(solver="sgd")],
    expected_failed_checks=expected_failures,
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---------------------------------------------------------------- exact LOO engine


def _loo_agrees(X, y, method, gammas, Cs, **kw):
    frame, pred = loo_grid(X, y, method, gammas, Cs, return_predictions=True, **kw)
    _, ref, gap = loo_refit(X, y, method, gammas, Cs, tol=1e-9)
    differ = pred != ref
    near_tie = differ & (gap < NEAR_TIE)
    print(
        f"{method}: {differ.sum()} of {differ.size} LOO predictions differ, {near_tie.sum()} "
        f"at near-ties; {frame['n_uncertified'].sum()} uncertified folds"
    )
    assert differ.sum() == near_tie.sum()
    assert frame["converged"].all()
    return frame


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(3))
def test_loo_matches_refitting_random(method, seed):
    n_classes = (3, 2, 5)[seed]
    X, y = clustered(seed, n=24 + 6 * seed, n_classes=n_classes)
    _loo_agrees(X, y, method, [5.0, 10.0], [0.1, 1.0, 7.5, 40.0])


@pytest.mark.parametrize("method", METHODS)
def test_loo_matches_refitting_wine(method):
    data = load_dataset("wine", source="bundled")
    idx = rng(7, "test-loo", "wine").choice(data.y.shape[0], 40, replace=False)
    _loo_agrees(data.X[idx], data.y[idx], method, [5.0], [0.6, 10.1, 49.6])


@pytest.mark.parametrize("method", METHODS)
def test_loo_cd_alone_certificates(method):
    """Without the active-set finish every fold is settled by cd and the duality-gap
    certificate (score_diff_norm = sqrt(2)); predictions still equal the refits'."""
    X, y = clustered(5, 30, 4)
    _loo_agrees(X, y, method, [5.0], [0.6, 10.1, 40.1], active_set=False)


@pytest.mark.parametrize("method", METHODS)
def test_loo_far_held_out_point(method):
    """A held-out point 100 units away (kernel 1e-39 to its only neighbour, of class 2):
    its prediction comes from the fold solution, equal to the refit's, no tie allowance."""
    gen = np.random.default_rng(0)
    X = np.concatenate([gen.normal(c, 0.5, (8, 2)) for c in ([0, 0], [2, 0], [0, 2])])
    X = np.vstack([X, [[100.0, 0.0], [106.0, 0.0]]])
    y = np.append(np.repeat([0, 1, 2], 8), [0, 2])
    Cs = [0.6, 10.1, 40.1]
    _, pred = loo_grid(X, y, method, [5.0], Cs, return_predictions=True)
    _, ref, gap = loo_refit(X, y, method, [5.0], Cs, tol=1e-9)
    assert (gap[:, -2:] > 0).all()
    np.testing.assert_array_equal(pred[:, -2:], ref[:, -2:])
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()
