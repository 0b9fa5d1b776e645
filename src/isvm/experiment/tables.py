"""``python -m isvm tables``: Tables 2-4 and the training-time table of one study run.

Reads the LOO record files (``results/loo/{scaling}/{ds}/Ns{n}/{method}/{chunk}.parquet``)
and the data sets (``resources/datasets/{scaling}/{ds}.npz``) of one configuration and
writes, each as CSV and Markdown with the settings that produced it and the
paper's numbers beside ours:

* ``OUT/table2``: the data sets (:mod:`isvm.experiment.table2`);
* ``OUT/table3`` (+ ``_long``, ``_vs_paper``, ``_rows``): mean LOO accuracy of the q%
  best (C, gamma) models (:mod:`isvm.experiment.pooling`), the paper's beside it, and
  the comparison summed up per row of Ns;
* ``OUT/table4`` (+ ``_long``, ``_vs_paper``): the likelihood-ratio tests of
  section 9 (:mod:`isvm.experiment.lrt`), over the data sets present;
* ``OUT/loo_diagnostics``: per cell, how many fits hit the iteration cap and
  how many LOO folds the certificate could not settle;
* ``TIMING/training_time``: seconds per method and data set.

Everything under ``OUT`` depends only on the records' accuracies and solver
outcomes, never on wall-clock time, so two runs of the same configuration give
byte-identical files there. The training-time table is wall-clock and goes to
its own directory (``results/timing`` in the workflow) for that reason.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from isvm.data.load import load_npz
from isvm.experiment import lrt, pooling
from isvm.experiment.lrt_cli import add_comparisons_argument, comparison_pairs
from isvm.experiment.table2 import write_table2
from isvm.experiment.table_files import write_table
from isvm.loo.records import ACCURACY_COLUMNS, read_records
from isvm.loo.refit import LOO_METHODS


def parse_settings(items: Sequence[str]) -> dict[str, str]:
    """``["key=value", ...]`` -> an ordered dict; a malformed item is a ValueError."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"a setting must read KEY=VALUE; got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _present(records: pd.DataFrame) -> str:
    """'iris (Ns 50, 100), wine (Ns 50)': the data sets and sizes in the records."""
    cells = records[["dataset", "Ns"]].drop_duplicates()
    parts = []
    for ds, g in cells.groupby("dataset", sort=True):
        parts.append(f"{ds} (Ns {', '.join(str(n) for n in sorted(g['Ns'].astype(int)))})")
    return "; ".join(parts)


def loo_diagnostics(records: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, Ns, method): records, subsamples, best/median accuracy, solver outcomes."""
    recs = pooling.check_records(records)
    rows = []
    for (ds, ns, method), g in recs.groupby(["dataset", "Ns", "method"], sort=True):
        row = {
            "dataset": str(ds),
            "Ns": int(ns),
            "method": str(method),
            "n_subsamples": int(g["subsample"].nunique()),
            "n_grid_points": int(len(g) // max(1, g["subsample"].nunique())),
            "best_pct": 100.0 * float(g["loo_accuracy"].max()),
            "median_pct": 100.0 * float(g["loo_accuracy"].median()),
        }
        if "converged" in g:
            row["not_converged"] = int((~g["converged"].astype(bool)).sum())
        if "n_capped" in g:
            row["capped_fits"] = int(g["n_capped"].sum())
        if "n_uncertified" in g:
            row["uncertified_folds"] = int(g["n_uncertified"].sum())
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = {m: i for i, m in enumerate(pooling.PAPER_METHODS)}
    key = out["method"].map(lambda m: order.get(m, len(order)))
    out = out.assign(_m=key).sort_values(["dataset", "Ns", "_m", "method"], kind="mergesort")
    return out.drop(columns="_m").reset_index(drop=True)


def _refit_note(methods: pd.Series) -> str:
    """The diagnostics' word on methods served by refit LOO, if any is present."""
    refit = sorted(m for m in set(methods.astype(str)) if LOO_METHODS.get(m) == "refit")
    if not refit:
        return ""
    return (
        f" {', '.join(refit)}: LOO by refitting every fold (isvm.loo.refit), which "
        "certifies nothing, so all their folds count as uncertified."
    )


def _check_comparisons(recs: pd.DataFrame, pairs: Sequence[lrt.Pair]) -> None:
    """Refuse pairs naming a method without records in this run (after ``methods``)."""
    ran = set(recs["method"].astype(str))
    bad = [f"{m}:{r}" for m, r in pairs if not {m, r} <= ran]
    if bad:
        lacking = ", ".join(sorted({m for pair in pairs for m in pair} - ran))
        raise ValueError(
            f"Table 4 pair(s) {', '.join(bad)} name method(s) without records among this "
            f"run's methods: {lacking} (with records: {', '.join(sorted(ran)) or 'none'})"
        )


def _write_table4(
    recs: pd.DataFrame,
    stem: Path,
    *,
    settings: Mapping[str, object],
    pool: str,
    comparisons: Sequence[lrt.Pair] | None,
) -> list[Path]:
    """Table 4 over the records' data sets, for the pairs named (default: the paper's)."""
    if comparisons is None:
        pairs = lrt.DEFAULT_PAIRS  # where a method did not run, its cells are empty
    else:
        pairs = lrt.check_pairs(comparisons)
        _check_comparisons(recs, pairs)
    # Table 4 always uses the paper's percentiles (10, 25, 50), whatever the config's.
    t3 = pooling.table3(recs, lrt.PERCENTILES, pool, methods=lrt.pair_methods(pairs))
    t3 = t3.reindex(columns=list(lrt.table3_columns(pairs)))
    n_rows = t3.assign(row=lrt.table4_rows(t3["Ns"]))
    per_row = n_rows.groupby("row")["dataset"].nunique()
    counts = ", ".join(f"Ns={int(k)}: n={int(v)}" for k, v in per_row.items())
    notes = (
        "Likelihood-ratio (sign) tests of section 9 over the data sets of this run "
        f"({counts}); the paper has n=14 at Ns 50-200 and n=9 at 500. Iris at Ns=140 and "
        "Wine at Ns=150 join the Ns=200 row, as in the paper. The paper's thresholds "
        "(3.77 / 11.35 for n=14) hold only for its n; the long table gives exact "
        "binomial p-values for the n of this run. Table 4 always uses percentiles "
        "10, 25, 50. See isvm.experiment.lrt for the conventions (ties, truncation)."
    )
    return lrt.write_table4(t3, stem, settings=settings, pairs=pairs, notes=notes)


