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
