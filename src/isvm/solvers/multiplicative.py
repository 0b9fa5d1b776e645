"""``mu``: the multiplicative (exponentiated-gradient) update of Cristianini, Campbell and
Shawe-Taylor, "A Multiplicative Updating Algorithm for Training Support Vector Machines".

The seed's rule, for ``max W(alpha) = sum alpha - 1/2 alpha'Q alpha - lambda sum alpha y``
over ``alpha >= 0`` (hard margin, with a bias enforced by the multiplier lambda), is

    alpha_k <- alpha_k exp(eta (1 - gamma_k - lambda y_k)),   gamma_k = (Q alpha)_k,

with lambda chosen each epoch so that ``sum alpha y = 0`` stays satisfied. Every dual of
:mod:`isvm.methods` is bias-free (no equality constraint), so ``lambda = 0`` exactly and
the rule is ``alpha_k <- alpha_k exp(eta g_k)`` with the dual gradient ``g = 1 - Q alpha``
read from the maintained scores S: it needs no sign structure of Q (unlike Sha, Saul and
Lee's rule, which splits Q = Q+ - Q-), so it applies to every formulation and kernel here.

What the seed leaves open, and what we chose:

- **The box** ``alpha <= C`` (the seed is hard-margin, ``alpha >= 0`` only). We clip:
  ``alpha_k <- min(C, alpha_k exp(eta g_k))``. This is *exactly* the Bregman projection
  onto the box under the generalised KL divergence
  ``D(x, a) = sum x log(x/a) - x + a`` (per coordinate, ``x log(x/z) - x`` is convex with
  its minimum at ``x = z``, so the projection of z onto ``x <= C`` is ``min(z, C)``), so
  the clipped rule is entropic mirror descent on the box, not a heuristic. Its fixed
  points with every ``alpha_k > 0`` are exactly the KKT points with every ``alpha_k > 0``:
  ``0 < alpha_k < C`` is fixed iff ``g_k = 0``; ``alpha_k = C`` iff ``g_k >= 0``. Any point
  with ``alpha_k = 0`` is also a (spurious) fixed point, and the rule can never leave
  zero, so we start strictly inside (below).
- **The step eta** ("if eta is too large, the algorithm does not converge, too small and
  it is slow"). On ``0 < alpha <= C`` the entropy has Hessian ``diag(1/alpha) >= I/C``,
  so ``f = -W`` is smooth *relative* to it with constant ``C lambda_max(Q)``; any eta with
  the relative-smoothness inequality
  ``f(a+) <= f(a) + grad f(a)'(a+ - a) + D(a+, a)/eta`` decreases f (a+ minimises
  ``eta grad f'x + D(x, a)`` over the box, where ``x = a`` gives 0), and
  ``eta <= 1 / (C lambda_max)`` always satisfies it (Bauschke-Bolte-Teboulle 2017;
  Lu-Freund-Nesterov 2018: O(1/k) convergence of the objective). We backtrack on that
  inequality: start at ``eta = 1 / (C max_k Q_kk)``, halve and retry on failure, grow
  by 1.25 after each accepted step. The dual objective therefore never decreases.
- **Start.** Cold: every variable at ``t0 = min(C/2, n / 1'Q1)`` (the best uniform point,
  the analogue of the seed's ``1/N_p``, ``1/N_n``). Warm: ``alpha0`` clipped to
  ``[0, C]``, with entries below ``floor = warm_floor * t0`` raised to ``floor``.
- **Stopping.** The same measure as ``cd``: the maximum |projected gradient| over all
  variables ``<= tol``. A multiplicative iterate is never exactly 0, so a variable that
  belongs at 0 (``g_k < 0``) keeps a violation ``|g_k|`` while it decays geometrically.
  Each epoch, variables with ``g_k < 0``, ``alpha_k < C`` and
  ``alpha_k sqrt(Q_kk max Q) <= tol`` (their removal moves no gradient by more than that)
  are candidates; if every other variable already meets the criterion, the candidates
  are set to exactly 0 and the exact violation of the snapped point is computed: if it
  is ``<= tol``, the solve stops there; otherwise it is undone and the updates go on.

Cost: an epoch (one tried step) updates every variable, so it is one full recomputation
of the score changes, O(N^2 D) (a matrix product), plus O(NL) for the gradient,
objective and stopping test; a rejected step costs the same and counts as an iteration.
"""

from __future__ import annotations

import numpy as np

from isvm._jit import njit
from isvm.solvers._core import (
    apply_point_steps,
    diag_q,
    optimality,
    projected_gradient,
    q_times_alpha,
)

#: growth of the step after an accepted step, and its cut after a rejected one
GROW = 1.1
SHRINK = 0.5
#: a warm start raises entries below WARM_FLOOR * t0 to that value
WARM_FLOOR = 1e-3


