"""benchmarks/mode_trace.py refuses bad input before any work, naming what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "mode_trace.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["iris-50"], "is not DATASET:NS:METHOD:GAMMA"),
        (["iris:50:isvm:5", "--settings", '{"no_such_field": 1}'], "JSON object of LooSettings"),
        (["iris:50:isvm:5", "--settings", "{not json"], "JSON object of LooSettings"),
        (["iris:50:isvm:5", "--C", "60", "70"], "no C of the paper's grid"),
        (["iris:50:isvm:5", "--C", "5", "1"], "no C of the paper's grid"),
    ],
)
def test_mode_trace_refuses_bad_input(args, message):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert message in result.stderr
