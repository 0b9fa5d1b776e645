"""Greedy coordinate descent for a dual that is one box QP per class (1-vs-all).

Where Q is block diagonal by coding column (:func:`isvm.methods.separable_by_column`),
each class's problem is the bias-free binary dual ``min 1/2 a' Q_j a - 1'a``,
``0 <= a <= C``, with ``Q_j = diag(v) K diag(v)`` and ``v`` the class's signs. Its
scores are one row of S, ``S[j] = K (v * a)``, so a step on one variable moves one
row, and the violation of every variable of the class can be read in that same pass.
The solver therefore picks, at each step, the variable of largest KKT violation
(Gauss-Southwell, LIBSVM's first-order rule without the equality constraint) and
finds the next one in the passes that update the scores: O(N) per step, as a cyclic
step costs, but without the epochs that a permuted order spends on variables already
optimal. On z-scored letter (N = 1,000, 26 classes) that is about 3 steps per
variable against cyclic cd's 50-150 epochs.

Shrinking (LIBSVM-style): every ``min(active, 1000)`` steps, variables at a bound
whose gradient points outward by more than the current largest violation leave the
active set; once fewer than half the points are active, steps update the scores of
active points only. Before it stops, the solver recomputes the other points' scores
exactly from the call's changes of alpha and checks every variable again, so
shrinking never changes the answer.
"""

from __future__ import annotations

import numpy as np

from isvm._jit import njit
from isvm.solvers._core import projected_gradient

SHRINK_INTERVAL = 1000  # steps between shrinking passes (LIBSVM's min(l, 1000))


@njit(cache=True)
def _restore_scores(K, points, alpha_col, start_alpha, v, start_row, row, inside):
    """Exact scores ``row[r]`` of the points outside the active set (``inside`` False).

    ``row`` was updated by every step only at active points; the others get their
    value at the start of the call plus this call's changes of alpha, summed afresh.
    """
    n = K.shape[0]
    moved = np.empty(points.shape[0], dtype=np.int64)
    change = np.empty(points.shape[0])
    m = 0
    for t in range(points.shape[0]):
        i = points[t]
        d = (alpha_col[i] - start_alpha[t]) * v[i]
        if d != 0.0:
            moved[m] = i
            change[m] = d
            m += 1
    for r in range(n):
        if inside[r]:
            continue
        s = start_row[r]
        Kr = K[r]
        for t in range(m):
            s += change[t] * Kr[moved[t]]
        row[r] = s


@njit(cache=True)
def _dense_step_scan(Ki, d, v, margin, C, alpha_col, row, inside, viol):
    """``row += d Ki`` over every point, then each active point's violation; returns the
    argmax. Two contiguous, branch-free passes (vectorised), where the fused gather of
    the sparse mode cannot be: about 2x faster per step at N = 1,000."""
    n = row.shape[0]
    for k in range(n):
        row[k] += d * Ki[k]
    for k in range(n):
        g = v[k] * row[k] - margin[k]
        up = -g if alpha_col[k] < C else 0.0
        down = g if alpha_col[k] > 0.0 else 0.0
        viol[k] = max(up, down) if inside[k] else 0.0
    return np.argmax(viol)


@njit(cache=True)
def greedy_class(K, points, v, margin, C, alpha_col, row, tol, max_steps, shrinking):
    """Solve one class's box QP in place to max violation ``tol``; returns (steps, violation).

    ``points`` are the class's variables (their points), ``v`` the signs of all points,
    ``alpha_col`` their multipliers in this class, ``row`` the class's scores over all
    N points (``row = K (v * alpha_col)`` on entry, and on return).

    While at least half the points are active, each step updates the whole score row
    (so every score stays exact) and scans a mask of the active ones
    (:func:`_dense_step_scan`; the points without a variable in the class are updated
    too); below that, it updates and scans the active points only, in one fused pass,
    and the others' scores are restored at the end.
    """
    n = K.shape[0]
    n_var = points.shape[0]
    start_alpha = np.empty(n_var)
    for t in range(n_var):
        start_alpha[t] = alpha_col[points[t]]
    start_row = row.copy()
    active = points.copy()  # the active points: the class's variables, until shrinking
    n_active = n_var
    inside = np.zeros(n, dtype=np.bool_)
    for t in range(n_var):
        inside[active[t]] = True
    viol = np.zeros(n)
    stale = False  # a sparse-mode step left some point's score behind
    steps = 0
    while True:
        best = 0.0
        pick = np.int64(-1)  # not a literal: that would compile _greedy_step twice
        for t in range(n_active):
            k = active[t]
            pg = projected_gradient(alpha_col[k], margin[k] - v[k] * row[k], C)
            if pg > best:
                best = pg
                pick = k
        since = 0
        interval = min(n_active, SHRINK_INTERVAL)
        while best > tol and steps < max_steps:
            pick, best, sparse = _greedy_step(
                K, pick, v, margin, C, alpha_col, row, active, n_active, inside, viol
            )
            stale = stale or sparse
            steps += 1
            since += 1
            if shrinking and since >= interval:
                since = 0
                n_active = _shrink(v, margin, C, alpha_col, row, active, n_active, inside, best)
                interval = max(min(n_active, SHRINK_INTERVAL), 1)
        if stale:  # exact scores everywhere
            _restore_scores(K, points, alpha_col, start_alpha, v, start_row, row, inside)
        if n_active == n_var or steps >= max_steps:
            return steps, best
        # shrunk variables: every one is checked again, from exact scores
        for t in range(n_var):
            active[t] = points[t]
            inside[points[t]] = True
        n_active = n_var
        stale = False
        start_row[:] = row
        for t in range(n_var):
            start_alpha[t] = alpha_col[points[t]]


