"""Exact leave-one-out (LOO) accuracy over a (gamma, C) grid, for every formulation.

``from isvm.loo import loo_grid`` for the engine, ``loo_refit`` for the plain
reference (refit every fold from zero) and for the methods the engine cannot serve
(``REFIT_METHODS``; ``LOO_METHODS`` says which method goes where, ``loo_records``
runs any method the way it is served), ``c_grid`` for
the study's C values and ``LooSettings`` for the engine's budgets. One module per role:

- :mod:`isvm.loo.driver`: the (gamma, C) path driver (:func:`loo_grid`);
- :mod:`isvm.loo.refit`: LOO by refitting (:func:`loo_refit`), the reference and fallback,
  and :func:`loo_records`, any method by the engine or by refitting;
- :mod:`isvm.loo.estimator_method`: any scikit-learn classifier by import path
  (:func:`estimator_method`), its LOO refit on the features (:func:`loo_estimator`);
- :mod:`isvm.loo.full_fit`: the full fit's exact active-set finish (NumPy/SciPy);
- :mod:`isvm.loo.separable`: that finish class by class where the dual is L separate
  problems (1-vs-all);
- :mod:`isvm.loo.fold_update`: numba, a fold solved by updates of the full inverse;
- :mod:`isvm.loo.folds`: numba, every fold of a grid point in parallel, certified;
- :mod:`isvm.loo.bundles`, :mod:`isvm.loo.settings`: what crosses those boundaries;
- :mod:`isvm.loo.grid`, :mod:`isvm.loo.records`: the C grid and the record schema
  (light: no numba);
- :mod:`isvm.loo.cli`: ``python -m isvm loo``.

Names are imported on first use, so ``import isvm.loo.records`` does not compile
the engine.
"""

from __future__ import annotations

from isvm._lazy import lazy_exports

_EXPORTS = {
    "loo_grid": "isvm.loo.driver",
    "loo_refit": "isvm.loo.refit",
    "LOO_METHODS": "isvm.loo.refit",
    "loo_records": "isvm.loo.refit",
    "REFIT_METHODS": "isvm.loo.refit",
    "EstimatorMethod": "isvm.loo.estimator_method",
    "estimator_method": "isvm.loo.estimator_method",
    "loo_estimator": "isvm.loo.estimator_method",
    "c_grid": "isvm.loo.grid",
    "LooSettings": "isvm.loo.settings",
    "DEFAULT_SETTINGS": "isvm.loo.settings",
    "GRID_COLUMNS": "isvm.loo.records",
    "RECORD_COLUMNS": "isvm.loo.records",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
