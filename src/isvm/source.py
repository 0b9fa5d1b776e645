"""The package's own source as a hash: what a finished result depended on.

The workflow reruns its numba warm-up when it changes, and a LOO job keeps its
per-subsample checkpoints only while it is the same. Standard library only, so the
Snakefile can import it without loading the engine.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def source_hash() -> str:
    """sha256 (hex) of every ``.py`` file of the package, with its path in the package."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def workflow_numba_cache(workdir: Path | None = None) -> Path:
    """numba's cache of a workflow run in ``workdir`` (default: here), unless
    ``NUMBA_CACHE_DIR`` is set: one folder per version of the source, since numba keys a
    cached kernel on its own file only (a caller would keep an old callee compiled in)."""
    return (workdir or Path.cwd()) / "resources" / "numba-cache" / source_hash()[:16]
