"""Check (and write) the numbers of docs/results/README.md and README.md's "## Results".

Run through ``python docs/results/claims.py --check`` / ``--write``; see claims.py.

Every number of those texts is exactly one of:

* inside a **generated block** (``<!-- generated: NAME -->`` ... ``<!-- /generated -->``):
  the block must equal ``claims.BLOCKS[NAME]`` rendered from the tables;
* a field of a **fact** (:data:`FACTS`): a fragment of the prose with ``{field:format}``
  slots and a function computing the fields from the tables; the fragment, filled in,
  must be in the text (each slot printed as its format prints the computed value). A
  fact may also carry ``holds``, a statement about the tables its words make (a trend,
  an order) that must be true;
* a **label** (:data:`LABELS`): a row (Ns = 200), a column (10%), a table's number, a
  date; those naming a row or a count of the paper's design are checked against the
  tables too;
* **exempt** (:data:`EXEMPT`): a study setting, a fact about a data set, a measured run
  cost or a number of a run whose tables are not committed, each with its reason; an
  exempt fragment must still be in the text (a stale exemption is an error). An exempt
  entry may instead name whole sections by their heading (``sections=("### DNA
  readings",)``): none of their prose numbers is checked (generated blocks inside still
  are), and ``--check`` prints each such section with its reason.

A number that is none of these (outside code) is an error, so a number added to the
prose without a source fails the check. Literal digits in a fact's fragment are not
covered by the fact: they must be labels or exempt.

A new section: its numbers computed from committed tables get a ``Fact`` each (the
fragment as printed, with ``{name:format}`` where a number goes, and a function of
:class:`claims.Tables` returning the values; a new folder is read with ``t.read`` or
``pd.read_csv(claims.HERE / ...)``); a table of numbers gets a generated block
(``claims.BLOCKS``); settings and costs go into an ``Exempt`` with their reason; a section
whose numbers are not from committed tables at all is an ``Exempt`` with ``sections``.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from claims import (
    BLOCKS,
    METHODS,
    PERCENTILES,
    POWER_AT,
    Tables,
    exact_k,
    fmt_range,
    fmt_seq,
    paper_cells,
    paper_k,
    power,
    render,
    table4_ns,
    word,
)
from scipy import stats

from isvm.experiment.lrt import compare_table4, critical_value, likelihood_ratio, paper_round
from isvm.experiment.paper import paper_table

REPO = Path(__file__).resolve().parents[2]
RESULTS = "docs/results/README.md"
README = "README.md"
#: the files checked, and the section of each (None: all of it)
DOCS: dict[str, str | None] = {RESULTS: None, README: "## Results"}

BLOCK_RE = re.compile(
    r"^<!-- generated: (?P<name>\S+) -->\n(?P<body>.*?)^<!-- /generated -->$",
    re.MULTILINE | re.DOTALL,
)
NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?"


@dataclass(frozen=True)
class Fact:
    """A fragment of the prose whose ``{fields}`` are computed from the tables."""

    name: str
    text: str
    values: Callable[[Tables], dict] = field(default=lambda t: {})
    holds: Callable[[Tables], bool] | None = None
    doc: str = RESULTS


@dataclass(frozen=True)
class Label:
    """Numbers that name something (a row, a column, a table); ``allowed`` checks them."""

    name: str
    pattern: str
    allowed: Callable[[Tables], set[int]] | None = None


@dataclass(frozen=True)
class Exempt:
    """Fragments (or whole sections, by heading) whose numbers are not from the tables,
    and why."""

    reason: str
    fragments: tuple[str, ...] = ()
    doc: str = RESULTS
    sections: tuple[str, ...] = ()


# --- helpers for the facts -------------------------------------------------------------


def names_list(items: list[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def lr(value: float) -> str:
    return f"{value:g}"


def t4_seq(t: Tables, rival: str, q: int, rows=None, col: str = "ours", sep=" -> ") -> str:
    rows = t.rows if rows is None else rows
    return sep.join(lr(t.t4(r, rival, q)[col]) for r in rows)


def gt_seq(t: Tables, rival: str, rows, paper: bool = False, sep: str = ", ") -> str:
    col = f"{'paper_' if paper else ''}isvm_gt_{rival}"
    return sep.join(str(int(t.stat(r, col))) for r in rows)


def stat_seq(t: Tables, col: str, spec: str, sep: str = ", ") -> str:
    return fmt_seq([t.stat(r, col) for r in t.rows], spec, sep)


def off_seq(t: Tables, dataset: str, method: str = "isvm") -> str:
    return fmt_seq(t.offsets(dataset, method), "+.1f")


def decreasing(values: list[float]) -> bool:
    return all(a > b for a, b in zip(values, values[1:], strict=False))


def increasing(values: list[float]) -> bool:
    return all(a < b for a, b in zip(values, values[1:], strict=False))


def p_exact(k: int, n: int) -> float:
    return float(stats.binom.sf(k - 1, n, 0.5))


def timing_total(t: Tables, row: int, dataset: str = "All") -> float:
    return sum(t.timing(row, dataset)[f"{m}_total_s"] for m in METHODS)


def dataset_costs(t: Tables, row: int) -> dict[str, float]:
    return {d: timing_total(t, row, d) for d in t.datasets(row)}


def timing_fields(t: Tables, row: int) -> dict:
    line = t.timing(row)
    total = timing_total(t, row)
    return {
        "hours": total / 3600,
        "total": total,
        **{m: line[f"{m}_total_s"] for m in METHODS},
    }


def neg_total(t: Tables) -> float:
    return t.timing(50, "All", "isvm_neg")["isvm_neg_total_s"]


def neg_capped(t: Tables) -> dict:
    """Capped fits and fits of the isvm_neg run (Ns = 50)."""
    d = pd.read_csv(t.folders[50] / "isvm_neg" / "loo_diagnostics.csv")
    fits = int((d["n_subsamples"] * d["n_grid_points"]).sum())
    return {"n": int(d["capped_fits"].sum()), "fits": fits}


def capped_fields(t: Tables, row: int) -> dict:
    return {
        "n": t.capped(row),
        "fits": t.fits(row),
        **{m: t.capped(row, m) for m in METHODS},
    }


def capped_only_shuttle(t: Tables, row: int) -> bool:
    return t.capped(row) == t.capped(row, dataset="Shuttle")


def ww_lead_near_ties(t: Tables) -> dict:
    row, q, points = t.rows[-1], 10, 0.05
    near = t.near_ties(row, "ww", q, points)
    k = int(t.t4(row, "ww", q)["k"])
    wins = sum(t.lead(d, row, "ww", q) > 0 for d in near)
    return {
        "q": q,
        "count": len(near),
        "n": t.n_datasets(row),
        "points": points,
        "names": ", ".join(near),
        "lo": k - wins,
        "hi": k + len(near) - wins,
        "paper": lr(t.t4(row, "ww", q)["paper"]),
    }


def within(t: Tables, row: int, points: float) -> list[str]:
    return [
        d for d in t.datasets(row) if all(abs(t.lead(d, row, r)) < points for r in ("ova", "ww"))
    ]


def sens_range(t: Tables, column, spec: str, **where) -> str:
    """fmt_range of sensitivity.csv columns over rows matching ``where`` (lists allowed)."""
    s = t.sensitivity
    for k, v in where.items():
        s = s[s[k].isin(v if isinstance(v, list | tuple) else [v])]
    cols = [column] if isinstance(column, str) else list(column)
    return fmt_range(s[cols].to_numpy().ravel().tolist(), spec)


UNPOOLED = ["per_subsample", "mean_then_rank"]

#: the rows' Vowel (and the sensitivity study's): all 990 rows since 2026-12-06
VOWEL = "Vowel (990 rows)"


def vowel_sens(t: Tables, scaling: str) -> str:
    s = t.sensitivity_datasets
    s = s[(s["dataset"] == VOWEL) & (s["scaling"] == scaling) & s["pooling"].isin(UNPOOLED)]
    return fmt_range(s[[f"diff_{m}" for m in METHODS]].to_numpy().ravel().tolist(), "+.1f", " to ")


def vowel_528_offsets(method: str = "isvm") -> list[float]:
    """The 528-row `vowel`'s offset per row (the rows' Vowel before 2026-12-06;
    docs/results/vowel_528, the same subsamples and settings)."""
    c = paper_cells("vowel_528")
    return c[c["method"] == method].groupby("Ns")["diff"].mean().tolist()


def paper_p(t: Tables, row: int, rival: str, q: int) -> float:
    """The exact one-sided sign-test p-value of the paper's k at a Table 4 cell."""
    cell = t.t4(row, rival, q)
    return float(stats.binom.sf(int(cell["k_paper"]) - 1, int(cell["n"]), 0.5))


