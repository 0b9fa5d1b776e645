"""The batched score update (:func:`isvm.solvers._core.apply_point_steps`, which the
folds' face solves and shifted starts use) against the per-variable one
(:func:`~isvm.solvers._core.apply_step`)."""

from __future__ import annotations

import numpy as np
import pytest

from isvm.methods import get_formulation
from isvm.seeding import rng
from isvm.solvers import problem_of, variable_list
from isvm.solvers._core import apply_point_steps, apply_step, record_point_change


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
