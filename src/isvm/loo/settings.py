"""The LOO engine's settings and numerical constants: the one place for both.

:class:`LooSettings` holds the budgets a user or a benchmark may change (defaults:
:data:`DEFAULT_SETTINGS`, what the study runs): ``dataclasses.replace(DEFAULT_SETTINGS,
active_max_iter=1)`` and pass it to :func:`isvm.loo.loo_grid`. None of them changes a
prediction: they trade the active-set updates against cd, and every fold is certified
or solved to ``tol`` whichever way it went. Each field's comment gives the measurement
that chose its value (docs/benchmarks.md, "Rules and settings"). The module constants below
are numerical tolerances and fixed rules of the driver's policy
(:mod:`isvm.loo.policy`): named here once, read by the code that applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Integral, Real
from typing import NamedTuple

# --- numerical tolerances -------------------------------------------------------------
#: a bound variable is freed when its gradient points inward by more than this
FREE_THRESHOLD = 1e-9
#: a free variable is moved to a bound when it leaves the box by more than this times C
BOX_SLACK = 1e-10
#: relative ridge on the freed variables of a singular bordered system
RIDGE = 1e-10
#: a free variable's gradient must vanish to this at a reported fold optimum
STATIONARY_TOL = 1e-8
#: relative residual ``|H Hinv v - v| / |v|`` above which an updated inverse is redone
UPDATE_RESIDUAL = 1e-8
#: a full-fit face solved by an updated inverse must leave free gradients below this
#: (relative to its right-hand side), after at most ``REFINE_STEPS`` refinements
SOLVE_RESIDUAL = 1e-12
REFINE_STEPS = 2
#: times a settled but singular face may be reduced by pinning null directions
PIN_ROUNDS = 2

# --- the full fit ---------------------------------------------------------------------
#: with the active-set finish, the full fit's cd only has to find the sets roughly
ROUGH_TOL = 0.1
#: without the finish (cd mode) the full fit is solved to this fraction of tol, so that
#: the folds' cd starts with only local violations ...
CD_FULL_FIT_TOL_FACTOR = 0.01
#: ... or to tol itself where the previous grid point's folds were all certified: they
#: settle from a looser start (vowel Ns 500 ISVM z-score: 2.4x the iterations without)
CD_FULL_FIT_TOL_FACTOR_CERTIFIED = 1.0
#: the finish's steps start from the previous C's sets for at most this many steps
#: before they start afresh from the rough cd solution
FINISH_PREVIOUS_STEPS = 10
#: the finish's steps from a fresh factorisation of the rough start
FINISH_STEPS = 10
#: where the finish's steps do not settle, cd restarts them from solutions at these
#: tolerances (epochs each: at most 1,000, the last one the fit's whole budget);
#: dense kernels need the last (vowel Ns 500 [0, 1] ISVM, gamma 5, C = 5.6)
FINISH_RETRY_TOLS = (1e-5, 1e-7, 1e-9)
FINISH_RETRY_EPOCHS = 1000

# --- the folds ------------------------------------------------------------------------
#: primal-dual steps allowed without fewer infeasible variables before the decremental path
ACTIVE_PATIENCE = 3
#: ... or once they have freed more than this many outside variables (each face solve
#: then costs O(touched^3))
ACTIVE_PD_MAX_TOUCHED = 128
#: a fold's statuses at the previous C may seed its update where C grew by at most this
WARM_RATIO = 1.5
#: ... and where the guess has at most this many changes
WARM_MAX_CHANGES = 128
#: ... and every fold takes it where it won the last comparison and C grew by at most
#: this (the driver samples both sides otherwise)
WARM_SAMPLE_RATIO = 1.1
#: the folds' tries of their solution at C_prev: all of them while a try proves at least
#: this share of those that tried, else a rotating sample
PREV_TRY_MIN_SHARE = 0.1

# --- the mode rules -------------------------------------------------------------------
#: rent or buy: where a point's multipliers are coupled, cd mode's fold epochs above
#: this per fold, summed along the path in variable visits, are weighed against the
#: price of one finish: ``FINISH_VISITS_PER_FREE_CUBED`` x (free variables)^3
CD_RENT_MEAN_EPOCHS = 1.0
FINISH_VISITS_PER_FREE_CUBED = 1e-3
#: in cd mode a grid point whose C exceeds the previous one's by more than this factor
#: samples its folds' cost first
CD_RECHECK_RATIO = 1.5


class _Range(NamedTuple):
    """A scikit-learn-style constraint: a type and a closed or open interval. Not
    scikit-learn's own ``Interval`` (which the estimators use): importing it costs about
    a second, and the LOO engine loads without scikit-learn."""

    kind: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def check(self, name: str, value: object) -> None:
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"LooSettings.{name} must be a bool, got {value!r}")
            return
        number = Integral if self.kind is int else Real
        if isinstance(value, bool) or not isinstance(value, number):
            raise ValueError(f"LooSettings.{name} must be {_kind(self.kind)}, got {value!r}")
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or value <= self.high
        if not (above and below) or (isinstance(value, float) and math.isnan(value)):
            raise ValueError(f"LooSettings.{name} must be {self.text()}, got {value!r}")

    def text(self) -> str:
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        high = "" if self.high is None else f"<= {self.high:g}"
        return f"{_kind(self.kind)} {' and '.join(p for p in (low, high) if p)}".strip()


def _kind(kind: type) -> str:
    return {int: "an int", float: "a number", bool: "a bool"}[kind]


@dataclass(frozen=True)
class LooSettings:
    """Budgets of the exact LOO engine (defaults: the study's); validated on creation."""

    #: a fold's active-set update: at most this many set updates ...
    active_max_iter: int = 300
    #: ... and this many freed outside variables, then cd
    active_max_changed: int = 1024
    #: the full fit's finish gives up above this many free variables (its factorisation
    #: grows as their cube; the folds then run cd) ...
    finish_max_free: int = 3000
    #: ... or above this many where the classes are coupled and cd folds proved dear on
    #: the path (a hand-back): yeast Ns 500 ISVM (about 3,400 free) 1-2 s a grid point
    #: against cd folds of 6-7 s
    finish_max_free_dear: int = 4500
    #: the exact full fit keeps ``Q[v, F]`` and ``Q[v, F] Hinv`` for every outside
    #: variable v when they fit in this many entries (8 bytes each, two arrays: 512 MB);
    #: above it each fold computes its rows through ``Hinv``, 8x slower on satimage
    #: N = 1,000 ISVM at a quarter of this budget
    outside_max_entries: int = 32_000_000
    #: where the dual is L separate problems (1-vs-all), the finish factorises each
    #: class's face on its own (False: one dense block, for checks) ...
    separable_finish: bool = True
    #: ... once the rough start has this many free variables: below it L small fits cost
    #: more in overhead (vowel Ns 200 [0, 1]: 3.8-4.4 s against 3.3 s of full fits)
    separable_min_free: int = 1000
    #: where the dual is L separate problems, each class's score is bounded by its own
    #: column's suboptimality (letter Ns 500 1-vs-all 0.83x; False: one bound, for checks)
    certify_by_column: bool = True
    #: folds probed with cd alone to choose a path's mode ...
    probe_folds: int = 8
    #: ... cd mode where each is certified within this many epochs (at a path's start:
    #: within twice this, and this on average; 0: never cd mode); z-scored kernels pass
    probe_epochs: int = 3
    #: in cd mode, a grid point whose folds took more epochs than this per fold hands
    #: the next one back to the active set
    cd_max_mean_epochs: float = 4.0
    #: the rotating samples of the folds' tries (previous-C try, shifted start, warm
    #: guess): every this-many-th fold, turning with the grid point
    sample_every: int = 8

    def __post_init__(self) -> None:
        for field in fields(self):
            _CONSTRAINTS[field.name].check(field.name, getattr(self, field.name))


_CONSTRAINTS = {
    "active_max_iter": _Range(int, 0),
    "active_max_changed": _Range(int, 0),
    "finish_max_free": _Range(int, 0),
    "finish_max_free_dear": _Range(int, 0),
    "outside_max_entries": _Range(int, 0),
    "separable_finish": _Range(bool),
    "separable_min_free": _Range(int, 0),
    "certify_by_column": _Range(bool),
    "probe_folds": _Range(int, 0),
    "probe_epochs": _Range(int, 0),
    "cd_max_mean_epochs": _Range(float, 0.0, low_open=True),
    "sample_every": _Range(int, 1),
}

#: the settings the study runs
DEFAULT_SETTINGS = LooSettings()
