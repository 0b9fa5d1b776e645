"""Table 2 logic on small synthetic data sets: name mapping, flags, the written files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isvm.data import DATASETS, Dataset
from isvm.experiment.paper import paper_table
from isvm.experiment.table2 import TABLE2_NAMES, base_flag, table2_frame, write_table2


def _dataset(name: str, counts: list[int]) -> Dataset:
    y = np.repeat(np.arange(len(counts)), counts).astype(np.int64)
    return Dataset(
        name=name,
        X=np.zeros((len(y), 2)),
        y=y,
        class_names=tuple(str(i) for i in range(len(counts))),
        feature_names=("a", "b"),
        source="bundled",
        scaling="minmax",
        provenance="test",
        checksums={"X": "x", "y": "y"},
    )


def test_every_registry_name_has_a_table2_row():
    names = set(paper_table(2)["dataset"])
    assert {TABLE2_NAMES[name] for name in DATASETS} == names


@pytest.mark.parametrize(
    ("ours", "paper", "flag"),
    [
        (78.60, 78.0, "match"),  # the paper truncates
        (25.77, 25.7, "match"),
        (51.91, 52.0, "match"),  # ... or rounds
        (33.333, 33.33, "match"),
        (11.24, 10.0, "near"),
        (31.20, 30.0, "near"),
        (48.41, 36.0, "DIFFERS"),
    ],
)
def test_base_flag(ours, paper, flag):
    assert base_flag(ours, paper) == flag


def test_frame_flags_and_written_files(tmp_path):
    iris = _dataset("iris", [50, 50, 50])
    glass = _dataset("glass", [70, 76, 17, 13, 9, 29])
    df = table2_frame([iris, glass])
    assert list(df["dataset"]) == ["glass", "iris"]
    glass_row, iris_row = df.iloc[0], df.iloc[1]
    assert iris_row["base_pct"] == pytest.approx(100 / 3) and iris_row["explanation"] == ""
    assert (glass_row["classes"], glass_row["paper_classes"]) == (6, 7)
    assert glass_row["classes_flag"] == "DIFFERS" and "type 4" in glass_row["explanation"]
    csv_path, md_path = write_table2([iris, glass], tmp_path / "t2")
    assert pd.read_csv(csv_path).shape == (2, df.shape[1])
    text = md_path.read_text()
    assert text.startswith("# Table 2") and "| glass" in text
    assert "agree with the paper for 1 of 2 data sets" in text


def test_a_reading_is_compared_with_its_data_sets_row_and_explained_by_its_own_entry():
    # vowel_all: 990 rows against the paper's 528 (its training split), 90 per class
    frame = table2_frame([_dataset("vowel_all", [90] * 11)]).set_index("dataset")
    row = frame.loc["vowel_all"]
    assert row["paper_name"] == "Vowel Recognition"
    assert (row["examples"], row["paper_examples"], row["examples_flag"]) == (990, 528, "DIFFERS")
    assert "training split" in row["explanation"]
