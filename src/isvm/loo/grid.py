"""The (gamma, C) grid: the one definition of the C values, shared by the engine and the workflow.

Imports only NumPy, so the Snakefile can read it without loading the engine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def c_grid(start: float, stop: float, step: float) -> NDArray[np.float64]:
    """The C values ``start, start + step, ...`` up to ``stop`` (exclusive), rounded to 1e-9.

    The paper's grid, ``c_grid(0.1, 50, 0.5)``, is 0.1, 0.6, ..., 49.6 (100 values).
    """
    if not (start > 0 and step > 0 and stop > start):
        raise ValueError(f"need 0 < start < stop and step > 0; got {start}, {stop}, {step}")
    count = int(np.floor((stop - start) / step - 1e-9)) + 1
    return np.round(start + step * np.arange(count), 9)


def check_grid(gammas: Sequence[float], Cs: Sequence[float]) -> tuple[list[float], list[float]]:
    """(gammas as given, Cs ascending) as floats; a ValueError for an empty or invalid grid."""
    gammas = [float(g) for g in gammas]
    Cs = sorted(float(C) for C in Cs)
    if not gammas or not Cs:
        raise ValueError("the grid needs at least one gamma and one C")
    if min(gammas) <= 0 or Cs[0] <= 0:
        raise ValueError(f"gamma and C must be > 0; got gammas={gammas}, Cs={Cs}")
    if len(set(Cs)) != len(Cs) or len(set(gammas)) != len(gammas):
        raise ValueError("the grid has repeated gamma or C values")
    return gammas, Cs
