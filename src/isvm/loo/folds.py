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
its prediction is certified (:func:`isvm.solvers._core.prove`: the suboptimality
bound and the held-out radius) or it has converged to ``tol`` and then tighter.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from isvm._jit import njit
from isvm.loo.bundles import Warm
from isvm.loo.fold_update import fold_active_set
from isvm.solvers import _core
from isvm.solvers._core import Blocks, Dual, Target


@njit(cache=True)
def _fold_solve(prob, blocks, C, dual, tol, max_epochs, rng, target, tried=False):
    """One held-out solve: block updates where a point's multipliers are coupled.
    ``tried``: the start's certificate was tried and failed (the first try is skipped)."""
    if blocks.sigma != 0.0:
        return _core.block_epochs(prob, blocks, C, dual, tol, max_epochs, rng, target, tried)
    return _core.cd_epochs(prob, C, dual, tol, max_epochs, rng, True, target, tried)


@njit(cache=True, parallel=True)
def fit_folds(prob, blocks, cert, step, full, fac, store, cfg, out):
    """Fit every held-out problem of one grid point in parallel; fills ``out`` and the fold store.

    ``prob`` is the full problem, ``blocks`` its coupling (the points are taken per
    fold), ``cert`` (:class:`~isvm.loo.bundles.Certificate`) turns scores into class
    scores and holds the kernel's held-out radii and eigenvalue floor; ``step``
    (:class:`~isvm.loo.bundles.PathStep`) is the grid point's C, C / C_prev (``<= 0``:
    none), the folds' seeds, the full statuses at C_prev and which folds try their
    solution at C_prev; ``full`` the full
    optimum; ``fac`` its :class:`~isvm.loo.bundles.Factor`, or
    :data:`~isvm.loo.bundles.NO_FACTOR` (empty) where the full fit is not exact (cd
    alone then); ``store`` (:class:`~isvm.loo.bundles.FoldStore`)
    each fold's solution at the previous C, updated here; ``cfg`` the
    :class:`~isvm.loo.settings.FoldSettings`; ``out`` a
    :class:`~isvm.loo.bundles.FoldOutput`.

    The bundles are handed whole to :func:`_fit_fold`: inside a ``prange`` loop numba
    loses writes made through a tuple's arrays (numba/numba#5872). The fold index is
    cast to int64: the parfor types it both signed and unsigned, two compilations.
    """
    for p in prange(prob.K.shape[0]):
        _fit_fold(np.int64(p), prob, blocks, cert, step, full, fac, store, cfg, out)


@njit(cache=True)
def _fold_problem(p, prob):
    """Fold ``p``'s problem (``prob``'s variables without p's) and its points."""
    K, var_i, var_j, cols, vals, c = prob
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
    K, _, _, cols, vals, c = prob
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
    return alpha, S, ssum


@njit(cache=True)
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
    K, _, _, cols, vals, c = prob
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
        result = _fold_solve(fold, fold_blocks, C, dual, tol, cap, rng, target)
        epochs[k] = result[0]
        certified[k] = result[3]
        left -= result[0]
    return certified, epochs


@njit(cache=True)
def _gap(fold, prob, C, alpha, S, ssum):
    """The duality gap of a fold start (``fold``'s variables; codings from ``prob``)."""
    _, _, _, cols, vals, c = prob
    return _core.optimality(fold.var_i, fold.var_j, alpha, cols, vals, c, C, S, ssum)[1]


#: a standing proof must hold with this relative room in its bound, so that rounding in
#: the sums can never make it prove what :func:`isvm.solvers._core.prove` would not
STANDING_MARGIN = 1e-9


