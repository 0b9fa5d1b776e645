"""benchmarks/settings_ab.py refuses bad input before any work, naming what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "settings_ab.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (['{"no_such_field": 1}', "iris:50:isvm:5"], "JSON object of LooSettings fields"),
        (["{not json", "iris:50:isvm:5"], "JSON object of LooSettings fields"),
        (["{}", "iris-50"], "is not DATASET:NS:METHOD:GAMMA"),
    ],
)
def test_settings_ab_refuses_bad_input(args, message):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert message in result.stderr
