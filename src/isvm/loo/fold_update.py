"""Numba: a held-out problem solved by active-set updates of the full optimum's inverse.

The fold is the full problem with one point's multipliers fixed at 0. Each variable
whose status differs from the full optimum's enters through a bordered (Schur
complement) system on the full fit's ``Hinv`` (:class:`~isvm.loo.bundles.Factor`),
so a face solve costs O(m |F|) (given the rows ``Q[v, F] Hinv`` the full fit
precomputes) for m changed variables instead of a new O(|F|^3) factorisation.
Primal-dual steps come first; where they stop making progress, the decremental path
(the held-out point's multipliers scaled down to 0, one status change per step)
finishes the fold. The result is a feasible point whose duality gap the caller
checks (:mod:`isvm.loo.folds`), so a fold the update gives up on only costs time.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from isvm._jit import njit
from isvm.loo.bundles import EXCLUDED, FREE, UPPER, ZERO
from isvm.loo.settings import (
    BOX_SLACK,
    FREE_THRESHOLD,
    RIDGE,
    STATIONARY_TOL,
    WARM_MAX_CHANGES,
)
from isvm.solvers import _core
from isvm.solvers._core import dual_gradients


class Removal(NamedTuple):
    """The held-out point's multipliers at C (dropping to 0) and the full free values."""

    p_upper: np.ndarray  # (L,) its variables at C (first ``n_pu``)
    n_pu: int
    x_full: np.ndarray  # (F,) the full optimum's free values
    z_p: np.ndarray  # (F,) Hinv Q[F, p_upper] C: their pull on the free set


class Touched(NamedTuple):
    """Outside variables freed at some step: their columns, Hinv columns and Schur rows."""

    ids: np.ndarray  # (max_changed,) variable indices (first ``nt``)
    Qv: np.ndarray  # (cap, F) Q[t, F]
    Y: np.ndarray  # (cap, F) Q[t, F] Hinv
    G: np.ndarray  # (cap, cap) Q_tt' - Q_tF Hinv Q_Ft'
    t_val: np.ndarray  # (max_changed,) their values at the last face solve


class Changes(NamedTuple):
    """Status changes to apply: variables and their new statuses (first n)."""

    v: np.ndarray  # (V,) int64
    s: np.ndarray  # (V,) int8


@njit(cache=True)
def _solve_dense(T, b, m):
    """Solve ``T[:m, :m] x = b[:m]`` in place (Gaussian elimination, partial pivoting).

    Returns False when a pivot vanishes (the bordered system is singular).
    """
    scale = 0.0
    for r in range(m):
        for s in range(m):
            if abs(T[r, s]) > scale:
                scale = abs(T[r, s])
    for col in range(m):
        piv = col
        for r in range(col + 1, m):
            if abs(T[r, col]) > abs(T[piv, col]):
                piv = r
        if abs(T[piv, col]) <= 1e-14 * scale:
            return False
        if piv != col:
            for s in range(m):
                tmp = T[col, s]
                T[col, s] = T[piv, s]
                T[piv, s] = tmp
            tmp = b[col]
            b[col] = b[piv]
            b[piv] = tmp
        for r in range(col + 1, m):
            f = T[r, col] / T[col, col]
            if f != 0.0:
                for s in range(col, m):
                    T[r, s] -= f * T[col, s]
                b[r] -= f * b[col]
    for r in range(m - 1, -1, -1):
        acc = b[r]
        for s in range(r + 1, m):
            acc -= T[r, s] * b[s]
        b[r] = acc / T[r, r]
    return True


