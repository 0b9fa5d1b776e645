"""Numba building blocks shared by the solvers and the leave-one-out engine.

The bundles that cross numba boundaries, the random numbers, gradients, entries of Q,
steps and score updates. Built on them: :mod:`isvm.solvers.certify` (the held-out
certificate) and :mod:`isvm.solvers.epochs` (the coordinate-descent epochs).

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

#: runtime-typed flags for the arguments of jitted callees: numba compiles a callee once
#: more for each literal it is passed (``Literal[bool](False)`` is not ``bool``), and a
#: module-level NumPy scalar is typed as a plain ``bool``
FALSE = np.bool_(False)
TRUE = np.bool_(True)

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
    #: (N,) each point's margin, the linear term of its variables in the dual (1
    #: unweighted; a weighted problem's, :func:`isvm.solvers.weighted`)
    margin: np.ndarray


@njit(cache=True)
def with_variables(prob, var_i, var_j):
    """``prob`` over other variables (the same kernel and coding): a fold's, a free set's."""
    return Problem(prob.K, var_i, var_j, prob.cols, prob.vals, prob.c, prob.margin)


class Dual(NamedTuple):
    """A point of the dual and its scores (see the module docstring)."""

    alpha: np.ndarray  # (N, L)
    S: np.ndarray  # (D, N)
    ssum: np.ndarray  # (N,)


class Blocks(NamedTuple):
    """Per-point blocks for :func:`isvm.solvers.epochs.block_epochs`: the points visited
    and their coupling."""

    points: np.ndarray  # (P,) the points whose multipliers are variables
    var_mask: np.ndarray  # (N, L) which multipliers exist
    w: np.ndarray  # (N, L) block direction of each multiplier
    sigma: float  # block coupling (0: uncoupled, single coordinates suffice)


class Target(NamedTuple):
    """A held-out point whose prediction a solve may stop on once certified
    (:mod:`isvm.solvers.certify`).

    ``floor``, ``group`` and ``group_mixed`` are the kernel's per-point eigenvalue
    floors and groups of identical points
    (:class:`isvm.loo.certificate.KernelGeometry`), and ``block_w``/``block_sigma``
    the coding's per-point blocks, read by :func:`isvm.solvers.certify.suboptimality`;
    an empty ``floor`` (or a point's 0) gives the plain duality gap.
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
    #: of its own column's change, and the certificate is made class by class
    #: (:func:`isvm.solvers.certify.prove_by_column`); 0: one bound for all columns
    column_factor: float
    #: (D,) scratch that ``prove_by_column`` writes: the columns whose bounds its
    #: verdict still waits on (those :func:`isvm.solvers.epochs.cd_epochs` steps first)
    column_need: np.ndarray
    #: (2, D) scratch of a cd solve's certificate tries: each column's bound and largest
    #: KKT violation at the last try, NaN where a step in the column made them stale
    #: (``prove_by_column`` with ``cached``)
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
#: thread; docs/benchmarks.md), so 0.5 loses little where the product is cheap
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
    _, var_i, var_j, cols, vals, c, margin = prob
    g = np.empty(var_i.shape[0])
    for v in range(var_i.shape[0]):
        g[v] = margin[var_i[v]] - q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum)
    return g


@njit(cache=True)
def optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum):
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
        g = margin[i] - q_times_alpha(i, j, cols, vals, c, S, ssum)
        obj += margin[i] * a - 0.5 * a * (margin[i] - g)
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


# ---------------------------------------------------------------- exact per-point block steps


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
                end = _keep_beyond(bp, end, pivot, TRUE)
            else:
                hi, f_hi = pivot, f
                end = _keep_beyond(bp, end, pivot, FALSE)
        if lo == -np.inf:
            t = hi - f_hi  # slope 1 left of every breakpoint (all clipped)
        elif hi == np.inf:
            t = lo - f_lo  # slope 1 right of every breakpoint
        else:
            t = lo - f_lo * (hi - lo) / (f_hi - f_lo)
    for j in range(m):
        d[j] = _block_move(gk[j], sw[j], t, a0[j], C)
