"""Table 2: examples, classes and base performance of our processed data beside the paper's.

Base performance is the share of the most frequent class (the paper: "the
worst possible performance by choosing as the default answer the most probable
class"). Each quantity gets a flag column. The paper prints base performance
with 0-2 decimals and seems to truncate as often as it rounds (Shuttle 78.6%
is printed 78, Vehicle 25.77% is 25.7), so ours *matches* when rounding or
truncating it to the paper's printed precision gives the paper's number; a
difference of at most :data:`NEAR_PP` percentage points is flagged *near*.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from isvm.data.load import Dataset
from isvm.experiment.paper import PAPER_NAMES, base_dataset, paper_table
from isvm.experiment.table_files import write_table

#: Largest difference in base performance, in percentage points, flagged "near" not "DIFFERS".
NEAR_PP = 1.5

#: Table 2 prints some names in full where Table 3 (PAPER_NAMES) abbreviates them.
TABLE2_NAMES: dict[str, str] = {
    **PAPER_NAMES,
    "glass": "Glass Identification",
    "satimage": "Landsat Satellite",
    "segment": "Image Segmentation",
    "vowel": "Vowel Recognition",
    "wine": "Wine recognition",
}

#: Why our numbers differ from the paper's, where they do, by registry name (a reading without
#: an entry uses its data set's; the full story is in docs/data.md).
EXPLANATIONS: dict[str, str] = {
    "abalone": "rule floor(rings/5) gives a 48.4% majority band; the paper's 36% is not "
    "reproduced by any simple banding of rings",
    "glass": "only 6 of the 7 glass types have examples (type 4 has none)",
    "mnist": "majority class '1' is 11.2% of the 60,000 training images; "
    "the paper's 10 looks like 1/L",
    "segment": "the paper's 330 is the per-class count; the data set has 7 x 330 = 2310 rows",
    "vehicle": "the paper's 946 is a typo for 846",
    "vowel_all": "the paper's 528 is the training split (8 speakers); these are all 990 rows "
    "(7 test speakers too), the reading with which Table 3's Vowel cells match the paper",
    "yeast": "the paper's 1462 rows / 30% is not explained by the paper; dropping the 22 "
    "repeated sequence names of the UCI file gives exactly 1462 rows and 30.4%",
}


def _decimals(value: float) -> int:
    """Decimals the paper printed ``value`` with (36 -> 0, 23.8 -> 1, 33.33 -> 2)."""
    for decimals in range(4):
        if math.isclose(round(value, decimals), value, abs_tol=1e-9):
            return decimals
    return 4


def base_flag(ours_pct: float, paper_pct: float) -> str:
    """'match' at the paper's printed precision (rounded or truncated), 'near', or 'DIFFERS'."""
    decimals = _decimals(paper_pct)
    factor = 10.0**decimals
    rounded = round(ours_pct, decimals)
    truncated = math.floor(ours_pct * factor + 1e-9) / factor
    if math.isclose(rounded, paper_pct, abs_tol=1e-9) or math.isclose(
        truncated, paper_pct, abs_tol=1e-9
    ):
        return "match"
    if abs(ours_pct - paper_pct) <= NEAR_PP:
        return "near"
    return "DIFFERS"


def _count_flag(ours: int, paper: int) -> str:
    return "match" if ours == paper else "DIFFERS"