@njit(cache=True)
def fold_active_set(prob, p, C, full, fac, cfg, warm, out, status_out):
    """Active-set solve of the held-out problem of point ``p`` from the full optimum.

    ``prob`` is the full problem (:class:`~isvm.solvers._core.Problem`), ``full`` the
    full optimum (:class:`~isvm.solvers._core.Dual`) and ``fac`` its active set and
    inverse (:class:`~isvm.loo.bundles.Factor`); ``cfg`` is the
    :class:`~isvm.loo.bundles.FoldLimits`. The fold fixes p's multipliers at 0;
    every other variable keeps its full status until the iteration moves it. Each
    step minimises the dual on the face its statuses define (:func:`_face_solution`,
    a bordered system on the full inverse, never a new factorisation).

    Two phases share those face solves:

    1. primal-dual steps (every variable that left the box goes to its bound, every
       bound variable whose gradient points inward is freed): usually a handful of
       steps to the optimum. The dual is not an M-matrix, so they can cycle or
       diverge; once ``cfg.active_patience`` steps in a row fail to reduce the number of
       infeasible variables, or they have freed more than ``cfg.active_pd_max_touched``
       outside variables (each face solve costing O(touched^3)), phase 2 takes over
       (``patience < 0``: at once);
    2. the decremental path (Cauwenberghs and Poggio's exact leave-one-out, without
       the bias): with p's multipliers scaled by 1 - t, the optimum moves piecewise
       linearly from the full optimum (t = 0) to the fold's (t = 1); each piece heads
       for its face's minimiser at t = 1 and ends where a free variable reaches a
       bound or a bound variable's gradient turns inward. One status change per step
       and no guessing, so it does not cycle the way phase 1 can, but it takes one
       step per change where phase 1 often takes one step for many.

    Along a C path the fold's own changes persist from one C to the next: with
    ``warm`` (:class:`~isvm.loo.bundles.Warm`: this fold's final statuses at the
    previous C and the full optimum's there), phase 1 starts from the full statuses
    with the fold's previous changes applied (unless there are more than
    ``WARM_MAX_CHANGES``); empty arrays mean no such guess. Phase 2 always starts
    from the full optimum's statuses.

    Writes the fold solution into ``out`` (a Dual: clipped to the box, scores exact
    for it) and its statuses into ``status_out``, and returns (converged, set
    updates, near). Not converged (``cfg.active_max_iter`` updates in all, a singular face,
    more than ``cfg.active_max_changed`` outside variables freed, a ridged face that is not
    stationary: ISVM, whose dual is flat along y_i) leaves the statuses unspecified;
    the caller then falls back to coordinate descent. ``near`` is True when the
    iteration ended on a ridged face minimiser that satisfies every status's KKT
    condition but not stationarity: ``out`` then holds it, clipped to the box with
    exact scores, a feasible start far closer to the optimum than the caller's own
    (satimage N = 1,000 [0, 1] ISVM: 4 folds in 1,000 at large C, 1 s of cd each
    from those); otherwise ``out`` is unspecified too.
    """
    n_var = prob.var_i.shape[0]
    st = fac.status.copy()
    removal = _removal(prob, p, C, full, fac, st)
    work = touched_work(fac.free_vars.shape[0], cfg.active_max_changed)
    changes = Changes(np.empty(n_var, dtype=np.int64), np.empty(n_var, dtype=np.int8))
    it, nt = 0, 0
    if cfg.active_patience >= 0:  # patience < 0: the decremental path alone
        nt, work = _warm_guess(prob, fac, warm, st, work, changes, cfg)
        guessed = nt > 0
        done, it, work, nt = _primal_dual_steps(
            prob, C, full, fac, removal, st, work, nt, changes, cfg, out
        )
        if done == 1:
            status_out[:] = st
            return True, it, False
        if done == 0:  # KKT-feasible statuses, a ridged minimiser: a start for cd
            _clip(prob, C, out)
            return False, it, True
        for v in range(n_var):  # phase 2 starts from the full statuses
            if st[v] != EXCLUDED:
                st[v] = fac.status[v]
        if guessed:  # and afresh, not burdened by the rows of a wrong guess
            nt = 0
    outcome, it = _decremental_path(
        prob, C, full, fac, removal, st, work, nt, changes, cfg, out, it
    )
    if outcome == 1:
        status_out[:] = st
    elif outcome == 0:
        _clip(prob, C, out)
    return outcome == 1, it, outcome == 0


