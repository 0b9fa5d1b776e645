"""Seeded subsamples: isvm.experiment.subsample."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from isvm.experiment.subsample import (
    add_arguments,
    draw_subsamples,
    draw_subsamples_info,
    run,
    save_indices,
)

Y = np.repeat(np.arange(3), 50)  # iris-like: 150 rows, 3 classes


def test_shape_dtype_and_rows_are_sets_of_valid_indices():
    idx = draw_subsamples(Y, 40, 7, seed=1, dataset="iris")
    assert idx.shape == (7, 40) and idx.dtype == np.int64
    for row in idx:
        assert np.all(np.diff(row) > 0)  # sorted, no repeats
        assert row.min() >= 0 and row.max() < Y.size
    assert len({tuple(r) for r in idx}) == 7  # rows differ


def test_same_inputs_same_subsamples_and_keys_matter():
    a = draw_subsamples(Y, 30, 5, seed=3, dataset="iris")
    np.testing.assert_array_equal(a, draw_subsamples(Y, 30, 5, seed=3, dataset="iris"))
    assert not np.array_equal(a, draw_subsamples(Y, 30, 5, seed=4, dataset="iris"))
    assert not np.array_equal(a, draw_subsamples(Y, 30, 5, seed=3, dataset="wine"))


def test_more_subsamples_never_change_earlier_rows():
    small = draw_subsamples(Y, 50, 3, seed=2012, dataset="iris")
    large = draw_subsamples(Y, 50, 10, seed=2012, dataset="iris")
    np.testing.assert_array_equal(small, large[:3])


def test_row_stream_is_the_documented_one():
    from isvm.seeding import rng

    idx = draw_subsamples(Y, 20, 3, seed=9, dataset="iris")
    expected = np.sort(rng(9, "subsample", "iris", 20, 2).choice(Y.size, size=20, replace=False))
    np.testing.assert_array_equal(idx[2], expected)


def test_ns_larger_than_data_set_is_a_clear_error():
    with pytest.raises(ValueError, match=r"iris: Ns=500 is larger than the data set \(150 rows\)"):
        draw_subsamples(Y, 500, 2, seed=0, dataset="iris")


@pytest.mark.parametrize(
    ("ns", "n_sub", "match"), [(1, 2, "at least 2"), (10, 0, "n_subsamples must be at least 1")]
)
def test_bad_sizes(ns, n_sub, match):
    with pytest.raises(ValueError, match=match):
        draw_subsamples(Y, ns, n_sub, seed=0, dataset="iris")


def test_single_class_rows_are_redrawn_deterministically_and_logged():
    y = np.zeros(200, dtype=np.int64)
    y[:6] = 1  # 3% of class 1: most draws of 2 rows hold one class
    messages: list[str] = []
    info = draw_subsamples_info(y, 2, 20, seed=5, dataset="toy", log=messages.append)
    assert info.redraws, "expected some rows to need a redraw"
    assert len(messages) == sum(info.redraws.values())
    assert all("toy Ns=2 subsample" in m and "redraw" in m for m in messages)
    for row in info.indices:
        assert np.unique(y[row]).size == 2
    again = draw_subsamples(y, 2, 20, seed=5, dataset="toy")
    np.testing.assert_array_equal(info.indices, again)
    # a row that needed no redraw is its plain stream's draw
    from isvm.seeding import rng

    r = next(r for r in range(20) if r not in info.redraws)
    plain = np.sort(rng(5, "subsample", "toy", 2, r).choice(200, size=2, replace=False))
    np.testing.assert_array_equal(info.indices[r], plain)


def test_a_row_that_stays_single_class_names_data_set_ns_and_row():
    y = np.zeros(1000, dtype=np.int64)
    y[0] = 1
    with pytest.raises(ValueError, match=r"toy Ns=2 subsample 0: all 1 draws hold a single class"):
        draw_subsamples(y, 2, 1, seed=0, dataset="toy", max_redraws=0)


def test_single_class_data_set_is_an_error():
    with pytest.raises(ValueError, match="single class"):
        draw_subsamples(np.zeros(10), 5, 1, seed=0, dataset="toy")


def test_save_indices_is_a_plain_npy(tmp_path):
    idx = draw_subsamples(Y, 10, 2, seed=0, dataset="iris")
    path = save_indices(idx, tmp_path / "sub" / "Ns10.npy")
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), idx)
    assert not list(path.parent.glob("*.tmp"))
    first = path.read_bytes()
    save_indices(idx, path)
    assert path.read_bytes() == first  # byte-identical rewrite


def test_cli_writes_the_subsamples_of_the_data_set(tmp_path, capsys):
    from isvm.data import load_dataset, save_npz

    ds = load_dataset("iris", source="bundled", scaling="minmax")
    npz = tmp_path / "iris.npz"
    save_npz(ds, npz)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = tmp_path / "Ns50.npy"
    args = parser.parse_args(
        ["--data", str(npz), "--ns", "50", "--n-subsamples", "4", "--seed", "7", "--out", str(out)]
    )
    assert run(args) == 0
    np.testing.assert_array_equal(
        np.load(out), draw_subsamples(ds.y, 50, 4, seed=7, dataset="iris")
    )
    bad = parser.parse_args(
        [
            "--data",
            str(npz),
            "--ns",
            "500",
            "--n-subsamples",
            "4",
            "--seed",
            "7",
            "--out",
            str(tmp_path / "bad.npy"),
        ]
    )
    assert run(bad) == 2
    assert "Ns=500 is larger than the data set" in capsys.readouterr().err
