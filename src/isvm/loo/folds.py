"""Numba: every held-out problem ("fold") of one grid point, in parallel, certified.

Fold p starts from the full optimum: an active-set update of its inverse
(:func:`isvm.loo.fold_update.fold_active_set`) usually ends at the fold's exact
optimum (active-set mode). Otherwise the fold's own solution at the previous C is
kept where it proves the prediction at once (saturated: none of its multipliers at
C; tried by every fold while that keeps proving some, else by a sample), else the
fold's solution at the previous C moved as the full solution moved from there (exact
scores: the same moves, less p's and the box's) where it proves the prediction at
once (along a path, it nearly always does wherever any start does), else
coordinate descent runs from the start with the smallest duality gap of up to four:
that one, the full solution with p's multipliers removed, the fold's solution at the
previous C scaled by C / C_prev, and, where the update ended on a singular face, its
ridged minimiser (feasible, all but stationary). Every fold stops only when
its prediction is certified (:func:`isvm.solvers.certify.prove`: the suboptimality
bound and the held-out radius) or it has converged to ``tol`` and then tighter.
"""

from __future__ import annotations

import numpy as np

from isvm._jit import njit
from isvm.loo.bundles import Warm
from isvm.loo.fold_update import fold_active_set
from isvm.loo.settings import WARM_RATIO
from isvm.solvers import _core, certify, epochs
from isvm.solvers._core import Blocks, Dual, Target


@njit(cache=True, inline="always")
def _fold_solve(prob, blocks, C, dual, tol, max_epochs, rng, target, tried):
    """One held-out solve: block updates where a point's multipliers are coupled.
    ``tried``: the start's certificate was tried and failed (the first try is skipped)."""
    if blocks.sigma != 0.0:
        return epochs.block_epochs(prob, blocks, C, dual, tol, max_epochs, rng, target, tried)
    return epochs.cd_epochs(prob, C, dual, tol, max_epochs, rng, _core.TRUE, target, tried)


@njit(cache=True, nogil=True)
def fit_folds(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride):
    """Fit held-out problems ``first, first + stride, ...`` of one grid point; fills
    ``out`` and the fold store for them. Without the GIL: the driver runs ``stride``
    calls at once on its threads, each fold's rows of ``store`` and ``out`` its own.

    ``prob`` is the full problem, ``blocks`` its coupling (the points are taken per
    fold), ``cert`` (:class:`~isvm.loo.bundles.Certificate`) turns scores into class
    scores and holds the kernel's held-out radii and eigenvalue floor; ``step``
    (:class:`~isvm.loo.bundles.PathStep`) is the grid point's C, C / C_prev (``<= 0``:
    none), the folds' seeds, the full solution and statuses at C_prev and which folds
    try which start; ``full`` the full optimum; ``fac`` its
    :class:`~isvm.loo.bundles.Factor`, or :data:`~isvm.loo.bundles.NO_FACTOR` (empty)
    where the full fit is not exact (cd alone then); ``store``
    (:class:`~isvm.loo.bundles.FoldStore`) each fold's solution at the previous C,
    updated here; ``cfg`` the :class:`~isvm.loo.bundles.FoldLimits`; ``out`` a
    :class:`~isvm.loo.bundles.FoldOutput`.
    """
    for p in range(first, prob.K.shape[0], stride):
        _fit_fold(p, prob, blocks, cert, step, full, fac, store, cfg, out)


@njit(cache=True)
def _fold_problem(p, prob):
    """Fold ``p``'s problem (``prob``'s variables without p's) and its points."""
    K, var_i, var_j, cols, vals, c, margin = prob
    n = K.shape[0]
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
    return _core.with_variables(prob, fi, fj), fp


@njit(cache=True)
def _target(p, cert, blocks):
    """What fold p's solves certify against: its point, radius and the kernel's geometry."""
    _, radius, floor, group, mixed, column_factor = cert
    n_cols = cert.A.shape[0] if column_factor > 0.0 else 0
    return Target(
        p,
        cert.A,
        radius[p],
        floor,
        group,
        mixed,
        blocks.w,
        blocks.sigma,
        column_factor,
        np.ones(n_cols, dtype=np.bool_),
        np.full((2, n_cols), np.nan),
    )


