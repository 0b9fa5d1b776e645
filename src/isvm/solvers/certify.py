"""The certificate: a proof that a fold's prediction at its held-out point is the optimum's.

A fold's dual (:mod:`isvm.methods`) is ``max D(alpha) = 1'alpha - 1/2 alpha'Q alpha``
over the box ``0 <= alpha <= C``, with ``Q = U (K x M) U'`` and the primal point
``w(alpha) = sum_(i,j) alpha_ij u_ij (x) phi(x_i)``, so ``alpha'Q alpha = ||w||^2``.
The certificate bounds how far the current w is from the optimum w*, and proves the
top class at the held-out point p once no other class can overtake it within that
distance. In the notation of the code: ``g = 1 - Q alpha`` the dual gradient of each
variable (read from the scores S in O(1)), ``lambda_i`` the point's eigenvalue floor
(``Target.floor``), ``w_i``, ``sigma`` the coding's per-point block (``Target.block_w``,
``Target.block_sigma``; a different w from the primal one).

**Distance.** For any feasible alpha, D is a concave quadratic, so
``D(alpha) = D* + grad D(alpha*)'(alpha - alpha*) - 1/2 ||w - w*||^2``, and the middle
term is <= 0 since alpha* maximises D over the box. Hence, for any ``b >= D* - D(alpha)``,

    ||w - w*||^2 <= 2 (D* - D(alpha)) <= 2 b.

**The bound b** (:func:`suboptimality`). ``D* - D(alpha) = max_d g'd - 1/2 d'Qd`` over
``0 <= alpha + d <= C``. Where ``K >= diag(lambda)`` over the distinct points
(:mod:`isvm.loo.certificate`), ``Q >= blockdiag(B_i)`` with each point's block either
``B_i = lambda_i (I + sigma w_i w_i')`` or 0, so replacing Q by it can only raise the
maximum, which then splits into one problem per point: each point counts with the
smaller of its duality-gap terms ``C max(0, g) - alpha g`` (``B_i = 0``: the linear
model's maximum) and its model ``max g'd - lambda_i/2 d'(I + sigma w_i w_i')d`` over
its box (:func:`_block_ascent`; bracketed in O(L) by :func:`_block_bracket`), where a
small residual costs ``g^2 / lambda_i`` instead of ``C g``. Where ``sigma >= 0``
(1-vs-all, Weston-Watkins) ``I + sigma w w' >= I``, so the separable ``sigma = 0``
model is used. Identical points with one label enter w only through their summed
multipliers, so each group of them is one point with box ``[0, n C]`` (plus the
rounding spread of the members' gradients); a group with mixed labels counts with its
gap terms. With every floor 0 the bound is the plain duality gap.

**The prediction** (:func:`certify`). A difference of two class scores at p is
``<w, z>`` with ``||z|| <= kappa r_p`` (kappa: the formulation's ``score_diff_norm``;
``r_p``: the norm of p's projection onto the fold's training span, where ``w - w*``
lies, at most ``sqrt(K_pp)``), so it moves by at most
``scale ||w - w*|| <= scale sqrt(2 b)``, ``scale = kappa r_p`` (``Target.scale``).
If the top class beats the runner-up by more, no class overtakes it at the optimum.
The largest b that still proves it, ``need = 1/2 ((best - second) / scale)^2``
(:func:`affordable`), lets :func:`suboptimality` stop computing models once the
verdict is decided.

**Class by class** (:func:`prove_by_column`). Where Q is block diagonal by coding column
(1-vs-all, ``Target.column_factor > 0``), ``D = sum_d D_d`` with one weight vector
``w_d`` each, and the above holds per column: ``||w_d - w_d*||^2 <= 2 b_d``
(:func:`column_terms`, per variable the smaller of its gap term and its one-variable
model). Column d's score at p moves by at most ``e_d = r_p sqrt(2 b_d)`` and class m's
by at most ``E_m = sum_d |A[d, m]| e_d``; the top class is proved once it beats every
class m by more than ``E_top + E_m`` (:func:`certify_by_column`), never more than the
single bound asks (``sqrt(x) + sqrt(y) <= sqrt(2 (x + y))``).

**Along C** (:func:`standing_bound`). For ``C' >= C`` alpha stays feasible and g does
not depend on C: a point's gap terms grow linearly, at the rate of its positive
gradients, and its model's maximum is concave in C, growing at most at its rate at C
(the pull on the multipliers its maximiser puts at the upper bound). So
``D*(C') - D(alpha) <= b + (C' - C) rate``: a proof made at C keeps standing at every
C' where that still certifies.
"""

