"""The LOO engine's tuning settings: one frozen object, passed down (never module globals).

:class:`LooSettings` holds every budget and threshold of the exact engine; the
defaults (:data:`DEFAULT_SETTINGS`) are what the study runs. Change one for a check
or a benchmark with ``dataclasses.replace(DEFAULT_SETTINGS, active_max_iter=1)``
and pass it to :func:`isvm.loo.loo_grid`. None of them changes a prediction: they
trade the active-set updates against the cd fallback, and every fold is certified
or solved to ``tol`` whichever way it went. :meth:`LooSettings.fold` gives the part
the numba fold kernels read, as a named tuple.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class FoldSettings(NamedTuple):
    """What the numba fold kernels read (:func:`isvm.loo.folds.fit_folds`)."""

    tol: float  # maximum KKT violation of a fold solve
    tol_floor: float  # tightest tolerance an uncertified fold is solved to
    max_epochs: int  # epochs per fold solve
    kappa: float  # class-score difference per unit of ||w|| (the formulation's)
    max_iter: int  # active-set updates per fold
    max_changed: int  # outside variables a fold update may free
    patience: int  # primal-dual steps without progress before the decremental path
    pd_max_touched: int  # outside variables the primal-dual steps may free before it
    warm_ratio: float  # largest C / C_prev at which a fold's previous statuses seed it
    warm_max_changes: int  # a warm guess with more status changes than this is not used
    free_threshold: float  # a bound variable is freed when its gradient points inward by this
    box_slack: float  # a free variable leaving the box by this times C goes to the bound
    ridge: float  # relative ridge on a singular bordered system
    stationary_tol: float  # free gradients of a reported optimum vanish to this


@dataclass(frozen=True)
class LooSettings:
    """Budgets and thresholds of the exact LOO engine (defaults: the study's)."""

    #: active-set fold solves: at most this many set updates ...
    active_max_iter: int = 300
    #: ... and this many freed outside variables, then cd
    active_max_changed: int = 1024
    #: primal-dual steps allowed without fewer infeasible variables before the
    #: decremental path (see :func:`isvm.loo.fold_update.fold_active_set`)
    active_patience: int = 3
    #: ... or once they have freed more than this many outside variables: each face
    #: solve then costs O(touched^3) and such steps rarely end at the optimum (vowel Ns
    #: 500 [0, 1] ISVM at C = 2.6: phase 1 ended without it in 497 of 500 folds, 240
    #: variables touched on average, and cost half the grid point's time)
    active_pd_max_touched: int = 128
    #: a fold's statuses at the previous C seed its primal-dual steps when C grew by
    #: at most this factor (further apart, the guess costs more than it saves) ...
    active_warm_ratio: float = 1.5
    #: ... and where it grew by more than this one, or the folds went without the
    #: guess at the last grid point, every ``prev_try_sample``-th fold goes the other
    #: way and the cheaper side is followed at the next grid point
    #: (:func:`isvm.loo.driver._warm_choice`): below it the guess nearly always pays
    warm_sample_ratio: float = 1.1
    #: with the active-set finish, the full fit's cd only has to find the sets roughly
    active_presolve_tol: float = 0.1
    #: a warm guess of a fold's statuses with more changes than this is not used: each
    #: face solve costs O(changes^3), and such a guess is rarely right
    warm_max_changes: int = 128
    #: a bound variable is freed when its gradient points inward by more than this
    free_threshold: float = 1e-9
    #: a free variable is moved to a bound when it leaves the box by more than this times C
    box_slack: float = 1e-10
    #: relative ridge on the freed variables of a singular bordered system
    ridge: float = 1e-10
    #: a free variable's gradient must vanish to this at a reported optimum
    stationary_tol: float = 1e-8
    #: relative residual ``|H Hinv v - v| / |v|`` above which an updated inverse is redone
    update_residual: float = 1e-8
    #: a full-fit face solved by an updated inverse must leave free gradients below this
    #: (relative to its right-hand side), after at most ``refine_steps`` refinements
    solve_residual: float = 1e-12
    refine_steps: int = 2
    #: folds probed with cd alone (evenly spaced) to decide whether a grid point's folds
    #: need the active-set finish: all certified within ``probe_epochs`` epochs means
    #: they do not (near-diagonal kernels); at a path's first C, all within twice that
    #: and that on average (:meth:`isvm.loo.driver._Probe.cheap`)
    probe_folds: int = 8
    probe_epochs: int = 3
    #: in cd mode, a grid point whose folds took more epochs than this per fold (with
    #: its tight full fit's epochs, past the path's first C) hands the next one back
    #: to the active set
    cd_max_mean_epochs: float = 4.0
    #: ... and, where a point's multipliers are coupled (ISVM, WW, LLW), one whose fold
    #: epochs above this per fold, summed along the path in variable visits, exceed the
    #: price of one exact finish: ``finish_visits_per_free_cubed`` x (free variables)^3
    #: (a rent-or-buy rule: the finish's factorisation is paid once, its fold updates
    #: then save the excess at every grid point; 1 since the folds' shifted starts,
    #: whose cd folds take 1-2 epochs where the active set's updates cost less still)
    cd_rent_mean_epochs: float = 1.0
    finish_visits_per_free_cubed: float = 1e-3
    #: in cd mode, a grid point whose C exceeds the previous one's by more than this
    #: factor samples its folds' cost first (:meth:`isvm.loo.driver._Probe.still_cheap`):
    #: the previous grid point's counts say little about it
    cd_recheck_ratio: float = 1.5
    #: without the active-set finish the full fit is solved to this fraction of tol
    #: (one solve), so that the folds' cd starts with only local violations (N solves)
    cd_full_tol_factor: float = 0.01
    #: ... or to this one where the previous grid point's folds were all certified: they
    #: settle from a looser start (letter Ns 500 ISVM: 34% fewer epochs, 1.5x; round 14
    #: in docs/benchmarks.md); folds that end uncertified (near-ties, MNIST) run to tol
    #: and tighter and pay for a loose start (0.3 everywhere: MNIST Ns 500 ISVM 1.16x slower)
    cd_full_tol_factor_certified: float = 1.0
    #: a fold not solved exactly first tries its own solution at the previous C (one
    #: certificate, which settles it without a solve once C is past every multiplier).
    #: Where that proved fewer than this share of the folds that tried it at the last
    #: grid point, only every ``prev_try_sample``-th fold tries it (turning with the grid
    #: point), the others go straight to their starts: on letter Ns 500 ISVM it proves
    #: 0-3% of the folds at a sixth of a cd fold's time each (round 17 in
    #: docs/benchmarks.md), on vehicle Ns 500 up to 75% at large C (round 16). The same
    #: sample picks, in active-set mode, which of the folds that their shifted start did
    #: not prove when they last tried it try it again (:func:`isvm.loo.driver._shift_tries`)
    prev_try_min_share: float = 0.1
    prev_try_sample: int = 8
    #: along a C path the full fit's active-set finish starts from the previous C's sets,
    #: solving each step through the previous inverse, for at most this many steps
    #: before it starts afresh from the rough cd solution (a new factorisation a step):
    #: 4 gave up too early on dense kernels (Yeast Ns 500 ISVM, gamma 5: full fits
    #: 23 -> 18 s at 10, the same at 20; round 18 in docs/benchmarks.md)
    finish_previous_max_iter: int = 10
    #: where the finish's steps do not settle from the rough start nor from cd solutions
    #: at 1e-5 and 1e-7 (1,000 epochs each), one last try from a cd solution at this
    #: tol on the fit's whole epoch budget before the grid point falls back to cd folds
    #: (0: none): on dense kernels ([0, 1] features) those cost far more than the
    #: tight solve (vowel Ns 500 ISVM, gamma 5, C = 5.6: 279 s of cd folds; the finish
    #: settled after 8,360 epochs, 2.4 s; round 23 in docs/benchmarks.md)
    finish_last_retry_tol: float = 1e-9
    #: the full fit's active-set finish gives up above this many free variables (its
    #: factorisation grows as their cube; the folds then run cd) ...
    finish_max_free: int = 3000
    #: ... or above this many once cd folds proved dear on the path (a hand-back) and
    #: until a probe finds them cheap again, where the classes are coupled (not
    #: 1-vs-all, whose L separate problems one dense factorisation serves badly):
    #: yeast Ns 500 ISVM (about 3,400 free), 1-2 s per grid point against cd folds of 6-7 s
    finish_max_free_dear: int = 4500
    #: the exact full fit keeps ``Q[v, F]`` and ``Q[v, F] Hinv`` for every outside
    #: variable v (two arrays of (outside variables) x |F| numbers, 8 bytes each: 256
    #: MB apiece at this budget, about twice that while a C path moves them) when they
    #: fit in this many entries; above it, each fold computes the rows it needs through
    #: ``Hinv`` itself, one pass over it per freed variable: satimage N = 1,000 ISVM
    #: (8.8 million entries) took 176 s per gamma at the old budget of 8 million, 22 s
    #: at this one (round 18 in docs/benchmarks.md)
    outside_max_entries: int = 32_000_000
    #: where the dual is L separate problems (1-vs-all), the finish factorises and
    #: updates each class's face on its own (:mod:`isvm.loo.separable`; False: as one
    #: dense block, for benchmarks and checks)
    separable_finish: bool = True
    #: ... once the rough start has at least this many free variables (below, the
    #: dense factorisation is cheap and L small fits cost more in overhead: vowel Ns
    #: 200 [0, 1], about 240 free, 3.8-4.4 s against 3.3 s of full fits)
    separable_min_free: int = 1000
    #: where the dual is L separate problems (1-vs-all), the folds' certificates bound
    #: each class's score by its own column's suboptimality
    #: (:func:`isvm.solvers._core.prove_by_column`) instead of one bound for all columns
    #: (False: the one bound, for benchmarks and checks)
    certify_by_column: bool = True
    #: times a settled but singular face may be reduced by pinning null directions
    #: (:func:`isvm.loo.full_fit.pin_null_directions`)
    pin_rounds: int = 2

    def __post_init__(self) -> None:
        if self.outside_max_entries < 0:
            raise ValueError(
                f"LooSettings.outside_max_entries must be at least 0 (entries of the "
                f"outside products), got {self.outside_max_entries!r}"
            )
        if self.finish_previous_max_iter < 0:
            raise ValueError(
                f"LooSettings.finish_previous_max_iter must be at least 0 (active-set steps "
                f"from the previous C's sets), got {self.finish_previous_max_iter!r}"
            )
        if not self.finish_last_retry_tol >= 0.0:
            raise ValueError(
                f"LooSettings.finish_last_retry_tol must be at least 0 (0: no last retry), "
                f"got {self.finish_last_retry_tol!r}"
            )
        if self.active_pd_max_touched < 0:
            raise ValueError(
                f"LooSettings.active_pd_max_touched must be at least 0 (freed outside "
                f"variables before the decremental path), got {self.active_pd_max_touched!r}"
            )
        if not self.warm_sample_ratio >= 1.0:
            raise ValueError(
                f"LooSettings.warm_sample_ratio must be at least 1 (a growth factor of C), "
                f"got {self.warm_sample_ratio!r}"
            )
        if self.prev_try_sample < 1:
            raise ValueError(
                f"LooSettings.prev_try_sample must be at least 1 (every k-th fold), "
                f"got {self.prev_try_sample!r}"
            )

    def fold(self, *, tol: float, tol_floor: float, max_epochs: int, kappa: float) -> FoldSettings:
        """The fold kernels' settings for one LOO grid run."""
        return FoldSettings(
            float(tol),
            float(tol_floor),
            int(max_epochs),
            float(kappa),
            int(self.active_max_iter),
            int(self.active_max_changed),
            int(self.active_patience),
            int(self.active_pd_max_touched),
            float(self.active_warm_ratio),
            int(self.warm_max_changes),
            float(self.free_threshold),
            float(self.box_slack),
            float(self.ridge),
            float(self.stationary_tol),
        )


#: the settings the study runs
DEFAULT_SETTINGS = LooSettings()
