"""The fold certificates: held-out radii, the eigenvalue floors and the suboptimality bound.

Each bound is checked against what it bounds, computed independently: the radius
against the projection of phi(x_p) onto the other points' span (least squares on
the kernel), the floors against the kernel's spectrum over distinct points
(``K - diag(floor)`` positive semidefinite), and
:func:`isvm.solvers.certify.suboptimality` against ``D* - D(alpha)`` with D* from an
interior-point QP. Then the engine with them against refits, in the regime they
were built for (z-scored features, duplicate points) and on [0, 1] features.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import clustered, dual_qp

from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.loo import loo_grid, loo_refit
from isvm.loo.certificate import duplicate_groups, kernel_geometry
from isvm.methods import FORMULATIONS, dual_matrix, get_formulation
from isvm.seeding import rng
from isvm.solvers import SolverState, problem_of, run_solver, variable_list
from isvm.solvers._core import Blocks, Dual, Target, rng_state, with_variables
from isvm.solvers.certify import prove, standing_bound, suboptimality
from isvm.solvers.epochs import block_epochs, cd_epochs

NEAR_TIE = 1e-6


def _with_duplicates(seed: int, n: int = 30, n_classes: int = 3, m: int = 4):
    """z-scored clustered points with exact duplicates: same label and mixed labels."""
    X, y = clustered(seed, n, n_classes, n_features=m)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X[1] = X[0]  # same row, and (points 0 and 1 are of classes 0 and 1) mixed labels
    X[n_classes + 2] = X[2]  # classes 2 and 2: one label
    X[n_classes + 5] = X[2]
    return X, y


def _twenty_four(duplicates: bool):
    """24 z-scored clustered points of 3 classes, with exact duplicates or without."""
    if duplicates:
        return _with_duplicates(5, n=24)
    X, y = clustered(5, 24, 3)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _projection_radius(K: np.ndarray, p: int) -> float:
    """||P phi_p||, P onto span{phi_q: q != p}, by least squares on K (independent)."""
    keep = np.arange(K.shape[0]) != p
    Kq = K[np.ix_(keep, keep)]
    w, V = np.linalg.eigh(Kq)
    big = w > 1e-10 * w[-1]
    coef = V[:, big].T @ K[keep, p]
    return float(np.sqrt(max(np.sum(coef**2 / w[big]), 0.0)))


@pytest.mark.parametrize("gamma", [1.0, 5.0, 10.0])
@pytest.mark.parametrize("duplicates", [False, True])
def test_radius_bounds_the_projection_and_is_sharp(gamma, duplicates):
    X, y = _with_duplicates(3) if duplicates else clustered(3, 30, 3)
    if not duplicates:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    K = rbf_kernel(X, gamma=gamma)
    group, mixed = duplicate_groups(X, y)
    geo = kernel_geometry(K, group, mixed)
    exact = np.array([_projection_radius(K, p) for p in range(len(y))])
    assert np.all(geo.radius >= exact - 1e-9)
    assert np.all(geo.radius <= np.sqrt(np.diag(K)) + 1e-12)
    dup = group >= 0
    assert duplicates == dup.any()
    np.testing.assert_allclose(geo.radius[dup], 1.0)  # in the span: no sharper bound
    if geo.floor.min() > 0:  # sharp where K over distinct points is well conditioned
        np.testing.assert_allclose(geo.radius[~dup], exact[~dup], atol=1e-4)


def _distinct(X):
    return np.sort(np.unique(X, axis=0, return_index=True)[1])


def test_duplicate_groups_and_floor():
    X, y = _with_duplicates(4)
    group, mixed = duplicate_groups(X, y)
    assert group[0] == group[1] >= 0 and mixed[group[0]]
    g2 = group[2]
    assert g2 >= 0 and not mixed[g2] and (group == g2).sum() == 3
    K = rbf_kernel(X, gamma=5.0)
    reps = _distinct(X)
    geo = kernel_geometry(K, group, mixed)
    floor = geo.floor[reps]
    # the defining property, independently: K - diag(floor) >= 0 over distinct points
    # (the rounding allowance keeps it strictly inside)
    assert np.all(floor > 0)
    assert np.linalg.eigvalsh(K[np.ix_(reps, reps)] - np.diag(floor))[0] >= 0
    # identical points share their representative's floor
    for g in range(mixed.shape[0]):
        assert np.unique(geo.floor[group == g]).shape[0] == 1
    # a kernel singular over distinct points gets no floor and the trivial radius
    Xs = np.vstack([X[:5], X[:5].mean(axis=0, keepdims=True)])
    Ks = np.ones((6, 6))
    geo = kernel_geometry(Ks, *duplicate_groups(Xs, np.arange(6) % 2))
    assert np.all(geo.floor == 0) and np.all(geo.radius == 1.0)


@pytest.mark.parametrize("name", ["letter", "yeast"])
def test_scaled_floors_are_valid_and_beat_the_global_one(name):
    """On a z-scored subsample with near-duplicates (a tight cluster sets lambda_min(K)),
    the per-point floors are a valid diagonal minorant of K and most points get far
    more than lambda_min(K): what makes the model sharper away from the clusters."""
    data = load_dataset(name, source="bundled", scaling="zscore")
    idx = rng(13, "test-certificate", name).choice(data.y.shape[0], 150, replace=False)
    X, y = data.X[idx], data.y[idx]
    K = rbf_kernel(X, gamma=5.0)
    geo = kernel_geometry(K, *duplicate_groups(X, y))
    reps = _distinct(X)
    Ku = K[np.ix_(reps, reps)]
    lam = np.linalg.eigvalsh(Ku)[0]
    assert np.linalg.eigvalsh(Ku - np.diag(geo.floor[reps]))[0] >= -1e-12
    assert np.median(geo.floor[reps]) > 3 * lam
    # and it is sharp in the sense that matters: some direction is nearly tight
    s = 1 / np.sqrt(geo.floor[reps])
    assert np.linalg.eigvalsh(Ku * s[:, None] * s[None, :])[0] < 1.01


def _dual_optimum(K, coding, C):
    mask = coding.var_mask.ravel()
    Qv = dual_matrix(K, coding)[np.ix_(mask, mask)]
    x = dual_qp(Qv, C)
    return x.sum() - 0.5 * x @ Qv @ x


@pytest.mark.parametrize("method", sorted(FORMULATIONS))
@pytest.mark.parametrize("C", [0.3, 5.0])
def test_suboptimality_bounds_the_dual_gap_to_the_optimum(method, C):
    """bound >= D* - D(alpha) at random feasible points near and far from the optimum,
    with duplicate points of one and of mixed labels; never above the duality gap."""
    X, y = _with_duplicates(5, n=24)
    K = rbf_kernel(X, gamma=5.0)
    formulation = get_formulation(method)
    coding = formulation.encode(y, 3)
    var_i, var_j = variable_list(coding)
    d_star = _dual_optimum(K, coding, C)
    group, mixed = duplicate_groups(X, y)
    geo = kernel_geometry(K, group, mixed)
    assert geo.floor.min() > 0
    target = Target(
        0,
        np.eye(3),
        1.0,
        geo.floor,
        geo.group,
        geo.group_mixed,
        coding.block_w,
        float(coding.block_sigma),
        0.0,
        np.ones(0, bool),
        np.zeros((2, 0)),
    )
    prob = problem_of(K, coding, var_i, var_j)
    gen = np.random.default_rng(6)
    state = SolverState.start(K, coding)
    run_solver(state, var_i, var_j, C, tol=1e-10, max_iter=100000, seed=1)
    for spread in (0.0, 1e-4, 1e-2, 1.0):
        alpha = np.clip(state.alpha + spread * C * gen.standard_normal(state.alpha.shape), 0, C)
        alpha[~coding.var_mask] = 0
        s = SolverState.start(K, coding, alpha)
        a = alpha[var_i, var_j]
        Q = dual_matrix(K, coding)[np.ix_(coding.var_mask.ravel(), coding.var_mask.ravel())]
        d = a.sum() - 0.5 * a @ Q @ a
        bound, _ = suboptimality(prob, alpha, C, s.S, s.ssum, target, 0.0, np.inf)
        plain = Target(0, np.eye(3), 1.0, np.zeros(0), *target[4:])
        gap, _ = suboptimality(prob, alpha, C, s.S, s.ssum, plain, 0.0, np.inf)
        # lazily (models spent largest gap first, until decided): the same verdict
        for need in (0.5 * bound, 0.999 * bound, 1.001 * bound, 0.5 * (bound + gap), gap):
            lazy, _ = suboptimality(prob, alpha, C, s.S, s.ssum, target, 0.0, need)
            assert lazy >= bound - 1e-12
            assert (lazy < need) == (bound < need)
        assert bound >= d_star - d - 1e-8 * max(1.0, abs(d_star))
        assert bound <= gap + 1e-12
    # somewhere off the optimum the model beats the gap (the point of it)
    assert bound < gap


@pytest.mark.parametrize("name", ["letter", "glass", "dna"])
@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_engine_matches_refits_on_zscored_data_with_duplicates(name, method):
    """The regime of the sharper certificate: z-scored features (near-diagonal kernel),
    a subsample with exact duplicates (letter, glass and DNA have them), every fold
    proved from the radius and the floor. Predictions equal exact refits'."""
    data = load_dataset(name, source="bundled", scaling="zscore")
    gen = rng(11, "test-certificate", name)
    idx = gen.choice(data.y.shape[0], 40, replace=False)
    X, y = data.X[idx], data.y[idx]
    # make sure there are duplicates of one and of mixed labels
    X, y = np.vstack([X, X[:3]]), np.concatenate([y, y[:2], y[3:4]])
    Cs = [0.6, 5.1, 40.1]
    frame, pred = loo_grid(X, y, method, [5.0], Cs, return_predictions=True)
    _, ref, gap = loo_refit(X, y, method, [5.0], Cs, tol=1e-9)
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()
    assert frame["converged"].all()


