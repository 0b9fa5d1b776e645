"""Any scikit-learn classifier, by import path and fixed parameters, through the study's LOO.

A config's definition ``{estimator: "sklearn.svm.SVC", params: {...}}`` becomes an
:class:`EstimatorMethod` (:func:`estimator_method`; :func:`definition_problems` lists
what is wrong without raising, for config checks). :func:`loo_estimator` runs its LOO
on the study's (gamma, C) grid by refitting every fold on the features (not on a
kernel) and returns the records' columns (:data:`isvm.loo.records.GRID_COLUMNS`).

The grid reaches the estimator through its own parameters: ``C`` where it has one, and
``gamma`` where it has one, as scikit-learn's per-distance gamma, the grid's gamma /
n_features (:data:`isvm.kernels.GAMMA_CONVENTION`). A grid axis the estimator lacks
cannot change its LOO, which is then computed once and repeated along that axis.
Light at import: scikit-learn and joblib are imported where used.
"""

from __future__ import annotations

import importlib
import inspect
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from isvm.loo.grid import check_grid
from isvm.loo.inputs import encode_labels, finite_features
from isvm.loo.records import GRID_COLUMNS, GridRow
from isvm.loo.refit import LOO_METHODS, fit_iterations, fit_quietly, refit_row
from isvm.seeding import derive_seed

#: a method's name: the config's ``own_methods`` keys and ``isvm loo --method``
NAME_PATTERN = "[A-Za-z][A-Za-z0-9_]*"
#: the keys of a definition
DEFINITION_KEYS = ("estimator", "params")
#: the estimator's parameters the study's grid sets
GRID_PARAMS = ("C", "gamma")
#: fold tasks per worker and grid point: small enough to pickle X rarely, enough to
#: even out folds of unequal cost
TASKS_PER_WORKER = 4

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


@dataclass(frozen=True)
class EstimatorMethod:
    """A scikit-learn classifier with fixed ``params`` (built by :func:`estimator_method`).

    ``uses_C`` / ``uses_gamma``: the estimator has that parameter, so the grid sets it;
    ``seeded``: it has a ``random_state`` that ``params`` leaves free, which each fit
    then gets from the study's seed.
    """

    name: str
    estimator: str  # import path, e.g. "sklearn.svm.SVC"
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    uses_C: bool = False
    uses_gamma: bool = False
    seeded: bool = False

    @property
    def definition(self) -> dict[str, Any]:
        """The definition it was built from, JSON-ready (``isvm loo --estimator``)."""
        return {"estimator": self.estimator, "params": dict(self.params)}

    def build(self, gamma: float, C: float, n_features: int, seed: int) -> Any:
        """The unfitted estimator at grid point (gamma, C) on ``n_features`` features."""
        grid: dict[str, Any] = {}
        if self.uses_C:
            grid["C"] = float(C)
        if self.uses_gamma:
            grid["gamma"] = float(gamma) / n_features
        if self.seeded:
            grid["random_state"] = seed % 2**32
        return _import(self.estimator)(**self.params, **grid)


def grid_note(method: EstimatorMethod, n_features: int | None = None) -> str:
    """How the grid reaches ``method`` on ``n_features`` features (None: any), in one line."""
    per = f"{n_features} features" if n_features else "M, the data set's features"
    gamma = f"gamma = grid gamma / {per} (scikit-learn's per-distance convention)"
    if method.uses_C and method.uses_gamma:
        return f"C = grid C, {gamma}"
    if method.uses_C:
        return "C = grid C; no gamma: one LOO per C, the same at every gamma"
    if method.uses_gamma:
        return f"{gamma}; no C: one LOO per gamma, the same at every C"
    return "no C, no gamma: one LOO for the whole grid"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _import(path: str) -> Any:
    """The object at dotted ``path``; a ValueError naming it where the import fails."""
    module, _, attribute = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attribute)
    except Exception as exc:  # any import-time failure is the definition's problem
        raise ValueError(f"cannot import {path!r}: {_one_line(exc)}") from exc


