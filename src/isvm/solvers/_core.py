"""Numba building blocks shared by the solvers and the leave-one-out engine.

State of a solve, all plain arrays (see :mod:`isvm.methods` for the notation):

- ``alpha`` (N, L): the dual variables;
- ``S`` (D, N): ``S[d, r] = sum_(i,j) alpha_ij u_ij[d] K[i, r]``;
- ``ssum`` (N,): ``sum_d S[d, r]``, kept only when the metric has a mean term (c != 0).

With them the dual gradient of a variable is O(1) and a step is O(N), for every
formulation. Problem variables are listed as ``var_i``/``var_j`` index arrays, so a
leave-one-out fold is just a shorter list over the same K.

The small helpers called once per variable in the hot loops (gradient, entry of Q,
step, random numbers) are compiled with ``_nrt=False``: they only index arrays,
never allocate, and without it each call reference-counts every array argument
(numba/numba#2345), which made ``dual_gradients`` 10x slower than the same code
written inline. A helper that tried to allocate would fail to compile, not
misbehave.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from isvm._jit import njit

# ---------------------------------------------------------------- bundles
# Named tuples of arrays: what crosses a numba boundary travels in these instead of
# long positional lists (numba passes them as plain structs; unpacked at the top of
# each kernel, so the loops read local arrays as before).


class Problem(NamedTuple):
    """A dual problem over listed variables: the kernel, the variables, their coding."""

    K: np.ndarray  # (N, N) kernel matrix
    var_i: np.ndarray  # (V,) point of each listed variable
    var_j: np.ndarray  # (V,) class of each listed variable
    cols: np.ndarray  # (N, L, 2) score columns of each variable's coding (-1: none)
    vals: np.ndarray  # (N, L, 2) their coefficients
    c: float  # the metric's mean coefficient (0: no mean term, ``ssum`` unused)


@njit(cache=True)
def with_variables(prob, var_i, var_j):
    """``prob`` over other variables (the same kernel and coding): a fold's, a free set's."""
    return Problem(prob.K, var_i, var_j, prob.cols, prob.vals, prob.c)


class Dual(NamedTuple):
    """A point of the dual and its scores (see the module docstring)."""

    alpha: np.ndarray  # (N, L)
    S: np.ndarray  # (D, N)
    ssum: np.ndarray  # (N,)


class Blocks(NamedTuple):
    """Per-point blocks for :func:`block_epochs`: the points visited and their coupling."""

    points: np.ndarray  # (P,) the points whose multipliers are variables
    var_mask: np.ndarray  # (N, L) which multipliers exist
    w: np.ndarray  # (N, L) block direction of each multiplier
    sigma: float  # block coupling (0: uncoupled, single coordinates suffice)


class Target(NamedTuple):
    """A held-out point whose prediction a solve may stop on once certified (:func:`certify`).

    ``floor``, ``group`` and ``group_mixed`` are the kernel's per-point eigenvalue
    floors and groups of identical points
    (:class:`isvm.loo.certificate.KernelGeometry`), and ``block_w``/``block_sigma``
    the coding's per-point blocks, read by :func:`suboptimality`; an empty ``floor``
    (or a point's 0) gives the plain duality gap.
    """

    point: int  # -1: none
    A: np.ndarray  # (D, L) scores -> class scores
    scale: float  # kappa * (held-out radius, at most sqrt(K_pp))
    floor: np.ndarray  # (N,) K >= diag(floor) over distinct points ((0,): none)
    group: np.ndarray  # (N,) int64 group of identical points, -1 alone
    group_mixed: np.ndarray  # (G,) bool, the group's labels differ
    block_w: np.ndarray  # (N, L) each point's block direction (Coding.block_w)
    block_sigma: float  # block coupling (Coding.block_sigma)
    #: > 0 where the dual is separate problems by coding column (1-vs-all): each column's
    #: score at the point then moves by at most ``scale * column_factor`` times the norm
    #: of its own column's change, and :func:`prove` certifies class by class
    #: (:func:`prove_by_column`); 0: one bound for all columns
    column_factor: float
    #: (D,) scratch that :func:`prove_by_column` writes: the columns whose bounds its
    #: verdict still waits on (those :func:`cd_epochs` then steps first)
    column_need: np.ndarray
    #: (2, D) scratch of a cd solve's certificate tries: each column's bound and largest
    #: KKT violation at the last try, NaN where a step in the column made them stale
    #: (:func:`prove_by_column` with ``cached``)
    column_cache: np.ndarray


class StochasticRule(NamedTuple):
    """Step and stopping rule of :func:`stochastic_steps` (the paper's Algorithms 1 and 2)."""

    eta: float  # step factor (1: Algorithm 1)
    T: float  # KKT-distance resolution
    eps: float  # bound tolerance of the KKT distance
    theta: float  # mean KKT distance to stop at
    use_mean: bool  # the paper's mean rule (else the maximum violation <= tol)


#: no certification target
NO_TARGET = Target(
    -1,
    np.zeros((1, 1)),
    0.0,
    np.zeros(0),
    np.zeros(0, np.int64),
    np.zeros(0, np.bool_),
    np.zeros((1, 1)),
    0.0,
    0.0,
    np.ones(1, np.bool_),
    np.zeros((2, 0)),
)

# ---------------------------------------------------------------- random numbers
# A tiny explicit-state generator (splitmix64) so that every solve is reproducible
# from its seed alone, whatever thread runs it.


@njit(cache=True, _nrt=False)
def rng_next(rng):
    """Advance ``rng`` (uint64 array of length 1) and return 64 random bits."""
    rng[0] += np.uint64(0x9E3779B97F4A7C15)
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, _nrt=False)
def rng_below(rng, n):
    """A uniform integer in [0, n)."""
    return np.int64(rng_next(rng) % np.uint64(n))


@njit(cache=True)
def rng_state(seed):
    """A fresh generator state from a non-negative integer seed."""
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = np.uint64(seed)
    rng_next(rng)
    return rng


@njit(cache=True)
def shuffle_prefix(index, size, rng):
    """Fisher-Yates shuffle of ``index[:size]`` in place."""
    for s in range(size - 1, 0, -1):
        r = rng_below(rng, s + 1)
        tmp = index[s]
        index[s] = index[r]
        index[r] = tmp


# ---------------------------------------------------------------- gradient, step, optimality


@njit(cache=True, _nrt=False)
def q_times_alpha(i, j, cols, vals, c, S, ssum):
    """``(Q alpha)_ij`` from the maintained scores: the margin term of variable (i, j)."""
    q = 0.0
    vsum = 0.0
    for t in range(2):
        col = cols[i, j, t]
        if col >= 0:
            q += vals[i, j, t] * S[col, i]
            vsum += vals[i, j, t]
    if c != 0.0:
        q -= c * vsum * ssum[i]
    return q


@njit(cache=True, _nrt=False)
def apply_step(i, j, delta, cols, vals, c, K, S, ssum):
    """Record ``alpha_ij += delta`` in S (and ssum): O(N) per coding non-zero."""
    n = K.shape[0]
    vsum = 0.0
    for t in range(2):
        col = cols[i, j, t]
        if col >= 0:
            a = delta * vals[i, j, t]
            vsum += vals[i, j, t]
            row = S[col]
            for r in range(n):
                row[r] += a * K[i, r]
    if c != 0.0 and vsum != 0.0:
        a = delta * vsum
        for r in range(n):
            ssum[r] += a * K[i, r]


#: the share of non-zero (point, column) coefficients from which :func:`apply_point_steps`
#: takes one matrix product (BLAS) instead of a pass over ``K[i]`` per non-zero. The
#: product's cost hardly depends on the share (packing K is much of it), the passes'
#: grows with it: they cost the same at a share of 0.15-0.6 (N = 300-500, D = 4-10, one
#: thread; docs/benchmarks.md, round 29), so 0.5 loses little where the product is cheap
#: and nothing where it is dear (abalone, D = 5: 1.3x slower folds at 0.35).
DENSE_STEP_SHARE = 0.5


@njit(cache=True)
def apply_point_steps(coef, c, K, S, ssum):
    """Record ``S[d] += coef[i, d] K[i]`` for every point i and column d (and ssum).

    The same as :func:`apply_step` per variable, with the changes of all of a point's
    variables summed first. Where at least :data:`DENSE_STEP_SHARE` of ``coef`` is
    non-zero (a face solve moves every free variable) it is one product ``coef' K``;
    otherwise one pass over K[i] per column a point touches, and one for ssum.
    """
    n_rows, n_cols = coef.shape
    nnz = 0
    for i in range(n_rows):
        for d in range(n_cols):
            if coef[i, d] != 0.0:
                nnz += 1
    if nnz == 0:
        return
    if nnz < DENSE_STEP_SHARE * n_rows * n_cols or n_rows != K.shape[0]:
        _point_step_passes(coef, c, K, S, ssum)
        return
    change = np.dot(coef.T, K)  # (D, N): K read once, by rows as the passes read it
    for d in range(n_cols):
        row = S[d]
        for r in range(K.shape[1]):
            row[r] += change[d, r]
    if c != 0.0:
        for d in range(n_cols):
            for r in range(K.shape[1]):
                ssum[r] += change[d, r]


@njit(cache=True, _nrt=False)
def _point_step_passes(coef, c, K, S, ssum):
    """:func:`apply_point_steps` for a sparse ``coef``: one pass over ``K[i]`` per non-zero."""
    n = K.shape[0]
    for i in range(coef.shape[0]):
        total = 0.0
        for d in range(coef.shape[1]):
            a = coef[i, d]
            if a != 0.0:
                total += a
                row = S[d]
                for r in range(n):
                    row[r] += a * K[i, r]
        if c != 0.0 and total != 0.0:
            for r in range(n):
                ssum[r] += total * K[i, r]


@njit(cache=True, _nrt=False)
def record_point_change(i, j, delta, cols, vals, coef):
    """Record ``alpha_ij += delta`` in the per-point coefficients ``coef`` (N x D) that
    :func:`apply_point_steps` applies."""
    for t in range(2):
        col = cols[i, j, t]
        if col >= 0:
            coef[i, col] += delta * vals[i, j, t]


@njit(cache=True, _nrt=False)
def q_entry(i, j, k, m, cols, vals, c, K):
    """One entry ``Q[(i,j), (k,m)] = K_ik <u_ij, (I - c 11') u_km>`` from the codings."""
    dot = 0.0
    s1 = 0.0
    s2 = 0.0
    for t in range(2):
        a = cols[i, j, t]
        if a >= 0:
            s1 += vals[i, j, t]
            for u in range(2):
                if cols[k, m, u] == a:
                    dot += vals[i, j, t] * vals[k, m, u]
        if cols[k, m, t] >= 0:
            s2 += vals[k, m, t]
    return K[i, k] * (dot - c * s1 * s2)


@njit(cache=True, _nrt=False)
def diag_q(i, j, cols, vals, c, K):
    """``Q_(ij),(ij) = K_ii (sum_t v_t^2 - c (sum_t v_t)^2)``."""
    return q_entry(i, j, i, j, cols, vals, c, K)


@njit(cache=True, _nrt=False)
def projected_gradient(a, g, C):
    """KKT violation of one variable: |projected gradient| of the dual (g = 1 - (Q alpha))."""
    if a <= 0.0:
        return g if g > 0.0 else 0.0
    if a >= C:
        return -g if g < 0.0 else 0.0
    return abs(g)


@njit(cache=True)
def dual_gradients(prob, S, ssum):
    """``g = 1 - Q alpha`` (the ascent gradient) of every variable of ``prob``, from the scores."""
    _, var_i, var_j, cols, vals, c = prob
    g = np.empty(var_i.shape[0])
    for v in range(var_i.shape[0]):
        g[v] = 1.0 - q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum)
    return g


