"""The baselines of :mod:`isvm.baselines`: B-SVM against independent QPs, the kernel
perceptron, one-vs-one voting by hand, and scikit-learn's estimator checks.

The B-SVM references share nothing with the solver but the kernel: the dual
(eq. 3.14 without the bias's equality constraint) is solved over all 2N variables
``(alpha, beta)`` with the matrix built explicitly, and the primal (eq. 2.3, bias-free)
in representer form ``w = sum_i c_i phi(x_i)`` with explicit slacks; both by clarabel.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from problems import random_points
from qpsolvers import Problem, solve_problem
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from isvm import BandedSVC, KernelPerceptron, OneVsAllSVC, one_vs_one
from isvm.kernels import rbf_kernel

QP_TOL = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "max_iter": 500}


def make_data(n=40, n_classes=3, m=4, seed=0, n_new=60):
    """Points in [0,1]^m, every class present, plus fresh points."""
    return random_points(np.random.default_rng(seed), n, n_classes, m, n_new)


# ---------------------------------------------------------------- B-SVM references


def dual_qp(K, s, C, C_high, low, high):
    """max low 1'a - high 1'b - 1/2 (a-b)'Q(a-b), 0 <= a <= C, 0 <= b <= C_high (2N variables)."""
    n = len(s)
    Q = K * np.outer(s, s)
    H = np.block([[Q, -Q], [-Q, Q]])
    q = np.concatenate([-low * np.ones(n), high * np.ones(n)])
    ub = np.concatenate([np.full(n, C), np.full(n, C_high)])
    problem = Problem(sp.csc_matrix(0.5 * (H + H.T)), q, lb=np.zeros(2 * n), ub=ub)
    sol = solve_problem(problem, solver="clarabel", **QP_TOL)
    assert sol.found
    z = np.clip(sol.x, 0.0, ub)
    return z[:n], z[n:], H, -q


def primal_qp(K, s, C, C_high, low, high):
    """min 1/2 c'Kc + C 1'xi + C_high 1'eta, s_i (Kc)_i >= low - xi_i, <= high + eta_i."""
    n = len(s)
    P = sp.block_diag([sp.csc_matrix(K), sp.csc_matrix((2 * n, 2 * n))]).tocsc()
    q = np.concatenate([np.zeros(n), np.full(n, C), np.full(n, C_high)])
    SK = s[:, None] * K
    eye, zero = np.eye(n), np.zeros((n, n))
    G = np.block([[-SK, -eye, zero], [SK, zero, -eye], [zero, -eye, zero], [zero, zero, -eye]])
    h = np.concatenate([np.full(n, -low), np.full(n, high), np.zeros(2 * n)])
    problem = Problem(P, q, G=sp.csc_matrix(G), h=h)
    sol = solve_problem(problem, solver="clarabel", **QP_TOL)
    assert sol.found
    return sol.x[:n], float(sol.obj)


def projected_gradient(H, lin, z, ub):
    g = lin - H @ z
    p = np.where(z <= 0.0, np.maximum(g, 0.0), np.where(z >= ub, np.maximum(-g, 0.0), np.abs(g)))
    return float(np.where(ub > 0, p, 0.0).max())


# (C, C_high, band_low, band_high, gamma)
BSVM_CASES = [
    (1.0, 0.5, 1.0, 1.2, 10.0),
    (10.0, 2.0, 1.0, 1.5, 10.0),
    (50.0, 10.0, 1.0, 3.0, 20.0),
    (5.0, 5.0, 0.5, 0.5, 10.0),  # band_low == band_high: a point band
    (3.0, 1.0, 2.0, 2.5, 5.0),
    (20.0, 0.1, 1.0, 1.1, 20.0),
]


