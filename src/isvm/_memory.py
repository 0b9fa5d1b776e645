"""Freed heap memory kept for reuse (glibc), so large arrays do not fault in zeroed pages.

A LOO path allocates arrays of F^2 doubles at every grid point (the full fit's inverse
and outside products: about 100 MB at yeast Ns = 500, F = 3,500). glibc serves each
from a fresh ``mmap`` and unmaps it on free, so every grid point pays the kernel for
zeroing those pages again (7% of yeast Ns 500 ISVM's time, ``perf``). With mmap off
and the heap's top kept, the freed blocks are reused instead. A process-wide setting:
the workflow's LOO jobs and the cost estimator ask for it; the library never does.
"""

from __future__ import annotations

import ctypes
import sys

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
#: freed memory at the heap's top is returned to the system only above this (bytes)
TRIM_THRESHOLD = 2**31 - 1


def keep_freed_memory() -> bool:
    """Have glibc reuse freed large blocks; returns False (changing nothing) off glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
