"""docs/results/README.md and README.md's Results agree with the committed tables.

``docs/results/claims.py --check`` (the check run here) computes every number of those
texts from docs/results/ns*/: the generated blocks, the facts of ``prose.FACTS``, the
labels; the altered copies below show that it fails, naming the number, when a number
drifts on either side.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
sys.path.insert(0, str(RESULTS))

import claims  # noqa: E402
import prose  # noqa: E402

DOC = prose.RESULTS


@pytest.fixture(scope="module")
def tables() -> claims.Tables:
    return claims.Tables()


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return prose.read_docs()


def _problems(tables, texts, doc=DOC, old=None, new=None) -> list[str]:
    if old is not None:
        assert texts[doc].count(old) == 1, f"the committed text no longer holds {old!r}"
        texts = {**texts, doc: texts[doc].replace(old, new)}
    return prose.check(tables, texts).problems


def test_committed_docs_agree_with_the_tables(tables, texts):
    report = prose.check(tables, texts)
    assert report.problems == [], "\n".join(report.problems)
    # the check did look at the numbers: the blocks, the facts and the README section
    assert report.in_blocks > 1000 and report.checked > 300
    assert "<!-- generated: readme-results -->" in texts[prose.README]


def test_every_block_and_fact_is_used(tables, texts):
    names = {f.name for f in prose.FACTS}
    assert len(names) == len(prose.FACTS), "two facts share a name"
    for name, (doc, _) in claims.BLOCKS.items():
        assert f"<!-- generated: {name} -->" in texts[doc]


def test_a_changed_number_in_a_generated_block_fails(tables, texts):
    # DNA's WW offset at Ns = 500, in the offsets table
    problems = _problems(
        tables, texts, old="| +22.0 / +22.0 / +29.3 |", new="| +22.0 / +22.0 / +22.0 |"
    )
    assert any("block offsets" in p and "+29.3" in p for p in problems), problems


def test_a_changed_number_in_the_prose_fails_naming_it(tables, texts):
    # the first error, put back: MNIST at Ns = 500 as if within 0.1 points
    problems = _problems(tables, texts, old="MNIST (-0.14 / -0.21)", new="MNIST (-0.04 / -0.01)")
    assert any(
        "fact claim2.per_dataset_500" in p and "'-0.04'" in p and "'-0.14'" in p for p in problems
    ), problems
    # a figure off by one in its last digit (the ISVM / WW time ratio at Ns = 50 is 1.5403)
    problems = _problems(tables, texts, old="ISVM / WW 1.54 at", new="ISVM / WW 1.53 at")
    assert any("fact claim.time" in p and "'1.53'" in p for p in problems), problems


def test_a_number_without_a_source_fails(tables, texts):
    old = "The claims, one by one:"
    problems = _problems(tables, texts, old=old, new="The claims, one by one (ISVM wins 61):")
    assert any("'61' has no source" in p for p in problems), problems


def test_a_reworded_fact_fails(tables, texts):
    old = "in the mean our WW is the last of the three in every row"
    problems = _problems(tables, texts, old=old, new="in the mean our WW is last")
    assert any("fact ranking.ww_last" in p and "not in the text" in p for p in problems)


def test_words_the_tables_contradict_fail(tables, texts, monkeypatch):
    fact = prose.Fact(
        "ranking.ww_last",
        "in the mean our WW is the last of the three in every row",
        holds=lambda t: False,
    )
    monkeypatch.setattr(prose, "FACTS", [fact])
    problems = prose.check(tables, texts).problems
    assert any("ranking.ww_last" in p and "no longer support" in p for p in problems)


def test_a_stale_exemption_fails(tables, texts):
    old = "(about 60% of the time)"
    problems = _problems(tables, texts, old=old, new="(in less time)")
    assert any("stale" in p for p in problems), problems


def test_a_row_label_must_be_a_row(tables, texts):
    problems = _problems(
        tables,
        texts,
        old="Does not hold at Ns = 100, 200 or 500",
        new="Does not hold at Ns = 100, 250 or 500",
    )
    assert any("250" in p for p in problems), problems


def test_readme_results_are_checked(tables, texts):
    old = "ISVM is above 1-vs-all in 36 / 32 / 27 / 15"
    problems = _problems(tables, texts, doc=prose.README, old=old, new=old.replace("15", "19"))
    assert any("README.md, block readme-results" in p for p in problems), problems


def test_write_restores_the_generated_blocks(tables, texts):
    broken = {**texts, DOC: texts[DOC].replace("| +22.0 / +22.0 / +29.3 |", "| 0 |")}
    assert prose.write(tables, broken) == texts


def test_changed_tables_fail_the_committed_prose(tables, texts, tmp_path):
    """The other side: a table that changes (Vehicle's WW at Ns = 500 one point higher)
    makes the committed prose and blocks wrong, and the check says where."""
    for folder in tables.folders.values():
        shutil.copytree(folder, tmp_path / folder.name, ignore=shutil.ignore_patterns("loo"))
    path = tmp_path / "ns500" / "table3.csv"
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Vehicle,"):
            cells = line.split(",")
            cells[-3:] = [f"{float(c) + 1:.4f}" for c in cells[-3:]]
            lines[i] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    changed = claims.Tables([tmp_path / f"ns{r}" for r in claims.ROWS])
    problems = prose.check(changed, texts).problems
    assert any("block offsets" in p for p in problems), problems
    assert any("block table3-500" in p for p in problems), problems
    assert any("fact offsets.vehicle" in p for p in problems), problems


def test_a_new_section_is_checked_unless_exempt_with_its_reason(tables, texts, monkeypatch):
    """A section added later (say, DNA readings) fails until its numbers have a source;
    an ``Exempt`` naming its heading takes the whole section out, and says so."""
    new = "### DNA readings\n\nThe ordinal reading is 61.2% at 10%.\n\n## How they were made"
    problems = _problems(tables, texts, old="## How they were made", new=new)
    assert any("'61.2' has no source" in p for p in problems), problems
    added = {**texts, DOC: texts[DOC].replace("## How they were made", new)}
    exempt = prose.Exempt(
        "a reading whose tables are not committed", sections=("### DNA readings",)
    )
    monkeypatch.setattr(prose, "EXEMPT", [*prose.EXEMPT, exempt])
    report = prose.check(tables, added)
    # no problem: the section's number is exempt, and the exemption stops at the next
    # heading (the facts of "How they were made", which follows, are all still found)
    assert report.problems == [], report.problems
    assert any("DNA readings" in s and "not committed" in s for s in report.exempt_sections)
    # a stale section exemption is an error
    assert any("stale" in p and "DNA readings" in p for p in prose.check(tables, texts).problems)
