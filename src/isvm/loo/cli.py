"""``python -m isvm loo``: LOO grid records for a chunk of subsamples of one data set.

Reads the data set (``.npz`` of :mod:`isvm.data`) and the subsample index matrix
(``.npy``, one row per subsample), runs :func:`isvm.loo.loo_records` (the exact engine,
or refitting for the methods it cannot serve, or a config's own scikit-learn classifier
given by ``--estimator``, :mod:`isvm.loo.estimator_method`) for subsamples
``chunk * reps_per_job ... + reps_per_job - 1`` and writes one Parquet row per
(subsample, gamma, C). Every subsample's solver seed derives from
``(seed, dataset, Ns, subsample)`` alone, so chunking never changes a number.

Long chunks (letter at Ns = 500: hours) keep a checkpoint per finished subsample in
``OUT.partial/`` beside the output: a job killed or preempted mid-chunk resumes from
its last finished subsample when run again, with the same numbers (each subsample
depends only on its own seed). The checkpoints carry a fingerprint of everything that
can change a number (input files, method and its ``--estimator`` definition, grid,
solver settings, seed, the package's source) and are ignored when it differs; they are
removed once the output is written. Progress is logged per subsample and, within a long
subsample, every ``--progress-every`` seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from isvm._memory import keep_freed_memory
from isvm.data import DataError, load_npz
from isvm.loo.estimator_method import EstimatorMethod, estimator_method, grid_note
from isvm.loo.grid import c_grid
from isvm.loo.records import RECORD_COLUMNS
from isvm.loo.refit import LOO_METHODS, check_method, loo_records
from isvm.seeding import derive_seed
from isvm.source import source_hash
from isvm.warmup import warm_up_shared


def fingerprint(data_path: Path, subsamples_path: Path, **settings) -> str:
    """sha256 of the inputs, the settings that can change a number and the package's source."""
    digest = hashlib.sha256()
    for path in (data_path, subsamples_path):
        digest.update(Path(path).read_bytes())
    digest.update(json.dumps(settings, sort_keys=True, default=repr).encode())
    digest.update(source_hash().encode())
    return digest.hexdigest()