def test_pooled_probe_shares_one_budget(monkeypatch):
    """``probe_folds(..., pooled=True)``: each fold gets what the folds before it left
    of the one budget, the folds it reaches take what they take unpooled (the same
    seeds), and the sample stops once the budget is spent."""
    from isvm.loo import driver
    from isvm.loo.folds import probe_folds

    caught = []

    def spy(*args):
        caught.append(args[:-2])  # without (budget, pooled)
        return probe_folds(*args)

    monkeypatch.setattr(driver, "probe_folds", spy)
    data = load_dataset("vehicle", source="bundled", scaling="minmax")
    idx = rng(3, "test-pooled-probe").choice(data.y.shape[0], 40, replace=False)
    loo_grid(data.X[idx], data.y[idx], "isvm", [10.0], [0.1, 2.6])
    assert caught  # the path's first C is probed
    args = caught[-1]
    _, alone = probe_folds(*args, 10_000)
    assert alone.sum() > 8  # the budgets below bite
    spent = np.concatenate([[0], np.cumsum(alone)[:-1]])  # before each fold
    for budget in (int(alone.sum()), int(alone.sum()) - 1, 3):
        _, pooled = probe_folds(*args, budget, True)
        assert pooled.sum() == min(budget, alone.sum())
        whole = spent + alone <= budget
        assert (pooled[whole] == alone[whole]).all()
        assert (pooled[spent >= budget] == 0).all()


