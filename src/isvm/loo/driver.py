"""Exact leave-one-out accuracy over a (gamma, C) grid: the path driver (:func:`loo_grid`).

For every grid point the engine fits the full data once, then each held-out problem
("fold"), every fold's prediction that of its true optimum. Per gamma it walks the C
grid upwards (one kernel matrix per gamma, shared through ``kernel_cache``):

1. the full fit starts from the previous C's solution (:func:`_path_start`) and is
   solved by cd, then, in active-set mode, polished to its exact optimum by the
   finish (:mod:`isvm.loo.full_fit`; class by class where the dual is L separate
   problems, :mod:`isvm.loo.separable`), which keeps the inverse of its free block;
2. the folds run in parallel (:mod:`isvm.loo.folds`), each from the full optimum by
   active-set updates of that inverse (:mod:`isvm.loo.fold_update`) or by cd from
   the best of its cheap starts, and each stops only once its prediction is proved
   (:mod:`isvm.solvers.certify`) or it converged to ``tol`` and then tighter;
3. the mode and the folds' tries are the path's policy (:mod:`isvm.loo.policy`),
   decided by counts, never timings, so a run is reproducible to the iteration.

Each fold has its own random stream derived from ``(seed, gamma, C, point)``, so the
results do not depend on the number of threads. The class set is that of ``y`` (or
``0..n_classes-1``): a fold keeps all L classes even when the held-out point was the
only one of its class.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from isvm.loo.bundles import (
    NO_FACTOR,
    Certificate,
    FoldLimits,
    FoldOutput,
    FoldStore,
    PathStep,
)
from isvm.loo.certificate import duplicate_groups, kernel_geometry
from isvm.loo.folds import fit_folds, probe_folds
from isvm.loo.full_fit import FullOptimum, exact_full_fit
from isvm.loo.grid import check_grid
from isvm.loo.inputs import encode_labels, grid_kernels
from isvm.loo.policy import FoldProbe, PathPolicy
from isvm.loo.records import GRID_COLUMNS, GridRow
from isvm.loo.separable import ClassPart, exact_separable_fit, separable_parts
from isvm.loo.settings import (
    ACTIVE_PATIENCE,
    ACTIVE_PD_MAX_TOUCHED,
    DEFAULT_SETTINGS,
    LooSettings,
)
from isvm.methods import Coding, Formulation, get_formulation, separable_by_column
from isvm.seeding import derive_seed
from isvm.solvers import (
    DEFAULT_MAX_EPOCHS,
    SolverState,
    check_weights,
    problem_of,
    run_solver,
    variable_list,
    weighted_coding,
    weighted_kernel,
)
from isvm.solvers._core import Blocks, Dual, Problem
from isvm.warmup import announce_compile


def _path_start(alpha: NDArray, C: float, C_prev: float) -> NDArray:
    """The full fit's start at C from its solution at C_prev < C.

    With no multiplier at its bound C_prev, the solution stays optimal for every
    larger C (the bound's KKT multipliers are zero), so it is kept as it is;
    otherwise the multipliers are scaled by C / C_prev (those at the bound stay there).
    """
    if alpha.max() < C_prev:
        return alpha
    return np.minimum(alpha * (C / C_prev), C)


@dataclass
class _Job:
    """What every grid point of one :func:`loo_grid` call shares."""

    coding: Coding
    y_idx: NDArray[np.int64]
    classes: NDArray
    A: NDArray[np.float64]  # class scores from score columns
    var_i: NDArray[np.int64]
    var_j: NDArray[np.int64]
    var_id: NDArray[np.int64]  # (N, L) variable index of each (point, class), or -1
    blocks: Blocks
    limits: FoldLimits  # tol, tol_floor, max_iter, ... as the fold kernels read them
    settings: LooSettings
    seed: int
    active_set: bool
    coupled: bool  # a point's multipliers are coupled (ISVM, WW; not 1-vs-all)
    threads: int = 1  # the folds' threads ...
    pool: ThreadPoolExecutor | None = None  # ... where more than one
    # the dual's classes where it is L separate problems (1-vs-all): the finish then
    # runs per class (isvm.loo.separable); None otherwise
    parts: tuple[ClassPart, ...] | None = None
    #: the points' weights (the kernels are scaled by them, the coding's margins are
    #: them: :func:`isvm.solvers.weighted`); None unweighted
    weights: NDArray[np.float64] | None = None

    @property
    def n(self) -> int:
        return int(self.y_idx.shape[0])


@dataclass
class _Path:
    """One gamma's walk up the C grid: what each grid point hands the next."""

    prob: Problem
    cert: Certificate
    store: FoldStore  # each fold's solution and statuses at the previous C
    policy: PathPolicy
    # the full solution at C_prev and its scores: the next full fit's start and the
    # folds' shifted starts (empty arrays: none yet)
    full_prev: Dual = Dual(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0))
    previous: FullOptimum | None = None  # the exact full optimum at C_prev, if any


