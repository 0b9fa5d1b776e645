"""The data layer: bundled snapshot, OpenML path (network replaced by bundled bytes), npz, CLI.

Every data set is parsed from the bundled snapshot at most once per test
session (the ``bundled`` fixture caches them); MNIST is the expensive one.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isvm.cli import main as cli_main
from isvm.data import DATASETS, DataError, Dataset, load_dataset, load_npz, save_npz
from isvm.data.bundled import BUNDLED_DIR, read_bundled, sha256_file
from isvm.data.load import array_checksum
from isvm.data.preprocess import (
    RawTable,
    abalone_age_band,
    encode_labels,
    natural_key,
    process_table,
    scale,
)
from isvm.data.registry import REGISTRY, BundledFile, get_spec
from isvm.experiment.table2 import summary_counts, table2_frame, write_table2

EXPECTED = {  # name: (rows, classes, features) after the paper's preprocessing
    "abalone": (4177, 6, 10),
    "dna": (3186, 3, 180),
    "ecoli": (332, 6, 7),
    "glass": (214, 6, 9),
    "iris": (150, 3, 4),
    "letter": (20000, 26, 16),
    "mnist": (60000, 10, 784),
    "satimage": (6435, 6, 36),
    "segment": (2310, 7, 19),
    "shuttle": (58000, 7, 9),
    "vehicle": (846, 4, 18),
    "vowel": (528, 11, 10),
    "wine": (178, 3, 13),
    "yeast": (1484, 10, 8),
}

#: First 16 hex digits of sha256(X) and sha256(y) with minmax scaling: a change here means the
#: processed data changed, and every downstream result with it (update docs/data.md too).
PINNED = {
    "abalone": ("cc52ac3139b8284f", "032ff5b0f58be877"),
    "dna": ("916e60d3cd245f87", "be149057392f1d96"),
    "ecoli": ("2b09062ab70904e9", "56ed21f4aabe10af"),
    "glass": ("70acbc6a1fdfe64f", "6bcfea2c4f6eca88"),
    "iris": ("5e6aa5fd77f9623f", "734737f111629912"),
    "letter": ("e96b962cdcbefee2", "072c31f93c0d6162"),
    "mnist": ("194e104548578793", "1db339601670c601"),
    "satimage": ("b7a39f61f18be700", "c3ae640af3015845"),
    "segment": ("8bb2ffc641771938", "27f70f7abe13a46f"),
    "shuttle": ("5ed7d3a30b81f77f", "c87b366f0d326ea3"),
    "vehicle": ("986b2dc098c94eb2", "45ac50e022d83e03"),
    "vowel": ("a9908d23707e0423", "812e8888cbed3a6e"),
    "wine": ("0e3f24537db69fb8", "b6514e07a6d27854"),
    "yeast": ("bf6809b81c1790ca", "4543998f1bad3dca"),
}


class _Bundled(dict):
    """Data sets loaded from the bundled snapshot on first use, then kept for the session."""

    def __missing__(self, name: str) -> Dataset:
        self[name] = load_dataset(name, source="bundled", scaling="minmax")
        return self[name]


@pytest.fixture(scope="session")
def bundled() -> _Bundled:
    return _Bundled()


# --------------------------------------------------------------------------- bundled snapshot


def test_registry_lists_the_14_data_sets():
    assert DATASETS == sorted(EXPECTED)
    for name in DATASETS:
        spec = get_spec(name)
        assert (spec.n_rows, spec.n_classes, spec.n_features) == EXPECTED[name]


def test_registry_checksums_agree_with_the_manifest():
    import json

    manifest = json.loads((BUNDLED_DIR / "MANIFEST.json").read_text(encoding="utf-8"))
    from_manifest = {
        d["name"]: [(f["file"], f["sha256"]) for f in d["files"]] for d in manifest["datasets"]
    }
    for name, spec in REGISTRY.items():  # a reading reads its data set's files
        files = from_manifest[spec.reading_of or name]
        assert [(f.path, f.sha256) for f in spec.bundled_files] == files


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_data_set_loads_from_the_bundled_snapshot(bundled, name):
    ds = bundled[name]
    rows, classes, features = EXPECTED[name]
    assert ds.X.shape == (rows, features)
    assert ds.n_classes == classes and len(ds.feature_names) == features
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous
    assert ds.y.dtype == np.int64 and ds.y.flags.c_contiguous
    assert np.array_equal(np.unique(ds.y), np.arange(classes))  # every class has examples
    assert ds.X.min() >= 0.0 and ds.X.max() <= 1.0  # minmax scaling
    assert ds.source == "bundled" and ds.scaling == "minmax"
    assert ds.checksums == {"X": array_checksum(ds.X), "y": array_checksum(ds.y)}
    assert ds.checksums["X"] == hashlib.sha256(ds.X.tobytes()).hexdigest()
    assert (ds.checksums["X"][:16], ds.checksums["y"][:16]) == PINNED[name]


def test_paper_rules(bundled):
    assert bundled["ecoli"].class_names == ("cp", "im", "imU", "om", "omL", "pp")
    assert bundled["glass"].class_names == ("1", "2", "3", "5", "6", "7")
    assert bundled["dna"].class_names == ("EI", "IE", "N")
    vowel = bundled["vowel"]
    assert vowel.feature_names == tuple(f"Feature {i}" for i in range(10))
    assert np.array_equal(np.bincount(vowel.y), np.full(11, 48))
    abalone = bundled["abalone"]
    assert abalone.class_names == ("0-4", "5-9", "10-14", "15-19", "20-24", "25-29")
    assert np.array_equal(np.bincount(abalone.y), [74, 2022, 1717, 302, 57, 5])
    assert abalone.feature_names[:4] == ("Sex=F", "Sex=I", "Sex=M", "Length")
    onehot = abalone.X[:, :3]
    assert set(np.unique(onehot)) == {0.0, 1.0} and np.all(onehot.sum(axis=1) == 1)
    assert np.array_equal(np.bincount(bundled["segment"].y), np.full(7, 330))
    assert np.all(bundled["segment"].X[:, 2] == 0.0)  # constant region-pixel-count -> 0


def test_mnist_is_the_training_set(bundled):
    with gzip.open(BUNDLED_DIR / "mnist/train-labels-idx1-ubyte.gz") as fh:
        train_labels = np.frombuffer(fh.read(), dtype=np.uint8, offset=8)
    assert np.array_equal(np.bincount(bundled["mnist"].y), np.bincount(train_labels))
    assert bundled["mnist"].class_names == tuple(str(d) for d in range(10))


def test_processed_arrays_do_not_depend_on_row_order():
    spec = get_spec("glass")
    table = read_bundled(spec)
    perm = np.random.default_rng(0).permutation(len(table.labels))
    shuffled = RawTable(
        table.features.iloc[perm].reset_index(drop=True),
        table.labels.iloc[perm].reset_index(drop=True),
        "shuffled",
    )
    for scaling in ("zscore", "minmax", "none"):
        a, b = process_table(spec, table, scaling), process_table(spec, shuffled, scaling)
        assert a.X.tobytes() == b.X.tobytes() and a.y.tobytes() == b.y.tobytes()


def test_scalings():
    X = np.array([[1.0, 5.0, -2.0], [3.0, 5.0, 0.0], [2.0, 5.0, 4.0]])
    mm = scale(X, "minmax")
    assert np.allclose(mm, [[0, 0, 0], [1, 0, 1 / 3], [0.5, 0, 1]])
    st = scale(X, "zscore")
    assert np.allclose(st.mean(axis=0), 0) and np.allclose(st[:, [0, 2]].std(axis=0), 1)
    assert np.all(st[:, 1] == 0.0)  # constant column, no division by zero
    assert np.array_equal(scale(X, "none"), X)
    # A constant column whose mean is not exact in floating point still maps to 0.
    assert np.all(scale(np.full((3, 1), 0.1), "zscore") == 0.0)
    with pytest.raises(DataError, match="unknown scaling"):
        scale(X, "robust")


def test_scaling_option_of_load_dataset():
    raw = load_dataset("iris", source="bundled", scaling="none")
    assert raw.X.min() == pytest.approx(0.1) and raw.X.max() == pytest.approx(7.9)
    std = load_dataset("iris", source="bundled")  # zscore, the default
    assert std.scaling == "zscore"
    assert np.allclose(std.X.mean(axis=0), 0) and np.allclose(std.X.std(axis=0), 1)
    assert std.checksums["y"] == raw.checksums["y"]


@pytest.mark.parametrize("name", ["vehicle", "glass", "dna"])
def test_scalings_keep_rows_and_labels(name):
    """Subsample indices are drawn once and used under every scaling: the canonical row
    order and the labels must not depend on it (both scalings are increasing maps)."""
    raw = load_dataset(name, source="bundled", scaling="none")
    for scaling in ("zscore", "minmax"):
        ds = load_dataset(name, source="bundled", scaling=scaling)
        assert ds.checksums["y"] == raw.checksums["y"]
        varying = raw.X.std(axis=0) > 0
        order = np.lexsort(raw.X[:, varying].T[::-1])
        assert np.array_equal(np.lexsort(ds.X[:, varying].T[::-1]), order)


def test_class_order_rule():
    assert sorted(["10", "2", "1"], key=natural_key) == ["1", "2", "10"]
    assert sorted(["10-14", "5-9", "0-4"], key=natural_key) == ["0-4", "5-9", "10-14"]
    y, names = encode_labels(np.array(["b", "a", "B", "a"], dtype=object))
    assert names == ("B", "a", "b") and y.tolist() == [2, 1, 0, 1]
    assert [abalone_age_band(r) for r in ("1", "4", "5", "29")] == ["0-4", "0-4", "5-9", "25-29"]


# --------------------------------------------------------------------------- clear errors


def _copy_snapshot(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "bundled"
    for f in get_spec(name).bundled_files:
        (root / f.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BUNDLED_DIR / f.path, root / f.path)
    return root


def test_unknown_name_lists_the_valid_names():
    with pytest.raises(DataError, match="unknown data set 'irs'.*abalone.*yeast"):
        load_dataset("irs", source="bundled")


def test_unknown_source():
    with pytest.raises(DataError, match="unknown source"):
        load_dataset("iris", source="kaggle")


def test_missing_file_is_named(tmp_path):
    root = _copy_snapshot(tmp_path, "iris")
    (root / "iris.arff").unlink()
    with pytest.raises(DataError, match=r"iris\.arff is missing"):
        load_dataset("iris", source="bundled", bundled_dir=root)


@pytest.mark.parametrize("damage", ["truncate", "corrupt"])
def test_truncated_or_corrupt_file_is_named_with_both_checksums(tmp_path, damage):
    root = _copy_snapshot(tmp_path, "wine")
    path = root / "wine.arff"
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[5000] ^= 0x01
    path.write_bytes(bytes(data))
    expected = get_spec("wine").bundled_files[0].sha256
    with pytest.raises(DataError) as info:
        load_dataset("wine", source="bundled", bundled_dir=root)
    message = str(info.value)
    assert str(path) in message and expected in message and sha256_file(path) in message


def test_wrong_registered_checksum_is_named():
    spec = get_spec("iris")
    bad = dataclasses.replace(spec, bundled_files=(BundledFile("iris.arff", "0" * 64),))
    with pytest.raises(DataError, match=r"iris\.arff failed its checksum: expected sha256 0{64}"):
        read_bundled(bad)


def _spec_for(tmp_path: Path, name: str, content: bytes, fmt: str, base: str = "iris"):
    path = tmp_path / name
    path.write_bytes(content)
    spec = dataclasses.replace(
        get_spec(base),
        bundled_format=fmt,
        bundled_files=(BundledFile(name, hashlib.sha256(content).hexdigest()),),
    )
    return spec, path


def test_unparseable_file_with_a_valid_checksum_is_named(tmp_path):
    whole = (BUNDLED_DIR / "dna.tsv.gz").read_bytes()
    spec, path = _spec_for(tmp_path, "dna.tsv.gz", whole[: len(whole) // 3], "pmlb_tsv", "dna")
    with pytest.raises(DataError, match=rf"could not read bundled file {path}"):
        read_bundled(spec, tmp_path)


def test_truncated_idx_is_named(tmp_path):
    with gzip.open(BUNDLED_DIR / "mnist/t10k-labels-idx1-ubyte.gz") as fh:
        raw = fh.read()
    spec = get_spec("mnist")
    files = []
    for f in spec.bundled_files:
        data = (BUNDLED_DIR / f.path).read_bytes()
        if f.path.endswith("t10k-labels-idx1-ubyte.gz"):
            data = gzip.compress(raw[:-10], mtime=0)
        (tmp_path / f.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f.path).write_bytes(data)
        files.append(BundledFile(f.path, hashlib.sha256(data).hexdigest()))
    spec = dataclasses.replace(spec, bundled_files=tuple(files))
    with pytest.raises(DataError, match=r"t10k-labels-idx1-ubyte\.gz holds 9990 data bytes"):
        read_bundled(spec, tmp_path)


def test_missing_feature_values_are_refused(tmp_path):
    text = (BUNDLED_DIR / "iris.arff").read_text(encoding="utf-8")
    text = text.replace("5.1,3.5,1.4,0.2,Iris-setosa", "5.1,?,1.4,0.2,Iris-setosa", 1)
    spec, _ = _spec_for(tmp_path, "iris.arff", text.encode(), "arff")
    with pytest.raises(DataError, match="missing or non-finite feature values in sepalwidth"):
        process_table(spec, read_bundled(spec, tmp_path), "minmax")


def test_infinite_feature_values_are_refused():
    spec = get_spec("iris")
    table = read_bundled(spec)
    features = table.features.copy()
    features.iloc[3, 0] = np.inf
    with pytest.raises(DataError, match="non-finite feature values in sepallength"):
        process_table(spec, RawTable(features, table.labels, "test"), "minmax")


def test_wrong_shape_is_refused():
    spec = get_spec("iris")
    table = read_bundled(spec)
    short = RawTable(table.features.iloc[1:], table.labels.iloc[1:], "short iris")
    with pytest.raises(DataError, match="got 149 rows, 3 classes, 4 features.*expected 150"):
        process_table(spec, short, "minmax")


# --------------------------------------------------------------------------- npz output


def test_npz_is_deterministic_and_round_trips(tmp_path, bundled):
    ds = bundled["vowel"]
    a, b = save_npz(ds, tmp_path / "a.npz"), save_npz(ds, tmp_path / "b.npz")
    assert a.read_bytes() == b.read_bytes()
    again = load_dataset("vowel", source="bundled", scaling="minmax")
    assert save_npz(again, tmp_path / "c.npz").read_bytes() == a.read_bytes()
    back = load_npz(a)
    assert np.array_equal(back.X, ds.X) and np.array_equal(back.y, ds.y)
    assert back.class_names == ds.class_names and back.feature_names == ds.feature_names
    assert (back.name, back.source, back.scaling) == ("vowel", "bundled", "minmax")
    assert back.checksums == ds.checksums and "vowel.arff sha256=" in back.provenance
    with np.load(a, allow_pickle=False) as npz:  # plain numpy can read it
        assert npz["X"].shape == (528, 10) and str(npz["source"]) == "bundled"


def test_edited_npz_fails_with_the_file_named(tmp_path, bundled):
    path = save_npz(bundled["iris"], tmp_path / "iris.npz")
    data = bytearray(path.read_bytes())
    data[data.index(b"X.npy") + 200] ^= 0xFF  # inside the X array's bytes
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=rf"cannot read data set file {path}: Bad CRC-32"):
        load_npz(path)


def test_npz_with_a_wrong_recorded_checksum_is_refused(tmp_path, bundled):
    ds = bundled["iris"]
    wrong = dataclasses.replace(ds, checksums={"X": "0" * 64, "y": ds.checksums["y"]})
    path = save_npz(wrong, tmp_path / "iris.npz")
    with pytest.raises(DataError, match=rf"{path}: X has sha256 {ds.checksums['X']}"):
        load_npz(path)


# --------------------------------------------------------------------------- OpenML path
#
# The `fake_openml` fixture (tests/conftest.py) serves OpenML's responses from the
# bundled snapshot; the real openml package runs end to end.


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_openml_path_gives_the_same_arrays_as_the_bundled_one(fake_openml, tmp_path, bundled, name):
    fake_openml.add(name)
    ds = load_dataset(name, source="openml", scaling="minmax", cache_dir=tmp_path / "cache")
    ref = bundled[name]
    assert ds.source == "openml" and f"OpenML id {get_spec(name).openml_id}" in ds.provenance
    assert ds.class_names == ref.class_names
    assert ds.checksums == ref.checksums  # hence identical X and y
    assert ds.X.shape == ref.X.shape and np.array_equal(ds.y, ref.y)
    served = "arff" if get_spec(name).bundled_format == "arff" else "parquet"
    assert ds.provenance.endswith(f"file={served}")
    assert any(url.endswith(f"/data/{get_spec(name).openml_id}") for url in fake_openml.requests)


def test_openml_cache_is_used_offline(fake_openml, tmp_path):
    fake_openml.add("iris")
    cache = tmp_path / "cache"
    first = load_dataset("iris", source="openml", cache_dir=cache)
    assert (cache / "org" / "openml" / "www" / "datasets" / "61" / "description.xml").is_file()
    fake_openml.texts.clear()  # the server is gone
    second = load_dataset("iris", source="openml", cache_dir=cache)
    assert second.checksums == first.checksums
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back while OpenML works
        assert load_dataset("iris", source="auto", cache_dir=cache).source == "openml"


def test_openml_network_failure_is_a_clear_error_and_auto_falls_back(
    tmp_path, monkeypatch, bundled
):
    openml = pytest.importorskip("openml", reason="the openml package is not installed")
    import requests

    def refuse(session, url, **kwargs):
        raise requests.exceptions.ConnectionError(f"no route to {url}")

    monkeypatch.setattr(requests.Session, "get", refuse)
    monkeypatch.setattr(openml.config, "connection_n_retries", 1)
    with pytest.raises(DataError, match=r"'wine' \(OpenML id 187\).*ConnectionError"):
        load_dataset("wine", source="openml", cache_dir=tmp_path)
    with pytest.warns(UserWarning, match="OpenML failed for wine.*ConnectionError.*bundled"):
        ds = load_dataset("wine", source="auto", scaling="minmax", cache_dir=tmp_path)
    assert ds.source == "bundled" and ds.checksums == bundled["wine"].checksums


def test_openml_server_error_is_a_clear_error(fake_openml, tmp_path):
    with pytest.raises(DataError, match=r"'iris' \(OpenML id 61\).*Unknown dataset"):
        load_dataset("iris", source="openml", cache_dir=tmp_path)


def test_openml_serving_other_rows_is_refused_and_auto_falls_back(fake_openml, tmp_path):
    fake_openml.add("satimage", drop_rows=5)  # e.g. an OpenML copy with 6430 rows
    with pytest.raises(DataError, match="got 6430 rows.*expected 6435"):
        load_dataset("satimage", source="openml", cache_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load_dataset("satimage", source="auto", scaling="minmax", cache_dir=tmp_path)
    assert ds.source == "bundled" and ds.n_examples == 6435
    assert any("6430 rows" in str(w.message) for w in caught)


# --------------------------------------------------------------------------- CLI and Table 2


def test_cli_list(capsys):
    assert cli_main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in DATASETS)


def test_cli_fetch_and_table2(tmp_path, capsys):
    out = tmp_path / "iris.npz"
    args = ["data", "fetch", "iris", "--source", "bundled", "--scaling", "none", "--out", str(out)]
    assert cli_main(args) == 0
    ds = load_npz(out)
    assert ds.scaling == "none" and ds.X.max() == pytest.approx(7.9)
    tables = tmp_path / "tables"
    assert cli_main(["tables", "--datasets", str(out), "--out-dir", str(tables)]) == 0
    table = pd.read_csv(tables / "table2.csv")
    assert table.loc[0, "dataset"] == "iris" and table.loc[0, "base_flag"] == "match"
    capsys.readouterr()


def test_cli_fetch_reports_data_errors(tmp_path, capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise DataError("could not get data set 'iris' (OpenML id 61) from OpenML: offline")

    monkeypatch.setattr("isvm.data.commands.load_dataset", fail)
    assert cli_main(["data", "fetch", "iris", "--out", str(tmp_path / "x.npz")]) == 1
    assert "offline" in capsys.readouterr().err


def test_table2_from_all_14_bundled_data_sets(bundled, tmp_path):
    datasets = [bundled[name] for name in DATASETS]
    df = table2_frame(datasets)
    flags = df.set_index("dataset")
    assert (flags["classes_flag"] != "match").sum() == 1 and flags.loc["glass", "classes"] == 6
    assert set(flags.index[flags["base_flag"] == "DIFFERS"]) == {"abalone"}
    assert set(flags.index[flags["base_flag"] == "near"]) == {"mnist", "yeast"}
    assert set(flags.index[flags["examples_flag"] != "match"]) == {"segment", "vehicle", "yeast"}
    counts = summary_counts(df)
    assert counts["classes_and_base_match"] == 10
    assert counts["classes_and_base_match_or_near"] == 12
    assert all(flags.loc[n, "explanation"] for n in ("abalone", "glass", "mnist", "yeast"))
    csv_path, md_path = write_table2(datasets, tmp_path / "table2")
    assert csv_path.read_text().count("\n") == 15
    assert "12 counting base performance within 1.5 pp" in md_path.read_text()


def test_cli_fetch_defaults_follow_the_workflow(tmp_path, monkeypatch):
    """Offline by default, written where the workflow keeps it (one folder per scaling)."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(["data", "fetch", "iris"]) == 0
    ds = load_npz(tmp_path / "resources" / "datasets" / "zscore" / "iris.npz")
    assert (ds.source, ds.scaling) == ("bundled", "zscore")


def test_cli_help_states_defaults(capsys):
    with pytest.raises(SystemExit):
        cli_main(["loo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(the paper: 5 10)" in text and "(default: 0.001)" in text
    assert "--data DATA data set .npz (isvm data fetch) --" in text  # required: no default
