"""Command-line interface: ``python -m isvm <command> ...``.

Each command lives in its own module, which provides ``add_arguments(parser)``
and ``run(args) -> int``. Modules are imported only when their command runs,
so ``python -m isvm lrt`` does not pay for compiling the numba solvers.
The Snakemake rules call these commands; they are equally usable by hand.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: command name -> (module that implements it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "data": ("isvm.data.commands", "fetch and inspect the paper's data sets"),
    "subsample": ("isvm.experiment.subsample", "draw the seeded training subsamples"),
    "loo": ("isvm.loo.cli", "leave-one-out accuracy over a (C, gamma) grid"),
    "warmup": ("isvm.warmup", "compile the LOO engine's numba kernels once (numba's cache)"),
    "tables": ("isvm.experiment.tables", "build Tables 2-4 and the timing table"),
    "sensitivity": (
        "isvm.experiment.sensitivity",
        "Table 3 under each reading (scaling x ranking x WW kernel) vs the paper",
    ),
    "lrt": ("isvm.experiment.lrt_cli", "Table 4 likelihood-ratio tests from a Table 3 CSV"),
    "consistency": ("isvm.experiment.consistency_cli", "Bayes-consistency Monte Carlo (Table 5)"),
    "figures": ("isvm.experiment.figures_cli", "draw the study's figures"),
    "publish": ("isvm.publish", "copy a run's staged tables and figures into place"),
    "cost": ("isvm.experiment.cost", "estimate a study config's core-hours from timed samples"),
    "select": ("isvm.select", "pick (gamma, C) for your own CSV data by exact leave-one-out"),
}


class _DefaultsFormatter(argparse.HelpFormatter):
    """Help that states each option's default, where it has one (not on required options)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.required or any(action.default is x for x in (None, argparse.SUPPRESS, False)):
            return text
        if "%(default)" in text or "default:" in text:
            return text
        return f"{text} (default: %(default)s)"


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per available command."""
    parser = argparse.ArgumentParser(prog="isvm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"} or argv[0] not in COMMANDS:
        build_parser().parse_args(argv)  # prints help or a clear error and exits
        return 2
    name = argv[0]
    module_name, help_text = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:  # pragma: no cover - only while a command is unbuilt
        if exc.name != module_name:
            raise
        print(f"isvm: the '{name}' command is not available in this build", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(
        prog=f"isvm {name}",
        description=help_text,
        formatter_class=_DefaultsFormatter,
    )
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    return int(module.run(args) or 0)