#: the row-50 cells whose uncertified share the prose groups (docs/results/README.md)
UNCERT_50_SOME = ["E. coli", "Segment", "Shuttle", "Vehicle"]


def uncert_others(t: Tables, row: int, named: list[str], also: tuple[str, str] | None = None):
    d = t.diagnostics
    d = d[(d["row"] == row) & ~d["dataset"].isin(named)]
    if also is not None:
        d = d[~((d["dataset"] == also[0]) & (d["method"] == also[1]))]
    return float(d["pct"].max())


def uncert_one(t: Tables, row: int, dataset: str, method: str) -> float:
    d = t.diagnostics
    return float(
        d.loc[(d["row"] == row) & (d["dataset"] == dataset) & (d["method"] == method), "pct"].iloc[
            0
        ]
    )


def mean_accuracy(t: Tables, row: int, method: str) -> float:
    tt = t.table3[t.table3["row"] == row]
    return float(tt[[f"{method}_{q}" for q in PERCENTILES]].to_numpy().mean())


def behind(t: Tables, row: int) -> list[float]:
    """How far ISVM is behind the best at 10% where it is not the best."""
    out = []
    for d in t.datasets(row):
        best = t.best(d, row, 10)
        if "isvm" not in best:
            out.append(t.value(d, row, best[0], 10) - t.value(d, row, "isvm", 10))
    return out


def ova_best(t: Tables, row: int, source: str = "ours") -> list[str]:
    return [d for d in t.datasets(row) if t.best(d, row, 10, source) == ["ova"]]


def thresholds(t: Tables) -> dict:
    n1, n2 = table4_ns(t)
    return {
        "n1": n1,
        "n2": n2,
        "row": t.rows[-1],
        **{
            f"{k}": lr(paper_round(critical_value(n, a, convention="paper")))
            for k, n, a in (("a", n1, 0.05), ("b", n1, 0.01), ("c", n2, 0.05), ("d", n2, 0.01))
        },
    }


@functools.cache
def paper_table4_matches() -> tuple[int, int]:
    c = compare_table4(paper_table(3))
    return int(c["match"].sum()), len(c)


# --- the facts, in the order of the text ------------------------------------------------

R = (50, 100, 200)

