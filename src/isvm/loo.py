"""Exact leave-one-out (LOO) accuracy over a (gamma, C) grid.

For every grid point the engine fits the full data once and then each held-out
problem ("fold"). It is exact — every fold's prediction is that of the fold
problem's true optimum — and fast, through warm starts that are all feasible as
they stand (the dual has no equality constraint):

1. one kernel matrix per gamma, shared by all C values, folds and (through
   ``kernel_cache``) methods;
2. the full fit walks the C path upwards from ``min(alpha * C/C_prev, C)``: a
   rough cd solve (max KKT violation 0.1) finds the sets of variables at 0, free
   and at C, and an **active-set finish** (:mod:`isvm.solvers.active_set`) solves
   the free set's linear system exactly and keeps the inverse of its block of Q,
   starting from the previous C's sets and updating its inverse (block updates,
   checked) rather than factorising afresh;
3. each fold is the full problem with the held-out point's multipliers fixed at
   0, so it is solved from the full optimum by **active-set updates of that
   inverse** (a Schur complement per changed variable, no new factorisation);
   usually a handful of primal-dual steps to the fold's exact optimum (seeded with
   the fold's own statuses at the previous C, see ``ACTIVE_WARM_RATIO``), and the
   decremental path (the point's multipliers scaled down to 0, one status change per
   step) where those stop making progress. Folds where the update gives up (step or
   size budget, a singular face) fall back to cd from the better (by
   duality gap) of the full solution with the point's multipliers removed and the
   fold's own solution at the previous C, scaled by C/C_prev;
4. **certified predictions**: the bias-free primal is 1-strongly convex in w,
   so ``||w - w*||^2 <= 2 * gap`` (the duality gap, read from the scores at no
   extra kernel cost), and a class-score difference at the held-out point moves
   by at most ``kappa * sqrt(K_pp) * ||w - w*||`` (kappa = sqrt(2) for ISVM, OVA,
   WW; 2 for WW with the appendix-E kernel). Every fold, however it was solved,
   stops only when its top score beats the runner-up by more than that bound;
   folds the bound cannot settle (near-ties) run to ``tol`` and then tighter,
   and are counted in ``n_uncertified``. The active-set steps are therefore an
   accelerator, never trusted blindly;
5. folds run in parallel (numba ``prange``); each has its own random stream
   derived from ``(seed, gamma, C, point)``, so results do not depend on the
   number of threads.

The class set is that of ``y`` (or ``0..n_classes-1`` when given): a fold keeps
all L classes even when the held-out point was the only one of its class.
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping, Sequence

import numba
import numpy as np
import pandas as pd
from numba import njit, prange
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from isvm.kernels import rbf_from_distances, squared_distances
from isvm.methods import Formulation, coefficient_matrix, get_formulation
from isvm.seeding import derive_seed
from isvm.solvers import (
    DEFAULT_MAX_EPOCHS,
    SolverState,
    _core,
    active_set,
    run_solver,
    solve,
    variable_list,
)
from isvm.solvers.active_set import ActiveSet, full_active_set

#: active-set fold solves: at most this many set updates and freed outside variables,
#: then cd; primal-dual steps allowed without fewer infeasible variables before the
#: decremental path (see :func:`isvm.solvers.active_set.fold_active_set`)
ACTIVE_MAX_ITER = 300
ACTIVE_MAX_CHANGED = 1024
ACTIVE_PATIENCE = 3
#: a fold's statuses at the previous C seed its primal-dual steps when C grew by at most
#: this factor (further apart, the guess costs more than it saves)
ACTIVE_WARM_RATIO = 1.5
#: with the active-set finish, the full fit's cd only has to find the sets roughly
ACTIVE_PRESOLVE_TOL = 0.1

_NO_ACTIVE_SET = ActiveSet(
    np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int8),
    np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros((0, 0)),
    np.zeros((1, 1)), np.zeros(1), 0, np.zeros((0, 0)), np.zeros((0, 0)),
    np.zeros(1, dtype=np.int64),
)  # fmt: skip

COLUMNS = [
    "gamma", "C", "loo_accuracy", "n_errors", "n_support", "iterations", "converged",
    "n_uncertified", "n_capped", "seconds",
]  # fmt: skip


@njit(cache=True)
def _fold_solve(
    K,
    points,
    var_i,
    var_j,
    cols,
    vals,
    c,
    C,
    alpha,
    S,
    ssum,
    var_mask,
    block_w,
    block_sigma,
    tol,
    max_epochs,
    state,
    cert_point,
    A,
    scale,
):
    """One held-out solve: block updates where a point's multipliers are coupled."""
    if block_sigma != 0.0:
        return _core.block_epochs(
            K,
            points,
            var_i,
            var_j,
            cols,
            vals,
            c,
            C,
            alpha,
            S,
            ssum,
            var_mask,
            block_w,
            block_sigma,
            tol,
            max_epochs,
            state,
            cert_point,
            A,
            scale,
        )
    return _core.cd_epochs(
        K,
        var_i,
        var_j,
        cols,
        vals,
        c,
        C,
        alpha,
        S,
        ssum,
        tol,
        max_epochs,
        state,
        True,
        cert_point,
        A,
        scale,
    )


