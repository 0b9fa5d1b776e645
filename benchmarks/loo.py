"""Benchmark the exact LOO engine against refitting from zero and against LIBSVM.

For one subsample per (data set, N) it times, side by side in one run:

- ``ours``: :func:`isvm.loo.loo_grid` over the paper's grid (gamma 5 and 10,
  C = 0.1, 0.6, ..., 49.6: 200 grid points, every fold);
- ``(a) refit``: the same cd solver refitting every fold from zero
  (:func:`isvm.loo.loo_refit`) at tol 1e-3;
- ``(b) LIBSVM``: scikit-learn ``SVC(kernel="precomputed")`` 1-vs-rest
  (``OneVsRestClassifier``), refitting every fold.

The baselines are slow, so by default they run on every ``--every``-th C of the grid
(LIBSVM: every ``--every-libsvm``-th, if given; all folds) and their time is scaled to
the whole grid; the output says so.
Ratios are baseline time / our time over the whole grid; per-fold-fit times are
total time / (grid points x N). Run: ``python benchmarks/loo.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.loo import c_grid, loo_grid, loo_refit
from isvm.seeding import rng


def libsvm_loo(K: np.ndarray, y: np.ndarray, C: float) -> float:
    """LOO accuracy of scikit-learn's SVC 1-vs-rest on a precomputed kernel."""
    n = len(y)
    hits = 0
    for p in range(n):
        keep = np.arange(n) != p
        if np.unique(y[keep]).shape[0] < 2:
            continue
        clf = OneVsRestClassifier(SVC(kernel="precomputed", C=C))
        clf.fit(K[np.ix_(keep, keep)], y[keep])
        hits += int(clf.predict(K[p : p + 1, keep])[0] == y[p])
    return hits / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["wine", "vehicle", "letter"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[50, 100, 200])
    parser.add_argument("--methods", nargs="+", default=["isvm", "ova", "ww"])
    parser.add_argument("--every", type=int, default=20, help="baselines on every k-th C")
    parser.add_argument(
        "--every-libsvm", type=int, help="LIBSVM baseline on every k-th C (default: --every)"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="wine only, N = 50 and 100")
    parser.add_argument("--out", help="also write the table as Markdown here")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.sizes = ["wine"], [50, 100]
    gammas = [5.0, 10.0]
    Cs = c_grid(0.1, 50.0, 0.5)
    sub_Cs = Cs[:: args.every]
    scale = len(Cs) / len(sub_Cs)
    lib_Cs = Cs[:: args.every_libsvm or args.every]
    lib_scale = len(Cs) / len(lib_Cs)
    warm = load_dataset("wine", source="bundled", scaling="minmax")
    pick = rng(0, "warm-up").choice(warm.y.shape[0], 30, replace=False)
    loo_grid(warm.X[pick], warm.y[pick], "isvm", [5.0], [1.0])  # compile outside the timings
    rows = []
    header = (
        "| data | N | L | method | ours s | ours ms/fold-fit | uncertified | (a) refit s* "
        "| (a)/ours | (b) LIBSVM s* | (b)/ours |"
    )
    print(header)
    print("|" + "---|" * 11)
    for name in args.datasets:
        data = load_dataset(name, source="bundled", scaling="minmax")
        for n in args.sizes:
            if n >= data.y.shape[0]:
                print(f"| {name} | {n} | skipped: the data set has {data.y.shape[0]} rows |")
                continue
            idx = rng(0, "benchmark", name, n).choice(data.y.shape[0], n, replace=False)
            X, y = data.X[idx], data.y[idx]
            L = np.unique(y).shape[0]
            libsvm = None
            for method in args.methods:
                cache: dict = {}
                t = time.perf_counter()
                frame = loo_grid(X, y, method, gammas, Cs, threads=args.threads, kernel_cache=cache)
                ours = time.perf_counter() - t
                t = time.perf_counter()
                loo_refit(X, y, method, gammas, sub_Cs, kernel_cache=cache)
                refit = (time.perf_counter() - t) * scale
                if libsvm is None:
                    t = time.perf_counter()
                    for gamma in gammas:
                        K = rbf_kernel(X, gamma=gamma)
                        for C in lib_Cs:
                            libsvm_loo(K, y, C)
                    libsvm = (time.perf_counter() - t) * lib_scale
                per_fit = 1000 * ours / (len(frame) * n)
                row = (
                    f"| {name} | {n} | {L} | {method} | {ours:.1f} | {per_fit:.3f} | "
                    f"{int(frame['n_uncertified'].sum())} | {refit:.1f} | {refit / ours:.1f} | "
                    f"{libsvm:.1f} | {libsvm / ours:.1f} |"
                )
                print(row, flush=True)
                rows.append(row)
    note = (
        f"\n*baselines timed on every {args.every}-th C ({len(sub_Cs)} of {len(Cs)} values, "
        f"all folds; LIBSVM on every {args.every_libsvm or args.every}-th, {len(lib_Cs)} "
        f"values) and scaled to the whole grid; threads={args.threads}."
    )
    print(note)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join([header, "|" + "---|" * 11, *rows, note, ""]))


if __name__ == "__main__":
    main()
