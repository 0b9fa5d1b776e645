"""benchmarks/fold_costs.py refuses bad input before any work, naming what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "fold_costs.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["iris-50"], "is not DATASET:NS:METHOD:GAMMA"),
        (["iris:50:isvm:5", "--C", "5.3"], "on the paper's grid"),
        (["iris:50:isvm:5", "--C", "0.1"], "on the paper's grid"),
    ],
)
def test_fold_costs_refuses_bad_input(args, message):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert message in result.stderr


def test_the_face_solve_without_scores_is_cut_from_the_engines_own():
    """The script times ``_face_solution`` with its score update cut out of the engine's
    source; if the engine's code moves, that cut must fail loudly, not time the same
    code twice."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fold_costs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cut = module._without_scores()
    assert cut.py_func.__name__ == "_face_solution_no_scores"
    assert "apply_point_steps" in module.fu._face_solution.py_func.__code__.co_names
    assert "apply_point_steps" not in cut.py_func.__code__.co_names