@njit(cache=True, inline="always")
def touched_work(nf, max_changed):
    """Empty rows for a fold's touched variables (:class:`Touched`) over ``nf`` free
    variables: room for 16 (or ``max_changed``) at first; :func:`_register` grows them."""
    cap = min(16, max_changed)
    return Touched(
        np.empty(max_changed, dtype=np.int64),
        np.empty((cap, nf)),
        np.empty((cap, nf)),
        np.empty((cap, cap)),
        np.empty(max_changed),
    )


@njit(cache=True, inline="always")
def _removal(prob, p, C, full, fac, st):
    """Point p's multipliers leave the problem: marked EXCLUDED in ``st``; those at C
    (dropping to 0) pull the free set by ``z_p = Hinv sum_v Q[F, v] C``, from the
    precomputed rows ``Q[v, F] Hinv`` where there are any."""
    K, var_i, var_j, cols, vals, c, margin = prob
    status, free_vars, Hinv = fac.status, fac.free_vars, fac.Hinv
    Y_out, out_pos, var_id = fac.Y_out, fac.out_pos, fac.var_id
    nf = free_vars.shape[0]
    n_classes = full.alpha.shape[1]
    x_full = np.empty(nf)
    for k in range(nf):
        x_full[k] = full.alpha[var_i[free_vars[k]], var_j[free_vars[k]]]
    p_upper = np.empty(n_classes, dtype=np.int64)
    n_pu = 0
    d = np.zeros(nf)
    z_p = np.zeros(nf)
    for j in range(n_classes):
        v = var_id[p, j]
        if v < 0:
            continue
        if status[v] == UPPER:
            p_upper[n_pu] = v
            n_pu += 1
            if out_pos[v] >= 0:
                z_p += C * Y_out[out_pos[v]]
            else:
                for k in range(nf):
                    u = free_vars[k]
                    d[k] += C * _core.q_entry(var_i[u], var_j[u], p, j, cols, vals, c, K)
        st[v] = EXCLUDED
    if n_pu > 0 and nf > 0 and out_pos[p_upper[0]] < 0:  # all precomputed, or none
        z_p = np.dot(Hinv, d)
    return Removal(p_upper, n_pu, x_full, z_p)


@njit(cache=True, inline="always")
def _warm_guess(prob, fac, warm, st, work, changes, cfg):
    """Phase 1's start: the full statuses with the fold's own changes at the previous C
    applied (:class:`~isvm.loo.bundles.Warm`), unless there are none or more than
    ``WARM_MAX_CHANGES``. Returns (touched variables, work)."""
    n_var = prob.var_i.shape[0]
    warm_status, warm_base = warm
    if warm_status.shape[0] != n_var or warm_base.shape[0] != n_var:
        return 0, work
    chg_v, chg_s = changes
    n_warm = np.int64(0)  # not a literal 0: that would compile _register once more
    for v in range(n_var):
        w = warm_status[v]
        if st[v] != EXCLUDED and w != EXCLUDED and w != warm_base[v] and w != st[v]:
            chg_v[n_warm] = v
            # an outside variable enters the face solves only as a touched (freed) one:
            # guess it free, and the steps move it to its bound if need be
            chg_s[n_warm] = w if fac.free_pos[v] >= 0 else FREE
            n_warm += 1
    if n_warm > WARM_MAX_CHANGES:
        return 0, work
    grown, work = _register(
        prob, fac, changes, n_warm, st, work, np.int64(0), cfg.active_max_changed
    )
    return max(grown, 0), work  # too many: no guess (nothing changed)


