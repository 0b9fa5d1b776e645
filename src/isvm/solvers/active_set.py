"""Exact active-set (Newton) finish for the box-constrained dual, and its LOO fold update.

Coordinate descent converges linearly, and slowly on the ill-conditioned duals of
wide Gaussian kernels; the leave-one-out certificate, however, needs a small
duality gap. Both problems share a fix: once the sets of variables at 0, free and
at C are known, the optimum is the solution of one linear system on the free set,

    Q_FF alpha_F = 1 - Q_FU C 1,

so a primal-dual active-set iteration (solve, move the variables that left the
box to their bound, free the bound variables whose gradient points inward,
repeat) ends at the exact optimum in a few steps from a good guess.

- :func:`full_active_set` polishes a full-data solution (from a tolerance-level cd
  solve) to the exact optimum and returns the free set with the inverse of its
  block ``H = Q_FF``. Only this |F| x |F| block is ever formed, never Q.
- :func:`fold_active_set` solves a held-out problem (the same problem with one
  point's multipliers fixed at 0) from that factorisation: each variable whose
  status differs from the full solution's enters through a bordered (Schur
  complement) system, so a face solve costs O(m |F|) (given the rows
  ``Q[v, F] Hinv``, precomputed by the full fit) for m changed variables instead
  of a new O(|F|^3) factorisation. Primal-dual steps come first; where they stop
  making progress, the decremental path (the held-out point's multipliers scaled
  down to 0, one status change per step) finishes the fold.

Neither is trusted blindly: the result is a feasible point whose duality gap the
caller checks (and finishes with cd where needed), so rounding or a fold the
update gives up on only costs time, never exactness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numba import njit, prange
from numpy.typing import NDArray

from isvm.methods import Coding
from isvm.solvers import SolverState, _core, run_solver

ZERO, FREE, UPPER, EXCLUDED = 0, 1, 2, 3
#: a bound variable is freed when its gradient points inward by more than this
FREE_THRESHOLD = 1e-9
#: a free variable is moved to a bound when it leaves the box by more than this times C
BOX_SLACK = 1e-10
#: relative ridge on the freed variables of a singular bordered system
RIDGE = 1e-10
#: a free variable's gradient must vanish to this at a reported optimum
STATIONARY_TOL = 1e-8
#: a warm guess of a fold's statuses with more changes than this is not used: each
#: face solve costs O(changes^3), and such a guess is rarely right
WARM_MAX_CHANGES = 128


@njit(cache=True)
def dual_gradients(var_i, var_j, cols, vals, c, S, ssum):
    """``g = 1 - Q alpha`` (the ascent gradient) of every listed variable."""
    g = np.empty(var_i.shape[0])
    for v in range(var_i.shape[0]):
        g[v] = 1.0 - _core.q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum)
    return g


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
def fold_active_set(
    K,
    p,
    var_i,
    var_j,
    var_id,
    cols,
    vals,
    c,
    C,
    alpha_full,
    S_full,
    ssum_full,
    status,
    free_vars,
    free_pos,
    Hinv,
    S_bound,
    ssum_bound,
    Q_out,
    Y_out,
    out_pos,
    max_iter,
    max_changed,
    patience,
    warm_status,
    warm_base,
    alpha,
    S,
    ssum,
    status_out,
):
    """Active-set solve of the held-out problem of point ``p`` from the full optimum.

    ``status`` (ZERO/FREE/UPPER per variable), ``free_vars`` (the free set F of the
    full optimum, as variable indices; ``free_pos`` maps back), ``Hinv`` (the
    inverse of H = Q_FF) and ``S_bound``/``ssum_bound`` (the scores of the variables
    at C alone) describe the full optimum; ``Q_out``/``Y_out``/``out_pos`` hold
    ``Q[v, F]`` and ``Q[v, F] Hinv`` of the outside variables where precomputed
    (:class:`ActiveSet`). The fold fixes p's multipliers at 0;
    every other variable keeps its full status until the iteration moves it. Each
    step minimises the dual on the face its statuses define (:func:`_face_solution`,
    a bordered system on the full inverse, never a new factorisation).

    Two phases share those face solves:

    1. primal-dual steps (every variable that left the box goes to its bound, every
       bound variable whose gradient points inward is freed): usually a handful of
       steps to the optimum. The dual is not an M-matrix, so they can cycle or
       diverge; once ``patience`` steps in a row fail to reduce the number of
       infeasible variables, phase 2 takes over (``patience < 0``: at once);
    2. the decremental path (Cauwenberghs and Poggio's exact leave-one-out, without
       the bias): with p's multipliers scaled by 1 - t, the optimum moves piecewise
       linearly from the full optimum (t = 0) to the fold's (t = 1); each piece heads
       for its face's minimiser at t = 1 and ends where a free variable reaches a
       bound or a bound variable's gradient turns inward. One status change per step
       and no guessing, so it does not cycle the way phase 1 can, but it takes one
       step per change where phase 1 often takes one step for many.

    Along a C path the fold's own changes persist from one C to the next: with
    ``warm_status`` (this fold's final statuses at the previous C) and ``warm_base``
    (the full optimum's there), phase 1 starts from the full statuses with the
    fold's previous changes applied (unless there are more than ``WARM_MAX_CHANGES``);
    empty arrays mean no such guess. Phase 2 always starts afresh from the full
    optimum.

    Writes the fold solution into ``alpha``, ``S``, ``ssum`` (clipped to the box,
    scores exact for it) and its statuses into ``status_out``, and returns
    (converged, set updates). Not converged
    (``max_iter`` updates in all, a singular face, more than ``max_changed`` outside
    variables freed, a ridged face that is not stationary: ISVM with two classes,
    whose dual is flat along y_i) leaves them unspecified; the caller then falls back to
    coordinate descent.
    """
    n_var = var_i.shape[0]
    nf = free_vars.shape[0]
    n_classes = alpha_full.shape[1]
    st = status.copy()
    x_full = np.empty(nf)
    for k in range(nf):
        x_full[k] = alpha_full[var_i[free_vars[k]], var_j[free_vars[k]]]
    # p's multipliers at C drop to 0: z_p = Hinv sum_v Q[F, v] C, from the precomputed
    # rows Q[v, F] Hinv where there are any
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
                    d[k] += C * _core.q_entry(K, var_i[u], var_j[u], p, j, cols, vals, c)
        st[v] = EXCLUDED
    if n_pu > 0 and nf > 0 and out_pos[p_upper[0]] < 0:  # all precomputed, or none
        z_p = np.dot(Hinv, d)
    # outside variables freed at some step ("touched"): columns, Hinv columns, Schur rows
    touched = np.empty(max_changed, dtype=np.int64)
    cap = min(16, max_changed)  # rows kept for touched variables; _register grows them
    Qv = np.empty((cap, nf))
    Y = np.empty((cap, nf))
    G = np.empty((cap, cap))  # Q_tt' - Q_tF Hinv Q_Ft'
    t_val = np.empty(max_changed)
    nt = 0
    chg_v = np.empty(n_var, dtype=np.int64)
    chg_s = np.empty(n_var, dtype=np.int8)
    slack = BOX_SLACK * C
    it = 0
    # phase 1: primal-dual steps, from the fold's changes at the previous C if given
    if patience >= 0 and warm_status.shape[0] == n_var and warm_base.shape[0] == n_var:
        n_warm = 0
        for v in range(n_var):
            w = warm_status[v]
            if st[v] != EXCLUDED and w != EXCLUDED and w != warm_base[v] and w != st[v]:
                chg_v[n_warm] = v
                # an outside variable enters the face solves only as a touched (freed)
                # one: guess it free, and the steps move it to its bound if need be
                chg_s[n_warm] = w if free_pos[v] >= 0 else FREE
                n_warm += 1
        if n_warm <= WARM_MAX_CHANGES:
            grown, Qv, Y, G = _register(
                n_warm, chg_v, chg_s, st, free_pos, touched, nt, max_changed, K, var_i, var_j,
                cols, vals, c, free_vars, Hinv, Q_out, Y_out, out_pos, Qv, Y, G,
            )  # fmt: skip
            nt = max(grown, 0)  # too many: no guess (nothing changed)
    guessed = nt > 0
    best = n_var + 1
    tries = patience
    while it < max_iter and patience >= 0:  # patience < 0: the decremental path alone
        it += 1
        if not _face_solution(
            K, var_i, var_j, cols, vals, c, C, alpha_full, S_full, ssum_full, free_vars, Hinv,
            S_bound, ssum_bound, p_upper, n_pu, x_full, z_p, st, touched, nt, Qv, Y, G, t_val,
            alpha, S, ssum,
        ):  # fmt: skip
            break
        n_inf = _infeasible(var_i, var_j, cols, vals, c, C, slack, st, alpha, S, ssum, chg_v, chg_s)
        if n_inf == 0:
            if not _stationary(var_i, var_j, cols, vals, c, st, S, ssum):
                return False, it  # a ridged solve of a singular face: not a minimiser
            _clip(var_i, var_j, cols, vals, c, K, C, alpha, S, ssum)
            status_out[:] = st
            return True, it
        if n_inf < best:
            best = n_inf
            tries = patience
        elif tries > 0:
            tries -= 1
        else:
            break
        grown, Qv, Y, G = _register(
            n_inf, chg_v, chg_s, st, free_pos, touched, nt, max_changed, K, var_i, var_j, cols,
            vals, c, free_vars, Hinv, Q_out, Y_out, out_pos, Qv, Y, G,
        )  # fmt: skip
        if grown < 0:
            break
        nt = grown
    # phase 2: the decremental path. With p's multipliers at (1 - t) times their full
    # values, the optimum is piecewise linear in t, from the full optimum (t = 0) to
    # the fold's (t = 1); on each piece it heads for the current face's minimiser at
    # t = 1, and a piece ends where a free variable reaches a bound or a bound
    # variable's gradient turns inward: one status change per step.
    for v in range(n_var):
        if st[v] != EXCLUDED:
            st[v] = status[v]
    if guessed:  # the path starts afresh, not burdened by the rows of a wrong guess
        nt = 0
    cur = alpha_full.copy()
    g_cur = dual_gradients(var_i, var_j, cols, vals, c, S_full, ssum_full)
    while it < max_iter:
        it += 1
        if not _face_solution(
            K, var_i, var_j, cols, vals, c, C, alpha_full, S_full, ssum_full, free_vars, Hinv,
            S_bound, ssum_bound, p_upper, n_pu, x_full, z_p, st, touched, nt, Qv, Y, G, t_val,
            alpha, S, ssum,
        ):  # fmt: skip
            return False, it
        g_new = dual_gradients(var_i, var_j, cols, vals, c, S, ssum)
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
            elif s == ZERO and g_new[v] > FREE_THRESHOLD:  # gradient turns inward
                r = max(FREE_THRESHOLD - g_cur[v], 0.0) / (g_new[v] - g_cur[v])
            elif s == UPPER and g_new[v] < -FREE_THRESHOLD:
                r = max(g_cur[v] + FREE_THRESHOLD, 0.0) / (g_cur[v] - g_new[v])
            else:
                continue
            if r < tau:
                tau, event = r, v
        if event < 0:  # the face minimiser at t = 1 satisfies the KKT conditions
            if not _stationary(var_i, var_j, cols, vals, c, st, S, ssum):
                return False, it  # a ridged solve of a singular face: not a minimiser
            _clip(var_i, var_j, cols, vals, c, K, C, alpha, S, ssum)
            status_out[:] = st
            return True, it
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
            grown, Qv, Y, G = _register(
                1, chg_v, chg_s, st, free_pos, touched, nt, max_changed, K, var_i, var_j, cols,
                vals, c, free_vars, Hinv, Q_out, Y_out, out_pos, Qv, Y, G,
            )  # fmt: skip
            if grown < 0:
                return False, it
            nt = grown
    return False, it


@njit(cache=True)
def _face_solution(
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
    free_vars,
    Hinv,
    S_bound,
    ssum_bound,
    p_upper,
    n_pu,
    x_full,
    z_p,
    st,
    touched,
    nt,
    Qv,
    Y,
    G,
    t_val,
    alpha,
    S,
    ssum,
):
    """Minimise the dual on the face that the statuses ``st`` describe.

    With R the free-set variables now at a bound and N the touched outside variables
    now free, the face's stationarity system

        [ H     Q_FN  E_R ] [x_F]   [r_F]
        [ Q_NF  Q_NN  0   ] [x_N] = [r_N]
        [ E_R'  0     0   ] [mu ]   [v_R]

    is solved through its (|N| + |R|)-square Schur complement: p's multipliers at C
    dropping to 0 enter through ``z_p``, each touched variable through its rows of
    ``Qv``, ``Y = Q_tF Hinv`` and ``G``. Writes the minimiser (not clipped to the box)
    and its exact scores into ``alpha``, ``S``, ``ssum`` and the touched variables'
    values into ``t_val``. Returns False when the system is singular even with a ridge.
    """
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
    m = nn + nr
    # z = Hinv r_F with every outside change folded in
    z = x_full + z_p
    for t in range(nt):
        v = touched[t]
        diff = alpha_full[var_i[v], var_j[v]] - t_val[t]
        if diff != 0.0:
            for k in range(nf):
                z[k] += diff * Y[t, k]
    # Schur complement system in (x_N, mu)
    T = np.empty((m, m))
    rhs = np.empty(m)
    qz = np.dot(Qv[:nt], z) if nn > 0 and nf > 0 else np.zeros(nt)  # one GEMV, not nn dots
    for a in range(nn):
        ta = n_list[a]
        va = touched[ta]
        ia = var_i[va]
        ja = var_j[va]
        r = 1.0 - _core.q_times_alpha(ia, ja, cols, vals, c, S_bound, ssum_bound)
        for q in range(n_pu):
            vq = p_upper[q]
            r += C * _core.q_entry(K, ia, ja, var_i[vq], var_j[vq], cols, vals, c)
        for t in range(nt):
            vt = touched[t]
            diff = t_val[t] - alpha_full[var_i[vt], var_j[vt]]
            if diff != 0.0:
                r -= _core.q_entry(K, ia, ja, var_i[vt], var_j[vt], cols, vals, c) * diff
        rhs[a] = r - qz[ta]
        for b in range(nn):
            T[a, b] = G[ta, n_list[b]]
        for b in range(nr):
            T[a, nn + b] = -Y[ta, r_pos[b]]
            T[nn + b, a] = -Y[ta, r_pos[b]]
    for a in range(nr):
        rhs[nn + a] = r_val[a] - z[r_pos[a]]
        for b in range(nr):
            T[nn + a, nn + b] = -Hinv[r_pos[a], r_pos[b]]
    T_ridge = T.copy()
    rhs_ridge = rhs.copy()
    if not _solve_dense(T, rhs, m):
        # Singular: for ISVM, all of one point's multipliers free (Q is singular along
        # y_i there, and the dual is linear along it), or fixed where Hinv is a
        # pseudo-inverse. A ridge on each block turns the step into a long one along
        # that direction, which the caller cuts at the box; a face solved this way
        # is never reported as the optimum unless it is stationary.
        ridge_n = 0.0
        for a in range(nn):
            v = touched[n_list[a]]
            ridge_n = max(ridge_n, _core.q_entry(K, var_i[v], var_j[v], var_i[v], var_j[v],
                                                 cols, vals, c))  # fmt: skip
        ridge_r = 0.0
        for a in range(nr):
            ridge_r = max(ridge_r, abs(T_ridge[nn + a, nn + a]))
        for a in range(nn):
            T_ridge[a, a] += RIDGE * max(ridge_n, 1e-300)
        for a in range(nr):
            T_ridge[nn + a, nn + a] -= RIDGE * max(ridge_r, 1e-300)
        if not _solve_dense(T_ridge, rhs_ridge, m):
            return False
        rhs = rhs_ridge
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
            x[k] -= f * Hinv[row, k]
    for a in range(nr):
        x[r_pos[a]] = r_val[a]
    for a in range(nn):
        t_val[n_list[a]] = rhs[a]
    # the minimiser and its exact scores, the changes summed per point first
    alpha[:, :] = alpha_full
    S[:, :] = S_full
    ssum[:] = ssum_full
    coef = np.zeros((K.shape[0], S.shape[0]))
    for k in range(nf):
        if x[k] != x_full[k]:
            v = free_vars[k]
            alpha[var_i[v], var_j[v]] = x[k]
            _add_change(var_i[v], var_j[v], x[k] - x_full[k], cols, vals, coef)
    for t in range(nt):
        v = touched[t]
        alpha[var_i[v], var_j[v]] = t_val[t]
        _add_change(var_i[v], var_j[v], t_val[t] - alpha_full[var_i[v], var_j[v]], cols, vals, coef)
    for q in range(n_pu):
        v = p_upper[q]
        alpha[var_i[v], var_j[v]] = 0.0
        _add_change(var_i[v], var_j[v], -C, cols, vals, coef)
    _core.apply_point_steps(coef, c, K, S, ssum)
    return True


@njit(cache=True, _nrt=False)
def _add_change(i, j, delta, cols, vals, coef):
    """Record ``alpha_ij += delta`` in the per-point coefficients ``coef`` (N x D)."""
    for t in range(2):
        col = cols[i, j, t]
        if col >= 0:
            coef[i, col] += delta * vals[i, j, t]


@njit(cache=True)
def _infeasible(var_i, var_j, cols, vals, c, C, slack, st, alpha, S, ssum, chg_v, chg_s):
    """Collect the KKT violations of a face minimiser into ``chg_v``/``chg_s``.

    A free variable outside the box (by more than ``slack``) goes to that bound; a
    bound variable whose gradient points inward (by more than FREE_THRESHOLD) is
    freed. Returns their number; zero means ``alpha`` is optimal (once clipped).
    """
    n_inf = 0
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
            g = 1.0 - _core.q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum)
            if (s == ZERO and g > FREE_THRESHOLD) or (s == UPPER and g < -FREE_THRESHOLD):
                new_s = FREE
        if new_s != s:
            chg_v[n_inf] = v
            chg_s[n_inf] = new_s
            n_inf += 1
    return n_inf


@njit(cache=True)
def _stationary(var_i, var_j, cols, vals, c, st, S, ssum):
    """Whether every free variable's gradient vanishes (to ``STATIONARY_TOL``).

    True by construction for an exact face solve; a singular face solved with the
    ridge can miss it, and must not be reported as the optimum.
    """
    for v in range(var_i.shape[0]):
        if st[v] == FREE:
            g = 1.0 - _core.q_times_alpha(var_i[v], var_j[v], cols, vals, c, S, ssum)
            if abs(g) > STATIONARY_TOL:
                return False
    return True


@njit(cache=True)
def _register(
    n_chg, chg_v, chg_s, st, free_pos, touched, nt, max_changed, K, var_i, var_j, cols, vals,
    c, free_vars, Hinv, Q_out, Y_out, out_pos, Qv, Y, G,
):  # fmt: skip
    """Apply the status changes; newly freed outside variables join ``touched`` with
    their rows (:func:`_add_touched`), the row storage grown as needed.

    Returns (number of touched variables, Qv, Y, G), or -1 first (changing nothing)
    when that would take ``touched`` past ``max_changed``.
    """
    n_new = 0
    for k in range(n_chg):
        v = chg_v[k]
        if chg_s[k] == FREE and free_pos[v] < 0 and not _is_touched(v, touched, nt + n_new):
            if nt + n_new == max_changed:
                return -1, Qv, Y, G
            touched[nt + n_new] = v
            n_new += 1
    for k in range(n_chg):
        st[chg_v[k]] = chg_s[k]
    if nt + n_new > Qv.shape[0]:
        Qv, Y, G = _grown(Qv, Y, G, nt, min(max(2 * Qv.shape[0], nt + n_new), max_changed))
    _add_touched(
        nt, n_new, K, var_i, var_j, cols, vals, c, free_vars, Hinv, Q_out, Y_out, out_pos,
        touched, Qv, Y, G,
    )  # fmt: skip
    return nt + n_new, Qv, Y, G


@njit(cache=True)
def _clip(var_i, var_j, cols, vals, c, K, C, alpha, S, ssum):
    """Clip ``alpha`` to the box, keeping its scores exact."""
    for v in range(var_i.shape[0]):
        a = alpha[var_i[v], var_j[v]]
        clipped = min(max(a, 0.0), C)
        if clipped != a:
            alpha[var_i[v], var_j[v]] = clipped
            _core.apply_step(var_i[v], var_j[v], clipped - a, cols, vals, c, K, S, ssum)


@njit(cache=True)
def _grown(Qv, Y, G, nt, cap):
    """Copies of the touched-variable arrays with room for ``cap`` rows."""
    Qv2 = np.empty((cap, Qv.shape[1]))
    Y2 = np.empty((cap, Y.shape[1]))
    G2 = np.empty((cap, cap))
    Qv2[:nt] = Qv[:nt]
    Y2[:nt] = Y[:nt]
    G2[:nt, :nt] = G[:nt, :nt]
    return Qv2, Y2, G2


@njit(cache=True, _nrt=False)
def _is_touched(v, touched, nt):
    for t in range(nt):
        if touched[t] == v:
            return True
    return False


@njit(cache=True)
def _add_touched(
    nt, n_new, K, var_i, var_j, cols, vals, c, free_vars, Hinv, Q_out, Y_out, out_pos, touched,
    Qv, Y, G,
):  # fmt: skip
    """Register the outside variables ``touched[nt:nt + n_new]``: their columns
    ``q = Q[F, v]``, ``Hinv q`` (precomputed rows where ``out_pos`` has them, else one
    matrix product for all) and their rows and columns of the Schur block
    ``G = Q_tt' - q_t' Hinv q_t'``."""
    if n_new == 0:
        return
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
                    K, var_i[u], var_j[u], var_i[v], var_j[v], cols, vals, c
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
            g = _core.q_entry(K, var_i[u], var_j[u], var_i[v], var_j[v], cols, vals, c)
            g -= cross[t, a]
            G[t, nt + a] = g
            G[nt + a, t] = g


@dataclass
class ActiveSet:
    """The exact optimum of a full problem with what the fold updates need."""

    alpha: NDArray[np.float64]
    S: NDArray[np.float64]
    ssum: NDArray[np.float64]
    status: NDArray[np.int8]  # ZERO / FREE / UPPER per variable
    free_vars: NDArray[np.int64]
    free_pos: NDArray[np.int64]
    Hinv: NDArray[np.float64]
    S_bound: NDArray[np.float64]
    ssum_bound: NDArray[np.float64]
    iterations: int
    #: ``Q[v, F]`` and ``Q[v, F] Hinv`` of every variable v outside F, at row
    #: ``out_pos[v]``; empty (and ``out_pos`` all -1) when over the memory budget
    Q_out: NDArray[np.float64]
    Y_out: NDArray[np.float64]
    out_pos: NDArray[np.int64]
    #: whether ``Hinv`` is the inverse of H (Cholesky), not a pseudo-inverse: only then
    #: can the next grid point update it (:func:`_updated_products`)
    exact_inverse: bool = False


def _scores(K: NDArray, coding: Coding, alpha: NDArray) -> tuple[NDArray, NDArray]:
    """(S, ssum) of ``alpha``, as a solver state would hold them."""
    state = SolverState.start(K, coding, alpha)
    return state.S, state.ssum


def _state(K, coding, var_i, var_j, alpha) -> tuple[NDArray, NDArray, NDArray]:
    """(S, ssum) of ``alpha`` and the dual gradients of the listed variables there."""
    S, ssum = _scores(K, coding, alpha)
    g = dual_gradients(var_i, var_j, coding.cols, coding.vals, coding.mean_coef, S, ssum)
    return S, ssum, g


def _cholesky(H: NDArray[np.float64], scale: float) -> tuple | None:
    """Cholesky factor of H (lower), or None where H is not safely positive definite.

    A pivot whose square is at most ``1e-10 * scale`` (the largest diagonal entry of
    the block in question) counts as singular: ISVM's dual is singular along one
    direction per point, and a nearly singular factor would amplify rounding.
    """
    try:
        factor = scipy.linalg.cho_factor(H, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    if np.min(np.diag(factor[0])) ** 2 <= 1e-10 * scale:
        return None
    return factor


def _is_exact(fact: tuple) -> bool:
    """Whether a factorisation from :func:`_factorise` gives the true inverse."""
    return fact[0] in ("cholesky", "empty")


def _pin_null_directions(
    x: NDArray[np.float64], null: NDArray[np.float64], C: float
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Move a face minimiser along the null space of H: one variable per direction to a bound.

    Along a null direction n of H (``H n = 0``) the dual and every gradient are
    constant, so ``x + t n`` is as optimal as x for every t that stays in the box; at
    the first bound met, that variable can be fixed there (its gradient is 0) and the
    face loses one null direction. ISVM's dual is singular along one direction per
    point whose multipliers are all free; pinning gives an optimum whose free block is
    definite, so that it has a true inverse, which the C path can update and the folds
    can border. Returns (positions in x of the pinned variables, their bounds).
    """
    x = np.clip(x, 0.0, C)
    N = null.copy()
    pinned, values = [], []
    for d in range(N.shape[1]):
        n = N[:, d]
        scale = np.max(np.abs(n))
        if scale == 0.0:
            continue
        moving = np.flatnonzero(np.abs(n) > 1e-8 * scale)
        to_zero = -x[moving] / n[moving]
        to_c = (C - x[moving]) / n[moving]
        ahead = np.maximum(to_zero, to_c)  # the bound met moving forward (t >= 0)
        behind = np.minimum(to_zero, to_c)  # ... and backward (t <= 0)
        a, b = np.argmin(ahead), np.argmax(behind)
        if ahead[a] <= -behind[b]:
            k, t = moving[a], ahead[a]
        else:
            k, t = moving[b], behind[b]
        x = np.clip(x + t * n, 0.0, C)
        x[k] = 0.0 if x[k] <= 0.5 * C else C
        pinned.append(k)
        values.append(x[k])
        # the other directions without a component on k: still null directions
        N[:, d + 1 :] -= np.outer(n, N[k, d + 1 :] / n[k])
    return np.array(pinned, dtype=np.int64), np.array(values)


def _factorise(H: NDArray[np.float64]) -> tuple:
    """A solver for the symmetric positive semidefinite H: Cholesky, or a pseudo-inverse.

    ISVM's dual is singular along one direction per point, and duplicate points make
    any dual singular; where the Cholesky factorisation fails or has a pivot below
    1e-10 of the largest diagonal entry, the eigenvalue pseudo-inverse (cut at 1e-12
    of the largest eigenvalue) gives the minimum-norm solution of the consistent
    stationarity system instead (the dropped eigenvectors, a basis of the null space,
    come last in the tuple). Apply it with :func:`_solve`.
    """
    if H.shape[0] == 0:
        return ("empty",)
    factor = _cholesky(H, np.max(np.diag(H)))
    if factor is not None:
        return ("cholesky", factor)
    w, V = scipy.linalg.eigh(H, check_finite=False)
    keep = w > 1e-12 * max(w[-1], 0.0)
    return ("eigen", V[:, keep], w[keep], V[:, ~keep])


def _solve(fact: tuple, b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``H^-1 b`` (or the pseudo-inverse's) for a factorisation from :func:`_factorise`."""
    if fact[0] == "empty":
        return np.zeros_like(b)
    if fact[0] == "cholesky":
        return scipy.linalg.cho_solve(fact[1], b, check_finite=False)
    V, w = fact[1], fact[2]
    return (V / w) @ (V.T @ b)


def full_active_set(
    K: NDArray[np.float64],
    coding: Coding,
    var_i: NDArray[np.int64],
    var_j: NDArray[np.int64],
    alpha0: NDArray[np.float64],
    C: float,
    *,
    max_iter: int = 10,
    max_free: int = 3000,
    retry_tols: tuple[float, ...] = (1e-5, 1e-7),
    retry_max_epochs: int = 1000,
    max_outside_entries: int = 8_000_000,
    seed: int = 0,
    previous: ActiveSet | None = None,
    previous_max_iter: int = 4,
) -> ActiveSet | None:
    """Polish ``alpha0`` (feasible, near-optimal) to the exact optimum by active-set steps.

    Each step solves ``Q_FF alpha_F = 1 - Q_FU C 1`` on the current free set (a
    fresh factorisation of the |F| x |F| block), then moves the variables that left
    the box to their bound and frees the bound variables whose gradient points
    inward; the sets settling means the KKT conditions hold. The first sets are
    those of ``previous`` where given (the optimum at the previous C of a path,
    usually a few changes away; at most ``previous_max_iter`` steps), then those
    guessed from ``alpha0``. From a rough start the sets can cycle (the dual is not
    an M-matrix), so after ``max_iter`` steps the start is improved by cd at each of
    ``retry_tols`` in turn (at most ``retry_max_epochs`` epochs each) and the steps
    retried. Returns None when they never settle or the free set exceeds
    ``max_free`` variables (the caller keeps its cd solution).

    The fold updates need ``H^-1`` and ``Hinv Q[F, v]`` for each outside variable v
    they free; when (outside variables) x |F| is at most ``max_outside_entries`` (64
    MB per array at the default) the latter are computed here for all of them in one
    matrix product, much faster than in the folds' small batches. Along a C path
    both are updated from ``previous``'s where the free set changed little
    (:func:`_updated_products`): O(changes x |F| x outside) instead of O(|F|^2 x
    outside).
    """
    extra = 0
    alpha = np.array(alpha0, dtype=np.float64)
    for attempt, tol in enumerate((None, None, *retry_tols)):
        if attempt == 0 and previous is None:
            continue
        if tol is not None:
            state = SolverState.start(K, coding, alpha)
            epochs, _, _ = run_solver(
                state, var_i, var_j, C, tol=tol, max_iter=retry_max_epochs, seed=seed
            )
            alpha, extra = state.alpha, extra + epochs
        if attempt == 0:
            start, steps = previous.status, previous_max_iter
        else:
            start, steps = None, max_iter
        settled = _settle(K, coding, var_i, var_j, alpha, C, steps, max_free, start, previous)
        if settled is None:
            extra += steps
            continue
        result, fact, r = settled
        result.iterations += extra
        nf = result.free_vars.shape[0]
        n_out = result.status.shape[0] - nf
        within = n_out * nf <= max_outside_entries
        if not (
            within
            and previous is not None
            and _updated_products(previous, result, r, K, coding, var_i, var_j)
        ):
            if fact is None:  # solved by an update, but the products could not follow
                fact = _factorise(
                    q_block(*_blk(K, coding, var_i, var_j), result.free_vars, result.free_vars)
                )
                result.exact_inverse = _is_exact(fact)
            result.Hinv = np.ascontiguousarray(_solve(fact, np.eye(nf)))
            if within:
                outside = np.flatnonzero(result.free_pos < 0)
                result.Q_out = q_block(*_blk(K, coding, var_i, var_j), outside, result.free_vars)
                result.Y_out = result.Q_out @ result.Hinv  # Hinv is symmetric
                result.out_pos[outside] = np.arange(outside.shape[0])
        return result
    return None


#: relative residual ``|H Hinv v - v| / |v|`` above which an updated inverse is redone
UPDATE_RESIDUAL = 1e-8
#: a full-fit face solved by an updated inverse must leave free gradients below this
#: (relative to its right-hand side), after at most REFINE_STEPS refinements
SOLVE_RESIDUAL = 1e-12
REFINE_STEPS = 2
#: times a settled but singular face may be reduced by :func:`_pin_null_directions`
PIN_ROUNDS = 2


def _blk(K, coding, var_i, var_j) -> tuple:
    """The leading arguments of :func:`q_block` for this problem."""
    return K, var_i, var_j, coding.cols, coding.vals, coding.mean_coef


def _block_update(
    prev: ActiveSet,
    free: NDArray[np.int64],
    K: NDArray[np.float64],
    coding: Coding,
    var_i: NDArray[np.int64],
    var_j: NDArray[np.int64],
    products: bool = False,
) -> tuple | None:
    """``prev``'s inverse (and, with ``products``, its outside rows) moved to ``free``.

    The free set changes from F to F' = (F - R) + N. Removing R: with ``Hinv``
    partitioned into kept (k) and removed parts and ``M = Hinv_RR^-1 Hinv_Rk``,
    ``H_kk^-1 = Hinv_kk - Hinv_kR M``, each outside row becomes ``Y_k - Y_R M`` and
    the removed variables' own rows are ``-M``. Adding N: with ``B = Q[k, N]``,
    ``Y_N = B' H_kk^-1`` and the Schur complement ``S = Q_NN - Y_N B``, the bordered
    inverse is ``[[H_kk^-1 + Y_N' S^-1 Y_N, -Y_N' S^-1], [-S^-1 Y_N, S^-1]]`` and an
    outside row becomes ``[Y - W S^-1 Y_N, W S^-1]`` with ``W = Q[v, N] - Y B``.
    O((|R| + |N|) |F| (|F| + outside)) work, against O(|F|^3 + |F|^2 outside) fresh.

    Returns (positions in ``free`` of the new order k + N, Hinv in that order, and
    with ``products`` Q_out, Y_out and the outside variables of their rows), or None
    where it does not apply: ``prev``'s inverse is a pseudo-inverse, it lacks the
    products asked for, the change is large (``4 (|R| + 2 |N|) > |F'|``) or the
    Schur complement is not positive definite.
    """
    n_var = var_i.shape[0]
    nf_prev = prev.free_vars.shape[0]
    if not prev.exact_inverse or nf_prev == 0:
        return None
    if products and prev.Q_out.shape[0] != n_var - nf_prev:
        return None
    new_pos = np.full(n_var, -1, dtype=np.int64)
    new_pos[free] = np.arange(free.shape[0])
    in_new = new_pos[prev.free_vars] >= 0
    kept = prev.free_vars[in_new]
    removed = prev.free_vars[~in_new]
    added = free[prev.free_pos[free] < 0]
    if 4 * (removed.shape[0] + 2 * added.shape[0]) > free.shape[0]:
        return None
    blk = _blk(K, coding, var_i, var_j)
    pk, pr = prev.free_pos[kept], prev.free_pos[removed]
    nk, nr, nn = kept.shape[0], removed.shape[0], added.shape[0]
    Hinv = np.empty((nk + nn, nk + nn))
    H_kk = Hinv[:nk, :nk]  # a view: H_kk^-1 is built in place
    _gather(prev.Hinv, pk, pk, H_kk)
    if nr:
        Hinv_kr = _gather(prev.Hinv, pk, pr, np.empty((nk, nr)))
        M = np.linalg.solve(_gather(prev.Hinv, pr, pr, np.empty((nr, nr))), Hinv_kr.T)
        H_kk -= Hinv_kr @ M
    if products:  # rows: the old outside variables but N, then R; columns: k, then N
        old_out = np.empty(prev.Q_out.shape[0], dtype=np.int64)
        has_row = prev.out_pos >= 0
        old_out[prev.out_pos[has_row]] = np.flatnonzero(has_row)
        rest = np.ones(old_out.shape[0], dtype=bool)
        rest[prev.out_pos[added]] = False
        rest_rows = np.flatnonzero(rest)
    if nn:
        if products:  # Q[N, k] and Q[N, k] H_kk^-1 are outside rows of prev
            rows_n = prev.out_pos[added]
            B = _gather(prev.Q_out, rows_n, pk, np.empty((nn, nk))).T
            Y_n = _gather(prev.Y_out, rows_n, pk, np.empty((nn, nk)))
            if nr:
                Y_n -= _gather(prev.Y_out, rows_n, pr, np.empty((nn, nr))) @ M
        else:
            B = q_block(*blk, kept, added)
            Y_n = (H_kk @ B).T
        Q_nn = q_block(*blk, added, added)
        schur = Q_nn - Y_n @ B
        # a (nearly) singular new block, e.g. ISVM with all of a point's multipliers
        # free, needs the pseudo-inverse of a fresh start
        factor = _cholesky(0.5 * (schur + schur.T), max(np.max(np.diag(Q_nn)), 1e-300))
        if factor is None:
            return None
        S_inv = scipy.linalg.cho_solve(factor, np.eye(nn), check_finite=False)
        YS = Y_n.T @ S_inv
        H_kk += YS @ Y_n
        Hinv[:nk, nk:] = -YS
        Hinv[nk:, :nk] = -YS.T
        Hinv[nk:, nk:] = S_inv
    Q = Y = out = None
    if products:
        out = np.concatenate([old_out[rest_rows], removed])
        n_out, n_rest = out.shape[0], rest_rows.shape[0]
        Q = np.empty((n_out, nk + nn))
        Y = np.empty((n_out, nk + nn))
        _gather(prev.Q_out, rest_rows, pk, Q[:n_rest, :nk])
        if nr:
            Q[n_rest:, :nk] = q_block(*blk, removed, kept)
        if nn:
            Q[:, nk:] = q_block(*blk, out, added)
        # each row in turn through the removal and the addition, in blocks of rows
        # that stay in cache (one pass over the big arrays)
        starts = [*range(0, n_rest, _ROW_BLOCK), *range(n_rest, n_out, _ROW_BLOCK)]
        for start in starts:
            stop = min(start + _ROW_BLOCK, n_rest if start < n_rest else n_out)
            y = Y[start:stop, :nk]
            if start < n_rest:
                rows = rest_rows[start:stop]
                _gather(prev.Y_out, rows, pk, y)
                if nr:
                    y -= _gather(prev.Y_out, rows, pr, np.empty((rows.shape[0], nr))) @ M
            else:
                y[:] = -M[start - n_rest : stop - n_rest]
            if nn:
                ws = (Q[start:stop, nk:] - y @ B) @ S_inv
                y -= ws @ Y_n
                Y[start:stop, nk:] = ws
    order = new_pos[np.concatenate([kept, added])]
    return order, Hinv, Q, Y, out


def _q_times(K, coding, var_i, var_j, free, u) -> NDArray[np.float64]:
    """``Q[free, free] @ u`` through the scores of u, without forming the block."""
    fi, fj = var_i[free], var_j[free]
    alpha = np.zeros(coding.var_mask.shape)
    alpha[fi, fj] = u
    return 1.0 - _state(K, coding, fi, fj, alpha)[2]


def _updated_products(
    prev: ActiveSet,
    result: ActiveSet,
    r: NDArray[np.float64],
    K: NDArray[np.float64],
    coding: Coding,
    var_i: NDArray[np.int64],
    var_j: NDArray[np.int64],
) -> bool:
    """Fill ``result``'s Hinv, Q_out, Y_out by :func:`_block_update` of ``prev``'s.

    Kept only if ``H Hinv v = v`` holds to :data:`UPDATE_RESIDUAL` for ``v = r`` (the
    face's right-hand side) and ``v = 1``: rounding accumulates along a path, and the
    check sends it back to a fresh factorisation before it matters. False (result
    unchanged) where the update does not apply or fails the check.
    """
    if not result.exact_inverse:
        return False
    update = _block_update(prev, result.free_vars, K, coding, var_i, var_j, products=True)
    if update is None:
        return False
    order, Hinv, Q, Y, out = update
    free = result.free_vars[order]
    for v in (r[order], np.ones(free.shape[0])):
        residual = _q_times(K, coding, var_i, var_j, free, Hinv @ v) - v
        if np.max(np.abs(residual)) > UPDATE_RESIDUAL * max(np.max(np.abs(v)), 1e-300):
            return False
    n_var = var_i.shape[0]
    result.free_vars = free
    result.free_pos = np.full(n_var, -1, dtype=np.int64)
    result.free_pos[free] = np.arange(free.shape[0])
    result.Hinv = np.ascontiguousarray(Hinv)
    result.Q_out = np.ascontiguousarray(Q)
    result.Y_out = np.ascontiguousarray(Y)
    result.out_pos = np.full(n_var, -1, dtype=np.int64)
    result.out_pos[out] = np.arange(out.shape[0])
    return True


@njit(cache=True, parallel=True)
def q_block(K, var_i, var_j, cols, vals, c, rows, columns):
    """The block ``Q[rows, columns]`` of the listed variables (indices into ``var_i``).

    Entry by entry from the codings (:func:`isvm.solvers._core.q_entry`), rows in
    parallel: no dense coding vectors, no fancy-indexed copies of K.
    """
    out = np.empty((rows.shape[0], columns.shape[0]))
    for a in prange(rows.shape[0]):
        i, j = var_i[rows[a]], var_j[rows[a]]
        for b in range(columns.shape[0]):
            u = columns[b]
            out[a, b] = _core.q_entry(K, i, j, var_i[u], var_j[u], cols, vals, c)
    return out


#: rows per block in the updates of the outside products
_ROW_BLOCK = 256


@njit(cache=True, parallel=True)
def _gather(A, rows, columns, out):
    """``out[:] = A[rows][:, columns]`` (rows in parallel; ``out`` may be a view)."""
    for a in prange(rows.shape[0]):
        r = rows[a]
        for b in range(columns.shape[0]):
            out[a, b] = A[r, columns[b]]
    return out


def _settle(K, coding, var_i, var_j, alpha, C, max_iter, max_free, status=None, previous=None):
    """Primal-dual active-set steps from ``status`` (guessed from ``alpha`` if None).

    Each step's face solve uses ``previous``'s inverse updated to the step's free set
    (:func:`_block_update`) where it applies and its solution, refined on the exact
    residual, is stationary (free gradients below :data:`SOLVE_RESIDUAL`), else a
    fresh factorisation.
    Returns (the optimum, without ``Hinv`` or products yet; the factorisation of its
    H, or None if its face was solved by an update; the face's right-hand side r), or
    None if the sets do not settle.
    """
    c = coding.mean_coef
    n_var = var_i.shape[0]
    if status is None:
        S, ssum, g = _state(K, coding, var_i, var_j, alpha)
        step = alpha[var_i, var_j] + g
        status = np.where(step <= 0.0, ZERO, np.where(step >= C, UPPER, FREE)).astype(np.int8)
    it, limit, pin_rounds = 0, max_iter, PIN_ROUNDS
    while it < limit:
        it += 1
        free = np.flatnonzero(status == FREE)
        if free.shape[0] > max_free:
            return None
        bound = np.zeros_like(alpha)
        upper = status == UPPER
        bound[var_i[upper], var_j[upper]] = C
        S_bound, ssum_bound = _scores(K, coding, bound)
        fi, fj = var_i[free], var_j[free]
        r = dual_gradients(fi, fj, coding.cols, coding.vals, c, S_bound, ssum_bound)
        fact = None
        update = None
        if previous is not None:
            update = _block_update(previous, free, K, coding, var_i, var_j)
        alpha = bound.copy()
        if update is not None:
            # x = H^-1 r by the updated inverse, refined on the exact residual (the
            # folds build on x, so it must be as exact as a fresh factorisation's)
            order, Hinv = update[0], update[1]
            x = np.zeros_like(r)
            g_free = r
            scale = max(1.0, np.max(np.abs(r), initial=0.0))
            for _ in range(1 + REFINE_STEPS):
                x[order] += Hinv @ g_free[order]
                alpha[fi, fj] = x
                S, ssum, g = _state(K, coding, var_i, var_j, alpha)
                g_free = g[free]
                if np.max(np.abs(g_free), initial=0.0) <= SOLVE_RESIDUAL * scale:
                    break
            else:
                update = None
        if update is None:
            fact = _factorise(q_block(*_blk(K, coding, var_i, var_j), free, free))
            x = _solve(fact, r)
            alpha[fi, fj] = x
            S, ssum, g = _state(K, coding, var_i, var_j, alpha)
        new = status.copy()
        new[free[x < -BOX_SLACK * C]] = ZERO
        new[free[x > C * (1.0 + BOX_SLACK)]] = UPPER
        new[(status == ZERO) & (g > FREE_THRESHOLD)] = FREE
        new[(status == UPPER) & (g < -FREE_THRESHOLD)] = FREE
        singular = fact is not None and fact[0] == "eigen" and fact[3].shape[1] > 0
        if np.array_equal(new, status) and singular and pin_rounds:
            # a singular face: fix one variable per null direction at a bound (an
            # optimum as good) and solve the smaller face, which has a true inverse
            pin_rounds -= 1
            limit += 1
            pos, values = _pin_null_directions(x, fact[3], C)
            new[free[pos]] = np.where(values == 0.0, ZERO, UPPER)
        elif np.array_equal(new, status):
            alpha = np.clip(alpha, 0.0, C)
            S, ssum = _scores(K, coding, alpha)
            free_pos = np.full(n_var, -1, dtype=np.int64)
            free_pos[free] = np.arange(free.shape[0])
            nf = free.shape[0]
            exact = fact is None or _is_exact(fact)
            result = ActiveSet(
                alpha, S, ssum, status, free.astype(np.int64), free_pos, np.zeros((0, 0)),
                S_bound, ssum_bound, it, np.zeros((0, nf)), np.zeros((0, nf)),
                np.full(n_var, -1, dtype=np.int64), exact,
            )  # fmt: skip
            return result, fact, r
        status = new
    return None
