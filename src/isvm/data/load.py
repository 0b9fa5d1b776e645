"""Load a processed data set from a source, and save or read it as a deterministic ``.npz``.

``load_dataset`` is the one public way in: it picks the source, runs the
shared preprocessing and attaches the source, provenance and checksums
(sha256 of ``X.tobytes()`` and ``y.tobytes()``). The same data set gives the
same arrays, and so the same checksums, from OpenML and from the bundled
snapshot; the ``.npz`` written by :func:`save_npz` is byte-identical for
identical data (no timestamps).
"""

from __future__ import annotations

import hashlib
import os
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from isvm.data.bundled import bundled_provenance, read_bundled
from isvm.data.preprocess import SCALINGS, RawTable, process_table
from isvm.data.registry import DataError, DatasetSpec, get_spec

#: The sources ``load_dataset`` accepts; ``openml`` is the default.
SOURCES: tuple[str, ...] = ("openml", "bundled", "auto")

#: Fixed zip timestamp so that identical data give byte-identical files.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_TEXT_FIELDS = ("name", "source", "scaling", "provenance", "checksum_X", "checksum_y")


def array_checksum(array: np.ndarray) -> str:
    """sha256 of ``array.tobytes()`` (C order), without copying a contiguous array."""
    data = np.ascontiguousarray(array)
    return hashlib.sha256(memoryview(data).cast("B")).hexdigest()


@dataclass(frozen=True, eq=False)
class Dataset:
    """One processed data set: scaled features, labels 0..L-1 and where they came from."""

    name: str
    X: np.ndarray
    y: np.ndarray
    class_names: tuple[str, ...]
    feature_names: tuple[str, ...]
    source: str
    scaling: str
    provenance: str
    checksums: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: the name the random streams (subsamples, solver seeds) derive from, where it is
    #: not ``name`` (an ``own_datasets`` entry's ``seed_name``)
    seed_name: str | None = None

    @property
    def stream_name(self) -> str:
        """The name every random stream of this data set is keyed on."""
        return self.seed_name or self.name

    @property
    def n_examples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes (all have at least one example)."""
        return len(self.class_names)

    @property
    def base_performance(self) -> float:
        """Share of the most frequent class: the accuracy of always answering it."""
        return float(np.bincount(self.y, minlength=self.n_classes).max() / self.n_examples)


def _make_dataset(
    spec: DatasetSpec,
    table: RawTable,
    scaling: str,
    source: str,
    provenance: str,
    seed_name: str | None = None,
) -> Dataset:
    processed = process_table(spec, table, scaling)
    seed_name = seed_name or spec.reading_of  # a reading draws its base's subsamples
    checksums = {"X": array_checksum(processed.X), "y": array_checksum(processed.y)}
    return Dataset(
        name=spec.name,
        X=processed.X,
        y=processed.y,
        class_names=processed.class_names,
        feature_names=processed.feature_names,
        source=source,
        scaling=scaling,
        provenance=provenance,
        checksums=MappingProxyType(checksums),
        seed_name=seed_name if seed_name != spec.name else None,
    )


def load_dataset(
    name: str,
    source: str = "openml",
    scaling: str = "zscore",
    cache_dir: Path | str | None = None,
    *,
    bundled_dir: Path | str | None = None,
) -> Dataset:
    """Data set ``name`` with the paper's preprocessing, from ``source``, features scaled.

    ``source``: ``openml`` (download through the openml package, cached in
    ``cache_dir``, default ``resources/openml-cache``), ``bundled`` (the
    snapshot shipped with the package, or ``bundled_dir``), or ``auto``
    (OpenML, falling back to the snapshot with a warning when OpenML fails).
    ``scaling``: ``zscore`` (default), ``minmax`` or ``none`` (docs/data.md).
    Every failure is a :class:`DataError` with the data set and the cause.
    """
    spec = get_spec(name)
    if source not in SOURCES:
        raise DataError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    if scaling not in SCALINGS:
        raise DataError(f"unknown scaling {scaling!r}; choose one of {', '.join(SCALINGS)}")
    if source in ("openml", "auto"):
        from isvm.data.openml_source import read_openml

        try:
            table, provenance = read_openml(spec, cache_dir)
            return _make_dataset(spec, table, scaling, "openml", provenance)
        except DataError as exc:
            if source == "openml":
                raise
            warnings.warn(
                f"OpenML failed for {spec.name} ({exc}); using the bundled snapshot instead",
                stacklevel=2,
            )
    table = read_bundled(spec, bundled_dir)
    return _make_dataset(spec, table, scaling, "bundled", bundled_provenance(spec))


def load_own(
    name: str,
    definition: Mapping[str, Any],
    scaling: str = "zscore",
    cache_dir: Path | str | None = None,
) -> Dataset:
    """Data set ``name`` as a study config defines it (``own_datasets``, :mod:`isvm.data.own`).

    Every problem is a :class:`~isvm.data.own.DefinitionError` naming its config key.
    """
    from isvm.data.own import DefinitionError, check_table, read_definition, read_table

    own = read_definition(name, definition)
    try:
        table, provenance = read_table(own, cache_dir)
        check_table(own, table)
        source = "openml" if own.openml_id is not None else "file"
        return _make_dataset(own.spec(), table, scaling, source, provenance, own.seed_name)
    except DefinitionError:
        raise
    except DataError as exc:  # the shared reading and preprocessing's (labels, NaN, ...)
        raise DefinitionError(own.key, str(exc)) from exc


def load_configured(
    name: str,
    config: Mapping[str, Any],
    scaling: str | None = None,
    cache_dir: Path | str | None = None,
) -> Dataset:
    """Data set ``name`` of a study config: an ``own_datasets`` entry or a registry set
    from the config's ``data.source``; ``scaling`` defaults to the config's."""
    data = config.get("data") or {}
    scaling = scaling or data.get("scaling", "zscore")
    own = (config.get("own_datasets") or {}).get(name)
    if own is not None:
        return load_own(name, own, scaling, cache_dir)
    return load_dataset(name, data.get("source", "bundled"), scaling, cache_dir)


def save_npz(dataset: Dataset, path: Path | str) -> Path:
    """Write ``dataset`` to ``path`` as an uncompressed ``.npz``, byte-identical for identical data.

    Arrays: X, y, class_names, feature_names; strings: name, source, scaling,
    provenance, checksum_X, checksum_y (and seed_name where the data set has one).
    Written to a temporary file and moved into place, so a reader never sees half a file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries: dict[str, np.ndarray] = {
        "X": np.ascontiguousarray(dataset.X, dtype=np.float64),
        "y": np.ascontiguousarray(dataset.y, dtype=np.int64),
        "class_names": np.array(dataset.class_names, dtype=str),
        "feature_names": np.array(dataset.feature_names, dtype=str),
        "name": np.array(dataset.name),
        "source": np.array(dataset.source),
        "scaling": np.array(dataset.scaling),
        "provenance": np.array(dataset.provenance),
        "checksum_X": np.array(dataset.checksums["X"]),
        "checksum_y": np.array(dataset.checksums["y"]),
    }
    if dataset.seed_name is not None:  # only then: the registry sets' files stay as they were
        entries["seed_name"] = np.array(dataset.seed_name)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, array in entries.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, array, allow_pickle=False)
    os.replace(tmp, path)
    return path