from __future__ import annotations

import numpy as np

from isvm._jit import njit
from isvm.solvers._core import (
    TRUE,
    _block_move,
    block_scratch,
    block_step,
    projected_gradient,
    q_times_alpha,
    refresh_point_scores,
)


@njit(cache=True, _nrt=False)
def _gap_term(g, a, C):
    """One variable's term of the duality gap, ``C max(0, g) - a g``."""
    return g * (C - a) if g > 0.0 else -g * a


@njit(cache=True, _nrt=False)
def _block_ascent(g, a0, C, lam, sigma, w, m, d, sw, bp):
    """``max g'd - lam/2 (d'd + sigma (w'd)^2)`` over ``0 <= a0 + d <= C`` (first m entries).

    The exact maximiser is :func:`~isvm.solvers._core.block_step`'s, with ``lam`` in place
    of ``K_ii``.
    """
    block_step(g, a0, C, lam, sigma, w, m, d, sw, bp)
    lin = 0.0
    sq = 0.0
    wd = 0.0
    for q in range(m):
        lin += g[q] * d[q]
        sq += d[q] * d[q]
        wd += w[q] * d[q]
    return lin - 0.5 * lam * (sq + sigma * wd * wd)


#: Newton steps on the block residual that :func:`_block_bracket` takes at most
BRACKET_NEWTON_STEPS = 3


@njit(cache=True, _nrt=False, inline="always")
def _block_bracket(g, a0, C, lam, sigma, w, m, u, sw, gk):
    """(upper, lower) bounds on :func:`_block_ascent`'s maximum, in O(m) a Newton step.

    ``u = clip(g/lam - sigma w t)`` is feasible for any t, so the model's value at u
    bounds the maximum from below; and since ``-1/2 d'Ad <= 1/2 u'Au - u'Ad`` for the
    positive semidefinite ``A = I + sigma w w'``, the maximum over the box of the
    linear ``g'd + lam (1/2 u'Au - u'Ad)`` bounds it from above. Both meet at the
    maximiser, whose t is the root of ``block_step``'s residual ``t - w'u(t)``;
    a few Newton steps from t = 0 (stopping once the residual vanishes, and at once
    where sigma = 0: u is then the exact maximiser, the model separable) come close,
    for a fraction of the exact step's cost (docs/benchmarks.md). Scratch ``u``,
    ``sw``, ``gk`` of length m."""
    for j in range(m):
        gk[j] = g[j] / lam
        sw[j] = sigma * w[j]
    t = 0.0
    for step in range(BRACKET_NEWTON_STEPS + 1):
        wu = 0.0
        slope = 1.0
        for j in range(m):
            z = _block_move(gk[j], sw[j], t, a0[j], C)
            if z == gk[j] - sw[j] * t:  # not clipped: on the residual's slope
                slope += sw[j] * w[j]
            u[j] = z
            wu += w[j] * z
        residual = t - wu
        if residual == 0.0 or sigma == 0.0 or slope <= 1e-12 or step == BRACKET_NEWTON_STEPS:
            break
        t -= residual / slope
    lin = 0.0
    quad = 0.0
    upper_lin = 0.0
    for j in range(m):
        au = u[j] + sigma * w[j] * wu
        lin += g[j] * u[j]
        quad += u[j] * au
        r = g[j] - lam * au
        upper_lin += r * (C - a0[j]) if r > 0.0 else -r * a0[j]
    return upper_lin + 0.5 * lam * quad, lin - 0.5 * lam * quad


@njit(cache=True, _nrt=False)
def _point_terms(prob, alpha, C, S, ssum, block_w, v, g, a0, w):
    """The variables of one point, listed from ``v`` on: writes their gradients, values
    and block weights into ``g``, ``a0``, ``w``; returns (how many, their duality-gap
    terms summed, their positive gradients summed, their largest KKT violation)."""
    _, var_i, var_j, cols, vals, c, margin = prob
    i = var_i[v]
    m = np.int64(0)
    point_gap = 0.0
    positive = 0.0
    viol = 0.0
    while v + m < var_i.shape[0] and var_i[v + m] == i:
        j = var_j[v + m]
        a = alpha[i, j]
        gv = margin[i] - q_times_alpha(i, j, cols, vals, c, S, ssum)
        point_gap += _gap_term(gv, a, C)
        if gv > 0.0:
            positive += gv
        pv = projected_gradient(a, gv, C)
        if pv > viol:
            viol = pv
        g[m] = gv
        a0[m] = a
        w[m] = block_w[i, j]
        m += 1
    return m, point_gap, positive, viol