@njit(cache=True, parallel=True)
def _fold_fits(
    K,
    var_i,
    var_j,
    cols,
    vals,
    c,
    C,
    alpha_full,
    S_full,
    ssum_full,
    A,
    kappa,
    tol,
    tol_floor,
    max_epochs,
    seeds,
    var_mask,
    block_w,
    block_sigma,
    fold_alpha,
    fold_S,
    fold_ssum,
    scale_prev,
    use_active,
    active_max_iter,
    active_max_changed,
    active_patience,
    fold_status,
    fold_status_ok,
    status_prev,
    warm_max_ratio,
    var_id,
    status,
    free_vars,
    free_pos,
    Hinv,
    S_bound,
    ssum_bound,
    Q_out,
    Y_out,
    out_pos,
    pred,
    epochs,
    certified,
    settled,
):
    """Fit every held-out problem; fills pred, epochs, certified, settled and the fold store.

    Fold p starts from the better (smaller duality gap) of two feasible points: the
    full solution with p's multipliers removed, and its own solution at the previous
    C scaled by ``scale_prev = C / C_prev`` (exactly feasible when C ascends;
    ``scale_prev <= 0`` means there is none). With ``use_active`` (the full solution
    is the exact optimum, with its active set ``status``/``free_vars``/``Hinv``), an
    active-set solve from the full optimum comes first
    (:func:`isvm.solvers.active_set.fold_active_set`); it usually ends at the fold's
    exact optimum, and only when it does not are the two warm starts above used.
    That solve is seeded with ``fold_status[p]`` (the fold's statuses at the previous
    C, relative to the full optimum's there, ``status_prev``) where
    ``fold_status_ok[p]`` and C grew by at most ``warm_max_ratio``, and stores its
    final statuses there. Its solution is then stored back into
    ``fold_alpha[p]``, ``fold_S[p]``, ``fold_ssum[p]`` for the next C.

    ``settled[p]`` is True when the fold was certified or converged to tol. A fold
    that converges to ``tol`` uncertified is solved again at ``tol/100``, ``tol/10^4``,
    ... down to ``tol_floor`` (within ``10 x`` its epochs so far, plus 100), so that
    only near-ties stay uncertified; those keep the prediction of the tightest solve.
    """
    n = K.shape[0]
    n_classes = alpha_full.shape[1]
    for p in prange(n):
        n_var = 0
        for v in range(var_i.shape[0]):
            if var_i[v] != p:
                n_var += 1
        fi = np.empty(n_var, dtype=np.int64)
        fj = np.empty(n_var, dtype=np.int64)
        k = 0
        for v in range(var_i.shape[0]):
            if var_i[v] != p:
                fi[k] = var_i[v]
                fj[k] = var_j[v]
                k += 1
        fp = np.empty(n - 1, dtype=np.int64)
        for q in range(n - 1):
            fp[q] = q if q < p else q + 1

        alpha = np.empty_like(alpha_full)
        S = np.empty_like(S_full)
        ssum = np.empty_like(ssum_full)
        exact = False
        e = 0
        if use_active:
            use_warm = fold_status_ok[p] and 0.0 < scale_prev <= warm_max_ratio
            warm = fold_status[p] if use_warm else fold_status[p, :0]
            exact, e = active_set.fold_active_set(
                K, p, var_i, var_j, var_id, cols, vals, c, C, alpha_full, S_full, ssum_full,
                status, free_vars, free_pos, Hinv, S_bound, ssum_bound, Q_out, Y_out, out_pos,
                active_max_iter, active_max_changed, active_patience, warm, status_prev, alpha,
                S, ssum, fold_status[p],
            )  # fmt: skip
        fold_status_ok[p] = exact
        if not exact:
            alpha[:, :] = alpha_full
            S[:, :] = S_full
            ssum[:] = ssum_full
            for j in range(n_classes):
                a = alpha[p, j]
                if a != 0.0:
                    _core.apply_step(p, j, -a, cols, vals, c, K, S, ssum)
                    alpha[p, j] = 0.0
            if scale_prev > 0.0:
                gap_full = _core.optimality(fi, fj, alpha, cols, vals, c, C, S, ssum)[1]
                prev_alpha = fold_alpha[p] * scale_prev
                prev_S = fold_S[p] * scale_prev
                prev_ssum = fold_ssum[p] * scale_prev
                gap_prev = _core.optimality(
                    fi, fj, prev_alpha, cols, vals, c, C, prev_S, prev_ssum
                )[1]
                if gap_prev < gap_full:
                    alpha = prev_alpha
                    S = prev_S
                    ssum = prev_ssum

        state = _core.rng_state(seeds[p])
        scale = kappa * np.sqrt(K[p, p])
        more, conv, _, cert = _fold_solve(
            K, fp, fi, fj, cols, vals, c, C, alpha, S, ssum, var_mask, block_w, block_sigma,
            tol, max_epochs, state, p, A, scale,
        )  # fmt: skip
        e += more
        # Converged at tol but not certified: tighten, on a bounded budget, until the
        # bound settles it (a genuine tie, e.g. duplicate points, never will).
        budget = min(max_epochs - e, 10 * e + 100)
        tight = tol * 0.01
        while conv and not cert and tight >= tol_floor and budget > 0:
            more, ok, _, cert = _fold_solve(
                K, fp, fi, fj, cols, vals, c, C, alpha, S, ssum, var_mask, block_w,
                block_sigma, tight, budget, state, p, A, scale,
            )  # fmt: skip
            e += more
            budget -= more
            if not ok:
                break
            tight *= 0.01
        # S[:, p] was summed afresh from the fold's own multipliers by the last solve
        # (_core.refresh_point_scores), never left as the incremental residue
        pred[p] = _core.certify(p, A, S, 0.0, 0.0)[0]
        epochs[p] = e
        certified[p] = cert
        settled[p] = cert or conv
        fold_alpha[p] = alpha
        fold_S[p] = S
        fold_ssum[p] = ssum