class Checkpoints:
    """Finished subsamples of one chunk, one Parquet file each, under ``folder``.

    Kept only for the same ``key`` (:func:`fingerprint`); a folder written for
    another key is emptied first.
    """

    def __init__(self, folder: Path, key: str) -> None:
        self.folder = folder
        stamp = folder / "fingerprint.txt"
        if folder.exists() and (not stamp.exists() or stamp.read_text() != key):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key)

    def _path(self, subsample: int) -> Path:
        return self.folder / f"subsample-{subsample}.parquet"

    def load(self, subsample: int) -> pd.DataFrame | None:
        """The subsample's records if it finished before, else None."""
        path = self._path(subsample)
        return pd.read_parquet(path) if path.exists() else None

    def save(self, subsample: int, frame: pd.DataFrame) -> None:
        """Write atomically (a kill mid-write leaves no partial file)."""
        tmp = self._path(subsample).with_suffix(".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(self._path(subsample))

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class Progress:
    """``loo_grid``'s progress callback: one log line at most every ``every`` seconds."""

    def __init__(self, label: str, every: float, log) -> None:
        self.label, self.every, self.log = label, every, log
        self.start = self.last = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - self.last >= self.every:
            self.last = now
            seconds = now - self.start
            print(
                f"{self.label}: {done}/{total} grid points, {seconds:.0f}s",
                file=self.log,
                flush=True,
            )


def _announce(method: str | EstimatorMethod, n_features: int, log) -> None:
    """Compile or load a built-in method's numba kernels before any clock starts, or say
    how the grid reaches a config's own classifier."""
    if isinstance(method, str):
        seconds, compiled = warm_up_shared([method])
        done = "compiled" if compiled else "loaded"
        print(f"[isvm loo] numba kernels {done} in {seconds:.1f} s (untimed)", file=log, flush=True)
    else:
        note = grid_note(method, n_features)
        print(f"[isvm loo] {method.name}: {method.estimator}, {note}", file=log, flush=True)


def _chunk_rows(subsamples_path: Path, chunk: int, reps_per_job: int) -> tuple[np.ndarray, range]:
    """The subsample index matrix and the rows of it that ``chunk`` runs."""
    indices = np.load(subsamples_path)
    if indices.ndim != 2:
        raise ValueError(f"{subsamples_path}: expected a 2-D index matrix, got {indices.shape}")
    n_sub = indices.shape[0]
    first = chunk * reps_per_job
    if not 0 <= first < n_sub:
        raise ValueError(f"chunk {chunk} starts at subsample {first}, but there are {n_sub}")
    return indices, range(first, min(first + reps_per_job, n_sub))


def run_chunk(
    data_path: Path,
    subsamples_path: Path,
    method: str | EstimatorMethod,
    chunk: int,
    reps_per_job: int,
    gammas: list[float],
    Cs: np.ndarray,
    *,
    tol: float,
    max_iter: int | None,
    threads: int,
    seed: int,
    checkpoints: Checkpoints | None = None,
    progress_every: float = 300.0,
    log=None,
) -> pd.DataFrame:
    """LOO records of one chunk of subsamples (see the module docstring).

    ``method``: a name of :data:`~isvm.loo.refit.LOO_METHODS`, or a config's own
    classifier (its params fix its solver: ``tol`` and ``max_iter`` do not apply). With
    ``checkpoints``, subsamples finished by an earlier, interrupted run are read back
    instead of recomputed, and each one finished here is saved at once.
    """
    log = sys.stderr if log is None else log  # the stream of the call, not of the import
    builtin = isinstance(method, str)
    if builtin:
        check_method(method)  # before reading the data
    name = method if builtin else method.name
    solver = {"tol": tol, "max_iter": max_iter} if builtin else {}
    dataset = load_npz(data_path)
    indices, rows = _chunk_rows(subsamples_path, chunk, reps_per_job)
    ns = indices.shape[1]
    _announce(method, dataset.X.shape[1], log)
    frames = []
    for r in rows:
        idx = indices[r]
        y = dataset.y[idx]
        if np.unique(y).shape[0] < 2:
            raise ValueError(
                f"{dataset.name} Ns={ns} subsample {r} holds a single class; "
                "draw subsamples with at least two classes"
            )
        label = f"[isvm loo] {dataset.name} Ns={ns} {name} subsample {r}"
        frame = None if checkpoints is None else checkpoints.load(r)
        if frame is not None:
            frames.append(frame)
            print(f"{label}: read from the checkpoint of an earlier run", file=log, flush=True)
            continue
        start = time.perf_counter()
        frame = loo_records(
            dataset.X[idx],
            y,
            method,
            gammas,
            Cs,
            threads=threads,
            seed=derive_seed(seed, "loo", dataset.stream_name, ns, r),
            progress=Progress(label, progress_every, log),
            **solver,
        )
        frame.insert(0, "subsample", r)
        frames.append(frame)
        if checkpoints is not None:
            checkpoints.save(r, frame)
        capped = int(frame["n_capped"].sum())
        print(
            f"{label}: {len(frame)} grid points in {time.perf_counter() - start:.1f}s, "
            f"best LOO accuracy {frame['loo_accuracy'].max():.3f}"
            + (f", {capped} fits hit the iteration cap" if capped else ""),
            file=log,
            flush=True,
        )
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "method", name)
    out.insert(0, "Ns", ns)
    out.insert(0, "scaling", dataset.scaling)
    out.insert(0, "dataset", dataset.name)
    return out[list(RECORD_COLUMNS)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm loo``."""
    parser.add_argument("--data", type=Path, required=True, help="data set .npz (isvm data fetch)")
    parser.add_argument(
        "--subsamples",
        type=Path,
        required=True,
        help="subsample index matrix .npy (isvm subsample), one row per subsample",
    )
    parser.add_argument(
        "--method",
        required=True,
        help="exact LOO engine: "
        + ", ".join(m for m, s in LOO_METHODS.items() if s == "engine")
        + "; refit every fold: "
        + ", ".join(m for m, s in LOO_METHODS.items() if s == "refit")
        + "; or, with --estimator, that classifier's name (the config's own_methods key)",
    )
    parser.add_argument(
        "--estimator",
        metavar="JSON",
        help='a scikit-learn classifier as {"estimator": "sklearn.svm.SVC", "params": {...}}: '
        "refit LOO on the features, C and gamma (/ n_features) from the grid where it has "
        "them, folds on --threads processes; --tol and --max-iter do not apply",
    )
    parser.add_argument("--chunk", type=int, default=0, help="chunk number (0-based)")
    parser.add_argument(
        "--reps-per-job",
        type=int,
        default=1,
        help="subsamples per chunk: chunk K runs subsamples K*R .. K*R+R-1",
    )
    parser.add_argument(
        "--gammas",
        type=float,
        nargs="+",
        required=True,
        metavar="GAMMA",
        help="kernel widths gamma of exp(-gamma ||x - x'||^2 / M) (the paper: 5 10)",
    )
    parser.add_argument(
        "--C-start", type=float, required=True, help="first C of the grid (the paper: 0.1)"
    )
    parser.add_argument(
        "--C-stop",
        type=float,
        required=True,
        help="the grid runs while C is below this (the paper: 50, i.e. up to 49.6)",
    )
    parser.add_argument(
        "--C-step", type=float, required=True, help="C step of the grid (the paper: 0.5)"
    )
    parser.add_argument("--tol", type=float, default=1e-3, help="maximum KKT violation of a fit")
    parser.add_argument(
        "--max-iter", type=int, default=None, help="epochs per fit (default: the engine's cap)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="numba threads for the folds, worker processes with --estimator (numbers unchanged)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the study's seed")
    parser.add_argument("--out", type=Path, required=True, help="output .parquet (atomic write)")
    parser.add_argument(
        "--progress-every",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="log progress within a subsample at most this often",
    )
    parser.add_argument(
        "--no-checkpoints",
        dest="checkpoints",
        action="store_false",
        help="do not keep finished subsamples in OUT.partial/ for a resumed run",
    )


def _own_method(args: argparse.Namespace) -> EstimatorMethod:
    """``--estimator``'s definition as the method ``--method``; a ValueError naming the option."""
    try:
        return estimator_method(args.method, json.loads(args.estimator))
    except ValueError as exc:
        raise ValueError(f"--estimator: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    """Run one chunk and write its Parquet file (atomically), resuming from checkpoints."""
    keep_freed_memory()  # a job is its own process: the setting stays inside it
    checkpoints = None
    try:
        Cs = c_grid(args.C_start, args.C_stop, args.C_step)
        method = args.method if args.estimator is None else _own_method(args)
        if isinstance(method, str):
            check_method(method)
        if args.checkpoints:
            key = fingerprint(
                args.data,
                args.subsamples,
                method=args.method,
                chunk=args.chunk,
                reps_per_job=args.reps_per_job,
                gammas=list(args.gammas),
                Cs=Cs.tolist(),
                tol=args.tol,
                max_iter=args.max_iter,
                seed=args.seed,
                estimator=None if isinstance(method, str) else method.definition,
            )
            checkpoints = Checkpoints(args.out.with_suffix(".partial"), key)
        records = run_chunk(
            args.data,
            args.subsamples,
            method,
            args.chunk,
            args.reps_per_job,
            list(args.gammas),
            Cs,
            tol=args.tol,
            max_iter=args.max_iter,
            threads=args.threads,
            seed=args.seed,
            checkpoints=checkpoints,
            progress_every=args.progress_every,
        )
    except (DataError, ValueError, OSError) as exc:
        print(f"isvm loo: error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".parquet.tmp")
    records.to_parquet(tmp, index=False)
    tmp.replace(args.out)
    if checkpoints is not None:
        checkpoints.remove()
    return 0
