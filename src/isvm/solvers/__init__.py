"""Solvers for the box-constrained multiclass dual of :mod:`isvm.methods`.

- ``cd``: coordinate descent with shrinking; the fast default (exact steps on a point's
  coupled multipliers together, or greedy steps class by class where the classes are
  separate problems, as in 1-vs-all).
- ``smo``: the paper's Algorithm 1 (stochastic single-coordinate SMO).
- ``sgd``: the paper's Algorithm 2 (the same walk with an endogenous step eta).
- ``mu``: the multiplicative (exponentiated-gradient) update of Cristianini, Campbell
  and Shawe-Taylor, ``alpha <- min(C, alpha exp(eta (1 - Q alpha)))`` (bias-free, so the
  seed's lambda is 0), with a backtracked step; see :mod:`isvm.solvers.multiplicative`.
  It applies to every formulation (it needs no sign structure of Q); deterministic.

All of them take any feasible starting point (warm start; ``mu`` raises entries below a
small floor to it, since a multiplicative update cannot leave zero), never form the
NL x NL matrix, draw their randomness from an explicit seed and return a
:class:`SolverResult`; hitting the iteration cap is reported, never silent.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from isvm.methods import (
    Coding,
    Formulation,
    coefficient_matrix,
    get_formulation,
    separable_by_column,
)
from isvm.solvers import _core
from isvm.solvers.epochs import block_epochs, cd_epochs, stochastic_steps, threshold_blocks
from isvm.solvers.greedy import greedy_columns

SOLVERS = ("cd", "smo", "sgd", "mu")

#: default caps: cd counts epochs (passes over the variables), smo/sgd single steps,
#: mu tried multiplicative steps (each updates every variable)
DEFAULT_MAX_EPOCHS = 10_000
DEFAULT_MAX_STEPS_PER_VARIABLE = 2_000
DEFAULT_MAX_MU_STEPS = 1_000_000


@dataclass(frozen=True)
class SolverResult:
    """What a solve returns.

    ``alpha`` is (N, L) with zeros where a formulation has no variable;
    ``iterations`` counts epochs for cd (for greedy cd: the largest class's steps over
    its number of variables, rounded up; for threshold passes: the block steps over the
    points, rounded up), single steps for smo/sgd and tried
    multiplicative steps (accepted or not) for mu;
    ``kkt_violation`` is the final maximum |projected gradient| over all variables
    (whatever the stopping rule); ``duality_gap`` bounds ``||w - w*||^2 / 2``.
    """

    alpha: NDArray[np.float64]
    iterations: int
    converged: bool
    kkt_violation: float
    objective: float
    duality_gap: float
    solver: str


@dataclass
class SolverState:
    """Everything a numba solver call mutates, built once per problem."""

    K: NDArray[np.float64]
    coding: Coding
    alpha: NDArray[np.float64]
    S: NDArray[np.float64]
    ssum: NDArray[np.float64]

    @classmethod
    def start(
        cls, K: NDArray[np.float64], coding: Coding, alpha0: NDArray[np.float64] | None = None
    ) -> SolverState:
        """State at ``alpha0`` (zeros by default); scores computed with one matrix product."""
        n, n_classes = coding.var_mask.shape
        if alpha0 is None:
            alpha = np.zeros((n, n_classes))
            S = np.zeros((coding.n_columns, n))
        else:
            alpha = np.array(alpha0, dtype=np.float64, order="C")
            if alpha.shape != (n, n_classes):
                raise ValueError(f"alpha0 must have shape {(n, n_classes)}, got {alpha.shape}")
            alpha[~coding.var_mask] = 0.0
            S = np.ascontiguousarray((K @ coefficient_matrix(alpha, coding)).T)
        return cls(K, coding, alpha, S, S.sum(axis=0))

    @property
    def dual(self) -> _core.Dual:
        """The dual point and its scores, as the numba kernels take them."""
        return _core.Dual(self.alpha, self.S, self.ssum)


def variable_list(
    coding: Coding, points: NDArray[np.int64] | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Index arrays (var_i, var_j) of the problem's variables, restricted to ``points``."""
    mask = coding.var_mask
    if points is not None:
        keep = np.zeros(mask.shape[0], dtype=bool)
        keep[points] = True
        mask = mask & keep[:, None]
    var_i, var_j = np.nonzero(mask)
    return var_i.astype(np.int64), var_j.astype(np.int64)


def problem_of(
    K: NDArray[np.float64], coding: Coding, var_i: NDArray[np.int64], var_j: NDArray[np.int64]
) -> _core.Problem:
    """The numba :class:`~isvm.solvers._core.Problem` of these variables of ``coding``.

    The one place a problem is built from a coding; a problem over fewer variables
    is :func:`isvm.solvers._core.with_variables` of it.
    """
    return _core.Problem(
        K, var_i, var_j, coding.cols, coding.vals, float(coding.mean_coef), coding.margin
    )


