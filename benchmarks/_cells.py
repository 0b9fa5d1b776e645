"""What the cell-driven benchmark scripts share (fold_costs.py, mode_trace.py,
settings_ab.py): a cell ``DATASET:NS:METHOD:GAMMA``, the paper's subsample 0 of it
(seed 2012), and ``LooSettings`` overrides given as JSON. Bad input ends in the
script's own usage error (``parser.error``: exit code 2), before any work."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import NamedTuple

import numpy as np

from isvm.data import load_dataset
from isvm.experiment.subsample import draw_subsamples
from isvm.loo.settings import DEFAULT_SETTINGS, LooSettings


class Cell(NamedTuple):
    name: str
    ns: int
    method: str
    gamma: float


def parse_cell(parser: argparse.ArgumentParser, text: str, example: str) -> Cell:
    """``DATASET:NS:METHOD:GAMMA`` (``example`` shows one in the error)."""
    parts = text.split(":")
    try:
        if len(parts) != 4 or not parts[1].isdigit():
            raise ValueError
        return Cell(parts[0], int(parts[1]), parts[2], float(parts[3]))
    except ValueError:
        parser.error(f"cell {text!r} is not DATASET:NS:METHOD:GAMMA (e.g. {example})")


def paper_subsample(cell: Cell, scaling: str) -> tuple[np.ndarray, np.ndarray]:
    """The cell's data set (bundled, ``scaling``) at the paper's subsample 0 of Ns points."""
    data = load_dataset(cell.name, source="bundled", scaling=scaling)
    idx = draw_subsamples(data.y, cell.ns, 1, seed=2012, dataset=cell.name)[0]
    return data.X[idx], data.y[idx]


def settings_from_json(parser: argparse.ArgumentParser, text: str, what: str) -> LooSettings:
    """The default settings with the overrides of the JSON object ``text``."""
    try:
        return dataclasses.replace(DEFAULT_SETTINGS, **json.loads(text))
    except (json.JSONDecodeError, TypeError) as err:
        fields = ", ".join(f.name for f in dataclasses.fields(DEFAULT_SETTINGS))
        parser.error(f"{what} must be a JSON object of LooSettings fields ({fields}): {err}")
