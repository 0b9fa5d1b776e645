"""Data sets defined in a study config (key ``own_datasets``): a local file or an OpenML id.

A definition names where the table comes from and the preprocessing the 14 registry
sets get from their :class:`~isvm.data.registry.DatasetSpec`::

    own_datasets:
      plants:
        file: data/plants.csv        # .csv, .tsv, .arff, .parquet (optionally .gz)
        target: species              # the label column
        drop_columns: [plant_id]     # optional: columns that are not features
        one_hot: [colour]            # optional: categorical columns, one-hot coded
        drop_classes: [unknown]      # optional: classes whose rows are removed
        rename_classes: {"1": a}     # optional: labels renamed (two to one name: merged)
      credit:
        openml_id: 31                # through the openml package and its cache
        target: class                # optional for OpenML: its default target

The table then goes through the same code as the 14 (:func:`isvm.data.preprocess.
process_table`: rules, floats, labels 0..L-1 in natural order, canonical row order,
the config's scaling). Every problem of a definition is a :class:`DefinitionError`
naming its config key; the workflow's config check loads each definition
(:func:`isvm.study.config_problems`), so a bad one stops the run before any job.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from isvm.data.bundled import arff_frame, sha256_file
from isvm.data.preprocess import RawTable, apply_paper_rules, columns_named
from isvm.data.registry import REGISTRY, DataError, DatasetSpec

#: file formats by suffix (a trailing ``.gz`` is read compressed)
FILE_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".arff": "arff",
    ".parquet": "parquet",
    ".pq": "parquet",
}
#: the column separator of each text format, unless the definition sets ``sep``
SEPARATORS: dict[str, str] = {"csv": ",", "tsv": "\t"}
#: a target with more distinct values than this share of the rows looks continuous
MAX_CLASS_SHARE = 0.5


class DefinitionError(DataError):
    """A data set definition that cannot be loaded, with the config key it is about."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


@dataclass(frozen=True)
class OwnDataset:
    """One ``own_datasets`` entry, read (see the module docstring for the keys)."""

    name: str
    file: Path | None
    openml_id: int | None
    target: str | None
    drop_columns: tuple[str, ...] = ()
    one_hot: tuple[str, ...] = ()
    drop_classes: tuple[str, ...] = ()
    rename_classes: Mapping[str, str] = field(default_factory=dict)
    sep: str | None = None
    title: str | None = None
    seed_name: str | None = None

    @property
    def key(self) -> str:
        """The definition's config key."""
        return f"own_datasets.{self.name}"

    def spec(self) -> DatasetSpec:
        """The preprocessing as a :class:`DatasetSpec` (no expected shape)."""
        return DatasetSpec(
            name=self.name,
            title=self.title or self.name,
            openml_id=self.openml_id,
            openml_target=self.target,
            drop_columns=self.drop_columns,
            one_hot=self.one_hot,
            drop_classes=self.drop_classes,
            label_aliases=MappingProxyType(dict(self.rename_classes)),
        )


