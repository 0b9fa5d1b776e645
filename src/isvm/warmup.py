"""``python -m isvm warmup``: compile the LOO engine's numba kernels once, into numba's cache.

Every kernel is compiled with ``cache=True``, so the first process to run one writes
it to numba's on-disk cache and later processes load it (about 1 s instead of about
a minute on a 2-core machine). Without a warm-up, the first LOO jobs of a fresh
clone all compile at the same time, and that time lands in their ``seconds`` and
the training-time table. The workflow runs this command once before the LOO jobs
(rule ``numba_warmup``) and again whenever the package's source changes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def warm_up() -> float:
    """Run a tiny exact LOO grid for every formulation; returns the seconds it took."""
    start = time.perf_counter()
    from isvm.loo import loo_grid
    from isvm.methods import FORMULATIONS

    gen = np.random.default_rng(0)
    X = gen.random((12, 3))
    y = np.arange(12) % 3
    for method in sorted(FORMULATIONS):
        loo_grid(X, y, method, [5.0], [0.5, 1.0])  # a C path: the warm-start kernels too
        loo_grid(X, y, method, [5.0], [0.5], active_set=False)  # the cd-alone folds' path
    # the full fit's block updates gather into views of the new inverse (a signature of
    # their own), which a grid this small never reaches
    from isvm.loo.full_fit import _gather

    square = gen.random((4, 4))
    index = np.arange(2)
    _gather(square, index, index, np.empty((4, 4))[:2, :2])
    return time.perf_counter() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm warmup``."""
    parser.add_argument("--out", type=Path, help="a file to write when done (workflow marker)")


def run(args: argparse.Namespace) -> int:
    """Compile (or load) the kernels and say how long it took."""
    import numba

    seconds = warm_up()
    text = f"numba {numba.__version__}: LOO kernels compiled or loaded in {seconds:.1f} s\n"
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0
