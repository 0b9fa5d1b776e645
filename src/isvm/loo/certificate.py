"""What the fold certificates know about the kernel: held-out radii and an eigenvalue floor.

A fold's prediction at its held-out point p is proved from a bound on
``||w - w*||`` (the fold's current primal point against its optimum) and the reach
of the point in feature space (:func:`isvm.solvers._core.certify`). Two facts make
both much sharper than the plain duality gap and ``sqrt(K_pp)``:

- **The held-out radius.** ``w - w*`` lies in the span of the fold's training
  features, so a class-score difference at p moves by at most
  ``kappa ||P phi(x_p)|| ||w - w*||``, P the projection onto that span. With
  ``G = K^-1`` over the distinct points, ``||P phi(x_p)||^2 = K_pp - 1 / G_pp``
  (a Schur complement). On z-scored features the kernel is nearly diagonal and the
  radius is 1e-1 to 1e-7 instead of 1. A point with an exact duplicate lies in the
  span: its radius is ``sqrt(K_pp)``.
- **The eigenvalue floor.** ``Q = U (K x M) U'`` is at least ``lambda_K`` times
  ``blockdiag(U_i M U_i') = blockdiag(I + sigma w_i w_i')`` (the coding's per-point
  blocks), where ``lambda_K`` is the smallest eigenvalue of K over the distinct
  points; identical points count as one (their multipliers enter w only through
  their sum). Then ``D* - D(alpha)`` is bounded by a sum of small per-point
  problems, quadratic in the KKT residuals
  (:func:`isvm.solvers._core.suboptimality`), where the duality gap weighs every
  residual by C; at large C that is the difference between certifying a fold at
  once and solving it to 1e-9.

Both are computed once per kernel, in NumPy, with safety margins for rounding:
eigenvalues are shifted down by ``shift`` before inverting (a smaller matrix has a
larger inverse diagonal, so the radius can only grow), and the radius gets an
absolute allowance for the rounding of ``1 / G_pp``. Where K over the distinct
points is too close to singular for that (near-duplicate points), the radius
falls back to ``sqrt(K_pp)`` and the floor to 0, i.e. the plain duality gap:
always valid, never wrong, only weaker.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray


class KernelGeometry(NamedTuple):
    """Per-kernel inputs of the fold certificates (passed to numba as they are)."""

    radius: np.ndarray  # (N,) upper bound on ||P phi(x_p)||, P: span of the other points
    floor: float  # lower bound on lambda_min(K) over distinct points (0: none)
    group: np.ndarray  # (N,) int64: index of the point's group of identical points, -1 alone
    group_mixed: np.ndarray  # (G,) bool: the group's points do not all share a label


def duplicate_groups(X: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Groups of exactly identical rows of X: (group per point, -1 for a unique row; mixed labels).

    Identical rows have identical feature vectors under any kernel of X, so they add
    nothing to a span; only exact equality counts (a near-duplicate is another point).
    """
    X = np.asarray(X)
    y = np.asarray(y)
    _, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    shared = counts[inverse] > 1
    group = np.full(X.shape[0], -1, dtype=np.int64)
    ids, group_of = np.unique(inverse[shared], return_inverse=True)
    group[shared] = group_of
    mixed = np.zeros(ids.shape[0], dtype=np.bool_)
    for g in range(ids.shape[0]):
        mixed[g] = np.unique(y[group == g]).shape[0] > 1
    return group, mixed


def kernel_geometry(
    K: NDArray[np.float64], group: NDArray[np.int64], group_mixed: NDArray[np.bool_]
) -> KernelGeometry:
    """Held-out radii and the eigenvalue floor of kernel ``K`` (see the module docstring).

    ``group``/``group_mixed`` come from :func:`duplicate_groups`.
    """
    diag = np.diag(K).copy()
    trivial = np.sqrt(np.maximum(diag, 0.0))
    # one representative per group of identical points: its first
    keep = group < 0
    keep[np.flatnonzero(group >= 0)[np.unique(group[group >= 0], return_index=True)[1]]] = True
    reps = np.flatnonzero(keep)
    if reps.shape[0] == 0:
        return KernelGeometry(trivial, 0.0, group, group_mixed)
    Ku = K[np.ix_(reps, reps)]
    w, V = np.linalg.eigh(Ku)
    scale = max(float(np.max(np.abs(w))), 1e-300)
    # eigenvalues of the rounded, symmetrised K are off by at most about N eps ||K||;
    # shifting by a thousand times that keeps the shifted matrix below the true one
    shift = 1e3 * reps.shape[0] * np.finfo(float).eps * scale
    lam = float(w[0]) - shift
    if lam <= 1e-8 * scale:
        return KernelGeometry(trivial, 0.0, group, group_mixed)
    g_diag = (V * V) @ (1.0 / (w - shift))  # diag of (Ku - shift I)^-1
    cond = scale / lam
    allowance = 1e3 * reps.shape[0] * np.finfo(float).eps * cond * diag[reps]
    radius2 = diag[reps] - 1.0 / g_diag + allowance
    radius = trivial.copy()
    alone = group[reps] < 0
    radius[reps[alone]] = np.sqrt(np.clip(radius2[alone], 0.0, diag[reps[alone]]))
    return KernelGeometry(radius, lam, group, group_mixed)