def loo_grid(
    X: ArrayLike,
    y: ArrayLike,
    method: str | Formulation,
    gammas: Sequence[float],
    Cs: Sequence[float],
    *,
    solver: str = "cd",
    tol: float = 1e-3,
    threads: int = 1,
    seed: int = 0,
    kernel_cache: MutableMapping | None = None,
    max_iter: int | None = None,
    n_classes: int | None = None,
    tol_floor: float = 1e-9,
    active_set: bool = True,
    settings: LooSettings = DEFAULT_SETTINGS,
    return_predictions: bool = False,
    progress: Callable[[int, int], None] | None = None,
    sample_weight: ArrayLike | None = None,
) -> pd.DataFrame | tuple[pd.DataFrame, NDArray]:
    """Exact LOO accuracy of ``method`` at every (gamma, C); one row per grid point.

    Rows come sorted by gamma (as given) then C ascending, with the columns of
    :data:`isvm.loo.records.GRID_COLUMNS`. ``iterations`` sums the epochs of the full
    fit and all folds; ``converged`` is False if the full fit or any fold hit
    ``max_iter`` (epochs per fit) unsettled, and ``n_capped`` counts those fits.
    ``n_uncertified`` counts folds whose prediction the certificate could not
    prove even at ``tol_floor`` (top-two score gap of order sqrt(tol_floor)):
    near-ties, decided by the solve. With ``return_predictions=True`` also returns
    the LOO predicted labels, shape (n_grid, N), rows in the order of the frame.

    ``active_set=True`` (the default) polishes each full fit to the exact optimum
    and solves the folds by active-set updates of its factorisation
    (:mod:`isvm.loo.full_fit`, :mod:`isvm.loo.fold_update`), falling back to cd per
    fold; ``False`` uses cd alone. Both are exact; the switch exists for benchmarks
    and checks, as does ``settings`` (:class:`~isvm.loo.settings.LooSettings`: the
    engine's budgets and thresholds, none of which changes a prediction).
    ``threads``: the folds of a grid point run on that many threads (the results do not
    depend on it). ``solver`` names the full fit's solver: ``"cd"``, the only one the
    engine has. ``progress(done, total)``, if given, is called after each grid point.
    ``sample_weight`` (positive, one per point) bounds point i's multipliers by
    ``C sample_weight[i]`` in the full problem and in every fold (a fold keeps the
    other points' weights: what a refit on the fold with the same weights solves);
    the engine solves it as :func:`isvm.solvers.weighted` says, certified as ever.
    """
    if solver != "cd":
        raise ValueError(
            f"loo_grid runs the cd solver (its certified folds are exact for any solver's "
            f"optimum); got solver={solver!r}"
        )
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    announce_compile()
    formulation = get_formulation(method) if isinstance(method, str) else method
    gammas, Cs = check_grid(gammas, Cs)
    classes, y_idx, n_classes = encode_labels(y, n_classes)
    kernels = grid_kernels(X, gammas, kernel_cache)
    if next(iter(kernels.values())).shape[0] != y_idx.shape[0]:
        raise ValueError("X and y have different numbers of samples")
    weights = None if sample_weight is None else check_weights(sample_weight, y_idx.shape[0])
    job = _job(
        formulation,
        y_idx,
        classes,
        n_classes,
        tol=tol,
        tol_floor=tol_floor,
        max_iter=max_iter,
        seed=seed,
        active_set=active_set,
        settings=settings,
        weights=weights,
    )
    # identical points share a group only with equal weights (identical scaled features)
    geometry = duplicate_groups(X if weights is None else _with_weights(X, weights), y_idx)
    rows, preds = _walk(job, kernels, geometry, Cs, threads, progress)
    frame = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    if return_predictions:
        return frame, np.array(preds)
    return frame


