"""Crammer-Singer: the solver and CrammerSingerSVC against independent references.

- An independent QP of the dual (LIBLINEAR's form, formed densely here from K and
  the labels, with the per-point equality constraints) solved by clarabel through
  qpsolvers: objective, KKT residual, class scores, predictions, strong duality.
- scikit-learn's LinearSVC(multi_class="crammer_singer", fit_intercept=False) on a
  linear kernel: same primal objective and predictions.
- Warm starts, the iteration cap, seeds, errors and scikit-learn's checks.

K may be singular (a linear kernel of rank M < N), so alpha is not unique; W is
(the primal is strictly convex in W), so the tests compare objectives, scores and
predictions, never alpha itself.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from problems import random_points
from qpsolvers import Problem, solve_problem
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_estimators import expected_failures

from isvm import CrammerSingerSVC
from isvm.kernels import rbf_kernel
from isvm.solvers.crammer_singer import solve_crammer_singer

TOL = 1e-8
CS = (0.1, 1.0, 10.0, 50.0)


# ---------------------------------------------------------------- problems and references


def make_problem(seed: int, n_max: int = 40):
    """X in [0,1]^M with every class present, 40 fresh points, L = 2..5, C from CS."""
    rng = np.random.default_rng(seed)
    n_classes = 2 + seed % 4
    C = CS[seed % len(CS)]
    n = int(rng.integers(10, n_max + 1))
    m = int(rng.integers(2, 7))
    X, y, X_new = random_points(rng, n, n_classes, m, 40)
    return X, y, n_classes, C, X_new


def precomputed(A, B):
    """A non-RBF positive semidefinite kernel, (1 + <a, b>)^2 / 4, passed as precomputed."""
    return (1.0 + A @ B.T) ** 2 / 4.0


def dense_dual(K, y, n_classes: int, C: float):
    """``min 1/2 a'Pa + q'a, E a = 0, a <= ub`` with a = alpha.ravel() (point-major)."""
    n = len(y)
    P = np.kron(K, np.eye(n_classes))
    q = np.ones((n, n_classes))
    q[np.arange(n), y] = 0.0
    E = np.kron(np.eye(n), np.ones((1, n_classes)))
    ub = np.zeros((n, n_classes))
    ub[np.arange(n), y] = C
    return 0.5 * (P + P.T), q.ravel(), E, ub.ravel()


def qp_alpha(K, y, n_classes: int, C: float):
    """The dual's minimiser by clarabel at 1e-12 tolerances, as an (N, L) matrix."""
    P, q, E, ub = dense_dual(K, y, n_classes, C)
    n = len(y)
    problem = Problem(
        sp.csc_matrix(P), q, A=sp.csc_matrix(E), b=np.zeros(n), lb=np.full(n * n_classes, -C), ub=ub
    )
    solution = solve_problem(
        problem, solver="clarabel", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    assert solution.found, "clarabel failed on the reference QP"
    return solution.x.reshape(n, n_classes)


def dual_min(K, y, n_classes, C, alpha) -> float:
    P, q, _, _ = dense_dual(K, y, n_classes, C)
    a = alpha.ravel()
    return float(0.5 * a @ P @ a + q @ a)


def primal(K, y, C, alpha) -> float:
    """1/2 ||W||^2 + C sum_i max_m (1 - [m = y_i] + f_m(x_i) - f_(y_i)(x_i)) at W(alpha)."""
    F = K @ alpha
    n = len(y)
    margin = 1.0 + F - F[np.arange(n), y][:, None]
    margin[np.arange(n), y] = 0.0
    return float(0.5 * np.sum(alpha * F) + C * margin.max(axis=1).sum())


def kkt_residual(K, y, C, alpha) -> float:
    """max_i [max_m G_im - min_(m: alpha_im < bound) G_im], G = K alpha + e (dense)."""
    n = len(y)
    G = K @ alpha + 1.0
    G[np.arange(n), y] -= 1.0
    ub = np.zeros_like(alpha)
    ub[np.arange(n), y] = C
    free = np.where(alpha < ub, G, np.inf)
    return float((G.max(axis=1) - free.min(axis=1)).max())


def assert_feasible(alpha, y, C):
    n = len(y)
    ub = np.zeros_like(alpha)
    ub[np.arange(n), y] = C
    assert np.all(alpha <= ub)
    np.testing.assert_allclose(alpha.sum(axis=1), 0.0, atol=1e-12 * max(C, 1.0))


def assert_same_scores(scores, ref, rtol: float = 1e-4, min_clear: float = 0.8):
    """Scores within rtol of the score scale; predictions equal away from near-ties.

    At least ``min_clear`` of the points must be clear of a near-tie (training points
    often sit at exact ties of the optimum, so the training check sets 0).
    """
    scale = max(np.abs(ref).max(), 1e-12)
    np.testing.assert_allclose(scores, ref, rtol=0, atol=rtol * scale)
    top2 = np.sort(ref, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 10 * rtol * scale
    assert clear.sum() >= min_clear * len(clear), "too many near-ties to compare predictions"
    np.testing.assert_array_equal(scores[clear].argmax(axis=1), ref[clear].argmax(axis=1))


@functools.cache
def reference(seed: int, kind: str):
    X, y, n_classes, C, X_new = make_problem(seed)
    if kind == "rbf":
        K, K_new = rbf_kernel(X, gamma=5.0), rbf_kernel(X_new, X, gamma=5.0)
    else:
        K, K_new = precomputed(X, X), precomputed(X_new, X)
    alpha = qp_alpha(K, y, n_classes, C)
    return dict(X=X, y=y, L=n_classes, C=C, X_new=X_new, K=K, K_new=K_new, alpha=alpha)


# ---------------------------------------------------------------- the QP comparison


@pytest.mark.parametrize("kind", ["rbf", "precomputed"])
@pytest.mark.parametrize("seed", range(12))
def test_matches_independent_qp(seed, kind):
    """Objective to 1e-6 relative, KKT <= tol, strong duality, same scores and predictions."""
    ref = reference(seed, kind)
    K, y, L, C = ref["K"], ref["y"], ref["L"], ref["C"]
    clf = CrammerSingerSVC(C=C, gamma=5.0, kernel=kind, tol=TOL, max_iter=10**6, random_state=0)
    if kind == "rbf":
        clf.fit(ref["X"], y)
        scores = clf.class_scores(ref["X_new"])
    else:
        clf.fit(K, y)
        scores = clf.class_scores(ref["K_new"])
    alpha = clf.alpha_
    assert clf.converged_
    assert_feasible(alpha, y, C)
    qp_obj = -dual_min(K, y, L, C, ref["alpha"])
    assert abs(clf.objective_ - qp_obj) <= 1e-6 * abs(qp_obj)
    # the solver's bookkeeping agrees with a from-scratch dense evaluation
    assert clf.objective_ == pytest.approx(-dual_min(K, y, L, C, alpha), rel=1e-10)
    assert clf.kkt_violation_ <= TOL
    assert kkt_residual(K, y, C, alpha) <= TOL * (1 + 1e-3) + 1e-12
    # strong duality: the primal at W(alpha) equals the dual optimum
    p = primal(K, y, C, alpha)
    assert abs(p - qp_obj) <= 1e-6 * abs(qp_obj)
    assert clf.duality_gap_ == pytest.approx(p - clf.objective_, rel=1e-6, abs=1e-9 * abs(p))
    # class scores: K_new @ alpha, summing to 0 over the classes (sum_m w_m = 0)
    np.testing.assert_allclose(scores.sum(axis=1), 0.0, atol=1e-10 * np.abs(scores).max())
    assert_same_scores(scores, ref["K_new"] @ ref["alpha"])
    train = clf.class_scores(ref["X"] if kind == "rbf" else K)
    assert_same_scores(train, K @ ref["alpha"], min_clear=0.0)


# ---------------------------------------------------------------- against LIBLINEAR


def linear_primal(W, X, y, C) -> float:
    """LIBLINEAR's Crammer-Singer primal of W (L x M), computed from W directly."""
    F = X @ W.T
    n = len(y)
    margin = 1.0 + F - F[np.arange(n), y][:, None]
    margin[np.arange(n), y] = 0.0
    return float(0.5 * np.sum(W * W) + C * margin.max(axis=1).sum())


@pytest.mark.parametrize("n_classes", [2, 3, 4, 5])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_linear_kernel_matches_liblinear(n_classes, C):
    """Precomputed X X' against LinearSVC(multi_class="crammer_singer", fit_intercept=False)."""
    rng = np.random.default_rng(100 * n_classes + int(10 * C))
    n, m = 40, 5
    centres = rng.normal(size=(n_classes, m))
    y = np.arange(n) % n_classes
    X = centres[y] + 0.8 * rng.normal(size=(n, m))
    X_new = centres[rng.integers(0, n_classes, 60)] + 0.8 * rng.normal(size=(60, m))
    svc = LinearSVC(
        multi_class="crammer_singer",
        fit_intercept=False,
        C=C,
        tol=1e-8,
        max_iter=100_000,
        random_state=0,
    ).fit(X, y)
    W_ref = svc.coef_
    if n_classes == 2:  # sklearn keeps w_1 - w_0; Crammer-Singer has w_0 = -w_1
        W_ref = np.vstack([-W_ref / 2.0, W_ref / 2.0])
    clf = CrammerSingerSVC(C=C, kernel="precomputed", tol=TOL, max_iter=10**6).fit(X @ X.T, y)
    W = clf.alpha_.T @ X
    p_ref = linear_primal(W_ref, X, y, C)
    p = linear_primal(W, X, y, C)
    assert abs(p - p_ref) <= 1e-6 * p_ref
    assert p == pytest.approx(clf.objective_, rel=1e-6)
    # W is unique (strictly convex primal): the same weights, scores and predictions
    # (training points can sit at exact ties of the optimum: compared away from them)
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-6 * np.abs(W_ref).max())
    assert_same_scores(clf.class_scores(X_new @ X.T), X_new @ W_ref.T, rtol=1e-6)
    assert_same_scores(clf.class_scores(X @ X.T), X @ W_ref.T, rtol=1e-6, min_clear=0.0)
    clear = np.sort(X_new @ W_ref.T, axis=1)
    clear = clear[:, -1] - clear[:, -2] > 1e-6 * np.abs(clear).max()
    np.testing.assert_array_equal(clf.predict(X_new @ X.T)[clear], svc.predict(X_new)[clear])


# ---------------------------------------------------------------- warm start, cap, seeds


def test_warm_start_reaches_the_cold_optimum():
    """From the optimum at 0.8 C (feasible) and at 1.25 C scaled by 0.8: the same optimum."""
    ref = reference(5, "rbf")
    K, y, L, C = ref["K"], ref["y"], ref["L"], ref["C"]
    cold = solve_crammer_singer(K, y, L, C, tol=TOL, max_iter=10**6)
    low = solve_crammer_singer(K, y, L, 0.8 * C, tol=TOL, max_iter=10**6).alpha
    high = solve_crammer_singer(K, y, L, 1.25 * C, tol=TOL, max_iter=10**6).alpha
    for start in (low, 0.8 * high):
        warm = solve_crammer_singer(K, y, L, C, tol=TOL, max_iter=10**6, alpha0=start)
        assert warm.converged
        assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
        assert_same_scores(ref["K_new"] @ warm.alpha, ref["K_new"] @ cold.alpha)
    # the optimum itself is a fixed point: one epoch, nothing to do
    again = solve_crammer_singer(K, y, L, C, tol=1e-6, alpha0=cold.alpha)
    assert again.converged and again.iterations == 1
    with pytest.raises(ValueError, match="not feasible"):
        solve_crammer_singer(K, y, L, C, alpha0=high)
    with pytest.raises(ValueError, match="not feasible"):
        solve_crammer_singer(K, y, L, C, alpha0=np.ones((len(y), L)) * 1e-3)
    with pytest.raises(ValueError, match="alpha0 must have shape"):
        solve_crammer_singer(K, y, L, C, alpha0=np.zeros((len(y), L + 1)))


def test_iteration_cap_is_reported():
    ref = reference(3, "rbf")
    K, y, L, C = ref["K"], ref["y"], ref["L"], ref["C"]
    res = solve_crammer_singer(K, y, L, C, tol=TOL, max_iter=2)
    assert not res.converged
    assert res.iterations == 2
    assert res.kkt_violation > TOL
    assert res.kkt_violation == pytest.approx(kkt_residual(K, y, C, res.alpha), rel=1e-8)
    assert res.duality_gap > 0.0
    clf = CrammerSingerSVC(C=C, tol=TOL, max_iter=1)
    with pytest.warns(ConvergenceWarning, match="iteration cap"):
        clf.fit(ref["X"], y)
    assert clf.converged_ is False
    assert clf.n_iter_ == 1
    assert clf.kkt_violation_ > clf.tol


def test_seed_and_shrinking():
    """Bitwise reproducible from the seed; other seeds and no shrinking: the same optimum."""
    ref = reference(7, "precomputed")
    K, y, L, C = ref["K"], ref["y"], ref["L"], ref["C"]
    first = solve_crammer_singer(K, y, L, C, tol=TOL, max_iter=10**6, seed=123)
    second = solve_crammer_singer(K, y, L, C, tol=TOL, max_iter=10**6, seed=123)
    assert np.array_equal(first.alpha, second.alpha)
    assert first.iterations == second.iterations
    for kw in ({"seed": 7}, {"shrinking": False}):
        other = solve_crammer_singer(K, y, L, C, tol=TOL, max_iter=10**6, **kw)
        assert other.converged
        assert other.objective == pytest.approx(first.objective, rel=1e-9)


def test_indefinite_kernel_vertex_steps():
    """K_ii = 0 (a distance matrix): concave sub-problems, solved at vertices, still descend."""
    ref = reference(6, "rbf")
    X, y, L, C = ref["X"], ref["y"], ref["L"], ref["C"]
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    res = solve_crammer_singer(D, y, L, C, max_iter=20)
    assert_feasible(res.alpha, y, C)
    assert np.abs(res.alpha).max() > 0.0
    # every step lowers f from f(0) = 0; the report is the dense value
    assert res.objective == pytest.approx(-dual_min(D, y, L, C, res.alpha), rel=1e-10)
    assert res.objective > 0.0


# ---------------------------------------------------------------- estimator API and errors


def test_estimator_attributes_and_shapes():
    X, y, _, _, X_new = make_problem(8)
    clf = CrammerSingerSVC(random_state=0).fit(X, y)
    assert clf.alpha_.shape == clf.dual_coef_.shape == (X.shape[0], 2)
    np.testing.assert_array_equal(clf.dual_coef_, clf.alpha_)
    assert clf.converged_ is True and clf.kkt_violation_ <= clf.tol
    assert clf.objective_ > 0.0 and clf.duality_gap_ >= 0.0
    np.testing.assert_allclose(
        clf.class_scores(X_new), rbf_kernel(X_new, X, gamma=5.0) @ clf.alpha_
    )
    d = clf.decision_function(X_new)
    assert d.shape == (X_new.shape[0],)
    np.testing.assert_array_equal(clf.predict(X_new), clf.classes_[(d > 0).astype(int)])
    labels = np.array(["cat", "dog"])
    named = CrammerSingerSVC(random_state=0).fit(X, labels[y])
    np.testing.assert_array_equal(named.predict(X_new), labels[clf.predict(X_new)])


@pytest.mark.parametrize("solver", ["cd", "smo", "sgd", "newton"])
def test_other_solvers_are_refused(solver):
    X, y, *_ = make_problem(9)
    with pytest.raises(
        ValueError, match=r"'solver' parameter of \w+ must be a str among \{'bcd'\}"
    ):
        CrammerSingerSVC(solver=solver).fit(X, y)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"C": 0.0}, r"'C' parameter of \w+ must be a float in the range \(0"),
        ({"C": "1"}, r"'C' parameter of \w+ must be a float in the range \(0"),
        ({"gamma": -1.0}, r"'gamma' parameter of \w+ must be a float in the range \(0"),
        ({"kernel": "cosine"}, r"'kernel' parameter of \w+ must be a str"),
        ({"tol": 0.0}, r"'tol' parameter of \w+ must be a float"),
        ({"max_iter": 0}, r"'max_iter' parameter of \w+ must be an int in the range \[1, inf\)"),
    ],
)
def test_bad_parameters(params, match):
    X, y, *_ = make_problem(9)
    with pytest.raises(ValueError, match=match):
        CrammerSingerSVC(**params).fit(X, y)