def run_solver(
    state: SolverState,
    var_i: NDArray[np.int64],
    var_j: NDArray[np.int64],
    C: float,
    *,
    solver: str = "cd",
    tol: float = 1e-3,
    max_iter: int | None = None,
    seed: int = 0,
    shrinking: bool = True,
    block: bool = True,
    greedy: bool = True,
    eta: float = 1.0,
    criterion: str = "max",
    kkt_T: float | None = None,
    kkt_eps: float = 1e-6,
) -> tuple[int, bool, float]:
    """Run one solver in place on ``state`` over the listed variables.

    For cd, ``block=True`` (the default) updates all multipliers of one point
    together, exactly, wherever they are coupled (``block_sigma != 0``: ISVM,
    Weston-Watkins): with ``greedy=True`` (the default) in threshold passes
    (:func:`~isvm.solvers.epochs.threshold_blocks`, deterministic), with
    ``greedy=False`` in permuted epochs (:func:`~isvm.solvers.epochs.block_epochs`).
    With ``greedy=True`` a dual that is one binary problem per class (1-vs-all) is
    solved class by class with greedy steps
    (:func:`isvm.solvers.greedy.greedy_columns`, deterministic); with ``greedy=False``
    or ``block=False``, by single coordinates in a permuted order with shrinking
    (:func:`~isvm.solvers.epochs.cd_epochs`). The LOO engine's full fits pass
    ``greedy=False``: its folds start from the full solution, and cyclic cd's (more
    accurate than tol asks, where greedy stops just under it) leaves fewer folds to
    work on (docs/benchmarks.md).

    ``criterion`` applies to smo/sgd: ``"mean"`` is the paper's rule (mean KKT
    distance with resolution ``kkt_T`` below ``tol``; ``kkt_T`` defaults to ``tol``,
    as the paper sets theta = T), ``"max"`` stops on the maximum violation. cd
    always stops on the maximum violation.
    """
    coding = state.coding
    rng = _core.rng_state(np.uint64(seed))
    prob = problem_of(state.K, coding, var_i, var_j)
    dual = _core.Dual(state.alpha, state.S, state.ssum)
    if solver == "cd":
        cap = DEFAULT_MAX_EPOCHS if max_iter is None else int(max_iter)
        if block and greedy and separable_by_column(coding):
            return greedy_columns(prob, float(C), dual, tol, cap, shrinking)
        if block and coding.block_sigma != 0.0:
            blocks = _core.Blocks(
                np.unique(var_i), coding.var_mask, coding.block_w, float(coding.block_sigma)
            )
            if greedy:
                return threshold_blocks(prob, blocks, float(C), dual, tol, cap)
            epochs, converged, viol, _ = block_epochs(
                prob, blocks, float(C), dual, tol, cap, rng, _core.NO_TARGET, _core.FALSE
            )
        else:
            epochs, converged, viol, _ = cd_epochs(
                prob, float(C), dual, tol, cap, rng, shrinking, _core.NO_TARGET, _core.FALSE
            )
        return epochs, converged, viol
    if solver in ("smo", "sgd"):
        if criterion not in ("mean", "max"):
            raise ValueError(f"criterion must be 'mean' or 'max', got {criterion!r}")
        cap = DEFAULT_MAX_STEPS_PER_VARIABLE * max(len(var_i), 1) if max_iter is None else max_iter
        rule = _core.StochasticRule(
            1.0 if solver == "smo" else float(eta),
            tol if kkt_T is None else kkt_T,
            kkt_eps,
            tol,
            criterion == "mean",
        )
        return stochastic_steps(prob, float(C), dual, rule, tol, int(cap), rng)
    if solver == "mu":
        from isvm.solvers.multiplicative import WARM_FLOOR, mu_epochs

        cap = DEFAULT_MAX_MU_STEPS if max_iter is None else int(max_iter)
        steps, converged, viol, _, _ = mu_epochs(
            prob, float(C), dual, tol, cap, WARM_FLOOR, np.zeros(0)
        )
        return steps, converged, viol
    raise ValueError(f"unknown solver {solver!r}; choose one of {SOLVERS}")


def check_weights(weights: ArrayLike, n: int) -> NDArray[np.float64]:
    """Per-point weights as positive finite float64 of length n, or a ValueError."""
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample weights must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or not np.all(w > 0):
        raise ValueError(
            "sample weights must be finite and > 0 (drop the points of weight 0: "
            "they have no multipliers)"
        )
    return w


