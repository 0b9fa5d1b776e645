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
