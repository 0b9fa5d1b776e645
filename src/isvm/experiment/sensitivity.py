"""``python -m isvm sensitivity``: Table 3 under each reading of what the paper leaves open.

The paper does not say how features were scaled before the kernel
``exp(-gamma ||x - x'||^2 / M)``, how its "pooled and sorted" ranking combines
subsamples and grid points, nor which Weston-Watkins kernel produced its WW
column (appendix E prints one that is not the full dual's). A *reading* is one
choice of each: feature scaling (``zscore``, ``minmax``, ``none``) x ranking
(:data:`isvm.experiment.pooling.POOLINGS`) x WW formulation (``ww``, the full
dual kernel; ``ww_paper``, appendix E as printed).

For every reading this module builds Table 3 from the LOO records of the first
``n_subsamples`` subsamples and compares it with the published one, cell by
cell (:func:`isvm.experiment.pooling.comparison_summary`): mean |diff| per
method, how often ISVM beats each rival (ours and the paper's, on the same
cells), the correlation of ISVM - rival with the paper's, and the mean gap
between the top and the bottom percentile (the paper's is small; ``pooled``
ranking makes it large). A second table gives every data set's mean offset per
reading and method, so that residual disagreements are stated, not averaged
away. Records carry their data set's ``scaling`` (see :mod:`isvm.loo.cli`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from isvm.data.preprocess import SCALINGS
from isvm.experiment import pooling
from isvm.experiment.table_files import write_table

WW_METHODS: tuple[str, ...] = ("ww", "ww_paper")
READING_COLUMNS: tuple[str, ...] = ("scaling", "pooling", "ww_method")


def _readings(
    records: pd.DataFrame,
    scalings: Sequence[str],
    poolings: Sequence[str],
    ww_methods: Sequence[str],
    n_subsamples: int,
):
    """Yield (reading, records of that reading with its WW formulation renamed 'ww')."""
    if "scaling" not in records.columns:
        raise ValueError("LOO records lack the 'scaling' column (written by isvm loo)")
    recs = records[records["subsample"] < n_subsamples]
    for scaling in scalings:
        for ww in ww_methods:
            keep = (recs["scaling"] == scaling) & recs["method"].isin(["isvm", "ova", ww])
            sub = recs[keep]
            missing = {"isvm", "ova", ww} - set(sub["method"])
            if missing:
                raise ValueError(
                    f"no LOO records for scaling {scaling!r}, "
                    f"method(s) {', '.join(sorted(missing))}"
                )
            counts = sub.groupby(["dataset", "Ns", "method"])["subsample"].nunique()
            if (counts < n_subsamples).any():
                short = counts[counts < n_subsamples].index[0]
                raise ValueError(
                    f"scaling {scaling!r}: {short} has fewer than {n_subsamples} subsamples"
                )
            sub = sub.drop(columns="scaling").assign(method=sub["method"].replace({ww: "ww"}))
            for pool in poolings:
                yield {"scaling": scaling, "pooling": pool, "ww_method": ww}, sub


def sensitivity_tables(
    records: pd.DataFrame,
    *,
    scalings: Sequence[str] = SCALINGS,
    poolings: Sequence[str] = pooling.POOLINGS,
    ww_methods: Sequence[str] = WW_METHODS,
    n_subsamples: int,
    percentiles: Sequence[float] = pooling.PERCENTILES,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per reading, one row per reading x data set x Ns x method).

    The first has, per reading: ``cells_per_method`` compared, ``mad_{m}`` and ``bias_{m}``
    (mean |diff| and mean diff per method, points), ``isvm_gt_{r}`` /
    ``paper_isvm_gt_{r}`` and ``corr_isvm_minus_{r}`` for each rival r, and
    ``spread`` / ``paper_spread``: the mean over cells of top-q_min minus
    top-q_max accuracy. The second has each data set's mean diff over percentiles.
    """
    qs = sorted(percentiles)
    rows, offsets = [], []
    for reading, recs in _readings(records, scalings, poolings, ww_methods, n_subsamples):
        wide = pooling.table3(recs, qs, reading["pooling"])
        comp = pooling.compare_table3(wide)
        both = comp[comp["present"] == "both"]
        summary = pooling.comparison_summary(comp).set_index("method")
        n_methods = max(1, both["method"].nunique())
        row: dict[str, object] = {**reading, "cells_per_method": int(len(both)) // n_methods}
        for m in pooling.PAPER_METHODS:
            row[f"mad_{m}"] = summary.loc[m, "mean_abs_diff"] if m in summary.index else np.nan
            row[f"bias_{m}"] = summary.loc[m, "mean_diff"] if m in summary.index else np.nan
        for r in pooling.RIVALS:
            for col in (f"isvm_gt_{r}", f"paper_isvm_gt_{r}", f"corr_isvm_minus_{r}"):
                row[col] = summary.loc["isvm", col] if col in summary.columns else np.nan
        top = both[both["percentile"] == qs[0]].set_index(["dataset", "Ns", "method"])
        low = both[both["percentile"] == qs[-1]].set_index(["dataset", "Ns", "method"])
        common = top.index.intersection(low.index)
        row["spread"] = float((top.loc[common, "ours"] - low.loc[common, "ours"]).mean())
        row["paper_spread"] = float((top.loc[common, "paper"] - low.loc[common, "paper"]).mean())
        rows.append(row)
        per_ds = both.groupby(["dataset", "Ns", "method"], sort=False)["diff"].mean()
        for (ds, ns, m), d in per_ds.items():
            offsets.append({**reading, "dataset": ds, "Ns": int(ns), "method": m, "mean_diff": d})
    table = pd.DataFrame(rows)
    for r in pooling.RIVALS:
        for col in (f"isvm_gt_{r}", f"paper_isvm_gt_{r}"):
            table[col] = table[col].astype("Int64")
    by_dataset = pd.DataFrame(offsets)
    wide = by_dataset.pivot_table(
        index=[*READING_COLUMNS, "dataset", "Ns"], columns="method", values="mean_diff", sort=False
    ).reset_index()
    wide.columns.name = None
    wide = wide.rename(columns={m: f"diff_{m}" for m in pooling.PAPER_METHODS})
    return table, wide


def _label(row: Mapping[str, object]) -> str:
    ranking = {"per_subsample": "per subsample", "mean_then_rank": "mean then rank"}
    pool = ranking.get(str(row["pooling"]), row["pooling"])
    return f"{row['scaling']} / {pool} / {row['ww_method']}"


def plot_sensitivity(table: pd.DataFrame, path: str | Path, *, caption: str = "") -> list[Path]:
    """Two panels over the readings: mean |diff| per method; ISVM wins, ours vs the paper's."""
    from isvm.experiment.figures import _footer_space, _plt, _style, save_figure

    plt = _plt()
    x = np.arange(len(table))
    width_in, height_in = max(7.0, 0.45 * len(table) + 2.5), 8.5
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(width_in, height_in), sharex=True)
    fig.subplots_adjust(
        top=0.94,
        bottom=_footer_space(fig, caption) + 2.3 / height_in,
        hspace=0.12,
        left=0.9 / width_in,
        right=1 - 0.3 / width_in,
    )
    width = 0.27
    for k, m in enumerate(pooling.PAPER_METHODS):
        ax1.bar(x + (k - 1) * width, table[f"mad_{m}"], width, label=m, color=_style(m)["color"])
    ax1.set_ylabel("mean |ours - paper| (points)")
    ax1.set_title(
        "Table 3 under each reading (scaling / ranking / WW), against the published table"
    )
    ax1.legend(frameon=False, ncol=3)
    ax1.grid(axis="y", alpha=0.3)
    for k, r in enumerate(pooling.RIVALS):
        ax2.bar(
            x + (k - 0.5) * 0.38,
            table[f"isvm_gt_{r}"].astype(float),
            0.38,
            label=f"ours: ISVM > {r}",
            color=_style(r)["color"],
            alpha=0.8,
        )
        ax2.scatter(
            x + (k - 0.5) * 0.38,
            table[f"paper_isvm_gt_{r}"].astype(float),
            marker="_",
            s=200,
            color="black",
            label="the paper, same cells" if k == 0 else None,
            zorder=3,
        )
    ax2.set_ylabel(f"cells where ISVM wins (of {int(table['cells_per_method'].max())})")
    ax2.set_xticks(
        x,
        [_label(r) for r in table.to_dict("records")],
        fontsize=7,
        rotation=50,
        ha="right",
        rotation_mode="anchor",
    )
    top = float(np.nanmax(table[[f"paper_isvm_gt_{r}" for r in pooling.RIVALS]].astype(float)))
    ax2.set_ylim(0, 1.3 * max(top, float(table["cells_per_method"].max()) * 0.5, 1.0))
    ax2.legend(frameon=False, fontsize=8, ncol=3, loc="upper center")
    ax2.grid(axis="y", alpha=0.3)
    return save_figure(fig, path, caption=caption)