def weighted(
    K: NDArray[np.float64], coding: Coding, weights: NDArray[np.float64]
) -> tuple[NDArray[np.float64], Coding]:
    """A weighted problem as an unweighted one with per-point margins.

    Weight ``s_i`` bounds point i's multipliers by ``C s_i``. With ``alpha = s beta``
    the dual ``sum alpha - 1/2 alpha'Q alpha, 0 <= alpha_ij <= C s_i`` becomes
    ``sum_ij s_i beta_ij - 1/2 beta' Q~ beta, 0 <= beta <= C``, where ``Q~`` is Q on
    the kernel ``K~ = diag(s) K diag(s)``: the same box for every variable (so every
    solver, certificate and C-path rule applies unchanged) and the weights as the
    points' margins (:attr:`isvm.methods.Coding.margin`). Returns ``(K~, coding with
    margin s)``; multiply the solution's rows by ``s`` for the weighted multipliers.
    Scores at a point under ``K~`` are ``s_p`` times its scores under K, so its
    argmax is unchanged.
    """
    return weighted_kernel(K, weights), weighted_coding(coding, weights)


def weighted_kernel(K: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """``diag(s) K diag(s)``: the kernel half of :func:`weighted` (a copy)."""
    return K * weights[:, None] * weights[None, :]


def weighted_coding(coding: Coding, weights: NDArray[np.float64]) -> Coding:
    """The coding half of :func:`weighted`: the weights as the points' margins."""
    return replace(coding, margin=weights)


def check_problem(
    K: ArrayLike, y: ArrayLike, n_classes: int, C: float, tol: float
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(K as C-contiguous float64, y as int64), or a ValueError saying what is wrong.

    The checks every dual solver makes: a square finite kernel with one row per label,
    labels in 0..n_classes-1, ``C > 0`` and ``tol > 0``.
    """
    K = np.ascontiguousarray(K, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or y.ndim != 1 or K.shape[0] != y.shape[0]:
        raise ValueError(f"K must be square with one row per label; got {K.shape}, {y.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("the kernel matrix contains NaN or infinite values")
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C!r}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"labels must lie in 0..{n_classes - 1}")
    return K, y


def solve(
    K: ArrayLike,
    y: ArrayLike,
    n_classes: int,
    method: str | Formulation,
    C: float,
    *,
    solver: str = "cd",
    tol: float = 1e-3,
    max_iter: int | None = None,
    seed: int = 0,
    alpha0: ArrayLike | None = None,
    shrinking: bool = True,
    block: bool = True,
    eta: float = 0.8,
    criterion: str | None = None,
    sample_weight: ArrayLike | None = None,
) -> SolverResult:
    """Maximise the dual of ``method`` on kernel K with labels y in 0..n_classes-1.

    ``sample_weight`` (positive, one per point) bounds point i's multipliers by
    ``C sample_weight[i]`` (solved as :func:`weighted` says); the result's ``alpha``
    is the weighted problem's, its KKT violation in the scaled variables.

    ``eta`` is Algorithm 2's step (sgd only; ``mu`` chooses its own step by
    backtracking). ``criterion`` (smo/sgd) defaults to the paper's mean-KKT rule.
    Raises ValueError on bad arguments.
    """
    formulation = get_formulation(method) if isinstance(method, str) else method
    K, y = check_problem(K, y, n_classes, C, tol)
    if solver == "sgd" and not 0 < eta < 2:
        raise ValueError(f"eta must lie in (0, 2) for convergence, got {eta!r}")
    coding = formulation.encode(y, n_classes)
    weights = None if sample_weight is None else check_weights(sample_weight, y.shape[0])
    if weights is not None:
        K, coding = weighted(K, coding, weights)
        if alpha0 is not None:
            alpha0 = np.asarray(alpha0, dtype=np.float64) / weights[:, None]
    if alpha0 is not None:
        alpha0 = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, C)
    state = SolverState.start(K, coding, alpha0)
    var_i, var_j = variable_list(coding)
    iterations, converged, _ = run_solver(
        state,
        var_i,
        var_j,
        C,
        solver=solver,
        tol=tol,
        max_iter=max_iter,
        seed=seed,
        shrinking=shrinking,
        block=block,
        eta=eta,
        criterion=criterion or "mean",
    )
    obj, gap, viol = _core.optimality(
        var_i,
        var_j,
        state.alpha,
        coding.cols,
        coding.vals,
        coding.mean_coef,
        coding.margin,
        float(C),
        state.S,
        state.ssum,
    )
    return SolverResult(
        alpha=state.alpha if weights is None else state.alpha * weights[:, None],
        iterations=int(iterations),
        converged=bool(converged),
        kkt_violation=float(viol),
        objective=float(obj),
        duality_gap=float(gap),
        solver=solver,
    )
