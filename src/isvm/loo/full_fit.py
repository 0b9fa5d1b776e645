"""The full fit's exact finish (NumPy/SciPy): the optimum, its free set and the inverse of Q_FF.

Coordinate descent converges linearly, and slowly on the ill-conditioned duals of
wide Gaussian kernels; the leave-one-out certificate, however, needs a small
duality gap. Once the sets of variables at 0, free and at C are known, the optimum
is the solution of one linear system on the free set,

    Q_FF alpha_F = 1 - Q_FU C 1,

so a primal-dual active-set iteration (solve, move the variables that left the
box to their bound, free the bound variables whose gradient points inward,
repeat) ends at the exact optimum in a few steps from a good guess.
:func:`exact_full_fit` polishes a tolerance-level cd solution that way and keeps
what the fold updates (:mod:`isvm.loo.fold_update`) need: the free set, the inverse
of its block ``H = Q_FF`` and the products ``Q[v, F]``, ``Q[v, F] Hinv`` of the
outside variables. Only |F|-sized blocks of Q are ever formed, never Q. Along a C
path the inverse and the products are updated from the previous C's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numba import prange
from numpy.typing import NDArray

from isvm._jit import njit
from isvm.loo.bundles import FREE, UPPER, ZERO, Factor
from isvm.loo.settings import (
    BOX_SLACK,
    DEFAULT_SETTINGS,
    FINISH_PREVIOUS_STEPS,
    FINISH_RETRY_EPOCHS,
    FINISH_RETRY_TOLS,
    FINISH_STEPS,
    FREE_THRESHOLD,
    PIN_ROUNDS,
    REFINE_STEPS,
    SOLVE_RESIDUAL,
    UPDATE_RESIDUAL,
)
from isvm.methods import Coding
from isvm.solvers import DEFAULT_MAX_EPOCHS, SolverState, _core, problem_of, run_solver
from isvm.solvers._core import Dual, Problem, dual_gradients

#: rows per block in the updates of the outside products
_ROW_BLOCK = 256


@dataclass
class FullOptimum:
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
    #: whether ``Hinv`` is the inverse of H (Cholesky), not a singular face's basic
    #: solve: only then can the next grid point update it (:func:`_updated_products`)
    exact_inverse: bool = False
    #: whether ``Hinv`` and the products came from the previous C's by an update
    products_updated: bool = False
    #: a separable dual's optimum, class by class (:mod:`isvm.loo.separable`): each
    #: class's own optimum, which the next C of a path updates; None otherwise
    parts: tuple[FullOptimum, ...] | None = None

    @property
    def dual(self) -> Dual:
        """The optimum as the numba kernels take it."""
        return Dual(self.alpha, self.S, self.ssum)

    def factor(self, var_id: NDArray[np.int64]) -> Factor:
        """The active set and inverse as the numba fold update takes them.

        ``var_id`` maps (point, class) to the variable index (-1: not a variable).
        """
        return Factor(
            self.status,
            self.free_vars,
            self.free_pos,
            self.Hinv,
            self.S_bound,
            self.ssum_bound,
            self.Q_out,
            self.Y_out,
            self.out_pos,
            var_id,
        )


class Factorisation:
    """A solver for a symmetric positive semidefinite H: Cholesky, or a pivoted Cholesky.

    ISVM's dual is singular along one direction per point, and duplicate points make
    any dual singular; where the Cholesky factorisation fails or has a pivot below
    1e-10 of the largest diagonal entry, a pivoted Cholesky (LAPACK ``dpstrf``, stopped
    at pivots below 1e-10 of the largest diagonal entry) gives :attr:`null`, a basis of
    the null space, and a basic solution of the consistent stationarity system, at
    Cholesky's cost (an eigendecomposition costs about 25 Cholesky factorisations;
    docs/benchmarks.md).
    """

    def __init__(self, H: NDArray[np.float64]) -> None:
        self.size = H.shape[0]
        self.cholesky = None if self.size == 0 else cholesky(H, np.max(np.diag(H)))
        self.null = np.zeros((self.size, 0))
        self._pivoted = None
        if self.size and self.cholesky is None:
            self._pivoted_factor(H)

    def _pivoted_factor(self, H: NDArray[np.float64]) -> None:
        """``P' H P = L L'`` to rank r; null space ``P [-L11^-T L21'; I]``."""
        tol = 1e-10 * np.max(np.diag(H))
        c, piv, rank, _ = scipy.linalg.lapack.dpstrf(H, tol=tol, lower=1)
        order = piv - 1  # LAPACK's pivots are 1-based
        L11 = c[:rank, :rank]  # LAPACK reads only its lower triangle below
        L21 = c[rank:, :rank]
        null = np.zeros((self.size, self.size - rank))
        null[order[:rank]] = -scipy.linalg.solve_triangular(L11, L21.T, lower=True, trans="T")
        null[order[rank:]] = np.eye(self.size - rank)
        self._pivoted = (order[:rank], (L11, True))
        self.null = null

    @property
    def exact(self) -> bool:
        """Whether :meth:`solve` applies the true inverse (H is not singular)."""
        return self.size == 0 or self.cholesky is not None

    def solve(self, b: NDArray[np.float64]) -> NDArray[np.float64]:
        """``H^-1 b`` (a basic solution where H is singular)."""
        if self.size == 0:
            return np.zeros_like(b)
        if self.cholesky is not None:
            return scipy.linalg.cho_solve(self.cholesky, b, check_finite=False)
        basis, factor = self._pivoted
        x = np.zeros_like(b)
        x[basis] = scipy.linalg.cho_solve(factor, b[basis], check_finite=False)
        return x


def cholesky(H: NDArray[np.float64], scale: float) -> tuple | None:
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


def pin_null_directions(
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


def scores(K: NDArray, coding: Coding, alpha: NDArray) -> tuple[NDArray, NDArray]:
    """(S, ssum) of ``alpha``, as a solver state would hold them."""
    state = SolverState.start(K, coding, alpha)
    return state.S, state.ssum


def _state(prob: Problem, coding: Coding, alpha) -> tuple[NDArray, NDArray, NDArray]:
    """(S, ssum) of ``alpha`` and the dual gradients of ``prob``'s variables there."""
    S, ssum = scores(prob.K, coding, alpha)
    return S, ssum, dual_gradients(prob, S, ssum)


def exact_full_fit(
    K: NDArray[np.float64],
    coding: Coding,
    var_i: NDArray[np.int64],
    var_j: NDArray[np.int64],
    alpha0: NDArray[np.float64],
    C: float,
    *,
    max_iter: int = DEFAULT_MAX_EPOCHS,
    max_free: int = DEFAULT_SETTINGS.finish_max_free,
    outside_max_entries: int = DEFAULT_SETTINGS.outside_max_entries,
    seed: int = 0,
    previous: FullOptimum | None = None,
    steps: int = FINISH_STEPS,
    previous_steps: int = FINISH_PREVIOUS_STEPS,
    pin_rounds: int = PIN_ROUNDS,
    retries: tuple[tuple[float, int], ...] | None = None,
) -> FullOptimum | None:
    """Polish ``alpha0`` (feasible, near-optimal) to the exact optimum by active-set steps.

    Each step solves ``Q_FF alpha_F = 1 - Q_FU C 1`` on the current free set (a
    fresh factorisation of the |F| x |F| block), then moves the variables that left
    the box to their bound and frees the bound variables whose gradient points
    inward; the sets settling means the KKT conditions hold. The first sets are
    those of ``previous`` where given (the optimum at the previous C of a path,
    usually a few changes away; at most ``previous_steps`` steps), then those
    guessed from ``alpha0``. From a rough start the sets can cycle (the dual is not
    an M-matrix), so after ``steps`` steps the start is improved by cd to each of
    ``retries``' (tol, epochs) in turn and the steps retried (default:
    :func:`finish_retries` of ``max_iter``, the fit's epochs). Returns None when they
    never settle or the free set exceeds ``max_free`` variables (the caller keeps its
    cd solution).

    The fold updates need ``H^-1`` and ``Hinv Q[F, v]`` for each outside variable v
    they free; when (outside variables) x |F| is at most
    ``outside_max_entries`` the latter are computed here for all of them in
    one matrix product, much faster than in the folds' small batches. Along a C path
    both are updated from ``previous``'s where the free set changed little
    (:func:`_updated_products`): O(changes x |F| x outside) instead of O(|F|^2 x
    outside).
    """
    prob = problem_of(K, coding, var_i, var_j)
    extra = 0
    alpha = np.array(alpha0, dtype=np.float64)
    if retries is None:
        retries = finish_retries(max_iter)
    for attempt, (tol, budget) in enumerate(((None, 0), (None, 0), *retries)):
        if attempt == 0 and previous is None:
            continue
        if tol is not None:
            state = SolverState.start(K, coding, alpha)
            epochs, _, _ = run_solver(
                state, var_i, var_j, C, tol=tol, max_iter=budget, seed=seed, greedy=False
            )
            alpha, extra = state.alpha, extra + epochs
        start, limit = (previous.status, previous_steps) if attempt == 0 else (None, steps)
        settled = _settle(prob, coding, alpha, C, limit, max_free, pin_rounds, start, previous)
        if settled is None:
            extra += limit
            continue
        result, fact, r = settled
        result.iterations += extra
        nf = result.free_vars.shape[0]
        n_out = result.status.shape[0] - nf
        within = n_out * nf <= outside_max_entries
        result.products_updated = (
            within and previous is not None and _updated_products(previous, result, r, prob, coding)
        )
        if not result.products_updated:
            if fact is None:  # solved by an update, but the products could not follow
                fact = Factorisation(q_block(prob, result.free_vars, result.free_vars))
                result.exact_inverse = fact.exact
            result.Hinv = np.ascontiguousarray(fact.solve(np.eye(nf)))
            if within:
                outside = np.flatnonzero(result.free_pos < 0)
                result.Q_out = q_block(prob, outside, result.free_vars)
                result.Y_out = result.Q_out @ result.Hinv  # Hinv is symmetric
                result.out_pos[outside] = np.arange(outside.shape[0])
        return result
    return None


def finish_retries(max_iter: int) -> tuple[tuple[float, int], ...]:
    """The finish's cd restarts, (tol, epochs) each: ``FINISH_RETRY_TOLS`` on at most
    ``FINISH_RETRY_EPOCHS`` epochs, the last on the fit's whole budget ``max_iter``."""
    short = min(max_iter, FINISH_RETRY_EPOCHS)
    *first, last = FINISH_RETRY_TOLS
    return (*((tol, short) for tol in first), (last, max_iter))


def _moved_face(prev: FullOptimum, free: NDArray[np.int64]) -> tuple | None:
    """How ``free`` differs from ``prev``'s free set F: (kept, removed, added)
    variables, or None where F is empty or the change is large (``4 (|R| + 2 |N|) >
    |F'|``): moving F's inverse then costs about as much as a fresh factorisation."""
    base = prev.free_vars
    if base.shape[0] == 0:
        return None
    in_new = np.zeros(prev.free_pos.shape[0], dtype=np.bool_)
    in_new[free] = True
    kept, removed = base[in_new[base]], base[~in_new[base]]
    added = free[prev.free_pos[free] < 0]
    if 4 * (removed.shape[0] + 2 * added.shape[0]) > free.shape[0]:
        return None
    return kept, removed, added


class _FaceSolver:
    """``H'^-1 v`` for the face F' = (F - R) + N, through ``prev``'s ``H^-1`` (F's).

    The formulas of :func:`_block_update`, applied to vectors instead of forming
    ``H'^-1``: each solve costs one product with ``prev.Hinv`` (O(|F|^2)),
    where forming the moved inverse costs several passes over it. The active-set
    steps of one grid point solve a few faces each and keep only the last one's
    inverse (:func:`_updated_products`), so they use this. ``order``: the positions in
    ``free`` of the solver's order, kept (in F's order) then N.
    """

    def __init__(self, prev: FullOptimum, free: NDArray[np.int64], prob: Problem) -> None:
        moved = _moved_face(prev, free) if prev.exact_inverse else None
        self.ok = moved is not None
        if not self.ok:
            return
        kept, removed, added = moved
        new_pos = np.full(prev.free_pos.shape[0], -1, dtype=np.int64)
        new_pos[free] = np.arange(free.shape[0])
        self.order = new_pos[np.concatenate([kept, added])]
        self._Hinv = prev.Hinv
        self._pk, self._pr = prev.free_pos[kept], prev.free_pos[removed]
        nk, nr, nn = kept.shape[0], removed.shape[0], added.shape[0]
        self._nk, self._nn = nk, nn
        if nr:  # H_kk^-1 = Hinv_kk - Hinv_kR Hinv_RR^-1 Hinv_Rk
            self._Hinv_kr = _gather(self._Hinv, self._pk, self._pr, np.empty((nk, nr)))
            self._Hinv_rr = _gather(self._Hinv, self._pr, self._pr, np.empty((nr, nr)))
        #: a basis of the face's null space, in ``free``'s order (empty: definite)
        self.null = np.zeros((nk + nn, 0))
        if nn:  # the Schur complement of the added block
            self._B = q_block(prob, kept, added)
            self._YT = self._kept_solve(self._B)
            Q_nn = q_block(prob, added, added)
            schur = Q_nn - self._B.T @ self._YT
            schur = 0.5 * (schur + schur.T)
            scale = max(np.max(np.diag(Q_nn)), 1e-300)
            self._schur = cholesky(schur, scale)
            self._schur_pinv = None
            if self._schur is None:
                self._singular_schur(schur, scale)

    def _singular_schur(self, schur: NDArray[np.float64], scale: float) -> None:
        """A Schur complement with a null space (ISVM: the new variables free all of a
        point's multipliers): H' is singular along ``[-H_kk^-1 B z; z]`` for each null
        vector z of it, and its pseudo-inverse gives a face solution, as a fresh
        pivoted factorisation would (same threshold, 1e-10 of the largest diagonal
        entry), for a fraction of the cost. Not ok where no eigenvalue is that small."""
        w, V = scipy.linalg.eigh(schur, check_finite=False)
        keep = w > 1e-10 * scale
        if keep.all():
            self.ok = False
            return
        self._schur_pinv = (V[:, keep] / w[keep]) @ V[:, keep].T
        z = V[:, ~keep]
        self.null = np.zeros((self.order.shape[0], z.shape[1]))
        self.null[self.order] = np.vstack([-self._YT @ z, z])

    def _kept_solve(self, V: NDArray[np.float64]) -> NDArray[np.float64]:
        """``H_kk^-1 V`` for V of nk rows: one product with the previous inverse."""
        padded = np.zeros((self._Hinv.shape[0], V.shape[1]))
        padded[self._pk] = V
        W = self._Hinv @ padded
        out = W[self._pk]
        if self._pr.shape[0]:
            out -= self._Hinv_kr @ np.linalg.solve(self._Hinv_rr, W[self._pr])
        return out

    def solve(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        """``H'^-1 v``, v and the result in the solver's order."""
        nk = self._nk
        u = self._kept_solve(v[:nk, None])[:, 0]
        if not self._nn:
            return u
        b = v[nk:] - self._B.T @ u
        if self._schur_pinv is not None:
            x_n = self._schur_pinv @ b
        else:
            x_n = scipy.linalg.cho_solve(self._schur, b, check_finite=False)
        return np.concatenate([u - self._YT @ x_n, x_n])


def _block_update(prev: FullOptimum, free: NDArray[np.int64], prob: Problem) -> tuple | None:
    """``prev``'s inverse and its outside rows moved to ``free``.

    The free set changes from F to F' = (F - R) + N. Removing R: with ``Hinv``
    partitioned into kept (k) and removed parts and ``M = Hinv_RR^-1 Hinv_Rk``,
    ``H_kk^-1 = Hinv_kk - Hinv_kR M``, each outside row becomes ``Y_k - Y_R M`` and
    the removed variables' own rows are ``-M``. Adding N: with ``B = Q[k, N]``,
    ``Y_N = B' H_kk^-1`` and the Schur complement ``S = Q_NN - Y_N B``, the bordered
    inverse is ``[[H_kk^-1 + Y_N' S^-1 Y_N, -Y_N' S^-1], [-S^-1 Y_N, S^-1]]`` and an
    outside row becomes ``[Y - W S^-1 Y_N, W S^-1]`` with ``W = Q[v, N] - Y B``.
    O((|R| + |N|) |F| (|F| + outside)) work, against O(|F|^3 + |F|^2 outside) fresh.

    Returns (positions in ``free`` of the new order k + N, Hinv in that order, Q_out,
    Y_out and the outside variables of their rows), or None where it does not apply:
    ``prev``'s inverse is not exact or lacks the products, :func:`_moved_face`
    says no, or the Schur complement is not positive definite.
    """
    n_var = prob.var_i.shape[0]
    if not prev.exact_inverse or prev.Q_out.shape[0] != n_var - prev.free_vars.shape[0]:
        return None
    moved = _moved_face(prev, free)
    if moved is None:
        return None
    kept, removed, added = moved
    new_pos = np.full(n_var, -1, dtype=np.int64)
    new_pos[free] = np.arange(free.shape[0])
    pk, pr = prev.free_pos[kept], prev.free_pos[removed]
    nk, nr, nn = kept.shape[0], removed.shape[0], added.shape[0]
    # H_kk^-1 = Hinv_kk - Hinv_kR M (removal) + YS Y_n (addition): a low-rank update,
    # gathered and applied a block of rows at a time (one pass over the big arrays and
    # no temporaries of their size, where numpy's ``H -= U @ V`` makes two passes each)
    lr_u, lr_v = [], []
    if nr:
        Hinv_kr = _gather(prev.Hinv, pk, pr, np.empty((nk, nr)))
        M = np.linalg.solve(_gather(prev.Hinv, pr, pr, np.empty((nr, nr))), Hinv_kr.T)
        lr_u.append(-Hinv_kr)
        lr_v.append(M)
    # rows of the products: the old outside variables but N, then R; columns: k, then N
    old_out = np.empty(prev.Q_out.shape[0], dtype=np.int64)
    has_row = prev.out_pos >= 0
    old_out[prev.out_pos[has_row]] = np.flatnonzero(has_row)
    rest = np.ones(old_out.shape[0], dtype=bool)
    rest[prev.out_pos[added]] = False
    rest_rows = np.flatnonzero(rest)
    if nn:  # Q[N, k] and Q[N, k] H_kk^-1 are outside rows of prev
        rows_n = prev.out_pos[added]
        B = _gather(prev.Q_out, rows_n, pk, np.empty((nn, nk))).T
        Y_n = _gather(prev.Y_out, rows_n, pk, np.empty((nn, nk)))
        if nr:
            Y_n -= _gather(prev.Y_out, rows_n, pr, np.empty((nn, nr))) @ M
        Q_nn = q_block(prob, added, added)
        schur = Q_nn - Y_n @ B
        # a (nearly) singular new block, e.g. ISVM with all of a point's multipliers
        # free, needs a fresh (pivoted) factorisation
        factor = cholesky(0.5 * (schur + schur.T), max(np.max(np.diag(Q_nn)), 1e-300))
        if factor is None:
            return None
        S_inv = scipy.linalg.cho_solve(factor, np.eye(nn), check_finite=False)
        YS = Y_n.T @ S_inv
        lr_u.append(YS)
        lr_v.append(Y_n)
    else:
        B = Y_n = YS = S_inv = None
    Hinv = _moved_inverse(prev.Hinv, pk, lr_u, lr_v, YS, S_inv)
    out = np.concatenate([old_out[rest_rows], removed])
    n_out, n_rest = out.shape[0], rest_rows.shape[0]
    Q = np.empty((n_out, nk + nn))
    _gather(prev.Q_out, rest_rows, pk, Q[:n_rest, :nk])
    if nr:
        Q[n_rest:, :nk] = q_block(prob, removed, kept)
    if nn:
        Q[:, nk:] = q_block(prob, out, added)
    Y = _moved_rows(prev, Q, rest_rows, pk, pr, M if nr else None, B, Y_n, S_inv)
    order = new_pos[np.concatenate([kept, added])]
    return order, Hinv, Q, Y, out


def _moved_inverse(Hinv_prev, pk, lr_u, lr_v, YS, S_inv) -> NDArray[np.float64]:
    """:func:`_block_update`'s new inverse: ``Hinv_kk`` plus the low-rank terms
    ``lr_u[i] @ lr_v[i]``, a block of rows at a time (one pass over the big arrays, no
    temporaries of their size), bordered by ``-YS`` and ``S_inv`` where N is not empty."""
    nk = pk.shape[0]
    nn = 0 if S_inv is None else S_inv.shape[0]
    Hinv = np.empty((nk + nn, nk + nn))
    U = np.hstack(lr_u) if lr_u else None
    V = np.vstack(lr_v) if lr_v else None
    for start in range(0, nk, _ROW_BLOCK):
        stop = min(start + _ROW_BLOCK, nk)
        block = Hinv[start:stop, :nk]
        _gather(Hinv_prev, pk[start:stop], pk, block)
        if U is not None:
            block += U[start:stop] @ V
    if nn:
        Hinv[:nk, nk:] = -YS
        Hinv[nk:, :nk] = -YS.T
        Hinv[nk:, nk:] = S_inv
    return Hinv


def _moved_rows(prev, Q, rest_rows, pk, pr, M, B, Y_n, S_inv) -> NDArray[np.float64]:
    """:func:`_block_update`'s new ``Q[out, F'] Hinv'`` rows: each old outside row
    (``rest_rows`` of ``prev``'s, then the removed variables' own) through the removal
    (``M``, None where R is empty) and the addition (``B``, ``Y_n``, ``S_inv``, None
    where N is empty), in blocks of rows that stay in cache."""
    nk = pk.shape[0]
    nn = 0 if S_inv is None else S_inv.shape[0]
    nr = 0 if M is None else M.shape[0]
    n_out, n_rest = Q.shape[0], rest_rows.shape[0]
    Y = np.empty((n_out, nk + nn))
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
    return Y


def _q_times(prob: Problem, coding: Coding, free, u) -> NDArray[np.float64]:
    """``Q[free, free] @ u`` through the scores of u, without forming the block."""
    fi, fj = prob.var_i[free], prob.var_j[free]
    alpha = np.zeros(coding.var_mask.shape)
    alpha[fi, fj] = u
    sub = _core.with_variables(prob, fi, fj)
    return coding.margin[fi] - _state(sub, coding, alpha)[2]


def _updated_products(
    prev: FullOptimum,
    result: FullOptimum,
    r: NDArray[np.float64],
    prob: Problem,
    coding: Coding,
) -> bool:
    """Fill ``result``'s Hinv, Q_out, Y_out by :func:`_block_update` of ``prev``'s.

    Kept only if ``H Hinv v = v`` holds to ``UPDATE_RESIDUAL`` for ``v = r``
    (the face's right-hand side) and ``v = 1``: rounding accumulates along a path, and
    the check sends it back to a fresh factorisation before it matters. False (result
    unchanged) where the update does not apply or fails the check.
    """
    if not result.exact_inverse:
        return False
    update = _block_update(prev, result.free_vars, prob)
    if update is None:
        return False
    order, Hinv, Q, Y, out = update
    free = result.free_vars[order]
    checks = np.column_stack([r[order], np.ones(free.shape[0])])
    for v, Hv in zip(checks.T, (Hinv @ checks).T, strict=True):  # one pass over Hinv
        residual = _q_times(prob, coding, free, Hv) - v
        if np.max(np.abs(residual)) > UPDATE_RESIDUAL * max(np.max(np.abs(v)), 1e-300):
            return False
    n_var = prob.var_i.shape[0]
    result.free_vars = free
    result.free_pos = np.full(n_var, -1, dtype=np.int64)
    result.free_pos[free] = np.arange(free.shape[0])
    result.Hinv = np.ascontiguousarray(Hinv)
    result.Q_out = np.ascontiguousarray(Q)
    result.Y_out = np.ascontiguousarray(Y)
    result.out_pos = np.full(n_var, -1, dtype=np.int64)
    result.out_pos[out] = np.arange(out.shape[0])
    return True


def q_block(prob: Problem, rows: NDArray[np.int64], columns: NDArray[np.int64]) -> NDArray:
    """The block ``Q[rows, columns]`` of ``prob``'s variables (indices into its list).

    Entry by entry from the codings (:func:`isvm.solvers._core.q_entry`), rows in
    parallel: no dense coding vectors, no fancy-indexed copies of K.
    """
    return _q_block(prob.K, prob.var_i, prob.var_j, prob.cols, prob.vals, prob.c, rows, columns)


@njit(cache=True, parallel=True)
def _q_block(K, var_i, var_j, cols, vals, c, rows, columns):
    """:func:`q_block` on plain arrays (a tuple inside ``prange`` is unsafe: numba#5872)."""
    out = np.empty((rows.shape[0], columns.shape[0]))
    for a in prange(rows.shape[0]):
        i, j = var_i[rows[a]], var_j[rows[a]]
        for b in range(columns.shape[0]):
            u = columns[b]
            out[a, b] = _core.q_entry(i, j, var_i[u], var_j[u], cols, vals, c, K)
    return out


@njit(cache=True, parallel=True)
def _gather(A, rows, columns, out):
    """``out[:] = A[rows][:, columns]`` (rows in parallel; ``out`` may be a view).

    A block update keeps its columns in order with a few gaps (the removed
    variables), so the columns are copied as runs of consecutive ones, slices that
    compile to vector copies (3x faster at 3,500 columns than one indexed load per
    entry); columns in short runs are copied one by one.
    """
    n = columns.shape[0]
    starts = np.empty(n + 1, dtype=np.int64)
    n_runs = 0
    for b in range(n):
        if b == 0 or columns[b] != columns[b - 1] + 1:
            starts[n_runs] = b
            n_runs += 1
    starts[n_runs] = n
    if 8 * n_runs > n:
        for a in prange(rows.shape[0]):
            r = rows[a]
            for b in range(n):
                out[a, b] = A[r, columns[b]]
        return out
    for a in prange(rows.shape[0]):
        r = rows[a]
        for s in range(n_runs):
            b0, b1 = starts[s], starts[s + 1]
            c0 = columns[b0]
            out[a, b0:b1] = A[r, c0 : c0 + (b1 - b0)]
    return out


def _solve_face(prob: Problem, coding: Coding, alpha, free, r, previous) -> tuple:
    """The face's free values ``x = H^-1 r``, written into ``alpha`` (at the bounds
    elsewhere): through ``previous``'s inverse (:class:`_FaceSolver`) where it applies
    and, refined on the exact residual, leaves free gradients below ``SOLVE_RESIDUAL``
    (the folds build on x, so it must be as exact as a fresh factorisation's), else by
    a fresh :class:`Factorisation`. Returns (x, S, ssum, g, the factorisation or None,
    the face solver or None)."""
    fi, fj = prob.var_i[free], prob.var_j[free]
    update = None if previous is None else _FaceSolver(previous, free, prob)
    if update is not None and not update.ok:
        update = None
    if update is not None:
        x = np.zeros_like(r)
        g_free = r
        scale = max(1.0, np.max(np.abs(r), initial=0.0))
        for _ in range(1 + REFINE_STEPS):
            x[update.order] += update.solve(g_free[update.order])
            alpha[fi, fj] = x
            S, ssum, g = _state(prob, coding, alpha)
            g_free = g[free]
            if np.max(np.abs(g_free), initial=0.0) <= SOLVE_RESIDUAL * scale:
                return x, S, ssum, g, None, update
    fact = Factorisation(q_block(prob, free, free))
    x = fact.solve(r)
    alpha[fi, fj] = x
    S, ssum, g = _state(prob, coding, alpha)
    return x, S, ssum, g, fact, None


def _settle(
    prob: Problem,
    coding: Coding,
    alpha: NDArray[np.float64],
    C: float,
    max_iter: int,
    max_free: int,
    pin_rounds: int,
    status: NDArray[np.int8] | None = None,
    previous: FullOptimum | None = None,
) -> tuple[FullOptimum, Factorisation | None, NDArray[np.float64]] | None:
    """Primal-dual active-set steps from ``status`` (guessed from ``alpha`` if None).

    Each step's face solve goes through ``previous``'s inverse (:class:`_FaceSolver`)
    where it applies and its solution, refined on the exact
    residual, is stationary (free gradients below ``SOLVE_RESIDUAL``), else a
    fresh factorisation.
    Returns (the optimum, without ``Hinv`` or products yet; the factorisation of its
    H, or None if its face was solved by an update; the face's right-hand side r), or
    None if the sets do not settle.
    """
    K, var_i, var_j = prob.K, prob.var_i, prob.var_j
    n_var = var_i.shape[0]
    if status is None:
        S, ssum, g = _state(prob, coding, alpha)
        step = alpha[var_i, var_j] + g
        status = np.where(step <= 0.0, ZERO, np.where(step >= C, UPPER, FREE)).astype(np.int8)
    it, limit = 0, max_iter
    while it < limit:
        it += 1
        free = np.flatnonzero(status == FREE)
        if free.shape[0] > max_free:
            return None
        bound = np.zeros_like(alpha)
        upper = status == UPPER
        bound[var_i[upper], var_j[upper]] = C
        S_bound, ssum_bound = scores(K, coding, bound)
        fi, fj = var_i[free], var_j[free]
        r = dual_gradients(_core.with_variables(prob, fi, fj), S_bound, ssum_bound)
        alpha = bound.copy()
        x, S, ssum, g, fact, update = _solve_face(prob, coding, alpha, free, r, previous)
        new = status.copy()
        new[free[x < -BOX_SLACK * C]] = ZERO
        new[free[x > C * (1.0 + BOX_SLACK)]] = UPPER
        new[(status == ZERO) & (g > FREE_THRESHOLD)] = FREE
        new[(status == UPPER) & (g < -FREE_THRESHOLD)] = FREE
        null = fact.null if fact is not None else update.null
        singular = null.shape[1] > 0
        if np.array_equal(new, status) and singular and pin_rounds:
            # a singular face: fix one variable per null direction at a bound (an
            # optimum as good) and solve the smaller face, which has a true inverse
            pin_rounds -= 1
            limit += 1
            pos, values = pin_null_directions(x, null, C)
            new[free[pos]] = np.where(values == 0.0, ZERO, UPPER)
        elif np.array_equal(new, status):
            alpha = np.clip(alpha, 0.0, C)
            S, ssum = scores(K, coding, alpha)
            free_pos = np.full(n_var, -1, dtype=np.int64)
            free_pos[free] = np.arange(free.shape[0])
            nf = free.shape[0]
            result = FullOptimum(
                alpha,
                S,
                ssum,
                status,
                free.astype(np.int64),
                free_pos,
                np.zeros((0, 0)),
                S_bound,
                ssum_bound,
                it,
                np.zeros((0, nf)),
                np.zeros((0, nf)),
                np.full(n_var, -1, dtype=np.int64),
                not singular if fact is None else fact.exact,
            )
            return result, fact, r
        status = new
    return None