def table2_frame(datasets: Iterable[Dataset]) -> pd.DataFrame:
    """One row per data set: ours, the paper's, a flag per quantity and an explanation."""
    paper = paper_table(2).set_index("dataset")
    rows = []
    for ds in sorted(datasets, key=lambda d: d.name):
        paper_name = TABLE2_NAMES.get(base_dataset(ds.name))  # a reading: its data set's
        if paper_name is None:  # a data set of the config's own_datasets
            rows.append(_own_row(ds))
            continue
        if paper_name not in paper.index:
            raise KeyError(f"no Table 2 row named {paper_name!r} for data set {ds.name!r}")
        ref = paper.loc[paper_name]
        ours_pct = 100.0 * ds.base_performance
        paper_pct = float(ref["base_performance_pct"])
        flags = (
            _count_flag(ds.n_examples, int(ref["n_examples"])),
            _count_flag(ds.n_classes, int(ref["n_classes"])),
            base_flag(ours_pct, paper_pct),
        )
        rows.append(
            {
                **_own_row(ds),
                "paper_name": paper_name,
                "paper_examples": int(ref["n_examples"]),
                "examples_flag": flags[0],
                "paper_classes": int(ref["n_classes"]),
                "classes_flag": flags[1],
                "paper_base_pct": paper_pct,
                "base_diff_pp": ours_pct - paper_pct,
                "base_flag": flags[2],
                "explanation": EXPLANATIONS.get(
                    ds.name, EXPLANATIONS.get(base_dataset(ds.name), "")
                )
                if any(f != "match" for f in flags)
                else "",
            }
        )
    df = pd.DataFrame(rows, columns=list(_own_row(None)))
    for column in ("paper_examples", "paper_classes"):
        if df[column].isna().any():  # counts stay integers beside an own data set's blank
            df[column] = df[column].astype("Int64")
    return df


def _own_row(ds: Dataset | None) -> dict[str, object]:
    """A row with our numbers only: a data set the paper does not have (``None``: the
    columns, in order)."""
    none = "no paper row"
    return {
        "dataset": ds.name if ds else None,
        "paper_name": "",
        "source": ds.source if ds else None,
        "examples": ds.n_examples if ds else None,
        "paper_examples": None,
        "examples_flag": none,
        "classes": ds.n_classes if ds else None,
        "paper_classes": None,
        "classes_flag": none,
        "features": ds.n_features if ds else None,
        "base_pct": 100.0 * ds.base_performance if ds else None,
        "paper_base_pct": None,
        "base_diff_pp": None,
        "base_flag": none,
        "explanation": "not in the paper (own_datasets)",
    }


def summary_counts(df: pd.DataFrame) -> dict[str, int]:
    """How many data sets agree with the paper (classes, base performance), strictly and near."""
    df = df[df["paper_name"] != ""]  # the paper's data sets only
    classes = df["classes_flag"] == "match"
    return {
        "data_sets": len(df),
        "classes_match": int(classes.sum()),
        "base_match": int((df["base_flag"] == "match").sum()),
        "classes_and_base_match": int((classes & (df["base_flag"] == "match")).sum()),
        "classes_and_base_match_or_near": int((classes & (df["base_flag"] != "DIFFERS")).sum()),
        "examples_match": int((df["examples_flag"] == "match").sum()),
    }


def write_table2(
    datasets: Iterable[Dataset], stem: str | Path, settings: Mapping[str, object] | None = None
) -> tuple[Path, Path]:
    """Write Table 2 to ``{stem}.csv`` and ``{stem}.md``; returns both paths.

    ``settings`` (the run's, e.g. the workflow's) are added after the table's own.
    """
    datasets = list(datasets)
    df = table2_frame(datasets)
    counts = summary_counts(df)
    own = {
        "data sets": ", ".join(df["dataset"]),
        "source": ", ".join(sorted({d.source for d in datasets})),
        "scaling": ", ".join(sorted({d.scaling for d in datasets})),
        "base performance": "share of the most frequent class, in %",
        "base_flag": f"match at the paper's printed precision (rounded or truncated); "
        f"near: within {NEAR_PP} pp; else DIFFERS",
    }
    notes = (
        f"Class counts and base performance agree with the paper for "
        f"{counts['classes_and_base_match']} of {counts['data_sets']} data sets at the "
        f"paper's printed precision, and for {counts['classes_and_base_match_or_near']} "
        f"counting base performance within {NEAR_PP} pp as agreement. "
        "Each difference is explained in the last column and in docs/data.md."
    )
    extra = {k: v for k, v in (settings or {}).items() if k not in own}
    return write_table(
        df,
        stem,
        title="Table 2: the data sets, ours beside the paper's",
        settings={**own, **extra},
        notes=notes,
        float_format="%.2f",
    )
