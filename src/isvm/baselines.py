"""Baseline classifiers: one-vs-one voting, a kernel perceptron and the banded SVM (B-SVM).

- :func:`one_vs_one` wraps any binary classifier in scikit-learn's
  :class:`~sklearn.multiclass.OneVsOneClassifier` (pairwise voting, ties broken by the
  summed confidences); it is a convenience, not a reimplementation.
- :class:`KernelPerceptron` is the bias-free multiclass kernel perceptron: one weight
  vector per class, updated on mistakes only.
- :class:`BandedSVC` is a bias-free kernel version of Pendse's binary B-SVM, whose
  decision values are encouraged to lie in a band ``[band_low, band_high]``; use it
  for several classes through :class:`~sklearn.multiclass.OneVsRestClassifier`.

The kernels are those of :mod:`isvm.estimators`, from the same base class
(:mod:`isvm._kernel_estimator`): the paper's Gaussian kernel
``exp(-gamma ||x - x'||^2 / n_features)`` (``kernel="rbf"``; ours = SVC's gamma x
n_features), ``"linear"``, ``"poly"``, ``"sigmoid"``, a callable (:mod:`isvm.kernels`),
or a kernel matrix passed as X (``kernel="precomputed"``). The training loops are
compiled with numba and draw their visiting order from ``random_state`` through the
solvers' explicit generator, so a fit is reproducible from its seed. docs/methods.md
(section "Baselines") gives the formulations and the gaps in the B-SVM source.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsOneClassifier
from sklearn.utils._param_validation import Interval

from isvm._jit import njit
from isvm._kernel_estimator import POSITIVE, KernelClassifier
from isvm.solvers._core import projected_gradient, rng_state, shuffle_prefix

__all__ = ["BandedSVC", "KernelPerceptron", "one_vs_one"]


# ---------------------------------------------------------------- one-vs-one


def one_vs_one(estimator, *, n_jobs=None) -> OneVsOneClassifier:
    """One-vs-one over any binary classifier: ``OneVsOneClassifier(estimator)``.

    One copy of ``estimator`` is trained for each pair of classes ``a < b`` on the
    samples of those two classes only (``a`` is its class 0, ``b`` its class 1), and
    each casts one vote per sample, for the class its ``predict`` returns. The
    predicted class has the most votes. **Ties** are broken by the summed confidences:
    each pair adds its ``decision_function`` (or ``predict_proba``) value to ``b`` and
    subtracts it from ``a``; the sum ``s`` enters as ``votes + s / (3 (|s| + 1))``, a
    monotone map into (-1/3, 1/3) that orders tied classes without ever overturning a
    difference of one vote; an exact tie of both goes to the first class in
    ``classes_``. This is scikit-learn's rule (``sklearn.utils.multiclass.
    _ovr_decision_function``); ``decision_function`` returns those values.

    Works with the estimators of :mod:`isvm.estimators` and with :class:`BandedSVC`,
    including ``kernel="precomputed"`` (the pairwise tag makes scikit-learn slice the
    kernel's rows and columns to each pair).
    """
    return OneVsOneClassifier(estimator, n_jobs=n_jobs)


# ---------------------------------------------------------------- kernel perceptron


@njit(cache=True)
def _perceptron_epochs(K, y, n_classes, max_epochs, seed):
    """Multiclass kernel perceptron; returns (A, epochs, converged, updates).

    ``A[i, j]`` is the coefficient of ``K(x_i, .)`` in class j's weight vector;
    ``F[j, r] = sum_i A[i, j] K[i, r]`` holds the training scores and is updated in
    O(N) per mistake. A sample is a mistake unless its class's score strictly exceeds
    every other class's score; the update moves the true class towards it and the
    highest-scoring other class (the first one on a tie) away from it.
    """
    n = K.shape[0]
    A = np.zeros((n, n_classes))
    F = np.zeros((n_classes, n))
    order = np.arange(n)
    rng = rng_state(np.uint64(seed))
    updates = 0
    for epoch in range(max_epochs):
        shuffle_prefix(order, n, rng)
        mistakes = 0
        for t in range(n):
            i = order[t]
            yi = y[i]
            rival = -1
            best = 0.0
            for j in range(n_classes):
                if j != yi and (rival < 0 or F[j, i] > best):
                    rival = j
                    best = F[j, i]
            if F[yi, i] <= best:
                mistakes += 1
                A[i, yi] += 1.0
                A[i, rival] -= 1.0
                row_y = F[yi]
                row_r = F[rival]
                for r in range(n):
                    row_y[r] += K[i, r]
                    row_r[r] -= K[i, r]
        updates += mistakes
        if mistakes == 0:
            return A, epoch + 1, True, updates
    return A, max_epochs, False, updates


class KernelPerceptron(KernelClassifier):
    """Bias-free multiclass kernel perceptron (the lecture notes' perceptron rule, kernelised).

    One discriminant ``g_j(x) = <w_j, phi(x)> = sum_i A_ij K(x_i, x)`` per class; ``x``
    goes to the class with the largest ``g_j``. Training starts from ``w = 0`` and
    visits the samples in a fresh random order each epoch; a sample is a mistake
    unless ``g_(y_i)(x_i) > g_j(x_i)`` for every ``j != y_i`` (a tie is a mistake), and a
    mistake moves ``w_(y_i) += phi(x_i)`` and ``w_p -= phi(x_i)`` for the highest-scoring
    other class ``p`` (Kesler's multiclass form of ``a <- a + eta y``; with ``w = 0`` at
    the start, the learning rate ``eta`` only scales all scores, so it is 1). Training
    stops after the first epoch without a mistake, i.e. once the training set is
    separated with a strictly positive margin; for two classes this is the classical
    binary perceptron on ``g_1 - g_0``.

    Parameters
    ----------
    gamma : width of the kernel ``exp(-gamma ||x - x'||^2 / n_features)`` (per feature:
        ours = SVC's gamma x n_features; the same for "poly" and "sigmoid").
    kernel : "rbf", "linear", "poly", "sigmoid", a callable, or "precomputed" to pass
        kernel matrices as X (:mod:`isvm.kernels`); ``degree`` and ``coef0`` as in SVC.
    max_iter : cap on the epochs; if a mistake remains after it, the fit warns
        (ConvergenceWarning) and keeps the last weights (not separated within the cap).
    random_state : seed (or RandomState) for the visiting order.

    Attributes
    ----------
    classes_, dual_coef_ (n_samples, n_classes: the coefficients A), n_iter_ (epochs),
    n_updates_ (mistakes in all), converged_ (an epoch without mistakes was reached).
    """

    _parameter_constraints: dict = {
        **KernelClassifier._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self, gamma=5.0, kernel="rbf", max_iter=1000, random_state=None, degree=3, coef0=0.0
    ):
        self.gamma = gamma
        self.kernel = kernel
        self.max_iter = max_iter
        self.random_state = random_state
        self.degree = degree
        self.coef0 = coef0

    def fit(self, X: ArrayLike, y: ArrayLike) -> KernelPerceptron:
        """Train on X (n_samples, n_features), or a precomputed (n, n) kernel, and labels y."""
        self._validate_params()
        X, y_idx, K, seed = self._validate_fit(X, y)
        n_classes = self.classes_.shape[0]
        A, epochs, converged, updates = _perceptron_epochs(
            K, y_idx, n_classes, int(self.max_iter), seed
        )
        self.dual_coef_ = A
        self.n_iter_ = int(epochs)
        self.n_updates_ = int(updates)
        self.converged_ = bool(converged)
        if not converged:
            warnings.warn(
                f"KernelPerceptron: the training set was not separated within max_iter="
                f"{self.max_iter} epochs ({updates} updates); the last weights are kept",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def class_scores(self, X: ArrayLike) -> NDArray[np.float64]:
        """The discriminants ``g_j(x)``, shape (n_samples, n_classes)."""
        return self._test_kernel(X) @ self.dual_coef_


# ---------------------------------------------------------------- banded SVM


@njit(cache=True)
def _band_step(r, kii, C, C_high, low, high):
    """argmax over t in [-C_high, C] of ``phi(t) = low t+ - high t- - kii t^2 / 2 - r t``.

    ``t = alpha_i - beta_i``; ``phi`` is concave for ``low <= high`` (slopes ``high - r``
    left of 0, ``low - r`` right of it). For ``kii <= 0`` (an indefinite precomputed
    kernel) ``phi`` is convex on each side and the best of -C_high, 0, C is taken.
    """
    if kii > 0.0:
        if low - r > 0.0:
            return min(C, (low - r) / kii)
        if high - r < 0.0:
            return max(-C_high, (high - r) / kii)
        return 0.0
    best_t = 0.0
    best = 0.0
    v = low * C - 0.5 * kii * C * C - r * C
    if v > best:
        best_t = C
        best = v
    if C_high > 0.0:
        t = -C_high
        v = high * t - 0.5 * kii * t * t - r * t
        if v > best:
            best_t = t
    return best_t


@njit(cache=True)
def _band_violation(t, m, C, C_high, low, high):
    """Max projected gradient of the (alpha, beta) dual; ``m[i] = y_i f(x_i)``."""
    viol = 0.0
    for i in range(t.shape[0]):
        a = t[i] if t[i] > 0.0 else 0.0
        b = -t[i] if t[i] < 0.0 else 0.0
        viol = max(viol, projected_gradient(a, low - m[i], C))  # d W / d alpha_i
        if C_high > 0.0:
            viol = max(viol, projected_gradient(b, m[i] - high, C_high))  # d W / d beta_i
    return viol


@njit(cache=True)
def _banded_cd(K, s, C, C_high, low, high, tol, max_epochs, seed):
    """Exact coordinate descent on the bias-free B-SVM dual; returns (t, epochs, converged, viol).

    One coordinate is one point's pair ``(alpha_i, beta_i)``, kept as
    ``t_i = alpha_i - beta_i`` (see :class:`BandedSVC` for why that is exact).
    ``f[r] = sum_i t_i s_i K[i, r]`` is maintained in O(N) per change; the dual matrix
    ``K * s s'`` is never formed.
    """
    n = K.shape[0]
    t = np.zeros(n)
    f = np.zeros(n)
    m = np.zeros(n)
    order = np.arange(n)
    rng = rng_state(np.uint64(seed))
    viol = np.inf
    for epoch in range(max_epochs):
        shuffle_prefix(order, n, rng)
        for q in range(n):
            i = order[q]
            kii = K[i, i]
            r = s[i] * f[i] - kii * t[i]
            new = _band_step(r, kii, C, C_high, low, high)
            delta = new - t[i]
            if delta != 0.0:
                t[i] = new
                a = delta * s[i]
                for p in range(n):
                    f[p] += a * K[i, p]
        for i in range(n):
            m[i] = s[i] * f[i]
        viol = _band_violation(t, m, C, C_high, low, high)
        if viol <= tol:
            return t, epoch + 1, True, viol
    return t, max_epochs, False, viol


class BandedSVC(KernelClassifier):
    """Bias-free kernel B-SVM (Pendse, "BSVM: A Banded Support Vector Machine"), binary.

    With labels ``y_i = +-1`` (``+1`` for ``classes_[1]``) and ``f(x) = <w, phi(x)>``,
    the primal is

        min_w  1/2 ||w||^2 + C      sum_i [band_low  - y_i f(x_i)]_+
                           + C_high sum_i [y_i f(x_i) - band_high]_+ ,

    the C-SVM hinge at ``band_low`` (eq. 2.1 at margin 1) plus a second hinge that
    penalises signed decisions above ``band_high``, so that ``y_i f(x_i)`` is encouraged
    to lie in ``[band_low, band_high]`` (eqs. 1.1, 2.3). With multipliers ``alpha_i`` for
    ``y_i f_i >= band_low - xi_i`` and ``beta_i`` for ``y_i f_i <= band_high + eta_i``,
    ``w = sum_i (alpha_i - beta_i) y_i phi(x_i)`` (eq. 3.9) and the dual is

        max  band_low sum_i alpha_i - band_high sum_i beta_i
             - 1/2 sum_ik (alpha_i - beta_i)(alpha_k - beta_k) y_i y_k K(x_i, x_k)
        s.t. 0 <= alpha_i <= C,  0 <= beta_i <= C_high                  (eq. 3.14)

    with no equality constraint ``sum (alpha_i - beta_i) y_i = 0``: that one comes from
    the bias (eqs. 3.6, 3.10), which this bias-free version drops, as the paper's
    conclusion anticipates. The decision is ``f(x) = sum_i (alpha_i - beta_i) y_i
    K(x_i, x)`` (eq. 3.19) and ``x`` goes to ``classes_[1]`` when ``f(x) > 0``.

    ``C_high=0`` (or ``band_high=inf``) forces ``beta = 0`` and gives the plain bias-free
    hinge SVM with margin ``band_low`` (the paper's remark after eq. 3.14).

    **Solver.** For ``band_low <= band_high`` the split of ``t_i = alpha_i - beta_i``
    that maximises the dual at fixed ``t`` is ``alpha_i = t_i+``, ``beta_i = t_i-``
    (the linear term gains ``(band_low - band_high) min(alpha_i, beta_i) <= 0`` from any
    overlap), so an optimum has ``alpha_i beta_i = 0`` and each point's pair is one
    scalar ``t_i`` in ``[-C_high, C]`` with a concave piecewise quadratic objective.
    Coordinate descent maximises it exactly, one point at a time, in a random order per
    epoch, and stops once the largest projected gradient of the ``(alpha, beta)`` dual is
    ``<= tol``.

    Parameters
    ----------
    C : weight of the lower hinge (``alpha``'s box), > 0.
    C_high : weight of the upper hinge (``beta``'s box), >= 0; 0 disables the band.
    band_low, band_high : the band, ``0 < band_low <= band_high`` (``band_high`` may be
        ``inf``).
    gamma : width of the kernel ``exp(-gamma ||x - x'||^2 / n_features)`` (per feature:
        ours = SVC's gamma x n_features; the same for "poly" and "sigmoid").
    kernel : "rbf", "linear", "poly", "sigmoid", a callable, or "precomputed" to pass
        kernel matrices as X (:mod:`isvm.kernels`); ``degree`` and ``coef0`` as in SVC.
    tol : stopping tolerance on the projected gradient.
    max_iter : cap on the epochs; stopping at it warns (ConvergenceWarning).
    random_state : seed (or RandomState) for the visiting order.

    Attributes
    ----------
    classes_, alpha_, beta_ (n_samples,), dual_coef_ (``(alpha - beta) y``, so
    ``f = K(X, X_train) @ dual_coef_``), n_iter_ (epochs), converged_, kkt_violation_,
    objective_ (dual), primal_objective_, duality_gap_.
    """

    def __init__(
        self,
        C=1.0,
        C_high=1.0,
        band_low=1.0,
        band_high=2.0,
        gamma=5.0,
        kernel="rbf",
        tol=1e-3,
        max_iter=10_000,
        random_state=None,
        degree=3,
        coef0=0.0,
    ):
        self.C = C
        self.C_high = C_high
        self.band_low = band_low
        self.band_high = band_high
        self.gamma = gamma
        self.kernel = kernel
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.degree = degree
        self.coef0 = coef0

    _parameter_constraints: dict = {
        **KernelClassifier._parameter_constraints,
        "C": [POSITIVE],
        "C_high": [Interval(Real, 0, None, closed="left")],
        "band_low": [POSITIVE],
        "band_high": [Interval(Real, 0, None, closed="right")],  # may be inf
        "tol": [POSITIVE],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def _check_params(self) -> None:
        """The constraints, then what they cannot say: the band is an interval."""
        self._validate_params()
        if not self.band_low <= self.band_high:
            raise ValueError(
                f"need band_low <= band_high, got {self.band_low!r}, {self.band_high!r}"
            )

    def fit(self, X: ArrayLike, y: ArrayLike) -> BandedSVC:
        """Train on X (n_samples, n_features), or a precomputed (n, n) kernel, and binary y."""
        self._check_params()
        X, y_idx, K, seed = self._validate_fit(X, y, binary=True)
        s = np.where(y_idx == 1, 1.0, -1.0)
        C, C_high = float(self.C), float(self.C_high)
        low, high = float(self.band_low), float(self.band_high)
        t, epochs, converged, _ = _banded_cd(
            K, s, C, C_high, low, high, float(self.tol), int(self.max_iter), seed
        )
        self.alpha_ = np.maximum(t, 0.0)
        self.beta_ = np.maximum(-t, 0.0)
        self.dual_coef_ = t * s
        # objective and KKT from scores summed afresh (not the loop's running sums)
        m = s * (K @ self.dual_coef_)
        quad = float(t @ m)
        beta_sum = float(self.beta_.sum())
        self.objective_ = low * float(self.alpha_.sum()) - 0.5 * quad
        if beta_sum > 0.0:
            self.objective_ -= high * beta_sum
        self.primal_objective_ = 0.5 * quad + C * float(np.maximum(low - m, 0.0).sum())
        if C_high > 0.0:
            self.primal_objective_ += C_high * float(np.maximum(m - high, 0.0).sum())
        self.duality_gap_ = self.primal_objective_ - self.objective_
        self.kkt_violation_ = float(_band_violation(t, m, C, C_high, low, high))
        self.n_iter_ = int(epochs)
        self.converged_ = bool(converged)
        if not converged:
            warnings.warn(
                f"BandedSVC: coordinate descent stopped at max_iter={self.max_iter} epochs "
                f"with KKT violation {self.kkt_violation_:.3g} > tol={self.tol}; "
                "raise max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """``f(x) = sum_i (alpha_i - beta_i) y_i K(x_i, x)``, shape (n_samples,)."""
        return self._test_kernel(X) @ self.dual_coef_

    def predict(self, X: ArrayLike) -> NDArray:
        """``classes_[1]`` where ``f(x) > 0``, else ``classes_[0]``."""
        decision = self.decision_function(X)
        return self.classes_[(decision > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
