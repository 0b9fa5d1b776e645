"""glibc's heap kept for reuse (:func:`isvm._memory.keep_freed_memory`), in a child
process, since the setting is process-wide."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = """
import numpy as np
from isvm._memory import keep_freed_memory
ok = keep_freed_memory()
for _ in range(3):  # large blocks freed and allocated again still work
    a = np.ones((2000, 2000)); assert a.sum() == 4e6; del a
print(ok)
"""


def test_keep_freed_memory_in_a_child_process():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    expected = "True" if sys.platform.startswith("linux") else "False"
    if sys.platform.startswith("linux") and out.stdout.strip() == "False":
        pytest.skip("a Linux C library without mallopt (not glibc)")
    assert out.stdout.strip() == expected
