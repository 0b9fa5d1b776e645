"""Time per fit of every multiclass method, side by side with LIBSVM 1-vs-rest.

The same data and kernel as ``benchmarks/solvers.py`` (scikit-learn's digits, the
paper's ``exp(-gamma ||x - x'||^2 / M)`` at gamma = 5, one precomputed kernel per
(N, L), C = 1, tol = 1e-3), every method with its default exact solver:

- the box-dual formulations (ISVM, 1-vs-all, Weston-Watkins, Lee-Lin-Wahba,
  Scatter) with ``solver="cd"``; Crammer-Singer with its per-point block solver;
- the baselines: the kernel perceptron, one-vs-one over the bias-free binary SVM,
  and 1-vs-rest over the banded SVM (B-SVM);
- LIBSVM: ``OneVsRestClassifier(SVC(kernel="precomputed", C=1))`` on the same K.

Timed round-robin after a warm-up round (numba compiles on first use), median of
``--repeats``; ratio = LIBSVM time / ours (> 1: ours is faster). LIBSVM's models
have a bias term, so this compares speed, not identical models. A method whose
class is not in this checkout is listed as missing, not silently dropped.

    python benchmarks/methods.py                  # N = 100 and 500, L = 3 and 10
    python benchmarks/methods.py --sizes 100 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

from sklearn.multiclass import OneVsRestClassifier

import isvm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solvers import GAMMA, TOL, C, digits_problem, interleaved_medians, libsvm  # noqa: E402

#: name -> (isvm class name, keyword arguments): the box-dual SVMs and Crammer-Singer
SVMS = {
    "isvm": ("InhibitorySVC", {}),
    "ova": ("OneVsAllSVC", {}),
    "ww": ("WestonWatkinsSVC", {}),
    "llw": ("LeeLinWahbaSVC", {}),
    "scatter": ("ScatterSVC", {}),
    "cs": ("CrammerSingerSVC", {}),
}


def makers() -> tuple[dict, list[str]]:
    """A maker per method present in this checkout, and the names of those missing."""
    out, missing = {}, []

    def svm(cls, **kw):
        return lambda: cls(C=C, kernel="precomputed", tol=TOL, random_state=0, **kw)

    for name, (cls_name, kw) in SVMS.items():
        cls = getattr(isvm, cls_name, None) if cls_name in isvm.__all__ else None
        if cls is None:
            missing.append(name)
        else:
            out[name] = svm(cls, **kw)
    if "KernelPerceptron" in isvm.__all__:
        out["perceptron"] = lambda: isvm.KernelPerceptron(kernel="precomputed", random_state=0)
    else:
        missing.append("perceptron")
    if "one_vs_one" in isvm.__all__:
        binary = svm(isvm.OneVsAllSVC)
        out["ovo"] = lambda: isvm.one_vs_one(binary())
    else:
        missing.append("ovo")
    if "BandedSVC" in isvm.__all__:
        out["ovr_bsvm"] = lambda: OneVsRestClassifier(
            isvm.BandedSVC(C=C, kernel="precomputed", tol=TOL, random_state=0)
        )
    else:
        missing.append("ovr_bsvm")
    return out, missing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 10], choices=[3, 10])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    ours, missing = makers()
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; C={C}, gamma={GAMMA}, tol={TOL}, "
        f"median of {args.repeats} round-robin fits after a warm-up round"
    )
    if missing:
        print(f"# not in this checkout: {', '.join(missing)}")
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