def test_sift_down_pops_the_largest_key_first():
    """The lazy certificate's heap (``certify._sift_down``) gives every index once, in
    non-increasing key order, ties and all."""
    from isvm.solvers.certify import _sift_down

    gen = np.random.default_rng(5)
    for n in (0, 1, 2, 7, 64):
        key = gen.integers(0, 5, n).astype(float)  # many ties
        heap = np.arange(n)
        for start in range(n // 2 - 1, -1, -1):
            _sift_down(heap, key, start, n)
        popped = []
        for size in range(n, 0, -1):
            popped.append(heap[0])
            heap[0] = heap[size - 1]
            _sift_down(heap, key, 0, size - 1)
        assert sorted(popped) == list(range(n))
        assert (np.diff(key[popped]) <= 0).all()


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
@pytest.mark.parametrize("C", [0.3, 5.0])
@pytest.mark.parametrize("duplicates", [True, False])
def test_standing_bound_holds_for_every_larger_C(method, C, duplicates):
    """``standing_bound`` (bound, rate) made at C bounds ``D*(C') - D(alpha)`` by
    ``bound + (C' - C) rate`` for every C' >= C (D* from an interior-point QP at C'),
    is never below ``suboptimality``'s bound at C, and where the solution has no
    multiplier near C its models stand: below the duality gap up to 5 C. (With
    duplicate points of mixed labels some multipliers are at C at every C.)"""
    X, y = _twenty_four(duplicates)
    K = rbf_kernel(X, gamma=5.0)
    coding = get_formulation(method).encode(y, 3)
    var_i, var_j = variable_list(coding)
    geo = kernel_geometry(K, *duplicate_groups(X, y))
    target = Target(
        4, np.eye(3), 1.0, geo.floor, geo.group, geo.group_mixed, coding.block_w,
        float(coding.block_sigma), 0.0, np.ones(0, bool), np.zeros((2, 0)),
    )  # fmt: skip
    prob = problem_of(K, coding, var_i, var_j)
    mask = coding.var_mask.ravel()
    Q = dual_matrix(K, coding)[np.ix_(mask, mask)]
    state = SolverState.start(K, coding)
    run_solver(state, var_i, var_j, C, tol=1e-10, max_iter=100000, seed=1)
    gen = np.random.default_rng(8)
    stood = False
    for spread in (0.0, 1e-4, 1e-2, 1.0):
        alpha = np.clip(state.alpha + spread * C * gen.standard_normal(state.alpha.shape), 0, C)
        alpha[~coding.var_mask] = 0
        s = SolverState.start(K, coding, alpha)
        a = alpha[var_i, var_j]
        d = a.sum() - 0.5 * a @ Q @ a
        bound, rate = standing_bound(prob, alpha, C, s.S, s.ssum, target)
        full, _ = suboptimality(prob, alpha, C, s.S, s.ssum, target, 0.0, np.inf)
        assert bound >= full - 1e-12 and rate >= 0.0
        for larger in (C, 1.01 * C, 1.5 * C, 4 * C, 20 * C):
            d_star = _dual_optimum(K, coding, larger)
            assert bound + (larger - C) * rate >= d_star - d - 1e-8 * max(1.0, abs(d_star))
        plain = target._replace(floor=np.zeros(0))
        gap, _ = suboptimality(prob, alpha, C, s.S, s.ssum, plain, 0.0, np.inf)
        stood |= bound + 4 * C * rate < gap  # still below the gap at 5 C
    if C == 5.0 and not duplicates:  # no multiplier reaches C there
        assert state.alpha.max() < C and stood


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_standing_proofs_change_nothing_but_the_work(method, monkeypatch):
    """A fold whose stored solution is still proved by its standing proof skips the try
    on that solution (``folds._still_proved``); the try would have proved it, so every
    grid point's outputs (predictions, epochs, certificates, the try's outcomes) and
    the fold store are those of the same folds run with every standing proof dropped.
    On a z-scored letter subsample past the C where the folds' solutions saturate,
    where many folds take that path."""
    from isvm.loo import driver
    from isvm.loo.bundles import FoldOutput, FoldStore

    data = load_dataset("letter", source="bundled", scaling="zscore")
    idx = rng(17, "test-certificate", "standing").choice(data.y.shape[0], 60, replace=False)
    real = driver.fit_folds
    skipped = []

    def twice(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride):
        n = prob.K.shape[0]
        dropped = FoldStore(*[a.copy() for a in store])
        dropped.proof[:] = 0.0
        plain = FoldOutput.empty(n)
        real(prob, blocks, cert, step, full, fac, dropped, cfg, plain, first, stride)
        made = store.proof[:, 0].copy()
        real(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride)
        for field in FoldOutput._fields:
            np.testing.assert_array_equal(getattr(out, field), getattr(plain, field))
        for field in ("alpha", "S", "ssum", "status", "status_ok"):
            np.testing.assert_array_equal(getattr(store, field), getattr(dropped, field))
        skipped.append(int(((made > 0) & (store.proof[:, 0] == made) & (out.prev_try == 1)).sum()))

    monkeypatch.setattr(driver, "fit_folds", twice)
    # ISVM's multipliers grow to about L (26 on letter) before they saturate
    Cs = [40.1, 40.6, 41.1, 41.6, 45.1] if method == "isvm" else [5.1, 5.6, 6.1, 10.1, 40.1]
    loo_grid(data.X[idx], data.y[idx], method, [5.0], Cs)
    assert sum(skipped) > 60  # many folds of the later grid points took the path


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_a_start_tried_in_vain_is_not_tried_again(method):
    """``tried`` (the caller proved this very start in vain, :func:`isvm.loo.folds._fit_fold`'s
    shifted start) skips only the certificate try before the first epoch: from a start
    the certificate cannot prove, the solve is the same with and without it (epochs,
    verdicts, multipliers); from one it proves at once, it does not try there."""
    X, y = _with_duplicates(3, n=30)
    K = rbf_kernel(X, gamma=5.0)
    coding = get_formulation(method).encode(y, 3)
    geo = kernel_geometry(K, *duplicate_groups(X, y))
    p = 7
    target = Target(
        p, np.eye(3), 1.0, geo.floor, geo.group, geo.group_mixed, coding.block_w,
        float(coding.block_sigma), 0.0, np.ones(0, bool), np.zeros((2, 0)),
    )  # fmt: skip
    var_i, var_j = variable_list(coding)
    keep = var_i != p
    prob = problem_of(K, coding, var_i, var_j)
    fold = with_variables(prob, var_i[keep], var_j[keep])
    points = np.array([i for i in range(K.shape[0]) if i != p], dtype=np.int64)
    blocks = Blocks(points, coding.var_mask, coding.block_w, float(coding.block_sigma))
    full = SolverState.start(K, coding)
    run_solver(full, var_i, var_j, 1.0, tol=1e-10, max_iter=100000, seed=1)

    def start(spread):
        alpha = full.alpha.copy()
        alpha[p] = 0.0
        alpha = np.clip(alpha + spread * np.random.default_rng(2).random(alpha.shape), 0, 1.0)
        alpha[p] = 0.0
        alpha[~coding.var_mask] = 0.0
        s = SolverState.start(K, coding, alpha)
        return Dual(alpha, s.S, s.ssum)

    def solve(dual, tried):
        dual = Dual(*(a.copy() for a in dual))
        state = rng_state(5)
        if blocks.sigma != 0.0:
            result = block_epochs(fold, blocks, 1.0, dual, 1e-8, 500, state, target, tried)
        else:
            result = cd_epochs(fold, 1.0, dual, 1e-8, 500, state, True, target, tried)
        return result, dual

    rough = start(0.3)
    assert not prove(fold, rough.alpha.copy(), 1.0, rough.S.copy(), rough.ssum.copy(), target)[0]
    (plain, plain_dual), (skipped, skipped_dual) = solve(rough, False), solve(rough, True)
    assert plain[0] >= 1 and plain[0] == skipped[0]
    assert plain[1:] == skipped[1:]
    for a, b in zip(plain_dual, skipped_dual, strict=True):
        np.testing.assert_array_equal(a, b)
    exact = start(0.0)
    assert prove(fold, exact.alpha.copy(), 1.0, exact.S.copy(), exact.ssum.copy(), target)[0]
    assert solve(exact, False)[0][0] == 0
    assert solve(exact, True)[0][0] >= 1


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_a_walked_zscore_path_matches_refits(method, monkeypatch):
    """The paper's regime as the study walks it: z-scored features and a C path in
    steps of 0.5, where most folds are proved at once on a start moved along from
    their solution at the previous C (``folds._shifted_start``, tried before the other
    starts). Predictions equal exact refits' at every C; the test asks that many folds
    took that way (no epoch and no proof of the stored solution), so it is exercised."""
    from isvm.loo import c_grid, driver

    data = load_dataset("vowel", source="bundled", scaling="zscore")
    idx = rng(19, "test-certificate", "walk").choice(data.y.shape[0], 40, replace=False)
    X, y = data.X[idx], data.y[idx]
    real = driver.fit_folds
    at_once = []

    def spy(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride):
        real(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride)
        if step.scale_prev > 0.0 and fac.status.shape[0] == 0:
            at_once.append(int(((out.epochs == 0) & (out.prev_try != 1) & out.certified).sum()))

    monkeypatch.setattr(driver, "fit_folds", spy)
    Cs = c_grid(0.1, 5.1, 0.5)
    _, pred = loo_grid(X, y, method, [5.0], Cs, return_predictions=True)
    _, ref, gap = loo_refit(X, y, method, [5.0], Cs, tol=1e-9)
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()
    assert sum(at_once) > 40  # (1-vs-all and WW: then standing proofs, from C = 1.6 or 2.1)


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_active_set_folds_try_the_shifted_start_first(method, monkeypatch):
    """In active-set mode along a C path, a fold first tries its solution at the
    previous C moved as the full solution moved, and skips its active-set update where
    that proves the prediction. Dense kernels (yeast's 8 z-scored features; glass's
    for 1-vs-all) keep the path in active-set mode; predictions equal exact refits' at
    every C, and the test asks that folds took that way, so it is exercised."""
    from isvm.loo import c_grid, driver

    name = "glass" if method == "ova" else "yeast"
    data = load_dataset(name, source="bundled", scaling="zscore")
    idx = rng(25, "test-certificate", "active-shift").choice(data.y.shape[0], 40, replace=False)
    X, y = data.X[idx], data.y[idx]
    real = driver.fit_folds
    at_once, active = [], []

    def spy(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride):
        real(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride)
        if step.scale_prev > 0.0 and fac.status.shape[0] > 0:
            active.append(step.C)
            at_once.append(int(((out.epochs == 0) & out.certified).sum()))

    monkeypatch.setattr(driver, "fit_folds", spy)
    Cs = c_grid(0.1, 10.1, 0.5)
    _, pred = loo_grid(X, y, method, [5.0], Cs, return_predictions=True)
    _, ref, gap = loo_refit(X, y, method, [5.0], Cs, tol=1e-9)
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()
    assert len(active) >= 5, f"only {len(active)} grid points in active-set mode"
    assert sum(at_once) > 20


def test_a_skipped_update_carries_the_fold_statuses_to_the_new_c():
    """``folds._rebased``: a fold's own status changes (against the full optimum's at
    C_prev) are kept, every other variable takes the full optimum's status at C, as
    the next update's warm guess reads them; nothing changes without a base."""
    from isvm.loo.bundles import EXCLUDED, FREE, UPPER, ZERO
    from isvm.loo.folds import _rebased

    base = np.array([FREE, ZERO, UPPER, FREE, ZERO], dtype=np.int8)
    now = np.array([UPPER, FREE, UPPER, FREE, ZERO], dtype=np.int8)
    fold = np.array([FREE, FREE, EXCLUDED, ZERO, ZERO], dtype=np.int8)
    assert _rebased(fold, base, now)
    np.testing.assert_array_equal(fold, [UPPER, FREE, EXCLUDED, ZERO, ZERO])
    kept = fold.copy()
    assert not _rebased(fold, base[:0], now)
    np.testing.assert_array_equal(fold, kept)


@pytest.mark.parametrize("C", [0.3, 5.0])
@pytest.mark.parametrize("duplicates", [True, False])
def test_column_bounds_hold_class_by_class_and_prove_only_the_optimum(C, duplicates):
    """1-vs-all's dual is one problem per class: ``column_bounds`` gives each class's
    column a bound on ``D_d*(C') - D_d(alpha)`` (each class's QP solved on its own, at C
    and at larger C' through the rates), summed never above ``suboptimality``'s, and
    ``prove_by_column`` certifies only the optimum's prediction, at every point where
    the bound over all columns does and more
    (strictly more at C = 0.3 in this test's near- and far-from-optimal points), writing
    the columns it waits on."""
    from isvm.solvers._core import refresh_point_scores
    from isvm.solvers.certify import column_bounds, prove_by_column

    X, y = _twenty_four(duplicates)
    K = rbf_kernel(X, gamma=5.0)
    formulation = get_formulation("ova")
    coding = formulation.encode(y, 3)
    var_i, var_j = variable_list(coding)
    geo = kernel_geometry(K, *duplicate_groups(X, y))
    kappa = formulation.score_diff_norm
    prob = problem_of(K, coding, var_i, var_j)
    mask = coding.var_mask.ravel()
    Q = dual_matrix(K, coding)[np.ix_(mask, mask)]
    state = SolverState.start(K, coding)
    run_solver(state, var_i, var_j, C, tol=1e-12, max_iter=100000, seed=1)
    optimum_pred = (state.S.T).argmax(axis=1)
    per_class = {}
    for larger in (C, 2 * C, 10 * C):
        per_class[larger] = [
            (sel, dual_qp(Q[np.ix_(sel, sel)], larger)) for sel in (var_j == d for d in range(3))
        ]
    gen = np.random.default_rng(9)
    by_column_proved = plain_proved = 0
    for spread in (0.0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0):
        alpha = np.clip(state.alpha + spread * C * gen.standard_normal(state.alpha.shape), 0, C)
        alpha[~coding.var_mask] = 0
        s = SolverState.start(K, coding, alpha)
        a = alpha[var_i, var_j]
        target0 = _column_target(geo, coding, kappa, 0)
        bound, rate = np.zeros(3), np.zeros(3)
        column_bounds(prob, alpha, C, s.S, target0, bound, rate, False)  # standing
        sharp = np.zeros(3)
        column_bounds(prob, alpha, C, s.S, target0, sharp, np.zeros(3))  # group models
        assert (rate >= 0).all() and (sharp <= bound + 1e-12).all()
        whole, _ = suboptimality(prob, alpha, C, s.S, s.ssum, target0, 0.0, np.inf)
        assert sharp.sum() <= whole * (1 + 1e-12) + 1e-12
        for larger, parts in per_class.items():
            for d, (sel, x) in enumerate(parts):
                gap = (x.sum() - 0.5 * x @ Q[np.ix_(sel, sel)] @ x) - (
                    a[sel].sum() - 0.5 * a[sel] @ Q[np.ix_(sel, sel)] @ a[sel]
                )
                slack = 1e-8 * max(1.0, abs(gap))
                assert bound[d] + (larger - C) * rate[d] >= gap - slack
                assert larger != C or sharp[d] >= gap - slack
        for p in range(K.shape[0]):
            target = _column_target(geo, coding, kappa, p)
            S, ssum = s.S.copy(), s.ssum.copy()
            refresh_point_scores(p, var_i, var_j, alpha, *prob[3:6], K, S, ssum)
            proved, _ = prove_by_column(prob, alpha, C, S, ssum, target)
            plain, _ = prove(
                prob, alpha, C, S.copy(), ssum.copy(), target._replace(column_factor=0.0)
            )
            if proved:
                assert S[:, p].argmax() == optimum_pred[p]
                assert not target.column_need.any()
            else:
                assert target.column_need[S[:, p].argmax()] and target.column_need.sum() >= 2
            by_column_proved += proved
            plain_proved += plain
            assert proved or not plain
    assert by_column_proved >= plain_proved
    if C == 0.3:  # many multipliers at C: the gap spread over the classes
        assert by_column_proved > plain_proved


def _column_target(geo, coding, kappa: float, p: int) -> Target:
    """Point p's target for 1-vs-all with the certificate class by class (radius 1)."""
    return Target(
        p, np.eye(3), kappa, geo.floor, geo.group, geo.group_mixed, coding.block_w,
        float(coding.block_sigma), 1.0 / kappa, np.ones(3, bool), np.zeros((2, 0)),
    )  # fmt: skip


@pytest.mark.parametrize("spread", [0.03, 0.3])
def test_cd_tries_by_column_are_cached_exactly_and_prove_the_optimum(spread):
    """A 1-vs-all held-out cd solve certified class by class steps the columns its verdict
    waits on first, and its tries re-sum only the columns stepped since the last one
    (``Target.column_cache``): every epoch count, verdict and multiplier is the same as
    with every try summed afresh, and a certified prediction is the exact fold
    optimum's (the fold solved on its own to 1e-12)."""
    X, y = _with_duplicates(4, n=40, m=6)
    K = rbf_kernel(X, gamma=5.0)
    formulation = get_formulation("ova")
    coding = formulation.encode(y, 3)
    geo = kernel_geometry(K, *duplicate_groups(X, y))
    var_i, var_j = variable_list(coding)
    prob = problem_of(K, coding, var_i, var_j)
    full = SolverState.start(K, coding)
    run_solver(full, var_i, var_j, 1.0, tol=1e-10, max_iter=100000, seed=1)
    kappa = formulation.score_diff_norm
    proved = stepped = 0
    for p in range(0, 40, 3):
        keep = var_i != p
        fold = with_variables(prob, var_i[keep], var_j[keep])
        alpha = full.alpha.copy()
        alpha = np.clip(alpha + spread * np.random.default_rng(p).random(alpha.shape), 0, 1.0)
        alpha[p] = 0.0
        alpha[~coding.var_mask] = 0.0
        start = SolverState.start(K, coding, alpha)
        results = []
        for cache in (np.full((2, 3), np.nan), np.zeros((2, 0))):
            target = _column_target(geo, coding, kappa, p)._replace(column_cache=cache)
            dual = Dual(start.alpha.copy(), start.S.copy(), start.ssum.copy())
            result = cd_epochs(fold, 1.0, dual, 1e-8, 500, rng_state(5), True, target)
            results.append((result, dual))
        (cached, cached_dual), (plain, plain_dual) = results
        assert cached == plain
        stepped += cached[0] >= 1
        for a, b in zip(cached_dual, plain_dual, strict=True):
            np.testing.assert_array_equal(a, b)
        if cached[3]:
            proved += 1
            exact = SolverState.start(K, coding)  # p's multipliers stay 0: not listed
            run_solver(exact, var_i[keep], var_j[keep], 1.0, tol=1e-12, max_iter=100000, seed=1)
            Sp = np.zeros(3)
            for i in range(40):
                Sp += exact.alpha[i] * np.where(y[i] == np.arange(3), 1.0, -1.0) * K[i, p]
            assert cached_dual.S[:, p].argmax() == Sp.argmax()
    assert proved >= 5 and stepped >= 3