FACTS: list[Fact] = [
    # introduction
    Fact(
        "intro.cells",
        "all {n} of the paper's cells",
        lambda t: {"n": int(t.comparison[["dataset", "Ns"]].drop_duplicates().shape[0])},
    ),
    Fact(
        "intro.ns500_datasets",
        "the {n} data sets large enough for it",
        lambda t: {"n": word(t.n_datasets(500))},
    ),
    Fact(
        "intro.ns500_hours",
        "their cost: {h:.1f} core-hours by the records' own clocks",
        lambda t: {"h": timing_total(t, 500) / 3600},
    ),
    # the claims: Table 4's thresholds and power
    Fact(
        "table4.thresholds",
        "the paper's thresholds for n = {n1} are {a} at 5% and {b} at 1%, for row {row}'s "
        "n = {n2} the paper marks {c} with * and {d} with **",
        thresholds,
    ),
    Fact(
        "power.exact_k",
        "With n = {n1} an exact one-sided test needs k = {a} for 5% and k = {b} for 1%; "
        "with row {row}'s n = {n2} it needs k = {c} and k = {d}.",
        lambda t: {
            "n1": table4_ns(t)[0],
            "n2": table4_ns(t)[1],
            "row": t.rows[-1],
            "a": exact_k(table4_ns(t)[0], 0.05),
            "b": exact_k(table4_ns(t)[0], 0.01),
            "c": exact_k(table4_ns(t)[1], 0.05),
            "d": exact_k(table4_ns(t)[1], 0.01),
        },
    ),
    Fact(
        "power.paper_marks",
        "its * on {a} (k = {ka} of {n1}) and on {b} (k = {kb} of {n2}) stands for an exact p "
        "of {p:.2f}",
        lambda t: {
            "n1": table4_ns(t)[0],
            "n2": table4_ns(t)[1],
            "ka": paper_k(table4_ns(t)[0], 0.05),
            "kb": paper_k(table4_ns(t)[1], 0.05),
            "a": lr(paper_round(likelihood_ratio(paper_k(table4_ns(t)[0], 0.05), table4_ns(t)[0]))),
            "b": lr(paper_round(likelihood_ratio(paper_k(table4_ns(t)[1], 0.05), table4_ns(t)[1]))),
            "p": p_exact(paper_k(table4_ns(t)[0], 0.05), table4_ns(t)[0]),
        },
        holds=lambda t: all(
            round(p_exact(paper_k(n, 0.05), n), 2)
            == round(p_exact(paper_k(table4_ns(t)[0], 0.05), table4_ns(t)[0]), 2)
            and p_exact(paper_k(n, 0.05), n) > 0.05
            for n in table4_ns(t)
        ),
    ),
    Fact(
        "power.at_70",
        "if ISVM were truly higher on {pct:.0f}% of the data sets, {n2} data sets would reach "
        "the k = {k2} that 5% needs with probability {p2:.2f}, {n1} data sets the k = {k1} "
        "with probability {p1:.2f}",
        lambda t: {
            "pct": 100 * POWER_AT[1],
            "n1": table4_ns(t)[0],
            "n2": table4_ns(t)[1],
            "k1": exact_k(table4_ns(t)[0], 0.05),
            "k2": exact_k(table4_ns(t)[1], 0.05),
            "p1": power(table4_ns(t)[0], exact_k(table4_ns(t)[0], 0.05), POWER_AT[1]),
            "p2": power(table4_ns(t)[1], exact_k(table4_ns(t)[1], 0.05), POWER_AT[1]),
        },
    ),
    # claim 1: small Ns
    Fact(
        "claim1.wins",
        "ISVM is above 1-vs-all in {o} of {cells} cells (rows 50, 100, 200; the paper: {po}) "
        "and above WW in {w} (paper: {pw})",
        lambda t: {
            "o": names_list(gt_seq(t, "ova", R).split(", ")),
            "po": gt_seq(t, "ova", R, paper=True),
            "w": names_list(gt_seq(t, "ww", R).split(", ")),
            "pw": gt_seq(t, "ww", R, paper=True),
            "cells": t.cells(50),
        },
    ),
    Fact(
        "claim1.lr_50_100",
        "both rivals in the 10% and 25% columns of rows 50 and 100 (LR {lo} to {hi}, where "
        "the paper rejects them too, against WW at Ns = 50 at 5% only)",
        lambda t: {
            "lo": lr(
                min(
                    t.t4(r, v, q)["ours"]
                    for r in (50, 100)
                    for v in ("ova", "ww")
                    for q in (10, 25)
                )
            ),
            "hi": lr(
                max(
                    t.t4(r, v, q)["ours"]
                    for r in (50, 100)
                    for v in ("ova", "ww")
                    for q in (10, 25)
                )
            ),
        },
        holds=lambda t: (
            min(t.t4(r, v, q)["lr"] for r in (50, 100) for v in ("ova", "ww") for q in (10, 25))
            >= critical_value(t.n_datasets(50), 0.01, convention="paper")
            and t.t4(50, "ww", 25)["paper"]
            < paper_round(critical_value(t.n_datasets(50), 0.01, convention="paper"))
        ),
    ),
    Fact(
        "claim1.lr_200",
        "at Ns = 200 against WW ({w} at 10%, {w25} at 25%; the paper {pw} in both) and "
        "against 1-vs-all at 10% and 25% ({o} in both; exact p = {p:.3f}; the paper {po} and "
        "{po25}*)",
        lambda t: {
            "w": lr(t.t4(200, "ww", 10)["ours"]),
            "w25": lr(t.t4(200, "ww", 25)["ours"]),
            "pw": lr(t.t4(200, "ww", 10)["paper"]),
            "o": lr(t.t4(200, "ova", 10)["ours"]),
            "p": t.t4(200, "ova", 10)["p_value"],
            "po": lr(t.t4(200, "ova", 10)["paper"]),
            "po25": lr(t.t4(200, "ova", 25)["paper"]),
        },
        holds=lambda t: (
            t.t4(200, "ww", 10)["paper"] == t.t4(200, "ww", 25)["paper"]
            and t.t4(200, "ova", 10)["ours"] == t.t4(200, "ova", 25)["ours"]
            and t.t4(200, "ova", 10)["p_value"] < 0.05
        ),
    ),
    Fact(
        "claim1.median",
        "50% column: k = {k} of {n} against 1-vs-all (LR {lrs}: not significant), where the "
        "paper has {p50}* in rows 50 and 100 and, against WW at Ns = 200, {pw}**",
        lambda t: {
            "k": names_list([str(int(t.t4(r, "ova", 50)["k"])) for r in R]),
            "n": t.n_datasets(50),
            "lrs": ", ".join(lr(t.t4(r, "ova", 50)["ours"]) for r in R),
            "p50": lr(t.t4(50, "ova", 50)["paper"]),
            "pw": lr(t.t4(200, "ww", 50)["paper"]),
        },
        holds=lambda t: (
            t.t4(50, "ova", 50)["paper"] == t.t4(100, "ova", 50)["paper"]
            and all(t.t4(r, "ova", 50)["p_value"] > 0.05 for r in R)
        ),
    ),
    Fact(
        "claim1.corr",
        "(correlation {a}, and {b} at Ns = 500); ISVM - WW does not ({w})",
        lambda t: {
            "a": fmt_seq([t.stat(r, "corr_isvm_minus_ova") for r in R], ".2f", ", "),
            "b": f"{t.stat(500, 'corr_isvm_minus_ova'):.2f}",
            "w": stat_seq(t, "corr_isvm_minus_ww", ".2f"),
        },
    ),
    Fact(
        "claim1.ww_lead",
        "our WW lead is smaller than the paper's ({o} against {p} points)",
        lambda t: {
            "o": stat_seq(t, "isvm_minus_ww", "+.2f", " / "),
            "p": stat_seq(t, "paper_isvm_minus_ww", "+.2f", " / "),
        },
        holds=lambda t: all(
            t.stat(r, "isvm_minus_ww") < t.stat(r, "paper_isvm_minus_ww") for r in t.rows
        ),
    ),
    # claim 2: larger Ns
    Fact(
        "claim2.wins_ova",
        "Against 1-vs-all the cells ISVM wins fall {a} -> {b} -> {c} of {cells} -> {d} of "
        "{cells5} (the paper's {pa} -> {pb} -> {pc} -> {pd} of {cells5}) and Table 4's LR at "
        "10% {lrs}; at Ns = 500 that is k = {k} of {n} (exact p = {p:.2f}), the paper's k = "
        "{kp} ({pl}, which it marks *; exact p = {pp:.2f})",
        lambda t: {
            **dict(zip("abcd", (int(t.stat(r, "isvm_gt_ova")) for r in t.rows), strict=True)),
            **{
                "p" + k: v
                for k, v in zip(
                    "abcd", (int(t.stat(r, "paper_isvm_gt_ova")) for r in t.rows), strict=True
                )
            },
            "cells": t.cells(50),
            "cells5": t.cells(500),
            "lrs": t4_seq(t, "ova", 10),
            "k": int(t.t4(500, "ova", 10)["k"]),
            "n": int(t.t4(500, "ova", 10)["n"]),
            "p": t.t4(500, "ova", 10)["p_value"],
            "kp": int(t.t4(500, "ova", 10)["k_paper"]),
            "pl": lr(t.t4(500, "ova", 10)["paper"]),
            "pp": paper_p(t, 500, "ova", 10),
        },
        holds=lambda t: (
            t.t4(500, "ova", 10)["p_value"] > 0.05
            and paper_p(t, 500, "ova", 10) > 0.05
            and t.t4(500, "ova", 10)["paper"]
            >= paper_round(critical_value(t.n_datasets(500), 0.05, convention="paper"))
        ),
    ),
    Fact(
        "claim2.ww",
        "Against WW the LR falls {lrs} (k = {k} of {n}, p = {p:.2f}) and the wins {wins} of "
        "{cells5}, where the paper keeps rejecting H0 at Ns = 500 ({pl}** in all three "
        "columns, k = {kp} of {n})",
        lambda t: {
            "lrs": t4_seq(t, "ww", 10),
            "k": int(t.t4(500, "ww", 10)["k"]),
            "n": int(t.t4(500, "ww", 10)["n"]),
            "p": t.t4(500, "ww", 10)["p_value"],
            "wins": " -> ".join(f"{int(t.stat(r, 'isvm_gt_ww'))}" for r in t.rows),
            "cells5": t.cells(500),
            "pl": lr(t.t4(500, "ww", 10)["paper"]),
            "kp": int(t.t4(500, "ww", 10)["k_paper"]),
        },
        holds=lambda t: len({t.t4(500, "ww", q)["paper"] for q in PERCENTILES}) == 1,
    ),
    Fact(
        "claim2.near_ties",
        "at {q}%, {count} of the {n} ISVM - WW differences are under {points} points ({names}), "
        "and had they gone the other way k would be anywhere from {lo} to {hi} of {n}, up to "
        "the paper's {paper}**",
        ww_lead_near_ties,
        holds=lambda t: ww_lead_near_ties(t)["hi"] == int(t.t4(500, "ww", 10)["k_paper"]),
    ),
    Fact(
        "claim2.mean_lead",
        "ISVM - 1-vs-all {o} points, ISVM - WW {w} (the paper's {po} and {pw}: its lead grows "
        "with Ns)",
        lambda t: {
            "o": stat_seq(t, "isvm_minus_ova", "+.2f"),
            "w": stat_seq(t, "isvm_minus_ww", "+.2f"),
            "po": stat_seq(t, "paper_isvm_minus_ova", "+.2f"),
            "pw": stat_seq(t, "paper_isvm_minus_ww", "+.2f"),
        },
        holds=lambda t: increasing([t.stat(r, "paper_isvm_minus_ww") for r in t.rows]),
    ),
    Fact(
        "claim2.per_dataset_500",
        "at Ns = 500 Yeast ({yo:+.1f} over 1-vs-all, {yw:+.1f} over WW) and Abalone ({ao:+.1f}, "
        "{aw:+.1f}) carry it, L. Sat is {lo:+.1f} / {lw:+.1f}, {within} are within {pts} "
        "points, and ISVM is behind on Vowel ({vo:+.2f} / {vw:+.2f}; the paper's {pvo:+.2f} / "
        "{pvw:+.2f}), MNIST ({mo:+.2f} / {mw:+.2f}) and Letter ({eo:+.1f} / "
        "{ew:+.1f}; the paper has Letter {po:+.1f} over 1-vs-all and {pw:+.1f} against WW)",
        lambda t: {
            "yo": t.lead("Yeast", 500, "ova"),
            "yw": t.lead("Yeast", 500, "ww"),
            "ao": t.lead("Abalone", 500, "ova"),
            "aw": t.lead("Abalone", 500, "ww"),
            "lo": t.lead("L. Sat", 500, "ova"),
            "lw": t.lead("L. Sat", 500, "ww"),
            "within": names_list(within(t, 500, 0.1)),
            "pts": 0.1,
            "vo": t.lead(VOWEL, 500, "ova"),
            "vw": t.lead(VOWEL, 500, "ww"),
            "pvo": t.lead(VOWEL, 500, "ova", source="paper"),
            "pvw": t.lead(VOWEL, 500, "ww", source="paper"),
            "mo": t.lead("MNIST", 500, "ova"),
            "mw": t.lead("MNIST", 500, "ww"),
            "eo": t.lead("Letter", 500, "ova"),
            "ew": t.lead("Letter", 500, "ww"),
            "po": t.lead("Letter", 500, "ova", source="paper"),
            "pw": t.lead("Letter", 500, "ww", source="paper"),
        },
        holds=lambda t: (
            set(t.datasets(500))
            == set(within(t, 500, 0.1)) | {"Yeast", "Abalone", "L. Sat", VOWEL, "MNIST", "Letter"}
        ),
    ),
    # claim 3: near-best areas
    Fact(
        "claim3.shares",
        "ISVM {a}, 1-vs-all {b}, WW {c} at Ns = 100; {d} at Ns = 200; {e} at Ns = 500 ({n} "
        "data sets)",
        lambda t: {
            **dict(zip("abc", (f"{t.near_share(100, m):.3f}" for m in METHODS), strict=True)),
            "d": ", ".join(f"{t.near_share(200, m):.3f}" for m in METHODS),
            "e": ", ".join(f"{t.near_share(500, m):.3f}" for m in METHODS),
            "n": word(t.n_datasets(500)),
        },
    ),
    Fact(
        "claim3.wins",
        "ISVM has the largest share in {i} data sets, WW in {w}, 1-vs-all in {o}.",
        lambda t: {
            k: names_list([str(t.near_wins(r, m)) for r in (100, 200, 500)])
            for k, m in (("i", "isvm"), ("w", "ww"), ("o", "ova"))
        },
    ),
    Fact(
        "claim3.k_falls",
        "k against 1-vs-all falls from {a} to {b} of {n} at Ns = 50, from {c} to {d} at 100, "
        "from {e} to {f} at 200 and from {g} to {h} of {n5} at 500; the paper's from {pa} to "
        "{pb}, {pc} to {pd}, {pe} to {pf} and {pg} to {ph})",
        lambda t: {
            **{
                k: int(t.t4(r, "ova", q)["k"])
                for (k, r, q) in zip(
                    "abcdefgh", [r for r in t.rows for _ in (0, 1)], [10, 50] * 4, strict=True
                )
            },
            **{
                "p" + k: int(t.t4(r, "ova", q)["k_paper"])
                for (k, r, q) in zip(
                    "abcdefgh", [r for r in t.rows for _ in (0, 1)], [10, 50] * 4, strict=True
                )
            },
            "n": t.n_datasets(50),
            "n5": t.n_datasets(500),
        },
    ),
    # training time
    Fact(
        "claim.time",
        "ISVM / WW {a:.2f} at Ns = 50, {b:.2f} at Ns = 100, {c:.2f} at Ns = 200 and {d:.2f} at "
        "Ns = 500, 1-vs-all / WW {o}",
        lambda t: {
            **dict(zip("abcd", (t.timing(r)["isvm_over_ww"] for r in t.rows), strict=True)),
            "o": names_list([f"{t.timing(r)['ova_over_ww']:.2f}" for r in t.rows]),
        },
    ),
    # ranking
    Fact(
        "ranking.isvm_best",
        "ISVM in {a} of {n} data sets at Ns = 50, {b} of {n} at Ns = 100, {c} of {n} at Ns = "
        "200 and {d} of {n5} at Ns = 500; in the paper in {p}",
        lambda t: {
            **dict(zip("abcd", (t.isvm_best(r) for r in t.rows), strict=True)),
            "n": t.n_datasets(50),
            "n5": t.n_datasets(500),
            "p": names_list([str(t.isvm_best(r, "paper")) for r in t.rows]),
        },
    ),
    Fact(
        "ranking.same_winner",
        "our best method is the paper's in {a}, {b} and {c} of {n} and {d} of {n5}.",
        lambda t: {
            **dict(zip("abcd", (int(t.stat(r, "same_winner")) for r in t.rows), strict=True)),
            "n": int(t.stat(50, "winner_cells")),
            "n5": int(t.stat(500, "winner_cells")),
        },
    ),
    Fact(
        "ranking.ova_200",
        "wins at Ns = 200 ({n} data sets, Glass among them as in the paper)",
        lambda t: {"n": len(ova_best(t, 200))},
        holds=lambda t: "Glass" in ova_best(t, 200) and "Glass" in ova_best(t, 200, "paper"),
    ),
    Fact(
        "ranking.behind_500",
        "where ISVM is not the best at Ns = 500 it is behind by {m:.2f} points or less",
        lambda t: {"m": max(behind(t, 500))},
        holds=lambda t: (
            t.best("Letter", 500) == ["ww"] and t.best("Letter", 500, source="paper") == ["ww"]
        ),
    ),
    Fact(
        "ranking.ww_last",
        "in the mean our WW is the last of the three in every row",
        holds=lambda t: all(
            mean_accuracy(t, r, "ww") < min(mean_accuracy(t, r, m) for m in ("isvm", "ova"))
            for r in t.rows
        ),
    ),
    # offsets
    Fact(
        "offsets.dna",
        "ISVM {i} / {i2}, WW {w} (rows 50 / 100 / 200 / 500)",
        lambda t: {
            "i": fmt_seq(t.offsets("DNA", "isvm")[:2], "+.1f"),
            "i2": fmt_seq(t.offsets("DNA", "isvm")[2:], "+.1f"),
            "w": off_seq(t, "DNA", "ww"),
        },
        holds=lambda t: all(
            w > i for w, i in zip(t.offsets("DNA", "ww"), t.offsets("DNA", "isvm"), strict=True)
        ),
    ),
    Fact(
        "offsets.dna_paper",
        "the paper's ISVM at 10% is {lo:.1f}% to {hi:.1f}% over the rows, against a base rate "
        "of {base:g}%",
        lambda t: {
            "lo": t.paper3.loc[t.paper3["dataset"] == "DNA", "isvm_10"].min(),
            "hi": t.paper3.loc[t.paper3["dataset"] == "DNA", "isvm_10"].max(),
            "base": float(paper_table(2).set_index("dataset").loc["DNA", "base_performance_pct"]),
        },
    ),
    Fact(
        "offsets.vowel",
        "offset is {v} (ISVM; the three methods within {s:.1f} points of each other in every row)",
        lambda t: {
            "v": off_seq(t, VOWEL),
            "s": max(
                max(t.offset(VOWEL, r, m) for m in METHODS)
                - min(t.offset(VOWEL, r, m) for m in METHODS)
                for r in t.rows
            ),
        },
        holds=lambda t: all(abs(o) < 2 for m in METHODS for o in t.offsets(VOWEL, m)),
    ),
    Fact(
        "offsets.vowel_528",
        "528 training rows of Table 2 (`vowel`, the default until 2026-12-06) gave {v}",
        lambda t: {"v": fmt_seq(vowel_528_offsets(), "+.1f")},
    ),
    Fact(
        "offsets.vowel_sensitivity",
        "every method's Vowel offset is {z} under z-score ranked per subsample or by grid means "
        "and {r} with raw features",
        lambda t: {"z": vowel_sens(t, "zscore"), "r": vowel_sens(t, "none")},
    ),
    Fact(
        "offsets.shrink",
        "Iris ({i}), Shuttle ({s}), Segment ({g}) and Wine ({w})",
        lambda t: {
            k: off_seq(t, d)
            for k, d in (("i", "Iris"), ("s", "Shuttle"), ("g", "Segment"), ("w", "Wine"))
        },
        holds=lambda t: all(
            decreasing(t.offsets(d, "isvm")) for d in ("Iris", "Shuttle", "Segment", "Wine")
        ),
    ),
    Fact(
        "offsets.vehicle",
        "ISVM {i}, WW {w} (the paper's WW is {p} points below its ISVM there, ours {o})",
        lambda t: {
            "i": off_seq(t, "Vehicle"),
            "w": off_seq(t, "Vehicle", "ww"),
            "p": fmt_range(
                [t.lead("Vehicle", r, "ww", source="paper") for r in t.rows], ".1f", " to "
            ),
            "o": fmt_range([t.lead("Vehicle", r, "ww") for r in t.rows], ".1f", " to "),
        },
        holds=lambda t: all(increasing(t.offsets("Vehicle", m)) for m in ("isvm", "ww")),
    ),
    Fact(
        "offsets.glass",
        "Glass turns negative for ISVM ({i}) while its WW offset grows ({w}), because the "
        "paper's WW is {p} points below its ISVM at Ns = 100 and 200",
        lambda t: {
            "i": off_seq(t, "Glass"),
            "w": off_seq(t, "Glass", "ww"),
            "p": fmt_range(
                [t.lead("Glass", r, "ww", source="paper") for r in (100, 200)], ".0f", " to "
            ),
        },
    ),
    Fact(
        "offsets.near_zero",
        "Abalone ({a}), MNIST ({m}) and L. Sat ({s}) stay near zero; Letter stays above and "
        "grows ({e}; 1-vs-all {eo:+.1f} at 500); Yeast's WW is {y}, its ISVM {yi:+.1f} at 500",
        lambda t: {
            "a": off_seq(t, "Abalone"),
            "m": off_seq(t, "MNIST"),
            "s": off_seq(t, "L. Sat"),
            "e": off_seq(t, "Letter"),
            "eo": t.offset("Letter", 500, "ova"),
            "y": off_seq(t, "Yeast", "ww"),
            "yi": t.offset("Yeast", 500, "isvm"),
        },
        holds=lambda t: increasing(t.offsets("Letter", "isvm")),
    ),
    # how they were made
    Fact(
        "made.ns50_loo",
        "x 3 methods) is {s:,.0f} core-s (`training_time.md`)",
        lambda t: {"s": timing_total(t, 50)},
    ),
    *[
        Fact(
            f"made.ns{r}_time",
            "**{hours:.1f} core-hours of LOO**"
            + (" by the records" if r == 500 else "")
            + " ({total:,.0f} core-s: ISVM {isvm:,.0f}, 1-vs-all {ova:,.0f}, WW {ww:,.0f}",
            lambda t, r=r: timing_fields(t, r),
        )
        for r in (100, 200, 500)
    ],
    *[
        Fact(
            f"made.ns{r}_capped",
            "At {n} of its {fits:,} grid points a fit hit the iteration cap, all on Shuttle "
            "({isvm} ISVM, {ova} 1-vs-all, {ww} WW",
            lambda t, r=r: capped_fields(t, r),
            holds=lambda t, r=r: capped_only_shuttle(t, r),
        )
        for r in (50, 100, 200, 500)
    ],
    Fact(
        "made.ns200_costs",
        "Letter ({l:,.0f} s), Yeast ({y:,.0f} s), Segment and Glass the dearest cells, DNA the "
        "cheapest ({d:,.0f} s)",
        lambda t: {
            k: dataset_costs(t, 200)[d] for k, d in (("l", "Letter"), ("y", "Yeast"), ("d", "DNA"))
        },
        holds=lambda t: (
            sorted(dataset_costs(t, 200), key=dataset_costs(t, 200).get, reverse=True)[:4]
            == ["Yeast", "Letter", "Segment", "Glass"]
            and min(dataset_costs(t, 200), key=dataset_costs(t, 200).get) == "DNA"
        ),
    ),
    Fact(
        "made.ns200_uncertified",
        "{m}% of MNIST's, {g}% of Glass's, Segment's and Yeast's, {o:.1f}% or less of the others",
        lambda t: {
            "m": t.uncertified(200, ["MNIST"], 1),
            "g": t.uncertified(200, ["Glass", "Segment", "Yeast"], 1),
            "o": uncert_others(t, 200, ["MNIST", "Glass", "Segment", "Yeast"]),
        },
    ),
    Fact(
        "made.ns500_costs",
        "Yeast ({y:,.0f} s), Letter and Vowel are {p:.0f}% of it",
        lambda t: {
            "y": dataset_costs(t, 500)["Yeast"],
            "p": 100
            * sum(dataset_costs(t, 500)[d] for d in ("Yeast", "Letter", VOWEL))
            / timing_total(t, 500),
        },
    ),
    Fact(
        "made.ns500_uncertified",
        "{m}% of MNIST's, {s}% of Shuttle's, {y}% of Yeast's, {o:.2f}% or less of the others",
        lambda t: {
            "m": t.uncertified(500, ["MNIST"], 1),
            "s": t.uncertified(500, ["Shuttle"], 2),
            "y": t.uncertified(500, ["Yeast"], 2),
            "o": uncert_others(t, 500, ["MNIST", "Shuttle", "Yeast"]),
        },
    ),
    # Table 3 sections
    Fact(
        "t3.ns500_rows",
        "the {n} data sets with at least 500 examples",
        lambda t: {"n": word(t.n_datasets(500))},
    ),
    Fact(
        "t3.ns200_sizes",
        "the paper's Ns of this row, {i} and {w}",
        lambda t: {"i": t.ns_of("Iris", 200), "w": t.ns_of("Wine", 200)},
    ),
    Fact(
        "t3.ns100_uncertified",
        "{g}% of Glass's, MNIST's and Yeast's folds, {s}% of Segment's, Vehicle's and "
        "Shuttle's, {o:.1f}% or less of the others",
        lambda t: {
            "g": t.uncertified(100, ["Glass", "MNIST", "Yeast"], 1),
            "s": t.uncertified(100, ["Segment", "Vehicle", "Shuttle"], 1),
            "o": uncert_others(
                t, 100, ["Glass", "MNIST", "Yeast", "Segment", "Vehicle", "Shuttle"]
            ),
        },
    ),
    Fact(
        "t3.ns50_cells",
        "Over the {c} cells per method ({n} data sets x 10/25/50%)",
        lambda t: {"c": t.cells(50), "n": t.n_datasets(50)},
    ),
    Fact(
        "t3.ns50_ova",
        "ISVM is higher in {g} of {c} cells (the paper: {p})**, and our ISVM - 1-vs-all "
        "differences correlate with the paper's at **{r:.2f}**. Table 4's Ns = 50 row: ISVM "
        "beats 1-vs-all on {k10} of {n} data sets at 10% and 25% (paper: {pk}) and {k50} at "
        "50% (paper: {pk50})",
        lambda t: {
            "g": int(t.stat(50, "isvm_gt_ova")),
            "c": t.cells(50),
            "p": int(t.stat(50, "paper_isvm_gt_ova")),
            "r": t.stat(50, "corr_isvm_minus_ova"),
            "k10": int(t.t4(50, "ova", 10)["k"]),
            "n": t.n_datasets(50),
            "pk": int(t.t4(50, "ova", 10)["k_paper"]),
            "k50": int(t.t4(50, "ova", 50)["k"]),
            "pk50": int(t.t4(50, "ova", 50)["k_paper"]),
        },
        holds=lambda t: (
            t.t4(50, "ova", 10)["k"] == t.t4(50, "ova", 25)["k"]
            and t.t4(50, "ova", 10)["k_paper"] == t.t4(50, "ova", 25)["k_paper"]
        ),
    ),
    Fact(
        "t3.ns50_ww",
        "higher in {g} of {c} cells (the paper: {p})**, but the differences do not follow the "
        "paper's data set by data set (correlation {r:.2f})",
        lambda t: {
            "g": int(t.stat(50, "isvm_gt_ww")),
            "c": t.cells(50),
            "p": int(t.stat(50, "paper_isvm_gt_ww")),
            "r": t.stat(50, "corr_isvm_minus_ww"),
        },
    ),
    Fact(
        "t3.ns50_round1",
        "that reading at {a:.2f} / {b:.2f} / {c:.2f} and {g} of {n} cells",
        lambda t: {
            "a": float(
                t.sens("mad_isvm", scaling="minmax", pooling="pooled", ww_method="ww").iloc[0]
            ),
            "b": float(
                t.sens("mad_ova", scaling="minmax", pooling="pooled", ww_method="ww").iloc[0]
            ),
            "c": float(
                t.sens("mad_ww", scaling="minmax", pooling="pooled", ww_method="ww").iloc[0]
            ),
            "g": int(
                t.sens("isvm_gt_ova", scaling="minmax", pooling="pooled", ww_method="ww").iloc[0]
            ),
            "n": int(
                t.sens("cells_per_method", scaling="minmax", pooling="pooled", ww_method="ww").iloc[
                    0
                ]
            ),
        },
    ),
    Fact(
        "t3.ns50_dna",
        "DNA is {d} points above the paper for all three methods",
        lambda t: {"d": fmt_range([t.offset("DNA", 50, m) for m in METHODS], ".0f")},
    ),
    Fact(
        "t3.ns50_dna_paper",
        "paper's {p:.1f}% is close to its base rate of {b:g}%",
        lambda t: {
            "p": t.value("DNA", 50, "isvm", 10, "paper"),
            "b": float(paper_table(2).set_index("dataset").loc["DNA", "base_performance_pct"]),
        },
    ),
    Fact(
        "t3.ns50_offsets",
        "Iris {i:+.1f}, Shuttle {s:+.1f}, Segment {g:+.1f}, Wine {w:+.1f}; Vehicle {e:+.1f}",
        lambda t: {
            k: t.offset(d, 50, "isvm")
            for k, d in (
                ("i", "Iris"),
                ("s", "Shuttle"),
                ("g", "Segment"),
                ("w", "Wine"),
                ("e", "Vehicle"),
            )
        },
    ),
    Fact(
        "t3.ns50_without_dna",
        "Without DNA, the mean |diff| is {i:.1f} (ISVM), {o:.1f} (1-vs-all) and {w:.1f} (WW) "
        "points",
        lambda t: {
            k: t.without(50, ["DNA"], "mean_abs_diff", m)
            for k, m in (("i", "isvm"), ("o", "ova"), ("w", "ww"))
        },
    ),
    Fact(
        "t3.ns50_uncertified",
        "cannot prove: {gmy}% of Glass's, MNIST's and Yeast's folds, {s}% of E. coli's, "
        "Segment's, Shuttle's and Vehicle's, {a}% of Abalone's and {o:.2f}% or less of the "
        "other six's",
        lambda t: {
            "gmy": t.uncertified(50, ["Glass", "MNIST", "Yeast"], 1),
            "s": t.uncertified(50, UNCERT_50_SOME, 1),
            "a": t.uncertified(50, ["Abalone"], 1),
            "o": uncert_others(t, 50, ["Glass", "MNIST", "Yeast", "Abalone", *UNCERT_50_SOME]),
        },
    ),
    # isvm_neg
    Fact(
        "neg.table5",
        "{z:.1f}% at L = 2-5 in Table 5 ({draws:,} draws",
        lambda t: {"z": t.table5_max("isvm_neg"), "draws": t.table5_draws()},
    ),
    Fact(
        "neg.table5_isvm",
        "the ISVM is at {a:.1f}% (L = 4) and {b:.1f}% (L = 5)",
        lambda t: {"a": t.table5("isvm", 4), "b": t.table5("isvm", 5)},
    ),
    Fact(
        "neg.within",
        "within {pts} points except {rest}",
        lambda t: {
            "pts": 0.05,
            "rest": names_list(
                [f"{d} {v:+.2f}" for d, v in t.neg_minus(None).items() if abs(v) > 0.05]
            ),
        },
    ),
    Fact(
        "neg.capped",
        "{n} of its {fits:,} fits (Shuttle",
        lambda t: neg_capped(t),
    ),
    Fact(
        "neg.cost", "machine, {s:.0f} core-s of LOO by the records", lambda t: {"s": neg_total(t)}
    ),
    # sensitivity
    Fact(
        "sens.readings",
        "every combination ({n} readings)",
        lambda t: {"n": len(t.sensitivity)},
    ),
    Fact(
        "sens.level",
        "means: {z}, against {m} for [0, 1] and {r} raw)",
        lambda t: {
            k: sens_range(t, ["mad_isvm", "mad_ova"], ".1f", scaling=s, pooling=UNPOOLED)
            for k, s in (("z", "zscore"), ("m", "minmax"), ("r", "none"))
        },
    ),
    Fact(
        "sens.structure",
        "ISVM above 1-vs-all in {g} of {n} cells against the paper's {p}, correlation {c}; "
        "[0, 1]: {mg} cells, {mc}; raw: negative",
        lambda t: {
            "g": sens_range(t, "isvm_gt_ova", "d", scaling="zscore", pooling=UNPOOLED),
            "n": int(t.sensitivity["cells_per_method"].iloc[0]),
            "p": int(t.sensitivity["paper_isvm_gt_ova"].iloc[0]),
            "c": sens_range(t, "corr_isvm_minus_ova", ".2f", scaling="zscore", pooling=UNPOOLED),
            "mg": sens_range(t, "isvm_gt_ova", "d", scaling="minmax", pooling=UNPOOLED),
            "mc": sens_range(t, "corr_isvm_minus_ova", ".1f", scaling="minmax", pooling=UNPOOLED),
        },
        holds=lambda t: bool((t.sens("corr_isvm_minus_ova", scaling="none") < 0).all()),
    ),
    Fact(
        "sens.pooled",
        "subsamples': {s} points above the top-50% mean under every scaling, where the "
        "published table's gap is {p:.2f} on average",
        lambda t: {
            "s": sens_range(t, "spread", ".1f", pooling="pooled"),
            "p": float(t.sensitivity["paper_spread"].iloc[0]),
        },
    ),
    Fact(
        "sens.shape",
        "each subsample ({a} under z-score) or of grid means ({b})",
        lambda t: {
            "a": sens_range(t, "spread", ".2f", scaling="zscore", pooling="per_subsample"),
            "b": sens_range(t, "spread", ".2f", scaling="zscore", pooling="mean_then_rank"),
        },
    ),
    Fact(
        "sens.wins",
        "({a} vs {b} against the paper's {p}); grid means sit marginally closer in mean |diff| "
        "(by {d} points)",
        lambda t: {
            "a": int(t.sens("isvm_gt_ova", scaling="zscore", pooling="per_subsample").iloc[0]),
            "b": int(t.sens("isvm_gt_ova", scaling="zscore", pooling="mean_then_rank").iloc[0]),
            "p": int(t.sensitivity["paper_isvm_gt_ova"].iloc[0]),
            "d": fmt_range(
                [
                    float(
                        t.sens(
                            f"mad_{m}", scaling="zscore", pooling="per_subsample", ww_method="ww"
                        ).iloc[0]
                    )
                    - float(
                        t.sens(
                            f"mad_{m}", scaling="zscore", pooling="mean_then_rank", ww_method="ww"
                        ).iloc[0]
                    )
                    for m in METHODS
                ],
                ".2f",
            ),
        },
    ),
    Fact(
        "sens.ww",
        "mean |diff| {pm} against {wm}, and ISVM - WW correlates with the paper's at {pc} "
        "against {wc}",
        lambda t: {
            "pm": sens_range(
                t, "mad_ww", ".2f", scaling="zscore", pooling=UNPOOLED, ww_method="ww_paper"
            ),
            "wm": sens_range(
                t, "mad_ww", ".2f", scaling="zscore", pooling=UNPOOLED, ww_method="ww"
            ),
            "pc": sens_range(
                t,
                "corr_isvm_minus_ww",
                ".2f",
                scaling="zscore",
                pooling=UNPOOLED,
                ww_method="ww_paper",
            ),
            "wc": sens_range(
                t, "corr_isvm_minus_ww", ".2f", scaling="zscore", pooling=UNPOOLED, ww_method="ww"
            ),
        },
    ),
    # beyond
    Fact(
        "beyond.table4_from_paper",
        "reproduces {m} of the {n} published likelihood ratios; the other {o}",
        lambda t: {
            "m": paper_table4_matches()[0],
            "n": paper_table4_matches()[1],
            "o": word(paper_table4_matches()[1] - paper_table4_matches()[0]),
        },
    ),
]