def _encode_labels(y: ArrayLike, n_classes: int | None) -> tuple[NDArray, NDArray[np.int64], int]:
    """(classes, labels 0..L-1, L); a clear error for one-class input."""
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


def _kernels(
    X: ArrayLike, gammas: Sequence[float], kernel_cache: MutableMapping | None
) -> dict[float, NDArray[np.float64]]:
    """One kernel matrix per gamma, from the cache where present."""
    cache = {} if kernel_cache is None else kernel_cache
    missing = [g for g in gammas if float(g) not in cache]
    if missing:
        X = np.asarray(X, dtype=np.float64)
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinite values")
        d2 = squared_distances(X)
        for g in missing:
            cache[float(g)] = rbf_from_distances(d2, float(g), X.shape[1])
    return {float(g): cache[float(g)] for g in gammas}


def c_grid(start: float, stop: float, step: float) -> NDArray[np.float64]:
    """The C values ``start, start + step, ...`` up to ``stop`` (exclusive), rounded to 1e-9.

    The paper's grid, ``c_grid(0.1, 50, 0.5)``, is 0.1, 0.6, ..., 49.6 (100 values).
    """
    if not (start > 0 and step > 0 and stop > start):
        raise ValueError(f"need 0 < start < stop and step > 0; got {start}, {stop}, {step}")
    count = int(np.floor((stop - start) / step - 1e-9)) + 1
    return np.round(start + step * np.arange(count), 9)


