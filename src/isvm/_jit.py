"""numba's ``njit`` for this package, with its on-disk cache kept per version of the source.

numba keys a cached kernel on its own file only (its modification time and size), and
a kernel that calls one of another module has the callee compiled into it. So after
an edit of ``solvers/_core.py`` alone, the cached kernels of ``loo/folds.py`` would
keep running the old ``_core`` code, silently: an editable install, a benchmark of a
change, a partial upgrade. Here every cached kernel of the package is stored under a
folder named by :func:`isvm.source.source_hash` (``__pycache__/numba-<hash>`` beside
the package, or ``~/.cache/isvm/numba-<hash>`` where the package's folder is not
writable), so a changed source compiles afresh and an unchanged one is loaded.

Compile units. numba compiles each kernel into a module of its own and links the
modules of all its callees into it, optimised and compiled to machine code again in
every caller above them: a chain of k kernels costs about k times its code. So a
helper split out only to be read (one call site, or a few lines around a call) is
declared ``inline="always"``: numba inlines it into its caller before typing, and it
is compiled only there. Kernels with several callers, or called from Python, stay
units of their own. A counter or index passed to a kernel starts as
``np.int64(0)``, not ``0``: numba first types a literal ``0`` as the constant itself
and compiles the callee once more for it. (``isvm warmup`` from an empty cache:
docs/benchmarks.md.)

A ``NUMBA_CACHE_DIR`` set by the user is kept as it is (the workflow sets one per
source hash itself). The folder is set only while a kernel is decorated (numba's
locator reads ``numba.config.CACHE_DIR`` then), so other packages' kernels are not
moved. Only the newest :data:`KEEP_VERSIONS` version folders beside it are kept.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numba

from isvm.source import PACKAGE, source_hash

#: version folders kept beside the current one's (older ones are removed when a new
#: version's folder is made)
KEEP_VERSIONS = 3


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _prune(folder: Path) -> None:
    """Remove all but the newest :data:`KEEP_VERSIONS` sibling version folders."""
    siblings = [p for p in folder.parent.glob("numba-*") if p.is_dir() and p != folder]
    siblings.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in siblings[KEEP_VERSIONS:]:
        shutil.rmtree(old, ignore_errors=True)  # another process may be removing it too


@functools.cache
def versioned_cache_dir() -> Path:
    """This source version's numba cache folder (made on first use, where writable)."""
    name = f"numba-{source_hash()[:16]}"
    for root in (PACKAGE / "__pycache__", Path.home() / ".cache" / "isvm"):
        folder = root / name
        fresh = not folder.exists()
        if _writable(folder):
            if fresh:
                _prune(folder)
            return folder
    return PACKAGE / "__pycache__" / name  # neither writable: numba warns and compiles


def cache_dir() -> Path:
    """The folder numba caches this package's kernels in: ``NUMBA_CACHE_DIR`` where
    set, else :func:`versioned_cache_dir`."""
    configured = numba.config.CACHE_DIR
    return Path(configured) if configured else versioned_cache_dir()


@contextmanager
def _cache_dir_set() -> Iterator[None]:
    if numba.config.CACHE_DIR:  # the user's (or the workflow's) choice
        yield
        return
    numba.config.CACHE_DIR = str(versioned_cache_dir())
    try:
        yield
    finally:
        numba.config.CACHE_DIR = ""


def njit(*args: object, **options: object) -> Callable:
    """``numba.njit`` with the same arguments; with ``cache=True`` the kernel's cache
    is this source version's folder (:func:`cache_dir`)."""
    if not options.get("cache"):
        return numba.njit(*args, **options)
    if args:  # @njit(cache=True) is the one form the package uses with a cache
        raise TypeError("isvm._jit.njit(cache=True) takes keyword options only")

    def decorate(fn: Callable) -> Callable:
        with _cache_dir_set():
            return numba.njit(**options)(fn)

    return decorate
