"""ISVM's free-face solve through its structure, against the dense factorisation.

A measurement for issue 23's next lead, not an engine path. ISVM's dual matrix is
``Q[(i,j),(i',j')] = K_ii' y_ij y_i'j' (delta_jj' - c)`` with ``c = 1/L``: on a free
face F it is ``H = D - c B K B'``, where ``D`` is block diagonal by class
(``diag(y_j) K[F_j, F_j] diag(y_j)``, F_j the points whose class-j multiplier is free)
and ``B`` maps variable (i, j) to ``y_ij e_i``. So ``H x = r`` needs L factorisations
of at most N x N and one N x N system, not one of size |F| (up to N L):

    x = D^-1 (r + c B t),   (I - c K G) t = K B' D^-1 r,   G = B' D^-1 B.

For one subsample per cell (z-scored, gamma 5, the sets of a cd solve to tol 1e-6 at
C) it prints, side by side, the cd solve's time, the structured factorisation (L
pivoted Cholesky factorisations, their inverses, the N x N LU) and one solve, the dense
pivoted Cholesky of H_FF (where |F| <= --max-dense), the face solution's largest KKT
violation and its distance from the dense one. Pivoted factorisations drop the
variables that duplicate points make dependent (they keep their cd values), as the
engine's own finish does.

    python benchmarks/isvm_face.py                       # yeast, vowel, letter Ns 500
    python benchmarks/isvm_face.py --cells yeast:500 --C 5.1 20.1 45.1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.linalg as sla
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.seeding import rng
from isvm.solvers import solve

CELLS = [("yeast", 500), ("vowel", 500), ("letter", 500)]


def pivoted_keep(A: np.ndarray) -> np.ndarray:
    """Indices of a maximal well-conditioned subset of PSD ``A`` (LAPACK dpstrf)."""
    _, piv, rank, _ = lapack.dpstrf(A, lower=1, tol=1e-10 * max(A.diagonal().max(), 1.0))
    return np.sort(piv[:rank] - 1)


def q_times(K: np.ndarray, Y: np.ndarray, A: np.ndarray, c: float) -> np.ndarray:
    """Q alpha as an N x L array, for multipliers ``A`` (N x L)."""
    s = (Y * A).sum(axis=1)
    return Y * (K @ (Y * A)) - c * Y * (K @ s)[:, None]


def structured_solver(K: np.ndarray, Y: np.ndarray, free: np.ndarray, c: float):
    """Factorise ``H_FF`` through its structure; returns (solve, kept face mask)."""
    n, n_classes = Y.shape
    kept = np.zeros_like(free)
    inverses = []
    G = np.zeros((n, n))
    for j in range(n_classes):
        Fj = np.flatnonzero(free[:, j])
        Fj = Fj[pivoted_keep(K[np.ix_(Fj, Fj)])]
        kept[Fj, j] = True
        Dj = sla.cho_factor(K[np.ix_(Fj, Fj)], lower=True, check_finite=False)
        inv = sla.cho_solve(Dj, np.eye(Fj.size), check_finite=False)
        inverses.append((Fj, inv))
        G[np.ix_(Fj, Fj)] += inv  # the signs y_ij cancel in B' D^-1 B
    lu = sla.lu_factor(np.eye(n) - c * K @ G, check_finite=False)

    def apply_d_inverse(R: np.ndarray) -> np.ndarray:
        out = np.zeros_like(R)
        for j, (Fj, inv) in enumerate(inverses):
            out[Fj, j] = Y[Fj, j] * (inv @ (Y[Fj, j] * R[Fj, j]))
        return out

    def solve_face(R: np.ndarray) -> np.ndarray:
        t = sla.lu_solve(lu, K @ (Y * apply_d_inverse(R)).sum(axis=1), check_finite=False)
        return apply_d_inverse(R + c * Y * t[:, None])

    return solve_face, kept


def max_violation(A: np.ndarray, grad: np.ndarray, C: float) -> float:
    """Largest KKT violation of multipliers ``A`` with gradient ``grad`` in [0, C]."""
    low, high = A <= 0.0, A >= C
    v = np.where(low, np.maximum(grad, 0), np.where(high, np.maximum(-grad, 0), np.abs(grad)))
    return float(v.max())


def run_cell(name: str, n: int, C: float, gamma: float, max_dense: int) -> str:
    data = load_dataset(name, source="bundled", scaling="zscore")
    pick = rng(0, "benchmark", name, n).choice(data.y.shape[0], n, replace=False)
    y = np.unique(data.y[pick], return_inverse=True)[1]
    n_classes = int(y.max()) + 1
    K = rbf_kernel(data.X[pick], gamma=gamma)
    c = 1.0 / n_classes
    start = time.perf_counter()
    result = solve(K, y, n_classes, "isvm", C, tol=1e-6, max_iter=20_000)
    t_cd = time.perf_counter() - start
    A = result.alpha.reshape(n, n_classes)
    Y = -np.ones((n, n_classes))
    Y[np.arange(n), y] = 1.0
    free = (A > 0.0) & (A < C)

    start = time.perf_counter()
    solve_face, kept = structured_solver(K, Y, free, c)
    t_factor = time.perf_counter() - start
    fixed = np.where(kept, 0.0, A)  # at a bound, or dropped by the pivoting
    R = np.where(kept, 1.0 - q_times(K, Y, fixed, c), 0.0)
    start = time.perf_counter()
    X = solve_face(R)
    t_solve = time.perf_counter() - start
    A_face = fixed + X
    violation = max_violation(A_face, 1.0 - q_times(K, Y, A_face, c), C)

    dense = "-"
    if kept.sum() <= max_dense:
        v = np.flatnonzero(kept.ravel())
        pi, pj = np.divmod(v, n_classes)
        yv = Y[pi, pj]
        start = time.perf_counter()
        H = K[np.ix_(pi, pi)] * np.outer(yv, yv) * ((pj[:, None] == pj[None, :]) - c)
        t_form = time.perf_counter() - start
        start = time.perf_counter()
        factor, piv, rank, _ = lapack.dpstrf(H, lower=1, tol=1e-10)
        t_dense = time.perf_counter() - start
        rank_note = "" if rank == H.shape[0] else f", rank {rank} of {H.shape[0]}"
        dense = f"{t_form:.2f} + {t_dense:.2f}{rank_note}"
        if rank == H.shape[0]:
            order = piv - 1
            x = np.empty(rank)
            x[order] = sla.cho_solve((factor, True), R.ravel()[v][order], check_finite=False)
            dense += f" (max diff {np.abs(x - X.ravel()[v]).max():.1e})"
    return (
        f"| {name} | {n} | {n_classes} | {C:g} | {int(free.sum())} ({int((A >= C).sum())} at C) "
        f"| {t_cd:.2f} ({result.iterations}) | {1e3 * t_factor:.0f} | {1e3 * t_solve:.1f} "
        f"| {violation:.1e} | {dense} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", metavar="DATA:NS", help="e.g. yeast:500 letter:200")
    parser.add_argument("--C", nargs="+", type=float, default=[5.1, 20.1, 45.1])
    parser.add_argument("--gamma", type=float, default=5.0)
    parser.add_argument("--max-dense", type=int, default=6000, help="largest face factorised dense")
    args = parser.parse_args()
    cells = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cells] if args.cells else CELLS
    print(
        "| data | Ns | L | C | free (at C) | cd to 1e-6 s (epochs) | structured factor ms "
        "| solve ms | KKT violation | dense form + pivoted Cholesky s |"
    )
    print("|" + "---|" * 10)
    with threadpool_limits(1):
        solve(np.eye(4), np.array([0, 1, 0, 1]), 2, "isvm", 1.0)  # compile outside the timings
        for name, n in cells:
            for C in args.C:
                print(run_cell(name, n, C, args.gamma, args.max_dense), flush=True)


if __name__ == "__main__":
    main()
