"""benchmarks/fold_costs.py times the engine's own face solve with its score update cut
out (its bad-input tests: tests/test_benchmark_inputs.py)."""

from __future__ import annotations

from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "fold_costs.py"


def test_the_face_solve_without_scores_is_cut_from_the_engines_own(monkeypatch):
    """The script times ``_face_solution`` with its score update (in ``_face_point``)
    cut out of the engine's source; if the engine's code moves, that cut must fail
    loudly, not time the same code twice."""
    import importlib.util

    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as run as a script: benchmarks/_cells.py
    spec = importlib.util.spec_from_file_location("fold_costs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cut = module._without_scores()
    assert cut.py_func.__name__ == "_face_solution_no_scores"
    assert "apply_point_steps" in module.fu._face_point.py_func.__code__.co_names
    point = cut.py_func.__globals__["_face_point"]
    assert point is not module.fu._face_point
    assert "apply_point_steps" not in point.py_func.__code__.co_names
