"""Readings of the 14: DNA's bits read as one ordinal feature per position (issue 61)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isvm.cli import main as cli_main
from isvm.data import DataError, load_dataset
from isvm.data.preprocess import nucleotide_ordinal
from isvm.data.registry import DATASETS, READINGS, get_spec
from isvm.experiment.paper import base_dataset, paper_table
from isvm.experiment.pooling import compare_table3, printed_name
from isvm.experiment.subsample import draw_subsamples
from isvm.experiment.table2 import table2_frame


@pytest.fixture(scope="module")
def dna_pair():
    return (
        load_dataset("dna", source="bundled", scaling="none"),
        load_dataset("dna_ordinal", source="bundled", scaling="none"),
    )


def test_readings_are_registered_apart_from_the_14():
    assert READINGS == ["dna_ordinal", "vowel_all"] and not set(READINGS) & set(DATASETS)
    assert get_spec("dna_ordinal").reading_of == "dna"
    assert base_dataset("dna_ordinal") == "dna" and base_dataset("vowel") == "vowel"
    with pytest.raises(DataError, match="readings: dna_ordinal"):
        get_spec("dna_ordnial")


def test_ordinal_dna_is_the_bits_read_per_position(dna_pair):
    bits, ordinal = dna_pair
    assert ordinal.X.shape == (3186, 60) and ordinal.feature_names[0] == "position1"
    np.testing.assert_array_equal(ordinal.y, bits.y)  # the same rows, in the same order
    assert ordinal.class_names == bits.class_names
    triples = bits.X.reshape(-1, 60, 3)
    # A = 100 -> 0, C = 010 -> 1, G = 001 -> 2, T = 000 -> 3
    expected = np.select(
        [triples[..., 0] == 1, triples[..., 1] == 1, triples[..., 2] == 1], [0, 1, 2], 3
    )
    np.testing.assert_array_equal(ordinal.X, expected)
    assert set(np.unique(ordinal.X)) == {0.0, 1.0, 2.0, 3.0}


def test_a_reading_draws_its_data_sets_subsamples(dna_pair):
    bits, ordinal = dna_pair
    assert ordinal.stream_name == bits.stream_name == "dna"
    for ns in (50, 500):
        a = draw_subsamples(bits.y, ns, 4, seed=2012, dataset=bits.stream_name)
        b = draw_subsamples(ordinal.y, ns, 4, seed=2012, dataset=ordinal.stream_name)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("bits", "message"),
    [
        (np.array([[1.0, 0.0, 0.0, 1.0]]), "not 3 per position"),
        (np.array([[1.0, 1.0, 0.0]]), "none of 100, 010, 001, 000"),
    ],
)
def test_bits_that_code_no_nucleotide_are_refused(bits, message):
    with pytest.raises(DataError, match=message):
        nucleotide_ordinal(bits, tuple("abcd"[: bits.shape[1]]), "test.tsv")


def test_a_reading_is_compared_with_its_data_sets_paper_row():
    paper = paper_table(3)
    dna = paper[paper["dataset"] == "DNA"].reset_index(drop=True)
    ours = dna.assign(dataset="dna_ordinal")
    ours.loc[0, "isvm_10"] += 2.0
    both = pd.concat([ours, dna.assign(dataset="dna")], ignore_index=True)
    comp = compare_table3(both)
    assert set(comp["present"]) == {"both"}
    assert list(dict.fromkeys(comp["dataset"])) == ["DNA", "DNA (ordinal)"]  # reading after
    reading = comp[comp["dataset"] == "DNA (ordinal)"]
    assert len(reading) == len(dna) * 9
    moved = (reading["Ns"] == dna.loc[0, "Ns"]) & (reading["column"] == "isvm_10")
    assert reading.loc[moved, "diff"].tolist() == pytest.approx([2.0])
    assert (reading.loc[~moved, "diff"] == 0).all()
    assert printed_name("dna_ordinal") == "DNA (ordinal)"


def test_a_reading_has_its_data_sets_table2_row(dna_pair):
    rows = table2_frame(list(dna_pair)).set_index("dataset")
    assert rows.loc["dna_ordinal", "paper_name"] == rows.loc["dna", "paper_name"] == "DNA"
    assert rows.loc["dna_ordinal", "base_pct"] == rows.loc["dna", "base_pct"]


def test_data_list_shows_the_readings(capsys):
    assert cli_main(["data", "list"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("dna_ordinal"))
    assert "60" in line.split() and "a reading of dna" in line


def test_all_of_vowel_holds_its_training_rows():
    train = load_dataset("vowel", source="bundled", scaling="none")
    everything = load_dataset("vowel_all", source="bundled", scaling="none")
    assert everything.X.shape == (990, 10) and everything.stream_name == "vowel"
    assert np.bincount(everything.y).tolist() == [90] * 11
    assert everything.class_names == train.class_names
    rows = {(int(c), *x) for x, c in zip(everything.X.tolist(), everything.y, strict=True)}
    assert all((int(c), *x) in rows for x, c in zip(train.X.tolist(), train.y, strict=True))
