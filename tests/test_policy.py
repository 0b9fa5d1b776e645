"""The LOO driver's policy (:mod:`isvm.loo.policy`): settings and counts in, decisions out.

:class:`PathPolicy` is fed the counts a grid point produces (fold epochs, what each
try did, the full fit's epochs and free set) and a probe (:class:`FoldProbe` with a
scripted run), and says what the next grid point does. The end-to-end tests at the
bottom change the settings of :func:`isvm.loo.loo_grid` and check that the work moves
and the predictions do not.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from problems import clustered

from isvm.data import load_dataset
from isvm.loo import loo_grid, loo_refit
from isvm.loo.policy import FoldProbe, PathPolicy
from isvm.loo.settings import (
    CD_FULL_FIT_TOL_FACTOR,
    CD_RECHECK_RATIO,
    CD_RENT_MEAN_EPOCHS,
    DEFAULT_SETTINGS,
    FINISH_VISITS_PER_FREE_CUBED,
    PREV_TRY_MIN_SHARE,
    ROUGH_TOL,
    WARM_SAMPLE_RATIO,
    LooSettings,
)
from isvm.seeding import rng

NEAR_TIE = 1e-6
N = 40


class Scripted:
    """A probe whose verdicts are given, recording how often it was asked."""

    def __init__(self, cheap: bool = False, still: bool = True) -> None:
        self.verdict, self.still, self.asked = cheap, still, []

    def cheap(self, start: bool = False) -> bool:
        self.asked.append("start" if start else "path")
        return self.verdict

    def still_cheap(self) -> bool:
        self.asked.append("recheck")
        return self.still


def _counts(epochs, certified=True, n=N, **tries):
    """after_folds' keyword counts: every fold took ``epochs``; no try unless given."""
    none = np.full(n, -1, dtype=np.int8)
    return dict(
        epochs=np.full(n, epochs, dtype=np.int64),
        certified=np.full(n, certified),
        prev_try=tries.get("prev_try", none),
        shift_try=tries.get("shift_try", none),
        warm=tries.get("warm", none),
        full_epochs=tries.get("full_epochs", 0),
        n_free=tries.get("n_free", 100),
    )


def _policy(coupled=True, settings=DEFAULT_SETTINGS) -> PathPolicy:
    return PathPolicy(settings, N, 3 * N, coupled)


def test_a_cheap_probe_at_the_start_enters_cd_mode():
    policy = _policy()
    policy.start_point(0)
    assert policy.full_fit_tol(1e-3) == pytest.approx(1e-3 * CD_FULL_FIT_TOL_FACTOR)
    probe = Scripted(cheap=True)
    assert policy.choose_finish(0.1, probe) is False
    assert probe.asked == ["start"] and policy.cd_mode


def test_failed_probes_wait_twice_as_long_each_time():
    """A failed probe waits 2, then 4, 8 grid points before the next: a path that never
    suits cd pays for a few probes, not one a grid point. Along the path the finish
    starts from a rough cd solution."""
    policy = _policy()
    probe = Scripted(cheap=False)
    asked_at = []
    for t, C in enumerate(np.arange(0.1, 8.0, 0.5)):
        policy.start_point(t)
        before = len(probe.asked)
        assert policy.choose_finish(C, probe) is True
        policy.after_finish(True, probe)
        if len(probe.asked) > before:
            asked_at.append(t)
        policy.after_folds(C, **_counts(1))
    assert asked_at == [0, 2, 6, 14]
    assert probe.asked == ["start", "path", "path", "path"]
    assert policy.full_fit_tol(1e-3) == ROUGH_TOL


def test_a_finish_that_gives_up_runs_cd_without_a_recheck():
    policy = _policy()
    policy.start_point(0)
    assert policy.choose_finish(0.1, Scripted(cheap=False)) is True
    policy.after_finish(False, Scripted(cheap=True))
    assert policy.cd_mode and not policy.probed
    policy.after_folds(0.1, **_counts(1))
    policy.start_point(1)
    probe = Scripted()
    assert policy.choose_finish(10.0, probe) is False and probe.asked == []


