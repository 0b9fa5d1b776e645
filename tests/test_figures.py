"""Figures of the study (isvm.experiment.figures) on synthetic LOO records."""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pandas as pd
import pytest

from isvm.experiment import figures, figures_cli
from isvm.experiment.paper import paper_table
from isvm.experiment.pooling import compare_table3, table3

METHODS = ("isvm", "ova", "ww")


def synthetic_records(seed: int = 0) -> pd.DataFrame:
    """Two data sets x two sizes x three methods x 3 subsamples x 2 gammas x 4 Cs."""
    gen = np.random.default_rng(seed)
    rows = []
    for ds, ns, method, sub, gamma, C in itertools.product(
        ("iris", "wine"), (50, 100), METHODS, range(3), (5.0, 10.0), (0.1, 0.6, 1.1, 1.6)
    ):
        base = {"isvm": 0.9, "ova": 0.88, "ww": 0.86}[method]
        acc = float(np.clip(base - 0.02 * abs(C - 1.1) + 0.01 * gen.standard_normal(), 0, 1))
        rows.append(
            {
                "dataset": ds,
                "Ns": ns,
                "method": method,
                "subsample": sub,
                "gamma": gamma,
                "C": C,
                "loo_accuracy": round(acc * ns) / ns,
                "seconds": gen.random(),
            }
        )
    return pd.DataFrame(rows)


def test_curve_stats_mean_and_band():
    recs = synthetic_records()
    stats = figures.curve_stats(recs)
    assert len(stats) == 2 * 2 * 3 * 2 * 4
    cell = recs[(recs.dataset == "iris") & (recs.Ns == 50) & (recs.method == "ova")]
    point = cell[(cell.gamma == 5.0) & (cell.C == 0.6)]["loo_accuracy"] * 100
    row = stats[
        (stats.dataset == "iris")
        & (stats.Ns == 50)
        & (stats.method == "ova")
        & (stats.gamma == 5.0)
        & (stats.C == 0.6)
    ].iloc[0]
    assert row["mean"] == pytest.approx(point.mean())
    assert row["lo"] == pytest.approx(np.percentile(point, 25))
    assert row["hi"] == pytest.approx(np.percentile(point, 75))
    assert row["n"] == 3


def test_near_best_share_by_hand():
    recs = pd.DataFrame(
        {
            "dataset": "iris",
            "Ns": 50,
            "subsample": [0] * 4 + [1] * 4,
            "method": ["isvm", "isvm", "ova", "ova"] * 2,
            "gamma": 5.0,
            "C": [0.1, 0.6] * 4,
            "loo_accuracy": [0.90, 0.85, 0.89, 0.80, 0.70, 0.70, 0.72, 0.60],
        }
    )
    share = figures.near_best_share(recs, tolerances=[0, 1, 5])
    got = share.set_index(["method", "tolerance"])["share"]
    # subsample 0: best 90; isvm {0, 5} -> x=0: 1/2, x=1: 1/2, x=5: 2/2; ova {1, 10}
    # subsample 1: best 72; isvm {2, 2} -> 0, 0, 1; ova {0, 12} -> 1/2, 1/2, 1/2
    assert got[("isvm", 0.0)] == pytest.approx((0.5 + 0.0) / 2)
    assert got[("isvm", 1.0)] == pytest.approx((0.5 + 0.0) / 2)
    assert got[("isvm", 5.0)] == pytest.approx((1.0 + 1.0) / 2)
    assert got[("ova", 0.0)] == pytest.approx((0.0 + 0.5) / 2)
    assert got[("ova", 1.0)] == pytest.approx((0.5 + 0.5) / 2)
    assert got[("ova", 5.0)] == pytest.approx((0.5 + 0.5) / 2)


def test_share_is_monotone_in_the_tolerance():
    share = figures.near_best_share(synthetic_records())
    for _, g in share.groupby(["dataset", "Ns", "method"]):
        assert np.all(np.diff(g.sort_values("tolerance")["share"].to_numpy()) >= 0)


def test_table3_differences_are_isvm_minus_rival():
    t3 = table3(synthetic_records())
    diff = figures.table3_differences(t3, (10, 25, 50))
    assert list(diff.columns[2:]) == [f"{r} {q}%" for r in ("1vA", "WW") for q in (10, 25, 50)]
    np.testing.assert_allclose(diff["WW 25%"], t3["isvm_25"] - t3["ww_25"])