@pytest.mark.parametrize("seed", range(12))
def test_banded_svc_matches_qp(seed):
    """Dual objective, strong duality, KKT and decision values against clarabel."""
    C, C_high, low, high, gamma = BSVM_CASES[seed % len(BSVM_CASES)]
    rng = np.random.default_rng(100 + seed)
    n, m = int(rng.integers(12, 36)), int(rng.integers(2, 5))
    X = rng.random((n, m))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0.5).astype(int)
    y[:2] = [0, 1]
    X_new = rng.random((40, m))
    clf = BandedSVC(
        C=C, C_high=C_high, band_low=low, band_high=high, gamma=gamma, tol=1e-8, random_state=seed
    ).fit(X, y)
    assert clf.converged_ and clf.kkt_violation_ <= 1e-8
    assert np.all(clf.alpha_ * clf.beta_ == 0.0)
    K, s = rbf_kernel(X, gamma=gamma), np.where(y == 1, 1.0, -1.0)
    a, b, H, lin = dual_qp(K, s, C, C_high, low, high)
    z = np.concatenate([a, b])
    ref_obj = float(lin @ z - 0.5 * z @ H @ z)
    scale = max(1.0, abs(ref_obj))
    assert abs(clf.objective_ - ref_obj) <= 1e-7 * scale
    ub = np.concatenate([np.full(n, C), np.full(n, C_high)])
    ours = np.concatenate([clf.alpha_, clf.beta_])
    assert projected_gradient(H, lin, ours, ub) <= 1e-6
    assert float(lin @ ours - 0.5 * ours @ H @ ours) == pytest.approx(ref_obj, rel=1e-7, abs=1e-9)
    c, primal = primal_qp(K, s, C, C_high, low, high)
    assert abs(primal - ref_obj) <= 1e-6 * scale  # strong duality of the reconstruction
    assert abs(clf.primal_objective_ - primal) <= 1e-6 * scale
    assert abs(clf.duality_gap_) <= 1e-6 * scale
    K_new = rbf_kernel(X_new, X, gamma=gamma)
    f_ref = K_new @ ((a - b) * s)  # eq. 3.19 from the dual QP
    f_primal = K_new @ c  # the same function from the primal QP
    f_ours = clf.decision_function(X_new)
    f_scale = max(1.0, np.abs(f_ref).max())
    np.testing.assert_allclose(f_ours, f_ref, atol=1e-5 * f_scale)
    np.testing.assert_allclose(f_primal, f_ref, atol=1e-4 * f_scale)
    clear = np.abs(f_ref) > 1e-3 * f_scale
    np.testing.assert_array_equal(clf.predict(X_new)[clear], (f_ref[clear] > 0).astype(int))


def test_banded_svc_band_is_active():
    """With a narrow band some points get beta > 0 (the paper's beta-SVs) and the upper
    hinge is what limits y f: without it the same problem has larger decision values."""
    X, y, _ = make_data(n=40, n_classes=2, seed=3)
    y = (X[:, 0] > 0.5).astype(int)
    band = BandedSVC(C=50.0, C_high=10.0, band_high=1.2, gamma=20.0, tol=1e-8, random_state=0)
    plain = BandedSVC(C=50.0, C_high=0.0, gamma=20.0, tol=1e-8, random_state=0)
    band.fit(X, y)
    plain.fit(X, y)
    assert (band.beta_ > 0).sum() >= 3
    m_band = np.where(y == 1, 1, -1) * band.decision_function(X)
    m_plain = np.where(y == 1, 1, -1) * plain.decision_function(X)
    assert m_band.max() < m_plain.max()
    # KKT of the upper hinge: beta_i > 0 only where y_i f(x_i) >= band_high
    assert np.all(m_band[band.beta_ > 0] >= 1.2 - 1e-6)


def _hinge_qp(K, s, C):
    """Bias-free binary SVM dual, max 1'a - 1/2 a'(K * s s')a on [0, C], by clarabel."""
    n = len(s)
    Q = K * np.outer(s, s)
    problem = Problem(sp.csc_matrix(0.5 * (Q + Q.T)), -np.ones(n), lb=np.zeros(n), ub=np.full(n, C))
    sol = solve_problem(problem, solver="clarabel", **QP_TOL)
    assert sol.found
    return np.clip(sol.x, 0.0, C)


@pytest.mark.parametrize("C", [0.5, 5.0, 50.0])
@pytest.mark.parametrize("disable", [{"C_high": 0.0}, {"band_high": np.inf}])
def test_banded_svc_without_band_is_hinge_svm(C, disable):
    """C_high = 0 or band_high = inf: beta = 0 and alpha solves the plain bias-free SVM."""
    X, y, _ = make_data(n=30, n_classes=2, seed=int(C))
    clf = BandedSVC(C=C, gamma=10.0, tol=1e-9, random_state=0, **disable).fit(X, y)
    assert np.all(clf.beta_ == 0.0)
    s = np.where(y == 1, 1.0, -1.0)
    a = _hinge_qp(rbf_kernel(X, gamma=10.0), s, C)
    np.testing.assert_allclose(clf.alpha_, a, atol=1e-5 * C)
    # and the project's own binary 1-vs-all SVM (its decision is f_1 - f_0 = 2 f_1)
    ova = OneVsAllSVC(C=C, gamma=10.0, tol=1e-9, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.alpha_, ova.alpha_[:, 1], atol=1e-6 * C)


