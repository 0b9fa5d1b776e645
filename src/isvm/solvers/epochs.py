"""The coordinate-descent epochs: the solvers' ``cd``, ``smo`` and ``sgd``, and every
held-out solve of the leave-one-out engine.

:func:`cd_epochs` steps single coordinates in a permuted order with shrinking
(LIBLINEAR-style), :func:`block_epochs` one point's coupled multipliers at a time,
exactly (:func:`isvm.solvers._core.block_step`), and :func:`stochastic_steps` is the
paper's Algorithms 1 and 2. Each reads gradients from the maintained scores and steps
through :mod:`isvm.solvers._core`. A held-out solve (``target.point >= 0``) stops as
soon as :func:`isvm.solvers.certify.prove` certifies its prediction, and its first
epoch visits the points nearest the held-out one first: on a near-diagonal kernel,
removing a point disturbs its neighbours most, and many folds are proved once those
few have moved.
"""

from __future__ import annotations

import numpy as np

from isvm._jit import njit
from isvm.solvers._core import (
    FALSE,
    apply_step,
    block_scratch,
    block_step,
    diag_q,
    optimality,
    projected_gradient,
    q_times_alpha,
    refresh_point_scores,
    rng_below,
    shuffle_prefix,
)
from isvm.solvers.certify import prove

#: a neighbours-first epoch tries the certificate each time its work since the last
#: try reaches this many passes over the variables (a ``prove`` is about one pass),
#: counting a visit's gradient reads as one unit each and a step's score updates as
#: one per :data:`SCORE_UPDATES_PER_READ` (tuned on letter: docs/benchmarks.md)
NEARBY_TRY_SPACING = 0.25
SCORE_UPDATES_PER_READ = 100.0


@njit(cache=True, inline="always")
def _nearby_try(prob, dual, C, target, cached=False):
    """A neighbours-first epoch's certificate try, made where :func:`_nearby_due` says.
    Returns (work left, moved, proved, max KKT violation); ``cached`` as in
    :func:`~isvm.solvers.certify.prove`."""
    alpha, S, ssum = dual
    proved, viol = prove(prob, alpha, C, S, ssum, target, cached)
    return 0.0, False, proved, viol


@njit(cache=True, _nrt=False)
def _nearby_due(nearby, work, moved, n_var):
    """Whether a neighbours-first epoch tries the certificate now: once the work since
    the last try (``work``, in units of reading one variable's gradient) reaches what a
    try costs (:data:`NEARBY_TRY_SPACING` passes over the ``n_var`` variables) and a
    step was taken since. Checked before the call to :func:`_nearby_try`, which passes
    every array of its bundles, reference-counted at each call."""
    return nearby and moved and work >= NEARBY_TRY_SPACING * n_var


@njit(cache=True, inline="always")
def nearby_order(row, var_i, index):
    """Write into ``index`` the variables ordered by ``row[var_i]``, largest first, ties
    in list order: the stable sort of the variables by that key, found by sorting the
    runs of consecutive variables of one point instead (one key each; the variables of
    a run keep their order), which gives the same order for L times fewer keys."""
    n_var = var_i.shape[0]
    starts = np.empty(n_var + 1, dtype=np.int64)
    n_runs = 0
    for v in range(n_var):
        if v == 0 or var_i[v] != var_i[v - 1]:
            starts[n_runs] = v
            n_runs += 1
    starts[n_runs] = n_var
    keys = np.empty(n_runs)
    for r in range(n_runs):
        keys[r] = -row[var_i[starts[r]]]
    k = 0
    for r in np.argsort(keys, kind="mergesort"):
        for v in range(starts[r], starts[r + 1]):
            index[k] = v
            k += 1


@njit(cache=True, inline="always")
def _converged(prob, C, dual, cert_point, tol):
    """(whether the exact max KKT violation over every variable is <= tol, that
    violation); where it is, the held-out point's scores summed afresh."""
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)
    if viol <= tol and cert_point >= 0:
        refresh_point_scores(cert_point, var_i, var_j, alpha, cols, vals, c, K, S, ssum)
    return viol <= tol, viol


@njit(cache=True, inline="always")
def _last_check(prob, C, dual, target, cached):
    """(certified, max KKT violation) where an epoch loop ran out of epochs."""
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    certified = False
    if target.point >= 0:
        certified, viol = prove(prob, alpha, C, S, ssum, target, cached)
    else:
        viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)[2]
    return certified, viol


# ---------------------------------------------------------------- single coordinates