def _sizes(t: Tables) -> set[int]:
    """The Ns of the data sets that join another row (Iris 140 and Wine 150)."""
    return {int(n) for n in t.table3["Ns"]} - set(t.rows)


LABELS: list[Label] = [
    Label(
        "row",
        r"\b(?:Ns|rows?)(?: =| >=)? \**(\d+)\**(?:(?:,| /| and|, and| or)? \**\d+\b\**)*",
        lambda t: set(t.rows) | _sizes(t),
    ),
    Label(
        "row after 'at'",
        r"\bat (\d+)\b(?!%| points| data| of)",
        lambda t: set(t.rows) | _sizes(t),
    ),
    Label("Iris / Wine size", r"\b(?:Iris|Wine) (?:at |\(|\(Ns )(\d+)", _sizes),
    Label("results folder", r"\bns(\d+)\b", lambda t: set(t.rows)),
    Label(
        "data sets of a row", r"\b(\d+) data sets\b", lambda t: {t.n_datasets(r) for r in t.rows}
    ),
    Label("cells of a row", r"\bof (\d+)(?= cells\b)", lambda t: {t.cells(r) for r in t.rows}),
    Label("n of Table 4", r"\bn = (\d+)\b", lambda t: set(table4_ns(t))),
    Label("table", r"\bTables? \d(?:(?:,| and) \d)*"),
    Label("column or level", r"(?<![\d.])(?:10/25/50|10|25|50|5|1)%(?! of)"),
    Label("top-q%", r"\btop-(?:10|50)%"),
    Label("method", r"\b1-vs-all\b"),
    Label("hypothesis", r"\bH0\b"),
    Label("citation", r"\bHuerta et al\. \(2012\)"),
    Label("scaling", r"\[0, 1\]"),
    Label("Table 5's L", r"\bL = \d+(?:-\d+)?"),
    Label("issue, round", r"\b(?i:issue|round|rounds) \d+(?: to \d+)?"),
    Label("date", r"\b20\d\d-\d\d-\d\d\b(?: and \d\d\b)?"),
    Label("commit", r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7}\b"),
]