def _classifier(path: Any) -> Any:
    """A default instance of the classifier at ``path``; a one-line ValueError if it is none."""
    from sklearn.base import is_classifier

    if not isinstance(path, str) or not _DOTTED.fullmatch(path):
        raise ValueError(
            f"estimator: {path!r} is not a dotted import path (such as 'sklearn.svm.SVC')"
        )
    cls = _import(path)
    if not inspect.isclass(cls):
        raise ValueError(f"{path!r} is not a class (it is a {type(cls).__name__})")
    try:
        instance = cls()
    except Exception as exc:
        raise ValueError(f"cannot build {path!r} without arguments: {_one_line(exc)}") from exc
    if not callable(getattr(instance, "get_params", None)):
        raise ValueError(f"{path!r} is not a scikit-learn estimator (it has no get_params)")
    try:
        classifier = is_classifier(instance)
    except Exception:
        classifier = False
    if not classifier:
        raise ValueError(
            f"{path!r} is not a scikit-learn classifier (sklearn.base.is_classifier is False)"
        )
    return instance


def _params_problems(path: str, instance: Any, params: Mapping) -> list[str]:
    """What is wrong with fixing ``params`` on ``instance``, one line each."""
    names = instance.get_params(deep=False)
    problems = [
        f"{path!r} has no parameter {key!r} (its parameters: {', '.join(sorted(names))})"
        for key in params
        if key not in names
    ]
    problems += [
        f"params.{key}: C and gamma come from the study's grid; do not fix them here"
        for key in GRID_PARAMS
        if key in params and key in names
    ]
    if params.get("kernel") == "precomputed":
        problems.append("params.kernel: the folds are refit on the features, not on a kernel")
    if not problems and hasattr(instance, "_validate_params"):  # scikit-learn's constraints
        try:
            instance.set_params(**params)._validate_params()
        except (TypeError, ValueError) as exc:
            problems.append(f"params: {_one_line(exc)}")
    return problems


def _checked(definition: Any) -> tuple[EstimatorMethod | None, list[str]]:
    """(the unnamed method, []) for a valid definition, else (None, its problems)."""
    if not isinstance(definition, Mapping):
        return None, ["must be a mapping with the keys estimator and params"]
    problems = [
        f"unknown key {key!r} (the keys: {', '.join(DEFINITION_KEYS)})"
        for key in definition
        if key not in DEFINITION_KEYS
    ]
    path, params = definition.get("estimator"), definition.get("params") or {}
    if path is None:
        return None, [*problems, "estimator: missing (an import path such as 'sklearn.svm.SVC')"]
    if not isinstance(params, Mapping):
        return None, [*problems, "params: must be a mapping of parameter names to values"]
    try:
        instance = _classifier(path)
    except ValueError as exc:
        return None, [*problems, str(exc)]
    problems += _params_problems(path, instance, params)
    if problems:
        return None, problems
    names = instance.get_params(deep=False)
    method = EstimatorMethod(
        name="",
        estimator=path,
        params=dict(params),
        uses_C="C" in names,
        uses_gamma="gamma" in names,
        seeded="random_state" in names and "random_state" not in params,
    )
    return method, []


def name_problems(name: Any) -> list[str]:
    """What keeps ``name`` from naming a method of its own, one line each."""
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        return [f"method name {name!r} must match {NAME_PATTERN}"]
    if name in LOO_METHODS:
        return [f"'{name}' is a built-in method; name yours apart"]
    return []


def definition_problems(name: str, definition: Any) -> list[str]:
    """Every problem of method ``name``'s definition, one line each (empty: valid).

    The messages are relative to the definition (``params.C: ...``), for a caller to
    prefix with its config key; the name itself is checked by :func:`name_problems`.
    """
    return _checked(definition)[1]


def estimator_method(name: str, definition: Mapping[str, Any]) -> EstimatorMethod:
    """The method ``name`` of ``definition`` (``{estimator: path, params: {...}}``,
    ``params`` optional); a ValueError, one line, where the name or the definition is
    invalid (see :func:`name_problems`, :func:`definition_problems`)."""
    method, problems = _checked(definition)
    problems = name_problems(name) + problems
    if problems or method is None:
        raise ValueError("; ".join(problems))
    return replace(method, name=name)


def _folds(
    X: NDArray,
    y_idx: NDArray[np.int64],
    method: EstimatorMethod,
    point: tuple[float, float, int],
    folds: NDArray[np.int64],
) -> tuple[NDArray[np.int64], int, int]:
    """The held-out predictions of ``folds`` at ``point`` = (gamma, C, seed), and the fits'
    summed iterations and capped count. Each fold's seed derives from (seed, gamma, C, p)."""
    gamma, C, seed = point
    pred = np.empty(folds.shape[0], dtype=np.int64)
    iterations = capped = 0
    everyone = np.arange(y_idx.shape[0])
    for j, p in enumerate(folds.tolist()):
        keep = everyone != p
        present = np.unique(y_idx[keep])
        if present.shape[0] < 2:  # a fold left with one class predicts it
            pred[j] = present[0]
            continue
        estimator = method.build(gamma, C, X.shape[1], derive_seed(seed, "refit", gamma, C, p))
        capped += fit_quietly(estimator, X[keep], y_idx[keep])
        iterations += fit_iterations(estimator)
        pred[j] = estimator.predict(X[p : p + 1])[0]
    return pred, iterations, capped


