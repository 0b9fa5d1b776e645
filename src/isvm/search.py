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

Every metric of ``scoring`` is computed on a candidate's N pooled held-out predictions
(``loo_predictions_``), as ``cross_val_predict(..., cv=LeaveOneOut())`` and the metric
would: for accuracy that is GridSearchCV's mean of one-point folds, for other metrics
(balanced accuracy, macro F1) it is the only reading that is not degenerate.
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
from sklearn.metrics import accuracy_score, get_scorer
from sklearn.metrics._scorer import _BaseScorer
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    has_fit_parameter,
    validate_data,
)

from isvm._kernel_estimator import KernelClassifier
from isvm.kernels import GAMMA_CONVENTION, kernel_matrix

#: the parameters the engine walks (a path along C per gamma); any other is an outer loop
PATH_PARAMS: tuple[str, ...] = ("C", "gamma")
#: a target looks continuous (a regression target) when every label is a number, some
#: label is not a whole number, and it has more distinct labels than this or than half
#: the rows (:func:`continuous_target`)
CONTINUOUS_DISTINCT = 10
#: constant feature columns named in the warning, at most
_SHOWN_COLUMNS = 10


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


class _PooledMetric:
    """One metric of ``scoring`` on a candidate's N pooled LOO predictions.

    ``sign * score_func(y, predictions, **kwargs)`` of its scikit-learn scorer: what
    ``cross_val_predict(estimator, X, y, cv=LeaveOneOut())`` followed by the metric gives.
    Accuracy alone is also the mean of the folds' 0/1 scores (``per_fold``), so only it
    keeps GridSearchCV's ``split<k>_test_*`` keys and their std.
    """

    def __init__(self, scorer: _BaseScorer, label: str) -> None:
        self.scorer, self.label = scorer, label
        self.per_fold = (
            scorer._score_func is accuracy_score and not scorer._kwargs and scorer._sign == 1
        )

    def __call__(self, y: NDArray, predictions: NDArray) -> float:
        scorer = self.scorer
        return float(scorer._sign * scorer._score_func(y, predictions, **scorer._kwargs))


def _scorer(label: str, scoring: Any) -> _PooledMetric:
    """The metric ``scoring`` names (a scikit-learn scoring name) or is (a scorer made by
    ``make_scorer``); a ValueError, naming ``label``, for one that needs more than the
    held-out predictions (probabilities, decision values) or is an opaque callable."""
    scorer = get_scorer(scoring) if isinstance(scoring, str) else scoring
    if not isinstance(scorer, _BaseScorer):
        raise ValueError(
            f"{label}: {scoring!r} is not a scikit-learn scorer; LOOSearchCV computes each "
            "metric on the pooled held-out predictions, so give a scoring name or "
            "make_scorer(metric) of (y_true, y_pred)"
        )
    methods = scorer._response_method
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    if methods != ("predict",):
        raise ValueError(
            f"{label} needs {' or '.join(methods)} of each held-out point; LOOSearchCV "
            "scores held-out predictions only (metrics of (y_true, y_pred) such as "
            "'accuracy', 'balanced_accuracy', 'f1_macro')"
        )
    return _PooledMetric(scorer, label)


def _metrics(scoring: Any) -> tuple[dict[str, _PooledMetric], bool]:
    """(metric name -> metric, several metrics?) of ``scoring``, as GridSearchCV reads it:
    None (accuracy), a name or a scorer (one metric, named ``"score"``), a list or tuple
    of distinct names, or a dict name -> name or scorer."""
    if scoring is None or isinstance(scoring, str) or not isinstance(scoring, (list, tuple, dict)):
        shown = "accuracy" if scoring is None else scoring
        return {"score": _scorer(f"scoring={shown!r}", shown)}, False
    if isinstance(scoring, dict):
        if not scoring or not all(isinstance(k, str) for k in scoring):
            raise ValueError(f"scoring as a dict needs metric names (str) as keys, got {scoring!r}")
        items = list(scoring.items())
    else:
        if not scoring or not all(isinstance(k, str) for k in scoring):
            raise ValueError(
                "scoring as a list or tuple needs scoring names (str); use a dict "
                f"name -> scorer for scorers; got {scoring!r}"
            )
        if len(set(scoring)) != len(scoring):
            raise ValueError(f"scoring lists a metric twice: {scoring!r}")
        items = [(name, name) for name in scoring]
    return {name: _scorer(f"scoring[{name!r}]", value) for name, value in items}, True


