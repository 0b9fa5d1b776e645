"""``python -m isvm publish``: copy a run's staged tables and figures into place.

The workflow builds every table and figure under ``results/<run>/.staging/`` and
publishes them only once all of them exist (rule ``publish``): Snakemake deletes a
job's outputs before it runs and after it fails, so a failed rerun loses staged files
only, never the published ones of the last complete run. Every file is first copied
beside its target under a temporary name, then all are renamed into place, so a
reader sees either the old set or the new one file by file, never half a file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def publish(staged: Sequence[str | Path], targets: Sequence[str | Path]) -> int:
    """Copy each staged file to its target (same order); returns how many."""
    if len(staged) != len(targets):
        raise ValueError(f"{len(staged)} staged files but {len(targets)} targets")
    pairs = [(Path(s), Path(t)) for s, t in zip(staged, targets, strict=True)]
    for src, dst in pairs:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst.with_name(f".{dst.name}.publishing"))
    for _, dst in pairs:
        os.replace(dst.with_name(f".{dst.name}.publishing"), dst)
    return len(pairs)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``isvm publish``."""
    parser.add_argument("--staged", nargs="+", required=True, help="the staged files")
    parser.add_argument("--to", nargs="+", required=True, help="their targets, in order")


def run(args: argparse.Namespace) -> int:
    """Publish; errors are one line."""
    try:
        n = publish(args.staged, args.to)
    except (ValueError, OSError) as exc:
        print(f"isvm publish: error: {exc}", file=sys.stderr)
        return 2
    print(f"published {n} files")
    return 0