def _n_support(estimator: Any) -> int:
    """Support vectors of a fitted estimator (``support_`` or ``n_support_``), else 0."""
    if hasattr(estimator, "support_"):
        return int(np.asarray(estimator.support_).shape[0])
    if hasattr(estimator, "n_support_"):
        return int(np.sum(estimator.n_support_))
    return 0


def _grid_point(
    run: Callable,
    workers: int,
    X: NDArray,
    y_idx: NDArray[np.int64],
    method: EstimatorMethod,
    point: tuple[float, float, int],
) -> tuple[GridRow, NDArray[np.int64]]:
    """One grid point (gamma, C, seed): its record row and LOO predicted class indices.

    ``run(tasks)`` runs the fold tasks on ``workers`` processes (a joblib ``Parallel``)."""
    from joblib import delayed

    gamma, C, seed = point
    n = y_idx.shape[0]
    start = time.perf_counter()
    full = method.build(gamma, C, X.shape[1], derive_seed(seed, "refit-full", gamma, C))
    capped = int(fit_quietly(full, X, y_idx))
    iterations = fit_iterations(full)
    n_tasks = min(n, TASKS_PER_WORKER * workers) if workers > 1 else 1
    parts = run(
        delayed(_folds)(X, y_idx, method, point, folds)
        for folds in np.array_split(np.arange(n), n_tasks)
    )
    pred = np.concatenate([part[0] for part in parts])
    iterations += sum(part[1] for part in parts)
    capped += sum(part[2] for part in parts)
    row = refit_row(gamma, C, pred, y_idx, _n_support(full), iterations, capped, start)
    return row, pred


def loo_estimator(
    X: ArrayLike,
    y: ArrayLike,
    method: EstimatorMethod,
    gammas: Sequence[float],
    Cs: Sequence[float],
    *,
    seed: int = 0,
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    return_predictions: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, NDArray]:
    """LOO accuracy of ``method`` at every (gamma, C), every fold refit on the features.

    Returns the frame of :data:`~isvm.loo.records.GRID_COLUMNS` (gamma as given, then C
    ascending), as :func:`~isvm.loo.refit.loo_refit` does: ``n_support`` from the fit on
    all N points (0 where the estimator has no support vectors), ``iterations`` its and
    the folds' ``n_iter_`` summed, ``n_capped`` the fits that raised a ConvergenceWarning,
    ``n_uncertified`` N. A grid point whose LOO cannot differ from an earlier one's (the
    estimator lacks C or gamma) repeats it with ``seconds`` 0. With
    ``return_predictions`` also the LOO predicted labels, shape (n_grid, N).
    ``progress(done, total)`` is called after each grid point.

    The folds run on ``n_jobs`` joblib processes (loky): the ConvergenceWarning count
    needs the process-wide warning filters, which threads would share.
    """
    from joblib import Parallel, effective_n_jobs

    gammas, Cs = check_grid(gammas, Cs)
    classes, y_idx, _ = encode_labels(y, None)
    X = finite_features(X)
    if X.ndim != 2 or X.shape[0] != y_idx.shape[0]:
        raise ValueError(
            f"X must be (samples, features) with y's {y_idx.shape[0]} rows; got {X.shape}"
        )
    rows: list[GridRow] = []
    preds: list[NDArray[np.int64]] = []
    workers = effective_n_jobs(n_jobs)
    with Parallel(n_jobs=workers, backend="loky") as run:
        for i, gamma in enumerate(gammas):
            for k, C in enumerate(Cs):
                same = (i if method.uses_gamma else 0) * len(Cs) + (k if method.uses_C else 0)
                if same < len(rows):  # the LOO of an earlier grid point
                    rows.append(rows[same]._replace(gamma=gamma, C=C, seconds=0.0))
                    preds.append(preds[same])
                else:
                    row, pred = _grid_point(run, workers, X, y_idx, method, (gamma, C, seed))
                    rows.append(row)
                    preds.append(pred)
                if progress is not None:
                    progress(len(rows), len(gammas) * len(Cs))
    frame = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    return (frame, classes[np.array(preds)]) if return_predictions else frame