@njit(cache=True)
def cd_epochs(prob, C, dual, tol, max_epochs, rng, shrinking, target, tried=False):
    """Permuted coordinate descent with shrinking (LIBLINEAR-style) until max KKT <= tol.

    Each epoch visits the active variables in a fresh random order and solves each
    one-variable problem exactly (clipped Newton step, eq. 7.1). Variables at a
    bound whose gradient points outward by more than the last epoch's largest
    violation are shrunk; before stopping, the exact violation over *all*
    variables is checked, so shrinking never changes the answer. The gradient of
    a shrunk variable is always exact (it is read from S), so un-shrinking is free.

    With ``target.point >= 0`` (a held-out point) the solve also stops, before the
    first epoch or after any, once the prediction there is certified, and returns that
    point's scores in S exact for the returned alpha. Its first epoch visits the points
    nearest the held-out one first and tries the certificate as its work allows
    (:func:`_nearby_try`). ``tried``: the caller tried the certificate on this very
    start, in vain, so the try before the first epoch is skipped.

    Returns (epochs, converged, max violation, certified).
    """
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    cert_point = target.point
    n_var = var_i.shape[0]
    index = np.arange(n_var)
    active = n_var
    pg_max_old = np.inf
    pg_min_old = -np.inf
    # separate problems by column (1-vs-all): step only the columns the certificate
    # waits on (what its last try wrote into target.column_need; a failed try of the
    # caller's on this very start wrote it too) until they converge, then every column
    need = target.column_need
    restricted = cert_point >= 0 and target.column_factor > 0.0 and need.shape[0] == S.shape[0]
    if restricted and not tried:
        need[:] = True
    # ... and its tries re-sum only the columns stepped since the last one
    cache = target.column_cache
    cached = restricted and cache.shape[1] == S.shape[0]
    if cached:
        cache[:, :] = np.nan
    epoch = 0
    viol = np.inf
    while epoch < max_epochs:
        if cert_point >= 0 and not (tried and epoch == 0):
            proved, viol = prove(prob, alpha, C, S, ssum, target, cached)
            if proved:
                return epoch, viol <= tol, viol, True
        nearby = cert_point >= 0 and epoch == 0  # no variable is shrunk yet
        if nearby:
            nearby_order(K[cert_point], var_i, index)
        else:
            shuffle_prefix(index, active, rng)
        old = (pg_max_old, pg_min_old)
        flags = (shrinking, nearby, restricted, cached)
        active, pg_max, pg_min, proved, near_viol = _cd_epoch(
            prob, C, dual, tol, target, index, active, old, flags
        )
        if proved:
            return epoch + 1, near_viol <= tol, near_viol, True
        epoch += 1
        sweep = max(pg_max, -pg_min) if active > 0 else 0.0
        if sweep <= tol and restricted:
            # the columns it waited on converged, unproved: every column from here
            restricted = False
            active = n_var
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        if sweep <= tol:
            done, viol = _converged(prob, C, dual, cert_point, tol)
            if done:
                return epoch, True, viol, False
            active = n_var
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    certified, viol = _last_check(prob, C, dual, target, cached)
    return epoch, viol <= tol, viol, certified


@njit(cache=True, inline="always")
def _cd_epoch(prob, C, dual, tol, target, index, active, old, flags):
    """One epoch of :func:`cd_epochs` over ``index[:active]``, shrinking against the last
    epoch's extreme projected gradients ``old``; ``flags``: (shrinking, neighbours
    first, only the columns of ``target.column_need``, tries cached). Returns (active,
    largest and smallest projected gradient, proved by a neighbours-first try, its
    max KKT violation)."""
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    pg_max_old, pg_min_old = old
    shrinking, nearby, restricted, cached = flags
    need = target.column_need
    cache = target.column_cache
    n_var = var_i.shape[0]
    # a held-out solve moves only the variables that matter: those within tol of
    # optimality stay put (the stopping test still reads every variable)
    skip = tol if target.point >= 0 else 0.0
    step_work = K.shape[0] / SCORE_UPDATES_PER_READ  # a step's cost, for _nearby_try
    pg_max = -np.inf
    pg_min = np.inf
    work = 0.0
    moved = FALSE
    s = 0
    while s < active:
        if _nearby_due(nearby, work, moved, n_var):
            work, moved, proved, near_viol = _nearby_try(prob, dual, C, target, cached)
            if proved:
                return active, pg_max, pg_min, True, near_viol
        v = index[s]
        i = var_i[v]
        j = var_j[v]
        if restricted and not need[cols[i, j, 0]]:
            s += 1
            continue
        if nearby:
            work += 1.0
        a = alpha[i, j]
        G = q_times_alpha(i, j, cols, vals, c, S, ssum) - margin[i]  # minimisation gradient
        pg = 0.0
        if a <= 0.0:
            if shrinking and G > pg_max_old:
                active -= 1
                index[s] = index[active]
                index[active] = v
                continue
            if G < 0.0:
                pg = G
        elif a >= C:
            if shrinking and G < pg_min_old:
                active -= 1
                index[s] = index[active]
                index[active] = v
                continue
            if G > 0.0:
                pg = G
        else:
            pg = G
        if pg > pg_max:
            pg_max = pg
        if pg < pg_min:
            pg_min = pg
        if (pg > skip or pg < -skip) and _cd_step(i, j, a, G, C, alpha, cols, vals, c, K, S, ssum):
            moved = True
            work += step_work
            if cached:
                for t in range(2):
                    if cols[i, j, t] >= 0:
                        cache[0, cols[i, j, t]] = np.nan
        s += 1
    return active, pg_max, pg_min, False, 0.0


