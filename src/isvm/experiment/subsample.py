"""Seeded training subsamples: ``n_subsamples`` draws of ``Ns`` rows of one data set.

Row ``r`` of the index matrix is drawn without replacement from its own stream,
``isvm.seeding.rng(seed, "subsample", dataset, Ns, r)``, so a larger
``n_subsamples`` only appends rows (earlier rows never change), and every method
sees the same subsamples. Indices in a row are sorted ascending: a subsample is
a *set* of rows, and the data sets are stored in a canonical row order.

**Redraw rule.** A draw that holds a single class cannot train a multiclass
classifier. Such a row is drawn again from the stream
``rng(seed, "subsample", dataset, Ns, r, "redraw", k)`` for k = 1, 2, ... up to
``max_redraws``; each redraw is logged, and the count is part of the result
(:class:`Subsamples`). When every attempt fails a ``ValueError`` names the data
set, Ns and row. With the paper's sizes (Ns >= 50) and data sets a single-class
draw practically never happens; the rule exists so that tiny test sizes are
deterministic too.

CLI (what the workflow calls)::

    python -m isvm subsample --data resources/datasets/zscore/iris.npz --ns 50 \\
        --n-subsamples 100 --seed 2012 --out results/subsamples/iris/Ns50.npy
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from isvm.seeding import rng

#: Attempts (after the first draw) before a single-class row is an error.
DEFAULT_MAX_REDRAWS = 100


@dataclass(frozen=True)
class Subsamples:
    """The index matrix and how many rows needed a redraw (row -> redraws)."""

    indices: NDArray[np.int64]
    redraws: dict[int, int]


def _draw_row(n_rows: int, ns: int, seed: int, dataset: str, r: int, attempt: int) -> NDArray:
    keys: tuple[object, ...] = ("subsample", dataset, ns, r)
    if attempt:
        keys += ("redraw", attempt)
    gen = rng(seed, *keys)
    return np.sort(gen.choice(n_rows, size=ns, replace=False)).astype(np.int64)


def draw_subsamples_info(
    y: ArrayLike,
    ns: int,
    n_subsamples: int,
    *,
    seed: int,
    dataset: str,
    max_redraws: int = DEFAULT_MAX_REDRAWS,
    log: Callable[[str], None] | None = None,
) -> Subsamples:
    """Like :func:`draw_subsamples`, also returning the redraw counts."""
    y = np.asarray(y)
    n_rows = int(y.shape[0])
    ns, n_subsamples = int(ns), int(n_subsamples)
    if ns < 2:
        raise ValueError(f"{dataset}: Ns must be at least 2; got {ns}")
    if ns > n_rows:
        raise ValueError(
            f"{dataset}: Ns={ns} is larger than the data set ({n_rows} rows); "
            f"choose sizes up to {n_rows}"
        )
    if n_subsamples < 1:
        raise ValueError(f"{dataset}: n_subsamples must be at least 1; got {n_subsamples}")
    if np.unique(y).shape[0] < 2:
        raise ValueError(f"{dataset}: the data set holds a single class")
    out = np.empty((n_subsamples, ns), dtype=np.int64)
    redraws: dict[int, int] = {}
    for r in range(n_subsamples):
        for attempt in range(max_redraws + 1):
            row = _draw_row(n_rows, ns, seed, dataset, r, attempt)
            if np.unique(y[row]).shape[0] >= 2:
                break
            if log is not None:
                log(
                    f"{dataset} Ns={ns} subsample {r}: draw {attempt} holds a single class; "
                    f"redrawing from stream (seed, 'subsample', {dataset!r}, {ns}, {r}, "
                    f"'redraw', {attempt + 1})"
                )
        else:
            raise ValueError(
                f"{dataset} Ns={ns} subsample {r}: all {max_redraws + 1} draws hold a single "
                "class; use a larger Ns"
            )
        if attempt:
            redraws[r] = attempt
        out[r] = row
    return Subsamples(out, redraws)


def draw_subsamples(
    y: ArrayLike,
    ns: int,
    n_subsamples: int,
    *,
    seed: int,
    dataset: str,
    max_redraws: int = DEFAULT_MAX_REDRAWS,
    log: Callable[[str], None] | None = None,
) -> NDArray[np.int64]:
    """The (n_subsamples, ns) int64 index matrix; row r from its own seeded stream.

    Rows are sorted ascending and hold at least two classes (see the module's
    redraw rule). Raises ValueError when Ns exceeds the number of rows, Ns < 2,
    n_subsamples < 1, or a row stays single-class after ``max_redraws`` redraws.
    """
    return draw_subsamples_info(
        y, ns, n_subsamples, seed=seed, dataset=dataset, max_redraws=max_redraws, log=log
    ).indices


def save_indices(indices: NDArray[np.int64], path: str | Path) -> Path:
    """Write the index matrix as ``.npy`` atomically (a temporary name, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        np.save(fh, np.ascontiguousarray(indices, dtype=np.int64), allow_pickle=False)
    tmp.replace(path)
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm subsample``."""
    parser.add_argument("--data", type=Path, required=True, help="data set .npz (isvm data fetch)")
    parser.add_argument("--ns", type=int, required=True, help="training-set size Ns")
    parser.add_argument("--n-subsamples", type=int, required=True, help="number of subsamples")
    parser.add_argument("--seed", type=int, required=True, help="the config's seed")
    parser.add_argument(
        "--max-redraws",
        type=int,
        default=DEFAULT_MAX_REDRAWS,
        help="redraws of a single-class row before giving up",
    )
    parser.add_argument("--out", type=Path, required=True, help="output .npy")


def run(args: argparse.Namespace) -> int:
    """Draw the subsamples of one data set and size and write them."""
    from isvm.data import DataError, load_npz

    def log(msg: str) -> None:
        print(f"[isvm subsample] {msg}", file=sys.stderr, flush=True)

    try:
        ds = load_npz(args.data)
        result = draw_subsamples_info(
            ds.y,
            args.ns,
            args.n_subsamples,
            seed=args.seed,
            dataset=ds.stream_name,
            max_redraws=args.max_redraws,
            log=log,
        )
    except (DataError, ValueError, OSError) as exc:
        print(f"isvm subsample: error: {exc}", file=sys.stderr)
        return 2
    save_indices(result.indices, args.out)
    n_redrawn = len(result.redraws)
    log(
        f"{ds.name} Ns={args.ns}: {args.n_subsamples} subsamples (seed {args.seed}), "
        f"{n_redrawn} redrawn -> {args.out}"
    )
    return 0