EXEMPT: list[Exempt] = [
    Exempt(
        "the readings' definitions and their run's settings; its results are the "
        "generated blocks inside",
        sections=(
            "## DNA: two readings of its bits",
            "## Vowel: the kernel's locality and the rows",
            "## Appendix E's WW kernel beyond Ns = 50",
        ),
    ),
    Exempt(
        "the paper's settings, which every run uses (config/paper.yaml)",
        (
            "**100 subsamples**, gamma 5 and 10 x C = 0.1 to 49.6 in steps of 0.5 (**200 grid "
            "points**)",
            "the first 20 subsamples",
            "The first 20 subsamples",
            "(20 subsamples)",
            "(100 subsamples, the full grid",
            "(100 subsamples x 3 methods)",
            "The share of the 200 grid points within 1 point of",
            "gamma 5-10",
            "with at least 500 examples",
        ),
    ),
    Exempt(
        "facts about the data sets and the methods (docs/data.md, docs/methods.md), not results",
        (
            "180 binary features",
            "8 speakers x 6 repetitions of each vowel",
            "with Vowel as all 990 rows",
            "Table 2's 528 is its training split",
            "with all 990 rows of Deterding's data",
            "The\n528 training rows",
            "`vowel_all` (all 990 rows)",
            "The 528-row `vowel` records",
            "[vowel_528/](vowel_528/README.md)",
            "the 7 test speakers too",
            "exp(-10) at gamma 5 and exp(-20) at gamma 10",
            "sqrt(K_pp) = 1",
            "or of cd at 1e-9",
            "(margin 1; the published LLW at C/(L-1))",
        ),
    ),
    Exempt(
        "how a run was made: its parts, machine, software and measured wall-clock costs "
        "(not in the tables; core-seconds that are in training_time.md are checked as facts)",
        (
            "the 2-core development machine (Intel Xeon, 24 GB, Debian 12, Python 3.11, numba "
            "0.68.1, numpy 2.4.6)",
            "2-core machine",
            "**60 min wall with `--cores 2`**, 5,755 s user + 1,150 s system (1.9 core-hours) for "
            "336 LOO jobs (20 subsamples each)",
            "study's 5,040 extra",
            "252 LOO jobs (34 min wall on 2 cores, 2,778 core-s by their records)",
            "for 420 jobs of 10 subsamples;",
            "for 420 jobs of 10 subsamples, by the records",
            "The tables: 20 s from the records.",
            "The tables: 1 minute from the records.",
            "420 parquet files, 14 MB",
            "270 parquet files",
            "the sensitivity study's 20 subsamples only (about 60% of the time)",
            "first 20\nsubsamples at Ns = 50, which sit above the 100",
        ),
    ),
    Exempt(
        "runs whose tables are not committed: round 1's reading (issue 15) and the default "
        "config's run (results/config/, rebuilt by `snakemake --cores 2`)",
        (
            "mean |diff| 9.1 and ISVM above 1-vs-all in 0 of 8 data sets",
            "(`config/config.yaml`: 5 subsamples, C step 2.5): mean |diff| 4.41 (ISVM), 4.50 "
            "(1-vs-all), 4.59 (WW); ISVM above 1-vs-all in 30 of 42 cells",
            "its first 5 Vowel subsamples are 6-7 points above the paper",
            "the 100 of `ns50/`: 1",
            "gave +4 to +10 points and ISVM above 1-vs-all in 2 of 14",
        ),
    ),
    Exempt(
        "Table 2 is computed from the data sets (isvm.experiment.table2, docs/data.md), not "
        "from these tables",
        ("the paper for 10 of 14 data sets (12 of 14 within 1.5 points)",),
    ),
]


