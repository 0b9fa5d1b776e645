"""Exact leave-one-out model selection with scikit-learn's search API: :class:`LOOSearchCV`.

``LOOSearchCV(InhibitorySVC(), {"C": [...], "gamma": [...]}).fit(X, y)`` gives what
``GridSearchCV(InhibitorySVC(), grid, cv=LeaveOneOut())`` gives (``cv_results_``,
``best_params_``, ``best_estimator_``, ...), computed by the project's LOO machinery
instead of N refits per grid point. How each grid point is served:

- **the exact engine** (:func:`isvm.loo.loo_grid`): the bias-free formulations
  (``InhibitorySVC``, ``OneVsAllSVC``, ``WestonWatkinsSVC``, ``LeeLinWahbaSVC``,
  ``ScatterSVC``) with ``kernel="rbf"``. Every fold's prediction is that of the fold
  problem's exact optimum, certified; folds the certificate cannot settle (near-ties)
  are counted in ``n_uncertified``;
- **the workflow's refit fallback** (:func:`isvm.loo.loo_refit`): ``CrammerSingerSVC``
  with ``kernel="rbf"`` (method ``"cs"``), the way ``isvm loo`` serves it;
- **a refit per fold on a kernel computed once**: everything else (other kernels, the
  baselines, pipelines, wrappers), the same fits as GridSearchCV's. ``loo_grid`` and
  ``loo_refit`` build the paper's rbf kernel from X and take no other kernel, so
  ``linear``, ``poly``, ``sigmoid``, callable and precomputed kernels come here.

Which estimator goes where is the estimator's own ``_loo_method()`` (its name in
:data:`isvm.loo.LOO_METHODS`); parameters other than C and gamma are fixed at the
estimator's values or, when gridded, an outer loop (one engine call per setting and
gamma, along the C path).
"""

from __future__ import annotations

import numbers
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from copy import deepcopy
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import get_scorer
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from isvm._kernel_estimator import KernelClassifier
from isvm.kernels import GAMMA_CONVENTION, kernel_matrix

#: the parameters the engine walks (a path along C per gamma); any other is an outer loop
PATH_PARAMS: tuple[str, ...] = ("C", "gamma")


def _route(estimator: BaseEstimator) -> str | None:
    """The :data:`isvm.loo.LOO_METHODS` name serving ``estimator``, or None (refit per fold).

    Only an rbf kernel: the engine and ``loo_refit`` build the rbf kernel themselves.
    """
    method = getattr(estimator, "_loo_method", None)
    if method is None or not isinstance(estimator, KernelClassifier):
        return None
    kernel = estimator.kernel
    if not isinstance(kernel, str) or kernel != "rbf":
        return None
    return method()


def _check_positive_values(name: str, values: Iterable[Any]) -> None:
    for value in values:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < np.inf:
            extra = f" ({GAMMA_CONVENTION})" if name.rsplit("__", 1)[-1] == "gamma" else ""
            raise ValueError(
                f"param_grid: {name} must be positive finite numbers, got {value!r}{extra}"
            )


def _check_grid(estimator: BaseEstimator, param_grid: Any) -> list[dict[str, Any]]:
    """The candidates in scikit-learn's order (:class:`ParameterGrid`), checked before any fit.

    A ValueError for a parameter ``estimator`` does not have and for a C or gamma that is
    not a positive finite number.
    """
    grids = [param_grid] if isinstance(param_grid, Mapping) else list(param_grid)
    valid = estimator.get_params(deep=True)
    for grid in grids:
        if not isinstance(grid, Mapping):
            raise TypeError(f"param_grid must be a dict or a list of dicts, got {grid!r}")
        for name in grid:
            if name not in valid:
                raise ValueError(
                    f"param_grid: {type(estimator).__name__} has no parameter {name!r}; "
                    f"its parameters are {sorted(valid)}"
                )
    candidates = list(ParameterGrid(param_grid))
    if not candidates:
        raise ValueError("param_grid has no candidates")
    for grid in grids:
        for name, values in grid.items():
            if name.rsplit("__", 1)[-1] in PATH_PARAMS:
                _check_positive_values(name, values)
    return candidates


