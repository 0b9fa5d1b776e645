"""``python -m isvm data ...``: fetch a processed data set, list the registry, build Table 2.

- ``fetch NAME [--source bundled|openml|auto] [--scaling zscore|minmax|none] [--out PATH]``
  writes ``resources/datasets/NAME.npz`` (or ``--out``); this is what the workflow's rule calls.
  With ``--definition JSON`` (a study config's ``own_datasets`` entry), NAME is that
  data set's name and the definition says where its table comes from.
- ``list`` prints the registry.
- ``table2 NPZ... [--out-stem results/tables/table2]`` writes Table 2 (ours beside the paper's).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from isvm.data.load import SOURCES, load_dataset, load_own, save_npz
from isvm.data.preprocess import SCALINGS
from isvm.data.registry import DATASETS, READINGS, REGISTRY, DataError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``fetch``, ``list`` and ``table2`` sub-commands."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    fmt = parser.formatter_class
    fetch = sub.add_parser(
        "fetch", help="load one data set, preprocess it and write an .npz", formatter_class=fmt
    )
    fetch.add_argument(
        "name",
        metavar="NAME",
        help=f"registry name ({', '.join(DATASETS + READINGS)}) or --definition's",
    )
    fetch.add_argument(
        "--definition",
        type=_definition,
        help="a study config's own_datasets entry as JSON, e.g. "
        '\'{"file": "plants.csv", "target": "species"}\'',
    )
    fetch.add_argument(
        "--source",
        choices=SOURCES,
        default="bundled",
        help="bundled (offline, as the workflow), openml (download) or auto (openml, else bundled)",
    )
    fetch.add_argument("--scaling", choices=SCALINGS, default="zscore", help="feature scaling")
    fetch.add_argument("--out", type=Path, help="default: resources/datasets/SCALING/NAME.npz")
    fetch.add_argument(
        "--cache-dir", type=Path, help="OpenML cache (default: resources/openml-cache)"
    )

    sub.add_parser("list", help="print the registry of the 14 data sets")


def _definition(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("a JSON object (the own_datasets entry) is needed")
    return value


def _fetch(args: argparse.Namespace) -> int:
    out = args.out
    if out is None:
        out = Path("resources/datasets") / args.scaling / f"{args.name}.npz"
    if args.definition is not None:
        dataset = load_own(args.name, args.definition, args.scaling, args.cache_dir)
    else:
        dataset = load_dataset(args.name, args.source, args.scaling, args.cache_dir)
    save_npz(dataset, out)
    print(
        f"{dataset.name}: {dataset.n_examples} x {dataset.n_features}, "
        f"{dataset.n_classes} classes, source={dataset.source}, scaling={dataset.scaling}, "
        f"sha256(X)={dataset.checksums['X'][:16]}..., sha256(y)={dataset.checksums['y'][:16]}... "
        f"-> {out}"
    )
    return 0


def _list() -> int:
    header = f"{'name':11s} {'openml':>6s} {'rows':>6s} {'classes':>7s} {'features':>8s}  bundled"
    print(header)
    for name in DATASETS + READINGS:
        spec = REGISTRY[name]
        files = ", ".join(f.path for f in spec.bundled_files)
        if len(spec.bundled_files) > 2:
            files = f"{spec.bundled_files[0].path} (+{len(spec.bundled_files) - 1} more)"
        reading = f" (a reading of {spec.reading_of})" if spec.reading_of else ""
        print(
            f"{name:11s} {spec.openml_id:6d} {spec.n_rows:6d} {spec.n_classes:7d} "
            f"{spec.n_features:8d}  {files}{reading}"
        )
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the chosen action; a data problem prints one clear line and returns 1."""
    try:
        if args.action == "fetch":
            return _fetch(args)
        return _list()
    except DataError as exc:
        print(f"isvm data {args.action}: error: {exc}", file=sys.stderr)
        return 1
