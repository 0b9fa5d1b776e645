"""What the LOO paths (the exact engine and the refits) need first: labels as
0..L-1, finite features and one kernel matrix per gamma, with the errors a user should see."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from isvm.kernels import rbf_from_distances, squared_distances


def encode_labels(y: ArrayLike, n_classes: int | None) -> tuple[NDArray, NDArray[np.int64], int]:
    """(classes, labels 0..L-1, L); a clear error for one-class input.

    With ``n_classes`` the labels must already be 0..n_classes-1 (a fold or a
    subsample may lack a class that the problem has).
    """
    y = np.asarray(y)
    if n_classes is None:
        classes, y_idx = np.unique(y, return_inverse=True)
        n_classes = classes.shape[0]
    else:
        y_idx = y.astype(np.int64)
        if y_idx.min() < 0 or y_idx.max() >= n_classes:
            raise ValueError(f"with n_classes={n_classes}, labels must lie in 0..{n_classes - 1}")
        classes = np.arange(n_classes)
    if np.unique(y_idx).shape[0] < 2:
        raise ValueError(
            f"leave-one-out needs at least 2 classes in the sample; got only {classes[y_idx[0]]!r}"
        )
    return classes, y_idx.astype(np.int64), n_classes


def finite_features(X: ArrayLike) -> NDArray[np.float64]:
    """X as float64; a ValueError where it holds NaN or infinite values."""
    X = np.asarray(X, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    return X


def grid_kernels(
    X: ArrayLike, gammas: Sequence[float], kernel_cache: MutableMapping | None
) -> dict[float, NDArray[np.float64]]:
    """One kernel matrix per gamma, from the cache where present."""
    cache = {} if kernel_cache is None else kernel_cache
    missing = [g for g in gammas if float(g) not in cache]
    if missing:
        X = finite_features(X)
        d2 = squared_distances(X)
        for g in missing:
            cache[float(g)] = rbf_from_distances(d2, float(g), X.shape[1])
    return {float(g): cache[float(g)] for g in gammas}
