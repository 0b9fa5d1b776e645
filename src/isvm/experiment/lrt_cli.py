"""``python -m isvm lrt``: the command line of :mod:`isvm.experiment.lrt`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from isvm.experiment.lrt import (
    DEFAULT_PAIRS,
    TIE_RULES,
    Pair,
    compare_table4,
    critical_value,
    format_table4,
    lrt_long,
    lrt_table,
    pairs_note,
    paper_pairs,
    paper_round,
    parse_pairs,
    table4_title,
    write_table4,
)

if TYPE_CHECKING:
    import pandas as pd


def add_comparisons_argument(parser: argparse.ArgumentParser) -> None:
    """``--comparisons METHOD:RIVAL ...``: Table 4's pairs (``isvm lrt``, ``isvm tables``)."""
    parser.add_argument(
        "--comparisons",
        nargs="+",
        metavar="METHOD:RIVAL",
        help="Table 4's sign tests, H0: RIVAL better than or equal to METHOD "
        "(default: " + " ".join(f"{m}:{r}" for m, r in DEFAULT_PAIRS) + ", the paper's)",
    )


def comparison_pairs(args: argparse.Namespace) -> tuple[Pair, ...] | None:
    """The pairs ``--comparisons`` names, checked; None where it is not given."""
    return None if args.comparisons is None else parse_pairs(args.comparisons)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CLI: ``isvm lrt TABLE3_CSV [--out CSV] [--ties loss|win] [--raw] [--no-compare]
    [--comparisons METHOD:RIVAL ...]``."""
    parser.add_argument("table3", type=Path, help="CSV in the layout of paper_table3.csv")
    parser.add_argument(
        "--out",
        type=Path,
        help="write Table 4 to this .csv (paper_table4.csv layout; a .md with settings beside it)",
    )
    parser.add_argument(
        "--details",
        type=Path,
        metavar="STEM",
        help="also write STEM_long and STEM_vs_paper (.csv and .md)",
    )
    parser.add_argument(
        "--ties",
        choices=TIE_RULES,
        default="loss",
        help="count equal Table 3 means as ISVM losses (default) or wins",
    )
    parser.add_argument(
        "--raw", action="store_true", help="full-precision LR instead of the paper's truncation"
    )
    parser.add_argument(
        "--no-compare",
        dest="compare",
        action="store_false",
        help="do not compare with the paper's Table 4",
    )
    add_comparisons_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Read the Table 3 CSV, write and print Table 4, and report the match with the paper."""
    import pandas as pd

    from isvm.experiment.table_files import write_table

    try:
        pairs = comparison_pairs(args) or DEFAULT_PAIRS
        table3 = pd.read_csv(args.table3)
        long = lrt_long(table3, pairs=pairs, ties=args.ties)
        rounding = None if args.raw else "paper"
        main = lrt_table(table3, pairs=pairs, ties=args.ties, rounding=rounding)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        print(f"isvm lrt: {args.table3}: {exc}", file=sys.stderr)
        return 2
    settings = {"table3": str(args.table3), "ties": args.ties, "raw": args.raw}
    if args.out is not None and args.out.suffix != ".csv":
        print(f"isvm lrt: --out must name a .csv file; got {args.out}", file=sys.stderr)
        return 2
    if args.out is not None:
        csv_path, _ = write_table(
            main,
            args.out.with_suffix(""),
            title=table4_title(pairs),
            settings=settings,
            notes=pairs_note(pairs),
        )
        print(f"wrote {csv_path}")
    if args.details is not None:
        write_table4(table3, args.details, settings=settings, pairs=pairs, ties=args.ties)
    print(format_table4(long))
    print(
        "thresholds (paper convention, P(LR > c) <= alpha): "
        + "; ".join(
            f"n={n}: {paper_round(critical_value(n, 0.05, convention='paper')):g} (5%), "
            f"{paper_round(critical_value(n, 0.01, convention='paper')):g} (1%)"
            for n in sorted(long["n"].unique())
            if n > 0
        )
    )
    if args.compare:
        _print_comparison(table3, pairs, args.ties)
    return 0


def _print_comparison(table3: pd.DataFrame, pairs: tuple[Pair, ...], ties: str) -> None:
    """How many of the paper's pairs' cells match its Table 4, and each that differs."""
    if not paper_pairs(pairs):
        paper = ", ".join(f"{m}:{r}" for m, r in DEFAULT_PAIRS)
        print(f"no pair of the paper's ({paper}): nothing to compare with its Table 4")
        return
    comp = compare_table4(table3, pairs=pairs, ties=ties)
    bad = comp[~comp["match"]]
    print(f"{int(comp['match'].sum())} of {len(comp)} cells match the paper's Table 4")
    for r in bad.itertuples():
        print(
            f"  differs: Ns={r.Ns} {r.rival}_{r.percentile}: ours {r.ours:g} (k={r.k}/{r.n}), "
            f"paper {r.paper:g} (k={r.k_paper}); ties: {r.tied or 'none'}; "
            f"closest: {r.closest}"
        )