@njit(cache=True)
def _scores_add(var_i, var_j, cols, vals, c, K, S, ssum, delta, coef):
    """``S += score change of alpha += delta`` (per listed variable), one pass per point."""
    coef[:] = 0.0
    for v in range(var_i.shape[0]):
        if delta[v] != 0.0:
            i = var_i[v]
            j = var_j[v]
            for t in range(2):
                col = cols[i, j, t]
                if col >= 0:
                    coef[i, col] += delta[v] * vals[i, j, t]
    apply_point_steps(coef, c, K, S, ssum)


@njit(cache=True)
def _grad(var_i, var_j, cols, vals, c, margin, S, ssum, G):
    """Minimisation gradient ``G = Q alpha - 1`` of every listed variable, from the scores."""
    for v in range(var_i.shape[0]):
        G[v] = q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum) - margin[var_i[v]]


@njit(cache=True)
def _one_q_one(var_i, var_j, cols, vals, c, K, coef):
    """``1'Q1`` over the listed variables, O(N^2 D), without forming Q."""
    coef[:] = 0.0
    for v in range(var_i.shape[0]):
        i = var_i[v]
        j = var_j[v]
        for t in range(2):
            col = cols[i, j, t]
            if col >= 0:
                coef[i, col] += vals[i, j, t]
    n = K.shape[0]
    total = 0.0
    for i in range(n):
        si = 0.0
        for d in range(coef.shape[1]):
            si += coef[i, d]
        for r in range(n):
            if K[i, r] != 0.0:
                dot = 0.0
                sr = 0.0
                for d in range(coef.shape[1]):
                    dot += coef[i, d] * coef[r, d]
                    sr += coef[r, d]
                total += K[i, r] * (dot - c * si * sr)
    return total


@njit(cache=True)
def _snap_trial(prob, C, dual, a, G, qbound, tol, precheck, keep_below, work):
    """Try ``alpha_k = 0`` for the decaying small variables; keep it if max KKT <= keep_below.

    Candidates: ``G_k > 0``, ``alpha_k < C``, ``alpha_k qbound_k <= tol``. With ``precheck``
    the trial is skipped unless every other variable already has violation <= tol.
    Returns (kept, violation of the snapped point, or inf when not tried).
    """
    delta, coef, S_keep, ssum_keep = work
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    n_var = var_i.shape[0]
    n_snap = 0
    for v in range(n_var):
        cand = G[v] > 0.0 and a[v] < C and a[v] * qbound[v] <= tol
        if cand:
            n_snap += 1
            delta[v] = -a[v]
        else:
            delta[v] = 0.0
            if precheck and projected_gradient(a[v], -G[v], C) > tol:
                return False, np.inf  # not there yet: the snap cannot help
    if n_snap == 0:
        return False, np.inf
    S_keep[:, :] = S
    ssum_keep[:] = ssum
    for v in range(n_var):
        if delta[v] != 0.0:
            alpha[var_i[v], var_j[v]] = 0.0
    _scores_add(var_i, var_j, cols, vals, c, K, S, ssum, delta, coef)
    _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)
    if viol <= keep_below:
        return True, viol
    for v in range(n_var):  # undo
        alpha[var_i[v], var_j[v]] = a[v]
    S[:, :] = S_keep
    ssum[:] = ssum_keep
    return False, viol


@njit(cache=True)
def mu_epochs(prob, C, dual, tol, max_iter, warm_floor, trace):
    """Clipped exponentiated-gradient ascent with backtracking (module docstring).

    ``dual`` may hold any point of the box; if every listed variable is 0 the solve
    starts cold at ``t0``, else entries below ``warm_floor * t0`` are raised to it.
    ``trace`` (length ``max_iter + 1`` or 0) receives the dual objective after the start
    and after every accepted step, in order; the number written is returned.

    Returns (iterations (tried steps), converged, max violation, accepted steps, written).
    """
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    n_var = var_i.shape[0]
    n = K.shape[0]
    n_cols = S.shape[0]
    coef = np.zeros((n, n_cols))
    a = np.empty(n_var)
    new = np.empty(n_var)
    delta = np.empty(n_var)
    G = np.empty(n_var)
    G_new = np.empty(n_var)
    qbound = np.empty(n_var)
    S_keep = np.empty_like(S)
    ssum_keep = np.empty_like(ssum)
    work = (delta, coef, S_keep, ssum_keep)
    if n_var == 0:
        return 0, True, 0.0, 0, 0
    qmax, f = _mu_start(prob, C, dual, warm_floor, a, G, qbound, work)
    written = 0
    if trace.shape[0] > 0:
        trace[0] = -f
        written = 1
    eta = 1.0 / (C * qmax) if qmax > 0.0 else 1.0 / C
    it = 0
    accepted = 0
    while True:
        # ---- stopping test at the current point
        viol = 0.0
        for v in range(n_var):
            p = projected_gradient(a[v], -G[v], C)
            if p > viol:
                viol = p
        if viol <= tol:
            return it, True, viol, accepted, written
        kept, _ = _snap_trial(prob, C, dual, a, G, qbound, tol, True, tol, work)
        if kept:
            _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)
            return it, True, viol, accepted, written
        if it >= max_iter:
            break
        # ---- one multiplicative step, accepted if the relative-smoothness test holds
        f_new, lin, breg, scale = _mu_trial(prob, C, dual, eta, a, G, new, G_new, work)
        it += 1
        if f_new <= f + lin + breg / eta + 1e-13 * scale:
            for v in range(n_var):
                a[v] = new[v]
                G[v] = G_new[v]
                alpha[var_i[v], var_j[v]] = new[v]
            f = f_new
            accepted += 1
            eta *= GROW
            if written < trace.shape[0]:
                trace[written] = -f
                written += 1
        else:
            S[:, :] = S_keep
            ssum[:] = ssum_keep
            eta *= SHRINK
    # ---- at the cap: report the better of the iterate and its snapped version
    _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)
    _snap_trial(prob, C, dual, a, G, qbound, tol, False, viol, work)
    _, _, viol = optimality(var_i, var_j, alpha, cols, vals, c, margin, C, S, ssum)
    return it, viol <= tol, viol, accepted, written


