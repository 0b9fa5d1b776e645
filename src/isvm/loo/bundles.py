"""Named bundles of arrays that cross the LOO engine's numba boundaries.

Each is a ``NamedTuple``: numba passes it as a plain struct, and each kernel unpacks
the fields it needs at its top. The solver-level bundles (``Problem``, ``Dual``,
``Blocks``, ``Target``) live in :mod:`isvm.solvers._core`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: variable statuses of an active set (int8)
ZERO, FREE, UPPER, EXCLUDED = 0, 1, 2, 3


class Factor(NamedTuple):
    """The full optimum's active set and the inverse the fold updates border.

    ``Q_out``/``Y_out`` hold ``Q[v, F]`` and ``Q[v, F] Hinv`` of every variable v
    outside F at row ``out_pos[v]``; empty (``out_pos`` all -1) over the memory budget.
    """

    status: np.ndarray  # (V,) int8: ZERO / FREE / UPPER per variable
    free_vars: np.ndarray  # (F,) the free set F, as variable indices
    free_pos: np.ndarray  # (V,) position in F, or -1
    Hinv: np.ndarray  # (F, F) inverse of H = Q_FF
    S_bound: np.ndarray  # (D, N) scores of the variables at C alone
    ssum_bound: np.ndarray  # (N,)
    Q_out: np.ndarray  # (outside, F)
    Y_out: np.ndarray  # (outside, F)
    out_pos: np.ndarray  # (V,) row in Q_out / Y_out, or -1
    var_id: np.ndarray  # (N, L) variable index of each (point, class), or -1


def _empty(dtype: type, ndim: int) -> np.ndarray:
    return np.zeros((0,) * ndim, dtype=dtype)


#: "no exact full optimum" (cd alone for the folds): empty arrays of Factor's types, so
#: that fit_folds compiles once (None would be a second specialisation, about 10 s)
NO_FACTOR = Factor(
    _empty(np.int8, 1),
    _empty(np.int64, 1),
    _empty(np.int64, 1),
    _empty(np.float64, 2),
    _empty(np.float64, 2),
    _empty(np.float64, 1),
    _empty(np.float64, 2),
    _empty(np.float64, 2),
    _empty(np.int64, 1),
    _empty(np.int64, 2),
)


class Warm(NamedTuple):
    """A fold's statuses at the previous C and the full optimum's there (empty: no guess)."""

    status: np.ndarray  # (V,) int8 or (0,)
    base: np.ndarray  # (V,) int8 or (0,)


class FoldStore(NamedTuple):
    """Every fold's solution at the previous C of the path: its warm starts at the next."""

    alpha: np.ndarray  # (N, N, L)
    S: np.ndarray  # (N, D, N)
    ssum: np.ndarray  # (N, N)
    status: np.ndarray  # (N, V) int8, the active-set statuses
    status_ok: np.ndarray  # (N,) bool, whether ``status`` is an exact fold optimum's
    #: (N, 3): the standing proof of each fold's stored solution, (C it was made at, 0:
    #: none yet, -1: its bound did not prove it, nor will at a larger C; the bound
    #: there; its growth per unit of C), from :func:`isvm.solvers.certify.standing_bound`;
    #: (N, 3 + 2D) where the folds certify column by column (``Certificate.column_factor``):
    #: then each column's bound (from 3 on) and growth (from 3 + D on) instead
    proof: np.ndarray


class PathStep(NamedTuple):
    """One C of a path, as the fold driver sees it."""

    C: float
    scale_prev: float  # C / C_prev (<= 0: first C, no previous fold solutions)
    seeds: np.ndarray  # (N,) uint64, each fold's random stream
    status_prev: np.ndarray  # (V,) int8, the full optimum's statuses at C_prev (or (0,))
    # the full solution at C_prev and its scores (empty arrays: none); three fields, not
    # a nested tuple, which numba's prange cannot pass
    alpha_prev: np.ndarray  # (N, L) or (0, 0)
    S_prev: np.ndarray  # (D, N) or (0, 0)
    ssum_prev: np.ndarray  # (N,) or (0,)
    # (N,) bool: whether fold p tries its own solution at C_prev before a cd start
    # (isvm.loo.policy)
    try_prev: np.ndarray
    # (N,) bool: whether fold p tries the shifted start before its active-set update
    # (active-set mode; isvm.loo.policy)
    try_shift: np.ndarray
    # (N,) bool: whether fold p's active-set update starts from its own statuses at
    # C_prev, where they are exact and C grew by at most settings.WARM_RATIO
    # (isvm.loo.policy)
    use_warm: np.ndarray


class FoldLimits(NamedTuple):
    """One grid run's tolerances and budgets as the numba fold kernels read them (the
    names of :func:`isvm.loo.loo_grid` and :class:`~isvm.loo.settings.LooSettings`)."""

    tol: float  # maximum KKT violation of a fold solve
    tol_floor: float  # tightest tolerance an uncertified fold is solved to
    max_iter: int  # epochs per fit
    kappa: float  # class-score difference per unit of ||w|| (the formulation's)
    active_max_iter: int  # set updates per fold
    active_max_changed: int  # outside variables a fold update may free
    #: primal-dual steps without progress before the decremental path (< 0: the path alone)
    active_patience: int
    active_pd_max_touched: int  # outside variables those steps may free before it


class Certificate(NamedTuple):
    """How the folds of one kernel prove their predictions (:mod:`isvm.loo.certificate`)."""

    A: np.ndarray  # (D, L) scores -> class scores
    radius: np.ndarray  # (N,) kappa times the held-out radius of each point
    floor: np.ndarray  # (N,) per-point eigenvalue floors (:mod:`isvm.loo.certificate`)
    group: np.ndarray  # (N,) int64 group of identical points, -1 alone
    group_mixed: np.ndarray  # (G,) bool, the group's labels differ
    #: ``Target.column_factor``: 1 / kappa where the dual is separate problems by coding
    #: column (1-vs-all) and the folds certify class by class; 0 otherwise
    column_factor: float


class FoldOutput(NamedTuple):
    """Per-fold results of one grid point."""

    pred: np.ndarray  # (N,) int64 predicted class
    epochs: np.ndarray  # (N,) int64 set updates plus cd epochs
    certified: np.ndarray  # (N,) bool, the certificate proves the prediction
    settled: np.ndarray  # (N,) bool, certified or converged to tol
    prev_try: np.ndarray  # (N,) int8, the try on C_prev's solution: -1 none, 0 failed, 1 proved
    shift_try: np.ndarray  # (N,) int8, the shifted start before the update: the same codes
    #: (N,) int8, the fold's active-set update started from its statuses at C_prev (1),
    #: without them where it could have (0), or neither (-1: no update, or no such guess)
    warm: np.ndarray

    @classmethod
    def empty(cls, n: int) -> FoldOutput:
        return cls(
            np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.bool_),
            np.empty(n, dtype=np.bool_),
            np.empty(n, dtype=np.int8),
            np.empty(n, dtype=np.int8),
            np.empty(n, dtype=np.int8),
        )
