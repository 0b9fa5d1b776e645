"""isvm.study: what the Snakefile asks of a config beyond its schema."""

from __future__ import annotations

import copy

import yaml

from isvm import study
from isvm.study import config_problems, part_cells, run_name, settings

with open("config/paper.yaml") as handle:
    PAPER = yaml.safe_load(handle)
PAPER.setdefault("n_subsamples", 100)


def _with(**changes):
    config = copy.deepcopy(PAPER)
    config.update(changes)
    return config


def test_the_paper_config_has_no_problem_and_its_51_cells():
    assert config_problems(PAPER) == []
    assert len(study.cells(PAPER)) == 51  # the paper's Table 3 rows
    assert study.sizes_of(PAPER, "iris") == [50, 100, 140]
    assert len(study.c_values(PAPER)) == 100


def test_problems_name_their_key():
    sizes = {**PAPER["sizes"], "iris": [50, 200]}
    got = config_problems(_with(sizes=sizes, percentiles=[10, 150]))
    assert [key for key, _ in got] == ["sizes.iris", "percentiles"]
    assert "Ns 200 is larger than data set 'iris' (150 rows)" in got[0][1]
    got = config_problems(_with(sizes={"default": [50], "letter": [50]}, datasets=["iris"]))
    assert got[0][0] == "sizes.letter"


def test_own_methods_and_pairs_are_checked_by_the_code_that_serves_them():
    got = config_problems(
        _with(
            methods=["isvm", "ova", "svc"],
            own_methods={"ova": {"estimator": "sklearn.svm.SVC"}},
            comparisons=[["isvm", "isvm"], ["isvm", "ww"]],
        )
    )
    assert got == [
        ("comparisons", "['isvm', 'ww']: 'ww' is not in methods"),
        ("comparisons", "a Table 4 pair needs two methods; got isvm against itself"),
        ("methods", got[2][1]),
        ("own_methods.ova", "'ova' is a built-in method; name yours apart"),
    ]
    assert got[2][1].startswith("unknown method 'svc': not built in")


def test_part_selects_cells_and_says_when_it_selects_none():
    config = _with(part={"sizes": [500], "datasets": ["letter", "iris"]})
    assert part_cells(config) == [("letter", 500)]  # iris has no Ns 500
    assert config_problems(config) == []
    assert config_problems(_with(part={"sizes": [501]}))[0][0] == "part"
    assert config_problems(_with(part={"datasets": ["foo"]}))[0][0] == "part.datasets"
    assert part_cells(PAPER) == study.cells(PAPER)


def test_settings_and_run_name():
    text = settings(PAPER, ["config/paper.yaml"])
    assert text["config"] == "paper.yaml" and text["n_subsamples"] == 100
    assert text["grid"] == "gamma 5, 10 x C 0.1 to 49.6 step 0.5 (100 values)"
    assert "part" not in str(text) and settings(_with(part={"sizes": [50]}), []) != {}
    assert run_name(PAPER, ["config/paper.yaml"]) == ("paper", None)
    assert run_name(_with(name="mine"), ["x/paper.yaml"]) == ("mine", None)
    assert run_name(PAPER, ["my config.yaml"])[1] is not None
    assert "--gammas 5 10 --C-start 0.1 --C-stop 50" in study.loo_grid_args(PAPER)


def test_outputs_are_one_registry_for_staged_files_and_the_report():
    smoke = yaml.safe_load(open("config/smoke.yaml"))
    staged = study.output_files(smoke, "S")
    assert len(staged) == len(set(staged)) == 45  # 13 tables x 2, 9 figures x 2, a csv
    assert "S/figures/near_best.csv" in staged and "S/tables/table3_rows.md" in staged
    assert "S/tables/sensitivity.csv" in staged  # the smoke config has the key
    assert "S/tables/sensitivity.csv" not in study.output_files(PAPER, "S")
    reported = study.reported(smoke)
    assert reported["tables/table3_rows.csv"][:2] == ("table3_rows", "Tables")
    assert reported["figures/loo_curves_iris.png"][2]["data set"] == "iris"
    assert all(f"S/{path}" in staged for path in reported)
    files = study.loo_files(smoke, "R")
    assert len(files) == 3 * 2 * 3 and files[0] == "R/loo/zscore/iris/Ns30/isvm/0.parquet"
    assert len(study.sensitivity_files(smoke, "R")) == 2 * 3 * 3 * 2  # scalings x methods x cells
