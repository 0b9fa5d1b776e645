"""The package's lazy exports (light imports, every exported name resolves) and its metadata."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import isvm
import isvm.data
import isvm.loo


def test_importing_the_packages_loads_neither_numba_nor_sklearn():
    code = (
        "import sys, isvm, isvm.data, isvm.loo, isvm.loo.records, isvm.loo.refit;"
        "print(sorted({'numba', 'sklearn'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", [isvm, isvm.data, isvm.loo])
def test_every_export_resolves_and_is_listed(package):
    for name in package.__all__:
        assert getattr(package, name) is not None
        assert name in dir(package)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(package, "no_such_name")  # noqa: B009


def test_version_is_pyprojects_and_citation_and_changelog_name_it():
    """One version (pyproject.toml); CITATION.cff and the CHANGELOG's latest entry agree."""
    root = Path(__file__).resolve().parents[1]
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE).group(1)
    assert isvm.__version__ == declared
    citation = (root / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^version: (\S+)$", citation, re.MULTILINE).group(1) == declared
    changelog = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[([^\]]+)\]", changelog, re.MULTILINE)
    assert [v for v in released if v != "Unreleased"][0] == declared
