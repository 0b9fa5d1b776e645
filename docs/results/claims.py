"""The numbers behind docs/results/README.md's "The paper's claims", from committed tables.

    python docs/results/claims.py docs/results/ns50 docs/results/ns100

Each argument is the folder of one run's tables (rows of Ns run apart). Prints
Markdown: the comparison with the paper per row (``table3_rows``), Table 4 per row
beside the paper's, the winner per data set and row, and the share of the grid near
the best per method and row where ``near_best.csv`` is there. A row is the paper's
(Iris 140 and Wine 150 count in row 200). Nothing here is typed by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from isvm.experiment.lrt import table4_rows
from isvm.experiment.paper import paper_table
from isvm.experiment.pooling import compare_table3, row_summary

METHODS = ("isvm", "ova", "ww")
NAMES = {"isvm": "ISVM", "ova": "1-vs-all", "ww": "WW"}


def _read(folders: list[Path], name: str) -> pd.DataFrame:
    frames = [pd.read_csv(f / name) for f in folders if (f / name).exists()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def comparison(folders: list[Path]) -> str:
    rows = row_summary(compare_table3(_read(folders, "table3.csv")))
    out = [
        "| Ns | data sets | mean \\|diff\\| ISVM / 1-vs-all / WW | ISVM > 1-vs-all, ours (paper) "
        "| ISVM > WW, ours (paper) | corr. of ISVM - 1-vs-all / ISVM - WW with the paper's "
        "| mean ISVM - 1-vs-all, ours (paper) | mean ISVM - WW, ours (paper) "
        "| best method as the paper's |",
        "| ---: | ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row, g in rows.groupby("row"):
        m = g.set_index("method")
        i = m.loc["isvm"]
        n = {k: int(i[k]) for k in ("datasets", "cells", "same_winner", "winner_cells")}
        n.update({k: int(i[k]) for k in i.index if "_gt_" in k})
        out.append(
            f"| {row} | {n['datasets']} | "
            + " / ".join(f"{m.loc[k, 'mean_abs_diff']:.2f}" for k in METHODS)
            + f" | {n['isvm_gt_ova']} of {n['cells']} ({n['paper_isvm_gt_ova']})"
            + f" | {n['isvm_gt_ww']} of {n['cells']} ({n['paper_isvm_gt_ww']})"
            + f" | {i['corr_isvm_minus_ova']:.2f} / {i['corr_isvm_minus_ww']:.2f}"
            + f" | {i['isvm_minus_ova']:+.2f} ({i['paper_isvm_minus_ova']:+.2f})"
            + f" | {i['isvm_minus_ww']:+.2f} ({i['paper_isvm_minus_ww']:+.2f})"
            + f" | {n['same_winner']} of {n['winner_cells']} |"
        )
    return "\n".join(out)


def table4(folders: list[Path]) -> str:
    comp = _read(folders, "table4_vs_paper.csv")
    out = [
        "| Ns | rival | 10% ours (paper) | 25% ours (paper) | 50% ours (paper) |",
        "| ---: | --- | --- | --- | --- |",
    ]
    for (ns, rival), g in comp.groupby(["Ns", "rival"], sort=True):
        g = g.set_index("percentile")
        cells = [
            f"{g.loc[q, 'ours']:g} (k={g.loc[q, 'k']}/{g.loc[q, 'n']}; {g.loc[q, 'paper']:g})"
            for q in (10, 25, 50)
        ]
        name = "1-vs-all" if rival == "svm" else "WW"
        out.append(f"| {ns} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def winners(folders: list[Path]) -> str:
    """The best method at the 10% column per data set and row, ours and the paper's."""
    ours = _read(folders, "table3.csv")
    paper = paper_table(3)
    both = ours.merge(paper, on=["dataset", "Ns"], suffixes=("", "_p"))
    both = both.assign(row=table4_rows(both["Ns"]))
    out = ["| data set | Ns | best at 10%, ours | paper's |", "| --- | ---: | --- | --- |"]
    for r in both.sort_values(["row", "dataset"]).itertuples(index=False):
        r = r._asdict()
        mine = max(METHODS, key=lambda m: r[f"{m}_10"])
        theirs = max(METHODS, key=lambda m: r[f"{m}_10_p"])
        out.append(f"| {r['dataset']} | {r['Ns']} | {NAMES[mine]} | {NAMES[theirs]} |")
    return "\n".join(out)


def near_best(folders: list[Path], tolerance: float = 1.0) -> str:
    shares = _read(folders, "near_best.csv")
    if shares.empty:
        return "(no near_best.csv)"
    at = shares[(shares["tolerance"] - tolerance).abs() < 1e-9]
    at = at.assign(row=table4_rows(at["Ns"]))
    mean = at.groupby(["row", "method"])["share"].mean().unstack("method")
    wins = (
        at.pivot_table(index=["row", "dataset"], columns="method", values="share")
        .assign(best=lambda t: t[list(METHODS)].idxmax(axis=1))
        .groupby("row")["best"]
        .value_counts()
        .unstack(fill_value=0)
    )
    out = [
        f"| Ns | share of the grid within {tolerance:g} point of the best, "
        "ISVM / 1-vs-all / WW | data sets where it is largest, ISVM / 1-vs-all / WW |",
        "| ---: | --- | --- |",
    ]
    for ns in mean.index:
        out.append(
            f"| {ns} | "
            + " / ".join(f"{mean.loc[ns, m]:.3f}" for m in METHODS)
            + " | "
            + " / ".join(str(int(wins.loc[ns].get(m, 0))) for m in METHODS)
            + " |"
        )
    return "\n".join(out)


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv]
    for title, text in (
        ("Table 3 vs the paper, per row", comparison(folders)),
        ("Table 4 per row", table4(folders)),
        ("Best method per data set", winners(folders)),
        ("Near-best share", near_best(folders)),
    ):
        print(f"### {title}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
