"""The paper's 14 data sets: registry, sources (OpenML or the bundled snapshot), preprocessing;
and data sets a study config defines (``load_own``, ``load_configured``: :mod:`isvm.data.own`).

``load_dataset(name, source=..., scaling=...)`` returns a :class:`Dataset`
with scaled float64 features, int64 labels 0..L-1, class names, the source and
checksums; ``save_npz`` / ``load_npz`` write and read it. Every data problem
raises :class:`DataError`. See ``docs/data.md``. Names are imported on first use,
so ``import isvm.data.registry`` (the workflow's) loads only the standard library.
"""

from __future__ import annotations

from isvm._lazy import lazy_exports

_EXPORTS = {
    "SOURCES": "isvm.data.load",
    "Dataset": "isvm.data.load",
    "load_dataset": "isvm.data.load",
    "load_configured": "isvm.data.load",
    "load_npz": "isvm.data.load",
    "load_own": "isvm.data.load",
    "save_npz": "isvm.data.load",
    "SCALINGS": "isvm.data.preprocess",
    "DATASETS": "isvm.data.registry",
    "REGISTRY": "isvm.data.registry",
    "DataError": "isvm.data.registry",
    "DatasetSpec": "isvm.data.registry",
    "get_spec": "isvm.data.registry",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
