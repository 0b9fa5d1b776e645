"""Leave-one-out by refitting every fold from zero: the engine's reference and its fallback.

:func:`loo_refit` fits each held-out problem afresh, no shortcuts, and returns the
engine's record columns (:data:`isvm.loo.records.GRID_COLUMNS`). It serves two kinds
of method:

- the formulations of :mod:`isvm.methods` (solved by :func:`isvm.solvers.solve`): the
  plain reference the exact engine (:func:`isvm.loo.loo_grid`) is tested against and
  the benchmarks' baseline;
- the methods the engine cannot serve, :data:`REFIT_METHODS`: Crammer-Singer (its dual
  has a per-point equality constraint), one-vs-one, the kernel perceptron and the
  banded SVM inside 1-vs-rest (not one box-constrained dual). The workflow runs them
  through here (``isvm loo --method cs``), one estimator of :mod:`isvm.estimators` or
  :mod:`isvm.baselines` per fold, on the precomputed kernel.

:data:`LOO_METHODS` names every method ``isvm loo`` accepts and how it is served.
A refit certifies nothing, so ``n_uncertified`` counts every fold; a fit that hits
its iteration cap (a ConvergenceWarning) is counted in ``n_capped``, never dropped.
Each fold's solver seed derives from ``(seed, gamma, C, point)``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from isvm.loo.grid import check_grid
from isvm.loo.records import GRID_COLUMNS
from isvm.methods import FORMULATIONS, Formulation, coefficient_matrix, get_formulation
from isvm.seeding import derive_seed

# numba (solvers, driver) and scikit-learn are imported where used: the tables read
# LOO_METHODS without loading either.


class RefitMethod(NamedTuple):
    """A method served by refitting: ``build(C, tol, max_iter, seed)`` -> an unfitted
    scikit-learn classifier on a precomputed kernel; ``uses_C`` False when C is not a
    parameter of the method (its LOO is computed once per gamma and repeated over C)."""

    name: str
    description: str
    build: Callable[[float, float, int | None, int], Any]
    uses_C: bool = True


def _with_cap(max_iter: int | None) -> dict[str, int]:
    return {} if max_iter is None else {"max_iter": int(max_iter)}


def _crammer_singer(C: float, tol: float, max_iter: int | None, seed: int):
    from isvm.estimators import CrammerSingerSVC

    return CrammerSingerSVC(
        C=C, kernel="precomputed", tol=tol, random_state=seed, **_with_cap(max_iter)
    )


def _one_vs_one(C: float, tol: float, max_iter: int | None, seed: int):
    from isvm.baselines import one_vs_one
    from isvm.estimators import OneVsAllSVC

    binary = OneVsAllSVC(C=C, kernel="precomputed", tol=tol, random_state=seed)
    return one_vs_one(binary.set_params(**_with_cap(max_iter)))


def _perceptron(C: float, tol: float, max_iter: int | None, seed: int):
    from isvm.baselines import KernelPerceptron

    return KernelPerceptron(kernel="precomputed", random_state=seed, **_with_cap(max_iter))


def _banded(C: float, tol: float, max_iter: int | None, seed: int):
    from sklearn.multiclass import OneVsRestClassifier

    from isvm.baselines import BandedSVC

    binary = BandedSVC(
        C=C, C_high=C, band_low=1.0, band_high=2.0, kernel="precomputed", tol=tol,
        random_state=seed, **_with_cap(max_iter),
    )  # fmt: skip
    return OneVsRestClassifier(binary)


#: the methods the exact engine cannot serve, by their ``isvm loo --method`` name
REFIT_METHODS: dict[str, RefitMethod] = {
    m.name: m
    for m in (
        RefitMethod("cs", "Crammer-Singer (bias-free), CrammerSingerSVC", _crammer_singer),
        RefitMethod(
            "ovo", "one-vs-one voting over the bias-free binary SVM (OneVsAllSVC)", _one_vs_one
        ),
        RefitMethod("perceptron", "multiclass kernel perceptron (no C)", _perceptron, uses_C=False),
        RefitMethod("bsvm", "B-SVM in 1-vs-rest, C_high = C, band [1, 2] (BandedSVC)", _banded),
    )
}

#: every method of ``isvm loo`` and the workflow's ``methods``: "engine" (exact LOO,
#: :func:`isvm.loo.loo_grid`) or "refit" (:func:`loo_refit`)
LOO_METHODS: dict[str, str] = {
    **{name: "engine" for name in FORMULATIONS},
    **{name: "refit" for name in REFIT_METHODS},
}


class FoldFit(NamedTuple):
    """One fit's predictions on its test rows and its solver outcome."""

    pred: NDArray[np.int64]  # class indices 0..L-1
    gap: NDArray[np.float64]  # top-two class-score gap of each prediction
    support: NDArray[np.bool_]  # training points with a non-zero coefficient
    iterations: int
    converged: bool