def test_bad_input():
    X, y, _, _, X_new = make_problem(10)
    with pytest.raises(ValueError, match="at least 2 classes"):
        CrammerSingerSVC().fit(X, np.zeros(len(y)))
    X_bad = X.copy()
    X_bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CrammerSingerSVC().fit(X_bad, y)
    K = rbf_kernel(X)
    with pytest.raises(ValueError, match="must be square"):
        CrammerSingerSVC(kernel="precomputed").fit(K[:, :-1], y)
    clf = CrammerSingerSVC(kernel="precomputed").fit(K, y)
    with pytest.raises(ValueError, match="one column per training sample|expecting"):
        clf.predict(rbf_kernel(X_new, X[:-1]))
    L = int(y.max()) + 1
    with pytest.raises(ValueError, match="labels must lie in"):
        solve_crammer_singer(K, y, L - 1, 1.0)
    with pytest.raises(ValueError, match="square"):
        solve_crammer_singer(K[:, :-1], y, L, 1.0)
    K_bad = K.copy()
    K_bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        solve_crammer_singer(K_bad, y, L, 1.0)
    with pytest.raises(ValueError, match="C must be"):
        solve_crammer_singer(K, y, L, -1.0)


# ---------------------------------------------------------------- scikit-learn's checks


@parametrize_with_checks(
    [CrammerSingerSVC(), CrammerSingerSVC(kernel="precomputed")],
    expected_failed_checks=expected_failures,
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sklearn_compatible(estimator, check):
    """Every check passes (array API skipped by scikit-learn without SCIPY_ARRAY_API).

    The pairwise checks pass a Euclidean distance matrix as the kernel (zero
    diagonal, indefinite): each point's sub-problem is then concave and is solved at
    the best vertex of its simplex; the solve may stop at its cap (warning silenced).
    """
    check(estimator)