def _check_grid(gammas: Sequence[float], Cs: Sequence[float]) -> tuple[list[float], list[float]]:
    gammas = [float(g) for g in gammas]
    Cs = sorted(float(C) for C in Cs)
    if not gammas or not Cs:
        raise ValueError("the grid needs at least one gamma and one C")
    if min(gammas) <= 0 or Cs[0] <= 0:
        raise ValueError(f"gamma and C must be > 0; got gammas={gammas}, Cs={Cs}")
    if len(set(Cs)) != len(Cs) or len(set(gammas)) != len(gammas):
        raise ValueError("the grid has repeated gamma or C values")
    return gammas, Cs


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
    return_predictions: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, NDArray]:
    """Exact LOO accuracy of ``method`` at every (gamma, C); one row per grid point.

    Rows come sorted by gamma (as given) then C ascending, with the columns of
    :data:`COLUMNS`. ``iterations`` sums the epochs of the full fit and all folds;
    ``converged`` is False if the full fit or any fold hit ``max_iter`` (epochs per
    fit) unsettled, and ``n_capped`` counts those fits. ``n_uncertified`` counts folds
    whose prediction the duality-gap bound could not prove even at ``tol_floor``
    (top-two score gap of order sqrt(tol_floor)): near-ties, decided by the solve. With
    ``return_predictions=True`` also returns the LOO predicted labels, shape
    (n_grid, N), rows in the order of the frame.

    ``active_set=True`` (the default) polishes each full fit to the exact optimum
    and solves the folds by active-set updates of its factorisation
    (:mod:`isvm.solvers.active_set`), falling back to cd per fold; ``False`` uses cd
    alone. Both are exact; the switch exists for benchmarks and checks.
    """
    if solver != "cd":
        raise ValueError(
            f"loo_grid runs the cd solver (its certified folds are exact for any solver's "
            f"optimum); got solver={solver!r}"
        )
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    formulation = get_formulation(method) if isinstance(method, str) else method
    gammas, Cs = _check_grid(gammas, Cs)
    classes, y_idx, n_classes = _encode_labels(y, n_classes)
    kernels = _kernels(X, gammas, kernel_cache)
    if next(iter(kernels.values())).shape[0] != y_idx.shape[0]:
        raise ValueError("X and y have different numbers of samples")
    coding = formulation.encode(y_idx, n_classes)
    A = np.ascontiguousarray(formulation.decision_matrix(n_classes))
    var_i, var_j = variable_list(coding)
    cap = DEFAULT_MAX_EPOCHS if max_iter is None else int(max_iter)
    n = y_idx.shape[0]
    var_id = np.full(coding.var_mask.shape, -1, dtype=np.int64)
    var_id[var_i, var_j] = np.arange(var_i.shape[0])
    rows, preds = [], []
    previous_threads = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    # BLAS on one thread: a multi-threaded factorisation rounds differently with the
    # thread count, which moved iteration and uncertified-fold counts (never a
    # prediction) between runs with different `threads`; the folds are the parallel part.
    blas_limit = threadpool_limits(limits=1)
    try:
        for gamma in gammas:
            K = kernels[gamma]
            alpha, C_prev, previous = None, None, None
            fold_alpha = np.zeros((n, n, n_classes))
            fold_S = np.zeros((n, coding.n_columns, n))
            fold_ssum = np.zeros((n, n))
            fold_status = np.zeros((n, var_i.shape[0]), dtype=np.int8)  # at the previous C
            fold_status_ok = np.zeros(n, dtype=np.bool_)
            for C in Cs:
                start = time.perf_counter()
                if alpha is not None:
                    alpha = np.minimum(alpha * (C / C_prev), C)
                state = SolverState.start(K, coding, alpha)
                full_seed = derive_seed(seed, "loo-full", gamma, C)
                pre_tol = max(tol, ACTIVE_PRESOLVE_TOL) if active_set else tol
                full_epochs, full_conv, _ = run_solver(
                    state, var_i, var_j, C, solver="cd", tol=pre_tol, max_iter=cap, seed=full_seed
                )
                active = None
                if active_set:
                    active = full_active_set(
                        K, coding, var_i, var_j, state.alpha, C,
                        retry_max_epochs=min(cap, 1000), seed=full_seed, previous=previous,
                    )  # fmt: skip
                # the full statuses the folds' statuses at the previous C go with
                base = np.zeros(0, np.int8) if previous is None else previous.status
                previous = active
                if active is not None:  # the exact optimum: counts as converged
                    state.alpha, state.S, state.ssum = active.alpha, active.S, active.ssum
                    full_epochs, full_conv = full_epochs + active.iterations, True
                else:
                    if pre_tol > tol:
                        more, full_conv, _ = run_solver(
                            state, var_i, var_j, C, solver="cd", tol=tol,
                            max_iter=max(cap - full_epochs, 1), seed=full_seed,
                        )  # fmt: skip
                        full_epochs += more
                    active = _NO_ACTIVE_SET
                fold_seeds = np.array(
                    [derive_seed(seed, "loo-fold", gamma, C, p) for p in range(n)], dtype=np.uint64
                )
                pred = np.empty(n, dtype=np.int64)
                epochs = np.empty(n, dtype=np.int64)
                certified = np.empty(n, dtype=np.bool_)
                settled = np.empty(n, dtype=np.bool_)
                with threadpool_limits(limits=1):  # BLAS inside parallel folds: one thread
                    _fold_fits(
                        K, var_i, var_j, coding.cols, coding.vals, coding.mean_coef, C, state.alpha,
                        state.S, state.ssum, A, formulation.score_diff_norm, tol, tol_floor, cap,
                        fold_seeds, coding.var_mask, coding.block_w, coding.block_sigma, fold_alpha,
                        fold_S, fold_ssum, -1.0 if C_prev is None else C / C_prev,
                        active is not _NO_ACTIVE_SET, ACTIVE_MAX_ITER, ACTIVE_MAX_CHANGED,
                        ACTIVE_PATIENCE, fold_status, fold_status_ok, base, ACTIVE_WARM_RATIO,
                        var_id, active.status, active.free_vars, active.free_pos, active.Hinv,
                        active.S_bound, active.ssum_bound, active.Q_out, active.Y_out,
                        active.out_pos, pred, epochs, certified, settled,
                    )  # fmt: skip
                n_errors = int(np.count_nonzero(pred != y_idx))
                n_capped = int(np.count_nonzero(~settled)) + (0 if full_conv else 1)
                rows.append(
                    (gamma, C, 1.0 - n_errors / n, n_errors,
                     int(np.count_nonzero(state.alpha.any(axis=1))),
                     int(full_epochs + epochs.sum()), n_capped == 0,
                     int(np.count_nonzero(~certified)), n_capped,
                     time.perf_counter() - start)
                )  # fmt: skip
                preds.append(classes[pred])
                alpha, C_prev = state.alpha, C
    finally:
        numba.set_num_threads(previous_threads)
        blas_limit.restore_original_limits()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if return_predictions:
        return frame, np.array(preds)
    return frame


