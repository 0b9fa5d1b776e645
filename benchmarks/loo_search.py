"""Benchmark ``isvm.LOOSearchCV`` against scikit-learn's ``GridSearchCV(cv=LeaveOneOut())``.

For one seeded subsample per N of a bundled data set, under each feature scaling, it
times side by side in one run, over the same 2 gammas x 20 C values:

- ``LOOSearchCV``: ``LOOSearchCV(Estimator(), grid)``, every fold of every grid point
  (the exact engine for the formulations; refit=False);
- ``(a) GridSearchCV(ours)``: ``GridSearchCV(Estimator(), grid, cv=LeaveOneOut())``,
  the same estimator refit on every fold;
- ``(b) GridSearchCV(SVC)``: ``GridSearchCV(SVC(), grid, cv=LeaveOneOut())`` with
  LIBSVM's one-vs-one SVC (with bias) at the same C and the same kernel, its gamma
  converted (``SVC gamma = ours / n_features``): what a scikit-learn user runs.

Refitting every fold is slow, so the baselines run on a random sample of ``--folds``
folds (the same folds for both; all folds where N <= --folds) and their time is scaled
by N / folds to the whole LOO; the output says so. On the sampled folds (a)'s fold
predictions are compared with ``LOOSearchCV``'s: ``agree`` counts (grid point, fold)
pairs that differ (0 expected, bar near-ties). Everything runs on one thread, after a
warm-up that compiles the numba kernels outside the timings.

Run: ``python benchmarks/loo_search.py [--sizes 100 300 1000] [--folds 40]``.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

import isvm
from isvm.data import load_dataset
from isvm.experiment.subsample import draw_subsamples
from isvm.loo import c_grid
from isvm.search import LOOSearchCV
from isvm.seeding import rng

ESTIMATORS = {
    "isvm": "InhibitorySVC",
    "ova": "OneVsAllSVC",
    "ww": "WestonWatkinsSVC",
    "llw": "LeeLinWahbaSVC",
    "scatter": "ScatterSVC",
}


def timed(fn) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def sampled_folds(n: int, k: int, seed: int) -> list[int]:
    """All folds when n <= k, else k of them drawn without replacement (sorted)."""
    if n <= k:
        return list(range(n))
    return sorted(rng(seed, "benchmark-folds", n).choice(n, k, replace=False).tolist())


def cv_of(n: int, folds: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.flatnonzero(np.arange(n) != p), np.array([p])) for p in folds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="satimage")
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 300, 1000])
    parser.add_argument("--scalings", nargs="+", default=["zscore", "minmax"])
    parser.add_argument("--methods", nargs="+", default=["isvm"], choices=sorted(ESTIMATORS))
    parser.add_argument("--gammas", nargs="+", type=float, default=[5.0, 10.0])
    parser.add_argument("--folds", type=int, default=40, help="baseline folds timed per N")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    Cs = [float(c) for c in c_grid(0.1, 50.0, 2.5)]  # 20 values, 0.1 ... 47.6
    grid = {"C": Cs, "gamma": args.gammas}
    print(
        f"# LOOSearchCV vs GridSearchCV(cv=LeaveOneOut()), {args.dataset}, "
        f"{len(args.gammas)} gammas x {len(Cs)} C values; one thread; "
        f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
        f"isvm {isvm.__version__}"
    )
    print(
        "# baselines (a), (b): timed on a random sample of folds (column 'folds'), "
        "scaled by N / folds to the whole LOO (*)"
    )
    print(
        "| scaling | N | method | LOOSearchCV s | uncertified | (a) GridSearchCV(ours) s* "
        "| (a)/ours | agree | (b) GridSearchCV(SVC) s* | (b)/ours | folds |"
    )
    print("|" + "---|" * 11)
    warnings.simplefilter("ignore", ConvergenceWarning)
    with threadpool_limits(limits=1):
        warm = load_dataset("wine", source="bundled")
        pick = rng(0, "warm-up").choice(warm.y.shape[0], 30, replace=False)
        Xw, yw = warm.X[pick], warm.y[pick]
        for method in args.methods:  # compile the engine and solvers outside the timings
            est = getattr(isvm, ESTIMATORS[method])()
            LOOSearchCV(est, {"C": [1.0, 2.0]}, refit=False).fit(Xw, yw)
            est.fit(Xw, yw)
        for scaling in args.scalings:
            data = load_dataset(args.dataset, source="bundled", scaling=scaling)
            for n in args.sizes:
                idx = draw_subsamples(data.y, n, 1, seed=args.seed, dataset=args.dataset)[0]
                X, y = data.X[idx], data.y[idx]
                folds = sampled_folds(n, args.folds, args.seed)
                scale = n / len(folds)
                svc_grid = {"C": Cs, "gamma": [g / X.shape[1] for g in args.gammas]}
                svc = GridSearchCV(SVC(), svc_grid, cv=cv_of(n, folds), refit=False)
                _, t_svc = timed(lambda svc=svc, X=X, y=y: svc.fit(X, y))
                for method in args.methods:
                    est = getattr(isvm, ESTIMATORS[method])(random_state=0)
                    ours = LOOSearchCV(est, grid, refit=False)
                    _, t_ours = timed(lambda ours=ours, X=X, y=y: ours.fit(X, y))
                    ref = GridSearchCV(est, grid, cv=cv_of(n, folds), refit=False)
                    _, t_ref = timed(lambda ref=ref, X=X, y=y: ref.fit(X, y))
                    assert ref.cv_results_["params"] == ours.cv_results_["params"]
                    differ = sum(
                        int(
                            np.count_nonzero(
                                ref.cv_results_[f"split{j}_test_score"]
                                != ours.cv_results_[f"split{p}_test_score"]
                            )
                        )
                        for j, p in enumerate(folds)
                    )
                    uncertified = int(ours.cv_results_["n_uncertified"].sum())
                    print(
                        f"| {scaling} | {n} | {method} | {t_ours:.2f} | {uncertified} "
                        f"| {t_ref * scale:.1f} | {t_ref * scale / t_ours:.0f}x "
                        f"| {'yes' if differ == 0 else f'{differ} differ'} "
                        f"| {t_svc * scale:.1f} | {t_svc * scale / t_ours:.1f}x "
                        f"| {len(folds)} of {n} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
