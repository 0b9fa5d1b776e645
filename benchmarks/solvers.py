"""Time per fit of each method x solver, side by side with LIBSVM 1-vs-rest.

Data: scikit-learn's bundled digits (8x8 images, 64 features scaled to [0, 1]):
all ten classes for L = 10, and the three most confused digits {3, 5, 8} for
L = 3, subsampled (stratified) to N points. One kernel matrix per (N, L), the
paper's ``exp(-gamma ||x - x'||^2 / M)`` at gamma = 5, is shared by every fit:

- ours: ``InhibitorySVC`` / ``OneVsAllSVC`` / ``WestonWatkinsSVC`` with
  ``kernel="precomputed"``, C = 1, tol = 1e-3, each solver (smo/sgd with the
  paper's default mean-KKT stopping rule);
- LIBSVM: ``OneVsRestClassifier(SVC(kernel="precomputed", C=1))`` on the same K
  (the ratio column), and, as a floor on LIBSVM's time, the L binary
  ``SVC.fit`` calls alone without the wrapper's overhead.

Each time is the median over ``--repeats`` fits, after a warm-up round (numba
compiles on first use); within one (N, L) the contenders are timed round-robin, so
they share the machine's load. The ratio is LIBSVM time / our time (> 1: we are faster).
LIBSVM's models have a bias term and it refits per class, so this compares speed,
not identical models.

    python benchmarks/solvers.py                 # full grid, prints the table
    python benchmarks/solvers.py --quick         # N in {50, 100}, 1 repeat
    python benchmarks/solvers.py --out table.md  # also write Markdown
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

from isvm import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC
from isvm.kernels import rbf_kernel

METHODS = {"isvm": InhibitorySVC, "ova": OneVsAllSVC, "ww": WestonWatkinsSVC}
SOLVERS = ("cd", "smo", "sgd")
C, GAMMA, TOL = 1.0, 5.0, 1e-3
SUBSET_3 = (3, 5, 8)
TARGET_RATIO = 3.0


def digits_problem(n: int, n_classes: int, seed: int = 0):
    """A stratified subsample of N digits over L classes: kernel matrix and labels."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    classes = np.arange(10) if n_classes == 10 else np.array(SUBSET_3[:n_classes])
    keep = np.flatnonzero(np.isin(y, classes))
    if n > keep.size:
        raise ValueError(f"only {keep.size} digits of classes {classes.tolist()}, asked for {n}")
    if n < keep.size:
        keep, _ = train_test_split(keep, train_size=n, stratify=y[keep], random_state=seed)
    return rbf_kernel(X[keep], gamma=GAMMA), y[keep]


def interleaved_medians(makers: dict, K, y, repeats: int):
    """Median wall time of ``make().fit(K, y)`` for every maker, measured round-robin.

    Round 0 is a warm-up (numba compiles on first use) whose fitted models are kept;
    then each of ``repeats`` rounds fits every maker once, so all contenders see the
    same machine load.
    """
    times = {key: [] for key in makers}
    models = {}
    for round_ in range(repeats + 1):
        for key, make in makers.items():
            est = make()
            t0 = time.perf_counter()
            est.fit(K, y)
            elapsed = time.perf_counter() - t0
            if round_ == 0:
                models[key] = est
            else:
                times[key].append(elapsed)
    return {key: statistics.median(t) for key, t in times.items()}, models


def ours(Estimator, solver):
    """A maker of our estimator on a precomputed kernel."""
    return lambda: Estimator(C=C, kernel="precomputed", solver=solver, tol=TOL, random_state=0)


def libsvm():
    """LIBSVM 1-vs-rest through scikit-learn, as a user would run it."""
    return OneVsRestClassifier(
        SVC(kernel="precomputed", C=C, tol=TOL, decision_function_shape="ovr")
    )


class LibsvmBinaryLoop:
    """The L binary LIBSVM fits of 1-vs-rest alone: no wrapper, no label binarizer."""

    def fit(self, K, y):
        self.models_ = [
            SVC(kernel="precomputed", C=C, tol=TOL).fit(K, y == c) for c in np.unique(y)
        ]
        return self


