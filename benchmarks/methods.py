"""Time per fit of every multiclass method, side by side with LIBSVM 1-vs-rest.

The same data and kernel as ``benchmarks/solvers.py`` (scikit-learn's digits, the
paper's ``exp(-gamma ||x - x'||^2 / M)`` at gamma = 5, one precomputed kernel per
(N, L), C = 1, tol = 1e-3), every method with its default exact solver:

- the box-dual formulations (ISVM, 1-vs-all, Weston-Watkins, Lee-Lin-Wahba,
  Scatter) with ``solver="cd"``; Crammer-Singer with its per-point block solver;
- the baselines as the workflow runs them (``isvm.loo.REFIT_METHODS``): the kernel
  perceptron, one-vs-one over the bias-free binary SVM, and 1-vs-rest over the banded
  SVM (B-SVM, ``C_high = C``);
- LIBSVM: ``OneVsRestClassifier(SVC(kernel="precomputed", C=1))`` on the same K.

Timed round-robin after a warm-up round (numba compiles on first use), median of
``--repeats``; ratio = LIBSVM time / ours (> 1: ours is faster). LIBSVM's models
have a bias term, so this compares speed, not identical models.

    python benchmarks/methods.py                  # N = 100 and 500, L = 3 and 10
    python benchmarks/methods.py --sizes 100 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import isvm
from isvm.loo import REFIT_METHODS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solvers import GAMMA, TOL, C, digits_problem, interleaved_medians, libsvm  # noqa: E402

#: the box-dual SVMs, by their workflow name; the rest as the workflow builds them
BOX_SVMS = {
    "isvm": isvm.InhibitorySVC,
    "ova": isvm.OneVsAllSVC,
    "ww": isvm.WestonWatkinsSVC,
    "llw": isvm.LeeLinWahbaSVC,
    "scatter": isvm.ScatterSVC,
}


def makers() -> dict:
    """A maker of an unfitted model per method (``isvm.loo.LOO_METHODS`` but ``ww_paper``)."""
    out = {
        name: (lambda cls=cls: cls(C=C, kernel="precomputed", tol=TOL, random_state=0))
        for name, cls in BOX_SVMS.items()
    }
    for name, method in REFIT_METHODS.items():  # the refit-LOO methods: cs and the baselines
        out[name] = lambda method=method: method.build(C, TOL, None, 0)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 10], choices=[3, 10])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    ours = makers()
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; C={C}, gamma={GAMMA}, tol={TOL}, "
        f"median of {args.repeats} round-robin fits after a warm-up round"
    )
    print("| N | L | method | s / fit | LIBSVM OvR s / fit | LIBSVM / ours | training accuracy |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for n_classes in args.classes:
        for n in args.sizes:
            K, y = digits_problem(n, n_classes)
            t, models = interleaved_medians({"libsvm": libsvm, **ours}, K, y, args.repeats)
            for name in ours:
                acc = float((models[name].predict(K) == y).mean())
                print(
                    f"| {n} | {n_classes} | {name} | {t[name]:.4f} | {t['libsvm']:.4f} "
                    f"| {t['libsvm'] / t[name]:.2f} | {acc:.3f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
