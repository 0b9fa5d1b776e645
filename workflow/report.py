"""Write results/<run>/report.html (snakemake --report) for a finished run, no flags to repeat.

Every run records how it was started in results/<run>/run.json (Snakefile, working
directory, --configfile, --config); this replays those with ``--report``:

    .venv/bin/python workflow/report.py smoke              # results/smoke/report.html
    .venv/bin/python workflow/report.py                    # the only run under results/
    .venv/bin/python workflow/report.py /tmp/run/results/smoke
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def find_run(run: str | None) -> Path:
    """The run folder (holding run.json) that ``run`` names: a run name or a folder."""
    if run is not None:
        for folder in (Path(run), Path("results") / run):
            if (folder / "run.json").is_file():
                return folder
        sys.exit(f"report: no run '{run}' (no {Path('results') / run / 'run.json'}); run it first")
    runs = sorted(p.parent for p in Path("results").glob("*/run.json"))
    if len(runs) != 1:
        names = ", ".join(p.name for p in runs) or "none"
        sys.exit(f"report: name the run (runs under results/: {names})")
    return runs[0]


def report_command(record: dict, out: Path) -> list[str]:
    """The snakemake command that writes the report of the recorded run to ``out``."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", record["snakefile"]]
    cmd += ["--directory", record["workdir"]]
    if record["configfiles"]:
        cmd += ["--configfile", *record["configfiles"]]
    if record["config_args"]:
        cmd += ["--config", *record["config_args"]]
    return cmd + ["--report", str(out)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", nargs="?", help="run name (results/<run>) or run folder")
    args = parser.parse_args(argv)
    folder = find_run(args.run)
    record = json.loads((folder / "run.json").read_text())
    out = (Path(record["workdir"]) / "results" / record["name"] / "report.html").resolve()
    code = subprocess.call(report_command(record, out))
    if code == 0:
        print(f"report: {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
