"""The base class of every kernel classifier in :mod:`isvm.estimators` and :mod:`isvm.baselines`.

:class:`KernelClassifier` holds what they share, so that it is written once: the kernel
(the paper's Gaussian kernel ``exp(-gamma ||x - x'||^2 / n_features)``, ``kernel="rbf"``;
``"linear"``, ``"poly"``, ``"sigmoid"`` or a callable, built by
:func:`isvm.kernels.kernel_matrix`, whose gamma is per feature like the rbf's: ours =
SVC's gamma x n_features; or a kernel matrix passed as X, ``kernel="precomputed"``), the
parameter constraints, the validation at fit time (labels, seed), the test kernel,
``decision_function`` and ``predict`` from ``class_scores``, and the pairwise tag that
makes scikit-learn slice a precomputed kernel. Not public; imported only by those two
modules, so ``import isvm`` loads no scikit-learn.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from isvm.kernels import GAMMA_CONVENTION, KERNELS, kernel_matrix

__all__ = ["KERNELS", "POSITIVE", "KernelClassifier"]

#: a real number > 0 and finite (C, tol, ...)
POSITIVE = Interval(Real, 0, None, closed="neither")


class _PerFeatureGamma(Interval):
    """gamma > 0, finite; its error message states the per-feature convention."""

    def __str__(self) -> str:
        return f"{super().__str__()} ({GAMMA_CONVENTION})"


class KernelClassifier(ClassifierMixin, BaseEstimator):
    """Kernel handling, checks, validation and prediction shared by the kernel classifiers.

    A subclass stores ``kernel``, ``gamma``, ``degree``, ``coef0`` and ``random_state``
    (and its own parameters, with their ``_parameter_constraints``) in its ``__init__``
    and defines ``fit``, which starts with ``self._validate_params()``;
    ``decision_function`` and ``predict`` work once it defines ``class_scores``
    (n_samples, n_classes), or it overrides them.
    """

    #: scikit-learn's parameter validation (``_validate_params``, called first in ``fit``);
    #: each estimator extends it with its own parameters
    _parameter_constraints: dict = {
        "kernel": [StrOptions(set(KERNELS)), callable],
        "gamma": [_PerFeatureGamma(Real, 0, None, closed="neither")],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "random_state": ["random_state"],
    }

    # ------------------------------------------------------------ fit and kernels

    def _validate_fit(
        self, X: ArrayLike, y: ArrayLike, binary: bool = False
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], int]:
        """Validate training data: (X, class indices of y, training kernel, solver seed).

        Sets ``classes_``, ``shape_fit_`` and, unless the kernel is precomputed,
        ``X_fit_`` (the test kernel's columns). ``binary`` refuses more than two classes.
        The seed is drawn once from ``random_state``.
        """
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if self.classes_.shape[0] < 2:
            raise ValueError(
                f"need samples of at least 2 classes to train, got 1 class: {self.classes_[0]!r}"
            )
        if binary and self.classes_.shape[0] > 2:
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} got "
                f"{self.classes_.shape[0]} classes; use "
                "sklearn.multiclass.OneVsRestClassifier for more"
            )
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(f"a precomputed training kernel must be square, got {X.shape}")
        self.shape_fit_ = X.shape
        if self.kernel != "precomputed":
            self.X_fit_ = X
        seed = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        return X, y_idx.astype(np.int64), self._kernel(X, fitted=False), seed

    def _kernel(self, X: NDArray[np.float64], fitted: bool) -> NDArray[np.float64]:
        """Kernel of X's rows with the training samples (``fitted``) or with themselves."""
        if self.kernel == "precomputed":
            n_train = self.shape_fit_[0] if fitted else X.shape[0]
            if X.shape[1] != n_train:
                raise ValueError(
                    f"a precomputed kernel needs one column per training sample ({n_train}), "
                    f"got {X.shape[1]}"
                )
            return np.ascontiguousarray(X, dtype=np.float64)
        return kernel_matrix(
            X,
            self.X_fit_ if fitted else None,
            kernel=self.kernel,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
        )

    def _test_kernel(self, X: ArrayLike) -> NDArray[np.float64]:
        """Validated test kernel (n_samples, n_train) of a fitted estimator."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        return self._kernel(X, fitted=True)

    # ------------------------------------------------------------ prediction

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class scores (n_samples, n_classes); for 2 classes ``f_1 - f_0``, shape (n_samples,)."""
        scores = self.class_scores(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X: ArrayLike) -> NDArray:
        """The class with the largest class score (the paper's eq. 4.13); ties go to the first."""
        scores = self.class_scores(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = isinstance(self.kernel, str) and self.kernel == "precomputed"
        return tags