@njit(cache=True, _nrt=False)
def _group_add(row, g, a):
    """Add one member's variable (gradient g, multiplier a) to a group's class row
    (count, sum g, sum alpha, min g, max g): :func:`suboptimality` and
    :func:`column_terms` bound a group of identical points as one variable from it."""
    if row[0] == 0.0:
        row[3] = g
        row[4] = g
    row[0] += 1.0
    row[1] += g
    row[2] += a
    row[3] = min(row[3], g)
    row[4] = max(row[4], g)


@njit(cache=True, inline="always")
def suboptimality(prob, alpha, C, S, ssum, target, tau, need):
    """(bound on ``D* - D(alpha)``, max KKT violation) over ``prob``'s variables.

    Per point the smaller of its gap terms and its model, each group of identical
    points with one label as one point (module docstring); the plain gap where the
    variables are not listed point by point (as :func:`isvm.solvers.variable_list` and
    the folds list them). Models are computed only where a point's gap terms exceed
    ``tau``. With a finite ``need`` (:func:`affordable`) they are spent lazily
    (:func:`_lazy_models`): the bound may then be looser, but it is below ``need``
    exactly when the full one is.
    """
    K = prob.K
    floor, mixed = target.floor, target.group_mixed
    n_classes = alpha.shape[1]
    use_model = floor.shape[0] > 0
    grouped = use_model and mixed.shape[0] > 0
    n_groups = mixed.shape[0] if grouped else 0
    acc = np.zeros((n_groups, n_classes, 5))  # count, sum g, sum alpha, min g, max g
    group_gap = np.zeros(n_groups)
    member = np.full(n_groups, -1, dtype=np.int64)  # a fold point of each group
    scratch = block_scratch(n_classes)
    lazy = use_model and need < np.inf
    cand_v = np.empty(K.shape[0] if lazy else 0, dtype=np.int64)  # lazy: deferred models'
    cand_gap = np.empty(K.shape[0] if lazy else 0)  # points (first variable, gap terms)
    groups = (acc, group_gap, member)
    cands = (cand_v, cand_gap)
    total_gap, bound, viol, ordered, n_cand = _point_bounds(
        prob, alpha, C, S, ssum, target, tau, lazy, groups, cands, scratch
    )
    if not use_model or not ordered:
        return total_gap, viol
    bound = _group_bounds(acc, group_gap, member, target, C, bound, scratch)
    if n_cand > 0:
        bound = _lazy_models(
            prob, alpha, C, S, ssum, target, need, cand_v, cand_gap, n_cand, bound, scratch
        )
    return min(total_gap, bound), viol


