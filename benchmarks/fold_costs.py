"""Where one grid point's fold time goes: the LOO engine's folds taken apart.

For one cell (data set, Ns, method, gamma; the paper's subsample 0, seed 2012, z-scored
unless ``--scaling minmax``) it walks the paper's C path up to the largest requested
C and, at each requested C, takes the fold kernel's inputs as the engine hands them
over and times, one thread, each piece on all N folds:

- ``fit_folds``: the whole grid point's folds (ms per fold) and their epochs per fold;
- active-set mode (an exact full fit): the first face solve of every fold with and
  without its score update, the O(N^2 L) pass over K that a face solve ends with, and
  one dense score update (every point changed);
- cd mode: one certificate (``prove``: held-out scores summed afresh, the
  suboptimality bound over every variable, the verdict), its score refresh alone, the
  try on the fold's solution at the previous C (and how many folds it proves), and
  the duality gaps of the three cd starts.

    python benchmarks/fold_costs.py yeast:500:isvm:5 --C 5.1 20.1 45.1
    python benchmarks/fold_costs.py letter:500:isvm:5 --C 10.1 25.1 40.1
"""

from __future__ import annotations

import argparse
import inspect
import re
import time

import numpy as np
from _cells import paper_subsample, parse_cell
from numba import njit

import isvm.loo.driver as driver
from isvm.loo import c_grid, loo_grid
from isvm.loo import fold_update as fu
from isvm.loo import folds as fo
from isvm.loo.bundles import FoldStore
from isvm.loo.settings import RIDGE
from isvm.solvers import _core, certify
from isvm.solvers._core import Dual

C_GRID = c_grid(0.1, 50.0, 0.5)


def _edited(fn, old: str, new: str) -> str:
    """``fn``'s source without its decorator, ``old`` replaced by ``new``."""
    source = re.sub(r"^@njit\(.*\)\n", "", inspect.getsource(fn), flags=re.MULTILINE)
    if old not in source:  # the engine changed: say so rather than time the wrong code
        raise RuntimeError(f"fold_update.{fn.__name__} no longer contains {old!r}")
    return source.replace(old, new)


def _without_scores():
    """``fold_update._face_solution`` whose ``_face_point`` skips its final score
    update, compiled here from the engine's own source."""
    namespace = dict(vars(fu))
    update = "    _core.apply_point_steps(coef, c, K, S, ssum)\n"
    exec(_edited(fu._face_point, update, ""), namespace)  # noqa: S102
    namespace["_face_point"] = njit(namespace["_face_point"])
    name = "def _face_solution_no_scores("
    exec(_edited(fu._face_solution, "def _face_solution(", name), namespace)  # noqa: S102
    return njit(namespace["_face_solution_no_scores"])


def _first_face_loop(face):
    @njit
    def loop(prob, C, full, fac, cfg, out):
        for p in range(prob.K.shape[0]):
            st = fac.status.copy()
            removal = fu._removal(prob, np.int64(p), C, full, fac, st)
            work = fu.touched_work(fac.free_vars.shape[0], cfg.active_max_changed)
            face(prob, C, full, fac, removal, st, work, 0, out, RIDGE)

    return loop


@njit
def _cd_pieces(prob, blocks, cert, step, full, store, which):
    """Run one piece on every fold: 1 prove on the stored solution, 2 its score refresh,
    3-5 the gaps of the starts without p, shifted, scaled. Returns proofs (piece 1)."""
    K, var_i, var_j, cols, vals, c, margin = prob
    proofs = 0
    for p in range(K.shape[0]):
        fold, _ = fo._fold_problem(np.int64(p), prob)
        target = fo._target(np.int64(p), cert, blocks)
        alpha = store.alpha[p].copy()
        S = store.S[p].copy()
        ssum = store.ssum[p].copy()
        if which == 1:
            proofs += certify.prove(fold, alpha, step.C, S, ssum, target, False)[0]
        elif which == 2:
            _core.refresh_point_scores(p, var_i, var_j, alpha, cols, vals, c, K, S, ssum)
        elif which == 3:
            fo._without_point(np.int64(p), prob, full, Dual(alpha, S, ssum))
            _core.optimality(fold.var_i, fold.var_j, alpha, cols, vals, c, margin, step.C, S, ssum)
        elif which == 4:
            a, s2, ss = fo._shifted_start(np.int64(p), prob, step.C, full, step, store)
            _core.optimality(fold.var_i, fold.var_j, a, cols, vals, c, margin, step.C, s2, ss)
        elif which == 5:
            r = step.scale_prev
            a, s2, ss = store.alpha[p] * r, store.S[p] * r, store.ssum[p] * r
            _core.optimality(fold.var_i, fold.var_j, a, cols, vals, c, margin, step.C, s2, ss)
    return proofs