@njit(cache=True)
def _greedy_step(K, i, v, margin, C, alpha_col, row, active, n_active, inside, viol):
    """Variable i's exact step, its scores updated (every point's while at least half are
    active, else the active ones') and the next variable picked in the same pass:
    returns (it, its violation, whether some score was left behind)."""
    n = K.shape[0]
    a = alpha_col[i]
    g = v[i] * row[i] - margin[i]
    qd = K[i, i]
    new = a - g / qd if qd > 0.0 else (C if g < 0.0 else 0.0)
    if new < 0.0:
        new = 0.0
    elif new > C:
        new = C
    alpha_col[i] = new
    d = (new - a) * v[i]
    Ki = K[i]
    if 2 * n_active > n:
        pick = _dense_step_scan(Ki, d, v, margin, C, alpha_col, row, inside, viol)
        return pick, viol[pick], False
    best = 0.0
    pick = -1
    for t in range(n_active):
        k = active[t]
        s = row[k] + d * Ki[k]
        row[k] = s
        pg = projected_gradient(alpha_col[k], margin[k] - v[k] * s, C)
        if pg > best:
            best = pg
            pick = k
    return pick, best, True


@njit(cache=True)
def _shrink(v, margin, C, alpha_col, row, active, n_active, inside, best):
    """Drop from ``active[:n_active]`` (and ``inside``) the variables at a bound whose
    gradient points outward by more than ``best``; returns how many stay."""
    kept = 0
    for t in range(n_active):
        k = active[t]
        g = v[k] * row[k] - margin[k]
        a = alpha_col[k]
        if (a <= 0.0 and g > best) or (a >= C and -g > best):
            inside[k] = False
            continue
        active[kept] = k
        kept += 1
    return kept


@njit(cache=True)
def greedy_columns(prob, C, dual, tol, max_epochs, shrinking):
    """:func:`greedy_class` on each class of a column-separable problem, in place.

    Each class may take ``max_epochs`` passes' worth of steps (one step per variable
    of the class a pass), so one slow class cannot starve the others. Returns (epochs, converged,
    max violation) like :func:`isvm.solvers.epochs.cd_epochs`, where epochs is the
    largest of the classes' passes' worth of steps (steps over the class's variables,
    rounded up): ``max_epochs`` exactly when a class hit its cap.
    """
    K, var_i, var_j, cols, vals, _, margin = prob
    alpha, S, _ = dual
    n = K.shape[0]
    n_var = var_i.shape[0]
    n_classes = alpha.shape[1]
    epochs = 0
    worst = 0.0
    counts = np.zeros(n_classes, dtype=np.int64)
    for t in range(n_var):
        counts[var_j[t]] += 1
    for j in range(n_classes):
        if counts[j] == 0:
            continue
        points = np.empty(counts[j], dtype=np.int64)
        m = 0
        for t in range(n_var):
            if var_j[t] == j:
                points[m] = var_i[t]
                m += 1
        col = cols[points[0], j, 0]
        v = np.zeros(n)
        for i in range(n):
            v[i] = vals[i, j, 0]
        alpha_col = np.ascontiguousarray(alpha[:, j])
        taken, viol = greedy_class(
            K, points, v, margin, C, alpha_col, S[col], tol, max_epochs * counts[j], shrinking
        )
        alpha[:, j] = alpha_col
        epochs = max(epochs, (taken + counts[j] - 1) // counts[j])
        worst = max(worst, viol)
    return epochs, worst <= tol, worst
