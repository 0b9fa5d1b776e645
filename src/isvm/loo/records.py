"""The LOO record schema, in one place, and its reader.

:func:`isvm.loo.loo_grid` returns one row per grid point (:data:`GRID_COLUMNS`);
``isvm loo`` writes one Parquet file per chunk of subsamples with the keys in front
(:data:`RECORD_COLUMNS`); the tables, figures and sensitivity study read them back
with :func:`read_records`. Imports only pandas (no numba), so readers stay light.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pandas as pd


class GridRow(NamedTuple):
    """One grid point's LOO outcome: a row of :func:`isvm.loo.loo_grid`'s frame."""

    gamma: float
    C: float
    loo_accuracy: float
    n_errors: int
    #: points with a nonzero multiplier in the fit on all N points
    n_support: int
    #: epochs of that fit and of every fold
    iterations: int
    #: no fit hit its iteration cap unsettled
    converged: bool
    #: folds whose prediction the certificate did not prove (all of them for refits)
    n_uncertified: int
    #: fits that hit their iteration cap unsettled
    n_capped: int
    seconds: float


#: one row per (gamma, C) of :func:`isvm.loo.loo_grid`
GRID_COLUMNS: tuple[str, ...] = GridRow._fields
#: a record's key: one row per (data set, size, method, subsample, gamma, C)
KEY_COLUMNS: tuple[str, ...] = ("dataset", "Ns", "method", "subsample", "gamma", "C")
#: the columns of a LOO record file, in order
RECORD_COLUMNS: tuple[str, ...] = ("dataset", "scaling", "Ns", "method", "subsample") + GRID_COLUMNS
#: the columns Tables 3-4 may read (never ``seconds``: timing stays out of the accuracies)
ACCURACY_COLUMNS: tuple[str, ...] = KEY_COLUMNS + (
    "loo_accuracy",
    "n_errors",
    "n_support",
    "converged",
    "n_uncertified",
    "n_capped",
)


def read_records(paths: Sequence[str | Path], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Concatenate LOO record files (``columns`` only, if given) in canonical key order.

    The order does not depend on the order of ``paths``. A ValueError for no files.
    """
    if not paths:
        raise ValueError("no LOO record files given")
    cols = None if columns is None else list(columns)
    frames = [pd.read_parquet(p, columns=cols) for p in sorted(map(str, paths))]
    records = pd.concat(frames, ignore_index=True)
    return records.sort_values(list(KEY_COLUMNS), kind="mergesort", ignore_index=True)
