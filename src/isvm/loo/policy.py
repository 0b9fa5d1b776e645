"""The LOO driver's choices along one gamma's C path, in one object (:class:`PathPolicy`).

The engine is exact whatever these choices are; they only decide how the work is
done. At each grid point the path is in one of two modes:

- **active-set mode**: the full fit is polished to its exact optimum (a rough cd
  solve, then the finish's factorisation) and every fold is an active-set update of
  that inverse;
- **cd mode**: no finish; the full fit is solved tightly by cd and each fold by
  certified cd from it. It wins where a held-out point disturbs only its kernel
  neighbours (z-scored features: a nearly diagonal kernel).

The rules (docs/benchmarks.md, "Rules and settings", has the ablation behind each):

1. *probe*: at the path's first C a few folds are solved by cd alone; the path starts
   in cd mode where they are all certified within twice ``probe_epochs`` epochs, and
   that on average. Along the path in active-set mode the probe runs again (each
   certified within ``probe_epochs``), 2, 4, 8, ... grid points after each failed
   probe or hand-back;
2. *hand-back*: a cd-mode grid point whose folds (and full fit) took more than
   ``cd_max_mean_epochs`` per fold, or, for coupled formulations, whose excess epochs
   summed along the path outgrow the price of one finish (rent or buy), hands the
   next one back to the active set, whose finish may then take larger free sets
   (``finish_max_free_dear``); a probe that reverses a hand-back doubles the evidence
   the next one needs, so a path cannot flap between the modes;
3. *recheck*: in cd mode, a grid point whose C jumped by more than
   ``CD_RECHECK_RATIO`` samples its folds first;
4. *loose full fit*: in cd mode, after a grid point that certified every fold, the
   full fit stops at tol instead of tol / 100;
5. *fold tries*: each fold's cheap starts (its solution at C_prev, the shifted start,
   its statuses at C_prev as the update's warm guess) are tried by every fold while
   they pay, and by a rotating sample (every ``sample_every``-th fold) otherwise.

Counts, not timings, decide, so a run is reproducible to the iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from isvm.loo.settings import (
    CD_FULL_FIT_TOL_FACTOR,
    CD_FULL_FIT_TOL_FACTOR_CERTIFIED,
    CD_RECHECK_RATIO,
    CD_RENT_MEAN_EPOCHS,
    FINISH_VISITS_PER_FREE_CUBED,
    PREV_TRY_MIN_SHARE,
    ROUGH_TOL,
    WARM_SAMPLE_RATIO,
    LooSettings,
)


class Probe(Protocol):
    """What the policy asks about a grid point's folds (:class:`FoldProbe`)."""

    def cheap(self, start: bool = False) -> bool: ...

    def still_cheap(self) -> bool: ...


#: ``run(points, budget, pooled) -> (certified, epochs)``: cd on the folds of ``points``
#: from the full solution without the point (:func:`isvm.loo.folds.probe_folds`)
ProbeRun = Callable[[NDArray[np.int64], int, bool], tuple[NDArray[np.bool_], NDArray[np.int64]]]


class FoldProbe:
    """What a grid point's folds cost by cd alone: ``probe_folds`` evenly spaced folds,
    each solved by cd from the full solution without its point (``run``)."""

    def __init__(self, run: ProbeRun, n: int, settings: LooSettings) -> None:
        count = min(n, settings.probe_folds)
        self.points = np.unique(np.linspace(0, n - 1, count).round().astype(np.int64))
        self.run, self.settings = run, settings

    @property
    def _off(self) -> bool:
        return self.points.shape[0] == 0 or self.settings.probe_epochs <= 0

    def cheap(self, start: bool = False) -> bool:
        """Each probe fold certified within ``probe_epochs`` epochs; at a path's start
        (where a wrong verdict holds longest) within twice that, and that on average."""
        if self._off:
            return False
        k = self.settings.probe_epochs
        if not start:
            return bool(self.run(self.points, k, False)[0].all())
        certified, epochs = self.run(self.points, max(1, 2 * k), False)
        return bool(certified.all()) and bool(epochs.mean() <= k)

    def still_cheap(self) -> bool:
        """The sample's epochs within ``cd_max_mean_epochs`` per fold, on one budget
        the sample shares (so that one slow fold counts in full)."""
        if self._off:
            return False
        most = int(self.settings.cd_max_mean_epochs * self.points.shape[0])
        return bool(self.run(self.points, most + 1, True)[1].sum() <= most)


