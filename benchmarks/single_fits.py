"""Single fits on a precomputed kernel: our estimators against LIBSVM, side by side.

The issue's cells (exact LOO in the paper's regime, issue 23): letter with z-scored
features and MNIST digits on [0, 1], N = 1,000 and 5,000 points (one stratified-free
random subsample, ``rng(0, "single-fits", data, N)``), the paper's kernel at gamma 5,
C = 1.1 and 20.1, tol 1e-3. Contenders, timed round-robin on the same kernel matrix:
``OneVsAllSVC``, ``WestonWatkinsSVC``, ``InhibitorySVC`` (``kernel="precomputed"``,
cd solver) and scikit-learn's LIBSVM on the same matrix, as a user would fit it:
``SVC(kernel="precomputed")`` (one-vs-one, L(L-1)/2 binary problems) and
``OneVsRestClassifier(SVC(...))`` (one-vs-rest: L binary problems of N points, the
work of one of our fits). Reported: seconds per fit (median of ``--repeats``) and
LIBSVM / ours for both (> 1: we are faster). The models differ (LIBSVM's binary
problems have a bias), so this compares speed only.

    python benchmarks/single_fits.py                    # N = 1000 and 5000
    python benchmarks/single_fits.py --sizes 1000       # N = 1000 only
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

from isvm import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC
from isvm.data import load_dataset
from isvm.kernels import rbf_kernel
from isvm.seeding import rng

CELLS = [("letter", "zscore"), ("mnist", "minmax")]
OURS = {"ova": OneVsAllSVC, "ww": WestonWatkinsSVC, "isvm": InhibitorySVC}


def seconds(fit, repeats: int) -> float:
    """Median wall seconds of ``fit()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 5000])
    parser.add_argument("--Cs", nargs="+", type=float, default=[1.1, 20.1])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--methods", nargs="+", default=list(OURS), choices=list(OURS))
    args = parser.parse_args()
    warm = rng(0, "warm-up").random((40, 3))
    for cls in OURS.values():  # compile outside the timings
        cls(C=1.0, gamma=5.0).fit(warm, np.arange(40) % 3)
    print(
        "| data | features | N | L | C | method | ours s (iterations) | LIBSVM 1-vs-1 s "
        "| 1-vs-1 / ours | LIBSVM 1-vs-rest s | 1-vs-rest / ours |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for name, scaling in CELLS:
        data = load_dataset(name, source="bundled", scaling=scaling)
        for n in args.sizes:
            idx = rng(0, "single-fits", name, n).choice(data.y.shape[0], n, replace=False)
            K = rbf_kernel(data.X[idx], gamma=5.0)
            y = data.y[idx]
            n_classes = np.unique(y).shape[0]
            for C in args.Cs:
                ovo = SVC(kernel="precomputed", C=C)
                ovo_s = seconds(lambda ovo=ovo, K=K, y=y: ovo.fit(K, y), args.repeats)
                ovr = OneVsRestClassifier(SVC(kernel="precomputed", C=C))
                ovr_s = seconds(lambda ovr=ovr, K=K, y=y: ovr.fit(K, y), args.repeats)
                for method in args.methods:
                    est = OURS[method](C=C, kernel="precomputed", tol=1e-3)
                    ours = seconds(lambda est=est, K=K, y=y: est.fit(K, y), args.repeats)
                    iterations = getattr(est, "n_iter_", "?")
                    print(
                        f"| {name} | {scaling} | {n} | {n_classes} | {C:g} | {method} "
                        f"| {ours:.3f} ({iterations}) | {ovo_s:.3f} | {ovo_s / ours:.2f} "
                        f"| {ovr_s:.3f} | {ovr_s / ours:.2f} |",
                        flush=True,
                    )
    print("\nOne thread per fit; gamma 5, tol 1e-3; median of --repeats fits.")


if __name__ == "__main__":
    main()
