"""Exact leave-one-out accuracy over a (gamma, C) grid: the path driver (:func:`loo_grid`).

For every grid point the engine fits the full data once and then each held-out
problem ("fold"). It is exact (every fold's prediction is that of the fold
problem's true optimum) and fast, through warm starts that are all feasible as
they stand (the dual has no equality constraint):

1. one kernel matrix per gamma, shared by all C values, folds and (through
   ``kernel_cache``) methods;
2. the full fit walks the C path upwards from ``min(alpha * C/C_prev, C)``: a
   rough cd solve (max KKT violation ``settings.active_presolve_tol``) finds the
   sets of variables at 0, free and at C, and an **active-set finish**
   (:mod:`isvm.loo.full_fit`) solves the free set's linear system exactly and keeps
   the inverse of its block of Q, starting from the previous C's sets and updating
   its inverse (block updates, checked) rather than factorising afresh; where the
   dual is L separate problems (1-vs-all), class by class (:mod:`isvm.loo.separable`);
3. each fold is the full problem with the held-out point's multipliers fixed at
   0, so it is solved from the full optimum by **active-set updates of that
   inverse** (:mod:`isvm.loo.fold_update`: a Schur complement per changed variable,
   no new factorisation); usually a handful of primal-dual steps to the fold's exact
   optimum (seeded with the fold's own statuses at the previous C), and the
   decremental path (the point's multipliers scaled down to 0, one status change per
   step) where those stop making progress. Folds where the update gives up (step or
   size budget, a singular face) keep the fold's own solution at the previous C,
   moved as the full solution moved, where it proves the prediction at once, and
   otherwise fall back to cd from the best (by duality gap) of that start, the full
   solution with the point's multipliers removed and the fold's own solution at the
   previous C, scaled by C/C_prev (:mod:`isvm.loo.folds`);
4. **certified predictions**: for any feasible point of a fold's dual,
   ``||w - w*||^2 <= 2 (D* - D(alpha))``, bounded by the duality gap or, sharper at
   large C, per point by a model that the kernel's smallest eigenvalue over distinct
   points makes an upper bound (:func:`isvm.solvers._core.suboptimality`); a
   class-score difference at the held-out point moves by at most
   ``kappa * r_p * ||w - w*||``, with ``r_p <= sqrt(K_pp)`` the norm of the point's
   projection onto the fold's training span (:mod:`isvm.loo.certificate`; kappa =
   sqrt(2) for ISVM, OVA, WW; 2 for WW with the appendix-E kernel). Every fold,
   however it was solved, stops only when its top score beats the runner-up by more
   than that bound; folds the bound cannot settle (near-ties) run to ``tol`` and
   then tighter, and are counted in ``n_uncertified``. The active-set steps are
   therefore an accelerator, never trusted blindly;
5. folds run in parallel (numba ``prange``); each has its own random stream
   derived from ``(seed, gamma, C, point)``, so results do not depend on the
   number of threads;
6. **the strategy is measured, per grid point**: where a few probe folds are
   certified by cd within ``settings.probe_epochs`` epochs from the full solution
   (at a path's first C: within twice that, and that on average)
   (z-scored features: a nearly diagonal kernel, where a held-out point disturbs
   only its kernel neighbours), the grid point runs in cd mode: no active-set
   finish, the full fit solved to ``settings.cd_full_tol_factor`` x tol (or to
   ``cd_full_tol_factor_certified`` x tol where the last grid point certified every
   fold), the folds by cd alone; a cd-mode grid point whose epochs (its folds'
   and, past the path's first C, its full fit's) exceed
   ``settings.cd_max_mean_epochs`` per fold hands the next one back to the
   active set (so does one where, for coupled formulations, the epochs above
   ``cd_rent_mean_epochs`` per fold, summed along the path, outgrow the price of
   one exact finish: rent or buy; a probe that sends the path straight back to cd
   mode after a hand-back doubles both thresholds for the next one, so the path
   cannot flap between the modes, paying a fresh finish each time),
   and one whose C jumped (``settings.cd_recheck_ratio``: the path's start) is
   handed back beforehand if a sample of its folds averages more.
   Counts, not timings, decide, so a run is reproducible to the iteration.

The class set is that of ``y`` (or ``0..n_classes-1`` when given): a fold keeps
all L classes even when the held-out point was the only one of its class.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field

import numba
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from isvm.loo.bundles import NO_FACTOR, Certificate, FoldOutput, FoldStore, PathStep
from isvm.loo.certificate import duplicate_groups, kernel_geometry
from isvm.loo.folds import fit_folds, probe_folds
from isvm.loo.full_fit import FullOptimum, exact_full_fit
from isvm.loo.grid import check_grid
from isvm.loo.inputs import encode_labels, grid_kernels
from isvm.loo.records import GRID_COLUMNS, GridRow
from isvm.loo.separable import ClassPart, exact_separable_fit, separable_parts
from isvm.loo.settings import DEFAULT_SETTINGS, FoldSettings, LooSettings
from isvm.methods import Coding, Formulation, get_formulation, separable_by_column
from isvm.seeding import derive_seed
from isvm.solvers import DEFAULT_MAX_EPOCHS, SolverState, problem_of, run_solver, variable_list
from isvm.solvers._core import Blocks, Dual, Problem


def _path_start(alpha: NDArray, C: float, C_prev: float) -> NDArray:
    """The full fit's start at C from its solution at C_prev < C.

    With no multiplier at its bound C_prev, the solution stays optimal for every
    larger C (the bound's KKT multipliers are zero), so it is kept as it is;
    otherwise the multipliers are scaled by C / C_prev (those at the bound stay there).
    """
    if alpha.max() < C_prev:
        return alpha
    return np.minimum(alpha * (C / C_prev), C)


class _Probe:
    """What a grid point's folds cost by cd alone (:func:`isvm.loo.folds.probe_folds`).

    A few evenly spaced folds are solved by cd from the full solution without their
    point. :meth:`cheap` (to enter cd mode): each certified within
    ``settings.probe_epochs`` epochs, so the kernel is local enough (z-scored
    features: nearly diagonal) that the active-set finish and its factorisation would
    cost more than they save. At a path's first C (``start``), where the probe is all
    the engine knows and a wrong verdict holds for the doubling wait before the next
    probe, each within twice ``probe_epochs`` and their mean within ``probe_epochs``:
    one slow fold in the sample (letter Ns 200 ISVM started at C = 9.6: 7 of 8 folds
    certified within 2 epochs, the eighth in 4) sent that whole path to the finish at
    5-10 times cd mode's cost (docs/benchmarks.md, round 21). Along a path the strict
    rule stays: the relaxed one there moved abalone Ns 500 ISVM into cd mode at grid
    points where it cost more (+2% iterations), and one uncertified fold in the sample
    still keeps the finish everywhere (satimage on [0, 1] features).
    :meth:`still_cheap` (to stay in it, checked before a cd-mode grid point's N
    folds where C jumped by more than
    ``settings.cd_recheck_ratio``): their mean epochs within
    ``settings.cd_max_mean_epochs``, the rule by which a grid point's folds hand the
    next one back, applied to the sample beforehand. The sample shares one budget (the
    most that passes, plus one epoch), so its sum is exact wherever the verdict needs
    it: a per-fold cap (twice the mean, before) counted satimage N = 300 [0, 1] ISVM's
    folds at gamma 10, C = 2.6 as 1, 1, 0, 1, 8, 1, 8, 8 (mean 3.5) where they took
    1, 1, 0, 1, 8, 1, 120, 8, and that grid point's cd folds then cost 444 ms against
    about 60 ms for the active set's (docs/benchmarks.md, round 28).
    """

    def __init__(self, prob, blocks, cert, seeds, C, tol, settings: LooSettings) -> None:
        n = prob.K.shape[0]
        count = min(n, settings.probe_folds)
        self.points = np.unique(np.linspace(0, n - 1, count).round().astype(np.int64))
        self.args = (prob, blocks, cert)
        self.seeds, self.C, self.tol = seeds, float(C), float(tol)
        self.settings = settings

    def _run(
        self, full, budget: int, pooled: bool = False
    ) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
        return probe_folds(
            *self.args, full, self.points, self.seeds, self.C, self.tol, budget, pooled
        )

    @property
    def _off(self) -> bool:
        """No folds to probe, or probing switched off (``probe_epochs <= 0``): never cheap."""
        return self.points.shape[0] == 0 or self.settings.probe_epochs <= 0

    def _sample(self, full, mean_max: float) -> tuple[bool, bool]:
        """(every probe fold certified, their mean epochs at most ``mean_max``), each
        fold run for at most twice ``mean_max`` epochs (an uncertified one counts with
        the whole budget it used)."""
        certified, epochs = self._run(full, max(1, int(2 * mean_max)))
        return bool(certified.all()), bool(epochs.mean() <= mean_max)

    def cheap(self, full, start: bool = False) -> bool:
        if self._off:
            return False
        if start:
            return all(self._sample(full, self.settings.probe_epochs))
        return bool(self._run(full, self.settings.probe_epochs)[0].all())

    def still_cheap(self, full) -> bool:
        if self._off:
            return False
        most = int(self.settings.cd_max_mean_epochs * self.points.shape[0])
        return bool(self._run(full, most + 1, pooled=True)[1].sum() <= most)


class _Backoff:
    """When active-set mode probes again: after each failed probe or hand-back the wait
    doubles (1, 2, 4, ... grid points), so a path that never suits cd alone ([0, 1]
    features, dense kernels) pays for a few probes, not one per grid point."""

    def __init__(self) -> None:
        self.wait, self.next = 1, 0

    def due(self, t: int) -> bool:
        return t >= self.next

    def failed(self, t: int) -> None:
        self.wait *= 2
        self.next = t + self.wait


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
    cfg: FoldSettings
    settings: LooSettings
    tol: float
    cap: int  # epochs per fit
    seed: int
    active_set: bool
    # a point's multipliers are coupled (ISVM, WW: the solvers' block criterion,
    # isvm.solvers.run_solver); 1-vs-all's dual is L separate problems, which one dense
    # factorisation of the whole free set serves badly: it keeps the smaller finish
    coupled: bool
    # the dual's classes where it is L separate problems (1-vs-all): the finish then
    # runs per class (isvm.loo.separable); None otherwise
    parts: tuple[ClassPart, ...] | None = None

    @property
    def n(self) -> int:
        return int(self.y_idx.shape[0])


@dataclass
class _Path:
    """One gamma's walk up the C grid: what each grid point hands the next."""

    prob: Problem
    cert: Certificate
    store: FoldStore  # each fold's solution and statuses at the previous C
    # the full solution at C_prev and its scores: the next full fit's start and the
    # folds' shifted starts (empty arrays: none yet)
    full_prev: Dual = Dual(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0))
    C_prev: float | None = None
    previous: FullOptimum | None = None  # the exact full optimum at C_prev, if any
    cd_mode: bool = False  # the folds are cheap for cd alone: no active-set finish
    handed_back: bool = False  # cd mode ended at the last grid point
    # cd folds proved dear on this path (a hand-back): the finish may then take free
    # sets up to settings.finish_max_free_dear, until a probe finds cd cheap
    dear_cd: bool = False
    # how much more evidence the next hand-back needs: doubled each time a probe after
    # the finish sends the path straight back to cd mode (the hand-back was not needed),
    # so a path cannot flap between the modes, paying a fresh finish at each return
    hand_back_scale: float = 1.0
    probed: bool = False  # cd mode was chosen by a probe (not forced by a failed finish)
    backoff: _Backoff = field(default_factory=_Backoff)
    # cd mode's excess work so far (variable visits of fold epochs above
    # settings.cd_rent_mean_epochs per fold), weighed against one exact finish
    cd_rent: float = 0.0
    # the last grid point certified every fold: a cd-mode full fit may then stop at
    # settings.cd_full_tol_factor_certified x tol (near-ties want the tight one)
    all_certified: bool = False
    # the share of the folds that tried their solution at C_prev and were proved by it,
    # at the last grid point where some tried (settings.prev_try_min_share)
    prev_try_share: float = 1.0
    # (N,) which folds the shifted start proved at the last grid point where they tried
    # it before their active-set update (None: none tried yet)
    shift_proved: NDArray[np.bool_] | None = None
    # whether the folds' active-set updates start from their statuses at C_prev (all
    # but a rotating sample, which goes the other way: :func:`_warm_choice`); not until
    # the sample shows it pays: where it first can (C / C_prev up to 1.5), it cost more
    # than it saved in every cell measured (docs/benchmarks.md, round 28)
    warm_first: bool = False

    @property
    def first(self) -> bool:
        """At the path's first C (solved from zero)."""
        return self.C_prev is None


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
    ``progress(done, total)``, if given, is called after each grid point.
    """
    if solver != "cd":
        raise ValueError(
            f"loo_grid runs the cd solver (its certified folds are exact for any solver's "
            f"optimum); got solver={solver!r}"
        )
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    formulation = get_formulation(method) if isinstance(method, str) else method
    gammas, Cs = check_grid(gammas, Cs)
    classes, y_idx, n_classes = encode_labels(y, n_classes)
    kernels = grid_kernels(X, gammas, kernel_cache)
    if next(iter(kernels.values())).shape[0] != y_idx.shape[0]:
        raise ValueError("X and y have different numbers of samples")
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
    )
    group, group_mixed = duplicate_groups(X, y_idx)
    rows, preds = [], []
    previous_threads = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    # BLAS on one thread: a multi-threaded factorisation rounds differently with the
    # thread count, which moved iteration and uncertified-fold counts (never a
    # prediction) between runs with different `threads`; the folds are the parallel part.
    # (Set once here: entering threadpool_limits costs about 1 ms, per grid point a
    # tenth of an Ns = 50 job.)
    blas_limit = threadpool_limits(limits=1)
    try:
        for gamma in gammas:
            path = _start_path(job, kernels[gamma], group, group_mixed)
            for t, C in enumerate(Cs):
                row, pred = _grid_point(job, path, t, gamma, C)
                rows.append(row)
                preds.append(pred)
                if progress is not None:
                    progress(len(rows), len(gammas) * len(Cs))
    finally:
        numba.set_num_threads(previous_threads)
        blas_limit.restore_original_limits()
    frame = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    if return_predictions:
        return frame, np.array(preds)
    return frame


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
) -> _Job:
    """The coding, variables and fold settings of one call."""
    coding = formulation.encode(y_idx, n_classes)
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
        cfg=settings.fold(
            tol=tol, tol_floor=tol_floor, max_epochs=cap, kappa=formulation.score_diff_norm
        ),
        settings=settings,
        tol=float(tol),
        cap=cap,
        seed=seed,
        active_set=active_set,
        coupled=coding.block_sigma != 0.0,
        parts=separable_parts(coding) if settings.separable_finish else None,
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
    return 1.0 / job.cfg.kappa if by_column else 0.0


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
        cert=Certificate(job.A, job.cfg.kappa * geometry.radius, *geometry[1:], column_factor),
        store=FoldStore(
            np.zeros((n, n, n_classes)),
            np.zeros((n, job.coding.n_columns, n)),
            np.zeros((n, n)),
            np.zeros((n, job.var_i.shape[0]), dtype=np.int8),  # statuses at the previous C
            np.zeros(n, dtype=np.bool_),
            np.zeros((n, proof_width)),  # no standing proofs yet
        ),
    )


def _grid_point(job: _Job, path: _Path, t: int, gamma: float, C: float) -> tuple[GridRow, NDArray]:
    """Grid point t of the path: the full fit, every fold; its row and LOO predictions."""
    start = time.perf_counter()
    n = job.n
    K = path.prob.K
    alpha = None if path.first else _path_start(path.full_prev.alpha, C, path.C_prev)
    state = SolverState.start(K, job.coding, alpha)
    full_seed = derive_seed(job.seed, "loo-full", gamma, C)
    fold_seeds = np.array(
        [derive_seed(job.seed, "loo-fold", gamma, C, p) for p in range(n)], dtype=np.uint64
    )
    probe = _Probe(path.prob, job.blocks, path.cert, fold_seeds, C, job.tol, job.settings)
    first = path.first
    optimum, full_epochs, full_conv = _full_fit(job, path, state, t, C, full_seed, probe)
    # the full statuses the folds' statuses at the previous C go with
    base = np.zeros(0, np.int8) if path.previous is None else path.previous.status
    path.previous = optimum
    step = PathStep(
        float(C),
        -1.0 if first else C / path.C_prev,
        fold_seeds,
        base,
        *path.full_prev,
        _prev_tries(n, t, path.prev_try_share, job.settings),
        _shift_tries(n, t, path.shift_proved, job.settings),
        _warm_choice(n, t, path.warm_first, 0.0 if first else C / path.C_prev, job.settings),
    )
    fac = optimum.factor(job.var_id) if optimum is not None and not path.cd_mode else NO_FACTOR
    out = FoldOutput.empty(n)
    fit_folds(path.prob, job.blocks, path.cert, step, state.dual, fac, path.store, job.cfg, out)
    tried = int(np.count_nonzero(out.prev_try >= 0))
    if tried:
        path.prev_try_share = np.count_nonzero(out.prev_try == 1) / tried
    path.shift_proved = _shift_outcomes(out.shift_try, path.shift_proved)
    path.warm_first = _warm_outcome(out.warm, out.epochs, path.warm_first)
    _hand_back(job, path, t, out, 0 if first else full_epochs, state.alpha, C)
    path.all_certified = bool(out.certified.all())
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
    path.full_prev, path.C_prev = state.dual, C
    return row, job.classes[out.pred]


def _prev_tries(n: int, t: int, share: float, settings: LooSettings) -> NDArray[np.bool_]:
    """Which folds try their own solution at C_prev first (:class:`PathStep`): all of
    them while that proved at least ``settings.prev_try_min_share`` of those that tried
    at the last grid point, else every ``prev_try_sample``-th (offset by the grid
    index t, so each fold is sampled in turn): the sample notices when it pays again."""
    if share >= settings.prev_try_min_share:
        return np.ones(n, dtype=np.bool_)
    return _rotating_sample(n, t, settings)


def _shift_tries(
    n: int, t: int, proved: NDArray[np.bool_] | None, settings: LooSettings
) -> NDArray[np.bool_]:
    """Which folds try the shifted start before their active-set update
    (:class:`PathStep`): those it proved when they last tried it, and every
    ``settings.prev_try_sample``-th of the others (offset by t, each in turn); all of
    them before any tried. Yeast Ns 500 ISVM z-score, C = 25.1-26.1 and 40.6: it proves 75-82%
    of the folds it proved at the previous C, 19-21% of the others, and a try that fails
    costs up to a third of an update (its certificate spends every per-point model); on
    [0, 1] features it proves next to none."""
    if proved is None:
        return np.ones(n, dtype=np.bool_)
    return proved | _rotating_sample(n, t, settings)


def _shift_outcomes(
    tries: NDArray[np.int8], proved: NDArray[np.bool_] | None
) -> NDArray[np.bool_] | None:
    """:func:`_shift_tries`'s memory after a grid point: each fold that tried the
    shifted start (``tries`` >= 0) records whether it proved it (1); the others keep
    their record. None while no fold has tried."""
    tried = tries >= 0
    if not tried.any():
        return proved
    kept = np.zeros(tries.shape[0], dtype=np.bool_) if proved is None else proved.copy()
    kept[tried] = tries[tried] == 1
    return kept


def _warm_choice(
    n: int, t: int, warm_first: bool, scale: float, settings: LooSettings
) -> NDArray[np.bool_]:
    """Which folds start their active-set update from their own statuses at C_prev
    (:class:`PathStep`): all (``warm_first``) or none, but for every
    ``settings.prev_try_sample``-th fold (offset by t), which goes the other way, so
    that the grid point measures both (:func:`_warm_outcome`). Whether the guess pays
    depends on the data and on how far C moved (``scale``, C / C_prev); set updates
    with and without it (docs/benchmarks.md, round 28): satimage N = 300 [0, 1] ISVM
    at C = 7.6 (scale 1.49) 1,942 against 1,215, at C = 30.1 (1.09) 944 against 1,026;
    yeast Ns 500 z-score ISVM at C = 1.6 (1.45) 3,950 against 2,099, at C = 10.1 (1.05)
    1,236 against 1,628; abalone Ns 500 ISVM at C = 4.6 (1.12) 1,895 against 3,484;
    vehicle Ns 500 [0, 1] ISVM at C = 5.1 (1.11) 4,972 against 2,987. Where the guess
    won the last comparison and C grew by at most ``settings.warm_sample_ratio``, every
    fold takes it: the sample costs what the guess saves on it (abalone: 12% more set
    updates over a whole path)."""
    if warm_first and scale <= settings.warm_sample_ratio:
        return np.ones(n, dtype=np.bool_)
    sample = _rotating_sample(n, t, settings)
    return ~sample if warm_first else sample


def _warm_outcome(warm: NDArray[np.int8], epochs: NDArray[np.int64], warm_first: bool) -> bool:
    """:func:`_warm_choice`'s default for the next grid point: whether the folds whose
    update started from their statuses at C_prev (``warm`` 1) took at most as many set
    updates and epochs on average as those that could have and did not (0); unchanged
    unless both kinds ran."""
    seeded, unseeded = warm == 1, warm == 0
    if not seeded.any() or not unseeded.any():
        return warm_first
    return bool(epochs[seeded].mean() <= epochs[unseeded].mean())


def _rotating_sample(n: int, t: int, settings: LooSettings) -> NDArray[np.bool_]:
    """Every ``settings.prev_try_sample``-th of n folds, offset by the grid index t."""
    k = settings.prev_try_sample
    return np.arange(n) % k == t % k


def _full_fit(
    job: _Job, path: _Path, state: SolverState, t: int, C: float, seed: int, probe: _Probe
) -> tuple[FullOptimum | None, int, bool]:
    """Solve the full problem at C in place on ``state``, choosing the path's mode.

    Returns (the exact optimum or None, epochs, converged). The first C of a path is
    solved tightly and probed before the active-set finish is paid for; later ones
    need only a rough start for it. Without the finish (cd mode) the folds start from
    this solution: solved to a fraction of tol, their cd moves only what the held-out
    point disturbed.
    """
    settings = job.settings
    first = path.first
    active = job.active_set and not path.cd_mode
    full_tol = job.tol * settings.cd_full_tol_factor
    # without the finish, the folds start from this solution: where the last grid
    # point's folds were all certified, a looser one serves them as well
    cd_tol = job.tol * settings.cd_full_tol_factor_certified if path.all_certified else full_tol
    # (after cd mode, a tight start too: the finish from a rough one costs more there,
    # glass Ns 200 1-vs-all: 1.2 s against 0.16 s)
    rough = active and not first and not path.handed_back
    if rough:
        pre_tol = max(job.tol, settings.active_presolve_tol)
    else:
        pre_tol = full_tol if active else cd_tol
    epochs, converged, _ = run_solver(
        state,
        job.var_i,
        job.var_j,
        C,
        solver="cd",
        tol=pre_tol,
        max_iter=job.cap,
        seed=seed,
        greedy=False,
    )
    if active and first:
        if probe.cheap(state.dual, start=True):
            active, path.cd_mode, path.probed, path.dear_cd = False, True, True, False
        else:
            path.backoff.failed(t)
    elif (
        path.cd_mode
        and path.probed
        and C > settings.cd_recheck_ratio * path.C_prev
        and not probe.still_cheap(state.dual)
    ):
        # after a jump in C the last grid point's counts are stale (at the path's first
        # C every multiplier sits at its bound and any probe passes, whatever the
        # kernel): a sample of folds first
        active, path.cd_mode = job.active_set, False
        path.backoff.failed(t)
    optimum = None
    if active:
        finish = dict(
            settings=settings,
            max_free=settings.finish_max_free_dear
            if path.dear_cd and job.coupled
            else settings.finish_max_free,
            retries=_finish_retries(settings, job.cap),
            seed=seed,
            previous=path.previous,
        )
        if job.parts is not None and (
            np.count_nonzero((state.alpha > 0.0) & (state.alpha < C)) >= settings.separable_min_free
        ):
            optimum = exact_separable_fit(
                path.prob.K, job.parts, job.var_i.shape[0], state.alpha, C, **finish
            )
        else:
            optimum = exact_full_fit(
                path.prob.K, job.coding, job.var_i, job.var_j, state.alpha, C, **finish
            )
        # no exact optimum (too many free variables, or the sets never settled): the
        # folds run cd, and so does the next grid point
        path.cd_mode, path.probed = optimum is None, False
    if optimum is not None:  # the exact optimum: counts as converged
        state.alpha, state.S, state.ssum = optimum.alpha, optimum.S, optimum.ssum
        epochs, converged = epochs + optimum.iterations, True
        if not first and path.backoff.due(t):
            if probe.cheap(state.dual):
                if path.dear_cd:  # the last hand-back is reversed
                    path.hand_back_scale *= 2.0
                path.cd_mode, path.probed, path.dear_cd = True, True, False
            else:
                path.backoff.failed(t)
    elif pre_tol > cd_tol:
        more, converged, _ = run_solver(
            state,
            job.var_i,
            job.var_j,
            C,
            solver="cd",
            tol=cd_tol,
            max_iter=max(job.cap - epochs, 1),
            seed=seed,
            greedy=False,
        )
        epochs += more
    return optimum, epochs, converged


def _finish_retries(settings: LooSettings, cap: int) -> tuple[tuple[float, int], ...]:
    """The finish's cd restarts, (tol, epochs) each: 1e-5 and 1e-7 on at most 1,000
    epochs, then ``settings.finish_last_retry_tol`` (unless 0) on the fit's whole budget."""
    budgeted = ((1e-5, min(cap, 1000)), (1e-7, min(cap, 1000)))
    if settings.finish_last_retry_tol <= 0.0:
        return budgeted
    return (*budgeted, (settings.finish_last_retry_tol, cap))