@njit(cache=True, inline="always")
def _primal_dual_steps(prob, C, full, fac, removal, st, work, nt, changes, cfg, out):
    """Phase 1: every variable that left the box goes to its bound, every bound
    variable whose gradient points inward is freed, until none does.

    Returns (outcome, face solves, work, touched variables): outcome 1 the fold's
    optimum (in ``out``, clipped), 0 failed (a ridged solve of a singular face: ``out``
    satisfies every status's KKT condition but not stationarity), -1
    stopped making progress (``cfg.active_patience`` steps without fewer infeasible
    variables, a singular face, more than ``cfg.active_pd_max_touched`` outside variables
    freed, too many for the row storage, ``cfg.active_max_iter``): the decremental path.
    """
    slack = BOX_SLACK * C
    best = prob.var_i.shape[0] + 1
    tries = cfg.active_patience
    it = 0
    while it < cfg.active_max_iter:
        it += 1
        if not _face_solution(prob, C, full, fac, removal, st, work, nt, out, RIDGE):
            break
        n_inf = _infeasible(prob, C, slack, st, out, changes, FREE_THRESHOLD)
        if n_inf == 0:
            return (1 if _optimum(prob, C, st, out) else 0), it, work, nt
        if n_inf < best:
            best = n_inf
            tries = cfg.active_patience
        elif tries > 0:
            tries -= 1
        else:
            break
        grown, work = _register(prob, fac, changes, n_inf, st, work, nt, cfg.active_max_changed)
        if grown < 0:
            break
        nt = grown
        if nt > cfg.active_pd_max_touched:  # the next face solves would cost O(nt^3) each
            break
    return -1, it, work, nt


@njit(cache=True, inline="always")
def _decremental_path(prob, C, full, fac, removal, st, work, nt, changes, cfg, out, it):
    """Phase 2: with p's multipliers at (1 - t) times their full values, the optimum
    is piecewise linear in t, from the full optimum (t = 0) to the fold's (t = 1); on
    each piece it heads for the current face's minimiser at t = 1, and a piece ends
    where a free variable reaches a bound or a bound variable's gradient turns
    inward: one status change per step. Starts from the full statuses in ``st``, with
    the first ``nt`` touched variables' rows kept, after ``it`` face solves. Returns
    (outcome, face solves) with :func:`_primal_dual_steps`'s outcomes: 1 the fold's
    optimum, 0 a ridged face minimiser that satisfies the statuses' KKT conditions but
    is not stationary, -1 given up."""
    var_i, var_j = prob.var_i, prob.var_j
    n_var = var_i.shape[0]
    alpha = out.alpha
    free_threshold = FREE_THRESHOLD
    chg_v, chg_s = changes
    cur = full.alpha.copy()
    g_cur = dual_gradients(prob, full.S, full.ssum)
    while it < cfg.active_max_iter:
        it += 1
        if not _face_solution(prob, C, full, fac, removal, st, work, nt, out, RIDGE):
            return -1, it
        g_new = dual_gradients(prob, out.S, out.ssum)
        tau = 1.0
        event = -1
        for v in range(n_var):
            s = st[v]
            if s == FREE:  # reaches a bound
                a_new = alpha[var_i[v], var_j[v]]
                a_cur = cur[var_i[v], var_j[v]]
                if a_new < 0.0 and a_new < a_cur:
                    r = max(a_cur, 0.0) / (a_cur - a_new)
                elif a_new > C and a_new > a_cur:
                    r = max(C - a_cur, 0.0) / (a_new - a_cur)
                else:
                    continue
            elif s == ZERO and g_new[v] > free_threshold:  # gradient turns inward
                r = max(free_threshold - g_cur[v], 0.0) / (g_new[v] - g_cur[v])
            elif s == UPPER and g_new[v] < -free_threshold:
                r = max(g_cur[v] + free_threshold, 0.0) / (g_cur[v] - g_new[v])
            else:
                continue
            if r < tau:
                tau, event = r, v
        if event < 0:  # the face minimiser at t = 1 satisfies the KKT conditions
            return (1 if _optimum(prob, C, st, out) else 0), it
        # the path and its gradient are affine in t: interpolate both (the event
        # variable's move to its bound below only corrects rounding)
        cur += tau * (alpha - cur)
        g_cur += tau * (g_new - g_cur)
        i, j = var_i[event], var_j[event]
        if st[event] == FREE:
            cur[i, j] = 0.0 if alpha[i, j] < 0.0 else C
            st[event] = ZERO if cur[i, j] == 0.0 else UPPER
        else:
            chg_v[0] = event
            chg_s[0] = FREE
            grown, work = _register(
                prob, fac, changes, np.int64(1), st, work, nt, cfg.active_max_changed
            )
            if grown < 0:
                return -1, it
            nt = grown
    return -1, it


