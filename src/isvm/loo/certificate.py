"""What the fold certificates know about the kernel: held-out radii and eigenvalue floors.

A fold's prediction at its held-out point p is proved from a bound on
``||w - w*||`` (the fold's current primal point against its optimum) and the reach
of the point in feature space (:func:`isvm.solvers.certify.certify`). Two facts make
both much sharper than the plain duality gap and ``sqrt(K_pp)``:

- **The held-out radius.** ``w - w*`` lies in the span of the fold's training
  features, so a class-score difference at p moves by at most
  ``kappa ||P phi(x_p)|| ||w - w*||``, P the projection onto that span. With
  ``G = K^-1`` over the distinct points, ``||P phi(x_p)||^2 = K_pp - 1 / G_pp``
  (a Schur complement). On z-scored features the kernel is nearly diagonal and the
  radius is 1e-1 to 1e-7 instead of 1. A point with an exact duplicate lies in the
  span: its radius is ``sqrt(K_pp)``.
- **The eigenvalue floors.** ``Q = U (K x M) U'`` is at least
  ``blockdiag(lambda_i U_i M U_i') = blockdiag(lambda_i (I + sigma w_i w_i'))`` (the
  coding's per-point blocks) wherever ``K >= diag(lambda)`` over the distinct
  points; identical points count as one (their multipliers enter w only through
  their sum). Then ``D* - D(alpha)`` is bounded by a sum of small per-point
  problems, quadratic in the KKT residuals
  (:func:`isvm.solvers.certify.suboptimality`), where the duality gap weighs every
  residual by C; at large C that is the difference between certifying a fold at
  once and solving it to 1e-9. One floor for all, ``lambda_min(K)``, is set by the
  closest pair of points; scaled per point, ``lambda_i = mu d_i`` with
  ``d_i = 1 / G_pp`` (the squared distance of the point from the span of the
  others) and ``mu = lambda_min(D^-1/2 K D^-1/2)``, an isolated point keeps a floor
  near ``mu`` (0.2-0.5 on the z-scored data sets) and only the points of a tight
  cluster get small ones: 4-180x the global floor at the median. Any positive D
  gives a valid bound; the floors also hold for every fold's kernel (a principal
  submatrix).

Both are computed once per kernel, in NumPy, with safety margins for rounding:
eigenvalues are shifted down by ``shift`` before inverting (a smaller matrix has a
larger inverse diagonal, so the radius can only grow), and the radius gets an
absolute allowance for the rounding of ``1 / G_pp``, and ``mu`` is shifted down in
the same way. Where K over the distinct points is too close to singular for that
(near-duplicate points), the radius falls back to ``sqrt(K_pp)`` and the floors to
0, i.e. the plain duality gap: always valid, never wrong, only weaker.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray


class KernelGeometry(NamedTuple):
    """Per-kernel inputs of the fold certificates (passed to numba as they are)."""

    radius: np.ndarray  # (N,) upper bound on ||P phi(x_p)||, P: span of the other points
    floor: np.ndarray  # (N,) K >= diag(floor) over distinct points (0: plain gap)
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
    """Held-out radii and the eigenvalue floors of kernel ``K`` (see the module docstring).

    ``group``/``group_mixed`` come from :func:`duplicate_groups`.
    """
    diag = np.diag(K).copy()
    trivial = np.sqrt(np.maximum(diag, 0.0))
    # one representative per group of identical points: its first
    keep = group < 0
    keep[np.flatnonzero(group >= 0)[np.unique(group[group >= 0], return_index=True)[1]]] = True
    reps = np.flatnonzero(keep)
    none = np.zeros(K.shape[0])
    if reps.shape[0] == 0:
        return KernelGeometry(trivial, none, group, group_mixed)
    Ku = K[np.ix_(reps, reps)]
    w, V = np.linalg.eigh(Ku)
    scale = max(float(np.max(np.abs(w))), 1e-300)
    # eigenvalues of the rounded, symmetrised K are off by at most about N eps ||K||;
    # shifting by a thousand times that keeps the shifted matrix below the true one
    shift = 1e3 * reps.shape[0] * np.finfo(float).eps * scale
    lam = float(w[0]) - shift
    if lam <= 1e-8 * scale:
        return KernelGeometry(trivial, none, group, group_mixed)
    g_diag = (V * V) @ (1.0 / (w - shift))  # diag of (Ku - shift I)^-1
    cond = scale / lam
    allowance = 1e3 * reps.shape[0] * np.finfo(float).eps * cond * diag[reps]
    radius2 = diag[reps] - 1.0 / g_diag + allowance
    radius = trivial.copy()
    alone = group[reps] < 0
    radius[reps[alone]] = np.sqrt(np.clip(radius2[alone], 0.0, diag[reps[alone]]))
    floors = _scaled_floors(Ku, reps, group, g_diag, scale)
    return KernelGeometry(radius, floors, group, group_mixed)


def _scaled_floors(
    Ku: NDArray[np.float64],
    reps: NDArray[np.int64],
    group: NDArray[np.int64],
    g_diag: NDArray[np.float64],
    scale: float,
) -> NDArray[np.float64]:
    """Per-point floors ``mu d`` with ``K >= mu diag(d)`` over the representatives ``reps``.

    ``d = 1 / g_diag`` (any positive d is valid; this one is small only inside tight
    clusters). ``mu`` is the smallest eigenvalue of ``D^-1/2 K D^-1/2`` shifted down
    for the rounding of that matrix and of K itself (as the global floor is); a
    group of identical points takes its representative's floor. All 0 when ``mu``
    is not safely positive.
    """
    n = reps.shape[0]
    eps = np.finfo(float).eps
    d = 1.0 / g_diag
    s = 1.0 / np.sqrt(d)
    mu_all = np.linalg.eigvalsh(Ku * s[:, None] * s[None, :])
    mu_scale = float(np.max(np.abs(mu_all)))
    mu = float(mu_all[0]) - 1e3 * n * eps * (mu_scale + float(np.max(s)) ** 2 * scale)
    floors = np.zeros(group.shape[0])
    if mu <= 0.0:
        return floors
    floors[reps] = mu * d
    members = np.flatnonzero(group >= 0)
    if members.size:
        grouped = reps[group[reps] >= 0]
        rep_of_group = np.empty(int(group.max()) + 1, dtype=np.int64)
        rep_of_group[group[grouped]] = grouped
        floors[members] = floors[rep_of_group[group[members]]]
    return floors
