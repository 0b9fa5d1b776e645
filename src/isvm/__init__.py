"""isvm: the inhibitory multiclass SVM of Huerta et al. (2012) and its baselines.

``from isvm import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC`` for the
scikit-learn estimators; :mod:`isvm.loo` for exact fast leave-one-out grids.
Names are imported on first use: ``import isvm`` (and ``python -m isvm ... --help``)
does not load scikit-learn or numba.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
_EXPORTS = {
    "InhibitorySVC": "isvm.estimators",
    "OneVsAllSVC": "isvm.estimators",
    "WestonWatkinsSVC": "isvm.estimators",
}
__all__ = ["InhibitorySVC", "OneVsAllSVC", "WestonWatkinsSVC", "__version__"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'isvm' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
