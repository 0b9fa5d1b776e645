"""Table 5: Bayes-consistency Monte Carlo (section 10, Algorithm 3)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from isvm.cli import main
from isvm.experiment.consistency import (
    DECISIONS,
    MINIMISERS,
    SAMPLINGS,
    TIES,
    Choices,
    all_choices,
    draw_errors,
    findings,
    inconsistency_rate,
    run_grid,
    sample_p,
    table5,
    tie_errors,
)
from isvm.experiment.consistency_losses import (
    LOSSES,
    candidate_h,
    candidates,
    make_loss,
    minimise_fast,
    minimise_lp,
)

VERTEX_CHOICES = [c for c in all_choices() if c.sampling == "simplex" and c.minimiser == "vertex"]
FACE_CHOICES = [c for c in all_choices() if c.sampling == "simplex" and c.minimiser != "vertex"]


def test_h_matches_the_papers_formulas() -> None:
    f = np.array([0.3, -1.7, 2.2, 0.4])
    L, fbar = 4, f.mean()
    pos = lambda x: max(x, 0.0)  # noqa: E731
    others = lambda j: [i for i in range(L) if i != j]  # noqa: E731
    expected = {
        "ova": [pos(1 - f[j]) + sum(pos(1 + f[i]) for i in others(j)) for j in range(L)],
        "isvm": [
            pos(1 - (f[j] - fbar)) + sum(pos(1 + (f[i] - fbar)) for i in others(j))
            for j in range(L)
        ],
        "ww": [sum(pos(1 - (f[j] - f[i])) for i in others(j)) for j in range(L)],
        "cs": [max(pos(1 - (f[j] - f[i])) for i in others(j)) for j in range(L)],
        "llw": [sum(pos(f[i] + 1 / (L - 1)) for i in others(j)) for j in range(L)],
    }
    for name, h in expected.items():
        np.testing.assert_allclose(make_loss(name, L).h(f)[0], h, err_msg=name)
    ww2 = [sum(pos(2 - (f[j] - f[i])) for i in others(j)) for j in range(L)]
    np.testing.assert_allclose(make_loss("ww", L, 2.0).h(f)[0], ww2)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_two_classes_are_always_consistent(loss: str, sampling: str) -> None:
    for ties in ("wrong", "split", "first"):
        r = inconsistency_rate(loss, 2, 3000, 5, Choices(sampling=sampling, ties=ties))
        assert r.rate_pct == 0.0, (loss, sampling, ties)


@pytest.mark.parametrize("L", [2, 3, 4, 5, 6])
def test_lee_lin_wahba_is_consistent_for_every_L(L: int) -> None:
    loss = make_loss("llw", L)
    for sampling in SAMPLINGS:
        p = sample_p(L, 3000, 9, sampling)
        err, n_deg = draw_errors(loss, p, [Choices(ties="wrong"), Choices(ties="split")])
        assert err.sum() == 0.0 and n_deg == 0
    # the minimiser is f_k = 1, the rest -1/(L-1), for k = argmax p
    p = sample_p(L, 50, 1)
    _, idx, _ = minimise_fast(loss, p)
    expected = np.full((50, L), -1.0 / (L - 1))
    expected[np.arange(50), p.argmax(axis=1)] = 1.0
    np.testing.assert_allclose(candidates(loss)[idx], expected, atol=1e-12)


def _grid_minimum(loss_name: str, L: int, p: np.ndarray, step: float, span: float) -> float:
    loss = make_loss(loss_name, L)
    axis = np.arange(-span, span + step / 2, step)
    if loss.sum_zero:  # f_L = -(f_1 + ... + f_{L-1}); the others are shift-invariant
        free = np.array(list(itertools.product(axis, repeat=L - 1)))
        grid = np.column_stack([free, -free.sum(axis=1)])
    else:
        grid = np.array(list(itertools.product(axis, repeat=L)))
    return float((loss.h(grid) @ p).min())


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("L", [3, 4])
def test_lp_minimum_equals_brute_force_grid_minimum(loss: str, L: int) -> None:
    # the grids hold every candidate vertex: OVA's are in {-1, 1}^L, ISVM's are
    # integers, WW's and CS's multiples of 1/L, LLW's of 1/(L-1), all within [-3, 3]
    step = {"ova": 1 / 2, "isvm": 1 / 2, "ww": 1 / (2 * L), "cs": 1 / (2 * L)}.get(
        loss, 1 / (L - 1)
    )
    span = 1.5 if loss == "ova" else 3.0
    for p in sample_p(L, 4, 3):
        value, x = minimise_lp(make_loss(loss, L), p)
        brute = _grid_minimum(loss, L, p, step, span)
        assert value <= brute + 1e-9  # the LP is exact: nothing on the grid beats it
        assert brute == pytest.approx(value, abs=1e-9)
        assert make_loss(loss, L).risk(p, x[:L])[0] == pytest.approx(value, abs=1e-8)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("L", [3, 4, 5])
def test_fast_path_matches_highs(loss: str, L: int) -> None:
    """Same minimum and same per-draw error under every choice (3 x 5 x 120 draws)."""
    lo = make_loss(loss, L)
    p = sample_p(L, 120, 17, "iid-uniform" if L == 4 else "simplex")
    values = np.array([minimise_lp(lo, q)[0] for q in p])
    fast, _, n_opt = minimise_fast(lo, p)
    np.testing.assert_allclose(fast, values, atol=1e-8)
    assert np.all(n_opt == 1)  # minimiser unique for continuous p
    e_fast, _ = draw_errors(lo, p, VERTEX_CHOICES, "fast")
    e_lp, _ = draw_errors(lo, p, VERTEX_CHOICES, "lp")
    np.testing.assert_array_equal(e_fast, e_lp)
    f_fast, _ = draw_errors(lo, p[:10], FACE_CHOICES, "fast")
    f_lp, _ = draw_errors(lo, p[:10], FACE_CHOICES, "lp")
    np.testing.assert_array_equal(f_fast, f_lp)


@pytest.mark.parametrize("solver", ["fast", "lp"])
def test_worst_and_best_minimiser_on_a_degenerate_p(solver: str) -> None:
    """OVA with p_2 = 1/2 exactly: every f_2 in [-1, 1] is optimal."""
    loss, p = make_loss("ova", 3), np.array([[0.3, 0.5, 0.2]])
    _, _, n_opt = minimise_fast(loss, p)
    assert n_opt[0] == 2  # (-1, -1, -1) and (-1, 1, -1)
    for decision in DECISIONS:
        for ties, worst, best in (("wrong", 1, 0), ("right", 0, 0), ("first", 1, 0)):
            for minimiser, want in (("worst", worst), ("best", best)):
                ch = Choices(minimiser=minimiser, decision=decision, ties=ties)
                err, _ = draw_errors(loss, p, [ch], solver)
                assert err[0, 0] == want, (solver, ch)


def test_split_needs_the_vertex_minimiser() -> None:
    with pytest.raises(ValueError, match="split"):
        Choices(minimiser="worst", ties="split")
    assert len(all_choices()) == len(SAMPLINGS) * len(DECISIONS) * (len(TIES) + 2 * 3)
    assert {c.minimiser for c in all_choices()} == set(MINIMISERS)


def test_tie_rules() -> None:
    scores = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [2.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    k = np.array([0, 1, 0, 2])
    np.testing.assert_array_equal(tie_errors(scores, k, "wrong"), [1, 1, 0, 1])
    np.testing.assert_array_equal(tie_errors(scores, k, "right"), [0, 0, 0, 0])
    np.testing.assert_array_equal(tie_errors(scores, k, "first"), [0, 1, 0, 1])
    np.testing.assert_allclose(tie_errors(scores, k, "split"), [0.5, 0.5, 0, 2 / 3])


def test_analytic_rates() -> None:
    """OVA and CS fail iff max p < 1/2, all L classes tied: P = 1 - L 2^(1-L) on the
    simplex and 1 - 1/(L-1)! for normalised uniforms; ISVM is consistent at L = 3
    and ties its top two classes at L = 4 iff p_(2) > p_(1)/2 (P = 3/5); WW ties
    at L = 3 with probability 1/6."""
    n = 20_000
    tol = lambda q: 4 * 100 * math.sqrt(q * (1 - q) / n) + 1e-9  # noqa: E731
    wrong = Choices(ties="wrong")
    for L in (3, 4, 5):
        q = 1 - L * 2.0 ** (1 - L)
        for loss in ("ova", "cs"):
            assert abs(inconsistency_rate(loss, L, n, 2, wrong).rate_pct - 100 * q) < tol(q)
        split = inconsistency_rate("ova", L, n, 2, Choices(ties="split")).rate_pct
        assert abs(split - 100 * q * (1 - 1 / L)) < tol(q)
        q = 1 - 1 / math.factorial(L - 1)
        r = inconsistency_rate("ova", L, n, 2, Choices(sampling="iid-uniform", ties="wrong"))
        assert abs(r.rate_pct - 100 * q) < tol(q)
    assert inconsistency_rate("isvm", 3, n, 2, wrong).rate_pct == 0.0
    assert abs(inconsistency_rate("isvm", 4, n, 2, wrong).rate_pct - 60.0) < tol(0.6)
    assert abs(inconsistency_rate("ww", 3, n, 2, wrong).rate_pct - 100 / 6) < tol(1 / 6)


@pytest.mark.parametrize("L", [3, 4, 5])
def test_weston_watkins_never_fails_where_one_vs_all_succeeds(L: int) -> None:
    """Per draw, WW's error <= OVA's under every tie rule: the reason Table 5's
    WW > 1-vs-all (15 > 5, 39 > 25, 48 > 37) cannot come from exact minimisers."""
    for sampling in SAMPLINGS:
        p = sample_p(L, 5000, 4, sampling)
        chs = [Choices(sampling=sampling, ties=t) for t in TIES]
        e_ww, _ = draw_errors(make_loss("ww", L), p, chs)
        e_ova, _ = draw_errors(make_loss("ova", L), p, chs)
        assert np.all(e_ww <= e_ova + 1e-12)
        assert np.any(e_ww < e_ova)


def test_margin_and_decision_do_not_change_decisions() -> None:
    for L in (3, 4, 5):
        np.testing.assert_allclose(
            candidates(make_loss("ww", L, 2.0)), 2 * candidates(make_loss("ww", L))
        )
    grid = run_grid([3, 4], 2000, 8, losses=["ww", "isvm"], choices=all_choices((1.0, 2.0)))
    keys = ["loss", "L", "sampling", "minimiser", "ties"]
    spread = grid.groupby(keys)["rate_pct"].agg(lambda s: s.max() - s.min())
    assert spread.max() == 0.0  # neither ww_margin nor decision matters
    for name in LOSSES:  # f and -h have the same top set at every candidate vertex
        for L in (3, 4, 5):
            lo = make_loss(name, L)
            V, H = candidates(lo), candidate_h(lo)
            top_f = V >= V.max(axis=1, keepdims=True) - 1e-9
            top_h = -H >= (-H).max(axis=1, keepdims=True) - 1e-9
            np.testing.assert_array_equal(top_f, top_h)


def test_findings_against_the_paper() -> None:
    grid = run_grid([2, 3, 4, 5], 2000, 3, losses=["ova", "isvm", "ww"])
    found = findings(grid)
    assert len(found) == len(all_choices())
    assert found["cells"].eq(12).all() and not found["reproduces"].any()


def test_table5_has_the_papers_numbers_beside_ours() -> None:
    df = table5([2, 3], 500, 1)
    assert list(df.columns) == [
        "loss",
        "method",
        "L",
        "ours_pct",
        "se_pct",
        "paper_pct",
        "diff_pct",
        "n_degenerate",
    ]
    ova3 = df[(df["loss"] == "ova") & (df["L"] == 3)].iloc[0]
    assert ova3["paper_pct"] == 5 and ova3["diff_pct"] == pytest.approx(ova3["ours_pct"] - 5)
    assert df[df["loss"].isin(["cs", "llw"])]["paper_pct"].isna().all()
    assert (df[df["L"] == 2]["ours_pct"] == 0).all()


def test_cli_cell_prints_the_rate_last_and_is_seeded(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["consistency", "--loss", "ww", "--L", "3", "--draws", "4000", "--seed", "12"]
    outs = []
    for _ in range(2):
        assert main(args) == 0
        outs.append(capsys.readouterr().out)
    last = [o.strip().splitlines()[-1] for o in outs]
    assert last[0] == last[1]
    expected = inconsistency_rate("ww", 3, 4000, 12).rate_pct
    assert float(last[0]) == pytest.approx(expected, abs=1e-4)
    assert main([*args[:-1], "13"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] != last[0]
    assert main([*args, "--ties", "wrong", "--solver", "lp", "--draws", "200"]) == 0
    lp = float(capsys.readouterr().out.strip().splitlines()[-1])
    assert lp == pytest.approx(inconsistency_rate("ww", 3, 200, 12, Choices(ties="wrong")).rate_pct)


def test_cli_table_and_grid_write_files(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    stem, fig = tmp_path / "tables" / "table5", tmp_path / "figures" / "consistency.png"
    args = [
        "consistency",
        "table",
        "--draws",
        "600",
        "--seed",
        "4",
        "--L",
        "2",
        "3",
        "4",
        "--out-stem",
        str(stem),
        "--figure",
        str(fig),
    ]
    assert main(args) == 0
    first = (stem.with_suffix(".csv").read_bytes(), stem.with_suffix(".md").read_text())
    assert main(args) == 0
    assert stem.with_suffix(".csv").read_bytes() == first[0]  # seeded: byte-identical
    md = first[1]
    for text in ("draws per cell: 600", "seed: 4", "ties in the decision: first", "paper_pct"):
        assert text in md
    assert fig.stat().st_size > 0 and fig.with_suffix(".pdf").stat().st_size > 0
    df = pd.read_csv(stem.with_suffix(".csv"))
    assert len(df) == 6 * 3
    gstem = tmp_path / "grid"
    assert (
        main(["consistency", "grid", "--draws", "300", "--L", "2", "3", "--out-stem", str(gstem)])
        == 0
    )
    capsys.readouterr()
    found = pd.read_csv(tmp_path / "grid_findings.csv")
    assert len(found) == len(all_choices()) and "reproduces" in found.columns


def test_cli_cell_needs_loss_and_one_L() -> None:
    with pytest.raises(SystemExit):
        main(["consistency", "--L", "3"])
    with pytest.raises(SystemExit):
        main(["consistency", "--loss", "ova", "--L", "3", "4"])
