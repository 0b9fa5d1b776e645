"""The batched score update (:func:`isvm.solvers._core.apply_point_steps`, which the
folds' face solves and shifted starts use) against the per-variable one
(:func:`~isvm.solvers._core.apply_step`), in both of its branches (passes over K, one
product)."""

from __future__ import annotations

import numpy as np
import pytest

from isvm.methods import get_formulation
from isvm.seeding import rng
from isvm.solvers import problem_of, variable_list
from isvm.solvers._core import (
    DENSE_STEP_SHARE,
    _point_step_passes,
    apply_point_steps,
    apply_step,
    record_point_change,
)


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
@pytest.mark.parametrize("changed", [0.05, 1.0])
def test_batched_score_update_equals_one_step_per_variable(method, changed):
    n, n_classes = 60, 4
    gen = rng(0, "point-steps", method, changed)
    y = np.arange(n) % n_classes
    # not symmetric: the update must read K by rows, as apply_step does
    K = gen.random((n, n)) + np.eye(n)
    coding = get_formulation(method).encode(y, n_classes)
    var_i, var_j = variable_list(coding)
    prob = problem_of(K, coding, var_i, var_j)
    points = gen.choice(n, size=max(1, int(changed * n)), replace=False)
    S_start = gen.standard_normal((coding.n_columns, n))
    S_one, ssum_one = S_start.copy(), S_start.sum(axis=0)
    S_batch, ssum_batch = S_one.copy(), ssum_one.copy()
    coef = np.zeros((n, coding.n_columns))
    for v in range(var_i.shape[0]):
        if var_i[v] in points:
            delta = gen.standard_normal()
            apply_step(var_i[v], var_j[v], delta, prob.cols, prob.vals, prob.c, K, S_one, ssum_one)
            record_point_change(var_i[v], var_j[v], delta, prob.cols, prob.vals, coef)
    apply_point_steps(coef, prob.c, K, S_batch, ssum_batch)
    assert np.abs(S_one - S_start).max() > 0.1  # the steps moved the scores
    np.testing.assert_allclose(S_batch, S_one, rtol=0, atol=1e-12)
    if prob.c != 0.0:
        np.testing.assert_allclose(ssum_batch, ssum_one, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["isvm", "ww"])
def test_the_dense_product_equals_the_passes(method):
    # every point changed in every column: apply_point_steps takes the product coef' K
    n, n_classes = 50, 5
    gen = rng(1, "point-steps-dense", method)
    K = gen.random((n, n)) + np.eye(n)  # not symmetric, as above
    coding = get_formulation(method).encode(np.arange(n) % n_classes, n_classes)
    prob = problem_of(K, coding, *variable_list(coding))
    coef = gen.standard_normal((n, coding.n_columns))
    assert np.count_nonzero(coef) >= DENSE_STEP_SHARE * coef.size
    S_start = gen.standard_normal((coding.n_columns, n))
    S_pass, ssum_pass = S_start.copy(), S_start.sum(axis=0)
    S_dense, ssum_dense = S_pass.copy(), ssum_pass.copy()
    _point_step_passes(coef, prob.c, K, S_pass, ssum_pass)
    apply_point_steps(coef, prob.c, K, S_dense, ssum_dense)
    np.testing.assert_allclose(S_dense, S_pass, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ssum_dense, ssum_pass, rtol=0, atol=1e-12)
    assert np.abs(S_dense - S_start).max() > 0.1