@njit(cache=True, _nrt=False, inline="always")
def _cd_step(i, j, a, G, C, alpha, cols, vals, c, K, S, ssum):
    """Variable (i, j)'s exact one-variable step from ``a``, whose minimisation gradient
    is G (the clipped Newton step, eq. 7.1); returns whether it moved."""
    qd = diag_q(i, j, cols, vals, c, K)
    if qd > 0.0:
        new = a - G / qd
    else:
        new = C if G < 0.0 else 0.0
    if new < 0.0:
        new = 0.0
    elif new > C:
        new = C
    delta = new - a
    if delta != 0.0:
        alpha[i, j] = new
        apply_step(i, j, delta, cols, vals, c, K, S, ssum)
    return delta != 0.0


# ---------------------------------------------------------------- exact per-point block updates


@njit(cache=True)
def block_epochs(prob, blocks, C, dual, tol, max_epochs, rng, target, tried=False):
    """Block coordinate descent: each step solves one point's multipliers exactly.

    Points are visited in a fresh random order every epoch; a point whose
    multipliers are all KKT-optimal is skipped for the cost of reading its L
    gradients. A held-out solve's first epoch instead visits the points nearest the
    held-out one first (by kernel value) and tries the certificate as its work allows
    (:func:`_nearby_try`; an epoch counts whole). The scores change along at most D
    columns per step (O(N D), the same as L single-coordinate steps), and the block
    step moves along the flat directions of the singular ISVM dual that single
    coordinates can only zigzag along. Stopping and certification as in
    :func:`cd_epochs`; ``prob``'s variables are the same problem's, listed for the
    exact optimality check.

    Returns (epochs, converged, max violation, certified).
    """
    K = prob.K
    points = blocks.points
    alpha, S, ssum = dual
    cert_point = target.point
    index = points.copy()
    scratch = block_scratch(alpha.shape[1])
    js = np.empty(alpha.shape[1], dtype=np.int64)
    coef = np.zeros(S.shape[0])
    epoch = 0
    viol = np.inf
    while epoch < max_epochs:
        if cert_point >= 0 and not (tried and epoch == 0):  # (tried: as in cd_epochs)
            proved, viol = prove(prob, alpha, C, S, ssum, target, FALSE)
            if proved:
                return epoch, viol <= tol, viol, True
        nearby = cert_point >= 0 and epoch == 0
        if nearby:
            index[:] = points[np.argsort(-K[cert_point][points], kind="mergesort")]
        else:
            shuffle_prefix(index, points.shape[0], rng)
        sweep, proved, near_viol = _block_epoch(
            prob, blocks, C, dual, tol, target, index, nearby, scratch, js, coef
        )
        if proved:
            return epoch + 1, near_viol <= tol, near_viol, True
        epoch += 1
        if sweep <= tol:
            done, viol = _converged(prob, C, dual, cert_point, tol)
            if done:
                return epoch, True, viol, False
    certified, viol = _last_check(prob, C, dual, target, FALSE)
    return epoch, viol <= tol, viol, certified


#: :func:`threshold_blocks` lowers its threshold, once a pass steps no point, to this
#: share of the largest KKT violation that pass saw (measured: docs/benchmarks.md)
THRESHOLD_DROP = 0.5


