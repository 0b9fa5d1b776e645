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
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from isvm.loo.grid import check_grid
from isvm.loo.inputs import encode_labels, grid_kernels
from isvm.loo.records import GRID_COLUMNS, GridRow
from isvm.methods import FORMULATIONS, Formulation, coefficient_matrix, get_formulation
from isvm.seeding import derive_seed

if TYPE_CHECKING:
    from isvm.loo.estimator_method import EstimatorMethod

# numba (solvers, driver) and scikit-learn are imported where used: the tables read
# LOO_METHODS without loading either.


class RefitMethod(NamedTuple):
    """A method served by refitting: ``build(C, tol, max_iter, seed)`` -> an unfitted
    scikit-learn classifier on a precomputed kernel; ``uses_C`` False when C is not a
    parameter of the method (its LOO is computed once per gamma and repeated over C);
    ``fold_from_full`` an exact shortcut for the folds, if the method has one."""

    name: str
    description: str
    build: Callable[[float, float, int | None, int], Any]
    uses_C: bool = True
    #: ``fold_from_full(full_model, K, y_idx)`` -> ``fold(p, seed)`` (or None: no shortcut
    #: here), the fold's FoldFit from the fit on all points where that is exact (else
    #: None: the fold is refit whole)
    fold_from_full: Callable[..., Any] | None = None


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
        C=C,
        C_high=C,
        band_low=1.0,
        band_high=2.0,
        kernel="precomputed",
        tol=tol,
        random_state=seed,
        **_with_cap(max_iter),
    )
    return OneVsRestClassifier(binary)


def fit_quietly(estimator, X_train: NDArray, y_train: NDArray[np.int64]) -> bool:
    """Fit (on a kernel or on features); True if it hit its iteration cap (its
    ConvergenceWarning is caught, not shown). Process-wide warning filters: not thread-safe."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(X_train, y_train)
    return any(issubclass(w.category, ConvergenceWarning) for w in caught)


def _one_vs_one_folds(full, K: NDArray, y_idx: NDArray[np.int64]):
    """The folds of one-vs-one from its fit on all points: only the pairs with ``y_p`` refit.

    Pair (a, b)'s machine is trained on the points of classes a and b alone, so holding
    out a point of another class leaves it as it is. Each pair's vote and confidence at
    every point are computed once here; fold ``p`` refits the L - 1 pairs of class ``y_p``
    without ``p`` (seeded like a whole-fold refit) and combines the votes with
    scikit-learn's rule (``OneVsOneClassifier``'s ``_ovr_decision_function``). Exact, with
    L/2 times fewer fits and one prediction call per pair instead of one per pair and
    fold. Returns ``fold(p, seed)`` -> FoldFit, or None when ``y_p`` has no other point
    (the fold loses a class and its pairs): the caller then refits the fold whole. None
    instead of ``fold`` for L = 2 (one pair, nothing to keep).
    """
    from sklearn.base import clone
    from sklearn.utils.multiclass import _ovr_decision_function

    n_classes = full.classes_.shape[0]
    if n_classes == 2:
        return None
    pairs = [np.unique(y_idx[idx]) for idx in full.pairwise_indices_]
    machines = list(zip(full.estimators_, full.pairwise_indices_, strict=True))
    votes = np.array([est.predict(K[:, idx]) for est, idx in machines])
    confidence = np.array([est.decision_function(K[:, idx]) for est, idx in machines])
    counts = np.bincount(y_idx, minlength=n_classes)

    def fold(p: int, seed: int) -> FoldFit | None:
        c = y_idx[p]
        if counts[c] < 2:
            return None
        vote, conf = votes[:, p].astype(np.float64), confidence[:, p].copy()
        iterations, capped = 0, False
        for k, (est, idx) in enumerate(machines):
            if c in pairs[k]:  # class a -> 0, b -> 1, as OneVsOneClassifier trains a pair
                idx = idx[idx != p]
                est = clone(est).set_params(random_state=seed % 2**32)
                capped |= fit_quietly(
                    est, K[np.ix_(idx, idx)], (y_idx[idx] == pairs[k][1]).astype(np.int64)
                )
                iterations += fit_iterations(est)
                vote[k] = est.predict(K[p : p + 1, idx])[0]
                conf[k] = est.decision_function(K[p : p + 1, idx])[0]
        scores = _ovr_decision_function(vote[None, :], conf[None, :], n_classes)
        return FoldFit(
            full.classes_[np.argmax(scores, axis=1)].astype(np.int64),
            _top_two_gap(scores),
            np.zeros(y_idx.shape[0] - 1, dtype=np.bool_),
            iterations,
            not capped,
        )

    return fold


#: the methods the exact engine cannot serve, by their ``isvm loo --method`` name
REFIT_METHODS: dict[str, RefitMethod] = {
    m.name: m
    for m in (
        RefitMethod("cs", "Crammer-Singer (bias-free), CrammerSingerSVC", _crammer_singer),
        RefitMethod(
            "ovo",
            "one-vs-one voting over the bias-free binary SVM (OneVsAllSVC)",
            _one_vs_one,
            fold_from_full=_one_vs_one_folds,
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


def check_method(method: str) -> None:
    """A ValueError naming the choices unless ``method`` is in :data:`LOO_METHODS`."""
    if method not in LOO_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(LOO_METHODS)}")


class FoldFit(NamedTuple):
    """One fit's predictions on its test rows and its solver outcome."""

    pred: NDArray[np.int64]  # class indices 0..L-1
    gap: NDArray[np.float64]  # top-two class-score gap of each prediction
    support: NDArray[np.bool_]  # training points with a non-zero coefficient
    iterations: int
    converged: bool
    model: Any = None  # the fitted estimator (refit methods), for fold shortcuts


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

    def fit(K_train, y_train, K_test, C, seed, w_train=None) -> FoldFit:
        result = solve(
            K_train,
            y_train,
            n_classes,
            formulation,
            C,
            solver=solver,
            tol=tol,
            max_iter=max_iter,
            seed=seed,
            sample_weight=w_train,
        )
        coding = formulation.encode(y_train, n_classes)
        scores = (K_test @ coefficient_matrix(result.alpha, coding)) @ A
        return FoldFit(
            np.argmax(scores, axis=1),
            _top_two_gap(scores),
            result.alpha.any(axis=1),
            int(result.iterations),
            bool(result.converged),
        )

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


