"""Fail when a training-time table shows a numba compile outlier.

A LOO job that compiles the kernels itself (no warm cache) adds the compile time,
tens of seconds, to the seconds of its first subsample, and the method's ratio to
WW in results/<run>/timing/training_time.csv jumps by an order of magnitude or more.
Every ISVM/WW and OVA/WW ratio must lie in [1/MAX, MAX]:

    python .ci/check_timing.py results/smoke/timing/training_time.csv --max-ratio 10
"""

from __future__ import annotations

import argparse
import csv
import sys


def outliers(rows: list[dict[str, str]], max_ratio: float) -> list[str]:
    """'dataset column=value' for every ratio outside [1/max_ratio, max_ratio]."""
    bad = []
    for row in rows:
        for column in ("isvm_over_ww", "ova_over_ww"):
            if row.get(column) in (None, ""):
                continue
            value = float(row[column])
            if not 1 / max_ratio <= value <= max_ratio:
                bad.append(f"{row['dataset']} {column}={value:g}")
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", help="training_time.csv")
    parser.add_argument("--max-ratio", type=float, default=10.0)
    args = parser.parse_args(argv)
    with open(args.csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        print(f"check_timing: {args.csv} has no rows", file=sys.stderr)
        return 1
    bad = outliers(rows, args.max_ratio)
    ratios = ", ".join(
        f"{r['dataset']} {float(r['isvm_over_ww']):.2f}/{float(r['ova_over_ww']):.2f}" for r in rows
    )
    print(f"training-time ratios ISVM/WW, OVA/WW: {ratios}")
    if bad:
        print(
            f"check_timing: compile outliers (outside [1/{args.max_ratio:g}, "
            f"{args.max_ratio:g}]): {'; '.join(bad)}",
            file=sys.stderr,
        )
        return 1
    print(f"no compile outliers (every ratio within [1/{args.max_ratio:g}, {args.max_ratio:g}])")
    return 0


if __name__ == "__main__":
    sys.exit(main())