Fitter = Callable[[NDArray, NDArray[np.int64], NDArray, float, int], FoldFit]


def _top_two_gap(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    if scores.ndim == 1:  # a binary decision value
        return np.abs(scores)
    top = -np.sort(-scores, axis=1)
    return top[:, 0] - top[:, 1]


def _formulation_fitter(
    formulation: Formulation, n_classes: int, solver: str, tol: float, max_iter: int | None
) -> Fitter:
    from isvm.solvers import solve

    A = formulation.decision_matrix(n_classes)

    def fit(K_train, y_train, K_test, C, seed) -> FoldFit:
        result = solve(
            K_train, y_train, n_classes, formulation, C,
            solver=solver, tol=tol, max_iter=max_iter, seed=seed,
        )  # fmt: skip
        coding = formulation.encode(y_train, n_classes)
        scores = (K_test @ coefficient_matrix(result.alpha, coding)) @ A
        return FoldFit(
            np.argmax(scores, axis=1), _top_two_gap(scores), result.alpha.any(axis=1),
            int(result.iterations), bool(result.converged),
        )  # fmt: skip

    return fit


def _support(estimator, n: int) -> NDArray[np.bool_]:
    """Training points with a non-zero coefficient in ``estimator`` or any of its parts."""
    coef = getattr(estimator, "dual_coef_", None)
    if coef is not None:
        return np.asarray(coef).reshape(n, -1).any(axis=1)
    mask = np.zeros(n, dtype=np.bool_)
    parts = getattr(estimator, "estimators_", [])
    indices = getattr(estimator, "pairwise_indices_", None)  # one-vs-one on a kernel
    for k, part in enumerate(parts):
        if indices is None:
            mask |= _support(part, n)
        else:
            mask[indices[k][_support(part, len(indices[k]))]] = True
    return mask


def _iterations(estimator) -> int:
    if hasattr(estimator, "n_iter_"):
        return int(np.sum(estimator.n_iter_))
    return sum(_iterations(part) for part in getattr(estimator, "estimators_", []))


def _estimator_fitter(method: RefitMethod, tol: float, max_iter: int | None) -> Fitter:
    from sklearn.exceptions import ConvergenceWarning

    def fit(K_train, y_train, K_test, C, seed) -> FoldFit:
        present = np.unique(y_train)
        if present.shape[0] < 2:  # a fold left with one class predicts it
            n_test = K_test.shape[0]
            return FoldFit(
                np.full(n_test, present[0]), np.full(n_test, np.inf),
                np.zeros(y_train.shape[0], dtype=np.bool_), 0, True,
            )  # fmt: skip
        estimator = method.build(C, tol, max_iter, seed % 2**32)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            estimator.fit(K_train, y_train)
        capped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        if K_test.shape[0]:
            pred = estimator.predict(K_test).astype(np.int64)
            gap = _top_two_gap(estimator.decision_function(K_test))
        else:
            pred, gap = np.zeros(0, dtype=np.int64), np.zeros(0)
        return FoldFit(
            pred, gap, _support(estimator, y_train.shape[0]), _iterations(estimator), not capped
        )

    return fit


def _refit_point(
    fitter: Fitter, K: NDArray, y_idx: NDArray[np.int64], gamma: float, C: float, seed: int
) -> tuple[tuple, NDArray[np.int64], NDArray[np.float64]]:
    """One grid point: (record row, predicted class indices, top-two gaps)."""
    n = y_idx.shape[0]
    start = time.perf_counter()
    full = fitter(K, y_idx, K[:0], C, derive_seed(seed, "refit-full", gamma, C))
    pred = np.empty(n, dtype=np.int64)
    gap = np.empty(n)
    iterations, capped = full.iterations, int(not full.converged)
    for p in range(n):
        keep = np.arange(n) != p
        fold = fitter(
            K[np.ix_(keep, keep)], y_idx[keep], K[p : p + 1, keep], C,
            derive_seed(seed, "refit", gamma, C, p),
        )  # fmt: skip
        pred[p], gap[p] = fold.pred[0], fold.gap[0]
        iterations += fold.iterations
        capped += int(not fold.converged)
    n_errors = int(np.count_nonzero(pred != y_idx))
    row = (
        gamma, C, 1.0 - n_errors / n, n_errors, int(np.count_nonzero(full.support)),
        int(iterations), capped == 0, n, capped, time.perf_counter() - start,
    )  # fmt: skip
    return row, pred, gap


def loo_refit(
    X: ArrayLike,
    y: ArrayLike,
    method: str | Formulation,
    gammas: Sequence[float],
    Cs: Sequence[float],
    *,
    solver: str = "cd",
    tol: float = 1e-3,
    seed: int = 0,
    kernel_cache: MutableMapping | None = None,
    max_iter: int | None = None,
    n_classes: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, NDArray, NDArray[np.float64]]:
    """LOO accuracy by refitting every held-out problem from zero, at every (gamma, C).

    ``method``: a formulation (name or :class:`~isvm.methods.Formulation`, solved by
    ``solver``; the fold keeps all L classes, as in the engine) or a name of
    :data:`REFIT_METHODS` (its estimator, fitted on the fold's samples alone). Returns
    (frame with the columns of :data:`~isvm.loo.records.GRID_COLUMNS`, one row per grid
    point, gamma as given then C ascending; LOO predicted labels (n_grid, N); the
    top-two class-score gap of each prediction (n_grid, N)). ``n_support`` is that of
    the fit on all N points, ``iterations`` sums it and the folds, ``n_capped`` counts
    the fits that hit their iteration cap and ``n_uncertified`` is N (nothing is
    certified). ``progress(done, total)`` is called after each grid point.
    """
    from isvm.loo.driver import _encode_labels, _kernels

    gammas, Cs = check_grid(gammas, Cs)
    classes, y_idx, n_classes = _encode_labels(y, n_classes)
    kernels = _kernels(X, gammas, kernel_cache)
    n = y_idx.shape[0]
    if next(iter(kernels.values())).shape[0] != n:
        raise ValueError("X and y have different numbers of samples")
    if isinstance(method, str) and method not in LOO_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(LOO_METHODS)}")
    uses_C = True
    if isinstance(method, str) and method in REFIT_METHODS:
        refit = REFIT_METHODS[method]
        fitter, uses_C = _estimator_fitter(refit, tol, max_iter), refit.uses_C
    else:
        formulation = get_formulation(method) if isinstance(method, str) else method
        fitter = _formulation_fitter(formulation, n_classes, solver, tol, max_iter)
    rows, preds, gaps = [], [], []
    for gamma in gammas:
        K = kernels[gamma]
        for k, C in enumerate(Cs):
            if not uses_C and k > 0:  # C is not a parameter: the same LOO at every C
                rows.append((gamma, C, *rows[-1][2:-1], 0.0))
                preds.append(preds[-1])
                gaps.append(gaps[-1])
            else:
                row, pred, gap = _refit_point(fitter, K, y_idx, gamma, C, seed)
                rows.append(row)
                preds.append(classes[pred])
                gaps.append(gap)
            if progress is not None:
                progress(len(rows), len(gammas) * len(Cs))
    frame = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    return frame, np.array(preds), np.array(gaps)