def loo_refit(
    X: ArrayLike,
    y: ArrayLike,
    method: str | Formulation,
    gammas: Sequence[float],
    Cs: Sequence[float],
    *,
    solver: str = "cd",
    tol: float = 1e-3,
    seed: int = 0,
    kernel_cache: MutableMapping | None = None,
    max_iter: int | None = None,
    n_classes: int | None = None,
) -> tuple[pd.DataFrame, NDArray, NDArray[np.float64]]:
    """The plain reference: refit every held-out problem from zero, no shortcuts.

    Returns (frame with gamma, C, loo_accuracy, n_errors, seconds; predicted labels
    (n_grid, N); the top-two class-score gap of each prediction (n_grid, N)).
    Used by the tests to check :func:`loo_grid` and by the benchmarks as baseline.
    """
    formulation = get_formulation(method) if isinstance(method, str) else method
    gammas, Cs = _check_grid(gammas, Cs)
    classes, y_idx, n_classes = _encode_labels(y, n_classes)
    kernels = _kernels(X, gammas, kernel_cache)
    A = formulation.decision_matrix(n_classes)
    n = y_idx.shape[0]
    rows, preds, gaps = [], [], []
    for gamma in gammas:
        K = kernels[gamma]
        for C in Cs:
            start = time.perf_counter()
            pred = np.empty(n, dtype=np.int64)
            gap = np.empty(n)
            for p in range(n):
                keep = np.arange(n) != p
                result = solve(
                    K[np.ix_(keep, keep)], y_idx[keep], n_classes, formulation, C,
                    solver=solver, tol=tol, max_iter=max_iter,
                    seed=derive_seed(seed, "refit", gamma, C, p),
                )  # fmt: skip
                coding = formulation.encode(y_idx[keep], n_classes)
                scores = (K[p, keep] @ coefficient_matrix(result.alpha, coding)) @ A
                order = np.argsort(-scores, kind="stable")
                pred[p] = np.argmax(scores)
                gap[p] = scores[order[0]] - scores[order[1]]
            n_errors = int(np.count_nonzero(pred != y_idx))
            rows.append((gamma, C, 1.0 - n_errors / n, n_errors, time.perf_counter() - start))
            preds.append(classes[pred])
            gaps.append(gap)
    frame = pd.DataFrame(rows, columns=["gamma", "C", "loo_accuracy", "n_errors", "seconds"])
    return frame, np.array(preds), np.array(gaps)