@njit(cache=True)
def _optimum(prob, C, st, out):
    """A KKT-feasible face minimiser in ``out``: clipped to the box if it is stationary
    (True); False if not (a ridged solve of a singular face: not a minimiser)."""
    if not _stationary(prob, st, out, STATIONARY_TOL):
        return False
    _clip(prob, C, out)
    return True


@njit(cache=True)
def _face_solution(prob, C, full, fac, removal, st, work, nt, out, ridge):
    """Minimise the dual on the face that the statuses ``st`` describe.

    With R the free-set variables now at a bound and N the touched outside variables
    now free, the face's stationarity system

        [ H     Q_FN  E_R ] [x_F]   [r_F]
        [ Q_NF  Q_NN  0   ] [x_N] = [r_N]
        [ E_R'  0     0   ] [mu ]   [v_R]

    is solved through its (|N| + |R|)-square Schur complement: p's multipliers at C
    dropping to 0 enter through ``removal.z_p``, each of the first ``nt`` touched
    variables through its rows of ``work.Qv``, ``work.Y = Q_tF Hinv`` and ``work.G``.
    Writes the minimiser (not clipped to the box) and its exact scores into ``out``
    and the touched variables' values into ``work.t_val``. Returns False when the
    system is singular even with a ridge (relative size ``ridge``).
    """
    sets = _face_sets(C, fac, st, work, nt)
    z = _folded_rhs(prob, full, fac, removal, work, nt)
    T, rhs = _schur_system(prob, C, full, fac, removal, work, nt, z, sets)
    m = T.shape[0]
    T_ridge = T.copy()
    rhs_ridge = rhs.copy()
    if not _solve_dense(T, rhs, m):
        if not _ridged_solve(prob, work, sets, T_ridge, rhs_ridge, ridge):
            return False
        rhs = rhs_ridge
    x = _face_values(fac, work, z, rhs, sets)
    _face_point(prob, C, full, fac, removal, work, nt, x, out)
    return True


@njit(cache=True, inline="always")
def _face_sets(C, fac, st, work, nt):
    """The face's R (free-set positions now at a bound, and their values) and N (the
    touched variables now free); the other touched variables' bound values go into
    ``work.t_val``. Returns (r_pos, r_val, |R|, n_list, |N|)."""
    free_vars = fac.free_vars
    touched, t_val = work.ids, work.t_val
    nf = free_vars.shape[0]
    r_pos = np.empty(nf, dtype=np.int64)
    r_val = np.empty(nf)
    n_list = np.empty(nt, dtype=np.int64)
    nr = 0
    for k in range(nf):
        s = st[free_vars[k]]
        if s != FREE:
            r_pos[nr] = k
            r_val[nr] = C if s == UPPER else 0.0
            nr += 1
    nn = 0
    for t in range(nt):
        v = touched[t]
        if st[v] == FREE:
            n_list[nn] = t
            nn += 1
            t_val[t] = 0.0  # unknown: out of the bound part of the right-hand side
        else:
            t_val[t] = C if st[v] == UPPER else 0.0
    return r_pos, r_val, nr, n_list, nn


@njit(cache=True, inline="always")
def _folded_rhs(prob, full, fac, removal, work, nt):
    """``z = Hinv r_F`` with every outside change folded in."""
    var_i, var_j = prob.var_i, prob.var_j
    touched, Y, t_val = work.ids, work.Y, work.t_val
    nf = fac.free_vars.shape[0]
    z = removal.x_full + removal.z_p
    for t in range(nt):
        v = touched[t]
        diff = full.alpha[var_i[v], var_j[v]] - t_val[t]
        if diff != 0.0:
            for k in range(nf):
                z[k] += diff * Y[t, k]
    return z