def write_study_tables(
    records: pd.DataFrame,
    out_dir: str | Path,
    *,
    settings: Mapping[str, object],
    percentiles: Sequence[float] = pooling.PERCENTILES,
    pool: str = pooling.DEFAULT_POOLING,
    methods: Sequence[str] = pooling.PAPER_METHODS,
    comparisons: Sequence[lrt.Pair] | None = None,
) -> list[Path]:
    """Tables 3 and 4 and the LOO diagnostics from records; returns the paths written.

    ``comparisons``: Table 4's pairs (method, rival); each method must have
    records among ``methods``, since a named test with nothing to count is a
    mistake. None: the paper's pairs, with empty cells for a method not run.
    ``seconds`` is dropped before anything is computed, so these tables cannot
    depend on timing.
    """
    out_dir = Path(out_dir)
    recs = records[[c for c in ACCURACY_COLUMNS if c in records.columns]]
    recs = recs[recs["method"].isin(list(methods))]
    present = _present(recs)
    settings = {**settings, "cells in this run": present}
    paths = pooling.write_table3(
        recs,
        out_dir / "table3",
        settings,
        percentiles=percentiles,
        pooling=pool,
        notes=(
            "Cells: mean LOO accuracy (%) of the q% best (C, gamma) models; "
            f"pooling '{pool}' (see isvm.experiment.pooling and docs/workflow.md). "
            "table3_vs_paper gives the paper's cells beside ours and the differences."
        ),
        compare=True,
        methods=methods,
    )
    paths += _write_table4(
        recs, out_dir / "table4", settings=settings, pool=pool, comparisons=comparisons
    )
    paths += write_table(
        loo_diagnostics(recs),
        out_dir / "loo_diagnostics",
        title="LOO diagnostics per cell: accuracy range and solver outcomes",
        settings=settings,
        notes=(
            "not_converged: grid points where the full fit or a fold hit max_iter unsettled; "
            "capped_fits: such fits; uncertified_folds: LOO folds whose prediction the "
            "duality-gap certificate could not prove (near-ties, decided by the solve)."
            + _refit_note(recs["method"])
        ),
    )
    return paths


def write_timing(
    records: pd.DataFrame,
    timing_dir: str | Path,
    *,
    settings: Mapping[str, object],
    methods: Sequence[str] = pooling.PAPER_METHODS,
) -> list[Path]:
    """The training-time table (wall-clock; not reproducible by nature)."""
    if "seconds" not in records.columns:
        return []
    table = pooling.training_time_table(records, methods=methods)
    return list(
        write_table(
            table,
            Path(timing_dir) / "training_time",
            title="Training time: LOO seconds per method and data set, and ratios to WW",
            settings=settings,
            notes=(
                "Wall-clock seconds of the LOO grid (full fits and all folds, summed over "
                "grid points, subsamples and sizes), as measured by the jobs of this run: "
                "they depend on the machine, the load and the threads per job, so this "
                "table is not reproducible and lives outside the tables folder. "
                "The paper (section 9): WW runs 8x faster than ISVM and 2x faster than "
                "1-vs-all, with one stochastic SMO code for all three; our solver differs "
                "(coordinate descent with certified early stopping of LOO folds)."
            ),
        )
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm tables``."""
    parser.add_argument(
        "--records", type=Path, nargs="*", default=[], help="LOO record .parquet files"
    )
    parser.add_argument(
        "--datasets", type=Path, nargs="*", default=[], help="data set .npz files (Table 2)"
    )
    parser.add_argument("--percentiles", type=float, nargs="+", default=list(pooling.PERCENTILES))
    parser.add_argument("--pooling", choices=pooling.POOLINGS, default=pooling.DEFAULT_POOLING)
    parser.add_argument("--methods", nargs="+", default=list(pooling.PAPER_METHODS))
    add_comparisons_argument(parser)
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a line of the settings block written into every table (repeatable)",
    )
    parser.add_argument("--out-dir", type=Path, default=Path("results/tables"))
    parser.add_argument("--timing-dir", type=Path, default=Path("results/timing"))


def run(args: argparse.Namespace) -> int:
    """Write every table the inputs allow; print the paths."""
    try:
        settings = parse_settings(args.setting)
        pairs = comparison_pairs(args)
        percentiles = [int(q) if float(q).is_integer() else q for q in args.percentiles]
        paths: list[Path] = []
        if args.datasets:
            datasets = [load_npz(p) for p in sorted(map(str, args.datasets))]
            paths += list(write_table2(datasets, args.out_dir / "table2", settings))
        if args.records:
            records = read_records(args.records)
            paths += write_study_tables(
                records,
                args.out_dir,
                settings=settings,
                percentiles=percentiles,
                pool=args.pooling,
                methods=args.methods,
                comparisons=pairs,
            )
            paths += write_timing(records, args.timing_dir, settings=settings, methods=args.methods)
    except (ValueError, KeyError, OSError) as exc:
        print(f"isvm tables: error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(f"wrote {p}")
    return 0
