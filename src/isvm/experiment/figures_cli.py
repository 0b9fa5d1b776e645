"""``python -m isvm figures``: the command line of :mod:`isvm.experiment.figures`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from isvm.experiment.figures import (
    DEFAULT_NEAR,
    plot_curves,
    plot_isvm_advantage,
    plot_near_best,
    plot_table3_differences,
    plot_table3_vs_paper,
)
from isvm.loo.records import KEY_COLUMNS, read_records


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm figures``."""
    parser.add_argument("kind", choices=("curves", "near-best", "table3"))
    parser.add_argument("--records", type=Path, nargs="*", default=[], help="LOO .parquet files")
    parser.add_argument("--dataset", help="curves: the data set (default: the records' only one)")
    parser.add_argument("--out", type=Path, help="curves / near-best: output .png (+ .pdf)")
    parser.add_argument("--near", type=float, default=DEFAULT_NEAR, help="curves: strip tolerance")
    parser.add_argument("--csv", type=Path, help="near-best: also write the shares as CSV")
    parser.add_argument(
        "--table3", type=Path, nargs="+", help="table3: Table 3 CSV (wide); several are joined"
    )
    parser.add_argument(
        "--vs-paper", type=Path, nargs="+", help="table3: table3_vs_paper CSV; several are joined"
    )
    parser.add_argument("--percentiles", type=float, nargs="+", default=[10, 25, 50])
    parser.add_argument("--heatmap", type=Path, help="table3: heat map .png (+ .pdf)")
    parser.add_argument("--scatter", type=Path, help="table3: scatter .png (+ .pdf)")
    parser.add_argument(
        "--advantage", type=Path, help="table3: ISVM minus rival against Ns, .png (+ .pdf)"
    )
    parser.add_argument("--caption", default="", help="footer text: the settings")


def _joined(paths: Sequence[Path], keys: list[str]) -> pd.DataFrame:
    """CSV tables of several runs (e.g. one row of Ns each) as one; a cell twice is an error."""
    frame = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    twice = frame[frame.duplicated(keys, keep=False)]
    if not twice.empty:
        cell = ", ".join(str(v) for v in twice[keys].iloc[0])
        raise ValueError(f"the same cell in more than one file: {cell}")
    return frame


def run(args: argparse.Namespace) -> int:
    """Draw one kind of figure."""
    try:
        paths: list[Path] = []
        if args.kind in ("curves", "near-best"):
            if args.out is None:
                raise ValueError(f"{args.kind} needs --out")
            records = read_records(args.records, KEY_COLUMNS + ("loo_accuracy",))
            if args.kind == "curves":
                paths += plot_curves(
                    records, args.out, dataset=args.dataset, near=args.near, caption=args.caption
                )
            else:
                paths += plot_near_best(records, args.out, caption=args.caption, csv=args.csv)
                if args.csv is not None:
                    paths.append(args.csv)
        else:
            if args.table3 is None or args.vs_paper is None:
                raise ValueError("table3 needs --table3 and --vs-paper")
            table3 = _joined(args.table3, ["dataset", "Ns"])
            vs_paper = _joined(args.vs_paper, ["dataset", "Ns", "column"])
            if args.heatmap is not None:
                paths += plot_table3_differences(
                    table3,
                    args.heatmap,
                    percentiles=args.percentiles,
                    caption=args.caption,
                )
            if args.scatter is not None:
                paths += plot_table3_vs_paper(vs_paper, args.scatter, caption=args.caption)
            if args.advantage is not None:
                paths += plot_isvm_advantage(
                    table3,
                    args.advantage,
                    percentiles=args.percentiles,
                    caption=args.caption,
                )
    except (ValueError, KeyError, OSError) as exc:
        print(f"isvm figures: error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(f"wrote {p}")
    return 0
