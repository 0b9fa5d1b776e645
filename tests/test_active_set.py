"""The active-set finish and its leave-one-out fold updates against an independent QP.

The reference dual matrix and QP solve come from test_solvers_qp (Q built entry by
entry from the paper's formulas, solved by clarabel); nothing here reuses
:func:`isvm.methods.dual_matrix`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from problems import clustered
from test_solvers_qp import make_problem, max_kkt, objective, qp_solve, reference_q, to_vector

from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.loo import c_grid, loo_grid
from isvm.loo.bundles import FREE, FoldLimits, Warm
from isvm.loo.fold_update import fold_active_set
from isvm.loo.full_fit import (
    Factorisation,
    _FaceSolver,
    exact_full_fit,
    finish_retries,
    pin_null_directions,
    scores,
)
from isvm.loo.settings import (
    ACTIVE_PATIENCE,
    ACTIVE_PD_MAX_TOUCHED,
    DEFAULT_SETTINGS,
    PIN_ROUNDS,
    WARM_RATIO,
)
from isvm.methods import get_formulation
from isvm.solvers import SolverState, problem_of, run_solver, variable_list
from isvm.solvers._core import Dual, dual_gradients

METHODS = ("isvm", "ova", "ww", "ww_paper")


def _full(seed: int, method: str, n_max: int = 40):
    X, y, n_classes, C, gamma, _ = make_problem(seed, n_max)
    K = rbf_kernel(X, gamma=gamma)
    coding = get_formulation(method).encode(y, n_classes)
    var_i, var_j = variable_list(coding)
    state = SolverState.start(K, coding)
    run_solver(state, var_i, var_j, C, tol=1e-2)  # a rough start, as the LOO engine has
    active = exact_full_fit(K, coding, var_i, var_j, state.alpha, C)
    return K, y, n_classes, C, coding, var_i, var_j, active


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(10))
def test_full_active_set_reaches_the_qp_optimum(method, seed):
    K, y, n_classes, C, coding, var_i, var_j, active = _full(seed, method)
    assert active is not None, "the active-set iteration did not settle"
    Q, var = reference_q(K, y, n_classes, method)
    a = to_vector(active.alpha, var)
    best = objective(Q, qp_solve(Q, C))
    assert a.min() >= 0.0 and a.max() <= C
    assert objective(Q, a) >= best - 1e-9 * max(1.0, abs(best))
    assert max_kkt(Q, a, C) < 1e-7
    S, ssum = scores(K, coding, active.alpha)  # the returned scores belong to the alpha
    np.testing.assert_allclose(active.S, S, atol=1e-9)
    np.testing.assert_allclose(active.ssum, ssum, atol=1e-9)


PATIENCE = ACTIVE_PATIENCE


TOUCHED = ACTIVE_PD_MAX_TOUCHED


@pytest.mark.parametrize(
    ("patience", "guess", "max_touched"),
    [
        (PATIENCE, False, TOUCHED),
        (-1, False, TOUCHED),
        (PATIENCE, True, TOUCHED),
        (PATIENCE, True, 2),
    ],
)
@pytest.mark.parametrize("method", METHODS)
def test_fold_updates_reach_each_held_out_optimum(method, patience, guess, max_touched):
    """Every fold the update solves is the held-out problem's QP optimum.

    The update may give up (then the engine falls back to cd), but with the engine's
    budgets it must solve nearly every fold of these problems, very ill-conditioned
    ones included (C = 50 with gamma = 0.5): the primal-dual steps alone solved 79-100%
    per method; with the decremental path behind them, every fold but some of ISVM
    with two classes, whose dual is flat along y_i at every point (a continuum of
    optima; 5 of 21 such folds are left to cd, 9 with the path alone).
    ``patience=-1`` skips the primal-dual steps: the decremental path alone. With
    ``guess``, the primal-dual steps start from a wrong guess of the fold's statuses
    (a tenth of them changed at random), as a poor warm start from the previous C;
    ``max_touched=2`` ends those steps once they have freed more than two outside
    variables (``ACTIVE_PD_MAX_TOUCHED``), so the path finishes most folds.
    """
    solved = total = 0
    gen = np.random.default_rng(0)
    for seed in range(6):
        K, y, n_classes, C, coding, var_i, var_j, active = _full(seed, method, n_max=25)
        assert active is not None
        n = K.shape[0]
        var_id = np.full(coding.var_mask.shape, -1, dtype=np.int64)
        var_id[var_i, var_j] = np.arange(var_i.shape[0])
        Q, var = reference_q(K, y, n_classes, method)
        degenerate = method == "isvm" and n_classes == 2
        total += 0 if degenerate else n
        prob = problem_of(K, coding, var_i, var_j)
        cfg = FoldLimits(1e-3, 1e-9, 10_000, 1.0, 300, 1024, patience, max_touched)
        none = np.zeros(0, dtype=np.int8)
        warm = [(none, none)] * n
        if guess:
            n_var = var_i.shape[0]
            warm = []
            for _ in range(n):
                wrong = active.status.copy()
                pick = gen.random(n_var) < 0.1
                wrong[pick] = gen.integers(0, 3, int(pick.sum()))
                warm.append((wrong, active.status))
        for p in range(n):
            alpha = np.empty_like(active.alpha)
            S = np.empty_like(active.S)
            ssum = np.empty_like(active.ssum)
            status_out = np.empty_like(active.status)
            ok, _, _ = fold_active_set(
                prob,
                p,
                C,
                active.dual,
                active.factor(var_id),
                cfg,
                Warm(*warm[p]),
                Dual(alpha, S, ssum),
                status_out,
            )
            if not ok:
                continue
            solved += 0 if degenerate else 1
            keep = np.array([i != p for i, _ in var])
            Qf = Q[np.ix_(keep, keep)]
            a = to_vector(alpha, var)
            assert np.all(a[~keep] == 0.0), "the held-out point's multipliers must be 0"
            best = objective(Qf, qp_solve(Qf, C))
            assert objective(Qf, a[keep]) >= best - 1e-9 * max(1.0, abs(best))
            assert max_kkt(Qf, a[keep], C) < 1e-7
            S_ref, ssum_ref = scores(K, coding, alpha)
            np.testing.assert_allclose(S, S_ref, atol=1e-9)
            if coding.mean_coef != 0.0:  # ssum is kept only where the metric has a mean term
                np.testing.assert_allclose(ssum, ssum_ref, atol=1e-9)
    assert solved >= 0.95 * total, f"only {solved} of {total} folds solved by the update"


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_fallback_to_cd_keeps_the_loo_exact(method):
    """With the fold updates starved (one set update, one changed variable) most folds
    fall back to cd; the predictions stay those of the cd-only engine."""
    X, y = clustered(3, 40, 4)
    grid = ([5.0, 10.0], [0.1, 5.1, 30.1])
    _, plain = loo_grid(X, y, method, *grid, active_set=False, return_predictions=True)
    _, full = loo_grid(X, y, method, *grid, return_predictions=True)
    starve = replace(DEFAULT_SETTINGS, active_max_iter=1, active_max_changed=1)
    _, starved = loo_grid(X, y, method, *grid, settings=starve, return_predictions=True)
    np.testing.assert_array_equal(full, plain)
    np.testing.assert_array_equal(starved, plain)


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_folds_without_the_outside_products_stay_exact(method, monkeypatch):
    """Over the outside products' budget (here 0) the full fit keeps no outside rows
    and each fold computes the ones it frees through ``Hinv``: the same predictions
    as with the products and as the cd-only engine, and the fits really ran without."""
    import isvm.loo.driver as driver

    X, y = clustered(3, 40, 4)
    grid = ([5.0, 10.0], [0.1, 5.1, 30.1])
    _, plain = loo_grid(X, y, method, *grid, active_set=False, return_predictions=True)
    _, full = loo_grid(X, y, method, *grid, return_predictions=True)
    kept = []
    real = driver.fit_folds

    def spy(prob, blocks, cert, step, full_opt, fac, *rest):
        if fac.status.shape[0] > 0:
            kept.append(bool((fac.out_pos >= 0).any()))
        return real(prob, blocks, cert, step, full_opt, fac, *rest)

    monkeypatch.setattr(driver, "fit_folds", spy)
    none = replace(DEFAULT_SETTINGS, outside_max_entries=0)
    _, without = loo_grid(X, y, method, *grid, settings=none, return_predictions=True)
    assert kept and not any(kept), f"outside rows kept at {sum(kept)} of {len(kept)} fits"
    np.testing.assert_array_equal(full, plain)
    np.testing.assert_array_equal(without, plain)


def assert_same_inverse_and_products(got, want) -> None:
    """``got``'s H^-1, Q[out, F] and Q[out, F] H^-1 equal ``want``'s, up to the order of
    the free set and of the outside rows (every outside variable has its row)."""
    f = want.free_pos[got.free_vars]
    out = np.flatnonzero(got.out_pos >= 0)
    assert out.shape[0] == got.status.shape[0] - f.shape[0]
    rows_g, rows_w = got.out_pos[out], want.out_pos[out]
    scale = np.abs(want.Hinv).max()
    np.testing.assert_allclose(got.Hinv, want.Hinv[np.ix_(f, f)], atol=1e-7 * scale)
    np.testing.assert_allclose(got.Q_out[rows_g], want.Q_out[np.ix_(rows_w, f)], atol=1e-12)
    np.testing.assert_allclose(
        got.Y_out[rows_g],
        want.Y_out[np.ix_(rows_w, f)],
        atol=1e-7 * max(1.0, np.abs(want.Y_out).max()),
    )


@pytest.mark.parametrize("n_classes", [4, 10])
@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_products_updated_along_the_c_path_equal_fresh_ones(method, n_classes):
    """``previous=`` updates H^-1, Q[out, F] and Q[out, F] H^-1 from the last C's; they
    must equal the fresh ones (up to the order of F and of the outside rows), the
    optimum must be the same and as stationary as a fresh one (10 classes at N = 50:
    yeast-like, where an updated solve accepted at 1e-8 left folds failing), and the
    update must actually have been used."""
    X, y = clustered(5, 60 if n_classes < 10 else 50, n_classes)
    K = rbf_kernel(X, gamma=5.0)
    coding = get_formulation(method).encode(y, n_classes)
    var_i, var_j = variable_list(coding)
    used = []
    previous = None
    for C in np.round(np.arange(0.6, 20.0, 0.5), 9):
        state = SolverState.start(K, coding)
        run_solver(state, var_i, var_j, C, tol=0.1)
        path = exact_full_fit(K, coding, var_i, var_j, state.alpha, C, previous=previous)
        fresh = exact_full_fit(K, coding, var_i, var_j, state.alpha, C)
        if previous is not None:
            used.append(path.products_updated)
        np.testing.assert_allclose(path.alpha, fresh.alpha, atol=1e-8 * C)
        # as stationary as a fresh factorisation's: the folds build on it
        g = dual_gradients(problem_of(K, coding, var_i, var_j), path.S, path.ssum)
        assert np.max(np.abs(g[path.free_vars]), initial=0.0) < 1e-9
        assert set(path.free_vars) == set(fresh.free_vars)
        assert_same_inverse_and_products(path, fresh)
        previous = path
    assert sum(used) >= len(used) // 2 > 0, f"the update was used {sum(used)} of {len(used)} times"


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_the_finish_from_the_previous_sets_falls_back_to_the_same_optimum(steps):
    """The finish's steps from the previous C's sets only bound how long the full fit
    tries them before it starts afresh from the cd guess: with none, one or three such
    steps the optimum along the path is the fresh one."""
    X, y = clustered(7, 40, 4)
    K = rbf_kernel(X, gamma=5.0)
    coding = get_formulation("isvm").encode(y, 4)
    var_i, var_j = variable_list(coding)
    previous = None
    for C in (0.6, 1.1, 2.6, 6.1, 15.1):
        state = SolverState.start(K, coding)
        run_solver(state, var_i, var_j, C, tol=0.1)
        path = exact_full_fit(
            K, coding, var_i, var_j, state.alpha, C, previous=previous, previous_steps=steps
        )
        fresh = exact_full_fit(K, coding, var_i, var_j, state.alpha, C)
        np.testing.assert_allclose(path.alpha, fresh.alpha, atol=1e-8 * C)
        assert set(path.free_vars) == set(fresh.free_vars)
        previous = path


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_the_last_retry_settles_the_finish_where_the_budgeted_ones_do_not(method):
    """A last retry (the engine's last ``FINISH_RETRY_TOLS`` on the fit's epoch budget)
    is one more start for the finish's steps after the budgeted ones: with two steps per
    try and one epoch per retry, the rough start and the retries leave the sets unsettled
    (None: the engine would run every fold by cd), and a cd solution at 1e-10 settles
    them at the QP optimum within the same two steps."""
    failed = 0
    for seed in range(20):
        X, y, n_classes, C, gamma, _ = make_problem(seed, 40)
        K = rbf_kernel(X, gamma=gamma)
        coding = get_formulation(method).encode(y, n_classes)
        var_i, var_j = variable_list(coding)
        state = SolverState.start(K, coding)
        run_solver(state, var_i, var_j, C, tol=1e-1)
        budgeted = ((1e-5, 1), (1e-7, 1))
        args = (K, coding, var_i, var_j, state.alpha, C)
        if exact_full_fit(*args, steps=2, retries=budgeted) is not None:
            continue
        failed += 1
        fit = exact_full_fit(*args, steps=2, retries=(*budgeted, (1e-10, 100_000)))
        assert fit is not None, f"seed {seed}: the last retry did not settle"
        Q, var = reference_q(K, y, n_classes, method)
        a = to_vector(fit.alpha, var)
        best = objective(Q, qp_solve(Q, C))
        assert objective(Q, a) >= best - 1e-9 * max(1.0, abs(best))
        assert max_kkt(Q, a, C) < 1e-7
    assert failed >= 3, f"only {failed} of 20 budgeted finishes failed: nothing was tested"


def test_the_finish_retries_end_with_the_last_one_on_the_whole_budget():
    assert finish_retries(10_000) == ((1e-5, 1000), (1e-7, 1000), (1e-9, 10_000))
    assert finish_retries(500) == ((1e-5, 500), (1e-7, 500), (1e-9, 500))


def test_folds_along_the_c_path_stay_on_the_update_path():
    """Yeast (L = 10, N = 50), ISVM at large C along the C path: the full fits come
    from updated inverses, and must be as exact as fresh ones, or the folds built on
    them fail their stationarity test and end in cd, uncertified (36 such folds here
    when updated solves were accepted at 1e-8, against none with fresh ones)."""
    from isvm.seeding import rng

    data = load_dataset("yeast", source="bundled", scaling="minmax")
    idx = rng(2, "test", "yeast").choice(data.y.shape[0], 50, replace=False)
    frame = loo_grid(data.X[idx], data.y[idx], "isvm", [5.0], c_grid(20.1, 50, 2.5))
    assert frame.n_uncertified.sum() <= 2


@pytest.mark.parametrize("seed", range(10))
def test_pinning_null_directions_keeps_the_optimum_and_makes_the_face_definite(seed):
    """A singular face's minimiser moved along the null space of H: same gradients
    (H x unchanged), inside the box, one variable per null direction at a bound, and
    the face without them is positive definite. The null space from a pivoted
    Cholesky, whose solve is a basic solution of the consistent system."""
    gen = np.random.default_rng(seed)
    n, rank, C = 12, 9, 2.0
    Z = gen.standard_normal((rank, n))
    H = Z.T @ Z  # positive semidefinite, null space of dimension 3
    x = gen.uniform(0.2, 1.8, n)
    fact = Factorisation(H)
    assert not fact.exact and fact.null.shape[1] == n - rank
    np.testing.assert_allclose(H @ fact.null, 0.0, atol=1e-10)
    np.testing.assert_allclose(H @ fact.solve(H @ x), H @ x, atol=1e-9)
    pos, values = pin_null_directions(x, fact.null, C)
    assert pos.shape[0] == n - rank and np.unique(pos).shape[0] == pos.shape[0]
    # the pinned point, recovered as the minimum-norm solution of the remaining face
    keep = np.setdiff1d(np.arange(n), pos)
    assert np.all((values == 0.0) | (values == C))
    H_kk = H[np.ix_(keep, keep)]
    assert np.linalg.eigvalsh(H_kk).min() > 1e-8 * np.linalg.eigvalsh(H).max()
    moved = np.empty(n)
    moved[pos] = values
    moved[keep] = np.linalg.solve(H_kk, H[keep] @ x - H[np.ix_(keep, pos)] @ values)
    np.testing.assert_allclose(H @ moved, H @ x, atol=1e-9)
    assert moved.min() >= -1e-9 and moved.max() <= C + 1e-9


def _letter_isvm():
    """ISVM on 80 letter rows (25 classes), C = 10: many points with all multipliers
    free, so singular faces. Returns K, y, L, C, coding, variables and a rough cd
    solution (tol 0.1)."""
    data = load_dataset("letter", source="bundled", scaling="minmax")
    idx = np.random.default_rng(4).choice(data.y.shape[0], 80, replace=False)
    labels, y = np.unique(data.y[idx], return_inverse=True)
    n_classes, C = labels.shape[0], 10.0
    K = rbf_kernel(data.X[idx], gamma=5.0)
    coding = get_formulation("isvm").encode(y, n_classes)
    var_i, var_j = variable_list(coding)
    state = SolverState.start(K, coding)
    run_solver(state, var_i, var_j, C, tol=1e-1)
    return K, y, n_classes, C, coding, var_i, var_j, state


@pytest.mark.parametrize("seed", range(3))
def test_face_solver_through_a_singular_schur_complement(seed):
    """Freeing the rest of a point's ISVM multipliers makes the face singular (one null
    direction per point with all of them free); the face solver, going through the
    previous optimum's inverse, finds that direction in the Schur complement of the
    added variables and solves the consistent face system, without the fresh pivoted
    factorisation it needed before. Checked on the independent Q of the paper's
    formulas: H n = 0 and H x = r."""
    K, y, n_classes, C, coding, var_i, var_j, state = _letter_isvm()
    active = exact_full_fit(K, coding, var_i, var_j, state.alpha, C)
    assert active is not None and active.exact_inverse
    # the points with some, not all, multipliers free; one of them freed entirely
    is_free = active.status == FREE
    partial = [p for p in range(y.shape[0]) if 0 < is_free[var_i == p].sum() < n_classes]
    point = partial[np.random.default_rng(seed).integers(len(partial))]
    free = np.union1d(active.free_vars, np.flatnonzero(var_i == point))
    solver = _FaceSolver(active, free, problem_of(K, coding, var_i, var_j))
    assert solver.ok and solver.null.shape[1] == 1
    Q, var = reference_q(K, y, n_classes, "isvm")
    ref = {v: a for a, v in enumerate(var)}
    rows = np.array([ref[(i, j)] for i, j in zip(var_i[free], var_j[free], strict=True)])
    H = Q[np.ix_(rows, rows)]
    null = solver.null  # in free's order
    assert np.max(np.abs(H @ null)) <= 1e-9 * np.max(np.abs(null)) * np.max(np.abs(H))
    r = H @ np.random.default_rng(seed).uniform(0.0, C, free.shape[0])
    x = np.zeros_like(r)
    x[solver.order] = solver.solve(r[solver.order])
    np.testing.assert_allclose(H @ x, r, atol=1e-7 * np.max(np.abs(r)))


def test_singular_isvm_faces_settle_with_a_true_inverse():
    """ISVM with many classes has points with all multipliers free, a singular free
    block (here 80 letter rows, 25 classes, C = 10); the full fit pins one variable
    per null direction, so it keeps a true inverse (which the C path and the folds
    need) and still reaches the QP optimum; without pinning it reaches the optimum too
    (the pivoted factorisation's basic solution may or may not leave a definite face)."""
    K, y, n_classes, C, coding, var_i, var_j, state = _letter_isvm()
    Q, var = reference_q(K, y, n_classes, "isvm")
    best = objective(Q, qp_solve(Q, C))
    for rounds, exact in ((0, False), (PIN_ROUNDS, True)):
        active = exact_full_fit(K, coding, var_i, var_j, state.alpha, C, pin_rounds=rounds)
        assert active is not None and (active.exact_inverse or not exact)
        a = to_vector(active.alpha, var)
        assert objective(Q, a) >= best - 1e-9 * max(1.0, abs(best))
        assert max_kkt(Q, a, C) < 1e-7


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_shifted_fold_start_is_in_the_box_with_exact_scores(method):
    """A cd fold's shifted start (its solution at C_prev moved as the full solution
    moved from C_prev to C) keeps p's multipliers at 0 and the rest in [0, C], and
    the scores it carries, moved by the same amounts less p's share and each
    clipping's, equal those recomputed from its multipliers. The moves here are large
    and random, so that clipping happens at both bounds."""
    from isvm.loo.bundles import FoldStore, PathStep
    from isvm.loo.folds import _shifted_start
    from isvm.loo.full_fit import scores

    X, y = clustered(5, 24, 3)
    K = rbf_kernel(X, gamma=5.0)
    coding = get_formulation(method).encode(y, 3)
    var_i, var_j = variable_list(coding)
    prob = problem_of(K, coding, var_i, var_j)
    mask = coding.var_mask.astype(float)
    gen = np.random.default_rng(1)
    C_prev, C = 1.0, 1.5
    n = y.shape[0]

    def dual(a):
        return Dual(a, *scores(K, coding, a))

    prev, full = (
        dual(gen.uniform(0, C_prev, mask.shape) * mask),
        dual(gen.uniform(0, C, mask.shape) * mask),
    )
    fold_alpha = gen.uniform(0, C_prev, (n, *mask.shape)) * mask
    fold_alpha[np.arange(n), np.arange(n)] = 0.0
    fold_scores = [scores(K, coding, a) for a in fold_alpha]
    store = FoldStore(
        fold_alpha,
        np.stack([s for s, _ in fold_scores]),
        np.stack([t for _, t in fold_scores]),
        np.zeros((n, var_i.shape[0]), dtype=np.int8),
        np.zeros(n, dtype=np.bool_),
        np.zeros((n, 3)),
    )
    step = PathStep(
        C,
        C / C_prev,
        np.zeros(n, dtype=np.uint64),
        np.zeros(0, np.int8),
        *prev,
        np.ones(n, bool),
        np.ones(n, bool),
        np.ones(n, bool),
    )
    clipped = 0
    for p in range(n):
        alpha, S, ssum = _shifted_start(np.int64(p), prob, C, full, step, store)
        assert np.all(alpha[p] == 0.0) and alpha.min() >= 0.0 and alpha.max() <= C
        assert np.all(alpha[mask == 0.0] == 0.0)
        raw = fold_alpha[p] + full.alpha - prev.alpha
        clipped += int(np.count_nonzero((raw < 0.0) | (raw > C)))
        S_ref, ssum_ref = scores(K, coding, alpha)
        np.testing.assert_allclose(S, S_ref, atol=1e-10)
        if prob.c != 0.0:  # the score sum enters only through c (0 for 1-vs-all)
            np.testing.assert_allclose(ssum, ssum_ref, atol=1e-10)
    assert clipped > n


@pytest.mark.parametrize("layout", ["runs", "shuffled", "single", "empty"])
def test_gather_copies_the_indexed_block_in_runs_or_one_by_one(layout):
    """``_gather`` copies runs of consecutive columns as slices and scattered columns one
    by one: both must give ``A[rows][:, columns]``, into a fresh array or a view."""
    from isvm.loo.full_fit import _gather

    gen = np.random.default_rng(3)
    A = gen.random((60, 70))
    columns = {
        "runs": np.delete(np.arange(70), [0, 13, 14, 40, 69]),  # a block update's kept set
        "shuffled": gen.permutation(70)[:50],
        "single": np.array([7]),
        "empty": np.zeros(0, dtype=np.int64),
    }[layout]
    rows = gen.permutation(60)[:25]
    expected = A[rows][:, columns]
    assert np.array_equal(_gather(A, rows, columns, np.empty(expected.shape)), expected)
    big = np.full((30, columns.shape[0] + 3), -1.0)
    _gather(A, rows, columns, big[2:27, 1 : 1 + columns.shape[0]])
    assert np.array_equal(big[2:27, 1 : 1 + columns.shape[0]], expected)
    assert (big[:2] == -1).all() and (big[27:] == -1).all() and (big[:, 0] == -1).all()


def test_a_ridged_fold_minimiser_starts_cd_and_keeps_the_loo_exact(monkeypatch):
    """Where a fold's update ends on a singular face (ISVM's flat direction), its ridged
    minimiser satisfies the statuses' KKT conditions but not stationarity: the update
    reports it (``near``), feasible with exact scores, and the fold's cd may start
    from it. On Glass Ns 150 with [0, 1] features (the paper's subsample 0, ISVM,
    gamma 5, a coarse C grid) such folds occur; the LOO predictions stay those of
    the cd-only engine."""
    import isvm.loo.driver as driver
    from isvm.experiment.subsample import draw_subsamples
    from isvm.loo.bundles import FoldStore
    from isvm.loo.full_fit import scores

    data = load_dataset("glass", source="bundled", scaling="minmax")
    idx = draw_subsamples(data.y, 150, 1, seed=2012, dataset="glass")[0]
    X, y = data.X[idx], data.y[idx]
    Cs = c_grid(0.1, 20.2, 2.5)
    near = []
    real = driver.fit_folds

    def spy(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride):
        before = FoldStore(*[a.copy() for a in store])
        result = real(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride)
        if fac.status.shape[0] == 0:
            return result
        for p in np.flatnonzero(~store.status_ok):  # the folds the update did not solve
            use_warm = (
                before.status_ok[p] and 0.0 < step.scale_prev <= WARM_RATIO and step.use_warm[p]
            )
            warm = before.status[p] if use_warm else before.status[p, :0]
            alpha, S, ssum = (np.empty_like(a) for a in full)
            ok, _, is_near = fold_active_set(
                prob,
                np.int64(p),
                step.C,
                full,
                fac,
                cfg,
                Warm(warm, step.status_prev),
                Dual(alpha, S, ssum),
                before.status[p].copy(),
            )
            assert not ok
            if is_near:
                near.append(step.C)
                assert np.all(alpha[p] == 0.0) and alpha.min() >= 0.0 and alpha.max() <= step.C
                S_ref, _ = scores(prob.K, get_formulation("isvm").encode(y, 6), alpha)
                np.testing.assert_allclose(S, S_ref, atol=1e-9)
        return result

    monkeypatch.setattr(driver, "fit_folds", spy)
    _, engine = loo_grid(X, y, "isvm", [5.0], Cs, return_predictions=True)
    monkeypatch.undo()
    _, plain = loo_grid(X, y, "isvm", [5.0], Cs, active_set=False, return_predictions=True)
    assert len(near) >= 3, f"only {len(near)} ridged fold minimisers met"
    np.testing.assert_array_equal(engine, plain)