def test_banded_svc_precomputed_matches_rbf():
    X, y, X_new = make_data(n=30, n_classes=2, seed=4)
    rbf = BandedSVC(C=3.0, gamma=7.0, random_state=1).fit(X, y)
    pre = BandedSVC(C=3.0, kernel="precomputed", random_state=1).fit(rbf_kernel(X, gamma=7.0), y)
    np.testing.assert_array_equal(rbf.alpha_, pre.alpha_)
    np.testing.assert_allclose(
        rbf.decision_function(X_new), pre.decision_function(rbf_kernel(X_new, X, gamma=7.0))
    )


def test_banded_svc_reproducible_and_cap():
    X, y, _ = make_data(n=30, n_classes=2, seed=5)
    one = BandedSVC(C=10.0, gamma=1.0, random_state=3).fit(X, y)
    two = BandedSVC(C=10.0, gamma=1.0, random_state=3).fit(X, y)
    np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)
    with pytest.warns(ConvergenceWarning, match="max_iter=2 epochs"):
        capped = BandedSVC(C=10.0, gamma=1.0, tol=1e-12, max_iter=2, random_state=3).fit(X, y)
    assert capped.n_iter_ == 2 and not capped.converged_ and capped.kkt_violation_ > 1e-12


def test_banded_svc_one_vs_rest():
    """OneVsRestClassifier(BandedSVC): without the band it is the project's 1-vs-all SVM;
    with it, each column is the BandedSVC of 'class j vs the rest' and predict is the argmax."""
    X, y, X_new = make_data(n=45, n_classes=4, seed=6)
    ovr = OneVsRestClassifier(BandedSVC(C=5.0, C_high=0.0, gamma=10.0, tol=1e-9)).fit(X, y)
    ova = OneVsAllSVC(C=5.0, gamma=10.0, tol=1e-9).fit(X, y)
    np.testing.assert_allclose(ovr.decision_function(X_new), ova.class_scores(X_new), atol=1e-6)
    np.testing.assert_array_equal(ovr.predict(X_new), ova.predict(X_new))
    labels = np.array(["a", "b", "c", "d"])[y]
    params = dict(C=5.0, C_high=1.0, band_high=1.3, gamma=10.0, tol=1e-8, random_state=0)
    ovr = OneVsRestClassifier(BandedSVC(**params)).fit(X, labels)
    by_hand = np.column_stack(
        [BandedSVC(**params).fit(X, labels == c).decision_function(X_new) for c in "abcd"]
    )
    np.testing.assert_allclose(ovr.decision_function(X_new), by_hand, atol=1e-12)
    np.testing.assert_array_equal(
        ovr.predict(X_new), np.array(list("abcd"))[by_hand.argmax(axis=1)]
    )


def test_banded_svc_rejects_multiclass_and_bad_parameters():
    X, y, _ = make_data(n_classes=3, seed=7)
    with pytest.raises(ValueError, match="OneVsRestClassifier"):
        BandedSVC().fit(X, y)
    y2 = y % 2
    for params, match in [
        ({"C": 0.0}, r"'C' parameter of \w+ must be a float in the range \(0"),
        ({"C_high": -1.0}, r"'C_high' parameter of BandedSVC must be a float in the range \[0"),
        ({"band_low": 2.0, "band_high": 1.0}, "band_low <= band_high"),
        ({"band_low": 0.0}, r"'band_low' parameter of BandedSVC must be a float"),
        ({"tol": 0.0}, r"'tol' parameter of \w+ must be a float"),
        ({"max_iter": 0}, r"'max_iter' parameter of \w+ must be an int in the range \[1, inf\)"),
        ({"gamma": -1.0}, r"'gamma' parameter of \w+ must be a float in the range \(0"),
        ({"kernel": "cosine"}, r"'kernel' parameter of \w+ must be a str"),
    ]:
        with pytest.raises(ValueError, match=match):
            BandedSVC(**params).fit(X, y2)


# ---------------------------------------------------------------- kernel perceptron