def _check_candidate(estimator: BaseEstimator) -> None:
    """The estimator's parameter constraints (scikit-learn's ``_validate_params``), so that
    a bad value in the grid fails before any fit; estimators without them check theirs
    when fitted."""
    check = getattr(estimator, "_check_params", None) or getattr(
        estimator, "_validate_params", None
    )
    if check is not None and hasattr(estimator, "_parameter_constraints"):
        check()


def _masked_params(candidates: Sequence[Mapping[str, Any]]) -> dict[str, np.ma.MaskedArray]:
    """``param_<name>`` arrays as scikit-learn builds them: masked where a candidate lacks it."""
    names = sorted({name for params in candidates for name in params})
    out = {}
    for name in names:
        present = [params[name] for params in candidates if name in params]
        try:
            arr = np.array(present)
            dtype = arr.dtype if arr.dtype.kind != "U" and arr.ndim == 1 else np.dtype(object)
        except ValueError:
            dtype = np.dtype(object)
        column = np.ma.MaskedArray(np.empty(len(candidates), dtype=dtype), mask=True)
        for k, params in enumerate(candidates):
            if name in params:
                column[k] = params[name]
        out[f"param_{name}"] = column
    return out


def _ranks(means: NDArray[np.float64]) -> NDArray[np.int32]:
    """scikit-learn's ``rank_test_score``: 1 for the best, ties share the lowest rank."""
    from scipy.stats import rankdata

    if np.isnan(means).all():
        return np.ones_like(means, dtype=np.int32)
    filled = np.nan_to_num(means, nan=np.nanmin(means) - 1)
    return rankdata(-filled, method="min").astype(np.int32)


def _best_has(name: str) -> Callable[[Any], bool]:
    """``available_if`` check: the fitted best estimator (else the unfitted one) has ``name``."""

    def check(search: Any) -> bool:
        getattr(getattr(search, "best_estimator_", search.estimator), name)
        return True

    return check


class _Progress:
    """``verbose`` output: one line per grid point as it is done."""

    def __init__(self, verbose: int, total: int) -> None:
        self.verbose, self.total, self.done = verbose, total, 0
        self.start = time.perf_counter()

    def __call__(self, route: str, params: Mapping[str, Any]) -> None:
        self.done += 1
        if self.verbose > 0:
            shown = ", ".join(f"{k}={v!r}" for k, v in sorted(params.items()))
            print(
                f"[LOOSearchCV] {self.done}/{self.total} {route} {shown} "
                f"({time.perf_counter() - self.start:.1f} s)",
                file=sys.stderr,
                flush=True,
            )


