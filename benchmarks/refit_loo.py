"""What a refit-LOO method costs in the workflow, beside the exact engine's ISVM.

One subsample of Ns points per data set (the bundled z-scored data, drawn as the
workflow draws it), the default config's grid (gamma 5, 10 x C 0.1 .. 47.6 step 2.5:
40 grid points), each method's LOO over the whole grid: the engine methods through
``isvm.loo.loo_grid``, the others (``isvm.loo.REFIT_METHODS``) through
``isvm.loo.loo_refit`` as ``isvm loo`` runs them. Prints seconds per subsample and the
ratio to the engine's ISVM on the same subsample (> 1: slower than ISVM). A warm-up
run on a small problem compiles the numba kernels first.

    python benchmarks/refit_loo.py                          # iris, vowel, letter at Ns 50
    python benchmarks/refit_loo.py --datasets glass --ns 100
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from isvm.data import load_dataset
from isvm.loo import LOO_METHODS, c_grid, loo_records
from isvm.seeding import rng


def loo_seconds(X, y, method: str, gammas, Cs) -> tuple[float, float]:
    """(seconds, best LOO accuracy) of one method's LOO over the grid."""
    start = time.perf_counter()
    frame = loo_records(X, y, method, gammas, Cs)
    return time.perf_counter() - start, float(frame["loo_accuracy"].max())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["iris", "vowel", "letter"])
    parser.add_argument("--ns", type=int, default=50)
    parser.add_argument("--methods", nargs="+", default=["isvm", "cs", "ovo", "perceptron", "bsvm"])
    args = parser.parse_args(argv)
    gammas, Cs = [5.0, 10.0], c_grid(0.1, 50.0, 2.5)
    warm = load_dataset("iris", source="bundled", scaling="zscore")
    for method in args.methods:  # compile every kernel before timing
        loo_seconds(warm.X[::10], warm.y[::10], method, [5.0], Cs[:2])
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"Ns = {args.ns}, {len(gammas) * len(Cs)} grid points, one subsample per data set"
    )
    print("| data set | L | method | LOO | s / subsample | / isvm | best LOO accuracy |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: |")
    for name in args.datasets:
        data = load_dataset(name, source="bundled", scaling="zscore")
        idx = rng(2012, "benchmark-refit", name, args.ns).choice(
            data.y.shape[0], args.ns, replace=False
        )
        X, y = data.X[idx], data.y[idx]
        n_classes = np.unique(y).shape[0]
        base = None
        for method in ["isvm", *[m for m in args.methods if m != "isvm"]]:
            seconds, best = loo_seconds(X, y, method, gammas, Cs)
            base = seconds if base is None else base
            print(
                f"| {name} | {n_classes} | {method} | {LOO_METHODS[method]} | {seconds:.2f} "
                f"| {seconds / base:.1f} | {best:.3f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
