"""How the LOO engine walks one C path: each grid point's mode, cost and free set.

For one cell (data set, Ns, method,
gamma; the paper's subsample 0, seed 2012, z-scored unless ``--scaling minmax``) it runs
``loo_grid`` over the paper's C values (or a stretch of them) and prints, per grid point,
the mode its folds ran in (``cd``, ``cd!`` where that grid point handed the path back to
the active set, ``active``), its seconds and iterations, the full fit's share of them,
the folds' mean and largest epochs (set updates in active-set mode), the full
solution's free variables and the milliseconds per fold; then the seconds spent in each
mode. Optional settings overrides (a JSON
object of ``LooSettings`` fields, as in ``settings_ab.py``) show where another rule
would switch.

    python benchmarks/mode_trace.py vowel:500:isvm:5 --C 0.1 8
    python benchmarks/mode_trace.py vowel:500:isvm:5 --settings '{"cd_max_mean_epochs": 6}'
"""

from __future__ import annotations

import argparse

from _cells import paper_subsample, parse_cell, settings_from_json

import isvm.loo.driver as driver
from isvm.loo import c_grid, loo_grid
from isvm.loo.policy import PathPolicy


def trace(X, y, method: str, gamma: float, Cs, settings) -> list[dict]:
    """Per grid point: the row's counts with the mode, fold epochs and free variables,
    read where the policy learns from the grid point (``PathPolicy.after_folds``)."""
    seen: list[dict] = []

    class Traced(PathPolicy):
        def after_folds(self, C, **counts):
            super().after_folds(C, **counts)
            mode = "cd!" if self.handed_back else ("cd" if self.cd_mode else "active")
            epochs = counts["epochs"]
            seen.append(
                {
                    "mode": mode,
                    "full_epochs": int(counts["full_epochs"]),
                    "fold_mean": float(epochs.mean()),
                    "fold_max": int(epochs.max()),
                    "free": int(counts["n_free"]),
                }
            )

    driver.PathPolicy = Traced
    try:
        frame = loo_grid(X, y, method, [gamma], Cs, settings=settings)
    finally:
        driver.PathPolicy = PathPolicy
    return [dict(row, **extra) for row, extra in zip(frame.to_dict("records"), seen, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cell", help="DATASET:NS:METHOD:GAMMA, e.g. vowel:500:isvm:5")
    parser.add_argument("--C", type=float, nargs=2, default=[0.1, 50.0], help="first and last C")
    parser.add_argument("--scaling", default="zscore", choices=["zscore", "minmax"])
    parser.add_argument("--settings", default="{}", help="JSON object of LooSettings fields")
    args = parser.parse_args()
    cell = parse_cell(parser, args.cell, "vowel:500:isvm:5")
    settings = settings_from_json(parser, args.settings, "--settings")
    grid = c_grid(0.1, 50.0, 0.5)
    Cs = grid[(grid >= args.C[0] - 1e-9) & (grid <= args.C[1] + 1e-9)]
    if Cs.shape[0] == 0:
        parser.error(
            f"--C {args.C[0]:g} {args.C[1]:g}: no C of the paper's grid (0.1, 0.6, ..., 49.6)"
        )
    X, y = paper_subsample(cell, args.scaling)
    loo_grid(X, y, cell.method, [cell.gamma], Cs[:2], settings=settings)  # compile first
    rows = trace(X, y, cell.method, cell.gamma, Cs, settings)
    print(f"{args.cell}, {args.scaling}, settings {args.settings}; one thread")
    print("C | mode | s | iterations | full-fit epochs | fold epochs mean / max | free | ms/fold")
    spent: dict[str, float] = {}
    for r in rows:
        spent[r["mode"]] = spent.get(r["mode"], 0.0) + r["seconds"]
        print(
            f"{r['C']:.1f} | {r['mode']} | {r['seconds']:.3f} | {r['iterations']} | "
            f"{r['full_epochs']} | {r['fold_mean']:.2f} / {r['fold_max']} | {r['free']} | "
            f"{1e3 * r['seconds'] / len(y):.2f}"
        )
    total = sum(spent.values())
    print("seconds by mode: " + ", ".join(f"{m} {s:.2f}" for m, s in spent.items()))
    print(f"total {total:.2f} s, errors at the last C {rows[-1]['n_errors']}")


if __name__ == "__main__":
    main()