class LOOSearchCV(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Exact leave-one-out grid search: ``GridSearchCV(cv=LeaveOneOut())``'s results, fast.

    Scores every candidate of ``param_grid`` by its leave-one-out (LOO) accuracy,
    picks the best and refits it on all data, with scikit-learn's search API. For the
    bias-free formulations with the rbf kernel the exact LOO engine
    (:func:`isvm.loo.loo_grid`) computes a whole C path per gamma at the cost of a few
    fits; Crammer-Singer uses the workflow's refit fallback (:func:`isvm.loo.loo_refit`);
    everything else is refit per fold on a kernel computed once (see the module
    docstring). The gamma is the estimators' per-feature one: ours = SVC's gamma x
    n_features.

    Parameters
    ----------
    estimator : a classifier of :mod:`isvm.estimators` or :mod:`isvm.baselines` (or any
        scikit-learn classifier, served by refitting).
    param_grid : dict or list of dicts, parameter name -> list of values, as for
        ``GridSearchCV``. ``C`` and ``gamma`` form the engine's path; other parameters
        are fixed at the estimator's values or, where listed, an outer loop.
    scoring : "accuracy" (or None, the same): with one test point per fold the
        per-fold score is 0 or 1 and its mean is the LOO accuracy.
    refit : refit the best candidate on all data as ``best_estimator_``.
    n_jobs : threads for the engine's folds (``loo_grid``'s ``threads``) and joblib
        workers for the per-fold refits; None means 1, -1 all cores. Results do not
        depend on it.
    verbose : > 0 prints one line per grid point (to stderr) as it is done.

    Attributes
    ----------
    cv_results_ : dict of arrays, scikit-learn's keys: ``params``, ``param_<name>``,
        ``split<k>_test_score`` (k = 0..N-1, 0 or 1: fold k's held-out point right),
        ``mean_test_score`` (the LOO accuracy), ``std_test_score``, ``rank_test_score``,
        ``mean_fit_time`` (seconds per fold: the grid point's time / N, fit and
        prediction), ``std_fit_time``, ``mean_score_time``, ``std_score_time`` (0: not
        separated); and ``n_uncertified`` (folds whose prediction the engine's
        certificate could not prove: near-ties; every fold of a refit), ``n_capped``
        (fits at their iteration cap), ``loo_route`` (``"engine:<method>"``,
        ``"refit:<method>"`` or ``"refit"``).
    best_index_, best_params_, best_score_ : the best candidate. **Ties** go to the
        first of the best in ``params`` order (the order of :class:`ParameterGrid`), as
        in scikit-learn: ``best_index_`` is the first candidate with
        ``rank_test_score == 1``.
    best_estimator_, refit_time_ : the best candidate fitted on all data (``refit=True``).
    n_splits_ : N, the number of folds.
    multimetric_ : False.

    Notes
    -----
    The engine keeps all L classes in every fold (a fold whose held-out point is the
    only one of its class still has L classes), where a refit on the fold's points has
    L - 1: with a class of one sample the two can differ at that point; ``fit`` warns.
    The engine's folds are exact for the estimator's problem whatever its ``solver``;
    a refit at a loose ``tol`` can differ from the exact optimum at near-ties. X is
    validated into a numeric array (no NaN) before anything else, also for estimators
    served by refitting.
    """

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        scoring="accuracy",
        refit=True,
        n_jobs=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------ fit

    def fit(self, X: ArrayLike, y: ArrayLike) -> LOOSearchCV:
        """Score every candidate by its exact LOO accuracy, then refit the best on X, y."""
        if self.scoring not in ("accuracy", None):
            raise ValueError(
                "LOOSearchCV scores by accuracy only (scoring='accuracy' or None): each "
                f"fold has one test point; got scoring={self.scoring!r}"
            )
        candidates = _check_grid(self.estimator, self.param_grid)
        X, y = validate_data(self, X, y, dtype="numeric", ensure_all_finite=True)
        check_classification_targets(y)
        classes, counts = np.unique(y, return_counts=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"LOOSearchCV needs samples of at least 2 classes, got 1 class ({classes[0]})"
            )
        estimators = [clone(self.estimator).set_params(**params) for params in candidates]
        for est in estimators:
            _check_candidate(est)
        routes = [_route(est) for est in estimators]
        if any(r is not None for r in routes) and counts.min() < 2:
            warnings.warn(
                "a class has a single sample: the LOO engine keeps all classes in its fold, "
                "a refit (GridSearchCV) trains that fold without the class",
                UserWarning,
                stacklevel=2,
            )
        n = y.shape[0]
        preds = np.empty((len(candidates), n), dtype=y.dtype)
        seconds = np.zeros(len(candidates))
        uncertified = np.zeros(len(candidates), dtype=np.int64)
        capped = np.zeros(len(candidates), dtype=np.int64)
        progress = _Progress(int(self.verbose), len(candidates))
        threads = _threads(self.n_jobs)
        kernels: dict = {}  # rbf kernels per gamma, shared by every engine call
        for group in _groups(estimators, routes):
            method = routes[group[0]]
            if method is None:
                for k in group:
                    preds[k], seconds[k], capped[k] = _refit_folds(estimators[k], X, y, self.n_jobs)
                    uncertified[k] = n
                    progress("refit", candidates[k])
                continue

            def report(k: int, route: str = _route_name(method)) -> None:
                progress(route, candidates[k])

            served = _served_path(group, estimators, method, X, y, threads, kernels, report)
            for k, pred, row in served:
                preds[k] = pred
                seconds[k], uncertified[k], capped[k] = row
        self._store(candidates, routes, y, preds, seconds, uncertified, capped)
        if self.refit:
            start = time.perf_counter()
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_)
            self.best_estimator_.fit(X, y)
            self.refit_time_ = time.perf_counter() - start
        return self

    def _store(self, candidates, routes, y, preds, seconds, uncertified, capped) -> None:
        """``cv_results_`` and the best candidate, computed as GridSearchCV computes them."""
        n = y.shape[0]
        splits = (preds == y[None, :]).astype(np.float64)
        means = np.average(splits, axis=1)
        stds = np.sqrt(np.average((splits - means[:, None]) ** 2, axis=1))
        results: dict[str, Any] = {
            "mean_fit_time": seconds / n,
            "std_fit_time": np.zeros(len(candidates)),
            "mean_score_time": np.zeros(len(candidates)),
            "std_score_time": np.zeros(len(candidates)),
            **_masked_params(candidates),
            "params": candidates,
        }
        for k in range(n):
            results[f"split{k}_test_score"] = splits[:, k]
        results["mean_test_score"] = means
        results["std_test_score"] = stds
        results["rank_test_score"] = _ranks(means)
        results["n_uncertified"] = uncertified
        results["n_capped"] = capped
        results["loo_route"] = np.array(
            ["refit" if r is None else _route_name(r) for r in routes], dtype=object
        )
        self.cv_results_ = results
        self.best_index_ = int(results["rank_test_score"].argmin())
        self.best_params_ = candidates[self.best_index_]
        self.best_score_ = float(means[self.best_index_])
        self.n_splits_ = n
        self.multimetric_ = False
        self.scorer_ = get_scorer("accuracy")

    # ------------------------------------------------------------------ the paper's view

    def grid_summary(self, qs: Sequence[float] = (10, 50), near: float = 0.01) -> dict[str, float]:
        """The paper's view of the grid: the mean LOO accuracy of the top q% of candidates
        (``top<q>_mean``, Table 3's statistic) and the share of candidates within ``near``
        (accuracy, 0.01 = 1 point) of the best (``near_best_share``)."""
        from isvm.experiment.pooling import top_mean

        check_is_fitted(self, "cv_results_")
        means = np.asarray(self.cv_results_["mean_test_score"], dtype=np.float64)
        out = {f"top{q:g}_mean": top_mean(means, q) for q in qs}
        out["near_best_share"] = float(np.mean(means >= means.max() - near - 1e-12))
        return out

    # ------------------------------------------------------------------ delegation

    def _fitted_best(self) -> bool:
        check_is_fitted(self, "cv_results_")
        if not self.refit:
            raise AttributeError(
                "this LOOSearchCV was fitted with refit=False: best_estimator_ is not "
                "available; use best_params_ to fit an estimator"
            )
        return True

    @available_if(_best_has("predict"))
    def predict(self, X: ArrayLike) -> NDArray:
        """``best_estimator_.predict(X)``."""
        self._fitted_best()
        return self.best_estimator_.predict(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """``best_estimator_.decision_function(X)``."""
        self._fitted_best()
        return self.best_estimator_.decision_function(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """``best_estimator_.predict_proba(X)``."""
        self._fitted_best()
        return self.best_estimator_.predict_proba(X)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Accuracy of ``best_estimator_`` on X, y (the search's scoring)."""
        self._fitted_best()
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

    @property
    def classes_(self) -> NDArray:
        """``best_estimator_.classes_``."""
        self._fitted_best()
        return self.best_estimator_.classes_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = deepcopy(sub.classifier_tags)
        tags.input_tags.pairwise = sub.input_tags.pairwise
        tags.input_tags.sparse = False
        return tags


def _route_name(method: str) -> str:
    from isvm.loo import LOO_METHODS

    return f"{LOO_METHODS[method]}:{method}"


def _threads(n_jobs: int | None) -> int:
    from joblib import effective_n_jobs

    return max(1, int(effective_n_jobs(n_jobs)))


def _groups(estimators: Sequence[BaseEstimator], routes: Sequence[str | None]) -> list[list[int]]:
    """Candidates that differ only in C and gamma, in order of first appearance.

    Each group with a route is one outer-loop setting (one engine call per gamma); a
    candidate without one is a group of its own.
    """
    groups: dict[str, list[int]] = {}
    for k, (est, route) in enumerate(zip(estimators, routes, strict=True)):
        if route is None:
            groups[f"refit-{k}"] = [k]
            continue
        fixed = {name: v for name, v in est.get_params().items() if name not in PATH_PARAMS}
        groups.setdefault(f"{route}|{sorted(fixed.items())!r}", []).append(k)
    return list(groups.values())


def _served_path(group, estimators, method, X, y, threads, kernels, report):
    """Yield ``(candidate, LOO predictions, (seconds, uncertified, capped))`` for a group of
    candidates that differ only in C and gamma: one C path per gamma through
    :func:`_loo_path`; ``report(candidate)`` as each grid point is done."""
    by_gamma: dict[float, list[int]] = {}
    for k in group:
        by_gamma.setdefault(float(estimators[k].gamma), []).append(k)
    for gamma, members in by_gamma.items():
        Cs = sorted({float(estimators[k].C) for k in members})
        at_C = {C: [k for k in members if float(estimators[k].C) == C] for C in Cs}

        def done(count: int, _total: int, Cs=Cs, at_C=at_C) -> None:
            for k in at_C[Cs[count - 1]]:
                report(k)

        first = estimators[members[0]]
        frame, preds = _loo_path(first, method, X, y, gamma, Cs, threads, kernels, done)
        columns = frame[["seconds", "n_uncertified", "n_capped"]].to_numpy()
        for i, C in enumerate(frame["C"].to_numpy()):
            for k in at_C[float(C)]:
                seconds, uncertified, capped = columns[i]
                yield k, preds[i], (float(seconds), int(uncertified), int(capped))


def _loo_path(estimator, method, X, y, gamma, Cs, threads, kernels, progress):
    """One gamma's C path of ``method`` as the workflow serves it: (frame, predictions).

    The engine or a refit, as :func:`isvm.loo.loo_records` chooses. The estimator's
    ``tol``, its ``max_iter`` (epochs: only for the cd solver) and an integer
    ``random_state`` (the engine's seed; else 0) go with it.
    """
    from isvm.loo import loo_records

    seed = estimator.random_state if isinstance(estimator.random_state, numbers.Integral) else 0
    cd_like = getattr(estimator, "solver", "cd") in ("cd", "bcd")
    options = {
        "tol": float(estimator.tol),
        "max_iter": estimator.max_iter if cd_like else None,
        "seed": int(seed),
        "kernel_cache": kernels,
        "progress": progress,
    }
    return loo_records(
        X, y, method, [gamma], Cs, threads=threads, return_predictions=True, **options
    )


def _refit_folds(estimator, X, y, n_jobs) -> tuple[NDArray, float, int]:
    """LOO predictions of ``estimator`` by one fit per fold: (predictions, seconds, capped).

    A :class:`KernelClassifier` with a kernel function gets its kernel computed once
    (:func:`isvm.kernels.kernel_matrix`) and is fitted on slices of it
    (``kernel="precomputed"``); any other estimator is fitted on the rows of X.
    """
    from joblib import Parallel, delayed

    start = time.perf_counter()
    pairwise = get_tags(estimator).input_tags.pairwise
    if isinstance(estimator, KernelClassifier) and not pairwise:
        X = kernel_matrix(
            np.asarray(X, dtype=np.float64),
            kernel=estimator.kernel,
            gamma=estimator.gamma,
            degree=estimator.degree,
            coef0=estimator.coef0,
        )
        estimator = clone(estimator).set_params(kernel="precomputed")
        pairwise = True
    n = y.shape[0]
    out = Parallel(n_jobs=n_jobs)(
        delayed(_one_fold)(estimator, X, y, p, pairwise) for p in range(n)
    )
    preds = np.array([pred for pred, _ in out], dtype=y.dtype)
    capped = sum(int(c) for _, c in out)
    return preds, time.perf_counter() - start, capped


def _one_fold(estimator, X, y, p: int, pairwise: bool) -> tuple[Any, bool]:
    """Fit a clone without point p, predict p: (prediction, hit its iteration cap)."""
    train = np.arange(y.shape[0]) != p
    if pairwise:
        X_train, X_test = X[np.ix_(train, train)], X[p : p + 1][:, train]
    else:
        X_train, X_test = X[train], X[p : p + 1]
    est = clone(estimator)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est.fit(X_train, y[train])
    capped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return est.predict(X_test)[0], capped