def _hand_back(
    job: _Job,
    path: _Path,
    t: int,
    out: FoldOutput,
    full_epochs: int,
    alpha: NDArray[np.float64],
    C: float,
) -> None:
    """End cd mode where cd alone got expensive: the active set again at the next C.

    Its cost is the folds' epochs and, along the path, the tight full fit's
    (``full_epochs``: 0 at a path start from zero, which is not what the next grid
    point costs), per fold: above ``cd_max_mean_epochs`` it hands back at once. Where a
    point's multipliers are coupled, the epochs above ``cd_rent_mean_epochs`` per fold
    are also summed along the path, as variable visits, like rent: once they exceed the
    price of one exact finish (its factorisation, ``finish_visits_per_free_cubed`` per
    cubed free variable of this full fit, and no more free variables than the finish
    takes), it hands back, since from then on the active set's fold updates save that
    much per grid point again. Both thresholds are multiplied by the path's
    ``hand_back_scale``, which doubles each time a probe right after the finish sends
    the path back to cd mode (the hand-back was not needed): on vowel Ns 500 ISVM the
    path flapped between the modes at C = 1.6-4.6, each return to the active set paying
    a fresh finish over 1,300-2,800 free variables and active-set folds of 4-26 ms
    against cd folds of 1-2.5 ms (round 22 in docs/benchmarks.md).
    """
    settings = job.settings
    if not path.cd_mode:
        path.handed_back, path.cd_rent = False, 0.0
        return
    path_epochs = out.epochs.sum() + full_epochs
    scale = path.hand_back_scale
    dear = path_epochs > settings.cd_max_mean_epochs * job.n * scale
    if not dear and job.coupled:
        excess = path_epochs - settings.cd_rent_mean_epochs * job.n
        path.cd_rent += max(excess, 0.0) * job.var_i.shape[0]
        free = int(np.count_nonzero((alpha > 0.0) & (alpha < C)))
        price = settings.finish_visits_per_free_cubed * float(free) ** 3 * scale
        dear = free <= settings.finish_max_free_dear and path.cd_rent > price
    path.handed_back = dear
    if dear:
        path.cd_mode, path.dear_cd, path.cd_rent = False, True, 0.0
        path.backoff.failed(t)