def _check_refit(refit: Any, metrics: Mapping[str, Any], multimetric: bool) -> None:
    """GridSearchCV's rule: with several metrics ``refit`` names one, is a callable or is False."""
    if not multimetric or refit is False or callable(refit):
        return
    if not (isinstance(refit, str) and refit in metrics):
        raise ValueError(
            f"with several metrics refit must name one of them ({', '.join(metrics)}), be a "
            "callable of cv_results_ returning best_index_, or be False (then no best_* "
            f"attributes); got refit={refit!r}"
        )


def _best_index(refit: Any, metric: str, results: Mapping[str, Any]) -> int:
    """``best_index_`` as GridSearchCV chooses it: ``refit(cv_results_)`` where refit is a
    callable, else the first candidate of rank 1 on ``metric``."""
    if not callable(refit):
        return int(results[f"rank_test_{metric}"].argmin())
    index = refit(results)
    if not isinstance(index, numbers.Integral):
        raise TypeError("best_index_ returned is not an integer")
    if index < 0 or index >= len(results["params"]):
        raise IndexError("best_index_ index out of range")
    return int(index)


def continuous_target(y: ArrayLike) -> str | None:
    """Why ``y`` looks like a regression target, or None where it looks like class labels.

    It does when every label is a number (or a string that reads as one), some label is
    not a whole number, and there are more than :data:`CONTINUOUS_DISTINCT` (10) distinct
    labels or more than half as many as rows: measurements, not classes.
    """
    y = np.asarray(y).ravel()
    try:
        labels = np.unique(y)
        values = np.array([float(v) for v in labels], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if values.size == 0 or not np.isfinite(values).all() or np.all(values == np.round(values)):
        return None
    if labels.shape[0] <= min(CONTINUOUS_DISTINCT, y.shape[0] / 2):
        return None
    return f"{labels.shape[0]} distinct numeric labels in {y.shape[0]} rows, not all whole numbers"


def _check_class_sizes(classes: NDArray, counts: NDArray) -> None:
    """A one-line ValueError where a class has fewer than 2 samples: the fold holding out
    its only sample has no example of it, so LOO cannot score that class."""
    single = classes[counts < 2]
    if single.shape[0]:
        shown = ", ".join(repr(c.item() if hasattr(c, "item") else c) for c in single[:5])
        if single.shape[0] == 1:
            which = f"class {shown} has a single sample"
        else:
            more = f" (and {single.shape[0] - 5} more)" if single.shape[0] > 5 else ""
            which = f"classes {shown}{more} have a single sample each"
        raise ValueError(
            "leave-one-out needs at least 2 samples of every class (the fold holding out a "
            f"class's only sample has none of it to learn from); {which}"
        )


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

    Scores every candidate of ``param_grid`` by its leave-one-out (LOO) predictions,
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
    scoring : a metric of (y_true, y_pred), computed on each candidate's N pooled LOO
        predictions (``cross_val_predict(..., cv=LeaveOneOut())`` then the metric, not a
        mean of one-point folds): a scikit-learn scoring name ("accuracy", the default,
        or None; "balanced_accuracy", "f1_macro", ...) or a scorer
        (``make_scorer(f1_score, average="macro")``); several as a list or tuple of
        names or a dict name -> name or scorer. Metrics of probabilities or decision
        values ("roc_auc", "neg_log_loss", ...) are refused: a ValueError naming them.
    refit : as in GridSearchCV: True (refit the best candidate on all data as
        ``best_estimator_``), False, a metric name (needed, or a callable, with several
        metrics) or a callable ``refit(cv_results_) -> best_index_`` (then
        ``best_score_`` is not set).
    n_jobs : threads for the engine's folds (``loo_grid``'s ``threads``) and joblib
        workers for the per-fold refits; None means 1, -1 all cores. Results do not
        depend on it.
    verbose : > 0 prints one line per grid point (to stderr) as it is done.
    allow_continuous_target : False refuses a target that looks continuous
        (:func:`continuous_target`: every label a number, some not whole, more than 10
        distinct or more than N/2); True classifies it anyway.

    Attributes
    ----------
    cv_results_ : dict of arrays, scikit-learn's keys: ``params``, ``param_<name>``,
        ``mean_test_<m>``, ``std_test_<m>``, ``rank_test_<m>`` per metric (``<m>`` is
        ``score`` for one metric, else the metric's name), ``split<k>_test_<m>`` (k =
        0..N-1) for accuracy only (0 or 1: fold k's held-out point right; its mean is
        the LOO accuracy); another metric is one score of the pooled predictions, so it
        has no split keys and its std is NaN. ``mean_fit_time`` (seconds per fold: the
        grid point's time / N, fit and prediction), ``std_fit_time``,
        ``mean_score_time``, ``std_score_time`` (0: not separated); and
        ``n_uncertified`` (folds whose prediction the engine's certificate could not
        prove: near-ties; every fold of a refit), ``n_capped`` (fits at their iteration
        cap), ``loo_route`` (``"engine:<method>"``, ``"refit:<method>"`` or ``"refit"``).
    loo_predictions_ : (n_candidates, N) array, candidate k's held-out prediction of
        every sample, in ``params`` order: what every metric is computed from.
    best_index_, best_params_, best_score_ : the best candidate by the (refit) metric.
        **Ties** go to the first of the best in ``params`` order (the order of
        :class:`ParameterGrid`), as in scikit-learn: ``best_index_`` is the first
        candidate with ``rank_test_<m> == 1``. With several metrics and ``refit=False``
        none is set; with a callable ``refit``, ``best_score_`` is not.
    best_estimator_, refit_time_ : the best candidate fitted on all data (``refit``).
    n_splits_ : N, the number of folds.
    multimetric_ : whether several metrics were scored.
    scorer_ : the scikit-learn scorer, or a dict name -> scorer for several metrics.

    Notes
    -----
    ``fit`` refuses, in one line, a class of a single sample (its fold has nothing to
    learn the class from), a target that looks continuous, and a metric that fails on
    the labels, before any LOO work; it warns once where feature columns are constant
    (kept: the refitted estimator sees the columns the search saw; for this package's
    kernels they count in the per-feature gamma's n_features). The engine's folds are
    exact for the estimator's problem whatever its ``solver``; a refit at a loose
    ``tol`` can differ from the exact optimum at near-ties. X is validated into a
    numeric array (no NaN) before anything else, also for estimators served by
    refitting.
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
        allow_continuous_target=False,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.allow_continuous_target = allow_continuous_target

    # ------------------------------------------------------------------ fit

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> LOOSearchCV:
        """Score every candidate's exact LOO predictions by ``scoring``, then refit the best.

        ``sample_weight`` goes to every fit: each fold's fit gets its points' weights
        (``cross_val_predict(..., params={"sample_weight": w})``), the refit all of them.
        """
        metrics, multimetric = _metrics(self.scoring)
        _check_refit(self.refit, metrics, multimetric)
        candidates = _check_grid(self.estimator, self.param_grid)
        X, y = validate_data(self, X, y, dtype="numeric", ensure_all_finite=True)
        self._check_target(y, metrics)
        estimators = [clone(self.estimator).set_params(**params) for params in candidates]
        for est in estimators:
            _check_candidate(est)
        self._warn_constant_columns(X)
        routes = [_route(est) for est in estimators]
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
            if not has_fit_parameter(self.estimator, "sample_weight"):
                raise ValueError(
                    f"{type(self.estimator).__name__}.fit takes no sample_weight; "
                    "fit LOOSearchCV without it"
                )
            if not np.all(sample_weight > 0):  # the engine needs every point weighted
                routes = [None] * len(routes)
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
                    preds[k], seconds[k], capped[k] = _refit_folds(
                        estimators[k], X, y, self.n_jobs, sample_weight
                    )
                    uncertified[k] = n
                    progress("refit", candidates[k])
                continue

            def report(k: int, route: str = _route_name(method)) -> None:
                progress(route, candidates[k])

            served = _served_path(
                group, estimators, method, X, y, threads, kernels, report, sample_weight
            )
            for k, pred, row in served:
                preds[k] = pred
                seconds[k], uncertified[k], capped[k] = row
        work = (seconds, uncertified, capped)
        self._store(candidates, routes, y, preds, work, metrics, multimetric)
        if self.refit:
            start = time.perf_counter()
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_)
            fit_params = {} if sample_weight is None else {"sample_weight": sample_weight}
            self.best_estimator_.fit(X, y, **fit_params)
            self.refit_time_ = time.perf_counter() - start
        return self

    def _check_target(self, y: NDArray, metrics: Mapping[str, _PooledMetric]) -> None:
        """One-line ValueErrors, before any fit, for a target LOO cannot score: one that
        looks continuous (unless ``allow_continuous_target``), one class, a class of one
        sample, or a metric that fails on these labels (tried on y against itself)."""
        reason = None if self.allow_continuous_target else continuous_target(y)
        if reason is not None:
            raise ValueError(
                f"y looks continuous, a regression target ({reason}); LOOSearchCV selects "
                "a classifier. If these are class labels, pass allow_continuous_target=True "
                "(and the labels as strings where they are not whole numbers)"
            )
        check_classification_targets(y)
        classes, counts = np.unique(y, return_counts=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"LOOSearchCV needs samples of at least 2 classes, got 1 class ({classes[0]})"
            )
        _check_class_sizes(classes, counts)
        for metric in metrics.values():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    metric(y, y)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{metric.label} fails on these labels: {exc}") from exc

    def _warn_constant_columns(self, X: NDArray) -> None:
        """One warning naming the constant feature columns: they are kept (the estimator
        refitted on X sees the same columns as the search), but they carry no information
        and, for this package's kernels, count in the per-feature gamma's n_features."""
        if get_tags(self.estimator).input_tags.pairwise or X.shape[0] < 2:
            return
        constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
        if not constant.shape[0]:
            return
        names = getattr(self, "feature_names_in_", None)
        shown = [repr(str(names[j])) if names is not None else str(j) for j in constant]
        listed = ", ".join(shown[:_SHOWN_COLUMNS])
        if len(shown) > _SHOWN_COLUMNS:
            listed += f" and {len(shown) - _SHOWN_COLUMNS} more"
        p = X.shape[1]
        gamma = (
            f"; they count in the per-feature gamma's n_features = {p} "
            f"(exp(-gamma ||x - x'||^2 / {p})): drop them to scale gamma over the other "
            f"{p - constant.shape[0]}"
            if isinstance(self.estimator, KernelClassifier)
            else ""
        )
        warnings.warn(
            f"LOOSearchCV: constant feature column(s) {listed} of {p} are kept{gamma}",
            UserWarning,
            stacklevel=3,
        )

    def _store(self, candidates, routes, y, preds, work, metrics, multimetric) -> None:
        """``cv_results_`` and the best candidate, with GridSearchCV's keys: each metric on
        every candidate's pooled LOO predictions (``loo_predictions_``); ``work`` is
        (seconds, uncertified folds, capped fits) per candidate."""
        n = y.shape[0]
        seconds, uncertified, capped = work
        for stale in (
            "best_index_",
            "best_params_",
            "best_score_",
            "best_estimator_",
            "refit_time_",
        ):
            self.__dict__.pop(stale, None)  # a previous fit's, which this one may not set
        correct = (preds == y[None, :]).astype(np.float64)
        zeros = np.zeros(len(candidates))
        results: dict[str, Any] = {
            "mean_fit_time": seconds / n,
            "std_fit_time": zeros.copy(),
            "mean_score_time": zeros.copy(),
            "std_score_time": zeros.copy(),
            **_masked_params(candidates),
            "params": candidates,
        }
        for name, metric in metrics.items():
            if metric.per_fold:  # accuracy: the mean of the folds' 0/1, as GridSearchCV
                for k in range(n):
                    results[f"split{k}_test_{name}"] = correct[:, k]
                means = np.average(correct, axis=1)
                stds = np.sqrt(np.average((correct - means[:, None]) ** 2, axis=1))
            else:  # one score of all N predictions: no per-fold scores, no spread
                means = np.array([metric(y, pred) for pred in preds], dtype=np.float64)
                stds = np.full(len(candidates), np.nan)
            results[f"mean_test_{name}"] = means
            results[f"std_test_{name}"] = stds
            results[f"rank_test_{name}"] = _ranks(means)
        results["n_uncertified"] = uncertified
        results["n_capped"] = capped
        results["loo_route"] = np.array(
            ["refit" if r is None else _route_name(r) for r in routes], dtype=object
        )
        self.cv_results_ = results
        self.loo_predictions_ = preds
        self.n_splits_ = n
        self.multimetric_ = multimetric
        self.scorer_ = (
            {name: metric.scorer for name, metric in metrics.items()}
            if multimetric
            else metrics["score"].scorer
        )
        if self.refit or not multimetric:
            metric = self.refit if multimetric and isinstance(self.refit, str) else "score"
            self.best_index_ = _best_index(self.refit, metric, results)
            self.best_params_ = candidates[self.best_index_]
            if not callable(self.refit):
                self.best_score_ = float(results[f"mean_test_{metric}"][self.best_index_])

    def _refit_metric(self, what: str, verb: str) -> str:
        """The metric ``what`` reports: ``"score"`` for one metric, else the one ``refit``
        names (a ValueError where it names none)."""
        if not self.multimetric_:
            return "score"
        if not isinstance(self.refit, str):
            raise ValueError(f"{what} of several metrics needs refit to name the one to {verb}")
        return self.refit

    # ------------------------------------------------------------------ the paper's view

    def grid_summary(self, qs: Sequence[float] = (10, 50), near: float = 0.01) -> dict[str, float]:
        """The paper's view of the grid: the mean LOO accuracy of the top q% of candidates
        (``top<q>_mean``, Table 3's statistic) and the share of candidates within ``near``
        (accuracy, 0.01 = 1 point) of the best (``near_best_share``)."""
        from isvm.experiment.pooling import top_mean

        check_is_fitted(self, "cv_results_")
        metric = self._refit_metric("grid_summary", "summarise")
        means = np.asarray(self.cv_results_[f"mean_test_{metric}"], dtype=np.float64)
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
        """``best_estimator_``'s score on X, y by the search's metric (the refit one where
        there are several), as GridSearchCV scores."""
        self._fitted_best()
        metric = self._refit_metric("score", "use")
        scorer = self.scorer_[metric] if self.multimetric_ else self.scorer_
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}
        return float(scorer(self.best_estimator_, X, y, **weights))

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