@njit(cache=True)
def _mu_start(prob, C, dual, warm_floor, a, G, qbound, work):
    """:func:`mu_epochs`' start strictly inside the box: writes the listed variables'
    values into ``a``, their gradients into ``G`` and the bounds ``qbound`` of how far
    zeroing one moves another's gradient; returns (largest diagonal entry of Q, the
    minimisation objective f)."""
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = dual
    delta, coef, _, _ = work
    n_var = var_i.shape[0]
    qmax = 0.0
    for v in range(n_var):
        qbound[v] = diag_q(var_i[v], var_j[v], cols, vals, c, K)
        if qbound[v] > qmax:
            qmax = qbound[v]
    for v in range(n_var):  # |Q_mk| <= sqrt(Q_mm Q_kk): how far zeroing alpha_k moves a gradient
        qbound[v] = np.sqrt(max(qbound[v], 0.0) * qmax)
    one_q_one = _one_q_one(var_i, var_j, cols, vals, c, K, coef)
    t0 = 0.5 * C
    if one_q_one > 0.0 and n_var / one_q_one < t0:
        t0 = n_var / one_q_one
    cold = True
    for v in range(n_var):
        a[v] = alpha[var_i[v], var_j[v]]
        if a[v] != 0.0:
            cold = False
    floor = t0 if cold else warm_floor * t0
    for v in range(n_var):
        delta[v] = 0.0
        if a[v] < floor:
            delta[v] = floor - a[v]
            a[v] = floor
            alpha[var_i[v], var_j[v]] = floor
    _scores_add(var_i, var_j, cols, vals, c, K, S, ssum, delta, coef)
    _grad(var_i, var_j, cols, vals, c, margin, S, ssum, G)
    f = 0.0
    for v in range(n_var):
        f += 0.5 * a[v] * (G[v] - margin[var_i[v]])  # f = 1/2 a'Qa - m'a = -W
    return qmax, f


@njit(cache=True)
def _mu_trial(prob, C, dual, eta, a, G, new, G_new, work):
    """One multiplicative step from ``a`` tried: ``new``, the scores moved there (the
    old ones kept in ``work``), its gradients ``G_new``; returns (its objective, and the
    linear term, Bregman divergence and rounding scale of the acceptance test)."""
    K, var_i, var_j, cols, vals, c, margin = prob
    _, S, ssum = dual
    delta, coef, S_keep, ssum_keep = work
    n_var = var_i.shape[0]
    lin = 0.0
    breg = 0.0
    scale = 0.0
    for v in range(n_var):
        e = -eta * G[v]
        if e > 700.0:
            e = 700.0
        x = a[v] * np.exp(e)
        if x > C:
            x = C
        elif x < 1e-300:
            x = 1e-300
        new[v] = x
        delta[v] = x - a[v]
        lin += G[v] * delta[v]
        breg += x * np.log(x / a[v]) - delta[v]
        scale += a[v] * (abs(G[v]) + margin[var_i[v]])
    S_keep[:, :] = S
    ssum_keep[:] = ssum
    _scores_add(var_i, var_j, cols, vals, c, K, S, ssum, delta, coef)
    _grad(var_i, var_j, cols, vals, c, margin, S, ssum, G_new)
    f_new = 0.0
    for v in range(n_var):
        f_new += 0.5 * new[v] * (G_new[v] - margin[var_i[v]])
    return f_new, lin, breg, scale