@njit(cache=True)
def threshold_blocks(prob, blocks, C, dual, tol, max_epochs):
    """Exact per-point block steps, largest KKT violations first, until max KKT <= tol.

    Passes over the points in order step only the points whose largest KKT violation
    exceeds a threshold; once a pass steps none, the threshold drops to
    :data:`THRESHOLD_DROP` of the largest violation it saw (never below ``tol``), and
    a pass at ``tol`` that steps none ends the solve. Like Gauss-Southwell it spends
    the steps where the violations are, at the cost of reading each point's L
    gradients per pass instead of a scan per step; where most multipliers end free
    (ISVM at large C) that is several times fewer block steps than
    :func:`block_epochs`' permuted epochs, which step every point each epoch.
    Deterministic; scores stay exact for every point (nothing is shrunk).

    Returns (epochs, converged, max violation), epochs being the block steps over the
    number of points, rounded up; the cap is ``max_epochs`` of them.
    """
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    points = blocks.points
    n_points = points.shape[0]
    g, a0, w, d, sw, bp = block_scratch(alpha.shape[1])
    js = np.empty(alpha.shape[1], dtype=np.int64)
    coef = np.zeros(S.shape[0])
    cap = max_epochs * n_points
    steps = 0
    threshold = np.inf
    while True:
        seen = 0.0  # the largest violation left unstepped this pass
        stepped = 0
        for s in range(n_points):
            i = points[s]
            m, worst = _read_block(
                i, blocks, alpha, C, cols, vals, c, margin, S, ssum, js, g, a0, w
            )
            if worst > threshold and steps < cap:
                if K[i, i] > 0.0:
                    block_step(g, a0, C, K[i, i], blocks.sigma, w, m, d, sw, bp)
                else:  # a zero row of K: constant gradients, each multiplier to its bound
                    _to_bounds(g, a0, C, m, d)
                steps += 1
                if _moved(a0, d, m):  # a step too small to change alpha is left undone
                    _apply_block(i, js, a0, d, m, alpha, cols, vals, c, K, S, ssum, coef, 0.0, 0.0)
                    stepped += 1
                    continue
            if worst > seen:
                seen = worst
        if stepped == 0:
            if seen <= tol or threshold <= tol or steps >= cap:
                epochs = (steps + n_points - 1) // n_points if n_points > 0 else 0
                viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)[2]
                return epochs, viol <= tol, viol
            threshold = max(tol, THRESHOLD_DROP * seen)


@njit(cache=True, _nrt=False, inline="always")
def _to_bounds(g, a0, C, m, d):
    """The block step where ``K_ii = 0`` (so its row of K is zero, K being PSD): the
    gradients ``g[:m]`` do not depend on the step, which takes each multiplier to the
    bound they point to."""
    for q in range(m):
        d[q] = C - a0[q] if g[q] > 0.0 else (-a0[q] if g[q] < 0.0 else 0.0)


@njit(cache=True, _nrt=False, inline="always")
def _moved(a0, d, m):
    """Whether the block step ``d[:m]`` changes any multiplier ``a0[:m]``."""
    for q in range(m):
        if a0[q] + d[q] != a0[q]:
            return True
    return False


@njit(cache=True, inline="always")
def _block_epoch(prob, blocks, C, dual, tol, target, index, nearby, scratch, js, coef):
    """One epoch of :func:`block_epochs` over the points ``index``: returns (the largest
    KKT violation seen, proved by a neighbours-first try, its max KKT violation)."""
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    g, a0, w, d, sw, bp = scratch
    skip = tol if target.point >= 0 else 0.0  # as in cd_epochs
    col_work = K.shape[0] / SCORE_UPDATES_PER_READ  # one column's score update, for _nearby_try
    sweep = 0.0
    work = 0.0
    moved = FALSE
    for s in range(index.shape[0]):
        if _nearby_due(nearby, work, moved, var_i.shape[0]):
            work, moved, proved, near_viol = _nearby_try(prob, dual, C, target, FALSE)
            if proved:
                return sweep, True, near_viol
        i = index[s]
        m, worst = _read_block(i, blocks, alpha, C, cols, vals, c, margin, S, ssum, js, g, a0, w)
        work += m
        if worst > sweep:
            sweep = worst
        if worst <= skip or K[i, i] <= 0.0:
            continue
        block_step(g, a0, C, K[i, i], blocks.sigma, w, m, d, sw, bp)
        moved = True
        work = _apply_block(i, js, a0, d, m, alpha, cols, vals, c, K, S, ssum, coef, work, col_work)
    return sweep, False, 0.0


