"""The paper's preprocessing, applied the same way to a table from any source.

A source (the bundled snapshot or OpenML) hands over a :class:`RawTable`: the
feature columns in file order and the raw labels. :func:`process_table` turns
it into the arrays the study uses, in five steps, each written once:

1. the paper's rules from the data set's :class:`~isvm.data.registry.DatasetSpec`
   (:func:`apply_paper_rules`);
2. features to float64, refusing missing or non-finite values (:func:`to_float_matrix`);
3. labels to 0..L-1, classes in natural order of their names (:func:`encode_labels`);
4. rows in a canonical order (:func:`canonical_order`), so that the arrays do
   not depend on the row order a source happens to use;
5. feature scaling over the whole data set (:func:`scale`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isvm.data.registry import DataError, DatasetSpec

#: The feature scalings :func:`scale` knows; the paper does not say which it used.
#: ``zscore`` (the default) is the reading whose Table 3 matches the paper's (docs/data.md).
SCALINGS: tuple[str, ...] = ("zscore", "minmax", "none")


@dataclass(frozen=True)
class RawTable:
    """A data set as a source delivers it: feature columns, raw labels and where they came from."""

    features: pd.DataFrame
    labels: pd.Series
    origin: str


def normalize_name(name: object) -> str:
    """A column name with case, spaces and punctuation removed: 'Train or Test' -> 'trainortest'."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def label_string(value: object, origin: str = "the data") -> str:
    """One raw label (str, int, float, numpy scalar) as its canonical string: 15.0 -> '15'."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, str):
        text = value.strip()
        if text and text != "?":
            return text
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    elif isinstance(value, (float, np.floating)) and math.isfinite(value):
        value = float(value)
        return str(int(value)) if value.is_integer() else repr(value)
    raise DataError(f"missing or unreadable label {value!r} in {origin}")


def label_strings(values: pd.Series | np.ndarray, origin: str = "the data") -> np.ndarray:
    """Every label of ``values`` as its canonical string (see :func:`label_string`)."""
    array = values.to_numpy(dtype=object) if isinstance(values, pd.Series) else values
    # Convert each distinct value once: MNIST has 70,000 labels but 10 values.
    cache: dict[object, str] = {}
    out = np.empty(len(array), dtype=object)
    for i, value in enumerate(array):
        try:
            out[i] = cache[value]
        except (KeyError, TypeError):
            out[i] = cache[value] = label_string(value, origin)
    return out


def natural_key(name: str) -> tuple:
    """Sort key that compares digit runs as numbers: '2' < '10', '5-9' < '10-14'.

    This is the one rule for class order: classes are numbered 0..L-1 in the
    natural order of their names, which is numeric order for numeric labels and
    ordinary (case-sensitive) string order otherwise.
    """
    parts = re.split(r"(\d+)", name)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


def abalone_age_band(rings: str) -> str:
    """Abalone age band: floor(rings / 5), named by its ring range ('5-9' for rings 5 to 9)."""
    band = int(float(rings) // 5)
    return f"{5 * band}-{5 * band + 4}"


_TARGET_RULES = {"abalone_age_band": abalone_age_band}

#: StatLog DNA's three bits per position -> the nucleotide's rank in A, C, G, T
_NUCLEOTIDE_RANK = {(1, 0, 0): 0.0, (0, 1, 0): 1.0, (0, 0, 1): 2.0, (0, 0, 0): 3.0}


def nucleotide_ordinal(
    X: np.ndarray, names: tuple[str, ...], origin: str
) -> tuple[np.ndarray, tuple[str, ...]]:
    """StatLog DNA (3 bits per position: A = 100, C = 010, G = 001, T = 000) read as the
    UCI splice data: one feature per position, the nucleotide's rank in A, C, G, T."""
    n, d = X.shape
    if d % 3:
        raise DataError(f"{origin}: {d} bit columns, not 3 per position")
    bits = X.reshape(n, d // 3, 3)
    ranks = np.full(bits.shape[:2], np.nan)
    for code, rank in _NUCLEOTIDE_RANK.items():
        ranks[(bits == np.array(code)).all(axis=2)] = rank
    if np.isnan(ranks).any():
        raise DataError(f"{origin}: a position's bits are none of 100, 010, 001, 000")
    return ranks, tuple(f"position{k + 1}" for k in range(d // 3))


_FEATURE_RULES = {"nucleotide_ordinal": nucleotide_ordinal}


def columns_named(df: pd.DataFrame, name: object) -> list:
    """The columns of ``df`` named ``name`` up to case, spaces and punctuation
    (:func:`normalize_name`): how every source's column is found by its rule name."""
    wanted = normalize_name(name)
    return [col for col in df.columns if normalize_name(col) == wanted]


def _column(df: pd.DataFrame, name: str, origin: str) -> str:
    """The column of ``df`` whose normalized name is that of ``name``."""
    matches = columns_named(df, name)
    if len(matches) != 1:
        raise DataError(
            f"expected one column named {name!r} in {origin}, found {len(matches)} "
            f"(columns: {', '.join(map(str, df.columns[:20]))}{' ...' if df.shape[1] > 20 else ''})"
        )
    return matches[0]


def apply_paper_rules(spec: DatasetSpec, table: RawTable) -> tuple[pd.DataFrame, np.ndarray]:
    """The paper's preprocessing of ``spec`` applied to ``table``: (feature frame, class names).

    Row filters come first, in the order of the :class:`DatasetSpec` fields,
    then the label rules, then column drops and one-hot encoding.
    """
    features, origin = table.features, table.origin
    if len(table.labels) != len(features):
        raise DataError(f"{origin}: {len(features)} feature rows but {len(table.labels)} labels")
    labels_raw = table.labels.to_numpy(dtype=object)
    keep = np.ones(len(features), dtype=bool)
    if spec.keep_first is not None:
        if len(features) < spec.keep_first:
            raise DataError(
                f"{origin}: {len(features)} rows, fewer than the {spec.keep_first} to keep"
            )
        keep[spec.keep_first :] = False
    if spec.keep_where is not None:
        column, value = spec.keep_where
        flags = label_strings(features[_column(features, column, origin)], origin)
        keep &= flags == value
    features, labels_raw = features.loc[keep], labels_raw[keep]

    labels = label_strings(labels_raw, origin)
    if spec.label_aliases:
        labels = np.array([spec.label_aliases.get(x, x) for x in labels], dtype=object)
    if spec.target_rule is not None:
        rule = _TARGET_RULES[spec.target_rule]
        labels = np.array([rule(x) for x in labels], dtype=object)
    if spec.drop_classes:
        keep = ~np.isin(labels, list(spec.drop_classes))
        features, labels = features.loc[keep], labels[keep]

    drop = [_column(features, col, origin) for col in spec.drop_columns]
    features = features.drop(columns=drop)
    for col in spec.one_hot:
        features = _one_hot(features, _column(features, col, origin), origin)
    return features.reset_index(drop=True), labels


def _one_hot(df: pd.DataFrame, column: str, origin: str) -> pd.DataFrame:
    """Replace nominal ``column`` by 0/1 columns ``column=level``, levels in natural order."""
    values = label_strings(df[column], origin)
    levels = sorted(set(values), key=natural_key)
    position = list(df.columns).index(column)
    out = df.drop(columns=[column])
    for offset, level in enumerate(levels):
        out.insert(position + offset, f"{column}={level}", (values == level).astype(np.float64))
    return out


def to_float_matrix(df: pd.DataFrame, origin: str) -> np.ndarray:
    """The feature frame as a C-contiguous float64 matrix; DataError on text, NaN or inf."""
    numeric = all(pd.api.types.is_numeric_dtype(dtype) for dtype in df.dtypes)
    if numeric and not any(pd.api.types.is_bool_dtype(dtype) for dtype in df.dtypes):
        X = df.to_numpy(dtype=np.float64)
    else:
        columns = []
        for name in df.columns:
            col = df[name]
            if not pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(
                col.dtype
            ):
                # Nominal codes such as OpenML's '0'/'1' categories: read them as numbers.
                col = pd.to_numeric(col.astype("object").map(str), errors="coerce")
                if col.isna().any():
                    raise DataError(f"{origin}: column {name!r} is not numeric")
            columns.append(col.to_numpy(dtype=np.float64))
        X = np.column_stack(columns) if columns else np.empty((len(df), 0))
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        bad = sorted({str(df.columns[j]) for j in np.nonzero(~np.isfinite(X).all(axis=0))[0]})
        raise DataError(f"{origin}: missing or non-finite feature values in {', '.join(bad)}")
    return X


def encode_labels(labels: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Labels to int64 0..L-1, classes in the natural order of their names (:func:`natural_key`)."""
    class_names = tuple(sorted(set(labels.tolist()), key=natural_key))
    index = {name: i for i, name in enumerate(class_names)}
    y = np.fromiter((index[x] for x in labels), dtype=np.int64, count=len(labels))
    return y, class_names


def canonical_order(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row permutation sorting by class, then by feature 1, feature 2, ... (numeric order).

    The result depends only on the multiset of (x, y) rows, so two sources that
    hold the same rows in different orders (Glass: UCI vs Weka order) give
    identical arrays, and so do their checksums and any statistic summed over rows.
    """
    keys = [X[:, j] for j in range(X.shape[1] - 1, -1, -1)]
    keys.append(y)
    return np.lexsort(keys)


def scale(X: np.ndarray, method: str, *, copy: bool = True) -> np.ndarray:
    """Scale each feature over all rows: 'zscore' to mean 0 and sd 1, 'minmax' to [0, 1], 'none'.

    Constant features become 0 under both scalings (no division by zero). Both maps are
    increasing per feature, so the canonical row order (:func:`canonical_order`) and
    the labels are the same under every scaling: subsample indices carry over.
    Returns a C-contiguous float64 matrix; ``copy=False`` lets it scale ``X`` in place.
    """
    if method not in SCALINGS:
        raise DataError(f"unknown scaling {method!r}; choose one of {', '.join(SCALINGS)}")
    X = np.array(X, dtype=np.float64, order="C") if copy else np.ascontiguousarray(X, np.float64)
    if method == "none" or X.shape[0] == 0:
        return X
    low, high = X.min(axis=0), X.max(axis=0)
    constant = high == low
    if method == "minmax":
        X -= low
        X /= np.where(constant, 1.0, high - low)
    else:
        mean, sd = X.mean(axis=0), X.std(axis=0)
        X -= mean
        X /= np.where(constant | (sd == 0), 1.0, sd)
        X[:, constant] = 0.0
    return X


@dataclass(frozen=True)
class Processed:
    """The arrays of one processed data set (before checksums and provenance are attached)."""

    X: np.ndarray
    y: np.ndarray
    class_names: tuple[str, ...]
    feature_names: tuple[str, ...]


def process_table(spec: DatasetSpec, table: RawTable, scaling: str) -> Processed:
    """The whole preprocessing of ``table``: rules, floats, labels, canonical order, scaling.

    The processed shape is checked against the registry's (where it gives one), so a
    source that serves different rows or columns fails here with both shapes in the
    message.
    """
    if scaling not in SCALINGS:
        raise DataError(f"unknown scaling {scaling!r}; choose one of {', '.join(SCALINGS)}")
    frame, labels = apply_paper_rules(spec, table)
    X = to_float_matrix(frame, table.origin)
    y, class_names = encode_labels(labels)
    order = canonical_order(X, y)  # before a feature rule: a reading keeps its base's rows
    X, y = X[order], y[order]
    feature_names = tuple(str(c) for c in frame.columns)
    if spec.feature_rule is not None:
        X, feature_names = _FEATURE_RULES[spec.feature_rule](X, feature_names, table.origin)
    got = (X.shape[0], len(class_names), X.shape[1])
    want = (spec.n_rows, spec.n_classes, spec.n_features)
    if spec.n_rows is not None and got != want:
        raise DataError(
            f"{spec.name} from {table.origin}: got {got[0]} rows, {got[1]} classes, "
            f"{got[2]} features after preprocessing; expected {want[0]}, {want[1]}, {want[2]}"
        )
    return Processed(
        X=scale(X, scaling, copy=False),
        y=np.ascontiguousarray(y, dtype=np.int64),
        class_names=class_names,
        feature_names=feature_names,
    )
