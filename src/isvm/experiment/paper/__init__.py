"""The paper's published Tables 2-5, as pandas DataFrames."""

from __future__ import annotations

from importlib.resources import files

import pandas as pd

from isvm.data.registry import REGISTRY

#: Table 3's data-set names as printed in the paper, keyed by our registry names.
PAPER_NAMES: dict[str, str] = {
    "abalone": "Abalone",
    "dna": "DNA",
    "ecoli": "E. coli",
    "glass": "Glass",
    "iris": "Iris",
    "satimage": "L. Sat",
    "letter": "Letter",
    "mnist": "MNIST",
    "segment": "Segment",
    "shuttle": "Shuttle",
    "vehicle": "Vehicle",
    "vowel": "Vowel",
    "wine": "Wine",
    "yeast": "Yeast",
}


#: The printed names of the registry's other readings of the 14 (``READINGS``).
READING_NAMES: dict[str, str] = {"dna_ordinal": "DNA (ordinal)", "vowel_all": "Vowel (990 rows)"}


def base_dataset(name: str) -> str:
    """The registry data set whose rows of the paper's tables ``name`` compares with:
    itself, or the one a reading reads (:attr:`isvm.data.registry.DatasetSpec.reading_of`)."""
    spec = REGISTRY.get(name)
    return spec.reading_of if spec is not None and spec.reading_of else name


#: a printed name -> the paper's printed name of the row it compares with
PAPER_ROWS: dict[str, str] = {
    **{printed: printed for printed in PAPER_NAMES.values()},
    **{printed: PAPER_NAMES[base_dataset(name)] for name, printed in READING_NAMES.items()},
}


def paper_table(number: int) -> pd.DataFrame:
    """The paper's Table ``number`` (2, 3, 4 or 5) exactly as transcribed."""
    if number not in (2, 3, 4, 5):
        raise ValueError(f"the paper has Tables 2-5 with numbers; got {number}")
    with files(__package__).joinpath(f"paper_table{number}.csv").open("rb") as fh:
        return pd.read_csv(fh)