@njit(cache=True)
def optimality(var_i, var_j, alpha, cols, vals, c, C, S, ssum):
    """(dual objective, duality gap, max KKT violation) over the listed variables.

    The bias-free primal ``1/2 ||w||^2 + C sum hinge(1 - <w, z_ij>)`` at
    ``w = sum alpha_ij z_ij`` has the hinge arguments ``g_ij = 1 - (Q alpha)_ij``, so
    ``gap = sum_ij [C max(0, g_ij) - alpha_ij g_ij]``: no extra kernel work.
    """
    obj = 0.0
    gap = 0.0
    viol = 0.0
    for v in range(var_i.shape[0]):
        i = var_i[v]
        j = var_j[v]
        a = alpha[i, j]
        g = 1.0 - q_times_alpha(i, j, cols, vals, c, S, ssum)
        obj += a - 0.5 * a * (1.0 - g)
        gap += (C * g if g > 0.0 else 0.0) - a * g
        p = projected_gradient(a, g, C)
        if p > viol:
            viol = p
    return obj, gap, viol


@njit(cache=True, _nrt=False)
def refresh_point_scores(p, var_i, var_j, alpha, cols, vals, c, K, S, ssum, stale=None):
    """Recompute ``S[:, p]`` (and ``ssum[p]``) exactly from ``alpha`` over the listed variables.

    A held-out point's scores kept by incremental steps are the full fit's scores
    minus the point's own contribution plus every step since: a rounding residue of
    order 1e-16 x C that decides the prediction when the point is far from every
    training point (its true scores are of the order of its largest K[i, p], which
    can be 1e-40). Summed afresh here, in variable order, O(number of variables).
    The fold's own gradients never read column p, so overwriting it is safe.
    ``stale`` (D,): only those columns (a dual without a mean term), the same sums in
    the same order, so a column not stepped since its last refresh keeps exactly the
    value this one would give it (:func:`prove_by_column`'s cached tries).
    """
    for d in range(S.shape[0]):
        if stale is None or stale[d]:
            S[d, p] = 0.0
    total = 0.0
    for v in range(var_i.shape[0]):
        i = var_i[v]
        j = var_j[v]
        a = alpha[i, j]
        if a != 0.0:
            k = a * K[i, p]
            for t in range(2):
                col = cols[i, j, t]
                if col >= 0 and (stale is None or stale[col]):
                    S[col, p] += k * vals[i, j, t]
                    total += k * vals[i, j, t]
    if c != 0.0:
        ssum[p] = total


