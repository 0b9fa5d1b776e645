"""``python -m isvm select``: exact leave-one-out model selection on a CSV file.

For people without Python code: reads a table (one row per sample, one column the
class label, every other column a numeric feature), scales the features (z-score by
default, as in the paper's study), runs :class:`isvm.LOOSearchCV` over the gamma x C
grid, prints the best parameters and their LOO accuracy, and writes the full grid
(``loo_grid.csv``) and a LOO-accuracy-vs-C plot (``loo_vs_C.png``) into ``--out``.

User errors (a missing column, text in a feature, a class of one sample, a target that
looks continuous, an unwritable ``--out``) exit with status 2 and one line on stderr;
warnings are printed as one line each (``isvm select: note: ...``). Constant feature
columns are dropped, with a note naming them: the gamma is per feature, so they would
count in its scale while carrying no information.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
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


#: separators tried when a file read with ``--sep`` gives a single column
_OTHER_SEPARATORS = (",", ";", "\t", "|")


def read_table(
    path: Path, target: str, scaling: str, sep: str = ","
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """(scaled features, labels as strings, feature names, dropped constant columns) of a
    CSV file, read with separator ``sep``.

    Constant feature columns are dropped before scaling: they carry no information but
    would count in the per-feature gamma's n_features. Errors (a missing target column,
    a non-numeric feature, missing values, no non-constant feature) are
    :class:`isvm.data.registry.DataError` with the file and column named.
    """
    import pandas as pd

    from isvm.data.preprocess import label_strings, scale, to_float_matrix
    from isvm.data.registry import DataError

    frame = pd.read_csv(path, sep=sep)
    if target not in frame.columns:
        found = [str(c) for c in frame.columns]
        hint = ""
        if len(found) == 1:
            other = [s for s in _OTHER_SEPARATORS if s != sep and s in found[0]]
            if other:
                hint = f"; is the separator {other[0]!r}? (--sep {other[0]!r})"
        raise DataError(
            f"{path}: no column named {target!r} (read with --sep {sep!r}); the columns "
            f"found are {found}{hint}"
        )
    labels = frame[target]
    if labels.isna().any():
        raise DataError(f"{path}: column {target!r} has missing labels")
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise DataError(f"{path}: no feature columns besides {target!r}")
    X = to_float_matrix(features, str(path))
    names = [str(c) for c in features.columns]
    constant = np.ptp(X, axis=0) == 0 if X.shape[0] > 1 else np.zeros(X.shape[1], dtype=bool)
    if constant.all():
        raise DataError(f"{path}: every feature column is constant ({', '.join(names)})")
    dropped = [name for name, c in zip(names, constant, strict=True) if c]
    kept = [name for name, c in zip(names, constant, strict=True) if not c]
    X = np.ascontiguousarray(X[:, ~constant])
    return scale(X, scaling), label_strings(labels, str(path)), kept, dropped


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
    parser.add_argument(
        "--sep",
        type=_separator,
        default=",",
        help="the file's column separator: one character, e.g. ';' or '\\t' (a tab)",
    )
    parser.add_argument(
        "--threads", type=_threads, default=1, help="threads for the LOO folds (-1: all cores)"
    )
    parser.add_argument("--out", type=Path, default=Path("isvm-select"), help="output folder")
    parser.add_argument("--verbose", action="store_true", help="one line per grid point")
    parser.add_argument(
        "--allow-continuous-target",
        action="store_true",
        help="classify a target that looks continuous (every label a number, some not "
        "whole, more than 10 distinct or more than half the rows) instead of refusing it",
    )


def _separator(text: str) -> str:
    """``--sep``: one character; ``\\t`` (as typed in a shell) or ``tab`` is a tab."""
    sep = "\t" if text in ("\\t", "tab") else text
    if len(sep) != 1:
        raise argparse.ArgumentTypeError(f"must be one character (or '\\t'), got {text!r}")
    return sep


def _threads(text: str) -> int:
    """``--threads``: an integer >= 1, or -1 for all cores (an argparse error otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"must be >= 1, or -1 for all cores; got {value}")
    return value


def _one_line(text: object) -> str:
    """``text`` on one line: its lines joined by spaces."""
    return " ".join(str(text).split())


#: warnings for the code's developers, not its users: not shown
_DEVELOPER_WARNINGS = (DeprecationWarning, PendingDeprecationWarning)


def _note(text: object) -> None:
    print(f"isvm select: note: {_one_line(text)}", file=sys.stderr)


def _error(text: object) -> int:
    print(f"isvm select: error: {_one_line(text)}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Select (gamma, C) by exact LOO; print the best, write the grid CSV and the plot.

    Warnings raised on the way are printed as they come, as one-line notes, once each
    (not Python's two lines with the source file's path).
    """
    seen: set[str] = set()

    def show(message, category, *_args, **_kwargs) -> None:
        text = _one_line(message)
        if text not in seen and not issubclass(category, _DEVELOPER_WARNINGS):
            seen.add(text)
            _note(text)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        return _run(args)


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be made or written, or None: checked on it or on the nearest
    folder above it that exists, so nothing is created before the search is done."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{str(existing)!r} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{str(existing)!r} is not writable"
    return None


def _run(args: argparse.Namespace) -> int:
    import pandas as pd

    from isvm.data.registry import DataError
    from isvm.loo import c_grid
    from isvm.search import LOOSearchCV, continuous_target

    Cs = list(c_grid(*DEFAULT_C)) if args.C is None else args.C
    try:
        X, y, names, dropped = read_table(args.data, args.target, args.scaling, args.sep)
        reason = continuous_target(y)
        if reason is not None and not args.allow_continuous_target:
            return _error(
                f"{args.data}: column {args.target!r} looks continuous, a regression target "
                f"({reason}); pass --allow-continuous-target if these are class labels"
            )
        if dropped:
            _note(
                f"dropped {len(dropped)} constant feature column(s) "
                f"({', '.join(map(repr, dropped))}): gamma is per feature over the "
                f"{len(names)} columns used, exp(-gamma ||x - x'||^2 / {len(names)})"
            )
        search = LOOSearchCV(
            build_estimator(args.method),
            {"C": Cs, "gamma": args.gammas},
            n_jobs=args.threads,
            verbose=int(args.verbose),
            allow_continuous_target=True,  # checked above, with this command's flag
        )
        unwritable = _unwritable(args.out)
        if unwritable is not None:  # before the search, which can take minutes
            return _error(f"cannot write --out {str(args.out)!r}: {unwritable}")
        start = time.perf_counter()
        search.fit(X, y)
        seconds = time.perf_counter() - start
    except (DataError, OSError, ValueError) as exc:
        return _error(exc)
    results = search.cv_results_
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
    title = f"{args.data.name}: {args.method}, N = {y.shape[0]}, {args.scaling} features"
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        grid.to_csv(args.out / "loo_grid.csv", index=False)
        plot_loo_vs_c(results, args.out / "loo_vs_C.png", title)
    except OSError as exc:
        return _error(f"cannot write into --out {str(args.out)!r}: {exc.strerror or exc}")
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