def write_sensitivity(
    records: pd.DataFrame,
    out_dir: str | Path,
    *,
    settings: Mapping[str, object],
    scalings: Sequence[str] = SCALINGS,
    poolings: Sequence[str] = pooling.POOLINGS,
    ww_methods: Sequence[str] = WW_METHODS,
    n_subsamples: int,
    percentiles: Sequence[float] = pooling.PERCENTILES,
    figure: str | Path | None = None,
    caption: str = "",
) -> list[Path]:
    """Write ``sensitivity`` and ``sensitivity_datasets`` (CSV + Markdown) and the figure."""
    table, by_dataset = sensitivity_tables(
        records,
        scalings=scalings,
        poolings=poolings,
        ww_methods=ww_methods,
        n_subsamples=n_subsamples,
        percentiles=percentiles,
    )
    settings = {**settings, "sensitivity subsamples": f"the first {n_subsamples}"}
    best = table.assign(mad=table[[f"mad_{m}" for m in pooling.PAPER_METHODS]].mean(axis=1))
    best = best.sort_values("mad", kind="mergesort").iloc[0]
    notes = (
        "One row per reading (scaling x ranking x WW formulation). mad_m / bias_m: mean "
        "|ours - paper| / mean (ours - paper) over the Table 3 cells of method m, in points; "
        "isvm_gt_r: cells where our ISVM beats our r, paper_isvm_gt_r: the same cells in the "
        "paper; corr_isvm_minus_r: correlation of ISVM - r, ours with the paper's; spread: "
        f"mean of top-{percentiles[0]:g}% minus top-{max(percentiles):g}% accuracy (paper_spread: "
        f"the paper's). Closest reading (mean mad over methods {best['mad']:.2f}): scaling "
        f"{best['scaling']}, ranking {best['pooling']}, WW {best['ww_method']}. "
        "sensitivity_datasets gives each data set's offsets."
    )
    paths = list(
        write_table(
            table,
            Path(out_dir) / "sensitivity",
            title="Table 3 sensitivity: each reading of the paper against the published table",
            settings=settings,
            notes=notes,
        )
    )
    paths += write_table(
        by_dataset,
        Path(out_dir) / "sensitivity_datasets",
        title="Table 3 sensitivity per data set: mean ours - paper over the percentiles (points)",
        settings=settings,
        notes="diff_m: mean over the percentiles of our Table 3 cell minus the paper's.",
    )
    if figure is not None:
        used = f"sensitivity subsamples: the first {n_subsamples}"
        paths += plot_sensitivity(table, figure, caption=f"{caption}; {used}" if caption else used)
    return paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm sensitivity``."""
    parser.add_argument(
        "--records",
        type=Path,
        nargs="+",
        required=True,
        help="LOO record .parquet files of every scaling and method",
    )
    parser.add_argument("--n-subsamples", type=int, required=True, help="use the first N")
    parser.add_argument("--scalings", nargs="+", choices=SCALINGS, default=list(SCALINGS))
    parser.add_argument(
        "--poolings", nargs="+", choices=pooling.POOLINGS, default=list(pooling.POOLINGS)
    )
    parser.add_argument("--ww-methods", nargs="+", choices=WW_METHODS, default=list(WW_METHODS))
    parser.add_argument("--percentiles", type=float, nargs="+", default=list(pooling.PERCENTILES))
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a line of the settings block written into every table (repeatable)",
    )
    parser.add_argument("--out-dir", type=Path, default=Path("results/tables"))
    parser.add_argument("--figure", type=Path, help="figure .png (+ .pdf)")
    parser.add_argument("--caption", default="", help="figure footer")


def run(args: argparse.Namespace) -> int:
    """Write the sensitivity tables (and figure); print the paths."""
    from isvm.experiment.tables import parse_settings
    from isvm.loo.records import read_records

    try:
        percentiles = [int(q) if float(q).is_integer() else q for q in args.percentiles]
        paths = write_sensitivity(
            read_records(args.records),
            args.out_dir,
            settings=parse_settings(args.setting),
            scalings=args.scalings,
            poolings=args.poolings,
            ww_methods=args.ww_methods,
            n_subsamples=args.n_subsamples,
            percentiles=percentiles,
            figure=args.figure,
            caption=args.caption,
        )
    except (ValueError, KeyError, OSError) as exc:
        print(f"isvm sensitivity: error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(f"wrote {p}")
    return 0