def fold_weights(
    estimator: BaseEstimator, y: NDArray, sample_weight: NDArray[np.float64] | None
) -> list[tuple[NDArray[np.bool_], NDArray[np.float64] | None]]:
    """The weights each fold's fit gives its points, as (folds, weights) pairs.

    One pair for all folds where the weights do not depend on the fold: none, a
    ``class_weight`` dict, ``sample_weight``. ``class_weight="balanced"`` is computed by
    each fit from its own labels, so a fold of class k weighs the classes by the counts
    with one point of k fewer: one pair per class, the folds of that class with their
    weights (one engine run per class; :func:`isvm.loo.loo_grid`'s folds keep the
    weights they are given).
    """
    class_weight = getattr(estimator, "class_weight", None)
    everyone = np.ones(y.shape[0], dtype=np.bool_)
    if class_weight is None:
        return [(everyone, sample_weight)]
    base = np.ones(y.shape[0]) if sample_weight is None else sample_weight
    classes, y_idx = np.unique(y, return_inverse=True)
    if not isinstance(class_weight, str):
        return [(everyone, base * compute_class_weight(class_weight, classes=classes, y=y)[y_idx])]
    pairs = []
    for k in range(classes.shape[0]):
        held = y_idx == k
        y_fold = np.delete(y, np.flatnonzero(held)[0])
        per_class = compute_class_weight("balanced", classes=classes, y=y_fold)
        pairs.append((held, base * per_class[y_idx]))
    return pairs