@njit(cache=True)
def _still_proved(p, proof, S, C, target):
    """Whether fold p's standing proof ``proof`` (made at a C no larger than this one by
    :func:`isvm.solvers._core.standing_bound`, or column by column by
    :func:`isvm.solvers._core.column_bounds` where ``target.column_factor > 0``, on the
    solution whose scores are S) still proves its prediction at C, without a pass over
    the variables: where it does, :func:`_core.prove` at C would prove it too (its bound
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
        return _core.certify_by_column(p, target.A, S, grown, r, target.column_need[:0])
    grown = (proof[1] + (C - made) * proof[2]) * (1.0 + STANDING_MARGIN)
    return _core.certify(p, target.A, S, grown, target.scale)[1]


@njit(cache=True)
def _fit_fold(p, prob, blocks, cert, step, full, fac, store, cfg, out):
    """Fold ``p`` of :func:`fit_folds`.

    The active-set solve is seeded with ``store.status[p]`` (the fold's statuses at
    the previous C, relative to ``step.status_prev``) where ``store.status_ok[p]``, C
    grew by at most ``cfg.warm_ratio`` and ``step.use_warm[p]``, and stores its final
    statuses there (``out.warm[p]`` says whether it was seeded). Where
    ``step.try_shift[p]``, the shifted start is proved before it, and a proof skips the
    solve (the statuses then carried to this C by :func:`_rebased`).

    ``out.settled[p]`` is True when the fold was certified or converged to tol. A fold
    that converges to ``tol`` uncertified is solved again at ``tol/100``, ``tol/10^4``,
    ... down to ``cfg.tol_floor`` (within ``10 x`` its epochs so far, plus 100), so that
    only near-ties stay uncertified; those keep the prediction of the tightest solve.
    """
    alpha_full, S_full, ssum_full = full
    C, scale_prev, seeds, status_prev = step.C, step.scale_prev, step.seeds, step.status_prev
    A = cert.A
    tol, tol_floor, max_epochs = cfg.tol, cfg.tol_floor, cfg.max_epochs
    target = _target(p, cert, blocks)
    tries = scale_prev > 0.0 and step.try_prev[p]
    out.warm[p] = -1
    if (
        fac.status.shape[0] == 0
        and tries
        and _still_proved(p, store.proof[p], store.S[p], C, target)
    ):
        # cd mode (no active-set update first): what the try on the stored solution
        # below would give, without its pass over the variables; the stored solution,
        # its scores and its proof stay as they are
        store.status_ok[p] = False
        out.prev_try[p] = 1
        out.shift_try[p] = -1
        out.pred[p] = _core.certify(p, A, store.S[p], 0.0, 0.0)[0]
        out.epochs[p] = 0
        out.certified[p] = True
        out.settled[p] = True
        return
    fold, fp = _fold_problem(p, prob)
    alpha = np.empty_like(alpha_full)
    S = np.empty_like(S_full)
    ssum = np.empty_like(ssum_full)
    exact = False
    near = False
    e = 0
    active = fac.status.shape[0] > 0  # an exact full optimum (not NO_FACTOR)
    # along a path: the fold's solution at C_prev moved as the full solution moved from
    # C_prev to C (off only where p's absence bends the path, i.e. near p)
    shift_ready = scale_prev > 0.0 and step.alpha_prev.shape[0] > 0
    shift_done = False  # built and proved below
    settled_shift = False
    sh_alpha, sh_S, sh_ssum = alpha, S, ssum  # (typed for numba; set where built)
    out.shift_try[p] = -1
    if active and shift_ready and step.try_shift[p]:
        # tried before the active-set update, which costs a few O(N^2 L) score updates
        # where the shift and its proof cost O(NL) (yeast Ns 500 ISVM z-score: it proves
        # 34-50% of the folds at C = 5.1-30.1, 0.15-0.18 ms against 1.3-2.4 ms a fold)
        sh_alpha, sh_S, sh_ssum = _shifted_start(p, prob, C, full, step, store)
        settled_shift = _core.prove(fold, sh_alpha, C, sh_S, sh_ssum, target)[0]
        shift_done = True
        out.shift_try[p] = 1 if settled_shift else 0
        if settled_shift:  # no update: its statuses carried to this C's full ones
            if not _rebased(store.status[p], step.status_prev, fac.status):
                store.status_ok[p] = False
    if active and not settled_shift:
        can_warm = store.status_ok[p] and 0.0 < scale_prev <= cfg.warm_ratio
        use_warm = can_warm and step.use_warm[p]
        if can_warm:
            out.warm[p] = 1 if use_warm else 0
        warm = store.status[p] if use_warm else store.status[p, :0]
        exact, e, near = fold_active_set(
            prob,
            p,
            C,
            full,
            fac,
            cfg,
            Warm(warm, status_prev),
            Dual(alpha, S, ssum),
            store.status[p],
        )
        store.status_ok[p] = exact
    elif not active:
        store.status_ok[p] = False
    if near:  # the update's ridged face minimiser: a fourth start, kept aside
        near_alpha, near_S, near_ssum = alpha.copy(), S.copy(), ssum.copy()
    else:
        near_alpha = np.empty((0, alpha.shape[1]))
        near_S = np.empty((0, S.shape[1]))
        near_ssum = np.empty(0)
    settled_prev = False
    out.prev_try[p] = -1
    if not exact and tries and not settled_shift:
        # the fold's own solution at C_prev, as it was: still feasible, and its
        # optimum once none of its multipliers reaches C_prev (large C). Kept when it
        # proves the prediction at once.
        alpha[:, :] = store.alpha[p]
        S[:, :] = store.S[p]
        ssum[:] = store.ssum[p]
        settled_prev = _core.prove(fold, alpha, C, S, ssum, target)[0]
        out.prev_try[p] = 1 if settled_prev else 0
    if not settled_prev:
        store.proof[p, 0] = 0.0  # the stored solution changes below: no proof yet
    elif store.proof[p, 0] >= 0.0:
        # a standing proof for the kept solution, made here at C; -1 where its bound
        # does not prove it: for the same multipliers the bound only grows with C, so
        # it is not computed again until the fold's solution changes
        if target.column_factor > 0.0:  # per column: bounds at 3.., their rates after
            n_cols = A.shape[0]
            store.proof[p, 3:] = 0.0
            _core.column_bounds(
                fold,
                alpha,
                C,
                S,
                target,
                store.proof[p, 3 : 3 + n_cols],
                store.proof[p, 3 + n_cols :],
                False,  # groups by their gap terms: the rates are theirs
            )
        else:
            bound, rate = _core.standing_bound(fold, alpha, C, S, ssum, target)
            store.proof[p, 1] = bound
            store.proof[p, 2] = rate
        store.proof[p, 0] = C
        if not _still_proved(p, store.proof[p], S, C, target):
            store.proof[p, 0] = -1.0
    shifted = not exact and not settled_prev and shift_ready
    start_tried = False  # the start the solve below begins from was proved in vain
    if shifted and not shift_done:
        # along a path, the start that proves the prediction at once wherever any of
        # the three below does (nearly always; letter and vowel Ns 500 ISVM z-score,
        # C = 10.1 and 40.1), so it is tried first, and the other starts and their
        # duality gaps are only needed where it fails
        sh_alpha, sh_S, sh_ssum = _shifted_start(p, prob, C, full, step, store)
        settled_shift = _core.prove(fold, sh_alpha, C, sh_S, sh_ssum, target)[0]
    if settled_shift:
        alpha, S, ssum = sh_alpha, sh_S, sh_ssum
    if not exact and not settled_prev and not settled_shift:
        # the full solution without p: with cd alone the full fit is solved tightly,
        # so only what p disturbed is off. Along a path, two more starts, the one with
        # the smallest duality gap taken: the shifted one above, and the fold's
        # solution at C_prev scaled by C / C_prev.
        _without_point(p, prob, full, Dual(alpha, S, ssum))
        if scale_prev > 0.0 or near:
            best = _gap(fold, prob, C, alpha, S, ssum)
        if scale_prev > 0.0:
            if shifted:
                gap = _gap(fold, prob, C, sh_alpha, sh_S, sh_ssum)
                if gap < best:
                    best = gap
                    alpha, S, ssum = sh_alpha, sh_S, sh_ssum
                    start_tried = True  # and not proved, above
            prev_alpha = store.alpha[p] * scale_prev
            prev_S = store.S[p] * scale_prev
            prev_ssum = store.ssum[p] * scale_prev
            gap_prev = _gap(fold, prob, C, prev_alpha, prev_S, prev_ssum)
            if gap_prev < best:
                best = gap_prev
                alpha, S, ssum = prev_alpha, prev_S, prev_ssum
                start_tried = False
        if near and _gap(fold, prob, C, near_alpha, near_S, near_ssum) < best:
            alpha, S, ssum = near_alpha, near_S, near_ssum
            start_tried = False

    rng = _core.rng_state(seeds[p])
    fold_blocks = Blocks(fp, blocks.var_mask, blocks.w, blocks.sigma)
    dual = Dual(alpha, S, ssum)
    if settled_prev or settled_shift:  # proved above: no solve
        more, conv, proved = 0, True, True
    else:
        more, conv, _, proved = _fold_solve(
            fold, fold_blocks, C, dual, tol, max_epochs, rng, target, start_tried
        )
    e += more
    # Converged at tol but not certified: tighten, on a bounded budget, until the
    # bound settles it (a genuine tie, e.g. duplicate points, never will).
    budget = min(max_epochs - e, 10 * e + 100)
    tight = tol * 0.01
    while conv and not proved and tight >= tol_floor and budget > 0:
        more, ok, _, proved = _fold_solve(fold, fold_blocks, C, dual, tight, budget, rng, target)
        e += more
        budget -= more
        if not ok:
            break
        tight *= 0.01
    # S[:, p] was summed afresh from the fold's own multipliers by the last solve
    # (_core.refresh_point_scores), never left as the incremental residue
    out.pred[p] = _core.certify(p, A, S, 0.0, 0.0)[0]
    out.epochs[p] = e
    out.certified[p] = proved
    out.settled[p] = proved or conv
    store.alpha[p] = alpha
    store.S[p] = S
    store.ssum[p] = ssum
