"""``LOOSearchCV`` against ``GridSearchCV(SVC(), cv=LeaveOneOut())`` on data the project
never tuned on, fresh process and warm, side by side in one run.

Data (z-scored): scikit-learn's breast_cancer (569 rows, 2 classes), wine (178, 3) and a
300-row stratified sample of digits (10 classes, ``digits-300``). Grids: the README's 12
points (C 0.1, 1, 10, 50 x gamma 1, 5, 10) on each, and docs/model-selection.md's 80
points on wine (C 0.1 to 47.6 step 2.5 x gamma 1, 2, 5, 10). SVC gets the same C and
the gamma converted to scikit-learn's convention (``ours / n_features``).

- ``fresh``: a new Python process that imports isvm and runs ``LOOSearchCV.fit`` once
  (numba's on-disk cache warm, as after ``python -m isvm warmup``): what a user's script
  pays, imports and cache loads included;
- ``warm``: the same fit again in that process;
- ``GridSearchCV(SVC)``: every fold of every grid point refit by LIBSVM (one-vs-one,
  with bias), timed in full, ``n_jobs=1``.

Reported: seconds and SVC / ours. The models differ (bias, one-vs-one), so this compares
the cost of exact LOO model selection only; the best LOO accuracies are printed beside.

    python benchmarks/search_vs_gridsearch.py [--sets wine breast_cancer digits-300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = """
import json, sys, time
start = time.perf_counter()
import numpy as np
from isvm import InhibitorySVC, LOOSearchCV
sys.path.insert(0, sys.argv[3])
from search_vs_gridsearch import grid_of, load
X, y = load(sys.argv[1])
grid = grid_of(sys.argv[2])
search = LOOSearchCV(InhibitorySVC(random_state=0), grid, refit=False).fit(X, y)
fresh = time.perf_counter() - start
start = time.perf_counter()
LOOSearchCV(InhibitorySVC(random_state=0), grid, refit=False).fit(X, y)
warm = time.perf_counter() - start
print(json.dumps({"fresh": fresh, "warm": warm,
                  "best": float(search.cv_results_["mean_test_score"].max())}))
"""

CASES = [
    ("breast_cancer", "12"),
    ("wine", "12"),
    ("wine", "80"),
    ("digits-300", "12"),
]


def load(name: str):
    """(X z-scored, y) of a scikit-learn data set; digits-300 a seeded stratified sample."""
    import numpy as np
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    base = name.split("-")[0]
    X, y = getattr(datasets, f"load_{base}")(return_X_y=True)
    if "-" in name:
        n = int(name.split("-")[1])
        X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=0)
        X = X[:, X.std(axis=0) > 0]  # digits' constant pixels carry nothing
    return StandardScaler().fit_transform(X), np.asarray(y)


def grid_of(size: str) -> dict:
    """The README's 12-point grid or docs/model-selection.md's 80-point one (our gamma)."""
    if size == "12":
        return {"C": [0.1, 1.0, 10.0, 50.0], "gamma": [1.0, 5.0, 10.0]}
    return {"C": [0.1 + 2.5 * k for k in range(20)], "gamma": [1.0, 2.0, 5.0, 10.0]}


def ours(name: str, size: str) -> dict:
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, name, size, here],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def libsvm(name: str, size: str) -> tuple[float, float]:
    from sklearn.model_selection import GridSearchCV, LeaveOneOut
    from sklearn.svm import SVC

    X, y = load(name)
    grid = grid_of(size)
    svc_grid = {"C": grid["C"], "gamma": [g / X.shape[1] for g in grid["gamma"]]}
    start = time.perf_counter()
    search = GridSearchCV(SVC(), svc_grid, cv=LeaveOneOut(), n_jobs=1, refit=False).fit(X, y)
    return time.perf_counter() - start, float(search.cv_results_["mean_test_score"].max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=None, help="only these data sets")
    args = parser.parse_args()
    cases = [c for c in CASES if args.sets is None or c[0] in args.sets]
    print(
        "| data | N | grid | LOOSearchCV fresh s | warm s | GridSearchCV(SVC) s "
        "| SVC / fresh | SVC / warm | best LOO acc. ours / SVC |"
    )
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    for name, size in cases:
        n = load(name)[1].shape[0]
        mine = ours(name, size)
        svc_s, svc_best = libsvm(name, size)
        print(
            f"| {name} | {n} | {size} | {mine['fresh']:.2f} | {mine['warm']:.2f} | {svc_s:.1f} "
            f"| {svc_s / mine['fresh']:.1f}x | {svc_s / mine['warm']:.1f}x "
            f"| {mine['best']:.4f} / {svc_best:.4f} |",
            flush=True,
        )
    print("\nOne thread each; numba's cache warm (run `python -m isvm warmup` first).")


if __name__ == "__main__":
    main()
