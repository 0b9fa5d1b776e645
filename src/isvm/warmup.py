"""``python -m isvm warmup``: compile the LOO engine's numba kernels, into numba's cache.

Every kernel is compiled with ``cache=True``, so the first process to run one writes
it to numba's on-disk cache and later processes load it (about 1 s instead of about
a minute on a 2-core machine). Every LOO job (``isvm loo``) warms up before it starts
its clock (:func:`warm_up_shared`), so compile time never lands in the records'
``seconds`` or the training-time table, whether the cache was filled before or not.

Two processes must not compile into one cache at once: numba numbers a function's
cached signatures per process, so two writers can give two signatures the same data
file and one of them then loads the other's machine code (a segfault, seen in CI).
So a job that finds the cache cold for its method compiles under a file lock beside
the cache and leaves a stamp per method there; jobs wait for the lock, and every
later job of that method finds the stamp and only loads. Nothing outside the cache
marks the warm-up, so deleting the cache or editing the package never makes a
workflow job stale.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np


def warm_up(methods: Iterable[str] | None = None) -> float:
    """Run a tiny LOO grid per method of ``isvm loo`` (default: every one); returns the
    seconds. Loads their kernels from numba's cache, or compiles them into it."""
    start = time.perf_counter()
    from isvm.loo import DEFAULT_SETTINGS, loo_grid
    from isvm.loo.refit import LOO_METHODS, loo_records
    from isvm.loo.separable import separable_method

    every_size = replace(DEFAULT_SETTINGS, separable_min_free=0)

    gen = np.random.default_rng(0)
    X = gen.random((12, 3))
    y = np.arange(12) % 3
    # overlapping classes along a C path: the full fits' active-set steps and block
    # updates of their inverse, which the tiny grid settles without
    y_path = np.arange(40) % 4
    X_path = gen.normal(size=(40, 4)) + 0.8 * y_path[:, None]
    for method in sorted(LOO_METHODS if methods is None else set(methods)):
        if LOO_METHODS[method] == "refit":
            loo_records(X, y, method, [5.0], [0.5])
            continue
        loo_grid(X, y, method, [5.0], [0.5, 1.0])  # a C path: the warm-start kernels too
        loo_grid(X, y, method, [5.0], [0.5], active_set=False)  # the cd-alone folds' path
        loo_grid(X_path, y_path, method, [0.5], [0.1, 0.8, 1.5, 5.0, 20.0])
        if separable_method(method):  # the class-by-class finish, whatever the free-set size
            loo_grid(X_path, y_path, method, [0.5], [0.1, 5.0], settings=every_size)
    # the full fit's block updates gather into views of the new inverse and into fresh
    # arrays (a signature each), which grids this small may never reach
    from isvm.loo.full_fit import _gather

    square = gen.random((4, 4))
    index = np.arange(2)
    _gather(square, index, index, np.empty((4, 4))[:2, :2])
    _gather(square, index, index, np.empty((2, 2)))
    return time.perf_counter() - start


#: what the first use of the LOO engine compiles, about how long, how to do it ahead
COMPILE_NOTE = (
    "isvm: compiling the LOO engine's numba kernels (first use of this version: about "
    "1.5 minutes of one core, cached afterwards; `python -m isvm warmup` does it ahead)"
)
#: numba's cache file of the LOO engine's fold kernel: the engine was compiled before
ENGINE_KERNELS: tuple[str, ...] = ("folds.fit_folds-*.nbi",)
_announced: set[str] = set()  # the notes this process has given


def cold(folder: Path, kernels: Iterable[str] = ENGINE_KERNELS) -> bool:
    """Whether numba's cache ``folder`` holds none of ``kernels`` (cache-file patterns;
    default: the LOO engine's fold kernel) yet."""
    return not any(next(folder.glob(f"**/{pattern}"), None) for pattern in kernels)


def announce_compile(note: str = COMPILE_NOTE, kernels: Iterable[str] = ENGINE_KERNELS) -> None:
    """Say ``note`` on stderr, once a process, where numba's cache holds none of
    ``kernels``: the first use of a part of the package (default: the LOO engine) otherwise
    sits silent while it compiles."""
    if note in _announced:
        return
    _announced.add(note)
    if cold(cache_dir(), kernels):
        print(note, file=sys.stderr, flush=True)


def cache_dir() -> Path:
    """The folder numba caches this package's kernels in (``NUMBA_CACHE_DIR``, else this
    source version's own folder: :func:`isvm._jit.cache_dir`)."""
    from isvm import _jit

    return _jit.cache_dir()


def warm_up_shared(methods: Iterable[str] | None = None) -> tuple[float, bool]:
    """Load ``methods``' kernels (default: every method's) from numba's cache, after
    compiling them into it, one process at a time, where it is cold for any of them.

    Returns the seconds it took and whether this call compiled. Where no lock file can
    be made beside the cache (a read-only install), it warms up without the lock.
    """
    import numba

    from isvm.loo.refit import LOO_METHODS
    from isvm.source import source_hash

    names = sorted(LOO_METHODS if methods is None else set(methods))
    folder = cache_dir()  # a stamp names the versions: an edit or upgrade warms up anew
    version = f"{source_hash()[:16]}-numba-{numba.__version__}"
    stamps = {name: folder / f"isvm-warm-{version}-{name}.txt" for name in names}
    if all(stamp.exists() for stamp in stamps.values()):
        return warm_up(names), False
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / "isvm-warm.lock").open("a")
    except OSError:
        return warm_up(names), True
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
        missing = [name for name, stamp in stamps.items() if not stamp.exists()]
        seconds = warm_up(names)
        for name in missing:  # another process may have compiled the rest while this waited
            tmp = stamps[name].with_name(f"{stamps[name].name}.{os.getpid()}.tmp")
            tmp.write_text(
                f"{name}: LOO kernels of numba {numba.__version__} compiled in {seconds:.1f} s"
                f" (with {', '.join(names)})\n"
            )
            tmp.replace(stamps[name])
        return seconds, bool(missing)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm warmup``."""
    parser.add_argument("--out", type=Path, help="a file to write when done (a record)")


def run(args: argparse.Namespace) -> int:
    """Compile (or load) the kernels and say how long it took."""
    import numba

    seconds, compiled = warm_up_shared()
    done = "compiled" if compiled else "loaded"
    text = f"numba {numba.__version__}: LOO kernels {done} in {seconds:.1f} s ({cache_dir()})\n"
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0
