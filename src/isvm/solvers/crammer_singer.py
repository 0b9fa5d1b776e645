"""Exact solver for the bias-free kernel Crammer-Singer multiclass SVM.

Primal (Crammer and Singer 2001; paper appendix F, eq. F.1), with one weight
vector ``w_m`` per class and one slack per point::

    min_W  1/2 sum_m ||w_m||^2 + C sum_i xi_i,
    xi_i = max_m (e_i^m + <w_m, phi(x_i)> - <w_(y_i), phi(x_i)>),   e_i^m = 1 - [m == y_i].

Dual in LIBLINEAR's form (Keerthi et al. 2008, ``Solver_MCSVM_CS``), with
``alpha`` of shape (N, L) and ``w_m = sum_i alpha_i^m phi(x_i)``::

    min_alpha  f(alpha) = 1/2 sum_(i,i') K_ii' <alpha_i, alpha_i'> + sum_(i,m) e_i^m alpha_i^m
    s.t.       sum_m alpha_i^m = 0,   alpha_i^m <= C [m == y_i]          (every i).

The paper's multipliers of appendix F are ``alpha_ij = -alpha_i^j >= 0`` for
``j != y_i``, with ``sum_j alpha_ij = alpha_i^(y_i) <= C``. The per-point equality
constraint is what the box-only solvers of :mod:`isvm.solvers` cannot express.

The solver is per-point block coordinate descent: it keeps the L x N score
matrix ``S[m, r] = sum_i alpha_i^m K_ir`` (so the gradient ``G_i^m = S[m, i] + e_i^m``
costs O(1) and a step O(N L); no NL x NL matrix is formed), visits the points in
a fresh random order every epoch (splitmix64, from an explicit seed), and solves
each point's sub-problem ``min 1/2 K_ii ||a||^2 + B'a`` over its simplex exactly,
by sorting (LIBLINEAR's ``solve_sub_problem``). Optional shrinking (LIBLINEAR's:
a class at its bound whose gradient is below the point's smallest free gradient
leaves that point's sub-problem; a point with one class left leaves the epoch)
never changes the answer: the solve stops only when the exact maximum KKT
violation over every point and class is ``<= tol``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from isvm._jit import njit
from isvm.solvers import DEFAULT_MAX_EPOCHS, SolverResult, _core, check_problem, check_weights

SOLVER_NAME = "bcd"

#: a point whose violation is below this is not updated (LIBLINEAR's 1e-12)
_SKIP = 1e-12


@njit(cache=True)
def cs_optimality(y, margin, C, alpha, S):
    """(dual objective, duality gap, max KKT violation) at ``alpha``, from the scores.

    The dual objective is reported in maximisation form, ``-f(alpha)``, which equals
    the primal optimum at the optimum. The primal at ``W(alpha)`` is
    ``1/2 sum_(i,m) alpha_i^m S[m, i] + C sum_i (max_m G_i^m - G_i^(y_i))``, so
    ``gap = primal + f(alpha) >= 0`` needs no extra kernel work. The KKT violation of
    point i is ``max_m G_i^m - min_(m: alpha_i^m < bound) G_i^m`` (LIBLINEAR's
    stopping measure): zero exactly when some beta has ``G_i^m = beta`` on the
    classes below their bound and ``G_i^m <= beta`` on the others.
    """
    n, n_classes = alpha.shape
    quad = 0.0
    lin = 0.0
    hinge = 0.0
    viol = 0.0
    for i in range(n):
        yi = y[i]
        max_g = -np.inf
        min_g = np.inf
        for m in range(n_classes):
            a = alpha[i, m]
            e = 0.0 if m == yi else margin[i]
            g = S[m, i] + e
            quad += a * S[m, i]
            lin += e * a
            if g > max_g:
                max_g = g
            bound = C if m == yi else 0.0
            if a < bound and g < min_g:
                min_g = g
        hinge += max_g - S[yi, i]
        if max_g - min_g > viol:
            viol = max_g - min_g
    f = 0.5 * quad + lin
    primal = 0.5 * quad + C * hinge
    return -f, primal + f, viol


@njit(cache=True, _nrt=False)
def solve_sub_problem(A, yq, C, na, B, D, new):
    """Exact minimiser of ``1/2 A ||a||^2 + B'a`` over the point's active classes (A > 0).

    Constraints: ``a_q <= C`` for the true class (position ``yq``; -1 when it is
    shrunk, i.e. fixed at C) and ``a_q <= 0`` for the others, and the active
    classes summing to ``-(sum of the shrunk ones)``, which is -C without the true
    class and 0 with it. The solution is ``a_q = min(bound_q, (beta - B_q)/A)``;
    with ``D = B`` (plus ``A C`` at the true class) sorted in decreasing order, beta
    is found by one pass over the sorted values (LIBLINEAR's ``solve_sub_problem``).
    Writes ``new[:na]``.
    """
    for q in range(na):
        D[q] = B[q]
    if yq >= 0:
        D[yq] += A * C
    # insertion sort, decreasing (na <= L, small)
    for q in range(1, na):
        v = D[q]
        r = q - 1
        while r >= 0 and D[r] < v:
            D[r + 1] = D[r]
            r -= 1
        D[r + 1] = v
    beta = D[0] - A * C
    r = 1
    while r < na and beta < r * D[r]:
        beta += D[r]
        r += 1
    beta /= r
    for q in range(na):
        v = (beta - B[q]) / A
        bound = C if q == yq else 0.0
        new[q] = v if v < bound else bound


@njit(cache=True, _nrt=False)
def vertex_sub_problem(A, yq, C, na, B, cur, new):
    """Best vertex of the point's simplex for ``1/2 A ||a||^2 + B'a`` when A <= 0.

    A concave (or linear) sub-problem, which only an indefinite precomputed kernel
    gives, attains its minimum at a vertex: all active classes at 0, or the true
    class at C and one other at -C (with the true class shrunk at C: one other at
    -C). Writes ``new[:na]``; keeps the current point unless a vertex is lower.
    Returns whether it moved.
    """
    best = 0.0
    for q in range(na):
        best += 0.5 * A * cur[q] * cur[q] + B[q] * cur[q]
    pick = -2
    if yq >= 0 and best > 0.0:
        best = 0.0
        pick = -1  # all zero
    for q in range(na):
        if q == yq:
            continue
        if yq >= 0:
            val = A * C * C + C * (B[yq] - B[q])
        else:
            val = 0.5 * A * C * C - C * B[q]
        if val < best:
            best = val
            pick = q
    if pick == -2:
        return False
    for q in range(na):
        new[q] = 0.0
    if pick >= 0:
        new[pick] = -C
        if yq >= 0:
            new[yq] = C
    return True


@njit(cache=True)
def cs_epochs(K, y, margin, C, alpha, S, tol, max_epochs, rng, shrinking):
    """Per-point block coordinate descent until the exact max KKT violation <= tol.

    Returns (epochs, converged, max violation).
    """
    n, n_classes = alpha.shape
    index = np.arange(n)
    act = np.empty((n, n_classes), dtype=np.int64)
    n_act = np.empty(n, dtype=np.int64)
    for i in range(n):
        n_act[i] = n_classes
        for m in range(n_classes):
            act[i, m] = m
    # G, B, D, cur, new of the point's sub-problem
    work = (
        np.empty(n_classes),
        np.empty(n_classes),
        np.empty(n_classes),
        np.empty(n_classes),
        np.empty(n_classes),
    )
    active = n
    eps_shrink = max(10.0 * tol, 1.0)
    from_all = True  # whether the epoch started with every point and class active
    epoch = 0
    while epoch < max_epochs:
        _core.shuffle_prefix(index, active, rng)
        active, sweep = _cs_epoch(
            K, y, margin, C, alpha, S, index, active, act, n_act, shrinking, work
        )
        epoch += 1
        if not shrinking:
            if sweep <= tol:
                _, _, viol = cs_optimality(y, margin, C, alpha, S)
                if viol <= tol:
                    return epoch, True, viol
        elif sweep < eps_shrink:
            if sweep <= tol and from_all:
                _, _, viol = cs_optimality(y, margin, C, alpha, S)
                if viol <= tol:
                    return epoch, True, viol
            # LIBLINEAR's schedule: un-shrink everything, tighten the shrinking tolerance
            active = n
            for i in range(n):
                n_act[i] = n_classes
            eps_shrink = max(0.5 * eps_shrink, tol)
            from_all = True
        else:
            from_all = False
    _, _, viol = cs_optimality(y, margin, C, alpha, S)
    return epoch, viol <= tol, viol


@njit(cache=True)
def _cs_epoch(K, y, margin, C, alpha, S, index, active, act, n_act, shrinking, work):
    """One epoch of :func:`cs_epochs` over the points ``index[:active]`` (their active
    classes ``act[i, :n_act[i]]``): returns (active, the largest KKT violation seen)."""
    G, B, D, cur, new = work
    sweep = 0.0
    s = 0
    while s < active:
        i = index[s]
        yi = y[i]
        na = n_act[i]
        max_g, min_g = _cs_gradients(i, yi, margin[i], na, act, C, alpha, S, G)
        if shrinking:
            na = _cs_shrink(i, yi, na, act, C, alpha, G, min_g)
            n_act[i] = na
            if na <= 1:
                active -= 1
                index[s] = index[active]
                index[active] = i
                continue
        viol = max_g - min_g
        if viol > sweep:
            sweep = viol
        s += 1
        if viol <= _SKIP:
            continue
        _cs_point_step(K, i, yi, na, act, C, alpha, S, G, B, D, cur, new)
    return active, sweep


@njit(cache=True, _nrt=False)
def _cs_gradients(i, yi, mi, na, act, C, alpha, S, G):
    """Point i's gradients of its active classes into ``G[:na]``; returns their largest
    and the smallest over the classes below their bound."""
    max_g = -np.inf
    min_g = np.inf
    for q in range(na):
        m = act[i, q]
        g = S[m, i] + (0.0 if m == yi else mi)
        G[q] = g
        if g > max_g:
            max_g = g
        bound = C if m == yi else 0.0
        if alpha[i, m] < bound and g < min_g:
            min_g = g
    return max_g, min_g


@njit(cache=True, _nrt=False)
def _cs_shrink(i, yi, na, act, C, alpha, G, min_g):
    """LIBLINEAR's shrinking of point i: a class at its bound whose gradient is below
    ``min_g`` leaves its active classes (moved past ``na``, with ``G``); returns the
    new count."""
    q = 0
    while q < na:
        m = act[i, q]
        bound = C if m == yi else 0.0
        if alpha[i, m] == bound and G[q] < min_g:
            na -= 1
            act[i, q] = act[i, na]
            act[i, na] = m
            tmp = G[q]
            G[q] = G[na]
            G[na] = tmp
        else:
            q += 1
    return na


@njit(cache=True, _nrt=False)
def _cs_point_step(K, i, yi, na, act, C, alpha, S, G, B, D, cur, new):
    """Solve point i's sub-problem over its active classes exactly and record the
    change in alpha and S (O(N) per class moved)."""
    A = K[i, i]
    yq = np.int64(-1)  # not a literal: that would compile the sub-problems twice
    for q in range(na):
        m = act[i, q]
        cur[q] = alpha[i, m]
        B[q] = G[q] - A * cur[q]
        if m == yi:
            yq = q
    if A > 0.0:
        solve_sub_problem(A, yq, C, na, B, D, new)
    elif not vertex_sub_problem(A, yq, C, na, B, cur, new):
        return
    n = K.shape[0]
    for q in range(na):
        d = new[q] - cur[q]
        if d != 0.0:
            m = act[i, q]
            alpha[i, m] = new[q]
            row = S[m]
            for r in range(n):
                row[r] += d * K[i, r]


def feasible_start(
    alpha0: ArrayLike, y: NDArray[np.int64], n_classes: int, C: float
) -> NDArray[np.float64]:
    """``alpha0`` checked for feasibility (to 1e-9 (1 + C)) and clipped to its bounds.

    Raises ValueError if ``alpha0`` has the wrong shape or violates a constraint by
    more than the tolerance. Row sums off zero by rounding are left as they are (the
    solver's own steps satisfy them to rounding too): moving a multiplier that sits
    exactly at its bound by 1e-16 would make it free and change its KKT violation
    from 0 to the size of its gradient gap. A solution at a larger C is made
    feasible by scaling it by ``C / C_old``.
    """
    n = y.shape[0]
    alpha = np.array(alpha0, dtype=np.float64, order="C")
    if alpha.shape != (n, n_classes):
        raise ValueError(f"alpha0 must have shape {(n, n_classes)}, got {alpha.shape}")
    if not np.all(np.isfinite(alpha)):
        raise ValueError("alpha0 contains NaN or infinite values")
    rows = np.arange(n)
    upper = np.zeros((n, n_classes))
    upper[rows, y] = C
    slack = 1e-9 * (1.0 + C)
    over = float((alpha - upper).max(initial=0.0))
    unbalanced = float(np.abs(alpha.sum(axis=1)).max(initial=0.0))
    if over > slack or unbalanced > slack:
        raise ValueError(
            "alpha0 is not feasible for the Crammer-Singer dual (needs sum_m alpha_i^m = 0 "
            f"and alpha_i^m <= C [m == y_i]): bound exceeded by {over:.3g}, row sums up to "
            f"{unbalanced:.3g}; scale a solution at a larger C by C / C_old"
        )
    return np.minimum(alpha, upper)


def solve_crammer_singer(
    K: ArrayLike,
    y: ArrayLike,
    n_classes: int,
    C: float,
    *,
    tol: float = 1e-3,
    max_iter: int | None = None,
    seed: int = 0,
    alpha0: ArrayLike | None = None,
    shrinking: bool = True,
    sample_weight: ArrayLike | None = None,
) -> SolverResult:
    """Solve the bias-free Crammer-Singer dual on kernel K, labels y in 0..n_classes-1.

    ``max_iter`` counts epochs (default 10,000); ``alpha0`` is any feasible start
    (see :func:`feasible_start`). The result's ``alpha`` is (N, L) in LIBLINEAR's
    form (class scores ``K(X, X_train) @ alpha``), ``objective`` the dual in
    maximisation form ``-f(alpha)`` (the primal optimum at convergence),
    ``duality_gap`` the primal at ``W(alpha)`` minus it, ``kkt_violation`` the
    exact maximum over points of ``max_m G_i^m - min_(m free) G_i^m``.
    ``sample_weight`` (positive, one per point) bounds point i's slack weight by
    ``C sample_weight[i]``: solved on the scaled kernel with the weights as margins,
    as :func:`isvm.solvers.weighted` does for the box duals.
    Raises ValueError on bad arguments.
    """
    K, y = check_problem(K, y, n_classes, C, tol)
    margin = np.ones(y.shape[0])
    if sample_weight is not None:
        margin = check_weights(sample_weight, y.shape[0])
        K = K * margin[:, None] * margin[None, :]
        if alpha0 is not None:
            alpha0 = np.asarray(alpha0, dtype=np.float64) / margin[:, None]
    if not n_classes >= 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes!r}")
    if not np.isfinite(C):
        raise ValueError(f"C must be a positive number, got {C!r}")
    if max_iter is not None and int(max_iter) < 1:
        raise ValueError(f"max_iter must be a positive integer or None, got {max_iter!r}")
    C = float(C)
    n = y.shape[0]
    if alpha0 is None:
        alpha = np.zeros((n, n_classes))
        S = np.zeros((n_classes, n))
    else:
        alpha = feasible_start(alpha0, y, n_classes, C)
        S = np.ascontiguousarray((K @ alpha).T)
    cap = DEFAULT_MAX_EPOCHS if max_iter is None else int(max_iter)
    rng = _core.rng_state(np.uint64(seed))
    epochs, converged, _ = cs_epochs(
        K, y, margin, C, alpha, S, float(tol), cap, rng, bool(shrinking)
    )
    obj, gap, viol = cs_optimality(y, margin, C, alpha, S)
    return SolverResult(
        alpha=alpha if sample_weight is None else alpha * margin[:, None],
        iterations=int(epochs),
        converged=bool(converged),
        kkt_violation=float(viol),
        objective=float(obj),
        duality_gap=float(gap),
        solver=SOLVER_NAME,
    )
