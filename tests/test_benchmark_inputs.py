"""The benchmark scripts that take a cell (benchmarks/_cells.py) refuse bad input
before any work, naming what is wrong (exit code 2, argparse's usage error)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("fold_costs.py", ["iris-50"], "is not DATASET:NS:METHOD:GAMMA"),
        ("fold_costs.py", ["iris:50:isvm:5", "--C", "5.3"], "on the paper's grid"),
        ("fold_costs.py", ["iris:50:isvm:5", "--C", "0.1"], "on the paper's grid"),
        ("mode_trace.py", ["iris-50"], "is not DATASET:NS:METHOD:GAMMA"),
        ("mode_trace.py", ["iris:50:isvm:x"], "is not DATASET:NS:METHOD:GAMMA"),
        ("settings_ab.py", ["{}", "iris:50"], "is not DATASET:NS:METHOD:GAMMA"),
        ("settings_ab.py", ["[1]", "iris:50:isvm:5"], "JSON object of LooSettings"),
        (
            "mode_trace.py",
            ["iris:50:isvm:5", "--settings", '{"no_such_field": 1}'],
            "JSON object of LooSettings",
        ),
        (
            "mode_trace.py",
            ["iris:50:isvm:5", "--settings", "{not json"],
            "JSON object of LooSettings",
        ),
        ("mode_trace.py", ["iris:50:isvm:5", "--C", "60", "70"], "no C of the paper's grid"),
        ("mode_trace.py", ["iris:50:isvm:5", "--C", "5", "1"], "no C of the paper's grid"),
    ],
)
def test_a_benchmark_script_refuses_bad_input(script, args, message):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert message in result.stderr