@pytest.mark.parametrize("n_classes", [2, 3, 4])
def test_perceptron_separates_separable_data(n_classes):
    """Distinct points and a Gaussian kernel: any labelling is separable in feature space,
    so the perceptron stops with every training point correct, without a warning."""
    X, y, X_new = make_data(n=50, n_classes=n_classes, seed=10 + n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = KernelPerceptron(gamma=20.0, random_state=0).fit(X, y)
    assert clf.converged_ and clf.n_iter_ < clf.max_iter
    np.testing.assert_array_equal(clf.predict(X), y)
    scores = clf.class_scores(X)
    true = scores[np.arange(len(y)), y]
    scores[np.arange(len(y)), y] = -np.inf
    assert np.all(true > scores.max(axis=1))  # a strict margin at every training point
    A = clf.dual_coef_
    assert np.all(A == np.round(A)) and np.all(A.sum(axis=1) == 0.0)  # +1 / -1 updates
    assert np.abs(A).sum() == 2 * clf.n_updates_
    d = clf.decision_function(X_new)
    assert d.shape == ((X_new.shape[0],) if n_classes == 2 else (X_new.shape[0], n_classes))


def test_perceptron_warns_when_not_separable():
    """A point repeated with two labels cannot be separated: the cap is hit and reported."""
    X, y, _ = make_data(n=20, n_classes=3, seed=20)
    X = np.vstack([X, X[:1]])
    y = np.append(y, (y[0] + 1) % 3)
    with pytest.warns(ConvergenceWarning, match="not separated within max_iter=50"):
        clf = KernelPerceptron(gamma=20.0, max_iter=50, random_state=0).fit(X, y)
    assert not clf.converged_ and clf.n_iter_ == 50


def test_perceptron_reproducible_and_precomputed():
    X, y, X_new = make_data(n=40, n_classes=3, seed=21)
    one = KernelPerceptron(gamma=10.0, random_state=4).fit(X, y)
    two = KernelPerceptron(gamma=10.0, random_state=4).fit(X, y)
    np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)
    pre = KernelPerceptron(kernel="precomputed", random_state=4).fit(rbf_kernel(X, gamma=10.0), y)
    np.testing.assert_array_equal(one.dual_coef_, pre.dual_coef_)
    np.testing.assert_array_equal(one.predict(X_new), pre.predict(rbf_kernel(X_new, X, gamma=10.0)))


# ---------------------------------------------------------------- one-vs-one


def ovo_by_hand(make, X, y, X_new):
    """Votes of every pair (a < b) trained on its two classes; ties by summed confidence."""
    classes = np.unique(y)
    votes = np.zeros((len(X_new), len(classes)))
    conf = np.zeros_like(votes)
    for a, b in itertools.combinations(range(len(classes)), 2):
        keep = (y == classes[a]) | (y == classes[b])
        clf = make().fit(X[keep], (y[keep] == classes[b]).astype(int))
        pred = clf.predict(X_new)
        votes[pred == 0, a] += 1
        votes[pred == 1, b] += 1
        d = clf.decision_function(X_new)
        conf[:, a] -= d
        conf[:, b] += d
    pred = np.empty(len(X_new), dtype=int)
    ties = 0
    for r in range(len(X_new)):
        top = np.flatnonzero(votes[r] == votes[r].max())
        ties += len(top) > 1
        pred[r] = top[np.argmax(conf[r, top])]  # most votes, then largest summed confidence
    return classes[pred], ties


@pytest.mark.parametrize("n_classes", [3, 4])
def test_one_vs_one_voting_by_hand(n_classes):
    X, y, X_new = make_data(n=40, n_classes=n_classes, seed=30 + n_classes, n_new=300)

    def make():
        return OneVsAllSVC(C=10.0, gamma=20.0, tol=1e-8, random_state=0)

    ovo = one_vs_one(make()).fit(X, y)
    assert isinstance(ovo, OneVsOneClassifier)
    assert len(ovo.estimators_) == n_classes * (n_classes - 1) // 2
    expected, ties = ovo_by_hand(make, X, y, X_new)
    np.testing.assert_array_equal(ovo.predict(X_new), expected)
    assert ties > 0  # the tie rule was exercised


def test_one_vs_one_precomputed_and_banded():
    """OvO slices a precomputed kernel per pair; any binary estimator works (here B-SVM)."""
    X, y, X_new = make_data(n=36, n_classes=3, seed=40)
    # one visiting order for both; the kernels agree to rounding, so the decision values
    # agree to the solver's tolerance (1e-8 on the KKT violation), not to rounding
    rbf = one_vs_one(BandedSVC(C=5.0, gamma=10.0, tol=1e-8, random_state=0)).fit(X, y)
    pre = one_vs_one(BandedSVC(C=5.0, kernel="precomputed", tol=1e-8, random_state=0))
    pre.fit(rbf_kernel(X, gamma=10.0), y)
    np.testing.assert_array_equal(rbf.predict(X_new), pre.predict(rbf_kernel(X_new, X, gamma=10.0)))
    np.testing.assert_allclose(
        rbf.decision_function(X_new),
        pre.decision_function(rbf_kernel(X_new, X, gamma=10.0)),
        atol=1e-6,
    )


# ---------------------------------------------------------------- scikit-learn's checks


@parametrize_with_checks(
    [
        KernelPerceptron(),
        KernelPerceptron(kernel="precomputed"),
        BandedSVC(),
        BandedSVC(kernel="precomputed"),
    ]
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sklearn_compatible(estimator, check):
    """Every check passes (array API skipped by scikit-learn without SCIPY_ARRAY_API); the
    precomputed checks pass a distance matrix as the kernel, which may hit the caps."""
    check(estimator)