def _ms_per_fold(fn, n, *args):
    """Milliseconds per fold of ``fn(*args)`` over all n folds (compiled first)."""
    fn(*args)
    start = time.perf_counter()
    result = fn(*args)
    return (time.perf_counter() - start) / n * 1e3, result


def capture(X, y, method: str, gamma: float, Cs: list[float]) -> list[tuple]:
    """The fold kernel's inputs at each C of ``Cs`` (the store as it was before), with
    the grid point's own ``fit_folds`` time and epochs."""
    caught = []
    real = driver.fit_folds

    def spy(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride):
        if any(abs(step.C - C) < 1e-9 for C in Cs):
            before = FoldStore(*[a.copy() for a in store])
            copy = FoldStore(*[a.copy() for a in store])
            start = time.perf_counter()
            real(prob, blocks, cert, step, full, fac, copy, cfg, out, first, stride)
            seconds = time.perf_counter() - start
            caught.append(
                (prob, blocks, cert, step, full, fac, before, cfg, seconds, out.epochs.mean())
            )
        return real(prob, blocks, cert, step, full, fac, store, cfg, out, first, stride)

    driver.fit_folds = spy
    try:
        loo_grid(X, y, method, [gamma], C_GRID[C_GRID <= max(Cs) + 1e-9])
    finally:
        driver.fit_folds = real
    return caught


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cell", help="DATASET:NS:METHOD:GAMMA, e.g. yeast:500:isvm:5")
    parser.add_argument("--C", type=float, nargs="+", default=[5.1, 20.1, 45.1])
    parser.add_argument("--scaling", default="zscore", choices=["zscore", "minmax"])
    args = parser.parse_args()
    cell = parse_cell(parser, args.cell, "yeast:500:isvm:5")
    missing = [C for C in args.C if not np.isclose(C_GRID, C).any() or C <= C_GRID[0]]
    if missing:
        parser.error(f"--C {missing}: each must be on the paper's grid (0.6, 1.1, ..., 49.6)")
    ns, method, gamma = cell.ns, cell.method, cell.gamma
    X, y = paper_subsample(cell, args.scaling)
    loo_grid(X, y, method, [gamma], C_GRID[::10])  # compile outside the timings
    with_scores = _first_face_loop(fu._face_solution)
    no_scores = _first_face_loop(_without_scores())
    print(f"{args.cell}, {args.scaling}; ms per fold, all {ns} folds, one thread")
    for prob, blocks, cert, step, full, fac, store, cfg, seconds, epochs in capture(
        X, y, method, gamma, [float(C) for C in args.C]
    ):
        n = prob.K.shape[0]
        head = f"C = {step.C:g}: fit_folds {seconds / n * 1e3:.3f} ms, {epochs:.2f} epochs per fold"
        if fac.status.shape[0] > 0:
            out = Dual(np.empty_like(full.alpha), np.empty_like(full.S), np.empty_like(full.ssum))
            with_ms, _ = _ms_per_fold(with_scores, n, prob, step.C, full, fac, cfg, out)
            without_ms, _ = _ms_per_fold(no_scores, n, prob, step.C, full, fac, cfg, out)
            coef = np.random.default_rng(0).random((n, full.S.shape[0]))
            S, ssum = full.S.copy(), full.ssum.copy()
            dense_ms, _ = _ms_per_fold(_core.apply_point_steps, 1, coef, prob.c, prob.K, S, ssum)
            print(
                f"{head}; active-set mode, {fac.free_vars.shape[0]} free: first face solve "
                f"{with_ms:.3f} ms, without its score update {without_ms:.3f} ms; one dense "
                f"score update {dense_ms:.3f} ms"
            )
        else:
            pieces = [
                _ms_per_fold(_cd_pieces, n, prob, blocks, cert, step, full, store, w)
                for w in range(1, 6)
            ]
            (prove_ms, proofs), (refresh_ms, _), *gaps = pieces
            print(
                f"{head}; cd mode: prove {prove_ms:.3f} ms (its score refresh {refresh_ms:.3f}); "
                f"the previous C's solution proves {proofs} of {n}; start gaps (without p, "
                f"shifted, scaled) {', '.join(f'{g:.3f}' for g, _ in gaps)} ms (with their setup)"
            )


if __name__ == "__main__":
    main()
