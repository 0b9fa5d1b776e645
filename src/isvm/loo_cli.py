"""``python -m isvm loo``: LOO grid records for a chunk of subsamples of one data set.

Reads the data set (``.npz`` of :mod:`isvm.data`) and the subsample index matrix
(``.npy``, one row per subsample), runs :func:`isvm.loo.loo_grid` for subsamples
``chunk * reps_per_job ... + reps_per_job - 1`` and writes one Parquet row per
(subsample, gamma, C). Every subsample's solver seed derives from
``(seed, dataset, Ns, subsample)`` alone, so chunking never changes a number.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from isvm.data import DataError, load_npz
from isvm.loo import c_grid, loo_grid
from isvm.methods import FORMULATIONS
from isvm.seeding import derive_seed

#: columns of a LOO record file, in order
RECORD_COLUMNS = [
    "dataset", "scaling", "Ns", "method", "subsample", "gamma", "C", "loo_accuracy", "n_errors",
    "n_support", "iterations", "converged", "n_uncertified", "n_capped", "seconds",
]  # fmt: skip


def run_chunk(
    data_path: Path,
    subsamples_path: Path,
    method: str,
    chunk: int,
    reps_per_job: int,
    gammas: list[float],
    Cs: np.ndarray,
    *,
    tol: float,
    max_iter: int | None,
    threads: int,
    seed: int,
    log=sys.stderr,
) -> pd.DataFrame:
    """LOO records of one chunk of subsamples (see the module docstring)."""
    dataset = load_npz(data_path)
    indices = np.load(subsamples_path)
    if indices.ndim != 2:
        raise ValueError(f"{subsamples_path}: expected a 2-D index matrix, got {indices.shape}")
    n_sub, ns = indices.shape
    first = chunk * reps_per_job
    if not 0 <= first < n_sub:
        raise ValueError(f"chunk {chunk} starts at subsample {first}, but there are {n_sub}")
    frames = []
    for r in range(first, min(first + reps_per_job, n_sub)):
        idx = indices[r]
        y = dataset.y[idx]
        if np.unique(y).shape[0] < 2:
            raise ValueError(
                f"{dataset.name} Ns={ns} subsample {r} holds a single class; "
                "draw subsamples with at least two classes"
            )
        start = time.perf_counter()
        frame = loo_grid(
            dataset.X[idx], y, method, gammas, Cs, tol=tol, max_iter=max_iter, threads=threads,
            seed=derive_seed(seed, "loo", dataset.name, ns, r),
        )  # fmt: skip
        frame.insert(0, "subsample", r)
        frames.append(frame)
        capped = int(frame["n_capped"].sum())
        print(
            f"[isvm loo] {dataset.name} Ns={ns} {method} subsample {r}: "
            f"{len(frame)} grid points in {time.perf_counter() - start:.1f}s, "
            f"best LOO accuracy {frame['loo_accuracy'].max():.3f}"
            + (f", {capped} fits hit the iteration cap" if capped else ""),
            file=log,
            flush=True,
        )
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "method", method)
    out.insert(0, "Ns", ns)
    out.insert(0, "scaling", dataset.scaling)
    out.insert(0, "dataset", dataset.name)
    return out[RECORD_COLUMNS]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm loo``."""
    parser.add_argument("--data", type=Path, required=True, help="data set .npz (isvm data fetch)")
    parser.add_argument(
        "--subsamples", type=Path, required=True,
        help="subsample index matrix .npy (isvm subsample), one row per subsample",
    )  # fmt: skip
    parser.add_argument("--method", required=True, choices=sorted(FORMULATIONS))
    parser.add_argument("--chunk", type=int, default=0, help="chunk number (0-based)")
    parser.add_argument(
        "--reps-per-job", type=int, default=1,
        help="subsamples per chunk: chunk K runs subsamples K*R .. K*R+R-1",
    )  # fmt: skip
    parser.add_argument(
        "--gammas", type=float, nargs="+", required=True, metavar="GAMMA",
        help="kernel widths gamma of exp(-gamma ||x - x'||^2 / M) (the paper: 5 10)",
    )  # fmt: skip
    parser.add_argument(
        "--C-start", type=float, required=True, help="first C of the grid (the paper: 0.1)"
    )
    parser.add_argument(
        "--C-stop", type=float, required=True,
        help="the grid runs while C is below this (the paper: 50, i.e. up to 49.6)",
    )  # fmt: skip
    parser.add_argument(
        "--C-step", type=float, required=True, help="C step of the grid (the paper: 0.5)"
    )
    parser.add_argument("--tol", type=float, default=1e-3, help="maximum KKT violation of a fit")
    parser.add_argument(
        "--max-iter", type=int, default=None, help="epochs per fit (default: the engine's cap)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="numba threads for the folds (numbers unchanged)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the study's seed")
    parser.add_argument("--out", type=Path, required=True, help="output .parquet (atomic write)")


def run(args: argparse.Namespace) -> int:
    """Run one chunk and write its Parquet file (atomically)."""
    try:
        Cs = c_grid(args.C_start, args.C_stop, args.C_step)
        records = run_chunk(
            args.data, args.subsamples, args.method, args.chunk, args.reps_per_job,
            list(args.gammas), Cs, tol=args.tol, max_iter=args.max_iter,
            threads=args.threads, seed=args.seed,
        )  # fmt: skip
    except (DataError, ValueError, OSError) as exc:
        print(f"isvm loo: error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".parquet.tmp")
    records.to_parquet(tmp, index=False)
    tmp.replace(args.out)
    return 0