def fit_iterations(estimator) -> int:
    """A fitted estimator's solver iterations: ``n_iter_`` summed, over its parts too; 0 if none."""
    if hasattr(estimator, "n_iter_"):
        return int(np.sum(estimator.n_iter_))
    return sum(fit_iterations(part) for part in getattr(estimator, "estimators_", []))


def _estimator_fitter(method: RefitMethod, tol: float, max_iter: int | None) -> Fitter:
    def fit(K_train, y_train, K_test, C, seed) -> FoldFit:
        present = np.unique(y_train)
        if present.shape[0] < 2:  # a fold left with one class predicts it
            n_test = K_test.shape[0]
            return FoldFit(
                np.full(n_test, present[0]),
                np.full(n_test, np.inf),
                np.zeros(y_train.shape[0], dtype=np.bool_),
                0,
                True,
            )
        estimator = method.build(C, tol, max_iter, seed % 2**32)
        capped = fit_quietly(estimator, K_train, y_train)
        if K_test.shape[0]:
            pred = estimator.predict(K_test).astype(np.int64)
            gap = _top_two_gap(estimator.decision_function(K_test))
        else:
            pred, gap = np.zeros(0, dtype=np.int64), np.zeros(0)
        support = _support(estimator, y_train.shape[0])
        return FoldFit(pred, gap, support, fit_iterations(estimator), not capped, estimator)

    return fit


def _refit_point(
    fitter: Fitter,
    K: NDArray,
    y_idx: NDArray[np.int64],
    gamma: float,
    C: float,
    seed: int,
    fold_from_full: Callable[..., Any] | None = None,
    weights: NDArray[np.float64] | None = None,
) -> tuple[GridRow, NDArray[np.int64], NDArray[np.float64]]:
    """One grid point: (record row, predicted class indices, top-two gaps); with
    ``weights``, each fit gets its points' weights (``w_train``)."""
    n = y_idx.shape[0]
    start = time.perf_counter()
    weighed = {} if weights is None else {"w_train": weights}
    full = fitter(K, y_idx, K[:0], C, derive_seed(seed, "refit-full", gamma, C), **weighed)
    shortcut = None if fold_from_full is None else fold_from_full(full.model, K, y_idx)
    pred = np.empty(n, dtype=np.int64)
    gap = np.empty(n)
    iterations, capped = full.iterations, int(not full.converged)
    for p in range(n):
        fold_seed = derive_seed(seed, "refit", gamma, C, p)
        fold = None if shortcut is None else shortcut(p, fold_seed)
        if fold is None:
            keep = np.arange(n) != p
            weighed = {} if weights is None else {"w_train": weights[keep]}
            fold = fitter(
                K[np.ix_(keep, keep)], y_idx[keep], K[p : p + 1, keep], C, fold_seed, **weighed
            )
        pred[p], gap[p] = fold.pred[0], fold.gap[0]
        iterations += fold.iterations
        capped += int(not fold.converged)
    n_support = int(np.count_nonzero(full.support))
    row = refit_row(gamma, C, pred, y_idx, n_support, iterations, capped, start)
    return row, pred, gap