@pytest.mark.parametrize("coupled", [True, False])
def test_dear_cd_folds_hand_the_next_point_back(coupled):
    """Fold epochs above ``cd_max_mean_epochs`` per fold end cd mode at once; where the
    classes are coupled the finish may then take ``finish_max_free_dear`` variables."""
    policy = _policy(coupled)
    policy.start_point(0)
    policy.choose_finish(0.1, Scripted(cheap=True))
    policy.after_folds(0.1, **_counts(1))
    assert policy.cd_mode
    policy.start_point(1)
    policy.choose_finish(0.6, Scripted())
    limit = DEFAULT_SETTINGS.cd_max_mean_epochs
    policy.after_folds(0.6, **_counts(limit + 1, n_free=10_000))
    assert not policy.cd_mode and policy.handed_back and policy.wants_finish
    want = DEFAULT_SETTINGS.finish_max_free_dear if coupled else DEFAULT_SETTINGS.finish_max_free
    assert policy.finish_max_free == want
    # a finish after a hand-back starts from a tight cd solution
    policy.start_point(2)
    assert policy.full_fit_tol(1e-3) == pytest.approx(1e-3 * CD_FULL_FIT_TOL_FACTOR)


def test_coupled_cd_mode_pays_rent_then_buys_the_finish():
    """Epochs above ``CD_RENT_MEAN_EPOCHS`` per fold, summed as variable visits along
    the path, hand back once they exceed one finish's price; 1-vs-all never rents."""
    n_free = 200
    price = FINISH_VISITS_PER_FREE_CUBED * n_free**3
    per_point = (CD_RENT_MEAN_EPOCHS + 1.0) * N
    visits = (per_point - CD_RENT_MEAN_EPOCHS * N) * 3 * N
    expected = int(price // visits) + 1  # grid points until the rent exceeds the price
    for coupled in (True, False):
        policy = _policy(coupled)
        policy.start_point(0)
        policy.choose_finish(0.1, Scripted(cheap=True))
        policy.after_folds(0.1, **_counts(1))
        points = 0
        for t in range(1, 40):
            policy.start_point(t)
            policy.choose_finish(0.1 + 0.01 * t, Scripted())
            policy.after_folds(0.1 + 0.01 * t, **_counts(CD_RENT_MEAN_EPOCHS + 1, n_free=n_free))
            points += 1
            if not policy.cd_mode:
                break
        assert policy.cd_mode is not coupled
        if coupled:
            assert points == expected


def test_a_probe_that_reverses_a_hand_back_doubles_the_evidence_the_next_needs():
    """After a hand-back the path probes again (2 grid points later); where that probe
    sends it straight back to cd mode, the next hand-back needs twice the epochs, so
    the path cannot flap between the modes, paying a fresh finish each time."""
    policy = _policy()
    policy.start_point(0)
    policy.choose_finish(0.1, Scripted(cheap=True))
    policy.after_folds(0.1, **_counts(1))
    limit = DEFAULT_SETTINGS.cd_max_mean_epochs
    policy.start_point(1)
    policy.choose_finish(0.6, Scripted())
    policy.after_folds(0.6, **_counts(limit + 1))  # handed back: the next probe at t = 3
    for t in (2, 3):
        policy.start_point(t)
        assert policy.choose_finish(0.6 + 0.5 * t, Scripted()) is True
        probe = Scripted(cheap=True)
        policy.after_finish(True, probe)
        assert probe.asked == ([] if t == 2 else ["path"])
        policy.after_folds(0.6 + 0.5 * t, **_counts(1))
    assert policy.cd_mode and policy.hand_back_scale == 2.0
    policy.start_point(4)
    policy.choose_finish(2.6, Scripted())
    # would have handed back at scale 1 (too many free variables to rent)
    policy.after_folds(2.6, **_counts(limit + 1, n_free=10_000))
    assert policy.cd_mode


def test_cd_mode_samples_its_folds_after_a_jump_in_C():
    """In cd mode chosen by a probe, C growing by more than ``CD_RECHECK_RATIO`` runs
    the recheck first; a dear sample sends this grid point to the finish."""
    for still, finish in ((True, False), (False, True)):
        policy = _policy()
        policy.start_point(0)
        policy.choose_finish(1.0, Scripted(cheap=True))
        policy.after_folds(1.0, **_counts(1))
        policy.start_point(1)
        near = Scripted(still=still)
        assert policy.choose_finish(CD_RECHECK_RATIO * 0.99, near) is False
        assert near.asked == []
        policy.after_folds(CD_RECHECK_RATIO * 0.99, **_counts(1))
        policy.start_point(2)
        far = Scripted(still=still)
        assert policy.choose_finish(10.0, far) is finish
        assert far.asked == ["recheck"]


def test_cd_mode_solves_the_full_fit_loosely_only_after_every_fold_was_certified():
    policy = _policy()
    policy.start_point(0)
    policy.choose_finish(0.1, Scripted(cheap=True))
    for certified, factor in ((False, CD_FULL_FIT_TOL_FACTOR), (True, 1.0)):
        policy.after_folds(0.1, **_counts(1, certified=certified))
        assert policy.cd_tol(1e-3) == pytest.approx(1e-3 * factor)
        assert policy.full_fit_tol(1e-3) == pytest.approx(1e-3 * factor)


def _plans_over_a_sample(policy: PathPolicy, field: str) -> list[np.ndarray]:
    """One mask of the fold plans (``field``) at each of the next ``sample_every``
    grid points: a rotating sample visits every fold once over them."""
    masks = []
    for t in range(1, DEFAULT_SETTINGS.sample_every + 1):
        policy.start_point(t)
        masks.append(getattr(policy.fold_plan(0.1 + t), field))
    return masks


def test_previous_c_tries_go_to_a_rotating_sample_where_they_stopped_paying():
    """Every fold tries its solution at C_prev while at least ``PREV_TRY_MIN_SHARE`` of
    those that tried were proved by it; below, every ``sample_every``-th fold, each
    fold once in ``sample_every`` grid points."""
    policy = _policy()
    policy.start_point(0)
    assert policy.fold_plan(0.1).try_prev.all()
    tried = np.zeros(N, dtype=np.int8)
    tried[: int(PREV_TRY_MIN_SHARE * N) - 1] = 1  # just below the share
    policy.after_folds(0.1, **_counts(1, prev_try=tried))
    masks = _plans_over_a_sample(policy, "try_prev")
    np.testing.assert_array_equal(np.sum(masks, axis=0), np.ones(N))


def test_shifted_starts_are_retried_where_they_proved_and_sampled_elsewhere():
    policy = _policy()
    policy.start_point(0)
    assert policy.fold_plan(0.1).try_shift.all()
    shift = np.zeros(N, dtype=np.int8)
    shift[:10] = 1
    policy.after_folds(0.1, **_counts(1, shift_try=shift))
    masks = _plans_over_a_sample(policy, "try_shift")
    assert all(m[:10].all() for m in masks)
    np.testing.assert_array_equal(np.sum(masks, axis=0)[10:], np.ones(N - 10))


def test_the_warm_guess_follows_the_cheaper_side():
    """The folds' updates start from their statuses at C_prev on one side and a rotating
    sample goes the other way; the next grid point follows the side with fewer epochs
    per fold, and where the guess won and C grew little every fold takes it."""
    policy = _policy()
    policy.start_point(0)
    plan = policy.fold_plan(0.1)
    assert plan.use_warm.sum() == len(range(0, N, DEFAULT_SETTINGS.sample_every))
    warm = np.where(plan.use_warm, 1, 0).astype(np.int8)
    counts = _counts(1, warm=warm)
    counts["epochs"] = np.where(plan.use_warm, 2, 5)  # the seeded folds were cheaper
    policy.after_folds(1.0, **counts)
    assert policy.warm_first
    policy.start_point(1)
    assert policy.fold_plan(1.0 * WARM_SAMPLE_RATIO).use_warm.all()
    far = policy.fold_plan(1.0 * WARM_SAMPLE_RATIO * 1.01).use_warm
    assert (~far).sum() == len(range(1, N, DEFAULT_SETTINGS.sample_every))


@pytest.mark.parametrize(
    ("epochs", "certified", "cheap"),
    [
        ([4, 2, 0, 1, 1, 0, 1, 0], [1] * 8, True),  # one slow fold, the mean within 3
        ([3, 3, 3, 3, 3, 3, 3, 3], [1] * 8, True),
        ([4, 3, 3, 3, 3, 3, 3, 3], [1] * 8, False),  # just above the mean
        ([6, 1, 1, 1, 1, 1, 1, 4], [0, 1, 1, 1, 1, 1, 1, 1], False),  # one uncertified
    ],
)
def test_the_probe_at_a_path_start_judges_the_mean(epochs, certified, cheap):
    """At a path's start each probe fold gets twice ``probe_epochs`` and their mean must
    be within it; along the path each fold must be certified within ``probe_epochs``;
    ``probe_epochs = 0`` never finds cd cheap."""
    budgets = []

    def run(points, budget, pooled):
        budgets.append((budget, pooled))
        done = np.array(certified, dtype=bool) & (np.array(epochs) <= budget)
        return done, np.minimum(np.array(epochs), budget)

    probe = FoldProbe(run, 100, DEFAULT_SETTINGS)
    assert probe.points.shape[0] == DEFAULT_SETTINGS.probe_folds
    k = DEFAULT_SETTINGS.probe_epochs
    assert probe.cheap(start=True) is cheap
    assert probe.cheap() is (all(certified) and max(epochs) <= k)
    assert budgets == [(2 * k, False), (k, False)]
    off = FoldProbe(run, 100, dataclasses.replace(DEFAULT_SETTINGS, probe_epochs=0))
    assert off.cheap(start=True) is False and off.still_cheap() is False


@pytest.mark.parametrize(
    ("epochs", "cheap"),
    [
        ([1, 1, 0, 1, 8, 1, 120, 8], False),  # satimage N = 300 [0, 1] ISVM, gamma 10
        ([4, 4, 4, 4, 4, 4, 4, 4], True),
        ([4, 4, 4, 4, 4, 4, 4, 5], False),
        ([0, 0, 0, 0, 0, 0, 0, 32], True),  # one slow fold, the sum within the budget
    ],
)
def test_the_recheck_sums_the_sample_on_one_budget(epochs, cheap):
    calls = []

    def run(points, budget, pooled):
        calls.append((budget, pooled))
        spent, out = 0, []
        for e in epochs:  # what probe_folds(pooled=True) reports
            took = min(e, max(budget - spent, 0))
            out.append(took)
            spent += took
        return np.ones(len(epochs), dtype=bool), np.array(out)

    probe = FoldProbe(run, 100, DEFAULT_SETTINGS)
    most = int(DEFAULT_SETTINGS.cd_max_mean_epochs * 8)
    assert probe.still_cheap() is cheap
    assert calls == [(most + 1, True)]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("outside_max_entries", -1, "outside_max_entries must be an int >= 0"),
        ("active_max_iter", 1.5, "active_max_iter must be an int"),
        ("sample_every", 0, "sample_every must be an int >= 1"),
        ("cd_max_mean_epochs", 0.0, "cd_max_mean_epochs must be a number > 0"),
        ("cd_max_mean_epochs", float("nan"), "cd_max_mean_epochs must be a number > 0"),
        ("separable_finish", 1, "separable_finish must be a bool"),
        ("probe_epochs", True, "probe_epochs must be an int"),
    ],
)
def test_out_of_range_settings_are_refused_with_the_field_named(field, value, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(DEFAULT_SETTINGS, **{field: value})


def test_settings_are_few_and_each_documented():
    fields = dataclasses.fields(LooSettings)
    assert len(fields) <= 12
    lines = inspect.getsource(LooSettings).splitlines()
    for field in fields:
        at = next(i for i, line in enumerate(lines) if line.startswith(f"    {field.name}:"))
        assert lines[at - 1].strip().startswith("#:"), f"LooSettings.{field.name}: no comment"


# --- end to end: settings in, work and predictions out ----------------------------------


def _vehicle(scaling: str, n: int = 40):
    data = load_dataset("vehicle", source="bundled", scaling=scaling)
    idx = rng(12, "test-certificate", "vehicle").choice(data.y.shape[0], n, replace=False)
    return data.X[idx], data.y[idx]


@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
@pytest.mark.parametrize("scaling", ["zscore", "minmax"])
def test_every_mode_choice_gives_the_refits_predictions(method, scaling):
    """The default policy, the finish never (cd alone), the finish always
    (``probe_epochs = 0``), and cd mode kept whatever its folds cost: the same
    predictions, those of exact refits (near-ties as the refits allow)."""
    X, y = _vehicle(scaling)
    Cs = [0.1, 0.6, 10.1, 10.6]
    _, ref, gap = loo_refit(X, y, method, [5.0], Cs, tol=1e-9)
    variants = [
        {},
        {"active_set": False},
        {"settings": dataclasses.replace(DEFAULT_SETTINGS, probe_epochs=0)},
        {"settings": dataclasses.replace(DEFAULT_SETTINGS, cd_max_mean_epochs=1e9)},
    ]
    iterations = []
    for options in variants:
        frame, pred = loo_grid(X, y, method, [5.0], Cs, return_predictions=True, **options)
        assert ((pred != ref) <= (gap < NEAR_TIE)).all()
        iterations.append(int(frame["iterations"].sum()))
    assert len(set(iterations)) > 1, "the choices did not change the work"


def test_sampling_every_fold_changes_the_work_not_the_predictions():
    """``sample_every = 1`` makes every fold try every cheap start at every grid point:
    the same predictions."""
    X, y = clustered(4, 60, 4)
    Cs = [0.1 + 2.5 * k for k in range(10)]
    fa, pa = loo_grid(X, y, "isvm", [5.0], Cs, return_predictions=True)
    every = dataclasses.replace(DEFAULT_SETTINGS, sample_every=1)
    fb, pb = loo_grid(X, y, "isvm", [5.0], Cs, return_predictions=True, settings=every)
    np.testing.assert_array_equal(pa, pb)
    assert (fa["n_errors"] == fb["n_errors"]).all()