@njit(cache=True, inline="always")
def _point_bounds(prob, alpha, C, S, ssum, target, tau, lazy, groups, cands, scratch):
    """:func:`suboptimality`'s pass over the points: returns (duality gap, bound so far,
    max KKT violation, whether each point's variables were listed together, number of
    deferred models). Sums each one-label group's variables into ``acc`` and its gap
    terms into ``group_gap`` (``groups``: acc, group_gap, member); lazily, lists the
    points whose models are deferred in ``cands`` (first variable, gap terms) and counts
    their gap terms meanwhile."""
    K, var_i, var_j, cols, vals, c, margin = prob
    floor, group, mixed = target.floor, target.group, target.group_mixed
    block_w = target.block_w
    model_sigma = min(target.block_sigma, 0.0)
    n_var = var_i.shape[0]
    use_model = floor.shape[0] > 0
    grouped = use_model and mixed.shape[0] > 0
    seen = np.zeros(K.shape[0] if use_model else 0, dtype=np.bool_)
    acc, group_gap, member = groups
    cand_v, cand_gap = cands
    g, a0, w, d, sw, bp = scratch
    n_cand = np.int64(0)  # not a literal: that would compile _sift_down twice
    total_gap = 0.0
    bound = 0.0
    viol = 0.0
    ordered = True
    v = np.int64(0)
    while v < n_var:
        i = var_i[v]
        first = v
        m, point_gap, _, point_viol = _point_terms(prob, alpha, C, S, ssum, block_w, v, g, a0, w)
        v += m
        if point_viol > viol:
            viol = point_viol
        if grouped and group[i] >= 0 and not mixed[group[i]]:
            if member[group[i]] < 0:
                member[group[i]] = i
            for q in range(m):
                _group_add(acc[group[i], var_j[first + q]], g[q], a0[q])
        total_gap += point_gap
        if not use_model:
            continue
        if seen[i]:
            ordered = False
        seen[i] = True
        if grouped and group[i] >= 0:
            if mixed[group[i]]:
                bound += point_gap
            else:
                group_gap[group[i]] += point_gap
            continue
        if point_gap <= tau or floor[i] <= 0.0:
            bound += point_gap
            continue
        if lazy:
            cand_v[n_cand] = first
            cand_gap[n_cand] = point_gap
            n_cand += 1
            bound += point_gap
            continue
        model = _block_ascent(g, a0, C, floor[i], model_sigma, w, m, d, sw, bp)
        bound += min(point_gap, model)
    return total_gap, bound, viol, ordered, n_cand


@njit(cache=True, inline="always")
def _group_bounds(acc, group_gap, member, target, C, bound, scratch):
    """``bound`` plus each one-label group's term: the smaller of its gap terms and the
    model of one block over the members' summed multipliers (their variables share
    their classes, hence w), with box ``[0, n C]``."""
    floor, mixed, block_w = target.floor, target.group_mixed, target.block_w
    model_sigma = min(target.block_sigma, 0.0)
    n_groups, n_classes = acc.shape[0], acc.shape[1]
    g, a0, w, d, sw, bp = scratch
    for gi in range(n_groups):
        if mixed[gi]:
            continue
        p = member[gi]
        if p < 0 or floor[p] <= 0.0:
            bound += group_gap[gi]
            continue
        m = np.int64(0)
        slack = 0.0
        members = 0.0
        for j in range(n_classes):
            row = acc[gi, j]
            if row[0] > 0.0:
                members = row[0]
                g[m] = row[1] / row[0]
                a0[m] = row[2]
                w[m] = block_w[p, j]  # the members' (identical points, one label)
                slack += row[0] * C * (row[4] - row[3])
                m += 1
        model = _block_ascent(g, a0, members * C, floor[p], model_sigma, w, m, d, sw, bp) + slack
        bound += min(group_gap[gi], model)
    return bound