@njit(cache=True, inline="always")
def _schur_system(prob, C, full, fac, removal, work, nt, z, sets):
    """The Schur complement system in (x_N, mu): (T, its right-hand side)."""
    K, var_i, var_j, cols, vals, c, margin = prob
    p_upper, n_pu = removal.p_upper, removal.n_pu
    touched, Qv, Y, G, t_val = work
    r_pos, r_val, nr, n_list, nn = sets
    nf = fac.free_vars.shape[0]
    m = nn + nr
    T = np.empty((m, m))
    rhs = np.empty(m)
    qz = np.dot(Qv[:nt], z) if nn > 0 and nf > 0 else np.zeros(nt)  # one GEMV, not nn dots
    for a in range(nn):
        ta = n_list[a]
        va = touched[ta]
        ia = var_i[va]
        ja = var_j[va]
        r = margin[ia] - _core.q_times_alpha(ia, ja, cols, vals, c, fac.S_bound, fac.ssum_bound)
        for q in range(n_pu):
            vq = p_upper[q]
            r += C * _core.q_entry(ia, ja, var_i[vq], var_j[vq], cols, vals, c, K)
        for t in range(nt):
            vt = touched[t]
            diff = t_val[t] - full.alpha[var_i[vt], var_j[vt]]
            if diff != 0.0:
                r -= _core.q_entry(ia, ja, var_i[vt], var_j[vt], cols, vals, c, K) * diff
        rhs[a] = r - qz[ta]
        for b in range(nn):
            T[a, b] = G[ta, n_list[b]]
        for b in range(nr):
            T[a, nn + b] = -Y[ta, r_pos[b]]
            T[nn + b, a] = -Y[ta, r_pos[b]]
    for a in range(nr):
        rhs[nn + a] = r_val[a] - z[r_pos[a]]
        for b in range(nr):
            T[nn + a, nn + b] = -fac.Hinv[r_pos[a], r_pos[b]]
    return T, rhs


@njit(cache=True, inline="always")
def _ridged_solve(prob, work, sets, T, rhs, ridge):
    """A singular Schur system solved with a ridge on each block (in place). For ISVM,
    all of one point's multipliers free (Q is singular along y_i there, the dual linear
    along it), or fixed where Hinv is a pseudo-inverse: the step becomes a long one
    along that direction, which the caller cuts at the box; a face solved this way is
    never reported as the optimum unless it is stationary. False if still singular."""
    K, var_i, var_j, cols, vals, c, margin = prob
    _, _, nr, n_list, nn = sets
    ridge_n = 0.0
    for a in range(nn):
        v = work.ids[n_list[a]]
        ridge_n = max(
            ridge_n, _core.q_entry(var_i[v], var_j[v], var_i[v], var_j[v], cols, vals, c, K)
        )
    ridge_r = 0.0
    for a in range(nr):
        ridge_r = max(ridge_r, abs(T[nn + a, nn + a]))
    for a in range(nn):
        T[a, a] += ridge * max(ridge_n, 1e-300)
    for a in range(nr):
        T[nn + a, nn + a] -= ridge * max(ridge_r, 1e-300)
    return _solve_dense(T, rhs, nn + nr)


@njit(cache=True, inline="always")
def _face_values(fac, work, z, rhs, sets):
    """The face's free-set values ``x`` from the Schur solution ``rhs``; the touched
    variables now free get theirs in ``work.t_val``."""
    r_pos, r_val, nr, n_list, nn = sets
    Y, t_val = work.Y, work.t_val
    nf = fac.free_vars.shape[0]
    x = z.copy()
    for a in range(nn):
        f = rhs[a]
        ta = n_list[a]
        for k in range(nf):
            x[k] -= f * Y[ta, k]
    for a in range(nr):
        f = rhs[nn + a]
        row = r_pos[a]
        for k in range(nf):
            x[k] -= f * fac.Hinv[row, k]
    for a in range(nr):
        x[r_pos[a]] = r_val[a]
    for a in range(nn):
        t_val[n_list[a]] = rhs[a]
    return x