@njit(cache=True)
def _shifted_start(p, prob, C, full, step, store):
    """Fold p's solution at C_prev plus the full solution's move from C_prev to C,
    without p's multipliers and clipped to the box, with its exact scores: the
    scores move by the same amounts, less p's share and each clipping's."""
    K, _, _, cols, vals, c, margin = prob
    alpha = store.alpha[p] + (full.alpha - step.alpha_prev)
    S = store.S[p] + (full.S - step.S_prev)
    ssum = store.ssum[p] + (full.ssum - step.ssum_prev)
    coef = np.zeros((K.shape[0], S.shape[0]))
    for i in range(alpha.shape[0]):
        for j in range(alpha.shape[1]):
            a = alpha[i, j]
            target = 0.0 if i == p else min(max(a, 0.0), C)
            if target != a:
                _core.record_point_change(i, j, target - a, cols, vals, coef)
                alpha[i, j] = target
    _core.apply_point_steps(coef, c, K, S, ssum)
    return Dual(alpha, S, ssum)


@njit(cache=True, inline="always")
def _rebased(status, base, now):
    """Carry a fold's statuses from C_prev to C where its active-set update is skipped:
    its own changes (where ``status`` differs from ``base``, the full optimum's
    statuses at C_prev) kept, every other variable given ``now`` (the full optimum's at
    C), as the next update's warm guess would read them. In place; False (nothing
    changed) where there is no ``base``."""
    if base.shape[0] != status.shape[0]:
        return False
    for v in range(status.shape[0]):
        if status[v] == base[v]:
            status[v] = now[v]
    return True


@njit(cache=True)
def _without_point(p, prob, full, out):
    """Write the full solution with point p's multipliers removed (and its scores) into ``out``."""
    K, _, _, cols, vals, c, margin = prob
    alpha, S, ssum = out
    alpha[:, :] = full.alpha
    S[:, :] = full.S
    ssum[:] = full.ssum
    for j in range(alpha.shape[1]):
        a = alpha[p, j]
        if a != 0.0:
            _core.apply_step(p, j, -a, cols, vals, c, K, S, ssum)
            alpha[p, j] = 0.0


@njit(cache=True)
def probe_folds(prob, blocks, cert, full, points, seeds, C, tol, budget, pooled=False):
    """(certified, epochs) of cd on each fold of ``points`` from the full solution
    without the point, within ``budget`` epochs: the engine's sample of what a grid
    point's folds cost by cd alone (near-diagonal kernels need no active-set finish).

    ``pooled``: ``budget`` is the whole sample's, each fold given what the ones before
    it left, and the sample stops once it is spent (the folds not run report 0
    epochs): the epochs' sum is then exact up to the budget, so a mean over it is not
    biased low by a per-fold cap where a few folds take far longer than the others.
    """
    certified = np.zeros(points.shape[0], dtype=np.bool_)
    epochs = np.zeros(points.shape[0], dtype=np.int64)
    left = budget
    for k in range(points.shape[0]):  # a few folds: serial (a parfor compiles slowly)
        if pooled and left <= 0:
            break
        p = np.int64(points[k])
        fold, fp = _fold_problem(p, prob)
        target = _target(p, cert, blocks)
        dual = Dual(np.empty_like(full.alpha), np.empty_like(full.S), np.empty_like(full.ssum))
        _without_point(p, prob, full, dual)
        fold_blocks = Blocks(fp, blocks.var_mask, blocks.w, blocks.sigma)
        rng = _core.rng_state(seeds[p])
        cap = left if pooled else budget
        result = _fold_solve(fold, fold_blocks, C, dual, tol, cap, rng, target, _core.FALSE)
        epochs[k] = result[0]
        certified[k] = result[3]
        left -= result[0]
    return certified, epochs


@njit(cache=True)
def _gap(fold, prob, C, dual):
    """The duality gap of a fold start (``fold``'s variables; codings from ``prob``)."""
    _, _, _, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    return _core.optimality(fold.var_i, fold.var_j, alpha, cols, vals, c, margin, C, S, ssum)[1]


