"""The block step (one point's multipliers solved exactly) and the certificate's try schedule.

``block_step`` finds the root of a piecewise-linear residual by bisection on its
unsorted breakpoints; it must give the box QP's exact maximiser (checked by the KKT
conditions, independently of the method) and the same bits as the sorted search it
replaced (a plain Python copy of it here), since the solvers' steps run through it.
"""

from __future__ import annotations

import numpy as np
import pytest

from isvm.solvers import _core, certify, epochs


def _sorted_reference(g, a0, C, k, sigma, w):
    """The previous block step: sort the 2m breakpoints, bisect over their order."""
    m = len(g)
    sw = sigma * w

    def residual_loop(t):  # the kernel's summation order
        h = 0.0
        for j in range(m):
            z = g[j] / k - sw[j] * t
            z = min(max(z, -a0[j]), C - a0[j])
            h += w[j] * z
        return t - h

    bp = []
    for j in range(m):
        if sw[j] != 0.0:
            bp += [(g[j] / k + a0[j]) / sw[j], (g[j] / k - (C - a0[j])) / sw[j]]
    t = 0.0
    if bp:
        b = sorted(bp)
        f_lo = residual_loop(b[0])
        if f_lo >= 0.0:
            t = b[0] - f_lo
        else:
            f_hi = residual_loop(b[-1])
            if f_hi < 0.0:
                t = b[-1] - f_hi
            else:
                lo, hi = 0, len(b) - 1
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if residual_loop(b[mid]) < 0.0:
                        lo = mid
                    else:
                        hi = mid
                f_a, f_b = residual_loop(b[lo]), residual_loop(b[hi])
                t = b[lo] - f_a * (b[hi] - b[lo]) / (f_b - f_a)
    return np.array([min(max(g[j] / k - sw[j] * t, -a0[j]), C - a0[j]) for j in range(m)])


def _problem(rng, m):
    C = float(rng.uniform(0.5, 20.0))
    k = float(rng.uniform(0.2, 2.0))
    g = rng.normal(0.0, 1.0, m) * rng.choice([0.01, 1.0, 10.0])
    a0 = rng.choice([0.0, C, 0.3 * C], m) * (rng.random(m) < 0.8)
    a0 = np.where(rng.random(m) < 0.3, rng.uniform(0, C, m), a0)
    w = rng.choice([0.0, 1.0, rng.uniform(0.2, 1.5)], m)
    norm = float(w @ w)
    # ISVM-like (singular: 1 + sigma |w|^2 = 0), positive definite, or sigma > 0
    sigma = float(rng.choice([-1.0 / max(norm, 1e-12), -0.5 / max(norm, 1e-12), 0.7]))
    return g, a0, C, k, sigma, w


@pytest.mark.parametrize("m", [1, 2, 3, 7, 26])
def test_block_step_is_the_box_qp_maximiser_and_matches_the_sorted_search(m):
    rng = np.random.default_rng(m)
    d, sw, bp = np.empty(m), np.empty(m), np.empty(2 * m)
    for _ in range(300):
        g, a0, C, k, sigma, w = _problem(rng, m)
        _core.block_step(g, a0, C, k, sigma, w, m, d, sw, bp)
        np.testing.assert_array_equal(d, _sorted_reference(g, a0, C, k, sigma, w))
        # KKT of max g'd - k/2 (d'd + sigma (w'd)^2) over -a0 <= d <= C - a0
        a = a0 + d
        assert np.all(a >= -1e-12) and np.all(a <= C + 1e-12)
        h = g - k * (d + sigma * w * float(w @ d))  # ascent gradient
        scale = 1e-9 * (1.0 + np.abs(g).max() + k * C * (1.0 + abs(sigma) * float(w @ w)))
        at_lo = a <= 1e-12
        at_hi = a >= C - 1e-12 * C
        free = ~at_lo & ~at_hi
        assert np.all(np.abs(h[free]) <= scale)
        assert np.all(h[at_lo & ~at_hi] <= scale)
        assert np.all(h[at_hi & ~at_lo] >= -scale)


