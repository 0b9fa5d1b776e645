"""The numbers of docs/results/README.md, computed from the committed tables.

    python docs/results/claims.py            # the generated blocks, as Markdown
    python docs/results/claims.py --check    # exit 1 where prose and tables disagree, naming each
    python docs/results/claims.py --write    # rewrite the generated blocks of the docs in place

The folders ``ns50``, ``ns100``, ``ns200`` and ``ns500`` next to this file hold one row of
Ns each (Iris 140 and Wine 150 count in row 200, as in the paper's Table 4). Everything
here reads their tables (and the paper's, ``isvm.experiment.paper``) through the project's
own helpers (``compare_table3``, ``row_summary``, ``table4_rows``); nothing is typed by hand.

Two mechanisms keep docs/results/README.md and README.md's "## Results" section equal to
the tables (``prose.py`` next to this file):

* **generated blocks**: Markdown between ``<!-- generated: NAME -->`` and
  ``<!-- /generated -->`` is :data:`BLOCKS` ``[NAME]`` rendered from the tables;
  ``--write`` rewrites it, ``--check`` fails on any difference;
* **inline numbers**: every other number of those texts is a field of a registered
  sentence fragment (``prose.FACTS``: a name, the fragment with ``{fields}``, a function
  computing the fields from :class:`Tables`), or a label or an exempt setting or cost
  (``prose.LABELS``, ``prose.EXEMPT``, each with its reason); ``--check`` fails on a
  fragment whose printed numbers differ from the computed ones (rounded as printed) and
  on any number that is none of these.

``tests/test_results_prose.py`` runs the check on the committed docs.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from isvm.experiment.lrt import (
    critical_value,
    k_from_printed,
    likelihood_ratio,
    lrt_table,
    paper_round,
    table4_rows,
)
from isvm.experiment.paper import PAPER_ROWS, paper_table
from isvm.experiment.pooling import (
    compare_table3,
    comparison_summary,
    printed_name,
    row_summary,
    table3,
)
from isvm.loo.records import read_records

HERE = Path(__file__).resolve().parent
ROWS = (50, 100, 200, 500)
METHODS = ("isvm", "ova", "ww")
RIVALS = ("ova", "ww")
PERCENTILES = (10, 25, 50)
NAMES = {"isvm": "ISVM", "ova": "1-vs-all", "ww": "WW", "isvm_neg": "isvm_neg"}
#: Table 4's name of each rival (the paper prints 1-vs-all as "SVM")
T4_RIVAL = {"ova": "svm", "ww": "ww"}
#: the chances of an ISVM win per data set at which the power block states the test's power
POWER_AT = (0.6, 0.7, 0.8)
NUMBER_WORDS = {
    n: w
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}


def word(n: int) -> str:
    """A count as the prose writes it: a word up to twelve, digits above."""
    return NUMBER_WORDS.get(int(n), str(int(n)))


def _row_of(table: pd.DataFrame) -> int | None:
    rows = set(table4_rows(table["Ns"]))
    return rows.pop() if len(rows) == 1 else None


class Tables:
    """The committed tables of some rows (one folder each), read once, and what derives
    from them: the per-row comparison with the paper, Table 4, the diagnostics."""

    def __init__(self, folders: Sequence[Path] | None = None) -> None:
        folders = [HERE / f"ns{r}" for r in ROWS] if folders is None else folders
        self.folders: dict[int, Path] = {}
        for f in map(Path, folders):
            row = _row_of(pd.read_csv(f / "table3.csv"))
            if row is None:
                raise ValueError(f"{f}: table3.csv holds more than one row of Ns")
            self.folders[row] = f
        self.rows = tuple(sorted(self.folders))

    # --- reading -------------------------------------------------------------------

    def read(self, name: str, rows: Sequence[int] | None = None) -> pd.DataFrame:
        """``name`` of each row's folder (where it is there), stacked, with a ``row`` column."""
        frames = [
            pd.read_csv(self.folders[r] / name).assign(row=r)
            for r in (self.rows if rows is None else rows)
            if (self.folders[r] / name).exists()
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @cached_property
    def table3(self) -> pd.DataFrame:
        return self.read("table3.csv")

    @cached_property
    def comparison(self) -> pd.DataFrame:
        """compare_table3 of every row: the cells on both sides, with their ``row``."""
        c = compare_table3(self.table3.drop(columns="row"))
        c = c[c["present"] == "both"]
        return c.assign(row=table4_rows(c["Ns"]))

    @cached_property
    def summary(self) -> pd.DataFrame:
        """row_summary of every row, indexed by (row, method)."""
        return row_summary(compare_table3(self.table3.drop(columns="row"))).set_index(
            ["row", "method"]
        )

    @cached_property
    def table4(self) -> pd.DataFrame:
        return self.read("table4_vs_paper.csv")

    @cached_property
    def paper3(self) -> pd.DataFrame:
        p = paper_table(3)
        return p.assign(row=table4_rows(p["Ns"]))

    # --- Table 3 -------------------------------------------------------------------

    def datasets(self, row: int) -> list[str]:
        """The data sets of a row, in the order of its table3.csv."""
        return list(self.table3.loc[self.table3["row"] == row, "dataset"])

    def ns_of(self, dataset: str, row: int) -> int:
        t = self.table3
        return int(t.loc[(t["row"] == row) & (t["dataset"] == dataset), "Ns"].iloc[0])

    def cells(self, row: int) -> int:
        return int(self.summary.loc[(row, "isvm"), "cells"])

    def n_datasets(self, row: int) -> int:
        return int(self.summary.loc[(row, "isvm"), "datasets"])

    def stat(self, row: int, column: str, method: str = "isvm") -> float:
        """A column of row_summary: mean_abs_diff, isvm_gt_ova, corr_isvm_minus_ww, ..."""
        return self.summary.loc[(row, method), column]

    def without(self, row: int, exclude: Sequence[str], column: str, method: str) -> float:
        """comparison_summary's ``column`` for ``method`` over a row's cells, some data sets out."""
        c = self.comparison
        s = comparison_summary(c[(c["row"] == row) & ~c["dataset"].isin(exclude)])
        return s.set_index("method").loc[method, column]

    def value(self, dataset: str, row: int, method: str, q: int, source: str = "ours") -> float:
        """One cell of Table 3, ours or the paper's."""
        t = self.table3 if source == "ours" else self.paper3
        name = dataset if source == "ours" else PAPER_ROWS.get(dataset, dataset)  # a reading
        at = (t["row"] == row) & (t["dataset"] == name)
        return float(t.loc[at, f"{method}_{q}"].iloc[0])

    def offset(self, dataset: str, row: int, method: str) -> float:
        """Ours - the paper's, mean of the 10/25/50% columns."""
        c = self.comparison
        at = (c["row"] == row) & (c["dataset"] == dataset) & (c["method"] == method)
        return float(c.loc[at, "diff"].mean())

    def offsets(self, dataset: str, method: str) -> list[float]:
        """offset() in every row that has the data set."""
        return [self.offset(dataset, r, method) for r in self.rows if dataset in self.datasets(r)]

    def lead(
        self, dataset: str, row: int, rival: str, q: int | None = None, source: str = "ours"
    ) -> float:
        """ISVM - rival, at column q or (None) the mean of the three columns."""
        qs = PERCENTILES if q is None else (q,)
        return float(
            np.mean(
                [
                    self.value(dataset, row, "isvm", p, source)
                    - self.value(dataset, row, rival, p, source)
                    for p in qs
                ]
            )
        )

    def best(self, dataset: str, row: int, q: int = 10, source: str = "ours") -> list[str]:
        """The best method(s) of a cell (ties at the table's printed precision)."""
        digits = 4 if source == "ours" else 2
        v = {m: round(self.value(dataset, row, m, q, source), digits) for m in METHODS}
        top = max(v.values())
        return [m for m in METHODS if v[m] == top]

    def isvm_best(self, row: int, source: str = "ours") -> int:
        """Data sets whose best method at 10% is ISVM (alone or tied)."""
        return sum("isvm" in self.best(d, row, 10, source) for d in self.datasets(row))

    def near_ties(self, row: int, rival: str, q: int, points: float) -> list[str]:
        """Data sets whose ours ISVM - rival at column q is under ``points`` in size."""
        return [d for d in self.datasets(row) if abs(self.lead(d, row, rival, q)) < points]

    # --- Table 4 -------------------------------------------------------------------

    def t4(self, row: int, rival: str, q: int) -> pd.Series:
        """A cell of table4_vs_paper: n, k, k_paper, ours (printed LR), paper, lr, p_value."""
        t = self.table4
        at = (t["row"] == row) & (t["rival"] == T4_RIVAL[rival]) & (t["percentile"] == q)
        return t.loc[at].iloc[0]

    # --- diagnostics, timing, near-best ------------------------------------------------

    @cached_property
    def diagnostics(self) -> pd.DataFrame:
        d = self.read("loo_diagnostics.csv")
        folds = d["n_subsamples"] * d["n_grid_points"] * d["Ns"]
        return d.assign(
            dataset=d["dataset"].map(printed_name), pct=100 * d["uncertified_folds"] / folds
        )

    def uncertified(self, row: int, datasets: Sequence[str], decimals: int) -> str:
        """The % of uncertified folds of some data sets (every method), 'lo-hi' or one value."""
        d = self.diagnostics
        pct = d.loc[(d["row"] == row) & d["dataset"].isin(datasets), "pct"]
        lo, hi = (f"{v:.{decimals}f}" for v in (pct.min(), pct.max()))
        return lo if lo == hi else f"{lo}-{hi}"

    def uncertified_max(self, row: int, exclude: Sequence[str]) -> float:
        d = self.diagnostics
        return float(d.loc[(d["row"] == row) & ~d["dataset"].isin(exclude), "pct"].max())

    def capped(self, row: int, method: str | None = None, dataset: str | None = None) -> int:
        d = self.diagnostics
        at = d["row"] == row
        at &= True if method is None else d["method"] == method
        at &= True if dataset is None else d["dataset"] == dataset
        return int(d.loc[at, "capped_fits"].sum())

    def fits(self, row: int) -> int:
        d = self.diagnostics[self.diagnostics["row"] == row]
        return int((d["n_subsamples"] * d["n_grid_points"]).sum())

    def timing(self, row: int, line: str = "All", sub: str = "") -> dict[str, float]:
        """A line (a data set, or "All") of a row's training_time.md (``sub``: of a folder
        in the row's, e.g. isvm_neg): LOO core-seconds per method and ratios to WW."""
        path = self.folders[row] / sub / "training_time.md"
        lines = [ln for ln in path.read_text().splitlines() if ln.startswith("|")]
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        for ln in lines[2:]:
            cells = [c.strip() for c in ln.strip("|").split("|")]
            if cells[0] == line:
                return {h: float(c) for h, c in zip(head[1:], cells[1:], strict=True)}
        raise ValueError(f"{path}: no line {line!r}")

    @cached_property
    def near(self) -> pd.DataFrame:
        return self.read("near_best.csv")

    def near_share(self, row: int, method: str, tolerance: float = 1.0) -> float:
        n = self.near
        at = (
            (n["row"] == row)
            & (n["method"] == method)
            & ((n["tolerance"] - tolerance).abs() < 1e-9)
        )
        return float(n.loc[at, "share"].mean())

    def near_wins(self, row: int, method: str, tolerance: float = 1.0) -> int:
        n = self.near
        at = (n["row"] == row) & ((n["tolerance"] - tolerance).abs() < 1e-9)
        wide = n[at].pivot_table(index="dataset", columns="method", values="share")
        return int((wide[list(METHODS)].idxmax(axis=1) == method).sum())

    # --- the Ns = 50 extras: isvm_neg, Table 5, the sensitivity study --------------------

    @cached_property
    def neg(self) -> pd.DataFrame:
        """isvm_neg beside our ISVM, 1-vs-all and WW of the same subsamples (Ns = 50)."""
        neg = pd.read_csv(self.folders[50] / "isvm_neg" / "table3.csv")
        neg = neg[["dataset", "Ns"] + [f"isvm_neg_{q}" for q in PERCENTILES]]
        ours = self.table3[self.table3["row"] == 50].drop(columns="row")
        return ours.merge(neg, on=["dataset", "Ns"])

    def neg_minus(self, q: int | None, other: str = "isvm") -> pd.Series:
        """isvm_neg - ``other`` per data set at column q (None: mean of the three)."""
        n = self.neg.set_index("dataset")
        qs = PERCENTILES if q is None else (q,)
        return sum(n[f"isvm_neg_{p}"] - n[f"{other}_{p}"] for p in qs) / len(qs)

    def table5(self, method: str, L: int) -> float:
        t = pd.read_csv(self.folders[50] / "isvm_neg" / "table5.csv")
        return float(t.loc[(t["loss"] == method) & (t["L"] == L), "ours_pct"].iloc[0])

    def table5_max(self, method: str) -> float:
        t = pd.read_csv(self.folders[50] / "isvm_neg" / "table5.csv")
        return float(t.loc[t["loss"] == method, "ours_pct"].max())

    def table5_draws(self) -> int:
        text = (self.folders[50] / "isvm_neg" / "table5.md").read_text()
        return int(re.search(r"draws per cell: (\d+)", text).group(1))

    @cached_property
    def sensitivity(self) -> pd.DataFrame:
        return pd.read_csv(self.folders[50] / "sensitivity.csv")

    def sens(self, column: str, **where: str) -> pd.Series:
        s = self.sensitivity
        for k, v in where.items():
            s = s[s[k] == v]
        return s[column]

    @cached_property
    def sensitivity_datasets(self) -> pd.DataFrame:
        return pd.read_csv(self.folders[50] / "sensitivity_datasets.csv")


# --- number formats the prose uses ---------------------------------------------------


def fmt_seq(values: Sequence[float], spec: str, sep: str = " / ") -> str:
    return sep.join(format(v, spec) for v in values)


def fmt_range(values: Sequence[float], spec: str, sep: str = "-") -> str:
    """'lo-hi' of some values (one value when both ends print the same)."""
    lo, hi = format(min(values), spec), format(max(values), spec)
    return lo if lo == hi else f"{lo}{sep}{hi}"


def fmt_p(p: float) -> str:
    """An exact p-value as the prose prints it: 2 significant digits."""
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def fmt_lr(value: float) -> str:
    return f"{value:g}"


# --- the generated blocks ------------------------------------------------------------


def comparison(t: Tables) -> str:
    """Table 3 vs the paper, per row (row_summary)."""
    out = [
        "| Ns | data sets | mean \\|diff\\| ISVM / 1-vs-all / WW | ISVM > 1-vs-all, ours (paper) "
        "| ISVM > WW, ours (paper) | corr. of ISVM - 1-vs-all / ISVM - WW with the paper's "
        "| mean ISVM - 1-vs-all, ours (paper) | mean ISVM - WW, ours (paper) "
        "| best method as the paper's |",
        "| ---: | ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in t.rows:
        i = t.summary.loc[(row, "isvm")]
        n = {k: int(i[k]) for k in ("datasets", "cells", "same_winner", "winner_cells")}
        n.update({k: int(i[k]) for k in i.index if "_gt_" in k})
        out.append(
            f"| {row} | {n['datasets']} | "
            + " / ".join(f"{t.stat(row, 'mean_abs_diff', m):.2f}" for m in METHODS)
            + f" | {n['isvm_gt_ova']} of {n['cells']} ({n['paper_isvm_gt_ova']})"
            + f" | {n['isvm_gt_ww']} of {n['cells']} ({n['paper_isvm_gt_ww']})"
            + f" | {i['corr_isvm_minus_ova']:.2f} / {i['corr_isvm_minus_ww']:.2f}"
            + f" | {i['isvm_minus_ova']:+.2f} ({i['paper_isvm_minus_ova']:+.2f})"
            + f" | {i['isvm_minus_ww']:+.2f} ({i['paper_isvm_minus_ww']:+.2f})"
            + f" | {n['same_winner']} of {n['winner_cells']} |"
        )
    return "\n".join(out)


def table4(t: Tables) -> str:
    """Table 4 per row: our printed LR (k of n) beside the paper's."""
    out = [
        "| Ns | rival | 10% ours (paper) | 25% ours (paper) | 50% ours (paper) |",
        "| ---: | --- | --- | --- | --- |",
    ]
    for row in t.rows:
        for rival in RIVALS:
            cells = []
            for q in PERCENTILES:
                c = t.t4(row, rival, q)
                cells.append(f"{fmt_lr(c['ours'])} (k={c['k']}/{c['n']}; {fmt_lr(c['paper'])})")
            out.append(f"| {row} | {NAMES[rival]} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def exact_k(n: int, alpha: float) -> int:
    """The smallest wins k of n whose exact one-sided binomial p-value is <= alpha."""
    return next(k for k in range(n + 1) if stats.binom.sf(k - 1, n, 0.5) <= alpha * (1 + 1e-12))


def paper_k(n: int, alpha: float) -> int:
    """The smallest k the paper marks at alpha (its thresholds, P(LR > c) <= alpha)."""
    return k_from_printed(paper_round(critical_value(n, alpha, convention="paper")), n)


def power(n: int, k: int, p: float) -> float:
    """P(K >= k) for K ~ Binomial(n, p): the chance of reaching k wins."""
    return float(stats.binom.sf(k - 1, n, p))


def table4_ns(t: Tables) -> list[int]:
    return sorted({int(n) for n in t.table4["n"]}, reverse=True)


def power_table(t: Tables) -> str:
    """What Table 4's sign test can reach with the rows' n data sets."""
    at = " / ".join(f"{p:g}" for p in POWER_AT)
    out = [
        "| data sets n | smallest k for exact p <= 5% | for p <= 1% | the paper's * / ** "
        f"(its thresholds) | P(k reaches the 5% k) if ISVM wins each data set with chance {at} |",
        "| ---: | --- | --- | --- | --- |",
    ]
    for n in table4_ns(t):
        k5, k1 = exact_k(n, 0.05), exact_k(n, 0.01)
        marks = []
        for alpha in (0.05, 0.01):
            k = paper_k(n, alpha)
            marks.append(
                f"k = {k} (LR {fmt_lr(paper_round(likelihood_ratio(k, n)))}, "
                f"p = {fmt_p(stats.binom.sf(k - 1, n, 0.5))})"
            )
        out.append(
            f"| {n} | {k5} of {n} (p = {fmt_p(stats.binom.sf(k5 - 1, n, 0.5))}) "
            f"| {k1} of {n} (p = {fmt_p(stats.binom.sf(k1 - 1, n, 0.5))}) | "
            + " / ".join(marks)
            + " | "
            + " / ".join(f"{power(n, k5, p):.2f}" for p in POWER_AT)
            + " |"
        )
    return "\n".join(out)


def fmt_margin(points: float) -> str:
    """A small lead in points: 2 decimals, 3 below 0.005 (so that it never prints 0.00)."""
    return f"{points:.2f}" if abs(points) >= 0.005 else f"{points:.3f}"


def _not_isvm(t: Tables, row: int, source: str) -> str:
    """The data sets of a row whose best method at 10% is not ISVM, with the lead, and the
    ties with ISVM (counted as ISVM's)."""
    lost, tied = [], []
    for d in t.datasets(row):
        best = t.best(d, row, 10, source)
        label = f"{d} ({t.ns_of(d, row)})" if t.ns_of(d, row) != row else d
        if "isvm" in best:
            if len(best) > 1:
                tied.append(f"{label}: {' and '.join(NAMES[m] for m in best[1:])}, tied with ISVM")
            continue
        names = " and ".join(NAMES[m] for m in best)
        if source == "ours":
            names += f" by {fmt_margin(t.value(d, row, best[0], 10) - t.value(d, row, 'isvm', 10))}"
        lost.append(f"{label}: {names}")
    return "; ".join(lost + tied) or "-"


def best_per_row(t: Tables) -> str:
    """Where the best method at the 10% column is not ISVM, per row, ours and the paper's."""
    out = [
        "| Ns | ISVM best, ours | elsewhere the best (its lead over ISVM, points) "
        "| ISVM best, paper | elsewhere the paper's best |",
        "| ---: | ---: | --- | ---: | --- |",
    ]
    for row in t.rows:
        n = t.n_datasets(row)
        out.append(
            f"| {row} | {t.isvm_best(row)} of {n} | {_not_isvm(t, row, 'ours')} "
            f"| {t.isvm_best(row, 'paper')} of {n} | {_not_isvm(t, row, 'paper')} |"
        )
    return "\n".join(out)


def offsets_table(t: Tables) -> str:
    """Ours - the paper's per data set and row, mean of the 10/25/50% columns."""
    out = [
        "| data set | " + " | ".join(f"Ns = {r}" for r in t.rows) + " |",
        "| --- | " + " | ".join("---" for _ in t.rows) + " |",
    ]
    names = list(dict.fromkeys(d for r in t.rows for d in t.datasets(r)))
    for d in names:
        cells = []
        for r in t.rows:
            if d not in t.datasets(r):
                cells.append("")
                continue
            text = fmt_seq([t.offset(d, r, m) for m in METHODS], "+.1f")
            cells.append(text + (f" ({t.ns_of(d, r)})" if t.ns_of(d, r) != r else ""))
        out.append(f"| {d} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def table3_row(t: Tables, row: int) -> str:
    """A row's Table 3 at 10% beside the paper's, with each data set's mean offset."""
    if row not in t.folders:
        raise KeyError(f"no folder of row {row}")
    out = [
        "| data set | ISVM ours / paper | 1-vs-all ours / paper | WW ours / paper "
        "| mean diff ISVM, OVA, WW |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in t.datasets(row):
        ns = t.ns_of(d, row)
        label = f"{d} ({ns})" if ns != row else d
        pairs = [
            f"{t.value(d, row, m, 10):.2f} / {t.value(d, row, m, 10, 'paper'):.2f}" for m in METHODS
        ]
        diffs = ", ".join(f"{t.offset(d, row, m):+.1f}" for m in METHODS)
        out.append(f"| {label} | " + " | ".join(pairs) + f" | {diffs} |")
    return "\n".join(out)


def row_sentence(t: Tables, row: int) -> str:
    """The per-method summary of a row's cells, as a sentence."""
    mad = [t.stat(row, "mean_abs_diff", m) for m in METHODS]
    dna = [t.without(row, ["DNA"], "mean_abs_diff", m) for m in METHODS]
    within = [int(t.stat(row, "within_2", m)) for m in METHODS]
    return (
        f"Over the {t.cells(row)} cells per method: mean |diff| **{mad[0]:.2f} (ISVM), "
        f"{mad[1]:.2f} (1-vs-all), {mad[2]:.2f} (WW)** points, {dna[0]:.2f}, {dna[1]:.2f} and "
        f"{dna[2]:.2f} without DNA; {within[0]}, {within[1]} and {within[2]} cells within 2 "
        f"points; every cell in `ns{row}/table3_vs_paper.md`."
    )


def row_summary_table(t: Tables, row: int) -> str:
    """Per method: mean diff, mean |diff| and cells within 2 points, with and without DNA."""
    out = [
        "| method | mean diff | mean \\|diff\\| | mean \\|diff\\| without DNA "
        "| cells within 2 points |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for m in METHODS:
        out.append(
            f"| {NAMES[m] if m != 'ww' else 'Weston-Watkins'} | {t.stat(row, 'mean_diff', m):+.2f} "
            f"| **{t.stat(row, 'mean_abs_diff', m):.2f}** "
            f"| {t.without(row, ['DNA'], 'mean_abs_diff', m):.2f} "
            f"| {int(t.stat(row, 'within_2', m))} of {t.cells(row)} |"
        )
    return "\n".join(out)


def isvm_neg_table(t: Tables) -> str:
    n = len(t.neg)
    rows = [
        (
            f"mean of `isvm_neg` - ISVM over the {n} data sets (points)",
            [f"{t.neg_minus(q).mean():+.2f}" for q in PERCENTILES],
        ),
        (
            "range of `isvm_neg` - ISVM",
            [f"{t.neg_minus(q).min():+.2f} to {t.neg_minus(q).max():+.2f}" for q in PERCENTILES],
        ),
    ]
    for rival in RIVALS:
        rows.append(
            (
                f"data sets where `isvm_neg` beats our {NAMES[rival]}",
                [f"{int((t.neg_minus(q, rival) > 0).sum())} of {n}" for q in PERCENTILES],
            )
        )
    out = ["| | 10% | 25% | 50% |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join(out)


def sensitivity_table(t: Tables) -> str:
    s = t.sensitivity
    p = s.iloc[0]
    out = [
        "| scaling | ranking | WW | mean \\|diff\\| ISVM / OVA / WW "
        f"| ISVM > OVA (paper {int(p['paper_isvm_gt_ova'])}) "
        f"| ISVM > WW (paper {int(p['paper_isvm_gt_ww'])}) | corr ISVM-OVA / ISVM-WW "
        f"| top10 - top50 (paper {p['paper_spread']:.2f}) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in s.itertuples(index=False):
        out.append(
            f"| {r.scaling} | {r.pooling} | {r.ww_method} | "
            f"{r.mad_isvm:.2f} / {r.mad_ova:.2f} / {r.mad_ww:.2f} | {r.isvm_gt_ova} "
            f"| {r.isvm_gt_ww} | {r.corr_isvm_minus_ova:.2f} / {r.corr_isvm_minus_ww:.2f} "
            f"| {r.spread:.2f} |"
        )
    return "\n".join(out)


def _rows_text(rows: Sequence[int]) -> str:
    rows = [str(r) for r in rows]
    if not rows:
        return "no row"
    return (
        "row " + rows[0] if len(rows) == 1 else "rows " + ", ".join(rows[:-1]) + " and " + rows[-1]
    )


def readme_summary(t: Tables) -> str:
    """README.md's Results in two sentences."""
    rows, last = t.rows, t.rows[-1]
    ours = {v: fmt_seq([int(t.stat(r, f"isvm_gt_{v}")) for r in rows], "d") for v in RIVALS}
    paper = {v: fmt_seq([int(t.stat(r, f"paper_isvm_gt_{v}")) for r in rows], "d") for v in RIVALS}
    strong = [
        r
        for r in rows
        if all(t.t4(r, v, q)["p_value"] <= 0.01 for v in RIVALS for q in PERCENTILES[:2])
    ]
    median = [r for r in rows if any(t.t4(r, v, 50)["p_value"] <= 0.05 for v in RIVALS)]
    n = t.n_datasets(last)
    k = {v: int(t.t4(last, v, 10)["k"]) for v in RIVALS}
    median_text = (
        f"in the 50% column of {_rows_text(median)}" if median else "in no row's 50% column"
    )
    return (
        f"ISVM is above 1-vs-all in {ours['ova']} and above WW in {ours['ww']} of the "
        f"{fmt_seq([t.cells(r) for r in rows], 'd')} cells of rows {fmt_seq(rows, 'd')} (the "
        f"paper: {paper['ova']} and {paper['ww']}). Table 4's sign test rejects \"no "
        f'advantage" at exact p <= 1% against both rivals in the 10% and 25% columns of '
        f"{_rows_text(strong)}, and at 5% {median_text}; row {last}'s {n} data sets would "
        f"need {exact_k(n, 0.05)} wins for 5% (ours at 10%: {k['ova']} against 1-vs-all, "
        f"{k['ww']} against WW), and with so few a non-rejection cannot show that there is "
        "no advantage."
    )


#: name -> (file relative to the repository root, renderer)
#: DNA under its two readings (config/dna_readings.yaml), registry name -> printed
READINGS = {
    "dna": "StatLog's 180 bits (`dna`)",
    "dna_ordinal": "ordinal, 60 positions (`dna_ordinal`)",
}


def paper_cells(folder: str) -> pd.DataFrame:
    """A results folder's table3_vs_paper cells that the paper has too, with ``abs_diff``."""
    c = pd.read_csv(HERE / folder / "table3_vs_paper.csv")
    return c[c["present"] == "both"].assign(abs_diff=lambda d: d["diff"].abs())


def _dna_comparison() -> pd.DataFrame:
    """config/dna_readings.yaml's cells beside the paper's, with ``abs_diff``."""
    return paper_cells("dna_readings")


def _dna_gaps(c: pd.DataFrame) -> pd.DataFrame:
    """Mean |ours - paper| of :func:`_dna_comparison`'s cells per (Ns, method) and reading
    (columns: printed names)."""
    return c.pivot_table(index=["Ns", "method"], columns="dataset", values="abs_diff")


BITS, ORDINAL = (printed_name(name) for name in READINGS)


def dna_readings_table(t: Tables) -> str:
    """Per row and method: mean |ours - paper| with each DNA reading, and ISVM at 10%."""
    c = _dna_comparison()
    top = c[(c["method"] == "isvm") & (c["percentile"] == 10)].set_index(["dataset", "Ns"])
    head = " | ".join(f"mean abs diff, {text}" for text in READINGS.values())
    out = [f"| Ns | method | {head} | ISVM 10%: bits / ordinal / paper |", "|---" * 4 + "|---|"]
    for (ns, method), gaps in _dna_gaps(c).iterrows():
        row = f"| {ns} | {NAMES[method]} | {gaps[BITS]:.1f} | {gaps[ORDINAL]:.1f} |"
        if method == "isvm":
            values = [top.loc[(d, ns), "ours"] for d in (BITS, ORDINAL)]
            row += f" {fmt_seq([*values, top.loc[(BITS, ns), 'paper']], '.2f')} |"
        else:
            row += " |"
        out.append(row)
    return "\n".join(out)


def dna_readings_verdict(t: Tables) -> str:
    """Which DNA reading is nearer the paper, and by how much."""
    c = _dna_comparison()
    gaps = _dna_gaps(c)
    nearer = int((gaps[ORDINAL] < gaps[BITS]).sum())
    ordinal = c[c["dataset"] == ORDINAL]
    within = int((ordinal["abs_diff"] <= 2).sum())
    return (
        f"The ordinal reading is nearer the paper in {nearer} of the {len(gaps)} (row, method) "
        f"pairs, by {fmt_range(gaps[BITS] - gaps[ORDINAL], '.1f')} points, yet still "
        f"{fmt_range(gaps[ORDINAL], '.1f')} points from it; {word(within)} of its "
        f"{len(ordinal)} cells are within 2 points of the paper's."
    )


#: Vowel's two readings at 100 subsamples: folder -> printed column head
VOWEL_READINGS = {
    "vowel_528": "528 training rows (`vowel`)",
    "vowel_all": "990 rows (`vowel_all`, the rows' since 2026-12-06)",
}


def _vowel_gaps() -> pd.DataFrame:
    """Per (Ns, method) and Vowel reading (a VOWEL_READINGS folder): the mean |ours -
    paper| over the 10/25/50% cells, the cells within 2 points, ISVM's 10% cell and the
    paper's."""
    frames = []
    for folder in VOWEL_READINGS:
        c = paper_cells(folder)
        g = c.groupby(["Ns", "method"])
        frames.append(
            pd.DataFrame(
                {
                    "reading": folder,
                    "gap": g["abs_diff"].mean(),
                    "within": g["abs_diff"].apply(lambda a: int((a <= 2).sum())),
                    "cells": g.size(),
                    "top": c[c["percentile"] == 10].set_index(["Ns", "method"])["ours"],
                    "paper": c[c["percentile"] == 10].set_index(["Ns", "method"])["paper"],
                }
            )
        )
    return pd.concat(frames).reset_index()


def vowel_readings_table(t: Tables) -> str:
    """Per row and method: mean |ours - paper| with each Vowel reading (100 subsamples)."""
    g = _vowel_gaps().set_index(["reading", "Ns", "method"])
    head = " | ".join(f"mean abs diff, {text}" for text in VOWEL_READINGS.values())
    out = [
        f"| Ns | method | {head} | ISVM 10%: 528 / 990 / paper |",
        "|---" * 5 + "|",
    ]
    small, full = VOWEL_READINGS
    for ns, method in g.loc[small].index:
        a, b = g.loc[(small, ns, method)], g.loc[(full, ns, method)]
        top = fmt_seq([a["top"], b["top"], a["paper"]], ".2f") if method == "isvm" else ""
        out.append(f"| {ns} | {NAMES[method]} | {a['gap']:.2f} | {b['gap']:.2f} | {top} |")
    return "\n".join(out)


def vowel_readings_verdict(t: Tables) -> str:
    """Which Vowel reading is nearer the paper, and by how much."""
    gaps = _vowel_gaps()
    g = gaps.pivot_table(index=["Ns", "method"], columns="reading", values="gap")
    small, full = VOWEL_READINGS
    nearer = int((g[full] < g[small]).sum())
    within = gaps.groupby("reading")[["within", "cells"]].sum()
    return (
        f"All 990 rows are nearer the paper in {nearer} of the {len(g)} (row, method) pairs, "
        f"by {fmt_range(g[small] - g[full], '.2f')} points, and put "
        f"{int(within.loc[full, 'within'])} of their {int(within.loc[full, 'cells'])} cells "
        f"within 2 points of the paper's (the 528 rows: {int(within.loc[small, 'within'])})."
    )


def _vowel_by_gamma() -> pd.DataFrame:
    """config/vowel_locality.yaml's records, Table 3 over the paper's gammas (5 and 10)
    and per single gamma, beside the paper's Vowel row: compare_table3's cells with a
    ``gamma`` column."""
    records = read_records(sorted((HERE / "vowel_locality" / "loo").rglob("*.parquet")))
    gammas = sorted(records["gamma"].unique())
    paper_grid = records[records["gamma"].isin([5.0, 10.0])]
    parts = [("5, 10", paper_grid)] + [(f"{g:g}", records[records["gamma"] == g]) for g in gammas]
    cells = [
        compare_table3(table3(part)).query("present == 'both'").assign(gamma=g) for g, part in parts
    ]
    return pd.concat(cells, ignore_index=True)


def vowel_locality_table(t: Tables) -> str:
    """Per reading and gamma: ISVM at 10% per row, and the mean |ours - paper| of all
    methods and columns per row."""
    c = _vowel_by_gamma()
    rows = sorted(c["Ns"].unique())
    ns = " / ".join(str(r) for r in rows)
    out = [
        f"| reading | gamma | ISVM 10%, Ns {ns} | mean abs diff, Ns {ns} |",
        "| --- | --- | --- | --- |",
    ]
    paper = c[(c["method"] == "isvm") & (c["percentile"] == 10)].groupby("Ns")["paper"].first()
    out.append(f"| the paper | 5, 10 | {fmt_seq(paper.loc[rows], '.1f')} | |")
    for (reading, gamma), g in c.groupby(["dataset", "gamma"], sort=False):
        top = g[(g["method"] == "isvm") & (g["percentile"] == 10)].set_index("Ns")["ours"]
        gap = g.assign(a=g["diff"].abs()).groupby("Ns")["a"].mean()
        out.append(
            f"| {reading} | {gamma} | {fmt_seq(top.reindex(rows), '.1f')} "
            f"| {fmt_seq(gap.reindex(rows), '.1f')} |"
        )
    return "\n".join(out)


def _ww_paper_table3() -> pd.DataFrame:
    """Table 3 of config/ww_paper.yaml: its `ww_paper` records (docs/results/ww_paper/loo)
    beside the rows' committed ISVM, 1-vs-all and WW records of the same subsamples (the
    cells and subsamples `ww_paper` ran; a part still to run leaves fewer)."""
    own = read_records(sorted((HERE / "ww_paper" / "loo").rglob("*.parquet")))
    own = own[own["method"] == "ww_paper"]
    rows = sorted(set(table4_rows(own["Ns"])))
    committed = pd.concat(
        [read_records(sorted((HERE / f"ns{r}" / "loo").rglob("*.parquet"))) for r in rows],
        ignore_index=True,
    )
    ran = own[["dataset", "Ns", "subsample"]].drop_duplicates()
    records = pd.concat([own, committed.merge(ran, on=["dataset", "Ns", "subsample"])])
    return table3(records.reset_index(drop=True), methods=("isvm", "ova", "ww", "ww_paper"))


def ww_paper_table(t: Tables) -> str:
    """Per row: the full WW dual (`ww`) and Appendix E's kernel (`ww_paper`) against the
    paper's WW column and in Table 4, on the same subsamples."""
    t3 = _ww_paper_table3()
    paper4 = paper_table(4).set_index("Ns")
    summaries, lrs = {}, {}
    for rival in ("ww", "ww_paper"):
        as_ww = t3.drop(columns=[c for c in t3 if c.startswith("ww")]).assign(
            **{f"ww_{q}": t3[f"{rival}_{q}"] for q in PERCENTILES}
        )
        summaries[rival] = row_summary(compare_table3(as_ww)).set_index(["row", "method"])
        lrs[rival] = lrt_table(as_ww, pairs=[("isvm", "ww")]).set_index("Ns")
    out = [
        "| row | data sets | WW column's mean abs diff: ww / ww_paper "
        "| ISVM > WW cells: ww / ww_paper / paper | corr of ISVM - WW with the paper's: "
        "ww / ww_paper | Table 4 vs WW (10 / 25 / 50%): ww; ww_paper; paper |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in sorted({r for r, _ in summaries["ww"].index}):
        s = {rival: summaries[rival].loc[row] for rival in summaries}
        gaps = fmt_seq([s[r].loc["ww", "mean_abs_diff"] for r in s], ".2f")
        wins = [int(s[r].loc["isvm", "isvm_gt_ww"]) for r in s]
        wins.append(int(s["ww"].loc["isvm", "paper_isvm_gt_ww"]))
        corr = fmt_seq([s[r].loc["isvm", "corr_isvm_minus_ww"] for r in s], ".2f")
        t4 = [fmt_seq([lrs[r].loc[row, f"ww_{q}"] for q in PERCENTILES], "g") for r in lrs] + [
            fmt_seq([paper4.loc[row, f"ww_{q}"] for q in PERCENTILES], "g")
        ]
        n = int(s["ww"].loc["isvm", "datasets"])
        out.append(f"| {row} | {n} | {gaps} | {fmt_seq(wins, 'd')} | {corr} | {'; '.join(t4)} |")
    return "\n".join(out)


BLOCKS = {
    "readme-results": ("README.md", readme_summary),
    "claims-rows": ("docs/results/README.md", comparison),
    "claims-table4": ("docs/results/README.md", table4),
    "claims-power": ("docs/results/README.md", power_table),
    "best-per-row": ("docs/results/README.md", best_per_row),
    "offsets": ("docs/results/README.md", offsets_table),
    **{
        f"table3-{r}": ("docs/results/README.md", lambda t, r=r: table3_row(t, r))
        for r in (500, 200, 100, 50)
    },
    **{
        f"summary-{r}": ("docs/results/README.md", lambda t, r=r: row_sentence(t, r))
        for r in (500, 200, 100)
    },
    "summary-50": ("docs/results/README.md", lambda t: row_summary_table(t, 50)),
    "isvm-neg": ("docs/results/README.md", isvm_neg_table),
    "sensitivity": ("docs/results/README.md", sensitivity_table),
    "dna-readings": ("docs/results/README.md", dna_readings_table),
    "dna-readings-verdict": ("docs/results/README.md", dna_readings_verdict),
    "vowel-locality": ("docs/results/README.md", vowel_locality_table),
    "vowel-readings": ("docs/results/README.md", vowel_readings_table),
    "vowel-readings-verdict": ("docs/results/README.md", vowel_readings_verdict),
    "ww-paper": ("docs/results/README.md", ww_paper_table),
}


def render(name: str, t: Tables) -> str:
    """A block's Markdown; its prose (not its tables) wrapped at 90 columns."""
    text = BLOCKS[name][1](t).strip()
    if text.startswith("|"):
        return text
    return textwrap.fill(text, width=90, break_long_words=False, break_on_hyphens=False)


def main(argv: list[str]) -> int:
    mode = next((a for a in argv if a in ("--check", "--write")), None)
    folders = [Path(a) for a in argv if not a.startswith("--")]
    if mode is not None:
        sys.path.insert(0, str(HERE))
        import prose

        return prose.main(mode, Tables(folders or None))
    t = Tables(folders or None)
    for name in BLOCKS:
        try:
            text = render(name, t)
        except (KeyError, IndexError, ValueError) as e:  # a row this set of folders lacks
            text = f"(not with these folders: {e!r})"
        print(f"### {name}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
