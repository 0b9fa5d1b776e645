"""Table 4 (likelihood-ratio tests) recomputed from the paper's Table 3."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from isvm.cli import main
from isvm.experiment import lrt
from isvm.experiment.lrt import (
    DEFAULT_PAIRS,
    TABLE3_COLUMNS,
    TABLE4_COLUMNS,
    TABLE4_TITLE,
    binomial_p_value,
    compare_table4,
    critical_value,
    k_from_printed,
    likelihood_ratio,
    lrt_long,
    lrt_table,
    pair_prefix,
    paper_round,
    parse_pairs,
    table3_columns,
    write_table4,
)
from isvm.experiment.paper import paper_table

#: The four cells where the published Tables 3 and 4 disagree under any tie rule:
#: (Ns, column) -> (our k, the paper's k, Table 3's ties in that cell).
EXPECTED_MISMATCHES = {
    (200, "svm_10"): (11, 12, "Wine"),
    (100, "svm_25"): (12, 13, "DNA"),
    (100, "ww_10"): (12, 13, "L. Sat"),
    (100, "ww_25"): (12, 11, ""),
}


@pytest.fixture(scope="module")
def comparison() -> pd.DataFrame:
    return compare_table4(paper_table(3))


def test_paper_table3_reproduces_20_of_24_cells(comparison: pd.DataFrame) -> None:
    bad = comparison[~comparison["match"]]
    listing = "\n".join(
        f"Ns={r.Ns} {r.rival}_{r.percentile}: ours {r.ours} (k={r.k}) paper {r.paper} "
        f"(k={r.k_paper}) ties={r.tied!r}"
        for r in bad.itertuples()
    )
    assert len(comparison) == 24
    assert int(comparison["match"].sum()) == 20, listing
    found = {
        (int(r.Ns), f"{r.rival}_{r.percentile}"): (int(r.k), int(r.k_paper), r.tied)
        for r in bad.itertuples()
    }
    assert found == EXPECTED_MISMATCHES, listing


def test_mismatches_differ_by_one_data_set_and_no_tie_rule_fixes_them(
    comparison: pd.DataFrame,
) -> None:
    bad = comparison[~comparison["match"]]
    assert ((bad["k"] - bad["k_paper"]).abs() == 1).all()
    # Three mismatches are ties the paper counted as ISVM wins ...
    tie_cells = bad[bad["n_ties"] > 0]
    assert len(tie_cells) == 3
    assert (tie_cells["k_paper"] == tie_cells["k"] + tie_cells["n_ties"]).all()
    # ... but three matching cells have ties the paper counted as losses ...
    tied_matches = comparison[comparison["match"] & (comparison["n_ties"] > 0)]
    assert len(tied_matches) == 3
    # ... so counting ties as wins also gives 20 of 24.
    assert int(compare_table4(paper_table(3), ties="win")["match"].sum()) == 20
    # The fourth has no tie: ISVM leads WW on 12 of 14 data sets, Wine by 0.01.
    cell = bad[(bad["Ns"] == 100) & (bad["rival"] == "ww") & (bad["percentile"] == 25)].iloc[0]
    assert cell["n_ties"] == 0 and cell["closest"] == "Wine +0.01"


def test_lrt_table_has_paper_layout(comparison: pd.DataFrame) -> None:
    ours, paper = lrt_table(paper_table(3)), paper_table(4)
    assert list(ours.columns) == list(paper.columns)
    assert ours["Ns"].tolist() == paper["Ns"].tolist() == [50, 100, 200, 500]
    assert ours["n_datasets"].tolist() == paper["n_datasets"].tolist() == [14, 14, 14, 9]
    raw = lrt_table(paper_table(3), rounding=None)
    assert raw.loc[0, "svm_10"] == pytest.approx(446.5715171263206)


def test_thresholds_paper_convention_and_exact() -> None:
    # The paper's thresholds: smallest c with P(LR > c | H0) <= alpha.
    assert paper_round(critical_value(14, 0.05, convention="paper")) == 3.77
    assert paper_round(critical_value(14, 0.01, convention="paper")) == 11.35
    assert paper_round(critical_value(9, 0.05, convention="paper")) == 4.35
    assert paper_round(critical_value(9, 0.01, convention="paper")) == 22.17
    # The level-alpha test "reject when LR >= c" needs one more data set.
    assert critical_value(14, 0.05) == pytest.approx(likelihood_ratio(11, 14))
    assert critical_value(14, 0.01) == pytest.approx(likelihood_ratio(12, 14))
    assert critical_value(9, 0.05) == pytest.approx(likelihood_ratio(8, 9))
    assert critical_value(9, 0.01) == 512.0
    assert critical_value(5, 0.01) == np.inf  # even 5 of 5 has p = 1/32
    # 3.77 (k = 10 of 14) is not significant at 5% by the exact binomial test.
    assert binomial_p_value(10, 14) == pytest.approx(0.0898, abs=1e-4)
    assert binomial_p_value(11, 14) <= 0.05
    with pytest.raises(ValueError, match="convention"):
        critical_value(14, 0.05, convention="other")


def test_likelihood_ratio_edge_cases() -> None:
    for n in (1, 9, 14):
        for k in range(n // 2 + 1):
            assert likelihood_ratio(k, n) == 1.0
        assert likelihood_ratio(n, n) == 2.0**n
        values = [likelihood_ratio(k, n) for k in range(n // 2 + 1, n + 1)]
        assert all(b > a > 1 for a, b in zip(values, values[1:], strict=False))
    assert likelihood_ratio(10, 14) == pytest.approx(3.7745693157359748)
    for k, n in [(-1, 5), (6, 5), (0, 0)]:
        with pytest.raises(ValueError):
            likelihood_ratio(k, n)


def test_binomial_p_value_matches_scipy_binomtest() -> None:
    for n in (9, 14):
        for k in range(n + 1):
            expected = stats.binomtest(k, n, 0.5, alternative="greater").pvalue
            assert binomial_p_value(k, n) == pytest.approx(expected, rel=1e-12)


def test_paper_rounding_truncates() -> None:
    printed = {
        (13, 14): 446,
        (12, 14): 52,
        (10, 14): 3.77,
        (11, 14): 11.35,
        (9, 14): 1.78,
        (8, 9): 22.17,
        (7, 9): 4.35,
        (5, 9): 1.05,
    }
    for (k, n), value in printed.items():
        assert paper_round(likelihood_ratio(k, n)) == value
        assert k_from_printed(value, n) == k
    # Ordinary rounding would print 447, 53, 11.36, 1.79 and 1.06 instead.
    assert round(likelihood_ratio(11, 14), 2) == 11.36
    assert k_from_printed(1.0, 14) is None


def test_pooled_sizes_parameter() -> None:
    t3 = paper_table(3)
    long = lrt_long(t3)
    assert sorted(long["Ns"].unique()) == [50, 100, 200, 500]
    split = lrt_table(t3, pooled_sizes={})
    assert split["Ns"].tolist() == [50, 100, 140, 150, 200, 500]
    assert split.set_index("Ns").loc[[140, 150, 200], "n_datasets"].tolist() == [1, 1, 12]


def test_missing_means_reduce_n_and_duplicates_are_refused() -> None:
    t3 = paper_table(3)
    t3.loc[t3["dataset"] == "Abalone", "ww_10"] = np.nan
    long = lrt_long(t3).set_index(["Ns", "column"])
    assert long.loc[(50, "ww_10"), "n"] == 13
    assert long.loc[(50, "svm_10"), "n"] == 14
    dup = pd.concat([paper_table(3), paper_table(3).iloc[[0]]])
    with pytest.raises(ValueError, match="twice"):
        lrt_table(dup)


def test_missing_column_is_named() -> None:
    with pytest.raises(ValueError, match="isvm_25"):
        lrt_table(paper_table(3).drop(columns="isvm_25"))
    with pytest.raises(ValueError, match="ties"):
        lrt_table(paper_table(3), ties="half")


def test_cli_round_trip(tmp_path, capsys) -> None:
    out = tmp_path / "t4.csv"
    src = tmp_path / "t3.csv"
    paper_table(3).to_csv(src, index=False)
    assert main(["lrt", str(src), "--out", str(out), "--details", str(tmp_path / "d")]) == 0
    written = pd.read_csv(out)
    paper = paper_table(4)
    assert list(written.columns) == list(paper.columns)
    assert written["Ns"].tolist() == paper["Ns"].tolist()
    same = np.isclose(written.iloc[:, 2:].to_numpy(), paper.iloc[:, 2:].to_numpy())
    assert int(same.sum()) == 20
    text = capsys.readouterr().out
    assert "20 of 24 cells match" in text and "446**" in text
    assert (tmp_path / "t4.md").exists() and (tmp_path / "d_vs_paper.csv").exists()


def test_cli_malformed_csv(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    paper_table(3).drop(columns="ww_50").to_csv(bad, index=False)
    assert main(["lrt", str(bad)]) == 2
    assert "ww_50" in capsys.readouterr().err
    assert main(["lrt", str(tmp_path / "absent.csv")]) == 2
    assert main(["lrt", str(bad), "--out", str(tmp_path / "t4.txt")]) == 2


def test_write_table4(tmp_path) -> None:
    paths = write_table4(paper_table(3), tmp_path / "table4", settings={"source": "paper"})
    assert [p.name for p in paths] == [
        "table4.csv",
        "table4.md",
        "table4_long.csv",
        "table4_long.md",
        "table4_vs_paper.csv",
        "table4_vs_paper.md",
    ]
    assert "20 of 24 cells match" in (tmp_path / "table4_vs_paper.md").read_text()


def test_compare_table4_ran_only_keeps_the_sizes_of_this_run() -> None:
    t3 = paper_table(3)
    t3 = t3[t3["Ns"] == 50]
    every = compare_table4(t3)
    ran = compare_table4(t3, ran_only=True)
    assert sorted(set(every["Ns"])) == [50, 100, 200, 500]
    assert set(ran["Ns"]) == {50} and len(ran) == 6  # 2 rivals x 3 percentiles
    assert ran["ours"].notna().all()


def test_table4_of_a_run_without_isvm_and_its_rivals(tmp_path):
    """A run of other methods (e.g. methods: [isvm_neg]) still writes Table 4's files."""
    empty = paper_table(3).iloc[:0]
    paths = write_table4(empty, tmp_path / "t4", settings={"grid": "test"})
    assert sorted(p.name for p in paths) == sorted(
        f"t4{s}.{e}" for s in ("", "_long", "_vs_paper") for e in ("csv", "md")
    )
    assert "nothing to test" in (tmp_path / "t4.md").read_text()


