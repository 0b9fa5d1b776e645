"""The exact LOO engine against refitting LIBSVM fold by fold, in both feature regimes.

Side by side in one run, for one subsample per (data set, Ns, scaling): the engine
(:func:`isvm.loo.loo_grid`) and scikit-learn's ``SVC(kernel="precomputed")`` (LIBSVM,
one-vs-one) refitted on every sampled fold, at stretches of the paper's C path
(C = 0.1, 0.6, ..., 49.6; gamma 5 and 10):

- ``small``: C = 0.6, 1.1, 1.6; ``middle``: C = 10.1, 10.6, 11.1; ``large``: C = 40.1,
  40.6, 41.1. The engine walks the path as a study does, from C = 0.1 up through
  the last stretch, and only the stretches' grid points are counted (their rows'
  ``seconds``: full fit and folds). ``--cold`` instead starts each stretch afresh at
  the C before it (C = 0.1, 9.6, 39.6, run but not counted): what a search that
  starts mid-path pays, and what this table measured up to round 20 (at a cold
  start the engine has no fold store to warm its folds and picks its mode from a
  probe alone; docs/benchmarks.md, round 21).

Reported: the engine's milliseconds per fold-fit (its time at the stretch's grid
points / (3 x N), both gammas pooled), LIBSVM's per fold-fit (``--folds`` evenly
spaced folds per grid point), and their ratio (LIBSVM / engine). ``z-score`` is the
study's default scaling, ``[0, 1]`` the min-max one.

    python benchmarks/loo_regimes.py                  # the issue's cells (about 15 min)
    python benchmarks/loo_regimes.py --quick          # letter Ns 200 only
    PYTHONPATH=OLD/src python benchmarks/loo_regimes.py --cells letter:200   # another engine
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from sklearn.svm import SVC

from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.loo import c_grid, loo_grid
from isvm.seeding import rng

STRETCHES = {"small": 1, "middle": 20, "large": 80}  # index of the first timed C
CELLS = [("letter", 200), ("letter", 500), ("mnist", 500), ("vowel", 500), ("vehicle", 500)]
SCALINGS = {"zscore": "z-score", "minmax": "[0, 1]"}


def libsvm_ms_per_fold(K: np.ndarray, y: np.ndarray, C: float, folds: np.ndarray) -> float:
    """Mean milliseconds of one LIBSVM fit-and-predict per held-out fold."""
    n = len(y)
    start = time.perf_counter()
    for p in folds:
        keep = np.arange(n) != p
        clf = SVC(kernel="precomputed", C=C).fit(K[np.ix_(keep, keep)], y[keep])
        clf.predict(K[p : p + 1, keep])
    return 1000 * (time.perf_counter() - start) / len(folds)


def stretch_rows(X, y, method, gammas, Cs, kernels, cold: bool) -> pd.DataFrame:
    """The engine's grid rows with their path index (column ``index``), for every gamma.

    As a study walks (one path from C = 0.1 through the last stretch), or with
    ``cold`` each stretch's own path from the C before it.
    """
    last = max(STRETCHES.values()) + 3
    starts = [first - 1 for first in STRETCHES.values()] if cold else [0]
    frames = []
    for g in gammas:
        for start in starts:
            stop = start + 4 if cold else last
            frame = loo_grid(X, y, method, [g], Cs[start:stop], kernel_cache=kernels)
            frames.append(frame.assign(index=np.arange(start, stop)))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["ova", "ww", "isvm"])
    parser.add_argument("--scalings", nargs="+", default=list(SCALINGS), choices=list(SCALINGS))
    parser.add_argument("--folds", type=int, default=12, help="LIBSVM folds per grid point")
    parser.add_argument("--quick", action="store_true", help="letter Ns 200 only")
    parser.add_argument(
        "--cold", action="store_true", help="start each stretch afresh at the C before it"
    )
    parser.add_argument(
        "--cells", nargs="+", metavar="DATA:NS", help="other cells, e.g. letter:200 vehicle:500"
    )
    parser.add_argument("--out", help="also write the table as Markdown here")
    args = parser.parse_args()
    cells = CELLS[:1] if args.quick else CELLS
    if args.cells:
        cells = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cells]
    Cs = c_grid(0.1, 50.0, 0.5)
    gammas = [5.0, 10.0]
    warm = load_dataset("wine", source="bundled", scaling="zscore")
    pick = rng(0, "warm-up").choice(warm.y.shape[0], 30, replace=False)
    for method in args.methods:  # compile outside the timings
        loo_grid(warm.X[pick], warm.y[pick], method, [5.0], [0.5, 1.0])
        loo_grid(warm.X[pick], warm.y[pick], method, [5.0], [0.5, 1.0], active_set=False)
    header = (
        "| data | Ns | L | features | C stretch | method | engine ms/fold-fit "
        "| uncertified | LIBSVM ms/fold-fit | LIBSVM / engine |"
    )
    lines = [header, "|" + "---|" * 10]
    print("\n".join(lines), flush=True)
    for scaling in args.scalings:
        for name, n in cells:
            data = load_dataset(name, source="bundled", scaling=scaling)
            idx = rng(0, "benchmark", name, n).choice(data.y.shape[0], n, replace=False)
            X, y = data.X[idx], data.y[idx]
            kernels = {g: rbf_kernel(X, gamma=g) for g in gammas}
            folds = np.unique(np.linspace(0, n - 1, args.folds).round().astype(int))
            L = np.unique(y).shape[0]
            libsvm = {
                stretch: np.mean(
                    [
                        libsvm_ms_per_fold(kernels[g], y, C, folds)
                        for g in gammas
                        for C in Cs[first : first + 3]
                    ]
                )
                for stretch, first in STRETCHES.items()
            }
            for method in args.methods:
                rows = stretch_rows(X, y, method, gammas, Cs, kernels, args.cold)
                for stretch, first in STRETCHES.items():
                    timed = rows[rows["index"].between(first, first + 2)]
                    ours = 1000 * timed["seconds"].sum() / (len(timed) * n)
                    line = (
                        f"| {name} | {n} | {L} | {SCALINGS[scaling]} | {stretch} "
                        f"({Cs[first]:g}-{Cs[first + 2]:g}) | {method} | {ours:.3f} "
                        f"| {int(timed['n_uncertified'].sum())} | {libsvm[stretch]:.2f} "
                        f"| {libsvm[stretch] / ours:.1f} |"
                    )
                    print(line, flush=True)
                    lines.append(line)
    walk = "the path from C = 0.1"
    if args.cold:
        walk = "each stretch started afresh at the C before it"
    note = (
        f"\nOne subsample per cell; gamma 5 and 10 pooled; the engine walks {walk}; "
        f"LIBSVM timed on {args.folds} evenly spaced folds per grid point; one thread."
    )
    print(note)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join([*lines, note, ""]))


if __name__ == "__main__":
    main()