def _strings(definition: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = definition.get(key) or ()
    return (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def read_definition(name: str, definition: Mapping[str, Any]) -> OwnDataset:
    """``definition`` as an :class:`OwnDataset`; a :class:`DefinitionError` where the
    keys themselves are wrong (the schema says the same for a config)."""
    key = f"own_datasets.{name}"
    if name in REGISTRY:
        raise DefinitionError(key, f"'{name}' is one of the paper's data sets; name yours apart")
    has_file, has_id = definition.get("file") is not None, definition.get("openml_id") is not None
    if has_file == has_id:
        raise DefinitionError(key, "give exactly one of `file` (a local table) or `openml_id`")
    if has_file and not definition.get("target"):
        raise DefinitionError(f"{key}.target", "a local file needs its label column named")
    return OwnDataset(
        name=name,
        file=Path(definition["file"]) if has_file else None,
        openml_id=int(definition["openml_id"]) if has_id else None,
        target=definition.get("target"),
        drop_columns=_strings(definition, "drop_columns"),
        one_hot=_strings(definition, "one_hot"),
        drop_classes=_strings(definition, "drop_classes"),
        rename_classes={
            str(k): str(v) for k, v in (definition.get("rename_classes") or {}).items()
        },
        sep=definition.get("sep"),
        title=definition.get("title"),
        seed_name=definition.get("seed_name"),
    )


def file_format(path: Path) -> str:
    """The format of ``path`` by its suffix (``.gz`` looked through); DataError if unknown."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    if not suffixes or suffixes[-1] not in FILE_FORMATS:
        raise DataError(
            f"cannot tell the format of {path} by its suffix; use one of "
            f"{', '.join(sorted(FILE_FORMATS))} (optionally .gz)"
        )
    return FILE_FORMATS[suffixes[-1]]


def _read_frame(own: OwnDataset) -> pd.DataFrame:
    path = own.file
    assert path is not None
    if not path.is_file():
        raise DefinitionError(f"{own.key}.file", f"no file {path} (relative to {Path.cwd()})")
    try:
        kind = file_format(path)
    except DataError as exc:
        raise DefinitionError(f"{own.key}.file", str(exc)) from exc
    try:
        if kind == "parquet":
            return pd.read_parquet(path)
        if kind == "arff":
            opener = gzip.open if path.suffix.lower() == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as fh:
                return arff_frame(fh)
        return pd.read_csv(path, sep=own.sep or SEPARATORS[kind])
    except Exception as exc:  # parsers raise many types; the user needs the file and cause
        raise DefinitionError(
            f"{own.key}.file", f"cannot read {path} as {kind}: {type(exc).__name__}: {exc}"
        ) from exc


def _find(frame: pd.DataFrame, own: OwnDataset, column: str, key: str) -> str:
    """The frame's column named ``column`` (case and punctuation ignored), else an error."""
    found = columns_named(frame, column)
    if len(found) == 1:
        return str(found[0])
    where = own.file if own.file is not None else f"OpenML data set {own.openml_id}"
    kind = file_format(own.file) if own.file is not None else None
    if kind in SEPARATORS and frame.shape[1] == 1:
        sep = own.sep or SEPARATORS[kind]
        raise DefinitionError(
            key, f"no column {column!r}: {where} has one column when split at {sep!r}; set `sep`"
        )
    shown = ", ".join(map(str, frame.columns[:12])) + (", ..." if frame.shape[1] > 12 else "")
    raise DefinitionError(key, f"no column {column!r} in {where} (columns: {shown})")


def read_table(own: OwnDataset, cache_dir: Path | str | None = None) -> tuple[RawTable, str]:
    """The raw table of ``own`` and a line of provenance, its columns checked by name."""
    if own.openml_id is not None:
        from isvm.data.openml_source import DEFAULT_CACHE_DIR, read_openml

        try:
            return read_openml(own.spec(), cache_dir)
        except DataError as exc:
            cache = cache_dir if cache_dir is not None else DEFAULT_CACHE_DIR
            cause = exc.__cause__ or exc
            raise DefinitionError(
                f"{own.key}.openml_id",
                f"OpenML data set {own.openml_id} could not be fetched and has no cached "
                f"copy in {cache} ({type(cause).__name__}: {str(cause).splitlines()[0][:160]})",
            ) from exc
    frame = _read_frame(own)
    assert own.file is not None and own.target is not None
    target = _find(frame, own, own.target, f"{own.key}.target")
    for key in ("drop_columns", "one_hot"):
        for column in getattr(own, key):
            _find(frame, own, column, f"{own.key}.{key}")
    provenance = f"file {own.file} sha256={sha256_file(own.file)}"
    table = RawTable(frame.drop(columns=[target]), frame[target], origin=str(own.file))
    return table, provenance


def check_table(own: OwnDataset, table: RawTable) -> None:
    """What the preprocessing would refuse less plainly, or not at all, after the
    definition's rules (:func:`~isvm.data.preprocess.apply_paper_rules`, as the
    preprocessing applies them): a target with one class or one that looks continuous,
    and non-numeric feature columns."""
    features, labels = apply_paper_rules(own.spec(), table)
    classes = sorted(set(labels.tolist()))
    if len(classes) < 2:
        raise DefinitionError(
            f"{own.key}.target", f"{own.target or 'the target'} has one class ({classes})"
        )
    if len(classes) > MAX_CLASS_SHARE * len(labels):
        raise DefinitionError(
            f"{own.key}.target",
            f"{len(classes)} classes in {len(labels)} rows: the target looks continuous "
            "(a classification study needs classes with several examples each)",
        )
    for column in features.columns:
        values = features[column]
        if pd.api.types.is_numeric_dtype(values.dtype):
            continue
        if pd.to_numeric(values.astype("object").map(str), errors="coerce").isna().any():
            raise DefinitionError(
                f"{own.key}",
                f"column {column!r} is not numeric: list it under one_hot (categories) "
                "or drop_columns",
            )