# --- Table 4's pairs (method, rival) -------------------------------------------------

#: Five data sets at Ns = 50, chosen so that the sign tests can be counted by hand.
SMALL_T3 = {
    "isvm": {10: [90, 80, 70, 60, 50], 25: [90, 80, 70, 60, 50], 50: [60] * 5},
    "ww": {10: [95, 85, 75, 65, 55], 25: [92, 70, 60, 50, 40], 50: [40, 60, 60, 40, 40]},
    "svc": {10: [85, 75, 65, 55, 50], 25: [91, 81, 71, 61, 51], 50: [np.nan] + [50] * 4},
}
EXTRA_PAIRS = (("isvm", "svc"), ("ww", "svc"))


def _small_table3() -> pd.DataFrame:
    t3 = pd.DataFrame({"dataset": list("ABCDE"), "Ns": 50})
    for method, cells in SMALL_T3.items():
        for q, values in cells.items():
            t3[f"{method}_{q}"] = np.array(values, dtype=float)
    return t3


def test_default_pairs_write_the_paper_files(tmp_path) -> None:
    """The paper's pairs, by default or named, write the same bytes; no pairs note."""
    t3 = paper_table(3)
    default = write_table4(t3, tmp_path / "a" / "table4", settings={"source": "paper"})
    named = write_table4(
        t3,
        tmp_path / "b" / "table4",
        settings={"source": "paper"},
        pairs=[["isvm", "ova"], ["isvm", "ww"]],
    )
    assert [p.read_bytes() for p in default] == [p.read_bytes() for p in named]
    md = (tmp_path / "a" / "table4.md").read_text()
    assert md.startswith(f"# {TABLE4_TITLE}\n") and "Pairs (" not in md
    assert lrt.__doc__.strip() in md  # the notes are the module's conventions
    assert list(lrt_table(t3).columns) == list(TABLE4_COLUMNS) == list(paper_table(4).columns)
    assert TABLE3_COLUMNS == table3_columns(DEFAULT_PAIRS) and DEFAULT_PAIRS == (
        ("isvm", "ova"),
        ("isvm", "ww"),
    )


