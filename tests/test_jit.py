"""The package's numba cache: one folder per source version (``isvm._jit``).

numba keys a cached kernel on its own file only, so a kernel compiled with another
module's callee inside would keep the old callee after an edit of that module alone.
"""

from __future__ import annotations

import os
import time

import numba
import pytest

from isvm import _jit
from isvm.source import source_hash


def test_kernels_are_cached_in_the_source_versions_folder():
    from isvm.loo import folds
    from isvm.solvers import certify, epochs

    folder = _jit.cache_dir()
    if not os.environ.get("NUMBA_CACHE_DIR"):
        assert folder == _jit.versioned_cache_dir()
        assert folder.name == f"numba-{source_hash()[:16]}"
    for kernel in (certify.top_two, epochs.cd_epochs, folds.fit_folds):
        # numba's own record of where the kernel's cache lives (its locator's path)
        assert os.path.commonpath([kernel._cache._cache_path, folder]) == str(folder)
    assert numba.config.CACHE_DIR == os.environ.get("NUMBA_CACHE_DIR", "")  # restored


def test_a_kernel_without_cache_is_plain_numba():
    @_jit.njit
    def twice(x):
        return 2 * x

    assert twice(3) == 6
    with pytest.raises(TypeError, match="keyword options only"):
        _jit.njit(lambda x: x, cache=True)


def test_only_the_newest_versions_are_kept(tmp_path):
    now = time.time()
    for age in range(6):
        old = tmp_path / f"numba-{age:016d}"
        old.mkdir()
        os.utime(old, (now - 100 * age, now - 100 * age))
    (tmp_path / "other").mkdir()  # not a version folder: left alone
    current = tmp_path / "numba-current"
    current.mkdir()
    _jit._prune(current)
    left = sorted(p.name for p in tmp_path.iterdir())
    kept = [f"numba-{age:016d}" for age in range(_jit.KEEP_VERSIONS)]
    assert left == sorted([*kept, "numba-current", "other"])


def test_a_cold_cache_announces_the_compile_once(tmp_path):
    """The first LOO call of a process with no compiled fold kernel in numba's cache says
    so in one line on stderr (and only once); a cache that holds one stays silent."""
    import subprocess
    import sys

    from isvm.warmup import COMPILE_NOTE

    code = "from isvm.warmup import announce_compile as a; a(); a()"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count(COMPILE_NOTE) == 1 and run.stderr.strip() == COMPILE_NOTE
    module = tmp_path / "loo_0123"
    module.mkdir()
    (module / "folds.fit_folds-40.py311.nbi").write_bytes(b"")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == ""