#: a standing proof must hold with this relative room in its bound, so that rounding in
#: the sums can never make it prove what :func:`isvm.solvers.certify.prove` would not
STANDING_MARGIN = 1e-9


@njit(cache=True)
def _still_proved(p, proof, S, C, target):
    """Whether fold p's standing proof ``proof`` (made at a C no larger than this one by
    :func:`isvm.solvers.certify.standing_bound`, or column by column by
    :func:`isvm.solvers.certify.column_bounds` where ``target.column_factor > 0``, on the
    solution whose scores are S) still proves its prediction at C, without a pass over
    the variables: where it does, :func:`certify.prove` at C would prove it too (its bound
    is at most the standing one), so the fold keeps its solution and prediction, as
    that try would."""
    made = proof[0]
    if made <= 0.0 or C < made:
        return False
    if target.column_factor > 0.0:
        n_cols = target.A.shape[0]
        grown = np.empty(n_cols)
        for d in range(n_cols):
            grown[d] = (proof[3 + d] + (C - made) * proof[3 + n_cols + d]) * (1.0 + STANDING_MARGIN)
        r = target.scale * target.column_factor
        return certify.certify_by_column(p, target.A, S, grown, r, target.column_need[:0])
    grown = (proof[1] + (C - made) * proof[2]) * (1.0 + STANDING_MARGIN)
    return certify.certify(p, target.A, S, grown, target.scale)[1]


@njit(cache=True, inline="always")
def _fit_fold(p, prob, blocks, cert, step, full, fac, store, cfg, out):
    """Fold ``p`` of :func:`fit_folds`: its cheap starts in turn, then cd from the best.

    In order: a standing proof of its stored solution (cd mode, :func:`_keep_standing`);
    in active-set mode the shifted start (:func:`_shift_first`), then the update of the
    full inverse (:func:`_active_update`); its own solution at C_prev
    (:func:`_previous_try`); then cd from the best start by duality gap
    (:func:`_cd_start`), tightened until certified (:func:`_solve_tight`). A start that
    proves the prediction ends the fold. ``out.settled[p]`` is True when the fold was
    certified or converged to tol.
    """
    C, scale_prev = step.C, step.scale_prev
    target = _target(p, cert, blocks)
    tries = scale_prev > 0.0 and step.try_prev[p]
    out.warm[p] = -1
    out.shift_try[p] = -1
    out.prev_try[p] = -1
    active = fac.status.shape[0] > 0  # an exact full optimum (not NO_FACTOR)
    if not active and tries and _still_proved(p, store.proof[p], store.S[p], C, target):
        _keep_standing(p, cert, store, out)
        return
    fold, fp = _fold_problem(p, prob)
    dual = Dual(np.empty_like(full.alpha), np.empty_like(full.S), np.empty_like(full.ssum))
    # along a path: the fold's solution at C_prev moved as the full solution moved from
    # C_prev to C (off only where p's absence bends the path, i.e. near p)
    shift_ready = scale_prev > 0.0 and step.alpha_prev.shape[0] > 0
    shift_done = active and shift_ready and step.try_shift[p]
    settled_shift, shift = False, dual  # (typed for numba; set where built)
    if shift_done:
        settled_shift, shift = _shift_first(p, prob, fold, full, fac, step, store, target, out)
    exact, e, near = False, 0, False
    if active and not settled_shift:
        exact, e, near = _active_update(p, prob, full, fac, cfg, step, store, out, dual)
    elif not active:
        store.status_ok[p] = False
    # the update's ridged face minimiser: a fourth start, kept aside
    near_dual = _copied(dual) if near else _copied(Dual(dual.alpha[:0], dual.S[:0], dual.ssum[:0]))
    settled_prev = False
    if not exact and tries and not settled_shift:
        settled_prev = _previous_try(p, fold, C, store, target, dual)
        out.prev_try[p] = 1 if settled_prev else 0
    _record_proof(p, fold, C, settled_prev, store, target, dual)
    shifted = not exact and not settled_prev and shift_ready
    if shifted and not shift_done:
        # along a path, the start that proves the prediction at once wherever any other
        # does (nearly always), so it is tried first and the others only where it fails
        shift = _shifted_start(p, prob, C, full, step, store)
        settled_shift = _proved(fold, shift, C, target)
    start_tried = False  # the start the solve below begins from was proved in vain
    if settled_shift:
        dual = shift
    elif not exact and not settled_prev:
        dual, start_tried = _cd_start(
            p, prob, fold, full, step, store, dual, near_dual, shifted, shift
        )
    settled = settled_prev or settled_shift
    e, conv, proved = _solve_tight(
        p, fold, fp, blocks, step, cfg, target, dual, start_tried, settled, e
    )
    # S[:, p] was summed afresh from the fold's own multipliers by the last solve
    # (_core.refresh_point_scores), never left as the incremental residue
    out.pred[p] = certify.certify(p, cert.A, dual.S, 0.0, 0.0)[0]
    out.epochs[p] = e
    out.certified[p] = proved
    out.settled[p] = proved or conv
    store.alpha[p] = dual.alpha
    store.S[p] = dual.S
    store.ssum[p] = dual.ssum