def test_extra_pairs_leave_the_paper_pairs_cells_alone() -> None:
    t3 = paper_table(3).assign(svc_10=50.0, svc_25=50.0, svc_50=50.0)
    both = lrt_long(t3, pairs=DEFAULT_PAIRS + EXTRA_PAIRS)
    paper = both[both["rival"].isin(["svm", "ww"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(paper, lrt_long(t3))
    wide = lrt_table(t3, pairs=DEFAULT_PAIRS + EXTRA_PAIRS)
    pd.testing.assert_frame_equal(wide[list(TABLE4_COLUMNS)], lrt_table(t3))
    # the comparison with the paper keeps to its pairs
    pd.testing.assert_frame_equal(
        compare_table4(t3, pairs=DEFAULT_PAIRS + EXTRA_PAIRS), compare_table4(t3)
    )
    assert compare_table4(t3, pairs=EXTRA_PAIRS).empty


def test_extra_pairs_counted_by_hand() -> None:
    t3 = _small_table3()  # no ova column: the pairs need none
    raw = lrt_table(t3, pairs=EXTRA_PAIRS, rounding=None).set_index("Ns")
    assert list(raw.columns) == ["n_datasets"] + [
        f"{p}_{q}" for p in ("isvm_vs_svc", "ww_vs_svc") for q in (10, 25, 50)
    ]
    # isvm vs svc: 10%: 4 wins and a tie (E) of 5; 25%: no win; 50%: 4 of 4 (A lacks svc).
    # ww vs svc: 10%: 5 of 5; 25%: A only; 50%: 2 of 4 (B, C).
    expected = {
        "isvm_vs_svc_10": (0.8**4 * 0.2) * 2**5,
        "isvm_vs_svc_25": 1.0,
        "isvm_vs_svc_50": 2.0**4,
        "ww_vs_svc_10": 2.0**5,
        "ww_vs_svc_25": 1.0,
        "ww_vs_svc_50": 1.0,
    }
    assert raw.loc[50].drop("n_datasets").to_dict() == pytest.approx(expected)
    assert raw.loc[50, "n_datasets"] == 5
    long = lrt_long(t3, pairs=EXTRA_PAIRS).set_index("column")
    assert long.loc["isvm_vs_svc_10", ["n", "k", "n_ties", "tied"]].tolist() == [5, 4, 1, "E"]
    assert long.loc["isvm_vs_svc_10", "p_value"] == pytest.approx(6 / 32)
    assert long.loc["isvm_vs_svc_50", ["n", "k"]].tolist() == [4, 4]
    assert long.loc["ww_vs_svc_50", ["n", "k"]].tolist() == [4, 2]
    assert long.loc["ww_vs_svc_10", "p_value"] == pytest.approx(1 / 32)
    assert lrt_table(t3, pairs=EXTRA_PAIRS, ties="win").loc[0, "isvm_vs_svc_10"] == 32
    # the reverse pair counts the rival's wins
    rev = lrt_long(t3, pairs=[("svc", "isvm")]).set_index("column")
    assert rev.loc["svc_vs_isvm_25", ["n", "k"]].tolist() == [5, 5]


def test_pairs_are_checked() -> None:
    assert pair_prefix(("isvm", "ova")) == "svm" and pair_prefix(("ova", "isvm")) == "ova_vs_isvm"
    assert parse_pairs(["isvm:ova", " ww : svc "]) == (("isvm", "ova"), ("ww", "svc"))
    for items, match in [
        (["isvm-ova"], "METHOD:RIVAL"),
        (["isvm:"], "METHOD:RIVAL"),
        (["a:b:c"], "METHOD:RIVAL"),
        (["isvm:isvm"], "against itself"),
        (["isvm:ova", "isvm:ova"], "repeat"),
        ([], "at least one"),
    ]:
        with pytest.raises(ValueError, match=match):
            parse_pairs(items)
    with pytest.raises(ValueError, match="svc_10"):
        lrt_table(paper_table(3), pairs=EXTRA_PAIRS)


def test_write_table4_names_the_pairs(tmp_path) -> None:
    t3 = _small_table3().assign(ova_10=0.0, ova_25=0.0, ova_50=0.0)
    pairs = (("isvm", "ova"), *EXTRA_PAIRS)
    write_table4(t3, tmp_path / "t4", settings={"source": "test"}, pairs=pairs)
    md = (tmp_path / "t4.md").read_text()
    assert "H0: rival better than or equal to the method" in md
    assert "isvm vs svc (isvm_vs_svc_q), ww vs svc (ww_vs_svc_q)" in md
    comp = pd.read_csv(tmp_path / "t4_vs_paper.csv")
    assert set(comp["rival"]) == {"svm"} and len(comp) == 3
    vs = (tmp_path / "t4_vs_paper.md").read_text()
    assert "no numbers for isvm vs svc, ww vs svc" in vs and "0 of 3 cells match" in vs
    write_table4(t3.iloc[:0], tmp_path / "e", settings={}, pairs=EXTRA_PAIRS)
    assert (
        "the methods of isvm vs svc, ww vs svc: nothing to test" in (tmp_path / "e.md").read_text()
    )
    assert pd.read_csv(tmp_path / "e.csv").columns[-1] == "ww_vs_svc_50"


def test_cli_lrt_comparisons(tmp_path, capsys) -> None:
    src = tmp_path / "t3.csv"
    _small_table3().to_csv(src, index=False)
    out = tmp_path / "t4.csv"
    args = ["lrt", str(src), "--out", str(out), "--comparisons", "isvm:svc", "ww:svc"]
    assert main(args) == 0
    written = pd.read_csv(out)
    assert written.loc[0, "isvm_vs_svc_10"] == 2.62 and written.loc[0, "ww_vs_svc_10"] == 32
    text = capsys.readouterr().out
    assert "isvm_vs_svc_10" in text and "no pair of the paper's" in text
    assert main(["lrt", str(src)]) == 2  # the paper's pairs need ova
    assert "ova_10" in capsys.readouterr().err
    assert main(["lrt", str(src), "--comparisons", "isvm"]) == 2
    assert "METHOD:RIVAL" in capsys.readouterr().err


def _records(accuracy: dict[str, list[float]]) -> pd.DataFrame:
    """One LOO record per (data set A-E, method) at Ns = 50: Table 3 is 100 x accuracy."""
    return pd.DataFrame(
        [
            {"dataset": ds, "Ns": 50, "method": m, "subsample": 0, "gamma": 1.0, "C": 1.0}
            | {"loo_accuracy": acc}
            for m, values in accuracy.items()
            for ds, acc in zip("ABCDE", values, strict=True)
        ]
    )


def test_cli_tables_comparisons(tmp_path, capsys) -> None:
    recs = _records(
        {
            "isvm": [0.9, 0.8, 0.7, 0.6, 0.5],
            "ova": [0.8] * 5,
            "ww": [0.92, 0.82, 0.72, 0.62, 0.52],
            "svc": [0.86, 0.76, 0.66, 0.56, 0.5],
        }
    )
    path = tmp_path / "recs.parquet"
    recs.to_parquet(path)
    base = ["tables", "--records", str(path), "--out-dir", str(tmp_path / "t")]
    base += ["--timing-dir", str(tmp_path / "timing"), "--methods", "isvm", "ova", "ww", "svc"]
    assert main([*base, "--comparisons", "isvm:ova", "isvm:svc", "ww:svc"]) == 0
    t4 = pd.read_csv(tmp_path / "t" / "table4.csv")
    assert list(t4.columns[2:5]) == ["svm_10", "svm_25", "svm_50"]
    # isvm > ova on A only (B ties); isvm > svc on 4 of 5 (E ties); ww > svc on all 5
    assert t4.loc[0, ["svm_10", "isvm_vs_svc_10", "ww_vs_svc_10"]].tolist() == [1, 2.62, 32]
    assert "ww vs svc (ww_vs_svc_q)" in (tmp_path / "t" / "table4.md").read_text()
    capsys.readouterr()
    # a pair whose method the run lacks (svc left out by --methods) is refused, in one line
    bad = [*base[:-1], "--comparisons", "isvm:ova", "isvm:svc"]
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pair(s) isvm:svc name" in err
    assert "methods: svc (with records: isvm, ova, ww)" in err