@njit(cache=True, _nrt=False, inline="always")
def _read_block(i, blocks, alpha, C, cols, vals, c, margin, S, ssum, js, g, a0, w):
    """Point i's multipliers into the block scratch (classes ``js``, values ``a0``,
    gradients ``g``, directions ``w``): returns (how many, their largest KKT violation)."""
    var_mask, block_w = blocks.var_mask, blocks.w
    m = np.int64(0)  # not a literal: that would compile block_step twice
    worst = 0.0
    for j in range(alpha.shape[1]):
        if var_mask[i, j]:
            js[m] = j
            a0[m] = alpha[i, j]
            g[m] = margin[i] - q_times_alpha(i, j, cols, vals, c, S, ssum)
            w[m] = block_w[i, j]
            p = projected_gradient(a0[m], g[m], C)
            if p > worst:
                worst = p
            m += 1
    return m, worst


@njit(cache=True, _nrt=False, inline="always")
def _apply_block(i, js, a0, d, m, alpha, cols, vals, c, K, S, ssum, coef, work, col_work):
    """Point i's block step ``d`` into alpha and the scores, one pass over ``K[i]`` per
    column it moves (``coef``: zeros of length D, left so); returns ``work`` plus
    ``col_work`` per such column."""
    n = K.shape[0]
    total = 0.0
    for q in range(m):
        if d[q] != 0.0:
            j = js[q]
            alpha[i, j] = a0[q] + d[q]
            for t in range(2):
                col = cols[i, j, t]
                if col >= 0:
                    coef[col] += d[q] * vals[i, j, t]
                    total += d[q] * vals[i, j, t]
    for col in range(S.shape[0]):
        a = coef[col]
        if a != 0.0:
            row = S[col]
            for r in range(n):
                row[r] += a * K[i, r]
            coef[col] = 0.0
            work += col_work
    if c != 0.0 and total != 0.0:
        for r in range(n):
            ssum[r] += total * K[i, r]
    return work


# ---------------------------------------------------------------- the paper's Algorithms 1 and 2


@njit(cache=True)
def kkt_distance(V, a, C, T, eps):
    """The paper's KKT distance of one variable (section 7), with V = -(dual gradient).

    As printed, an interior variable counts only when V > T; we also count V < -T
    (an interior variable whose margin is not met), which the printed case list
    omits, so that distance 0 means the KKT conditions hold to within T.
    """
    if V < -T and a < eps:
        return -V
    if V > T and a > C - eps:
        return V
    if eps < a < C - eps and (V > T or V < -T):
        return abs(V)
    return 0.0


@njit(cache=True)
def stochastic_steps(prob, C, dual, rule, tol, max_steps, rng):
    """Algorithm 1 (eta = 1) and Algorithm 2 (step eta): one random coordinate per step.

    Each step picks a variable uniformly, moves it by ``rule.eta`` times the exact
    one-variable step, clips it to [0, C], then (as published) sweeps all NL
    variables to evaluate the stopping rule: the mean KKT distance < ``rule.theta``
    when ``rule.use_mean``, else the maximum KKT violation <= tol.

    Returns (steps, converged, max violation).
    """
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    eta, T, eps, theta, use_mean = rule
    n_var = var_i.shape[0]
    qd = np.empty(n_var)
    for v in range(n_var):
        qd[v] = diag_q(var_i[v], var_j[v], cols, vals, c, K)
    step = 0
    stopped = False
    while step < max_steps and not stopped:
        v = rng_below(rng, n_var)
        i = var_i[v]
        j = var_j[v]
        a = alpha[i, j]
        g = margin[i] - q_times_alpha(i, j, cols, vals, c, S, ssum)
        if qd[v] > 0.0:
            new = a + eta * g / qd[v]
        else:
            new = C if g > 0.0 else 0.0
        if new < 0.0:
            new = 0.0
        elif new > C:
            new = C
        if new != a:
            alpha[i, j] = new
            apply_step(i, j, new - a, cols, vals, c, K, S, ssum)
        step += 1
        total = 0.0
        viol = 0.0
        for u in range(n_var):
            iu = var_i[u]
            ju = var_j[u]
            gu = margin[iu] - q_times_alpha(iu, ju, cols, vals, c, S, ssum)
            au = alpha[iu, ju]
            if use_mean:
                total += kkt_distance(-gu, au, C, T, eps)
            else:
                p = projected_gradient(au, gu, C)
                if p > viol:
                    viol = p
        stopped = total / n_var < theta if use_mean else viol <= tol
    _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)
    return step, stopped, viol
