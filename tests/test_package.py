"""The package's lazy exports: light imports, every exported name resolves."""

import subprocess
import sys

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
