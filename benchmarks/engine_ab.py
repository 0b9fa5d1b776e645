"""Time the LOO engine of two source trees side by side (A/B), interleaved in one run.

    python benchmarks/engine_ab.py --old /path/to/old/checkout/src [--new src]
        [--datasets vehicle letter] [--sizes 100] [--methods isvm ova ww] [--rounds 2]
        [--scalings zscore minmax]

Each measurement is a fresh subprocess with ``PYTHONPATH`` set to one tree: it loads
(or compiles) the kernels first, untimed (``isvm.warmup``, as the workflow does; a
tiny grid alone missed the block updates' kernels, so a tree's first timed path could
carry a compilation), then times ``loo_grid`` on one
subsample over the paper's grid (gamma 5 and 10, C 0.1 to 49.6) and prints the seconds
and the LOO errors. Old and new alternate ``--rounds`` times, so drifts in machine load
hit both; the table gives the best time of each and new / old. Used for refactors that
must not slow the engine (docs/benchmarks.md); the errors must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = """
import json, sys, time
import numpy as np
from isvm.data import load_dataset
from isvm.loo import c_grid, loo_grid
from isvm.seeding import rng
ds, n, method, scaling = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
from isvm.warmup import warm_up
warm_up()  # load or compile the kernels, untimed
try:  # the block updates' gather into views, which older trees' warm-up does not reach
    from isvm.loo.full_fit import _gather
    _gather(np.ones((4, 4)), np.arange(2), np.arange(2), np.empty((4, 4))[:2, :2])
except ImportError:
    pass
data = load_dataset(ds, source="bundled", scaling=scaling)
idx = rng(0, "bench", ds, n).choice(data.y.shape[0], n, replace=False)
start = time.perf_counter()
frame = loo_grid(data.X[idx], data.y[idx], method, [5.0, 10.0], c_grid(0.1, 50, 0.5))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "errors": frame["n_errors"].tolist()}))
"""


def measure(src: Path, ds: str, n: int, method: str, scaling: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, ds, str(n), method, scaling],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the old tree's src/")
    parser.add_argument("--new", type=Path, default=Path(__file__).parents[1] / "src")
    parser.add_argument("--datasets", nargs="+", default=["vehicle", "letter"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[100])
    parser.add_argument("--methods", nargs="+", default=["isvm", "ova", "ww"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scalings", nargs="+", default=["zscore"], choices=["zscore", "minmax"])
    args = parser.parse_args()
    print("| data | N | features | method | old s | new s | new / old | same errors |")
    print("|---|---|---|---|---|---|---|---|")
    for scaling, ds in [(s, d) for s in args.scalings for d in args.datasets]:
        for n in args.sizes:
            for method in args.methods:
                runs = {"old": [], "new": []}
                for _ in range(args.rounds):
                    for name in ("old", "new"):
                        runs[name].append(measure(getattr(args, name), ds, n, method, scaling))
                best = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
                errors = [r["errors"] for v in runs.values() for r in v]
                same = all(e == errors[0] for e in errors)
                print(
                    f"| {ds} | {n} | {scaling} | {method} | "
                    f"{best['old']:.2f} | {best['new']:.2f} | "
                    f"{best['new'] / best['old']:.2f} | {'yes' if same else 'NO'} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