@njit(cache=True)
def _copied(dual):
    return Dual(dual.alpha.copy(), dual.S.copy(), dual.ssum.copy())


@njit(cache=True, inline="always")
def _proved(fold, dual, C, target):
    """Whether ``dual`` proves fold's prediction at C (:func:`isvm.solvers.certify.prove`)."""
    return certify.prove(fold, dual.alpha, C, dual.S, dual.ssum, target, _core.FALSE)[0]


@njit(cache=True, inline="always")
def _keep_standing(p, cert, store, out):
    """cd mode, the stored solution's standing proof still holds: what the try on it
    would give, without its pass over the variables; the stored solution, its scores
    and its proof stay as they are."""
    store.status_ok[p] = False
    out.prev_try[p] = 1
    out.pred[p] = certify.certify(p, cert.A, store.S[p], 0.0, 0.0)[0]
    out.epochs[p] = 0
    out.certified[p] = True
    out.settled[p] = True


@njit(cache=True, inline="always")
def _shift_first(p, prob, fold, full, fac, step, store, target, out):
    """Active-set mode: the shifted start proved before the update (O(NL) against the
    update's O(N^2 L) score updates). A proof skips the update, the fold's statuses
    carried to this C's full ones (:func:`_rebased`). Returns (proved, the start)."""
    shift = _shifted_start(p, prob, step.C, full, step, store)
    settled = _proved(fold, shift, step.C, target)
    out.shift_try[p] = 1 if settled else 0
    if settled and not _rebased(store.status[p], step.status_prev, fac.status):
        store.status_ok[p] = False
    return settled, shift


@njit(cache=True, inline="always")
def _active_update(p, prob, full, fac, cfg, step, store, out, dual):
    """The fold's active-set update of the full inverse into ``dual``, seeded with its
    statuses at C_prev where they are exact, C grew by at most ``WARM_RATIO`` and
    ``step.use_warm[p]`` (``out.warm[p]`` says which side it took); its final statuses
    are stored. Returns (exact, set updates, near: ``dual`` is a ridged face minimiser)."""
    scale_prev = step.scale_prev
    can_warm = store.status_ok[p] and 0.0 < scale_prev <= WARM_RATIO
    use_warm = can_warm and step.use_warm[p]
    if can_warm:
        out.warm[p] = 1 if use_warm else 0
    warm = store.status[p] if use_warm else store.status[p, :0]
    exact, e, near = fold_active_set(
        prob, p, step.C, full, fac, cfg, Warm(warm, step.status_prev), dual, store.status[p]
    )
    store.status_ok[p] = exact
    return exact, e, near


@njit(cache=True, inline="always")
def _previous_try(p, fold, C, store, target, dual):
    """The fold's own solution at C_prev, as it was, into ``dual``: still feasible, and
    its optimum once none of its multipliers reaches C_prev (large C). Whether it proves
    the prediction at once."""
    dual.alpha[:, :] = store.alpha[p]
    dual.S[:, :] = store.S[p]
    dual.ssum[:] = store.ssum[p]
    return _proved(fold, dual, C, target)