def run(sizes, classes, repeats: int, stochastic_max_n: int):
    """All timings, one row per (N, L, method, solver)."""
    rows, skipped = [], []
    for n_classes in classes:
        for n in sizes:
            K, y = digits_problem(n, n_classes)
            makers = {"libsvm": libsvm, "loop": LibsvmBinaryLoop}
            for method, Estimator in METHODS.items():
                for solver in SOLVERS:
                    if solver != "cd" and n > stochastic_max_n:
                        skipped.append((n, n_classes, method, solver))
                    else:
                        makers[method, solver] = ours(Estimator, solver)
            t, models = interleaved_medians(makers, K, y, repeats)
            for key, model in models.items():
                if key in ("libsvm", "loop"):
                    continue
                method, solver = key
                rows.append(
                    dict(
                        N=n,
                        L=n_classes,
                        method=method,
                        solver=solver,
                        seconds=t[key],
                        libsvm=t["libsvm"],
                        ratio=t["libsvm"] / t[key],
                        loop=t["loop"],
                        ratio_loop=t["loop"] / t[key],
                        iterations=model.n_iter_,
                        converged=model.converged_,
                        kkt=model.kkt_violation_,
                    )
                )
                r = rows[-1]
                print(
                    f"N={n:4d} L={n_classes:2d} {method:4s} {solver:3s} "
                    f"{r['seconds']:9.4f} s  LIBSVM {r['libsvm']:8.4f} s  ratio {r['ratio']:7.2f}  "
                    f"(binary fits only {r['loop']:8.4f} s, ratio {r['ratio_loop']:7.2f})",
                    flush=True,
                )
    return rows, skipped


def markdown(rows) -> str:
    """The table: seconds per fit and LIBSVM / ours."""
    lines = [
        "| N | L | method | solver | s / fit | LIBSVM OvR s / fit | LIBSVM / ours "
        "| LIBSVM binary fits only, s | (that) / ours | iterations | max KKT at stop |",
        "| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['N']} | {r['L']} | {r['method']} | {r['solver']} | {r['seconds']:.4f} "
            f"| {r['libsvm']:.4f} | {r['ratio']:.2f} | {r['loop']:.4f} | {r['ratio_loop']:.2f} "
            f"| {r['iterations']} "
            f"| {r['kkt']:.1e}{'' if r['converged'] else ' (cap)'} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 500])
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 10], choices=[3, 10])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--stochastic-max-n",
        type=int,
        default=200,
        help="skip smo/sgd above this N (each step sweeps all N*L variables for the "
        "paper's stopping rule, so one fit at N=500, L=10 takes ~15 s)",
    )
    parser.add_argument("--quick", action="store_true", help="N in {50, 100}, 1 repeat")
    parser.add_argument("--out", help="also write the Markdown table to this path")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats = [50, 100], 1

    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; C={C}, gamma={GAMMA}, tol={TOL}, "
        f"median of {args.repeats} round-robin fits after a warm-up round"
    )
    rows, skipped = run(args.sizes, args.classes, args.repeats, args.stochastic_max_n)
    table = markdown(rows)
    print()
    print(table)
    if skipped:
        ns = sorted({s[0] for s in skipped})
        print(f"\nsmo/sgd skipped at N = {ns} (> --stochastic-max-n {args.stochastic_max_n}).")
    target = [r for r in rows if r["method"] == "ova" and r["solver"] == "cd" and r["N"] == 500]
    for r in target:
        verdict = "meets" if r["ratio"] >= TARGET_RATIO else "MISSES"
        print(
            f"cd 1-vs-all at N=500, L={r['L']}: LIBSVM / ours = {r['ratio']:.2f} "
            f"({verdict} the {TARGET_RATIO:g}x target); against the binary fits "
            f"alone {r['ratio_loop']:.2f}"
        )
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
