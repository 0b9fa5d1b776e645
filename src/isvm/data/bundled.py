"""The bundled snapshot: readers for its files, each checked against its sha256 before use.

The snapshot (``isvm/data/bundled/``, described in its ``MANIFEST.md``) keeps
each data set in the format it was found in: Weka ARFF, PMLB gzip TSV, the
original UCI/StatLog text files and LeCun's IDX files. One small reader per
format turns them into a :class:`~isvm.data.preprocess.RawTable`; parsing is
left to well-kept libraries (liac-arff, pandas) wherever they fit.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import arff
import numpy as np
import pandas as pd

from isvm.data.preprocess import RawTable, columns_named
from isvm.data.registry import DataError, DatasetSpec

#: Where the snapshot lives inside the installed package.
BUNDLED_DIR: Path = Path(__file__).resolve().parent / "bundled"

_GLASS_COLUMNS = ["Id", "RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe", "Type"]
_YEAST_COLUMNS = ["Sequence_name", "mcg", "gvh", "alm", "mit", "erl", "pox", "vac", "nuc", "class"]
_VEHICLE_COLUMNS = [
    "COMPACTNESS",
    "CIRCULARITY",
    "DISTANCE_CIRCULARITY",
    "RADIUS_RATIO",
    "PR.AXIS_ASPECT_RATIO",
    "MAX.LENGTH_ASPECT_RATIO",
    "SCATTER_RATIO",
    "ELONGATEDNESS",
    "PR.AXIS_RECTANGULARITY",
    "MAX.LENGTH_RECTANGULARITY",
    "SCALED_VARIANCE_MAJOR",
    "SCALED_VARIANCE_MINOR",
    "SCALED_RADIUS_OF_GYRATION",
    "SKEWNESS_ABOUT_MAJOR",
    "SKEWNESS_ABOUT_MINOR",
    "KURTOSIS_ABOUT_MAJOR",
    "KURTOSIS_ABOUT_MINOR",
    "HOLLOWS_RATIO",
    "Class",
]


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, expected_sha256: str) -> None:
    """Raise :class:`DataError` naming ``path`` when it is missing or its sha256 differs."""
    if not path.is_file():
        raise DataError(f"bundled file {path} is missing (expected sha256 {expected_sha256})")
    actual = sha256_file(path)
    if actual != expected_sha256:
        raise DataError(
            f"bundled file {path} failed its checksum: expected sha256 {expected_sha256}, "
            f"actual {actual}; the file is corrupt, truncated or not the registered version"
        )


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Turn any failure while parsing ``path`` into a :class:`DataError` that names it."""
    try:
        yield
    except DataError:
        raise
    except Exception as exc:  # parsers raise many types; the caller needs the file and cause
        raise DataError(f"could not read bundled file {path}: {type(exc).__name__}: {exc}") from exc


def _split_target(df: pd.DataFrame, target: str, path: Path) -> RawTable:
    matches = columns_named(df, target)
    if len(matches) != 1:
        raise DataError(f"bundled file {path} has no label column {target!r}")
    return RawTable(features=df.drop(columns=matches), labels=df[matches[0]], origin=str(path))


def arff_frame(fh: IO[str]) -> pd.DataFrame:
    """An ARFF text stream as a frame, its attributes as the columns."""
    decoded = arff.load(fh)
    return pd.DataFrame(decoded["data"], columns=[name for name, _ in decoded["attributes"]])


def _read_arff(paths: list[Path], spec: DatasetSpec) -> RawTable:
    (path,) = paths
    with _reading(path), path.open(encoding="utf-8") as fh:
        df = arff_frame(fh)
    return _split_target(df, spec.bundled_target, path)


def _read_pmlb_tsv(paths: list[Path], spec: DatasetSpec) -> RawTable:
    (path,) = paths
    with _reading(path):
        df = pd.read_csv(path, sep="\t", compression="gzip")
    return _split_target(df, spec.bundled_target, path)