@pytest.mark.parametrize("m", [1, 2, 3, 7, 26])
def test_block_bracket_brackets_the_exact_model(m):
    """``_block_bracket``'s (upper, lower) hold the exact model (``_block_ascent``, the
    maximum over the box) between them for every block the certificate meets,
    singular (ISVM) ones included, and close on it where the Newton steps reach the
    residual's root: the upper end is what the lazy certificate spends first."""
    rng = np.random.default_rng(100 + m)
    d, sw, bp = np.empty(m), np.empty(m), np.empty(2 * m)
    tight = 0
    for _ in range(300):
        g, a0, C, lam, sigma, w = _problem(rng, m)
        sigma = min(sigma, 0.0)  # the certificate's model_sigma
        exact = certify._block_ascent(g, a0, C, lam, sigma, w, m, d, sw, bp)
        upper, lower = certify._block_bracket(g, a0, C, lam, sigma, w, m, d, sw, bp)
        slack = 1e-10 * (1.0 + abs(exact))
        assert lower - slack <= exact <= upper + slack
        tight += upper - lower <= slack
    assert tight > 150  # most blocks: the bracket is the exact value


def test_block_step_with_duplicate_breakpoints():
    """Equal breakpoints (identical rows) bracket the root the same way as sorting them."""
    m = 6
    d, sw, bp = np.empty(m), np.empty(m), np.empty(2 * m)
    g = np.array([0.5, 0.5, 0.5, -0.2, -0.2, 1.0])
    a0 = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0])
    w = np.ones(m)
    _core.block_step(g, a0, 2.0, 1.0, -1.0 / m, w, m, d, sw, bp)
    np.testing.assert_array_equal(d, _sorted_reference(g, a0, 2.0, 1.0, -1.0 / m, w))


def test_nearby_try_waits_for_a_tries_worth_of_work():
    """A neighbours-first epoch tries the certificate only once its steps since the
    last try cost about one try (and only after a step), then starts counting again."""
    from isvm.methods import get_formulation
    from isvm.solvers import problem_of, variable_list

    rng = np.random.default_rng(0)
    n = 12
    X = rng.normal(size=(n, 2))
    y = np.arange(n) % 3
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
    coding = get_formulation("ova").encode(y, 3)
    var_i, var_j = variable_list(coding)
    prob = problem_of(K, coding, var_i, var_j)
    dual = _core.Dual(np.zeros((n, 3)), np.zeros((coding.n_columns, n)), np.zeros(n))
    target = _core.NO_TARGET._replace(point=0, A=np.eye(coding.n_columns, 3), scale=1.0)
    n_var = var_i.shape[0]
    enough = epochs.NEARBY_TRY_SPACING * n_var
    assert not epochs._nearby_due(True, enough * 0.99, True, n_var)  # not yet
    assert not epochs._nearby_due(True, enough * 5, False, n_var)  # nothing moved since
    assert not epochs._nearby_due(False, enough * 5, True, n_var)  # not a nearby epoch
    assert epochs._nearby_due(True, enough, True, n_var)
    work, moved, _, viol = epochs._nearby_try(prob, dual, 1.0, target)
    assert work == 0.0 and not moved and np.isfinite(viol)  # tried, counting again


@pytest.mark.parametrize("case", ["fold", "ties", "shuffled runs"])
def test_nearby_order_is_the_stable_sort_of_the_variables(case):
    """A neighbours-first epoch of single coordinates visits the variables by their
    point's kernel value, largest first, ties in list order. ``nearby_order`` sorts one
    key per run of a point's variables instead; the order must be the same, to the
    index, wherever keys tie (duplicates, kernel values that underflow to 0) and where a
    point's variables are not one run."""
    rng = np.random.default_rng(7)
    n, n_classes = 40, 5
    var_i = np.repeat(np.arange(n), n_classes)
    if case == "fold":  # a fold's list: one point's variables left out, some points short
        var_i = var_i[(var_i != 11) & ((np.arange(var_i.size) % 7) != 3)]
    elif case == "shuffled runs":  # one point in several runs, points out of order
        runs = np.split(var_i, np.arange(3, var_i.size, 3))
        var_i = np.concatenate([runs[k] for k in rng.permutation(len(runs))])
    row = rng.random(n)
    if case != "fold":
        row[rng.choice(n, 15, replace=False)] = 0.0  # underflowed kernel values tie
        row[3] = row[17] = row[29] = 0.5  # duplicate points tie
    index = np.empty(var_i.size, dtype=np.int64)
    epochs.nearby_order(row, var_i, index)
    np.testing.assert_array_equal(index, np.argsort(-row[var_i], kind="stable"))
