"""isvm: the inhibitory multiclass SVM of Huerta et al. (2012) and its baselines.

``from isvm import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC, CrammerSingerSVC,
LeeLinWahbaSVC, ScatterSVC`` for the scikit-learn estimators (``KernelPerceptron``,
``BandedSVC`` and ``one_vs_one`` for the baselines); ``LOOSearchCV`` for exact
leave-one-out model selection with scikit-learn's search API; :mod:`isvm.loo` for exact
fast leave-one-out grids.
Names are imported on first use: ``import isvm`` (and ``python -m isvm ... --help``)
does not load scikit-learn or numba.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from isvm._lazy import lazy_exports

try:  # the one place of the version is pyproject.toml
    __version__ = version("isvm")
except PackageNotFoundError:  # a source tree on PYTHONPATH, not installed
    __version__ = "0+unknown"
_EXPORTS = {
    "CrammerSingerSVC": "isvm.estimators",
    "InhibitorySVC": "isvm.estimators",
    "OneVsAllSVC": "isvm.estimators",
    "WestonWatkinsSVC": "isvm.estimators",
    "LeeLinWahbaSVC": "isvm.estimators",
    "ScatterSVC": "isvm.estimators",
    "one_vs_one": "isvm.baselines",
    "KernelPerceptron": "isvm.baselines",
    "BandedSVC": "isvm.baselines",
    "LOOSearchCV": "isvm.search",
}
__all__ = [*sorted(_EXPORTS), "__version__"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