def _read_csv_columns(path: Path, columns: list[str], **kwargs: object) -> pd.DataFrame:
    with _reading(path):
        df = pd.read_csv(path, header=None, **kwargs)
    if df.shape[1] != len(columns):
        raise DataError(f"bundled file {path} has {df.shape[1]} columns, expected {len(columns)}")
    df.columns = columns
    return df


def _read_glass(paths: list[Path], spec: DatasetSpec) -> RawTable:
    (path,) = paths
    df = _read_csv_columns(path, _GLASS_COLUMNS, sep=",")
    return _split_target(df.drop(columns=["Id"]), spec.bundled_target, path)


def _read_yeast(paths: list[Path], spec: DatasetSpec) -> RawTable:
    (path,) = paths
    df = _read_csv_columns(path, _YEAST_COLUMNS, sep=r"\s+")
    # The sequence name identifies a protein; it is not a feature (OpenML's copy lacks it).
    return _split_target(df.drop(columns=["Sequence_name"]), spec.bundled_target, path)


def _read_vehicle(paths: list[Path], spec: DatasetSpec) -> RawTable:
    parts = [_read_csv_columns(path, _VEHICLE_COLUMNS, sep=r"\s+") for path in paths]
    df = pd.concat(parts, ignore_index=True)
    table = _split_target(df, spec.bundled_target, paths[0].parent)
    return RawTable(table.features, table.labels, origin=f"{paths[0].parent}/xa[a-i].dat")


def _idx_array(path: Path, magic: int) -> np.ndarray:
    """An IDX file (LeCun's MNIST format, gzipped) as a uint8 array of the shape in its header."""
    with _reading(path), gzip.open(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or int.from_bytes(raw[:4], "big") != magic:
        raise DataError(f"bundled file {path} is not an IDX file with magic number {magic}")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    if len(raw) != header + int(np.prod(shape)):
        raise DataError(
            f"bundled file {path} holds {len(raw) - header} data bytes, "
            f"its header promises {int(np.prod(shape))} (shape {shape}): truncated or corrupt"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def _read_idx(paths: list[Path], spec: DatasetSpec) -> RawTable:
    train_images, train_labels, test_images, test_labels = paths
    images = [_idx_array(p, 0x0803) for p in (train_images, test_images)]
    labels = [_idx_array(p, 0x0801) for p in (train_labels, test_labels)]
    for img, lab, path in zip(images, labels, (train_images, test_images), strict=True):
        if img.shape[0] != lab.shape[0]:
            raise DataError(f"bundled file {path}: {img.shape[0]} images but {lab.shape[0]} labels")
    # Training set first, as OpenML 554 serves it: the paper's 60,000 are the first rows.
    pixels = np.concatenate([img.reshape(img.shape[0], -1) for img in images])
    columns = [f"pixel{i + 1}" for i in range(pixels.shape[1])]
    features = pd.DataFrame(pixels, columns=columns, copy=False)
    origin = f"{train_images.parent}/*-idx?-ubyte.gz"
    return RawTable(features, pd.Series(np.concatenate(labels), name="class"), origin)


_READERS: dict[str, Callable[[list[Path], DatasetSpec], RawTable]] = {
    "arff": _read_arff,
    "pmlb_tsv": _read_pmlb_tsv,
    "glass_data": _read_glass,
    "yeast_data": _read_yeast,
    "statlog_vehicle": _read_vehicle,
    "idx": _read_idx,
}


def read_bundled(spec: DatasetSpec, root: Path | str | None = None) -> RawTable:
    """The raw table of ``spec`` from the snapshot under ``root`` (default: the packaged one).

    Every file is checked against its registered sha256 first, so a missing,
    truncated or altered file fails with a :class:`DataError` naming it.
    """
    base = Path(root) if root is not None else BUNDLED_DIR
    paths = [base / f.path for f in spec.bundled_files]
    for path, f in zip(paths, spec.bundled_files, strict=True):
        verify_file(path, f.sha256)
    return _READERS[spec.bundled_format](paths, spec)


def bundled_provenance(spec: DatasetSpec) -> str:
    """One line naming the bundled files and their sha256, for the output's record."""
    return "; ".join(f"bundled/{f.path} sha256={f.sha256}" for f in spec.bundled_files)