@njit(cache=True, inline="always")
def _face_point(prob, C, full, fac, removal, work, nt, x, out):
    """The face's minimiser and its exact scores into ``out``, the changes from the full
    optimum summed per point first."""
    K, var_i, var_j, cols, vals, c, margin = prob
    x_full, p_upper, n_pu = removal.x_full, removal.p_upper, removal.n_pu
    touched, t_val = work.ids, work.t_val
    free_vars = fac.free_vars
    alpha, S, ssum = out
    alpha[:, :] = full.alpha
    S[:, :] = full.S
    ssum[:] = full.ssum
    coef = np.zeros((K.shape[0], S.shape[0]))
    for k in range(free_vars.shape[0]):
        if x[k] != x_full[k]:
            v = free_vars[k]
            alpha[var_i[v], var_j[v]] = x[k]
            _core.record_point_change(var_i[v], var_j[v], x[k] - x_full[k], cols, vals, coef)
    for t in range(nt):
        v = touched[t]
        alpha[var_i[v], var_j[v]] = t_val[t]
        _core.record_point_change(
            var_i[v], var_j[v], t_val[t] - full.alpha[var_i[v], var_j[v]], cols, vals, coef
        )
    for q in range(n_pu):
        v = p_upper[q]
        alpha[var_i[v], var_j[v]] = 0.0
        _core.record_point_change(var_i[v], var_j[v], -C, cols, vals, coef)
    _core.apply_point_steps(coef, c, K, S, ssum)


@njit(cache=True, inline="always")
def _infeasible(prob, C, slack, st, out, changes, free_threshold):
    """Collect the KKT violations of a face minimiser ``out`` into ``changes``.

    A free variable outside the box (by more than ``slack``) goes to that bound; a
    bound variable whose gradient points inward (by more than ``free_threshold``) is
    freed. Returns their number; zero means ``out.alpha`` is optimal (once clipped).
    """
    _, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = out
    chg_v, chg_s = changes
    n_inf = np.int64(0)
    for v in range(var_i.shape[0]):
        s = st[v]
        if s == EXCLUDED:
            continue
        new_s = s
        if s == FREE:
            a = alpha[var_i[v], var_j[v]]
            if a < -slack:
                new_s = ZERO
            elif a > C + slack:
                new_s = UPPER
        else:
            g = margin[var_i[v]] - _core.q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum)
            if (s == ZERO and g > free_threshold) or (s == UPPER and g < -free_threshold):
                new_s = FREE
        if new_s != s:
            chg_v[n_inf] = v
            chg_s[n_inf] = new_s
            n_inf += 1
    return n_inf


@njit(cache=True, inline="always")
def _stationary(prob, st, out, tol):
    """Whether every free variable's gradient vanishes (to ``tol``) at ``out``.

    True by construction for an exact face solve; a singular face solved with the
    ridge can miss it, and must not be reported as the optimum.
    """
    _, var_i, var_j, cols, vals, c, margin = prob
    for v in range(var_i.shape[0]):
        if st[v] == FREE:
            g = margin[var_i[v]] - _core.q_times_alpha(
                var_i[v], var_j[v], cols, vals, c, out.S, out.ssum
            )
            if abs(g) > tol:
                return False
    return True


