"""A/B of the LOO engine's settings: the defaults against overrides, side by side.

For each cell (data set, Ns, method, gamma) it runs ``loo_grid`` on the paper's
subsample 0 (seed 2012) over the paper's C grid (0.1 to 50 by 0.5), once with
``DEFAULT_SETTINGS`` and once with the overrides, in one process after a small
compiling run, and prints the seconds, their ratio (overrides / defaults: above 1, the
defaults are faster), the iteration and uncertified-fold counts and whether the LOO
errors agree (they must: no setting changes a prediction).

Run: ``python benchmarks/settings_ab.py '{"cd_max_mean_epochs": 2.0}' satimage:500:isvm:5
vowel:500:isvm:10 [--scaling zscore]``.
"""

from __future__ import annotations

import argparse
import time

from _cells import paper_subsample, parse_cell, settings_from_json

from isvm.loo import c_grid, loo_grid
from isvm.loo.settings import DEFAULT_SETTINGS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", help="JSON object of LooSettings fields")
    parser.add_argument("cells", nargs="+", help="DATASET:NS:METHOD:GAMMA")
    parser.add_argument("--scaling", default="zscore", choices=["zscore", "minmax"])
    args = parser.parse_args()
    alt = settings_from_json(parser, args.overrides, "overrides")
    cells = [parse_cell(parser, cell, "vowel:500:isvm:10") for cell in args.cells]
    Cs = c_grid(0.1, 50.0, 0.5)
    print(f"overrides {args.overrides}; scaling {args.scaling}; {len(Cs)} C values")
    print(
        "cell | defaults s | overrides s | overrides/defaults | iterations | uncertified"
        " | same errors"
    )
    for text, cell in zip(args.cells, cells, strict=True):
        X, y = paper_subsample(cell, args.scaling)
        method, gamma = cell.method, cell.gamma
        loo_grid(X, y, method, [gamma], Cs[::10])  # compile outside the timings
        runs = []
        for settings in (DEFAULT_SETTINGS, alt):
            start = time.perf_counter()
            frame = loo_grid(X, y, method, [gamma], Cs, settings=settings)
            runs.append((time.perf_counter() - start, frame))
        (a, fa), (b, fb) = runs
        same = bool((fa.n_errors == fb.n_errors).all())
        print(
            f"{text} | {a:.2f} | {b:.2f} | {b / a:.2f} | "
            f"{fa.iterations.sum()} / {fb.iterations.sum()} | "
            f"{fa.n_uncertified.sum()} / {fb.n_uncertified.sum()} | {same}",
            flush=True,
        )


if __name__ == "__main__":
    main()