def load_npz(path: Path | str) -> Dataset:
    """Read a file written by :func:`save_npz`, re-checking the checksums of X and y."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise DataError(f"cannot read data set file {path}: {exc}") from exc
    missing = [
        k for k in ("X", "y", "class_names", "feature_names", *_TEXT_FIELDS) if k not in data
    ]
    if missing:
        raise DataError(f"data set file {path} lacks {', '.join(missing)}")
    text = {key: str(data[key][()]) for key in _TEXT_FIELDS}
    checksums = {"X": array_checksum(data["X"]), "y": array_checksum(data["y"])}
    for key in ("X", "y"):
        if checksums[key] != text[f"checksum_{key}"]:
            raise DataError(
                f"data set file {path}: {key} has sha256 {checksums[key]}, "
                f"expected {text[f'checksum_{key}']} (file corrupt or edited)"
            )
    return Dataset(
        name=text["name"],
        X=np.ascontiguousarray(data["X"], dtype=np.float64),
        y=np.ascontiguousarray(data["y"], dtype=np.int64),
        class_names=tuple(str(c) for c in data["class_names"]),
        feature_names=tuple(str(c) for c in data["feature_names"]),
        source=text["source"],
        scaling=text["scaling"],
        provenance=text["provenance"],
        checksums=MappingProxyType(checksums),
        seed_name=str(data["seed_name"][()]) if "seed_name" in data else None,
    )
