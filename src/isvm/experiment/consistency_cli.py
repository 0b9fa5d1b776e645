"""``python -m isvm consistency``: the command line of :mod:`isvm.experiment.consistency`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from isvm.experiment.consistency import (
    DECISIONS,
    DEFAULT_CHOICES,
    LOSS_NAMES,
    LOSSES,
    MINIMISERS,
    PAPER_DRAWS,
    PAPER_L,
    SAMPLINGS,
    SOLVERS,
    TIES,
    Choices,
    all_choices,
    findings,
    inconsistency_rate,
    plot_consistency,
    run_grid,
    settings_of,
    table5,
    write_table5,
)
from isvm.experiment.table_files import write_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``python -m isvm consistency``."""
    parser.add_argument(
        "action",
        nargs="?",
        choices=("cell", "table", "grid"),
        default="cell",
        help="cell: one loss and L, prints the rate on its last line (default); "
        "table: Table 5 and its figure; grid: every combination of choices",
    )
    parser.add_argument("--loss", choices=LOSSES, help="loss of the cell (action 'cell')")
    parser.add_argument(
        "--L",
        type=int,
        nargs="+",
        default=None,
        help="number(s) of classes (cell: one; default for table/grid: 2 3 4 5)",
    )
    parser.add_argument("--draws", type=int, default=PAPER_DRAWS, help="draws of p per cell")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random stream")
    parser.add_argument("--sampling", choices=SAMPLINGS, default=DEFAULT_CHOICES.sampling)
    parser.add_argument(
        "--minimiser",
        choices=MINIMISERS,
        default=DEFAULT_CHOICES.minimiser,
        help="which minimiser counts when it is not unique",
    )
    parser.add_argument("--decision", choices=DECISIONS, default=DEFAULT_CHOICES.decision)
    parser.add_argument("--ties", choices=TIES, default=DEFAULT_CHOICES.ties)
    parser.add_argument(
        "--ww-margin",
        type=float,
        default=DEFAULT_CHOICES.ww_margin,
        help="Weston-Watkins margin (1 as in the paper, 2 as in WW 1999)",
    )
    parser.add_argument(
        "--solver",
        choices=SOLVERS,
        default="fast",
        help="fast: candidate vertices; lp: HiGHS per draw (reference, slow)",
    )
    parser.add_argument(
        "--losses", nargs="+", choices=LOSSES, default=list(LOSSES), help="losses of the table/grid"
    )
    parser.add_argument(
        "--out-stem",
        type=Path,
        default=None,
        help="table/grid: write STEM.csv and STEM.md (grid also STEM_findings.*)",
    )
    parser.add_argument(
        "--figure", type=Path, default=None, help="table: write this PNG and a PDF beside it"
    )


def run(args: argparse.Namespace) -> int:
    """Run one action of ``python -m isvm consistency``."""
    choices = Choices(
        sampling=args.sampling,
        minimiser=args.minimiser,
        decision=args.decision,
        ties=args.ties,
        ww_margin=args.ww_margin,
    )
    start = time.perf_counter()
    if args.action == "cell":
        if args.loss is None or args.L is None or len(args.L) != 1:
            raise SystemExit("isvm consistency: a cell needs --loss and one --L")
        r = inconsistency_rate(args.loss, args.L[0], args.draws, args.seed, choices, args.solver)
        for key, val in settings_of(args.draws, args.seed, args.L, choices, args.solver).items():
            print(f"{key}: {val}")
        print(f"loss: {args.loss} ({LOSS_NAMES[args.loss]})")
        print(
            f"standard error (points): {r.se_pct:.4f}; draws with a non-unique minimiser: "
            f"{r.n_degenerate if args.solver == 'fast' else 'not counted by --solver lp'}; "
            f"{time.perf_counter() - start:.2f} s"
        )
        print(f"{r.rate_pct:.4f}")
        return 0
    L_values = tuple(args.L) if args.L else PAPER_L
    if args.action == "table":
        df = table5(
            L_values, args.draws, args.seed, choices, losses=args.losses, solver=args.solver
        )
        print(df.to_string(index=False))
        if args.out_stem is not None:
            for path in write_table5(
                df,
                args.out_stem,
                draws=args.draws,
                seed=args.seed,
                L_values=L_values,
                choices=choices,
                solver=args.solver,
            ):
                print(f"wrote {path}")
        if args.figure is not None:
            for path in plot_consistency(df, args.figure, draws=args.draws, choices=choices):
                print(f"wrote {path}")
    else:
        margins = sorted({1.0, args.ww_margin})
        grid = run_grid(
            L_values,
            args.draws,
            args.seed,
            losses=args.losses,
            choices=all_choices(margins),
            solver=args.solver,
        )
        found = findings(grid)
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(found.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        if args.out_stem is not None:
            settings = settings_of(args.draws, args.seed, L_values, choices, args.solver)
            settings = {
                k: v for k, v in settings.items() if k in ("draws per cell", "seed", "L", "solver")
            }
            settings["Weston-Watkins margins"] = ", ".join(map(str, margins))
            stem = Path(args.out_stem)
            for path in (
                *write_table(
                    grid,
                    stem,
                    title="Bayes-consistency Monte Carlo: every choice",
                    settings=settings,
                ),
                *write_table(
                    found,
                    stem.with_name(stem.name + "_findings"),
                    title="Which choices reproduce Table 5 (within 2 points per cell)",
                    settings=settings,
                ),
            ):
                print(f"wrote {path}")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0
