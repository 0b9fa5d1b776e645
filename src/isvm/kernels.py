"""The paper's Gaussian kernel, ``K(x, x') = exp(-gamma * ||x - x'||^2 / M)``.

M is the number of features (section 9), so one gamma means the same thing on
data sets of any dimension. Squared distances are exposed separately because
the leave-one-out grid reuses them for every gamma.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def squared_distances(X: ArrayLike, Y: ArrayLike | None = None) -> NDArray[np.float64]:
    """Pairwise squared Euclidean distances, in one vectorised pass (exact zeros on X vs X)."""
    X = np.asarray(X, dtype=np.float64)
    same = Y is None
    Y = X if same else np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"need two 2-D arrays with equal feature counts, got {X.shape}, {Y.shape}")
    xx = np.einsum("ij,ij->i", X, X)
    yy = xx if same else np.einsum("ij,ij->i", Y, Y)
    d2 = xx[:, None] + yy[None, :] - 2.0 * (X @ Y.T)
    np.maximum(d2, 0.0, out=d2)
    if same:
        np.fill_diagonal(d2, 0.0)
        d2 = 0.5 * (d2 + d2.T)  # exact symmetry, whatever the BLAS rounding
    return d2


def rbf_from_distances(
    d2: NDArray[np.float64], gamma: float, n_features: int
) -> NDArray[np.float64]:
    """``exp(-gamma * d2 / n_features)`` as a new C-contiguous array."""
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    return np.ascontiguousarray(np.exp(d2 * (-float(gamma) / n_features)))


def rbf_kernel(X: ArrayLike, Y: ArrayLike | None = None, gamma: float = 5.0) -> NDArray[np.float64]:
    """The paper's Gaussian kernel between the rows of X and Y (Y defaults to X)."""
    X = np.asarray(X, dtype=np.float64)
    return rbf_from_distances(squared_distances(X, Y), gamma, X.shape[1])