# --- the check ---------------------------------------------------------------------------


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def section(text: str, heading: str | None) -> tuple[int, int]:
    """The [start, end) of a section of a Markdown text, from its heading line ("## X",
    "### X") to the next heading of its level or above (all of it for None)."""
    if heading is None:
        return 0, len(text)
    # headings only outside fenced code (a "# comment" there is not one)
    bare = re.sub(
        r"^```.*?^```$", lambda m: " " * len(m.group(0)), text, flags=re.MULTILINE | re.DOTALL
    )
    m = re.search(rf"^{re.escape(heading)}[ \t]*$", bare, re.MULTILINE)
    if m is None:
        raise ValueError(f"no heading {heading!r}")
    level = len(heading) - len(heading.lstrip("#"))
    nxt = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(bare, m.end())
    return m.start(), nxt.start() if nxt else len(text)


def prose_of(text: str) -> str:
    """The text a reader reads as prose: no generated block bodies, no fenced code."""
    text = BLOCK_RE.sub(lambda m: f"<!-- generated: {m['name']} -->\n<!-- /generated -->", text)
    return re.sub(r"^```.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)


def _pattern(template: str) -> tuple[str, list[tuple[str, str]]]:
    """A regex matching the fragment with any value in each slot, and the slots in order:
    a number where the slot has a format, else the shortest text up to the next literal."""
    out, slots = "", []
    parsed = list(string.Formatter().parse(normalise(template)))
    for i, (literal, name, spec, _) in enumerate(parsed):
        out += re.escape(literal)
        if name is None:
            continue
        follows = i + 1 < len(parsed) and bool(parsed[i + 1][0])
        out += f"({NUMBER})" if spec else r"(.+?)" if follows else r"(.+)"
        slots.append((name, spec))
    return out, slots


def _nearest(pattern: str, template: str, norm: str) -> re.Match | None:
    """The fragment's tightest match in the text, found from its longest literal part."""
    literals = [lit for lit, *_ in string.Formatter().parse(normalise(template)) if lit.strip()]
    if not literals:
        return None
    anchor = max(literals, key=len)
    rx = re.compile(pattern.replace("(.+)", "(.{1,200}?)(?=[.;)]|$)"))
    for a in re.finditer(re.escape(anchor), norm):
        reach = len(normalise(template)) + 400
        for start in range(a.start(), max(-1, a.start() - reach), -1):
            m = rx.match(norm, start)
            if m is not None and m.end() >= a.end():
                return m
    return None


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    in_blocks: int = 0  # numbers of the generated blocks
    checked: int = 0  # numbers in the prose checked as fields of facts
    exempt: int = 0  # numbers exempt
    labels: int = 0  # numbers that are labels
    exempt_sections: list[str] = field(default_factory=list)  # "heading (reason)"

    def add(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")


def _digits(text: str) -> int:
    return len(re.findall(r"\d+(?:[.,]\d+)*", text))


def check_text(t: Tables, doc: str, text: str, report: Report) -> None:
    """Check one file's text (its checked section) against the tables."""
    start, end = section(text, DOCS[doc])
    part = text[start:end]
    # generated blocks
    seen = []
    for m in BLOCK_RE.finditer(part):
        name = m["name"]
        seen.append(name)
        if name not in BLOCKS or BLOCKS[name][0] != doc:
            report.add(doc, f"unknown generated block {name!r}")
            continue
        want = render(name, t)
        got = m["body"].strip()
        report.in_blocks += _digits(want)
        if got != want:
            diff = next(
                (
                    (i, a, b)
                    for i, (a, b) in enumerate(
                        zip(got.splitlines() + [""] * 99, want.splitlines(), strict=False)
                    )
                    if a != b
                ),
                None,
            )
            line = (
                f" (line {diff[0] + 1}: printed {diff[1]!r}, tables give {diff[2]!r})"
                if diff
                else ""
            )
            report.add(f"{doc}, block {name}", "differs from the tables" + line)
    for name, (file, _) in BLOCKS.items():
        if file == doc and seen.count(name) != 1:
            report.add(doc, f"block {name!r} appears {seen.count(name)} times, not once")
    # exempt sections: their prose is not read (their generated blocks were checked above)
    for ex in (e for e in EXEMPT if e.doc == doc):
        for heading in ex.sections:
            try:
                a, b = section(part, heading)
            except ValueError:
                report.add(doc, f"exempt section not in the text (stale): {heading!r}")
                continue
            report.exempt += _digits(prose_of(part[a:b])) - _digits(heading)
            report.exempt_sections.append(f"{doc}: {heading!r} ({ex.reason})")
            part = part[:a] + heading + "\n\n" + part[b:]
    norm = normalise(prose_of(part))
    covered = np.zeros(len(norm), dtype=bool)
    # facts
    for fact in (f for f in FACTS if f.doc == doc):
        where = f"{doc}, fact {fact.name}"
        try:
            values = fact.values(t)
            want = normalise(fact.text.format(**values))
        except Exception as e:  # noqa: BLE001 - a fact that cannot be computed is a problem
            report.add(where, f"cannot be computed from the tables: {e!r}")
            continue
        if fact.holds is not None and not fact.holds(t):
            report.add(where, f"the tables no longer support its words: {want!r}")
        pattern, slots = _pattern(fact.text)
        hits = [m.start() for m in re.finditer(re.escape(want), norm)]
        if not hits:
            m = _nearest(pattern, fact.text, norm)
            if m is None:
                report.add(where, f"not in the text: {want!r}")
                continue
            for i, (name, spec) in enumerate(slots):
                printed, expected = m.group(i + 1), format(values[name], spec)
                if printed != expected:
                    report.add(where, f"{name} printed {printed!r}, the tables give {expected!r}")
            continue
        literal_digits = _digits(re.sub(r"\{[^}]*\}", "", fact.text))
        report.checked += _digits(want) - literal_digits
        own = re.fullmatch(pattern, want)
        if own is None:
            report.add(where, "its fragment does not parse its own values; give slots formats")
            continue
        for h in hits:
            for i in range(len(slots)):
                covered[h + own.start(i + 1) : h + own.end(i + 1)] = True
    # exempt fragments
    for ex in (e for e in EXEMPT if e.doc == doc):
        for frag in ex.fragments:
            frag = normalise(frag)
            hits = [m.start() for m in re.finditer(re.escape(frag), norm)]
            if not hits:
                report.add(doc, f"exempt fragment not in the text (stale): {frag!r}")
            for h in hits:
                covered[h : h + len(frag)] = True
                report.exempt += _digits(frag)
    # code, links, comments
    for pat in (r"`[^`]*`", r"\]\([^)]*\)", r"<!--.*?-->"):
        for m in re.finditer(pat, norm):
            covered[m.start() : m.end()] = True
    # labels: each number of a match that no fact covers must be allowed; a list
    # (Ns = 50, 100, 200) stops at its first number that is not
    for label in LABELS:
        allowed = label.allowed(t) if label.allowed else None
        for m in re.finditer(label.pattern, norm):
            numbers = list(re.finditer(r"\d+", m.group(0)))
            end = m.end()
            for i, x in enumerate(numbers):
                a, b = m.start() + x.start(), m.start() + x.end()
                if covered[a:b].any() or (allowed is not None and int(x.group(0)) not in allowed):
                    if i == 0 and not covered[a:b].any():
                        report.add(
                            doc,
                            f"{label.name} {m.group(0)!r}: {x.group(0)} is not among "
                            f"{sorted(allowed)}",
                        )
                    end = a
                    break
            if end > m.start() and not covered[m.start() : end].any():
                covered[m.start() : end] = True
                report.labels += _digits(norm[m.start() : end])
    # whatever digit is left has no source
    for m in re.finditer(r"\d+(?:[.,]\d+)*", norm):
        if not covered[m.start() : m.end()].all():
            ctx = norm[max(0, m.start() - 50) : m.end() + 30]
            report.add(
                doc,
                f"number {m.group(0)!r} has no source (a fact, label or exemption of "
                f"docs/results/prose.py): ...{ctx}...",
            )


def read_docs(repo: Path = REPO) -> dict[str, str]:
    return {doc: (repo / doc).read_text() for doc in DOCS}


def check(t: Tables, texts: dict[str, str] | None = None) -> Report:
    """Every problem of the docs' numbers against the tables (none: they agree)."""
    texts = read_docs() if texts is None else texts
    report = Report()
    for doc, text in texts.items():
        check_text(t, doc, text, report)
    return report


def write(t: Tables, texts: dict[str, str]) -> dict[str, str]:
    """The texts with every generated block rendered from the tables."""
    out = {}
    for doc, text in texts.items():
        start, end = section(text, DOCS[doc])

        def fill(m: re.Match, doc=doc) -> str:
            name = m["name"]
            if name not in BLOCKS or BLOCKS[name][0] != doc:
                return m.group(0)
            return f"<!-- generated: {name} -->\n\n{render(name, t)}\n\n<!-- /generated -->"

        out[doc] = text[:start] + BLOCK_RE.sub(fill, text[start:end]) + text[end:]
    return out


def main(mode: str, t: Tables) -> int:
    texts = read_docs()
    if mode == "--write":
        new = write(t, texts)
        for doc, text in new.items():
            if text != texts[doc]:
                (REPO / doc).write_text(text)
                print(f"wrote {doc}")
        texts = new
    report = check(t, texts)
    for p in report.problems:
        print(p)
    for s in report.exempt_sections:
        print(f"not checked: {s}")
    print(
        f"{len(report.problems)} problem(s); numbers: {report.in_blocks} in {len(BLOCKS)} "
        f"generated blocks, {report.checked} in the prose checked by {len(FACTS)} facts, "
        f"{report.labels} labels (rows, columns, tables; checked where they name a row or a "
        f"count), {report.exempt} exempt ({sum(len(e.fragments) for e in EXEMPT)} fragments)"
    )
    return 1 if report.problems else 0