@njit(cache=True)
def block_scratch(n_classes):
    """Work arrays of :func:`block_step` for up to ``n_classes`` variables: g, a0, w, d, sw, bp."""
    m = n_classes
    return np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(2 * m)


@njit(cache=True, _nrt=False)
def _gap_term(g, a, C):
    """One variable's term of the duality gap, ``C max(0, g) - a g``."""
    return g * (C - a) if g > 0.0 else -g * a


@njit(cache=True, _nrt=False)
def _block_ascent(g, a0, C, lam, sigma, w, m, d, sw, bp):
    """``max g'd - lam/2 (d'd + sigma (w'd)^2)`` over ``0 <= a0 + d <= C`` (first m entries).

    The exact maximiser is :func:`block_step`'s, with ``lam`` in place of ``K_ii``.
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


@njit(cache=True, _nrt=False)
def _block_bracket(g, a0, C, lam, sigma, w, m, u, sw, gk):
    """(upper, lower) bounds on :func:`_block_ascent`'s maximum, in O(m) a Newton step.

    ``u = clip(g/lam - sigma w t)`` is feasible for any t, so the model's value at u
    bounds the maximum from below; and since ``-1/2 d'Ad <= 1/2 u'Au - u'Ad`` for the
    positive semidefinite ``A = I + sigma w w'``, the maximum over the box of the
    linear ``g'd + lam (1/2 u'Au - u'Ad)`` bounds it from above. Both meet at the
    maximiser, whose t is the root of :func:`block_step`'s residual ``t - w'u(t)``;
    a few Newton steps from t = 0 (stopping once the residual vanishes, and at once
    where sigma = 0: u is then the exact maximiser, the model separable) come close
    (letter Ns 500 ISVM: the upper bounds summed within 0.3% of the exact models',
    at a fifth of the cost of the exact step's bisection). Scratch ``u``, ``sw``,
    ``gk`` of length m."""
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
    _, var_i, var_j, cols, vals, c = prob
    i = var_i[v]
    m = 0
    point_gap = 0.0
    positive = 0.0
    viol = 0.0
    while v + m < var_i.shape[0] and var_i[v + m] == i:
        j = var_j[v + m]
        a = alpha[i, j]
        gv = 1.0 - q_times_alpha(i, j, cols, vals, c, S, ssum)
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


@njit(cache=True)
def suboptimality(prob, alpha, C, S, ssum, target, tau, need):
    """(bound on ``D* - D(alpha)``, max KKT violation) over ``prob``'s variables.

    ``D* - D(alpha) >= ||w - w*||^2 / 2`` (the dual is a concave quadratic whose
    Hessian is ``-Q``, and alpha* is optimal on the box), so any upper bound of it
    certifies (:func:`certify`). Per point, the smaller of two is taken: its terms
    of the duality gap (each residual g weighted by C), and, where
    ``K >= diag(target.floor)`` over distinct points (:mod:`isvm.loo.certificate`)
    gives the point a floor ``lambda_i > 0``, the maximum of its separable model
    ``g'd - lambda_i/2 d'(I + sigma w w')d`` over the box, which
    ``Q >= blockdiag(lambda_i (I + sigma w_i w_i'))`` makes an upper bound and in
    which a small residual counts as ``g^2 / lambda_i`` instead of ``C g``. Identical points
    with one label share their gradients, so each group of them is bounded as one
    point with box ``[0, n C]`` (allowing for rounding differences between their
    gradients); a group with mixed labels counts with its gap terms. The point's
    variables must be listed together (as :func:`isvm.solvers.variable_list` and the
    folds list them); otherwise only the gap is used.

    The model costs O(L) per point where ``sigma >= 0`` (1-vs-all, Weston-Watkins:
    ``I + sigma w w' >= I``, so the separable ``sigma = 0`` model bounds it) and a sort
    of 2L breakpoints where ``sigma < 0`` (ISVM, LLW, Scatter); it is evaluated only
    for points whose gap terms exceed ``tau`` (the others keep them). With a finite
    ``need`` (what :func:`certify` can afford), the models are spent lazily, largest
    gap first, only until the bound is below ``need`` or cannot get there even if
    every remaining model were 0: the bound returned may then be looser, but it is
    below ``need`` exactly when the full one is (the same certificate, for a
    fraction of the models). There each model is first bracketed in O(L)
    (:func:`_block_bracket`, a few Newton steps where the exact block maximiser
    bisects over 2L breakpoints): its upper end counts, and the exact models are
    computed only where the brackets' widths leave the verdict open.
    """
    K, var_i, var_j, cols, vals, c = prob
    floor, group, mixed = target.floor, target.group, target.group_mixed
    block_w = target.block_w
    model_sigma = min(target.block_sigma, 0.0)
    n_classes = alpha.shape[1]
    n_var = var_i.shape[0]
    use_model = floor.shape[0] > 0
    grouped = use_model and mixed.shape[0] > 0
    n_groups = mixed.shape[0] if grouped else 0
    acc = np.zeros((n_groups, n_classes, 5))  # count, sum g, sum alpha, min g, max g
    group_gap = np.zeros(n_groups)
    member = np.full(n_groups, -1, dtype=np.int64)  # a fold point of each group
    seen = np.zeros(K.shape[0] if use_model else 0, dtype=np.bool_)
    g, a0, w, d, sw, bp = block_scratch(n_classes)
    lazy = use_model and need < np.inf
    n_cand = 0  # lazy: points whose models are deferred (first variable, gap)
    cand_v = np.empty(K.shape[0] if lazy else 0, dtype=np.int64)
    cand_gap = np.empty(K.shape[0] if lazy else 0)
    total_gap = 0.0
    bound = 0.0
    viol = 0.0
    ordered = True
    v = 0
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
    if not use_model or not ordered:
        return total_gap, viol
    # each group of identical points with one label: one block over the summed
    # multipliers (the members' variables share their classes, hence w)
    for gi in range(n_groups):
        if mixed[gi]:
            continue
        p = member[gi]
        if p < 0 or floor[p] <= 0.0:
            bound += group_gap[gi]
            continue
        m = 0
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
    if n_cand > 0:
        # first each candidate's model bracketed (:func:`_block_bracket`, O(L)): its
        # upper end replaces the gap terms, and ``loose`` sums how far below it the
        # models may still lie; then, only if that leaves the verdict open, the exact
        # models of the loosest, as before
        remaining = 0.0
        for k in range(n_cand):
            remaining += cand_gap[k]
        cand_low = np.zeros(n_cand)
        loose = 0.0
        # largest gap first, from a heap: the loop mostly stops after a few of them, and
        # a full sort of every candidate cost as much as the brackets (letter Ns 500 WW)
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
            _sift_down(heap, cand_gap, 0, size)
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
    return min(total_gap, bound), viol


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
def affordable(target, S, n):
    """(need, tau): the largest bound on ``D* - D(alpha)`` that still certifies the
    held-out point's top class from its scores in S (inf without a radius), and the
    gap terms below which a point's model is not worth its cost (a quarter of it,
    spread over the n points)."""
    _, best, second = top_two(target.point, target.A, S)
    need = np.inf if target.scale <= 0.0 else 0.5 * ((best - second) / target.scale) ** 2
    return need, need / (4.0 * n)


@njit(cache=True)
def standing_bound(prob, alpha, C, S, ssum, target):
    """(bound, rate) with ``D*(C') - D(alpha) <= bound + (C' - C) rate`` for every ``C' >= C``.

    What keeps a fold's proof standing along a C path without another pass over its
    variables: alpha (feasible at C) stays feasible at every larger C, and its
    gradients and the held-out point's scores do not depend on C. Each point counts
    as in :func:`suboptimality`, by the smaller at C of its duality-gap terms, which
    grow with C at the rate of its positive gradients, and its model, whose maximum
    over the box is concave in C and so grows at most at the rate of the multipliers
    of its maximiser's upper bounds (0 where the maximiser stays below C: the model
    then stands for every larger C). Models are spent where the gap terms exceed what
    :func:`prove` spends them on; points in a group of identical ones, and every point
    when the variables are not listed point by point, count by their gap terms. So the
    bound at C is never below ``suboptimality``'s.
    """
    K, var_i, var_j, cols, vals, c = prob
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
    v = 0
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

    Sums the point's scores afresh (:func:`refresh_point_scores`), then bounds
    ``D* - D(alpha)`` (:func:`suboptimality`), spending the per-point models only
    where a point's gap terms exceed a quarter of what the certificate can afford
    spread over the points, and only until the verdict is decided, and certifies
    (:func:`certify`). Where the dual is separate problems by coding column
    (``target.column_factor > 0``), class by class first (:func:`prove_by_column`).
    """
    if target.column_factor > 0.0:
        return prove_by_column(prob, alpha, C, S, ssum, target, cached)
    K, var_i, var_j, cols, vals, c = prob
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


@njit(cache=True)
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
    """Add to ``bound[d]`` a bound on ``D_d* - D_d(alpha)`` for every coding column d of a
    dual that is separate problems by column (no mean term, one coding non-zero per
    variable: 1-vs-all), and to ``rate[d]`` its growth per unit of C for the same
    multipliers at every larger C (:func:`standing_bound`'s, column by column), and to
    ``viol[d]`` the column's largest KKT violation; only the columns where ``stale``
    (the others' variables are not read).

    Each column's problem is a dual of its own, so ``D_d* - D_d >= ||w_d - w_d*||^2 / 2``
    column by column. Per variable the smaller of its duality-gap term and, where the
    point has an eigenvalue floor ``lambda_i`` (``K >= diag(lambda)`` over distinct points,
    so ``Q_d >= diag(lambda_i v_i^2)``), the maximum of ``g d - lambda_i v_i^2 / 2 d^2``
    over the box: :func:`suboptimality`'s separable model, one variable at a time (a
    point's variables lie in different columns), and in each column a group of
    identical points with one label as one variable with box ``[0, n C]``, as there
    (``group_models``; else by their gap terms, as every group counts for ``rate``).
    Summed over the columns it is never above :func:`suboptimality`'s bound. Gap
    term and model are concave in C (the gap term grows at the rate of a positive
    gradient, the model only while its maximiser sits at the upper bound), so the
    chosen one's slope bounds the growth.
    """
    _, var_i, var_j, cols, vals, _ = prob
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
        g = 1.0 - val * S[col, i]
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


@njit(cache=True)
def prove_by_column(prob, alpha, C, S, ssum, target, cached=False):
    """(certified, max KKT violation) for a dual that is separate problems by coding column.

    With ``b_d`` from :func:`column_bounds`, column d's score at the held-out point moves
    by at most ``e_d = r sqrt(2 b_d)`` (``r = scale * column_factor``, the point's radius),
    so class m's by at most ``E_m = sum_d |A[d, m]| e_d``; the top class is the optimum's
    if it beats every other class m by more than ``E_top + E_m`` (:func:`certify_by_column`).
    Sharper than one bound over all columns (:func:`certify`): a class far below the top
    may keep a loose column, and the runner-up's margin is charged only the two classes'
    own bounds. Sums the point's scores afresh first (as :func:`refresh_point_scores`).
    ``cached`` (a cd solve's tries, :func:`cd_epochs`): the columns not stepped since
    the last try keep their scores, bounds and violations from ``target.column_cache``,
    which are exactly what they would be summed again; the others are summed and
    cached.
    """
    p = target.point
    n_cols = target.A.shape[0]
    cache = target.column_cache
    stale = np.ones(n_cols, np.bool_)
    if cached:
        for d in range(n_cols):
            stale[d] = np.isnan(cache[0, d])
    K, var_i, var_j, cols, vals, c = prob
    refresh_point_scores(p, var_i, var_j, alpha, cols, vals, c, K, S, ssum, stale)
    bound = np.zeros(n_cols)
    viol = np.zeros(n_cols)
    column_terms(prob, alpha, C, S, target, bound, np.zeros(n_cols), viol, True, stale)
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


# ---------------------------------------------------------------- coordinate descent

#: held-out (certified) solves step only variables, or points, whose KKT violation
#: exceeds this fraction of tol: after a warm start most are already there
FOLD_STEP_FRACTION = 1.0

#: a neighbours-first epoch tries the certificate each time its work since the last
#: try reaches this many passes over the variables (a ``prove`` is about one pass),
#: counting a visit's gradient reads as one unit each and a step's score updates as
#: one per :data:`SCORE_UPDATES_PER_READ`. The 1, 2, 4, ... visits of rounds 8-16 spent
#: most of a cd fold on its tries (letter Ns 500 ISVM: up to 10 of 0.12-0.17 ms each);
#: a quarter of a pass was the best of 0.1, 0.25 and 1 on letter (Ns 200 1-vs-all,
#: Ns 500 ISVM; round 17 in docs/benchmarks.md)
NEARBY_TRY_SPACING = 0.25
SCORE_UPDATES_PER_READ = 100.0


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
    """Prediction at point p and whether ``gap`` proves it is the optimum's.

    ``gap`` bounds ``D* - D(alpha)`` (the duality gap, or :func:`suboptimality`'s
    sharper bound), so ``||w - w*||^2 <= 2 gap``, and a class-score difference moves by
    at most ``scale * ||w - w*||`` with ``scale = score_diff_norm * r_p``, ``r_p`` the
    norm of the point's projection onto the training span (at most ``sqrt(K_pp)``).
    If the top score beats the runner-up by more than ``scale * sqrt(2 gap)``, no
    class can overtake it at the optimum.
    """
    top, best, second = top_two(p, A, S)
    if gap < 0.0:
        gap = 0.0
    return top, best - second > scale * np.sqrt(2.0 * gap)


@njit(cache=True)
def _nearby_try(prob, dual, C, target, cached=False):
    """A neighbours-first epoch's certificate try, made where :func:`_nearby_due` says.
    Returns (work left, moved, proved, max KKT violation); ``cached`` as in
    :func:`prove`."""
    alpha, S, ssum = dual
    proved, viol = prove(prob, alpha, C, S, ssum, target, cached)
    return 0.0, False, proved, viol


@njit(cache=True, _nrt=False)
def _nearby_due(nearby, work, moved, n_var):
    """Whether a neighbours-first epoch tries the certificate now: once the work since
    the last try (``work``, in units of reading one variable's gradient) reaches what a
    try costs (:data:`NEARBY_TRY_SPACING` passes over the ``n_var`` variables) and a
    step was taken since. Checked before the call to :func:`_nearby_try`, which passes
    every array of its bundles: a call per variable reference-counted them all, a third
    of a letter Ns 500 1-vs-all fold's time (``perf``)."""
    return nearby and moved and work >= NEARBY_TRY_SPACING * n_var


@njit(cache=True)
def nearby_order(row, var_i, index):
    """Write into ``index`` the variables ordered by ``row[var_i]``, largest first, ties
    in list order: the stable sort of the variables by that key, found by sorting the
    runs of consecutive variables of one point instead (one key each; the variables of
    a run keep their order), which gives the same order for L times fewer keys
    (letter Ns 500 1-vs-all: 0.49 ms a fold for the variables, 0.03 for the points)."""
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


@njit(cache=True)
def cd_epochs(prob, C, dual, tol, max_epochs, rng, shrinking, target, tried=False):
    """Permuted coordinate descent with shrinking (LIBLINEAR-style) until max KKT <= tol.

    Each epoch visits the active variables in a fresh random order and solves each
    one-variable problem exactly (clipped Newton step, eq. 7.1). Variables at a
    bound whose gradient points outward by more than the last epoch's largest
    violation are shrunk; before stopping, the exact violation over *all*
    variables is checked, so shrinking never changes the answer. The gradient of
    a shrunk variable is always exact (it is read from S), so un-shrinking is free.

    With ``target.point >= 0`` (a held-out point, see :func:`certify`) the solve
    also stops, before the first epoch or after any, as soon as the prediction at
    that point is certified; whichever way it returns, that point's scores in S are
    then exact for the returned alpha (:func:`refresh_point_scores`). Its first epoch
    visits the variables of the points nearest the held-out one first and tries the
    certificate as its work allows (:func:`_nearby_try`), as :func:`block_epochs` does.
    ``tried``: the caller tried the certificate on this very start, in vain, so the
    try before the first epoch is skipped (it would fail the same way).

    Returns (epochs, converged, max violation, certified).
    """
    K, var_i, var_j, cols, vals, c = prob
    alpha, S, ssum = dual
    cert_point = target.point
    n_var = var_i.shape[0]
    index = np.arange(n_var)
    # a held-out solve moves only the variables that matter: those within a tenth of
    # tol of optimality stay put (the stopping test still reads every variable)
    skip = FOLD_STEP_FRACTION * tol if cert_point >= 0 else 0.0
    step_work = K.shape[0] / SCORE_UPDATES_PER_READ  # a step's cost, for _nearby_try
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
        pg_max = -np.inf
        pg_min = np.inf
        work = 0.0
        moved = False
        s = 0
        while s < active:
            if _nearby_due(nearby, work, moved, n_var):
                work, moved, proved, near_viol = _nearby_try(prob, dual, C, target, cached)
                if proved:
                    return epoch + 1, near_viol <= tol, near_viol, True
            v = index[s]
            i = var_i[v]
            j = var_j[v]
            if restricted and not need[cols[i, j, 0]]:
                s += 1
                continue
            if nearby:
                work += 1.0
            a = alpha[i, j]
            G = q_times_alpha(i, j, cols, vals, c, S, ssum) - 1.0  # minimisation gradient
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
            if pg > skip or pg < -skip:
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
                    moved = True
                    alpha[i, j] = new
                    apply_step(i, j, delta, cols, vals, c, K, S, ssum)
                    work += step_work
                    if cached:
                        for t in range(2):
                            if cols[i, j, t] >= 0:
                                cache[0, cols[i, j, t]] = np.nan
            s += 1
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
            _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, C, S, ssum)
            if viol <= tol:
                if cert_point >= 0:
                    refresh_point_scores(cert_point, var_i, var_j, alpha, cols, vals, c, K, S, ssum)
                return epoch, True, viol, False
            active = n_var
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    certified = False
    if cert_point >= 0:
        certified, viol = prove(prob, alpha, C, S, ssum, target, cached)
    else:
        viol = optimality(var_i, var_j, alpha, cols, vals, c, C, S, ssum)[2]
    return epoch, viol <= tol, viol, certified


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
    K, var_i, var_j, cols, vals, c = prob
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
        g = 1.0 - q_times_alpha(i, j, cols, vals, c, S, ssum)
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
            gu = 1.0 - q_times_alpha(iu, ju, cols, vals, c, S, ssum)
            au = alpha[iu, ju]
            if use_mean:
                total += kkt_distance(-gu, au, C, T, eps)
            else:
                p = projected_gradient(au, gu, C)
                if p > viol:
                    viol = p
        stopped = total / n_var < theta if use_mean else viol <= tol
    _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, C, S, ssum)
    return step, stopped, viol


# ---------------------------------------------------------------- exact per-point block updates


@njit(cache=True, _nrt=False)
def _block_move(gk, sw, t, a0, C):
    """One variable's move in a block step at the residual's t:
    ``clip(gk - sw t, -a0, C - a0)`` (the box of its multiplier a0)."""
    z = gk - sw * t
    if z < -a0:
        return -a0
    if z > C - a0:
        return C - a0
    return z


@njit(cache=True, _nrt=False)
def _block_residual(t, gk, a0, C, sw, w, m):
    """F(t) = t - sum_j w_j clip(gk_j - sw_j t, -a0_j, C - a0_j): nondecreasing in t."""
    h = 0.0
    for j in range(m):
        h += w[j] * _block_move(gk[j], sw[j], t, a0[j], C)
    return t - h


@njit(cache=True, _nrt=False)
def _keep_beyond(bp, end, pivot, above):
    """Compact ``bp[:end]`` to its entries above (or below) ``pivot``; returns the new end."""
    q = 0
    for r in range(end):
        if (bp[r] > pivot) if above else (bp[r] < pivot):
            bp[q] = bp[r]
            q += 1
    return q


@njit(cache=True, _nrt=False)
def block_step(g, a0, C, k, sigma, w, m, d, sw, bp):
    """Exact maximiser d of ``g'd - k/2 (d'd + sigma (w'd)^2)`` with ``0 <= a0 + d <= C``.

    Stationarity gives ``d_j = clip(g_j/k - sigma w_j t)`` with ``t = w'd``; the
    residual F(t) = t - w'd(t) is nondecreasing and piecewise linear (slope
    ``1 + sigma * sum of w_j^2 over unclipped j``, which is >= 0 whenever the block
    is positive semidefinite), so its root lies between the largest of the 2m
    breakpoints with F < 0 and the smallest with F >= 0, where F is linear. Those two
    are found by bisection on the unsorted breakpoints (each round keeps those on the
    root's side of the middle candidate: O(m) in all, where sorting them first cost
    O(m log m) and was most of the step). Writes d[:m] (used for g/k until then).
    """
    gk = d  # g/k, computed once; d[j] is written last, after its own gk[j] is read
    nb = 0
    for j in range(m):
        gk[j] = g[j] / k
        sw[j] = sigma * w[j]
        if sw[j] != 0.0:
            bp[nb] = (gk[j] + a0[j]) / sw[j]
            bp[nb + 1] = (gk[j] - (C - a0[j])) / sw[j]
            nb += 2
    t = 0.0
    if nb > 0:
        lo = -np.inf  # the largest breakpoint seen with F < 0, and F there
        hi = np.inf  # the smallest with F >= 0
        f_lo = 0.0
        f_hi = 0.0
        end = nb  # candidates bp[:end], all strictly between lo and hi
        while end > 0:
            pivot = bp[end // 2]
            f = _block_residual(pivot, gk, a0, C, sw, w, m)
            if f < 0.0:
                lo, f_lo = pivot, f
                end = _keep_beyond(bp, end, pivot, True)
            else:
                hi, f_hi = pivot, f
                end = _keep_beyond(bp, end, pivot, False)
        if lo == -np.inf:
            t = hi - f_hi  # slope 1 left of every breakpoint (all clipped)
        elif hi == np.inf:
            t = lo - f_lo  # slope 1 right of every breakpoint
        else:
            t = lo - f_lo * (hi - lo) / (f_hi - f_lo)
    for j in range(m):
        d[j] = _block_move(gk[j], sw[j], t, a0[j], C)


@njit(cache=True)
def block_epochs(prob, blocks, C, dual, tol, max_epochs, rng, target, tried=False):
    """Block coordinate descent: each step solves one point's multipliers exactly.

    Points are visited in a fresh random order every epoch; a point whose
    multipliers are all KKT-optimal is skipped for the cost of reading its L
    gradients. A held-out solve's first epoch instead visits the points nearest the
    held-out one first (by kernel value) and tries the certificate each time the
    epoch's work since the last try reaches a fraction of a try's cost
    (:func:`_nearby_try`): on a near-diagonal kernel, removing a point disturbs its
    neighbours most, and many folds are proved once those few have moved (an epoch
    counts whole). The scores change along at most D columns per step (O(N D), the
    same as L single-coordinate steps), and the block step moves along the flat
    directions of the singular ISVM dual that single coordinates can only zigzag
    along. Stopping and certification as in :func:`cd_epochs`; ``prob``'s variables
    are the same problem's, listed for the exact optimality check.

    Returns (epochs, converged, max violation, certified).
    """
    K, var_i, var_j, cols, vals, c = prob
    points, var_mask, block_w, block_sigma = blocks
    alpha, S, ssum = dual
    cert_point = target.point
    n_points = points.shape[0]
    n_classes = alpha.shape[1]
    n_cols = S.shape[0]
    n = K.shape[0]
    index = points.copy()
    g, a0, w, d, sw, bp = block_scratch(n_classes)
    js = np.empty(n_classes, dtype=np.int64)
    coef = np.zeros(n_cols)
    skip = FOLD_STEP_FRACTION * tol if cert_point >= 0 else 0.0  # as in cd_epochs
    col_work = n / SCORE_UPDATES_PER_READ  # one column's score update, for _nearby_try
    epoch = 0
    viol = np.inf
    while epoch < max_epochs:
        if cert_point >= 0 and not (tried and epoch == 0):  # (tried: as in cd_epochs)
            proved, viol = prove(prob, alpha, C, S, ssum, target)
            if proved:
                return epoch, viol <= tol, viol, True
        nearby = cert_point >= 0 and epoch == 0
        if nearby:
            index[:] = points[np.argsort(-K[cert_point][points], kind="mergesort")]
        else:
            shuffle_prefix(index, n_points, rng)
        sweep = 0.0
        work = 0.0
        moved = False
        for s in range(n_points):
            if _nearby_due(nearby, work, moved, var_i.shape[0]):
                work, moved, proved, near_viol = _nearby_try(prob, dual, C, target)
                if proved:
                    return epoch + 1, near_viol <= tol, near_viol, True
            i = index[s]
            m = 0
            worst = 0.0
            for j in range(n_classes):
                if var_mask[i, j]:
                    js[m] = j
                    a0[m] = alpha[i, j]
                    g[m] = 1.0 - q_times_alpha(i, j, cols, vals, c, S, ssum)
                    w[m] = block_w[i, j]
                    p = projected_gradient(a0[m], g[m], C)
                    if p > worst:
                        worst = p
                    m += 1
            work += m
            if worst > sweep:
                sweep = worst
            if worst <= skip or K[i, i] <= 0.0:
                continue
            block_step(g, a0, C, K[i, i], block_sigma, w, m, d, sw, bp)
            moved = True
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
            for col in range(n_cols):
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
        epoch += 1
        if sweep <= tol:
            _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, C, S, ssum)
            if viol <= tol:
                if cert_point >= 0:
                    refresh_point_scores(cert_point, var_i, var_j, alpha, cols, vals, c, K, S, ssum)
                return epoch, True, viol, False
    certified = False
    if cert_point >= 0:
        certified, viol = prove(prob, alpha, C, S, ssum, target)
    else:
        viol = optimality(var_i, var_j, alpha, cols, vals, c, C, S, ssum)[2]
    return epoch, viol <= tol, viol, certified