@njit(cache=True, inline="always")
def _lazy_models(prob, alpha, C, S, ssum, target, need, cand_v, cand_gap, n_cand, bound, scratch):
    """``bound`` with the deferred models spent, largest gap terms first, only until it is
    decided against ``need``: first each one bracketed (:func:`_block_bracket`, O(L)),
    its upper end in place of the gap terms, ``loose`` summing how far below it the
    models may still lie; then, only if that leaves the verdict open, the exact models
    of the loosest."""
    var_i = prob.var_i
    floor, block_w = target.floor, target.block_w
    model_sigma = min(target.block_sigma, 0.0)
    g, a0, w, d, sw, bp = scratch
    remaining = 0.0
    for k in range(n_cand):
        remaining += cand_gap[k]
    cand_low = np.zeros(n_cand)
    loose = 0.0
    # largest gap first, from a heap: the loop mostly stops after a few of them, where a
    # full sort of every candidate cost as much as the brackets (docs/benchmarks.md)
    heap = np.arange(n_cand)
    for start in range(n_cand // 2 - 1, -1, -1):
        _sift_down(heap, cand_gap, start, n_cand)
    size = n_cand
    while size > 0:
        if bound < need or bound - remaining - loose >= need:
            break  # decided either way: the rest cannot change the verdict
        k = heap[0]
        size -= 1
        heap[0] = heap[size]
        _sift_down(heap, cand_gap, np.int64(0), size)
        m = _point_terms(prob, alpha, C, S, ssum, block_w, cand_v[k], g, a0, w)[0]
        lam = floor[var_i[cand_v[k]]]
        upper, lower = _block_bracket(g, a0, C, lam, model_sigma, w, m, d, sw, bp)
        term = min(cand_gap[k], upper)
        bound -= cand_gap[k] - term
        remaining -= cand_gap[k]
        cand_gap[k] = term
        cand_low[k] = min(term, max(lower, 0.0))
        loose += term - cand_low[k]
    if bound >= need and bound - remaining - loose < need:
        for k in np.argsort(cand_low[:n_cand] - cand_gap[:n_cand]):
            if bound < need or bound - loose >= need or cand_gap[k] <= cand_low[k]:
                break
            m = _point_terms(prob, alpha, C, S, ssum, block_w, cand_v[k], g, a0, w)[0]
            lam = floor[var_i[cand_v[k]]]
            model = _block_ascent(g, a0, C, lam, model_sigma, w, m, d, sw, bp)
            bound -= cand_gap[k] - min(cand_gap[k], model)
            loose -= cand_gap[k] - cand_low[k]
    return bound


@njit(cache=True, _nrt=False)
def _sift_down(heap, key, start, size):
    """Restore the max-heap property of ``heap[:size]`` (indices into ``key``) below
    position ``start``."""
    i = start
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and key[heap[child + 1]] > key[heap[child]]:
            child += 1
        if key[heap[child]] <= key[heap[i]]:
            return
        top = heap[i]
        heap[i] = heap[child]
        heap[child] = top
        i = child


@njit(cache=True, _nrt=False)
def top_two(p, A, S):
    """(top class, its score, the runner-up's score) at point p from the scores S."""
    best = -np.inf
    second = -np.inf
    top = 0
    for m in range(A.shape[1]):
        f = 0.0
        for d in range(A.shape[0]):
            f += A[d, m] * S[d, p]
        if f > best:
            second = best
            best = f
            top = m
        elif f > second:
            second = f
    return top, best, second


@njit(cache=True, _nrt=False)
def certify(p, A, S, gap, scale):
    """(prediction at point p, whether ``gap`` proves it the optimum's): with ``gap``
    bounding ``D* - D(alpha)``, the top class must beat the runner-up by more than
    ``scale sqrt(2 gap)`` (module docstring)."""
    top, best, second = top_two(p, A, S)
    if gap < 0.0:
        gap = 0.0
    return top, best - second > scale * np.sqrt(2.0 * gap)


@njit(cache=True, _nrt=False)
def affordable(target, S, n):
    """(need, tau): the largest bound on ``D* - D(alpha)`` that still certifies the
    held-out point's top class from its scores in S (inf without a radius), and the
    gap terms below which a point's model is not worth its cost (a quarter of it,
    spread over the n points)."""
    _, best, second = top_two(target.point, target.A, S)
    need = np.inf if target.scale <= 0.0 else 0.5 * ((best - second) / target.scale) ** 2
    return need, need / (4.0 * n)


@njit(cache=True, inline="always")
def standing_bound(prob, alpha, C, S, ssum, target):
    """(bound, rate) with ``D*(C') - D(alpha) <= bound + (C' - C) rate`` for every ``C' >= C``.

    What keeps a fold's proof standing along a C path without another pass over its
    variables (module docstring). Each point counts by the smaller at C of its gap
    terms and its model, the model computed where :func:`prove` would compute it; a
    group of identical points, and every point where the variables are not listed
    point by point, by its gap terms. So the bound at C is never below
    :func:`suboptimality`'s.
    """
    K, var_i, var_j, cols, vals, c, margin = prob
    floor, group = target.floor, target.group
    model_sigma = min(target.block_sigma, 0.0)
    n_var = var_i.shape[0]
    g, a0, w, d, sw, bp = block_scratch(alpha.shape[1])
    _, tau = affordable(target, S, K.shape[0])
    seen = np.zeros(K.shape[0], dtype=np.bool_)
    ordered = True
    bound = 0.0
    rate = 0.0
    total = 0.0
    total_rate = 0.0
    v = np.int64(0)
    while v < n_var:
        i = var_i[v]
        m, point_gap, positive, _ = _point_terms(
            prob, alpha, C, S, ssum, target.block_w, v, g, a0, w
        )
        v += m
        total += point_gap
        total_rate += positive
        if seen[i]:
            ordered = False
        seen[i] = True
        alone = group.shape[0] == 0 or group[i] < 0
        if point_gap > tau and floor.shape[0] > 0 and floor[i] > 0.0 and alone:
            lam = floor[i]
            model = _block_ascent(g, a0, C, lam, model_sigma, w, m, d, sw, bp)
            if model < point_gap:
                wd = 0.0
                for q in range(m):
                    wd += w[q] * d[q]
                for q in range(m):
                    if d[q] >= C - a0[q]:  # at its upper bound: the model's sensitivity
                        pull = g[q] - lam * (d[q] + model_sigma * w[q] * wd)
                        if pull > 0.0:
                            rate += pull
                bound += model
                continue
        bound += point_gap
        rate += positive
    if not ordered:
        return total, total_rate
    return bound, rate


@njit(cache=True)
def prove(prob, alpha, C, S, ssum, target, cached=False):
    """(certified, max KKT violation) of the held-out ``target.point`` at ``alpha``.

    Sums the point's scores afresh (:func:`refresh_point_scores`), bounds
    ``D* - D(alpha)`` (:func:`suboptimality`, with models only where a point's gap
    terms exceed a quarter of what the certificate can afford spread over the points)
    and certifies (:func:`certify`); class by class where ``target.column_factor > 0``
    (:func:`prove_by_column`).
    """
    if target.column_factor > 0.0:
        return prove_by_column(prob, alpha, C, S, ssum, target, cached)
    K, var_i, var_j, cols, vals, c, margin = prob
    p, A, scale = target.point, target.A, target.scale
    refresh_point_scores(p, var_i, var_j, alpha, cols, vals, c, K, S, ssum)
    need, tau = affordable(target, S, K.shape[0])
    bound, viol = suboptimality(prob, alpha, C, S, ssum, target, tau, need)
    return certify(p, A, S, bound, scale)[1], viol


@njit(cache=True, _nrt=False)
def _column_model(g, a, C, lam):
    """``max g d - lam/2 d^2`` over ``0 <= a + d <= C`` and whether its maximiser is at
    the upper bound (one variable of :func:`column_bounds`)."""
    d = g / lam
    at_upper = d >= C - a
    if d < -a:
        d = -a
    elif at_upper:
        d = C - a
    return g * d - 0.5 * lam * d * d, at_upper, d


@njit(cache=True, inline="always")
def column_bounds(prob, alpha, C, S, target, bound, rate, group_models=True):
    """Add to ``bound[d]`` a bound on ``D_d* - D_d(alpha)`` for every coding column d
    and to ``rate[d]`` its growth per unit of C (:func:`column_terms` over every
    column); returns the largest KKT violation."""
    n_cols = bound.shape[0]
    viol = np.zeros(n_cols)
    column_terms(
        prob, alpha, C, S, target, bound, rate, viol, group_models, np.ones(n_cols, np.bool_)
    )
    return viol.max()


@njit(cache=True)
def column_terms(prob, alpha, C, S, target, bound, rate, viol, group_models, stale):
    """Add, for each coding column d where ``stale`` (the others' variables are not
    read), a bound on ``D_d* - D_d(alpha)`` to ``bound[d]``, its growth per unit of C
    (as :func:`standing_bound`'s) to ``rate[d]`` and the largest KKT violation to
    ``viol[d]``, for a dual that is separate problems by column (no mean term, one
    coding non-zero per variable: 1-vs-all).

    Per variable the smaller of its gap term and its one-variable model
    ``max g d - lambda_i v^2 / 2 d^2`` (``Q_d >= diag(lambda_i v_i^2)``); per column a
    group of identical points with one label as one variable with box ``[0, n C]``
    (``group_models``; else by its gap terms, as every group counts for ``rate``).
    Summed over the columns, never above :func:`suboptimality`'s bound.
    """
    _, var_i, var_j, cols, vals, _, margin = prob
    floor, group, mixed = target.floor, target.group, target.group_mixed
    use_model = floor.shape[0] > 0
    n_groups = mixed.shape[0] if use_model and group_models else 0
    n_cols = bound.shape[0]
    acc = np.zeros((n_groups, n_cols, 6))  # count, sum g, sum alpha, min g, max g, gap
    member = np.full(n_groups, -1, dtype=np.int64)
    scale = np.zeros((n_groups, n_cols))  # v^2 of the group's variables in the column
    for v in range(var_i.shape[0]):
        i = var_i[v]
        j = var_j[v]
        col = cols[i, j, 0]
        if not stale[col]:
            continue
        a = alpha[i, j]
        val = vals[i, j, 0]
        g = margin[i] - val * S[col, i]
        pv = projected_gradient(a, g, C)
        if pv > viol[col]:
            viol[col] = pv
        term = _gap_term(g, a, C)
        slope = g if g > 0.0 else 0.0
        in_group = group.shape[0] > 0 and group[i] >= 0
        if in_group and n_groups > 0 and not mixed[group[i]]:
            gi = group[i]
            member[gi] = i
            row = acc[gi, col]
            _group_add(row, g, a)
            row[5] += term
            scale[gi, col] = val * val
            rate[col] += slope
            continue
        if term > 0.0 and use_model and floor[i] > 0.0 and not in_group:
            model, at_upper, d = _column_model(g, a, C, floor[i] * val * val)
            if model < term:
                term = model
                slope = g - floor[i] * val * val * d if at_upper else 0.0
        bound[col] += term
        rate[col] += slope
    for gi in range(n_groups):
        p = member[gi]
        for col in range(n_cols):
            row = acc[gi, col]
            if row[0] == 0.0:
                continue
            term = row[5]
            if p >= 0 and floor[p] > 0.0 and term > 0.0:
                slack = row[0] * C * (row[4] - row[3])
                model = _column_model(
                    row[1] / row[0], row[2], row[0] * C, floor[p] * scale[gi, col]
                )[0]
                term = min(term, model + slack)
            bound[col] += term


@njit(cache=True, _nrt=False)
def certify_by_column(p, A, S, bound, r, need):
    """Whether the top class at point p is the optimum's, given ``bound[d]`` on each
    column's ``D_d* - D_d`` and the point's radius r (see :func:`prove_by_column`).
    Writes into ``need`` (D, unless empty) the columns of the classes in the pairs that
    fail: the top class's and each class that may still overtake it."""
    n_cols, n_classes = A.shape
    top, best, _ = top_two(p, A, S)
    err_top = 0.0
    for d in range(n_cols):
        err_top += abs(A[d, top]) * r * np.sqrt(2.0 * max(bound[d], 0.0))
    mark = need.shape[0] == n_cols
    if mark:
        need[:] = False
    proved = True
    for m in range(n_classes):
        if m == top:
            continue
        f = 0.0
        err = 0.0
        for d in range(n_cols):
            f += A[d, m] * S[d, p]
            err += abs(A[d, m]) * r * np.sqrt(2.0 * max(bound[d], 0.0))
        if not best - f > err_top + err:
            proved = False
            if not mark:
                return False
            for d in range(n_cols):
                if A[d, m] != 0.0 or A[d, top] != 0.0:
                    need[d] = True
    return proved


@njit(cache=True, inline="always")
def prove_by_column(prob, alpha, C, S, ssum, target, cached=False):
    """(certified, max KKT violation) for a dual that is separate problems by coding column.

    Each column's bound from :func:`column_terms`, the verdict from
    :func:`certify_by_column` (module docstring), the point's scores summed afresh
    first. ``cached`` (a cd solve's tries, :func:`isvm.solvers.epochs.cd_epochs`): the
    columns not stepped since the last try keep their scores, bounds and violations
    from ``target.column_cache``, exactly what summing them again would give.
    """
    p = target.point
    n_cols = target.A.shape[0]
    cache = target.column_cache
    stale = np.ones(n_cols, np.bool_)
    if cached:
        for d in range(n_cols):
            stale[d] = np.isnan(cache[0, d])
    K, var_i, var_j, cols, vals, c, margin = prob
    refresh_point_scores(p, var_i, var_j, alpha, cols, vals, c, K, S, ssum, stale)
    bound = np.zeros(n_cols)
    viol = np.zeros(n_cols)
    column_terms(prob, alpha, C, S, target, bound, np.zeros(n_cols), viol, TRUE, stale)
    if cached:
        for d in range(n_cols):
            if stale[d]:
                cache[0, d] = bound[d]
                cache[1, d] = viol[d]
            else:
                bound[d] = cache[0, d]
                viol[d] = cache[1, d]
    r = target.scale * target.column_factor
    return certify_by_column(p, target.A, S, bound, r, target.column_need), viol.max()
