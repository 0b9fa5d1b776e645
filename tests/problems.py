"""Random test problems shared by the test modules, each defined once.

Imported as ``from problems import ...`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

import numpy as np


def random_points(gen: np.random.Generator, n: int, n_classes: int, m: int, n_new: int):
    """(X, y, X_new): ``n`` points uniform in [0,1]^m with every class present (labels
    shuffled) and ``n_new`` fresh points, drawn from ``gen`` in that order."""
    X = gen.random((n, m))
    y = gen.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)
    gen.shuffle(y)
    return X, y, gen.random((n_new, m))


def rbf_problem(seed: int, n: int, n_classes: int, gamma: float = 5.0):
    """(K, y): :func:`random_points` in [0,1]^4 under the paper's Gaussian kernel."""
    from isvm.kernels import rbf_kernel

    X, y, _ = random_points(np.random.default_rng(seed), n, n_classes, 4, 0)
    return rbf_kernel(X, gamma=gamma), y


def coding_qp(K: np.ndarray, coding, C: float, points=None) -> tuple[np.ndarray, float]:
    """(alpha as an N x L matrix, dual objective) of :func:`dual_qp` over the coding's
    variables of ``points`` (all by default); the others are 0."""
    from isvm.methods import dual_matrix
    from isvm.solvers import variable_list

    var_i, var_j = variable_list(coding, points)
    keep = var_i * coding.var_mask.shape[1] + var_j
    Q = dual_matrix(K, coding)[np.ix_(keep, keep)]  # dual_matrix is over every (i, j)
    a = dual_qp(Q, C)
    alpha = np.zeros(coding.var_mask.shape)
    alpha[var_i, var_j] = a
    return alpha, float(a.sum() - 0.5 * a @ Q @ a)


def clustered(seed: int, n: int, n_classes: int, n_features: int = 4, spread: float = 0.25):
    """(X, y): classes in turn, each a Gaussian blob of width ``spread`` about a random
    centre in [0,1]^M, clipped to [0,1]^M."""
    gen = np.random.default_rng(seed)
    centres = gen.random((n_classes, n_features))
    y = np.arange(n) % n_classes
    X = np.clip(centres[y] + spread * gen.standard_normal((n, n_features)), 0, 1)
    return X, y


def dual_qp(Q: np.ndarray, C: float) -> np.ndarray:
    """The box dual ``max 1'x - x'Qx/2, 0 <= x <= C`` solved by an interior-point QP
    (clarabel, tolerances 1e-12): the independent reference of the solver tests."""
    from qpsolvers import solve_qp

    n = Q.shape[0]
    x = solve_qp(
        0.5 * (Q + Q.T),
        -np.ones(n),
        lb=np.zeros(n),
        ub=np.full(n, C),
        solver="clarabel",
        tol_gap_abs=1e-12,
        tol_gap_rel=1e-12,
        tol_feas=1e-12,
    )
    return np.clip(x, 0, C)
