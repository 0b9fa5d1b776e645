"""The estimators' kernels: linear, poly, sigmoid and callable beside rbf and precomputed.

Each named kernel is checked against scikit-learn's with the gamma conversion the docs
state (ours = SVC's gamma x n_features), and an estimator on a named kernel against the
same estimator on that kernel precomputed.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import random_points
from sklearn.metrics import pairwise
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_estimators import expected_failures

from isvm import CrammerSingerSVC, InhibitorySVC, KernelPerceptron, WestonWatkinsSVC
from isvm.kernels import kernel_matrix


class Laplacian:
    """A callable kernel with a stable repr: pytest-xdist needs the same test ids in every
    worker, and a function's repr holds its address."""

    def __call__(self, X, Y):
        return pairwise.laplacian_kernel(X, Y)

    def __repr__(self) -> str:
        return "Laplacian()"


def _data(seed=0, n=30, m=5):
    return random_points(np.random.default_rng(seed), n, 3, m, 12)


@pytest.mark.parametrize(
    "kernel, params, reference",
    [
        ("rbf", {"gamma": 2.5}, lambda X, Y, m: pairwise.rbf_kernel(X, Y, gamma=2.5 / m)),
        ("linear", {}, lambda X, Y, m: pairwise.linear_kernel(X, Y)),
        (
            "poly",
            {"gamma": 3.0, "degree": 2, "coef0": 0.5},
            lambda X, Y, m: pairwise.polynomial_kernel(X, Y, degree=2, gamma=3.0 / m, coef0=0.5),
        ),
        (
            "sigmoid",
            {"gamma": 0.7, "coef0": -0.2},
            lambda X, Y, m: pairwise.sigmoid_kernel(X, Y, gamma=0.7 / m, coef0=-0.2),
        ),
    ],
)
def test_named_kernels_are_sklearns_with_gamma_per_feature(kernel, params, reference):
    X, _, X_new = _data(seed=1)
    m = X.shape[1]
    np.testing.assert_allclose(
        kernel_matrix(X, X_new, kernel=kernel, **params), reference(X, X_new, m), rtol=1e-12
    )
    K = kernel_matrix(X, kernel=kernel, **params)
    np.testing.assert_allclose(K, reference(X, X, m), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(K, K.T)


@pytest.mark.parametrize("Estimator", [InhibitorySVC, WestonWatkinsSVC, CrammerSingerSVC])
@pytest.mark.parametrize(
    "params",
    [
        {"kernel": "linear"},
        {"kernel": "poly", "gamma": 2.0, "degree": 2, "coef0": 1.0},
        {"kernel": "sigmoid", "gamma": 0.5, "coef0": 0.0},
        {"kernel": pairwise.laplacian_kernel},
    ],
    ids=["linear", "poly", "sigmoid", "callable"],
)
def test_named_kernel_fits_like_its_precomputed_matrix(Estimator, params):
    X, y, X_new = _data(seed=2)
    clf = Estimator(C=2.0, tol=1e-6, random_state=0, **params).fit(X, y)
    kernel_params = {k: v for k, v in params.items() if k != "kernel"}
    K = kernel_matrix(X, kernel=params["kernel"], **kernel_params)
    K_new = kernel_matrix(X_new, X, kernel=params["kernel"], **kernel_params)
    pre = Estimator(C=2.0, tol=1e-6, random_state=0, kernel="precomputed").fit(K, y)
    np.testing.assert_allclose(clf.alpha_, pre.alpha_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(clf.decision_function(X_new), pre.decision_function(K_new))
    np.testing.assert_array_equal(clf.predict(X_new), pre.predict(K_new))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_poly_kernel_in_the_baselines():
    X, y, X_new = _data(seed=3)
    K = kernel_matrix(X, kernel="poly", degree=2, gamma=1.0)
    named = KernelPerceptron(kernel="poly", degree=2, gamma=1.0, max_iter=5, random_state=0)
    pre = KernelPerceptron(kernel="precomputed", max_iter=5, random_state=0).fit(K, y)
    named.fit(X, y)
    np.testing.assert_array_equal(named.dual_coef_, pre.dual_coef_)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"kernel": "cosine"}, r"'kernel' parameter of \w+ must be a str"),
        ({"kernel": "poly", "gamma": 0.0}, r"'gamma' parameter .*SVC's gamma x"),
        ({"kernel": "rbf", "gamma": -1.0}, r"ours = SVC's gamma x n_features"),
        (
            {"kernel": "poly", "degree": 1.5},
            r"'degree' parameter of \w+ must be an int in the range \[0",
        ),
        ({"kernel": "sigmoid", "coef0": np.nan}, r"'coef0' parameter of \w+ must be a float"),
    ],
)
def test_bad_kernel_parameters(params, match):
    X, y, _ = _data(seed=4)
    with pytest.raises(ValueError, match=match):
        InhibitorySVC(**params).fit(X, y)


def test_callable_kernel_of_the_wrong_shape():
    X, y, _ = _data(seed=5)
    with pytest.raises(ValueError, match="callable kernel must return an array of shape"):
        InhibitorySVC(kernel=lambda A, B: A @ A.T).fit(X[:10], y[:10]).predict(X[:3])


def test_linear_kernel_ignores_gamma():
    X, y, X_new = _data(seed=6)
    a = InhibitorySVC(kernel="linear", gamma=1.0, random_state=0).fit(X, y)
    b = InhibitorySVC(kernel="linear", gamma=99.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X_new), b.decision_function(X_new))


@parametrize_with_checks(
    [InhibitorySVC(kernel=Laplacian())],
    expected_failed_checks=expected_failures,
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sklearn_compatible_with_other_kernels(estimator, check):
    """scikit-learn's estimator checks with a kernel other than rbf and precomputed: a
    callable, which also stands for the named kernels (same code path: ``kernel_matrix``
    on ``X_fit_``; each is checked against its precomputed fit above)."""
    check(estimator)