class FoldPlan(NamedTuple):
    """Which folds try each cheap start: (N,) bool masks."""

    try_prev: NDArray[np.bool_]  # their own solution at C_prev
    try_shift: NDArray[np.bool_]  # the shifted start, before the active-set update
    use_warm: NDArray[np.bool_]  # their statuses at C_prev as the update's guess


@dataclass
class PathPolicy:
    """One gamma's mode and fold-try decisions along its C path (see the module).

    ``n`` folds, ``n_var`` dual variables; ``coupled``: a point's multipliers are
    coupled (ISVM, WW), which the rent rule and the larger finish apply to;
    ``active_set``: the finish may be used at all (``loo_grid(active_set=...)``).
    """

    settings: LooSettings
    n: int
    n_var: int
    coupled: bool
    active_set: bool = True
    t: int = -1  # the grid point's index along the path
    C_prev: float | None = None
    cd_mode: bool = False  # the folds run cd alone: no finish
    probed: bool = False  # cd mode was chosen by a probe (not forced by a failed finish)
    handed_back: bool = False  # cd mode ended at the last grid point
    dear_cd: bool = False  # cd folds proved dear (a hand-back) since the last probe
    hand_back_scale: float = 1.0  # evidence a hand-back needs (doubles when reversed)
    cd_rent: float = 0.0  # cd mode's excess variable visits so far
    all_certified: bool = False  # the last grid point certified every fold
    wait: int = 1  # grid points to the next probe in active-set mode after a failure
    next_probe: int = 0
    prev_try_share: float = 1.0  # share proved by the previous-C try where last tried
    shift_proved: NDArray[np.bool_] | None = None  # which folds the shifted start proved
    warm_first: bool = False  # the folds' updates start from their statuses at C_prev

    # --- one grid point ---------------------------------------------------------------
    def start_point(self, t: int) -> None:
        self.t = t

    @property
    def first(self) -> bool:
        """At the path's first C (solved from zero)."""
        return self.C_prev is None

    @property
    def wants_finish(self) -> bool:
        """The full fit is to be polished to its exact optimum (before any probe)."""
        return self.active_set and not self.cd_mode

    def full_fit_tol(self, tol: float) -> float:
        """The tolerance of the full fit's cd solve before the finish and the probes:
        rough where the finish follows along the path, else cd mode's."""
        if self.wants_finish and not self.first and not self.handed_back:
            return max(tol, ROUGH_TOL)
        return tol * CD_FULL_FIT_TOL_FACTOR if self.wants_finish else self.cd_tol(tol)

    def cd_tol(self, tol: float) -> float:
        """The full fit's tolerance where the folds start from it without the finish."""
        if self.all_certified:
            return tol * CD_FULL_FIT_TOL_FACTOR_CERTIFIED
        return tol * CD_FULL_FIT_TOL_FACTOR

    def choose_finish(self, C: float, probe: Probe) -> bool:
        """Whether this grid point runs the finish: at the path's start, unless the probe
        finds cd cheap; in cd mode after a jump in C, if the sample finds it dear."""
        if self.wants_finish and self.first:
            if probe.cheap(start=True):
                self._enter_cd()
                return False
            self._probe_failed()
            return True
        if (
            self.cd_mode
            and self.probed
            and C > CD_RECHECK_RATIO * self.C_prev
            and not probe.still_cheap()
        ):
            self.cd_mode = False
            self._probe_failed()
            return self.active_set
        return self.wants_finish

    @property
    def finish_max_free(self) -> int:
        """The largest free set the finish takes (larger once cd folds proved dear)."""
        if self.dear_cd and self.coupled:
            return self.settings.finish_max_free_dear
        return self.settings.finish_max_free

    def after_finish(self, exact: bool, probe: Probe) -> None:
        """The finish ended (``exact``: at the optimum; where it gave up, the folds and
        the next grid point run cd); along the path, a probe when due may send the next
        grid point to cd mode."""
        self.cd_mode, self.probed = not exact, False
        if not exact or self.first or self.t < self.next_probe:
            return
        if probe.cheap():
            if self.dear_cd:  # the last hand-back is reversed
                self.hand_back_scale *= 2.0
            self._enter_cd()
        else:
            self._probe_failed()

    def fold_plan(self, C: float) -> FoldPlan:
        """Which folds try their solution at C_prev, the shifted start before the update,
        and their statuses at C_prev as the update's warm guess."""
        n = self.n
        if self.prev_try_share >= PREV_TRY_MIN_SHARE:
            try_prev = np.ones(n, dtype=np.bool_)
        else:
            try_prev = self._sample()
        if self.shift_proved is None:
            try_shift = np.ones(n, dtype=np.bool_)
        else:
            try_shift = self.shift_proved | self._sample()
        scale = 0.0 if self.first else C / self.C_prev
        if self.warm_first and scale <= WARM_SAMPLE_RATIO:
            use_warm = np.ones(n, dtype=np.bool_)
        else:
            use_warm = ~self._sample() if self.warm_first else self._sample()
        return FoldPlan(try_prev, try_shift, use_warm)

    def after_folds(
        self,
        C: float,
        *,
        epochs: NDArray[np.int64],
        certified: NDArray[np.bool_],
        prev_try: NDArray[np.int8],
        shift_try: NDArray[np.int8],
        warm: NDArray[np.int8],
        full_epochs: int,
        n_free: int,
    ) -> None:
        """Learn from the grid point's folds (their epochs and what each try did, coded
        -1 not tried, 0 failed, 1 proved / seeded) and its full fit's epochs and free
        variables; then move on to the next C."""
        tried = int(np.count_nonzero(prev_try >= 0))
        if tried:
            self.prev_try_share = np.count_nonzero(prev_try == 1) / tried
        shifted = shift_try >= 0
        if shifted.any():
            kept = np.zeros(self.n, np.bool_) if self.shift_proved is None else self.shift_proved
            self.shift_proved = kept.copy()
            self.shift_proved[shifted] = shift_try[shifted] == 1
        seeded, unseeded = warm == 1, warm == 0
        if seeded.any() and unseeded.any():
            self.warm_first = bool(epochs[seeded].mean() <= epochs[unseeded].mean())
        self._hand_back(int(epochs.sum()) + (0 if self.first else full_epochs), n_free)
        self.all_certified = bool(certified.all())
        self.C_prev = C

    # --- the rules' details -----------------------------------------------------------
    def _sample(self) -> NDArray[np.bool_]:
        """Every ``sample_every``-th fold, offset by the grid index (each in turn)."""
        k = self.settings.sample_every
        return np.arange(self.n) % k == self.t % k

    def _enter_cd(self) -> None:
        self.cd_mode, self.probed, self.dear_cd = True, True, False

    def _probe_failed(self) -> None:
        self.wait *= 2
        self.next_probe = self.t + self.wait

    def _hand_back(self, point_epochs: int, n_free: int) -> None:
        """End cd mode where cd alone got expensive (the module's rule 2): above
        ``cd_max_mean_epochs`` per fold at once; for coupled formulations also once the
        epochs above ``CD_RENT_MEAN_EPOCHS`` per fold, summed along the path as variable
        visits, exceed one finish's price (``FINISH_VISITS_PER_FREE_CUBED`` per cubed
        free variable). Both scaled by ``hand_back_scale``."""
        if not self.cd_mode:
            self.handed_back, self.cd_rent = False, 0.0
            return
        scale = self.hand_back_scale
        dear = point_epochs > self.settings.cd_max_mean_epochs * self.n * scale
        if not dear and self.coupled:
            excess = point_epochs - CD_RENT_MEAN_EPOCHS * self.n
            self.cd_rent += max(excess, 0.0) * self.n_var
            price = FINISH_VISITS_PER_FREE_CUBED * float(n_free) ** 3 * scale
            dear = n_free <= self.settings.finish_max_free_dear and self.cd_rent > price
        self.handed_back = dear
        if dear:
            self.cd_mode, self.dear_cd, self.cd_rent = False, True, 0.0
            self._probe_failed()