@njit(cache=True, inline="always")
def _record_proof(p, fold, C, settled_prev, store, target, dual):
    """The fold's standing proof: none where its stored solution changes; made at C for
    a kept one (-1 where its bound does not prove it: for the same multipliers the
    bound only grows with C, so it is not computed again until the solution changes)."""
    if not settled_prev:
        store.proof[p, 0] = 0.0
        return
    if store.proof[p, 0] < 0.0:
        return
    if target.column_factor > 0.0:  # per column: bounds at 3.., their rates after
        n_cols = target.A.shape[0]
        store.proof[p, 3:] = 0.0
        bounds, rates = store.proof[p, 3 : 3 + n_cols], store.proof[p, 3 + n_cols :]
        # groups by their gap terms: the rates are theirs
        certify.column_bounds(fold, dual.alpha, C, dual.S, target, bounds, rates, _core.FALSE)
    else:
        bound, rate = certify.standing_bound(fold, dual.alpha, C, dual.S, dual.ssum, target)
        store.proof[p, 1] = bound
        store.proof[p, 2] = rate
    store.proof[p, 0] = C
    if not _still_proved(p, store.proof[p], dual.S, C, target):
        store.proof[p, 0] = -1.0


@njit(cache=True, inline="always")
def _cd_start(p, prob, fold, full, step, store, dual, near_dual, shifted, shift):
    """cd's start: the one with the smallest duality gap of the full solution without
    p (with cd alone the full fit is solved tightly, so only what p disturbed is off)
    and, along a path, the shifted start, the fold's solution at C_prev scaled by
    C / C_prev and the update's ridged minimiser. Returns (it, whether its proof was
    tried in vain: the shifted start's)."""
    C, scale_prev = step.C, step.scale_prev
    _without_point(p, prob, full, dual)
    start, start_tried = dual, False
    near = near_dual.alpha.shape[0] > 0
    if scale_prev > 0.0 or near:
        best = _gap(fold, prob, C, dual)
    if scale_prev > 0.0:
        if shifted:
            gap = _gap(fold, prob, C, shift)
            if gap < best:
                best = gap
                start, start_tried = shift, True
        prev = Dual(
            store.alpha[p] * scale_prev, store.S[p] * scale_prev, store.ssum[p] * scale_prev
        )
        gap_prev = _gap(fold, prob, C, prev)
        if gap_prev < best:
            best = gap_prev
            start, start_tried = prev, False
    if near and _gap(fold, prob, C, near_dual) < best:
        start, start_tried = near_dual, False
    return start, start_tried


@njit(cache=True, inline="always")
def _solve_tight(p, fold, fp, blocks, step, cfg, target, dual, start_tried, settled, e):
    """cd on ``dual`` to ``cfg.tol`` (none where a start proved the prediction); one
    that converges uncertified is solved again at tol / 100, tol / 10^4, ... down to
    ``cfg.tol_floor`` (within 10x its epochs so far, plus 100), so that only near-ties
    stay uncertified: they keep the prediction of the tightest solve. Returns (epochs,
    converged, proved)."""
    if settled:
        return e, True, True
    rng = _core.rng_state(step.seeds[p])
    fold_blocks = Blocks(fp, blocks.var_mask, blocks.w, blocks.sigma)
    more, conv, _, proved = _fold_solve(
        fold, fold_blocks, step.C, dual, cfg.tol, cfg.max_iter, rng, target, start_tried
    )
    e += more
    budget = min(cfg.max_iter - e, 10 * e + 100)
    tight = cfg.tol * 0.01
    while conv and not proved and tight >= cfg.tol_floor and budget > 0:
        more, ok, _, proved = _fold_solve(
            fold, fold_blocks, step.C, dual, tight, budget, rng, target, _core.FALSE
        )
        e += more
        budget -= more
        if not ok:
            break
        tight *= 0.01
    return e, conv, proved
