"""The paper's 14 data sets: registry, sources (OpenML or the bundled snapshot), preprocessing.

``load_dataset(name, source=..., scaling=...)`` returns a :class:`Dataset`
with scaled float64 features, int64 labels 0..L-1, class names, the source and
checksums; ``save_npz`` / ``load_npz`` write and read it. Every data problem
raises :class:`DataError`. See ``docs/data.md``.
"""

from isvm.data.load import SOURCES, Dataset, load_dataset, load_npz, save_npz
from isvm.data.preprocess import SCALINGS
from isvm.data.registry import DATASETS, REGISTRY, DataError, DatasetSpec, get_spec

__all__ = [
    "DATASETS",
    "REGISTRY",
    "SCALINGS",
    "SOURCES",
    "DataError",
    "Dataset",
    "DatasetSpec",
    "get_spec",
    "load_dataset",
    "load_npz",
    "save_npz",
]
