"""isvm: the inhibitory multiclass SVM of Huerta et al. (2012) and its baselines.

``from isvm import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC`` for the
scikit-learn estimators; :mod:`isvm.loo` for exact fast leave-one-out grids.
"""

from isvm.estimators import InhibitorySVC, OneVsAllSVC, WestonWatkinsSVC

__version__ = "0.1.0"
__all__ = ["InhibitorySVC", "OneVsAllSVC", "WestonWatkinsSVC", "__version__"]
