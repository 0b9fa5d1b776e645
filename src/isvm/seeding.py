"""Derive every random stream from one configured seed and the job's own keys.

A stream depends only on ``(seed, *keys)``, never on scheduling, chunking or the
number of threads, so the same config gives the same numbers everywhere.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *keys: object) -> int:
    """A 63-bit integer seed determined by ``seed`` and the ordered ``keys``.

    Keys are turned into text (``repr``), so ``("wine", 50, 3)`` and
    ``("wine", "50", 3)`` give different streams on purpose.
    """
    text = "\x1f".join([repr(int(seed)), *(repr(k) for k in keys)])
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def rng(seed: int, *keys: object) -> np.random.Generator:
    """A NumPy generator for the stream ``(seed, *keys)``."""
    return np.random.default_rng(derive_seed(seed, *keys))
