"""Write a result table as CSV and Markdown, stating the settings it came from.

Every table of the study goes through :func:`write_table`, so all of them share
one float format (byte-identical output for identical inputs) and one way of
saying which settings produced them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

FLOAT_FORMAT = "%.4f"


def format_settings(settings: Mapping[str, object]) -> str:
    """One line per setting, ``key: value``, in the given order."""
    return "\n".join(f"- {key}: {value}" for key, value in settings.items())


def write_table(
    df: pd.DataFrame,
    stem: str | Path,
    *,
    title: str,
    settings: Mapping[str, object],
    notes: str = "",
    float_format: str = FLOAT_FORMAT,
) -> tuple[Path, Path]:
    """Write ``df`` to ``{stem}.csv`` and ``{stem}.md``; returns both paths.

    The CSV holds the data only (one header row) so it stays machine-readable;
    the Markdown starts with ``title``, the ``settings`` and ``notes``.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = stem.with_suffix(".csv"), stem.with_suffix(".md")
    df.to_csv(csv_path, index=False, float_format=float_format, lineterminator="\n")
    # object dtype keeps integer columns integers (an all-numeric frame would be upcast)
    body = df.astype(object).to_markdown(index=False, floatfmt=float_format.lstrip("%"))
    parts = [f"# {title}", "", "Settings:", "", format_settings(settings), ""]
    if notes:
        parts += [notes.strip(), ""]
    parts += [body, ""]
    md_path.write_text("\n".join(parts), encoding="utf-8")
    return csv_path, md_path