def _with_weights(X: ArrayLike, weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """The rows of X with their weights as one more column (for :func:`duplicate_groups`)."""
    X = np.asarray(X, dtype=np.float64)
    return np.column_stack([X.reshape(X.shape[0], -1), weights])


def _walk(job: _Job, kernels: dict, groups, Cs, threads: int, progress) -> tuple[list, list]:
    """Every gamma's C path, in order: the grid rows and each row's LOO predictions."""
    group, group_mixed = groups
    total = len(kernels) * len(Cs)
    rows, preds = [], []
    previous_threads = numba.get_num_threads()
    # the full fit's parallel gathers (isvm.loo.full_fit) on as many threads as the folds
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    job.threads = threads
    job.pool = ThreadPoolExecutor(threads) if threads > 1 else None
    # BLAS on one thread: a multi-threaded factorisation rounds differently with the
    # thread count, which moved iteration and uncertified-fold counts (never a
    # prediction) between runs with different `threads`; the folds are the parallel part.
    # (Set once here: entering threadpool_limits costs about 1 ms, per grid point a
    # tenth of an Ns = 50 job.)
    blas_limit = threadpool_limits(limits=1)
    try:
        for gamma, K in kernels.items():
            if job.weights is not None:
                K = weighted_kernel(K, job.weights)  # its coding: _job
            path = _start_path(job, K, group, group_mixed)
            for t, C in enumerate(Cs):
                row, pred = _grid_point(job, path, t, gamma, C)
                rows.append(row)
                preds.append(pred)
                if progress is not None:
                    progress(len(rows), total)
    finally:
        if job.pool is not None:
            job.pool.shutdown()
            job.pool = None
        numba.set_num_threads(previous_threads)
        blas_limit.restore_original_limits()
    return rows, preds


def _job(
    formulation: Formulation,
    y_idx: NDArray[np.int64],
    classes: NDArray,
    n_classes: int,
    *,
    tol: float,
    tol_floor: float,
    max_iter: int | None,
    seed: int,
    active_set: bool,
    settings: LooSettings,
    weights: NDArray[np.float64] | None = None,
) -> _Job:
    """The coding, variables and fold settings of one call."""
    coding = formulation.encode(y_idx, n_classes)
    if weights is not None:
        coding = weighted_coding(coding, weights)
    var_i, var_j = variable_list(coding)
    var_id = np.full(coding.var_mask.shape, -1, dtype=np.int64)
    var_id[var_i, var_j] = np.arange(var_i.shape[0])
    cap = DEFAULT_MAX_EPOCHS if max_iter is None else int(max_iter)
    n = y_idx.shape[0]
    return _Job(
        coding=coding,
        y_idx=y_idx,
        classes=classes,
        A=np.ascontiguousarray(formulation.decision_matrix(n_classes)),
        var_i=var_i,
        var_j=var_j,
        var_id=var_id,
        blocks=Blocks(
            np.arange(n, dtype=np.int64), coding.var_mask, coding.block_w, float(coding.block_sigma)
        ),
        limits=FoldLimits(
            float(tol),
            float(tol_floor),
            cap,
            float(formulation.score_diff_norm),
            settings.active_max_iter,
            settings.active_max_changed,
            ACTIVE_PATIENCE,
            ACTIVE_PD_MAX_TOUCHED,
        ),
        settings=settings,
        seed=seed,
        active_set=active_set,
        coupled=coding.block_sigma != 0.0,
        parts=separable_parts(coding) if settings.separable_finish else None,
        weights=weights,
    )


def _column_factor(job: _Job) -> float:
    """The certificate's ``column_factor``: 1 / kappa where the dual is separate problems
    by coding column and the decision reads each column as its class (1-vs-all), so the
    folds certify class by class; 0 otherwise or where the settings say no."""
    by_column = (
        job.settings.certify_by_column
        and separable_by_column(job.coding)
        and job.A.shape[0] == job.A.shape[1]
        and bool(np.all(job.A == np.eye(job.A.shape[0])))
    )
    return 1.0 / job.limits.kappa if by_column else 0.0


def _start_path(job: _Job, K: NDArray[np.float64], group, group_mixed) -> _Path:
    """A gamma's path before its first C: the problem, the certificate's geometry, an
    empty fold store."""
    n, n_classes = job.n, job.coding.var_mask.shape[1]
    geometry = kernel_geometry(K, group, group_mixed)
    column_factor = _column_factor(job)
    # a standing proof: (C, bound, rate), or per column (C, -, -, bounds, rates)
    proof_width = 3 + (2 * job.coding.n_columns if column_factor > 0.0 else 0)
    return _Path(
        prob=problem_of(K, job.coding, job.var_i, job.var_j),
        cert=Certificate(job.A, job.limits.kappa * geometry.radius, *geometry[1:], column_factor),
        store=FoldStore(
            np.zeros((n, n, n_classes)),
            np.zeros((n, job.coding.n_columns, n)),
            np.zeros((n, n)),
            np.zeros((n, job.var_i.shape[0]), dtype=np.int8),  # statuses at the previous C
            np.zeros(n, dtype=np.bool_),
            np.zeros((n, proof_width)),  # no standing proofs yet
        ),
        policy=PathPolicy(
            job.settings, n, job.var_i.shape[0], job.coupled, active_set=job.active_set
        ),
    )


def _grid_point(job: _Job, path: _Path, t: int, gamma: float, C: float) -> tuple[GridRow, NDArray]:
    """Grid point t of the path: the full fit, every fold; its row and LOO predictions."""
    start = time.perf_counter()
    n, policy = job.n, path.policy
    policy.start_point(t)
    first, C_prev = policy.first, policy.C_prev
    alpha = None if first else _path_start(path.full_prev.alpha, C, C_prev)
    state = SolverState.start(path.prob.K, job.coding, alpha)
    full_seed = derive_seed(job.seed, "loo-full", gamma, C)
    fold_seeds = np.array(
        [derive_seed(job.seed, "loo-fold", gamma, C, p) for p in range(n)], dtype=np.uint64
    )
    optimum, full_epochs, full_conv = _full_fit(job, path, state, C, full_seed, fold_seeds)
    # the full statuses the folds' statuses at the previous C go with
    base = np.zeros(0, np.int8) if path.previous is None else path.previous.status
    path.previous = optimum
    plan = policy.fold_plan(C)
    step = PathStep(
        float(C), -1.0 if first else C / C_prev, fold_seeds, base, *path.full_prev, *plan
    )
    fac = optimum.factor(job.var_id) if optimum is not None and not policy.cd_mode else NO_FACTOR
    out = FoldOutput.empty(n)
    args = (path.prob, job.blocks, path.cert, step, state.dual, fac, path.store, job.limits, out)
    if job.pool is None:
        fit_folds(*args, 0, 1)
    else:  # the folds interleaved over the threads: each call releases the GIL
        threads = job.threads
        list(job.pool.map(lambda first: fit_folds(*args, first, threads), range(threads)))
    policy.after_folds(
        C,
        epochs=out.epochs,
        certified=out.certified,
        prev_try=out.prev_try,
        shift_try=out.shift_try,
        warm=out.warm,
        full_epochs=full_epochs,
        n_free=int(np.count_nonzero((state.alpha > 0.0) & (state.alpha < C))),
    )
    n_errors = int(np.count_nonzero(out.pred != job.y_idx))
    n_capped = int(np.count_nonzero(~out.settled)) + (0 if full_conv else 1)
    row = GridRow(
        gamma=gamma,
        C=C,
        loo_accuracy=1.0 - n_errors / n,
        n_errors=n_errors,
        n_support=int(np.count_nonzero(state.alpha.any(axis=1))),
        iterations=int(full_epochs + out.epochs.sum()),
        converged=n_capped == 0,
        n_uncertified=int(np.count_nonzero(~out.certified)),
        n_capped=n_capped,
        seconds=time.perf_counter() - start,
    )
    # the state is this grid point's own (the next one's start copies): no copies here
    path.full_prev = state.dual
    return row, job.classes[out.pred]


def _full_fit(
    job: _Job, path: _Path, state: SolverState, C: float, seed: int, fold_seeds: NDArray
) -> tuple[FullOptimum | None, int, bool]:
    """Solve the full problem at C in place on ``state``, as the path's policy says.

    Returns (the exact optimum or None, epochs, converged). A cd solve first (rough
    where the finish follows along the path); then the finish where the policy takes
    it, or, without it (cd mode), cd on to the tolerance the folds start from.
    """
    policy = path.policy
    first_tol, cd_tol = policy.full_fit_tol(job.limits.tol), policy.cd_tol(job.limits.tol)
    epochs, converged = _cd(job, state, C, first_tol, job.limits.max_iter, seed)

    def run_probe(points, budget, pooled):  # reads the full solution as it is then
        args = (path.prob, job.blocks, path.cert, state.dual, points, fold_seeds, C)
        return probe_folds(*args, job.limits.tol, budget, pooled)

    probe = FoldProbe(run_probe, job.n, job.settings)
    optimum = None
    if policy.choose_finish(C, probe):
        optimum = _finish(job, path, state, C, seed, policy.finish_max_free)
        if optimum is not None:  # the exact optimum: counts as converged
            state.alpha, state.S, state.ssum = optimum.alpha, optimum.S, optimum.ssum
        policy.after_finish(optimum is not None, probe)
    if optimum is not None:
        return optimum, epochs + optimum.iterations, True
    if first_tol > cd_tol:
        more, converged = _cd(job, state, C, cd_tol, max(job.limits.max_iter - epochs, 1), seed)
        epochs += more
    return None, epochs, converged


def _cd(job: _Job, state: SolverState, C: float, tol: float, budget: int, seed: int):
    """(epochs, converged) of the full fit's cd solve to ``tol`` on ``state``, in place."""
    epochs, converged, _ = run_solver(
        state,
        job.var_i,
        job.var_j,
        C,
        solver="cd",
        tol=tol,
        max_iter=budget,
        seed=seed,
        greedy=False,
    )
    return epochs, converged


def _finish(
    job: _Job, path: _Path, state: SolverState, C: float, seed: int, max_free: int
) -> FullOptimum | None:
    """The active-set finish from ``state`` (class by class where the dual is separate
    problems and the rough start is large), or None where it gives up."""
    options = dict(
        max_iter=job.limits.max_iter,
        max_free=max_free,
        outside_max_entries=job.settings.outside_max_entries,
        seed=seed,
        previous=path.previous,
    )
    n_free = np.count_nonzero((state.alpha > 0.0) & (state.alpha < C))
    if job.parts is not None and n_free >= job.settings.separable_min_free:
        return exact_separable_fit(
            path.prob.K, job.parts, job.var_i.shape[0], state.alpha, C, **options
        )
    return exact_full_fit(path.prob.K, job.coding, job.var_i, job.var_j, state.alpha, C, **options)
