"""``python -m isvm select``: exact leave-one-out model selection on a CSV file.

For people without Python code: reads a table (one row per sample, one column the
class label, every other column a numeric feature), scales the features (z-score by
default, as in the paper's study), runs :class:`isvm.LOOSearchCV` over the gamma x C
grid, prints the best parameters and their LOO accuracy, and writes the full grid
(``loo_grid.csv``) and a LOO-accuracy-vs-C plot (``loo_vs_C.png``) into ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

#: ``--method`` -> (estimator class name in :mod:`isvm`, fixed parameters)
METHODS: dict[str, tuple[str, dict[str, object]]] = {
    "isvm": ("InhibitorySVC", {}),
    "ova": ("OneVsAllSVC", {}),
    "ww": ("WestonWatkinsSVC", {}),
    "ww_paper": ("WestonWatkinsSVC", {"ww_kernel": "paper"}),
    "llw": ("LeeLinWahbaSVC", {}),
    "scatter": ("ScatterSVC", {}),
    "cs": ("CrammerSingerSVC", {}),
}
#: the default grid: the default config's gammas and C values (config/config.yaml)
DEFAULT_GAMMAS = (5.0, 10.0)
DEFAULT_C = (0.1, 50.0, 2.5)  # c_grid(start, stop, step): 0.1, 2.6, ..., 47.6


def build_estimator(method: str, seed: int = 0):
    """The unfitted estimator ``--method`` names (its LOO method is ``method``)."""
    import isvm

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    name, fixed = METHODS[method]
    return getattr(isvm, name)(random_state=seed, **fixed)


def read_table(path: Path, target: str, scaling: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(scaled features, labels as strings, feature names) of a CSV file.

    Errors (a missing target column, a non-numeric feature, missing values) are
    :class:`isvm.data.registry.DataError` with the file and column named.
    """
    import pandas as pd

    from isvm.data.preprocess import label_strings, scale, to_float_matrix
    from isvm.data.registry import DataError

    frame = pd.read_csv(path)
    if target not in frame.columns:
        raise DataError(f"{path}: no column {target!r}; columns are {list(frame.columns)}")
    labels = frame[target]
    if labels.isna().any():
        raise DataError(f"{path}: column {target!r} has missing labels")
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise DataError(f"{path}: no feature columns besides {target!r}")
    X = to_float_matrix(features, str(path))
    return scale(X, scaling), label_strings(labels, str(path)), [str(c) for c in features.columns]


def plot_loo_vs_c(results: dict, path: Path, title: str) -> None:
    """LOO accuracy against C, one line per gamma, the best grid point marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    C = np.asarray(results["param_C"], dtype=float)
    gamma = np.asarray(results["param_gamma"], dtype=float)
    acc = 100 * np.asarray(results["mean_test_score"], dtype=float)
    best = int(np.asarray(results["rank_test_score"]).argmin())
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for g in np.unique(gamma):
        on = gamma == g
        order = np.argsort(C[on])
        ax.plot(C[on][order], acc[on][order], marker="o", ms=3, label=f"gamma = {g:g}")
    ax.plot(C[best], acc[best], marker="*", ms=14, color="black", ls="", label="best")
    ax.set_xlabel("C")
    ax.set_ylabel("LOO accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm select``."""
    from isvm.data.preprocess import SCALINGS

    parser.add_argument("--data", type=Path, required=True, help="CSV file, one row per sample")
    parser.add_argument("--target", required=True, help="the column holding the class labels")
    parser.add_argument("--method", default="isvm", choices=sorted(METHODS), help="the SVM")
    parser.add_argument(
        "--gammas",
        type=float,
        nargs="+",
        default=list(DEFAULT_GAMMAS),
        help="rbf widths, per feature: exp(-gamma ||x - x'||^2 / n_features), i.e. "
        "scikit-learn SVC's gamma x n_features",
    )
    parser.add_argument(
        "--C",
        type=float,
        nargs="+",
        help="C values (default: 0.1, 2.6, ..., 47.6, the default config's grid)",
    )
    parser.add_argument("--scaling", default="zscore", choices=SCALINGS, help="feature scaling")
    parser.add_argument("--threads", type=int, default=1, help="threads for the LOO folds")
    parser.add_argument("--out", type=Path, default=Path("isvm-select"), help="output folder")
    parser.add_argument("--verbose", action="store_true", help="one line per grid point")


def run(args: argparse.Namespace) -> int:
    """Select (gamma, C) by exact LOO; print the best, write the grid CSV and the plot."""
    import pandas as pd

    from isvm.data.registry import DataError
    from isvm.loo import c_grid
    from isvm.search import LOOSearchCV

    Cs = list(c_grid(*DEFAULT_C)) if args.C is None else args.C
    try:
        X, y, _ = read_table(args.data, args.target, args.scaling)
        search = LOOSearchCV(
            build_estimator(args.method),
            {"C": Cs, "gamma": args.gammas},
            n_jobs=args.threads,
            verbose=int(args.verbose),
        )
        start = time.perf_counter()
        search.fit(X, y)
        seconds = time.perf_counter() - start
    except (DataError, OSError, ValueError) as exc:
        print(f"isvm select: error: {exc}", file=sys.stderr)
        return 2
    results = search.cv_results_
    args.out.mkdir(parents=True, exist_ok=True)
    grid = pd.DataFrame(
        {
            "gamma": np.asarray(results["param_gamma"], dtype=float),
            "C": np.asarray(results["param_C"], dtype=float),
            "loo_accuracy": results["mean_test_score"],
            "n_errors": np.rint((1 - results["mean_test_score"]) * y.shape[0]).astype(int),
            "rank": results["rank_test_score"],
            "n_uncertified": results["n_uncertified"],
            "n_capped": results["n_capped"],
            "seconds": results["mean_fit_time"] * y.shape[0],
        }
    ).sort_values(["gamma", "C"], kind="mergesort")
    grid.to_csv(args.out / "loo_grid.csv", index=False)
    title = f"{args.data.name}: {args.method}, N = {y.shape[0]}, {args.scaling} features"
    plot_loo_vs_c(results, args.out / "loo_vs_C.png", title)
    best = search.best_params_
    n_errors = int(np.rint((1 - search.best_score_) * y.shape[0]))
    route = results["loo_route"][search.best_index_]
    print(
        f"{args.data}: N = {y.shape[0]}, {X.shape[1]} features ({args.scaling}), "
        f"{np.unique(y).shape[0]} classes; method {args.method} ({route}); "
        f"{len(results['params'])} grid points in {seconds:.1f} s"
    )
    print(
        f"best: gamma = {best['gamma']:g}, C = {best['C']:g} (the first of the best in "
        f"C-then-gamma order); LOO accuracy {100 * search.best_score_:.2f}% "
        f"({n_errors} of {y.shape[0]} wrong)"
    )
    uncertified = int(results["n_uncertified"][search.best_index_])
    if route.startswith("engine") and uncertified:
        print(
            f"note: {uncertified} folds at the best point are near-ties the engine left uncertified"
        )
    print(f"wrote {args.out / 'loo_grid.csv'} and {args.out / 'loo_vs_C.png'}")
    return 0
