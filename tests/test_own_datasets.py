"""Data sets defined in a study config (``own_datasets``): files, OpenML ids, their errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isvm.cli import main as cli_main
from isvm.data import DataError, load_configured, load_dataset, load_npz, load_own, save_npz
from isvm.data.own import DefinitionError
from isvm.experiment.table2 import table2_frame
from isvm.study import config_problems


def _wine_frame() -> pd.DataFrame:
    """Wine as a user would export it: unscaled features, a named label column, rows shuffled."""
    wine = load_dataset("wine", "bundled", "none")
    frame = pd.DataFrame(wine.X, columns=wine.feature_names)
    frame.insert(0, "cultivar", [wine.class_names[i] for i in wine.y])
    return frame.sample(frac=1.0, random_state=0).reset_index(drop=True)


@pytest.fixture
def wine_csv(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _wine_frame().to_csv("wine.csv", index=False)
    return tmp_path / "wine.csv"


@pytest.mark.parametrize("scaling", ["zscore", "minmax"])
def test_a_csv_export_of_wine_gives_the_registry_arrays(wine_csv, scaling):
    ours = load_own("my_wine", {"file": "wine.csv", "target": "cultivar"}, scaling)
    ref = load_dataset("wine", "bundled", scaling)
    assert ours.checksums == ref.checksums  # canonical row order, the same scaling
    assert ours.class_names == ref.class_names and ours.source == "file"
    assert ours.provenance.startswith("file wine.csv sha256=")
    assert ours.stream_name == "my_wine"


def test_seed_name_keys_the_streams_and_travels_in_the_npz(wine_csv, tmp_path):
    ours = load_own("my_wine", {"file": "wine.csv", "target": "cultivar", "seed_name": "wine"})
    assert ours.name == "my_wine" and ours.stream_name == "wine"
    back = load_npz(save_npz(ours, tmp_path / "own.npz"))
    assert back.stream_name == "wine" and back.name == "my_wine"
    # the registry's files carry no such field, so they stay byte-identical to before
    registry = save_npz(load_dataset("wine", "bundled"), tmp_path / "wine.npz")
    with np.load(registry) as npz:
        assert "seed_name" not in npz.files


@pytest.mark.parametrize("suffix", [".tsv", ".arff", ".parquet", ".csv.gz", ".txt.csv"])
def test_every_file_format_reads_the_same_table(wine_csv, suffix):
    frame = _wine_frame()
    path = f"wine{suffix}"
    if suffix == ".tsv":
        frame.to_csv(path, sep="\t", index=False)
    elif suffix == ".parquet":
        frame.to_parquet(path)
    elif suffix == ".arff":
        import arff

        attributes = [("cultivar", sorted(set(frame["cultivar"])))]
        attributes += [(c, "REAL") for c in frame.columns[1:]]
        with open(path, "w") as fh:
            arff.dump(
                {"relation": "wine", "attributes": attributes, "data": frame.values.tolist()}, fh
            )
    else:
        frame.to_csv(path, index=False)
    ours = load_own("w", {"file": path, "target": "cultivar"})
    assert ours.checksums == load_own("w", {"file": "wine.csv", "target": "cultivar"}).checksums


def test_sep_reads_another_separator(wine_csv):
    _wine_frame().to_csv("wine_semicolon.csv", sep=";", index=False)
    ours = load_own("w", {"file": "wine_semicolon.csv", "target": "cultivar", "sep": ";"})
    assert ours.n_examples == 178 and ours.n_features == 13


def test_one_hot_drop_columns_and_drop_classes(wine_csv):
    frame = _wine_frame()
    frame["colour"] = np.where(frame.index % 2, "red", "white")
    frame["row_id"] = np.arange(len(frame))
    frame.to_csv("wine2.csv", index=False)
    ours = load_own(
        "w",
        {
            "file": "wine2.csv",
            "target": "cultivar",
            "one_hot": ["colour"],
            "drop_columns": ["row_id"],
            "drop_classes": ["3"],
        },
    )
    assert ours.class_names == ("1", "2")
    assert ours.feature_names[-2:] == ("colour=red", "colour=white")
    assert "row_id" not in ours.feature_names


def test_rename_classes_names_and_merges_labels(wine_csv):
    ours = load_own(
        "w",
        {
            "file": "wine.csv",
            "target": "cultivar",
            "rename_classes": {"1": "a", "2": "b", "3": "b"},
        },
    )
    assert ours.class_names == ("a", "b") and np.bincount(ours.y).tolist() == [59, 119]


def _bad_tables() -> None:
    frame = _wine_frame()
    frame.assign(colour="red").to_csv("colour.csv", index=False)
    nan = frame.copy()
    nan.loc[3, "Ash"] = np.nan
    nan.to_csv("nan.csv", index=False)
    frame.to_csv("wine.tsv", sep="\t", index=False)
    frame.to_csv("wine.xlsx", index=False)


@pytest.mark.parametrize(
    ("definition", "key", "message"),
    [
        ({"file": "none.csv", "target": "c"}, "file", r"no file none.csv \(relative to "),
        ({"file": "wine.csv", "target": "kind"}, "target", r"no column 'kind' in wine.csv"),
        (
            {"file": "wine.csv", "target": "cultivar", "drop_columns": ["id"]},
            "drop_columns",
            r"no column 'id' in wine.csv \(columns: cultivar, Alcohol",
        ),
        ({"file": "colour.csv", "target": "colour"}, "target", r"colour has one class"),
        (
            {"file": "wine.csv", "target": "Proline"},
            "target",
            r"\d+ classes in 178 rows: the target looks continuous",
        ),
        (
            {"file": "colour.csv", "target": "cultivar"},
            "",
            r"column 'colour' is not numeric: list it under one_hot",
        ),
        ({"file": "nan.csv", "target": "cultivar"}, "", r"missing or non-finite .* in Ash"),
        (
            {"file": "wine.tsv", "target": "cultivar", "sep": ","},
            "target",
            r"wine.tsv has one column when split at ','; set `sep`",
        ),
        ({"file": "wine.xlsx", "target": "cultivar"}, "file", r"cannot tell the format"),
        ({"file": "wine.csv"}, "target", r"a local file needs its label column named"),
        ({"file": "wine.csv", "openml_id": 61}, "", r"exactly one of `file`"),
        ({"target": "cultivar"}, "", r"exactly one of `file`"),
    ],
)
def test_each_bad_definition_names_its_key(wine_csv, definition, key, message):
    _bad_tables()
    with pytest.raises(DefinitionError, match=message) as caught:
        load_own("mine", definition)
    assert caught.value.key == "own_datasets.mine" + (f".{key}" if key else "")
    assert "\n" not in str(caught.value)


def test_a_registry_name_cannot_be_redefined(wine_csv):
    with pytest.raises(DefinitionError, match="'wine' is one of the paper's data sets"):
        load_own("wine", {"file": "wine.csv", "target": "cultivar"})


def test_an_openml_id_is_served_from_its_cached_copy(fake_openml, tmp_path):
    fake_openml.add("iris")
    cache = tmp_path / "cache"
    first = load_own("flowers", {"openml_id": 61}, cache_dir=cache)  # OpenML's default target
    assert first.source == "openml" and first.provenance.startswith("OpenML id 61")
    assert first.checksums == load_dataset("iris", "bundled").checksums
    fake_openml.texts.clear()  # offline: the cached copy serves it
    assert load_own("flowers", {"openml_id": 61}, cache_dir=cache).checksums == first.checksums
    with pytest.raises(DefinitionError, match=r"OpenML data set 62 could not be fetched and has"):
        load_own("other", {"openml_id": 62}, cache_dir=cache)


def test_load_configured_reads_either_kind(wine_csv):
    config = {
        "data": {"source": "bundled", "scaling": "minmax"},
        "own_datasets": {"my_wine": {"file": "wine.csv", "target": "cultivar"}},
    }
    own, registry = load_configured("my_wine", config), load_configured("wine", config)
    assert own.checksums == registry.checksums and own.scaling == "minmax"
    with pytest.raises(DataError, match="unknown data set 'nope'"):
        load_configured("nope", config)


def _config(**changes) -> dict:
    config = {
        "datasets": ["iris", "my_wine"],
        "sizes": {"default": [50]},
        "grid": {"gammas": [5], "C": {"start": 0.1, "stop": 1, "step": 0.5}},
        "methods": ["isvm"],
        "percentiles": [10],
        "n_subsamples": 2,
        "own_datasets": {"my_wine": {"file": "wine.csv", "target": "cultivar"}},
    }
    return {**config, **changes}


def test_config_problems_load_each_own_data_set(wine_csv):
    assert config_problems(_config()) == []
    problems = config_problems(_config(sizes={"default": [50], "my_wine": [200]}))
    assert problems == [("sizes.my_wine", "Ns 200 is larger than data set 'my_wine' (178 rows)")]
    problems = config_problems(_config(datasets=["iris", "plants"]))
    assert problems[0][0] == "datasets" and "unknown data set 'plants'" in problems[0][1]
    bad = {"my_wine": {"file": "wine.csv", "target": "kind"}}
    assert config_problems(_config(own_datasets=bad))[0][0] == "own_datasets.my_wine.target"


def test_table2_gives_an_own_data_set_our_numbers_only(wine_csv):
    own = load_own("my_wine", {"file": "wine.csv", "target": "cultivar"})
    table = table2_frame([own, load_dataset("iris", "bundled")]).set_index("dataset")
    assert table.loc["my_wine", "examples"] == 178 and table.loc["my_wine", "classes"] == 3
    assert table.loc["my_wine", "base_flag"] == "no paper row"
    assert pd.isna(table.loc["my_wine", "paper_examples"])
    assert table.loc["iris", "paper_examples"] == 150


def test_fetch_cli_takes_a_definition(wine_csv, tmp_path, capsys):
    definition = json.dumps({"file": "wine.csv", "target": "cultivar"})
    out = tmp_path / "mine.npz"
    code = cli_main(["data", "fetch", "my_wine", "--definition", definition, "--out", str(out)])
    assert code == 0 and load_npz(out).checksums == load_dataset("wine", "bundled").checksums
    bad = json.dumps({"file": "wine.csv", "target": "kind"})
    assert cli_main(["data", "fetch", "my_wine", "--definition", bad, "--out", str(out)]) == 1
    assert "own_datasets.my_wine.target: no column 'kind'" in capsys.readouterr().err