def _served_path(group, estimators, method, X, y, threads, kernels, report, sample_weight):
    """Yield ``(candidate, LOO predictions, (seconds, uncertified, capped))`` for a group of
    candidates that differ only in C and gamma: one C path per gamma through
    :func:`_loo_path` (one per weighting of :func:`fold_weights`, each giving its own
    folds' predictions; the diagnostics then sum the runs); ``report(candidate)`` as
    each grid point is done."""
    weightings = fold_weights(estimators[group[0]], y, sample_weight)
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
        preds, columns = None, 0.0
        for r, (folds, weights) in enumerate(weightings):
            last = r == len(weightings) - 1
            frame, run = _loo_path(
                first, method, X, y, gamma, Cs, threads, kernels, done if last else None, weights
            )
            preds = run if preds is None else np.where(folds[None, :], run, preds)
            columns = columns + frame[["seconds", "n_uncertified", "n_capped"]].to_numpy()
        for i, C in enumerate(frame["C"].to_numpy()):
            for k in at_C[float(C)]:
                seconds, uncertified, capped = columns[i]
                yield k, preds[i], (float(seconds), int(uncertified), int(capped))


def _loo_path(estimator, method, X, y, gamma, Cs, threads, kernels, progress, weights=None):
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
    if weights is not None:
        options["sample_weight"] = weights
    return loo_records(
        X, y, method, [gamma], Cs, threads=threads, return_predictions=True, **options
    )


def _refit_folds(estimator, X, y, n_jobs, sample_weight=None) -> tuple[NDArray, float, int]:
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
        delayed(_one_fold)(estimator, X, y, p, pairwise, sample_weight) for p in range(n)
    )
    preds = np.array([pred for pred, _ in out], dtype=y.dtype)
    capped = sum(int(c) for _, c in out)
    return preds, time.perf_counter() - start, capped


def _one_fold(estimator, X, y, p: int, pairwise: bool, sample_weight=None) -> tuple[Any, bool]:
    """Fit a clone without point p (its points' ``sample_weight``), predict p: (prediction,
    hit its iteration cap)."""
    train = np.arange(y.shape[0]) != p
    if pairwise:
        X_train, X_test = X[np.ix_(train, train)], X[p : p + 1][:, train]
    else:
        X_train, X_test = X[train], X[p : p + 1]
    est = clone(estimator)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if sample_weight is None:
            est.fit(X_train, y[train])
        else:
            est.fit(X_train, y[train], sample_weight=sample_weight[train])
    capped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return est.predict(X_test)[0], capped