def test_isvm_advantage_is_the_mean_difference_over_percentiles():
    paper = paper_table(3)
    adv = figures.isvm_advantage(paper, (10, 25, 50))
    assert len(adv) == 2 * len(paper) and set(adv["rival"]) == {"ova", "ww"}
    row = paper[(paper["dataset"] == "Yeast") & (paper["Ns"] == 500)].iloc[0]
    want = np.mean([row[f"isvm_{q}"] - row[f"ww_{q}"] for q in (10, 25, 50)])
    got = adv[(adv["dataset"] == "Yeast") & (adv["Ns"] == 500) & (adv["rival"] == "ww")]
    assert got["diff"].tolist() == pytest.approx([want])


def test_every_figure_is_written_as_png_and_pdf(tmp_path):
    recs = synthetic_records()
    caption = "Settings: synthetic records; n_subsamples: 3"
    written = figures.plot_curves(recs, tmp_path / "curves.png", dataset="wine", caption=caption)
    written += figures.plot_near_best(recs, tmp_path / "near.png", csv=tmp_path / "near.csv")
    t3 = table3(recs)
    written += figures.plot_table3_differences(t3, tmp_path / "heat.png", caption=caption)
    written += figures.plot_table3_vs_paper(compare_table3(t3), tmp_path / "scatter.png")
    written += figures.plot_isvm_advantage(t3, tmp_path / "advantage.png", caption=caption)
    assert [p.suffix for p in written] == [".png", ".pdf"] * 5
    for p in written:
        head = p.read_bytes()[:5]
        assert head == (b"\x89PNG\r" if p.suffix == ".png" else b"%PDF-")
    assert (tmp_path / "near.csv").read_text().startswith("dataset,Ns,method,tolerance,share")


def test_figures_are_deterministic(tmp_path):
    recs = synthetic_records()
    a = figures.plot_curves(recs, tmp_path / "a.png", dataset="iris", caption="x")
    b = figures.plot_curves(recs, tmp_path / "b.png", dataset="iris", caption="x")
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes(), pa.suffix


def test_scatter_without_common_cells(tmp_path):
    empty = pd.DataFrame(columns=["dataset", "Ns", "method", "percentile", "ours", "paper"])
    out = figures.plot_table3_vs_paper(empty, tmp_path / "s.png")
    assert all(p.exists() for p in out)


def test_cli(tmp_path):
    recs = synthetic_records()
    paths = []
    for ds, g in recs.groupby("dataset"):
        p = tmp_path / f"{ds}.parquet"
        g.to_parquet(p, index=False)
        paths.append(str(p))
    parser = argparse.ArgumentParser()
    figures_cli.add_arguments(parser)
    args = parser.parse_args(
        ["curves", "--records", *paths, "--dataset", "iris", "--out", str(tmp_path / "c.png")]
    )
    assert figures_cli.run(args) == 0 and (tmp_path / "c.pdf").exists()
    args = parser.parse_args(["near-best", "--records", *paths])
    assert figures_cli.run(args) == 2  # --out is required


def test_table3_figures_join_the_rows_of_several_runs(tmp_path, capsys):
    """Rows of Ns run separately (e.g. docs/results/ns50, ns100) draw as one table."""
    t3 = table3(synthetic_records())
    files = []
    for ns, g in t3.groupby("Ns"):
        files.append(tmp_path / f"t3_{ns}.csv")
        g.to_csv(files[-1], index=False)
        compare_table3(g).to_csv(tmp_path / f"vs_{ns}.csv", index=False)
    vs = sorted(tmp_path.glob("vs_*.csv"))
    parser = argparse.ArgumentParser()
    figures_cli.add_arguments(parser)
    out = tmp_path / "adv.png"
    args = parser.parse_args(
        [
            "table3",
            "--table3",
            *map(str, files),
            "--vs-paper",
            *map(str, vs),
            "--advantage",
            str(out),
        ]
    )
    assert len(files) > 1 and figures_cli.run(args) == 0 and out.exists()
    args = parser.parse_args(
        [
            "table3",
            "--table3",
            str(files[0]),
            str(files[0]),
            "--vs-paper",
            str(vs[0]),
            "--advantage",
            str(out),
        ]
    )
    assert figures_cli.run(args) == 2
    assert "the same cell in more than one file" in capsys.readouterr().err


def test_every_loo_method_has_its_own_style():
    from isvm.experiment.figures import METHOD_STYLE
    from isvm.loo import LOO_METHODS

    assert set(LOO_METHODS) <= set(METHOD_STYLE)
    styles = [(s["color"], s["marker"]) for s in METHOD_STYLE.values()]
    assert len(set(styles)) == len(styles)