@njit(cache=True)
def _register(prob, fac, changes, n_chg, st, work, nt, max_changed):
    """Apply the first ``n_chg`` status changes; newly freed outside variables join the
    touched ones with their rows (:func:`_add_touched`), the row storage grown as needed.

    Returns (number of touched variables, work), or -1 first (changing nothing) when
    that would take them past ``max_changed``.
    """
    chg_v, chg_s = changes
    touched = work.ids
    free_pos = fac.free_pos
    n_new = 0
    for k in range(n_chg):
        v = chg_v[k]
        if chg_s[k] == FREE and free_pos[v] < 0 and not _is_touched(v, touched, nt + n_new):
            if nt + n_new == max_changed:
                return -1, work
            touched[nt + n_new] = v
            n_new += 1
    for k in range(n_chg):
        st[chg_v[k]] = chg_s[k]
    if nt + n_new > work.Qv.shape[0]:
        work = _grown(work, nt, min(max(2 * work.Qv.shape[0], nt + n_new), max_changed))
    _add_touched(prob, fac, work, nt, n_new)
    return nt + n_new, work


@njit(cache=True)
def _clip(prob, C, out):
    """Clip ``out.alpha`` to the box, keeping its scores exact."""
    K, var_i, var_j, cols, vals, c, margin = prob
    alpha, S, ssum = out
    for v in range(var_i.shape[0]):
        a = alpha[var_i[v], var_j[v]]
        clipped = min(max(a, 0.0), C)
        if clipped != a:
            alpha[var_i[v], var_j[v]] = clipped
            _core.apply_step(var_i[v], var_j[v], clipped - a, cols, vals, c, K, S, ssum)


@njit(cache=True, inline="always")
def _grown(work, nt, cap):
    """A copy of ``work`` whose row arrays have room for ``cap`` rows (first ``nt`` kept)."""
    Qv2 = np.empty((cap, work.Qv.shape[1]))
    Y2 = np.empty((cap, work.Y.shape[1]))
    G2 = np.empty((cap, cap))
    Qv2[:nt] = work.Qv[:nt]
    Y2[:nt] = work.Y[:nt]
    G2[:nt, :nt] = work.G[:nt, :nt]
    return Touched(work.ids, Qv2, Y2, G2, work.t_val)


@njit(cache=True, _nrt=False)
def _is_touched(v, touched, nt):
    for t in range(nt):
        if touched[t] == v:
            return True
    return False


@njit(cache=True, inline="always")
def _add_touched(prob, fac, work, nt, n_new):
    """Register the outside variables ``work.ids[nt:nt + n_new]``: their columns
    ``q = Q[F, v]``, ``Hinv q`` (precomputed rows where ``fac.out_pos`` has them, else
    one matrix product for all) and their rows and columns of the Schur block
    ``G = Q_tt' - q_t' Hinv q_t'``."""
    if n_new == 0:
        return
    K, var_i, var_j, cols, vals, c, margin = prob
    free_vars, Hinv = fac.free_vars, fac.Hinv
    Q_out, Y_out, out_pos = fac.Q_out, fac.Y_out, fac.out_pos
    touched, Qv, Y, G, _ = work
    nf = free_vars.shape[0]
    new_q = np.empty((n_new, nf))
    new_y = np.empty((n_new, nf))
    if out_pos[touched[nt]] >= 0:  # all outside variables are precomputed, or none
        for a in range(n_new):
            row = out_pos[touched[nt + a]]
            new_q[a] = Q_out[row]
            new_y[a] = Y_out[row]
    else:
        for a in range(n_new):
            v = touched[nt + a]
            for k in range(nf):
                u = free_vars[k]
                new_q[a, k] = _core.q_entry(
                    var_i[u], var_j[u], var_i[v], var_j[v], cols, vals, c, K
                )
        if nf > 0:
            new_y = np.dot(new_q, Hinv)  # Hinv is symmetric
    Qv[nt : nt + n_new] = new_q
    Y[nt : nt + n_new] = new_y
    cross = np.dot(Qv[: nt + n_new], new_y.T) if nf > 0 else np.zeros((nt + n_new, n_new))
    for a in range(n_new):
        v = touched[nt + a]
        for t in range(nt + a + 1):
            u = touched[t]
            g = _core.q_entry(var_i[u], var_j[u], var_i[v], var_j[v], cols, vals, c, K)
            g -= cross[t, a]
            G[t, nt + a] = g
            G[nt + a, t] = g