def refit_row(
    gamma: float,
    C: float,
    pred: NDArray[np.int64],
    y_idx: NDArray[np.int64],
    n_support: int,
    iterations: int,
    capped: int,
    start: float,
) -> GridRow:
    """A refit grid point's record row: nothing certified (``n_uncertified`` = N), the
    fits that hit their cap counted, ``seconds`` since ``start`` (``perf_counter``)."""
    n = y_idx.shape[0]
    n_errors = int(np.count_nonzero(pred != y_idx))
    return GridRow(
        gamma=gamma,
        C=C,
        loo_accuracy=1.0 - n_errors / n,
        n_errors=n_errors,
        n_support=n_support,
        iterations=int(iterations),
        converged=capped == 0,
        n_uncertified=n,
        n_capped=int(capped),
        seconds=time.perf_counter() - start,
    )


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
    sample_weight: ArrayLike | None = None,
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
    ``sample_weight`` (a formulation only): each fit gets its points' weights, as
    :func:`isvm.solvers.solve` takes them.
    """
    gammas, Cs = check_grid(gammas, Cs)
    classes, y_idx, n_classes = encode_labels(y, n_classes)
    kernels = grid_kernels(X, gammas, kernel_cache)
    n = y_idx.shape[0]
    if next(iter(kernels.values())).shape[0] != n:
        raise ValueError("X and y have different numbers of samples")
    if isinstance(method, str):
        check_method(method)
    uses_C, shortcut = True, None
    weights = None
    if sample_weight is not None:
        from isvm.solvers import check_weights

        weights = check_weights(sample_weight, n)
    if isinstance(method, str) and method in REFIT_METHODS:
        if weights is not None:
            raise ValueError(
                f"sample_weight is not supported for {method!r}: only the exact engine's "
                "methods take weights"
            )
        refit = REFIT_METHODS[method]
        fitter, uses_C = _estimator_fitter(refit, tol, max_iter), refit.uses_C
        shortcut = refit.fold_from_full
    else:
        formulation = get_formulation(method) if isinstance(method, str) else method
        fitter = _formulation_fitter(formulation, n_classes, solver, tol, max_iter)
    rows, preds, gaps = [], [], []
    for gamma in gammas:
        K = kernels[gamma]
        for k, C in enumerate(Cs):
            if not uses_C and k > 0:  # C is not a parameter: the same LOO at every C
                rows.append(rows[-1]._replace(gamma=gamma, C=C, seconds=0.0))
                preds.append(preds[-1])
                gaps.append(gaps[-1])
            else:
                row, pred, gap = _refit_point(fitter, K, y_idx, gamma, C, seed, shortcut, weights)
                rows.append(row)
                preds.append(classes[pred])
                gaps.append(gap)
            if progress is not None:
                progress(len(rows), len(gammas) * len(Cs))
    frame = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    return frame, np.array(preds), np.array(gaps)


def loo_records(
    X: ArrayLike,
    y: ArrayLike,
    method: str | EstimatorMethod,
    gammas: Sequence[float],
    Cs: Sequence[float],
    *,
    threads: int = 1,
    return_predictions: bool = False,
    **options: Any,
) -> pd.DataFrame | tuple[pd.DataFrame, NDArray]:
    """The LOO grid rows of any method of :data:`LOO_METHODS` or of a config's own
    classifier, the way it is served: the one place that chooses the LOO path.

    The exact engine (:func:`isvm.loo.loo_grid`, on ``threads`` threads) where it serves
    ``method``, else :func:`loo_refit` (one fold at a time); an
    :class:`~isvm.loo.estimator_method.EstimatorMethod` by
    :func:`~isvm.loo.estimator_method.loo_estimator` (folds on ``threads`` processes).
    ``options`` (``tol``, ``max_iter``, ``seed``, ``kernel_cache``, ``progress``, ...) go
    to that path (an estimator takes ``seed`` and ``progress``). With
    ``return_predictions`` also the LOO predictions, shape (n_grid, N).
    """
    if not isinstance(method, str):
        from isvm.loo.estimator_method import loo_estimator

        return loo_estimator(
            X,
            y,
            method,
            gammas,
            Cs,
            n_jobs=threads,
            return_predictions=return_predictions,
            **options,
        )
    check_method(method)
    if LOO_METHODS[method] == "engine":
        from isvm.loo.driver import loo_grid

        return loo_grid(
            X,
            y,
            method,
            gammas,
            Cs,
            threads=threads,
            return_predictions=return_predictions,
            **options,
        )
    frame, preds, _ = loo_refit(X, y, method, gammas, Cs, **options)
    return (frame, preds) if return_predictions else frame
