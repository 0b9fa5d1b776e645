"""The estimators' kernels: the paper's Gaussian kernel and scikit-learn's other named kernels.

The Gaussian kernel is the paper's, ``K(x, x') = exp(-gamma * ||x - x'||^2 / M)``: M is
the number of features (section 9), so one gamma means the same thing on data sets of
any dimension. **Our gamma is scikit-learn's gamma times M**: ``SVC(gamma=0.1)`` on 13
features is ``gamma=1.3`` here. The same per-feature convention holds for the other
kernels that take a gamma (``poly``, ``sigmoid``), so the rule is one: ours = SVC's x M.

| kernel | K(x, x') | as in SVC with |
| --- | --- | --- |
| ``"rbf"`` | ``exp(-gamma ||x - x'||^2 / M)`` | ``gamma_svc = gamma / M`` |
| ``"linear"`` | ``<x, x'>`` | (no gamma) |
| ``"poly"`` | ``(gamma <x, x'> / M + coef0) ** degree`` | ``gamma_svc = gamma / M`` |
| ``"sigmoid"`` | ``tanh(gamma <x, x'> / M + coef0)`` | ``gamma_svc = gamma / M`` |
| callable | ``kernel(X, Y)``, an (n_X, n_Y) array | the same callable |

The sigmoid kernel is not positive semi-definite in general: the SVM dual is then not
concave and a fit is a stationary point, not an optimum (as in LIBSVM). Squared
distances are exposed separately because the leave-one-out grid reuses them for every
gamma.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: the named kernels of the estimators (``kernel=``), besides a callable
KERNELS: tuple[str, ...] = ("rbf", "linear", "poly", "sigmoid", "precomputed")
#: how a user coming from scikit-learn's SVC converts gamma; quoted in errors and docs
GAMMA_CONVENTION = (
    "gamma is per feature: rbf exp(-gamma ||x - x'||^2 / n_features), poly and sigmoid "
    "gamma <x, x'> / n_features; ours = SVC's gamma x n_features"
)


def squared_distances(X: ArrayLike, Y: ArrayLike | None = None) -> NDArray[np.float64]:
    """Pairwise squared Euclidean distances, in one vectorised pass (exact zeros on X vs X)."""
    X = np.asarray(X, dtype=np.float64)
    same = Y is None
    Y = X if same else np.asarray(Y, dtype=np.float64)
    _check_pair(X, Y)
    xx = np.einsum("ij,ij->i", X, X)
    yy = xx if same else np.einsum("ij,ij->i", Y, Y)
    d2 = xx[:, None] + yy[None, :] - 2.0 * (X @ Y.T)
    np.maximum(d2, 0.0, out=d2)
    if same:
        np.fill_diagonal(d2, 0.0)
        d2 = 0.5 * (d2 + d2.T)  # exact symmetry, whatever the BLAS rounding
    return d2


def _check_pair(X: NDArray, Y: NDArray) -> None:
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"need two 2-D arrays with equal feature counts, got {X.shape}, {Y.shape}")


def rbf_from_distances(
    d2: NDArray[np.float64], gamma: float, n_features: int
) -> NDArray[np.float64]:
    """``exp(-gamma * d2 / n_features)`` as a new C-contiguous array."""
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma!r} ({GAMMA_CONVENTION})")
    return np.ascontiguousarray(np.exp(d2 * (-float(gamma) / n_features)))


def rbf_kernel(X: ArrayLike, Y: ArrayLike | None = None, gamma: float = 5.0) -> NDArray[np.float64]:
    """The paper's Gaussian kernel between the rows of X and Y (Y defaults to X)."""
    X = np.asarray(X, dtype=np.float64)
    return rbf_from_distances(squared_distances(X, Y), gamma, X.shape[1])


def kernel_matrix(
    X: ArrayLike,
    Y: ArrayLike | None = None,
    *,
    kernel: str | Callable[[NDArray, NDArray], ArrayLike] = "rbf",
    gamma: float = 5.0,
    degree: int = 3,
    coef0: float = 0.0,
) -> NDArray[np.float64]:
    """``K(X, Y)`` (Y defaults to X) for a named kernel of the module table or a callable.

    One function for the estimators' training and test kernels and for
    :class:`isvm.LOOSearchCV`'s kernels, so both build the same matrix. Returns a new
    C-contiguous float64 array of shape (n_X, n_Y).
    """
    X = np.asarray(X, dtype=np.float64)
    if callable(kernel):
        Yc = X if Y is None else np.asarray(Y, dtype=np.float64)
        K = np.asarray(kernel(X, Yc), dtype=np.float64)
        if K.shape != (X.shape[0], Yc.shape[0]):
            raise ValueError(
                f"a callable kernel must return an array of shape {(X.shape[0], Yc.shape[0])}, "
                f"got {K.shape}"
            )
        return np.ascontiguousarray(K)
    if kernel == "rbf":
        return rbf_kernel(X, Y, gamma=gamma)
    if kernel not in KERNELS or kernel == "precomputed":
        raise ValueError(f"kernel must be one of {KERNELS[:-1]} or a callable, got {kernel!r}")
    Yc = X if Y is None else np.asarray(Y, dtype=np.float64)
    _check_pair(X, Yc)
    dots = X @ Yc.T
    if Y is None:
        dots = 0.5 * (dots + dots.T)  # exact symmetry, as the rbf's distances
    if kernel == "linear":
        return np.ascontiguousarray(dots)
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma!r} ({GAMMA_CONVENTION})")
    inner = dots * (float(gamma) / X.shape[1]) + float(coef0)
    if kernel == "poly":
        return np.ascontiguousarray(inner ** int(degree))
    return np.ascontiguousarray(np.tanh(inner))
