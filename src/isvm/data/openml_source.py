"""The OpenML source: the real ``openml`` package, its cache kept under ``resources/``.

``openml.datasets.get_dataset(id, download_data=True)`` fetches the
description and the data file (parquet, or ARFF when no parquet is offered),
and ``dataset.get_data(dataset_format="dataframe")`` parses it; the table then
goes through the same preprocessing as the bundled snapshot. Any failure
(network, server, checksum, parse) becomes a :class:`DataError` that names the
data set and the cause.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from isvm.data.preprocess import RawTable, columns_named, normalize_name
from isvm.data.registry import DataError, DatasetSpec

#: Default OpenML cache, relative to the working directory (the project root in the workflow).
DEFAULT_CACHE_DIR = Path("resources") / "openml-cache"


@contextlib.contextmanager
def _openml_cache(cache_dir: Path) -> Iterator[object]:
    """The ``openml`` module with its root cache set to ``cache_dir`` for the duration."""
    try:
        import openml
    except ImportError as exc:  # pragma: no cover - openml is a declared dependency
        raise DataError(f"the openml package cannot be imported: {exc}") from exc
    previous = openml.config.get_config_as_dict()["cachedir"]
    openml.config.set_root_cache_directory(cache_dir)
    try:
        yield openml
    finally:
        openml.config.set_root_cache_directory(previous)


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]  # type: ignore[union-attr]


def read_openml(spec: DatasetSpec, cache_dir: Path | str | None = None) -> tuple[RawTable, str]:
    """The raw table of ``spec`` from OpenML, and a line of provenance (id, version, md5, file).

    Columns OpenML marks as ignored are kept only where a paper rule needs
    them (Vowel's train/test flag); the row-id column is never a feature.
    """
    cache = Path(cache_dir if cache_dir is not None else DEFAULT_CACHE_DIR).resolve()
    where = f"OpenML data set {spec.openml_id} ({spec.name})"
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the OpenML cache directory {cache}: {exc}") from exc
    with _openml_cache(cache) as openml:
        try:
            dataset = openml.datasets.get_dataset(  # type: ignore[attr-defined]
                spec.openml_id,
                download_data=True,
                download_qualities=False,
                download_features_meta_data=False,
            )
            frame, _, _, _ = dataset.get_data(
                target=None,
                include_row_id=False,
                include_ignore_attribute=True,
                dataset_format="dataframe",
            )
        except Exception as exc:  # network, server, hash and parse errors all end here
            raise DataError(
                f"could not get data set {spec.name!r} (OpenML id {spec.openml_id}) from "
                f"OpenML: {type(exc).__name__}: {exc}"
            ) from exc

    wanted = spec.openml_target or dataset.default_target_attribute
    target = columns_named(frame, wanted)
    if len(target) != 1:
        raise DataError(
            f"{where} has no target column {wanted!r}; "
            f"columns: {', '.join(map(str, frame.columns[:20]))}"
        )
    needed = {normalize_name(c) for c in spec.rule_columns}
    ignored = [
        c
        for c in _as_list(dataset.ignore_attribute)
        if c in frame.columns and normalize_name(c) not in needed
    ]
    features = frame.drop(columns=target + ignored)
    file_kind = "parquet" if dataset.parquet_file else "arff"
    provenance = (
        f"OpenML id {spec.openml_id} name={dataset.name} version={dataset.version} "
        f"md5={dataset.md5_checksum} file={file_kind}"
    )
    return RawTable(features=features, labels=frame[target[0]], origin=where), provenance
