"""The exact LOO engine against refitting every held-out problem from zero."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from problems import clustered, dual_qp

from isvm.data import load_dataset, save_npz
from isvm.experiment.subsample import draw_subsamples
from isvm.kernels import rbf_kernel
from isvm.loo import c_grid, loo_grid, loo_refit
from isvm.loo.cli import run_chunk
from isvm.loo.records import GRID_COLUMNS, RECORD_COLUMNS
from isvm.loo.refit import LOO_METHODS
from isvm.methods import coefficient_matrix, dual_matrix, get_formulation
from isvm.seeding import rng

METHODS = ["isvm", "ova", "ww", "ww_paper"]
SMOKE_CONFIG = Path(__file__).resolve().parents[1] / "config" / "smoke.yaml"
NEAR_TIE = 1e-6


def _qp_refit(X, y, method, gammas, Cs):
    """Reference LOO: every held-out problem solved from scratch by an interior-point QP.

    Returns predictions and the top-two class-score gap of each, shape (n_grid, N).
    """
    formulation = get_formulation(method)
    classes, y = np.unique(y, return_inverse=True)  # the classes present, as loo_grid does
    n, n_classes = len(y), len(classes)
    A = formulation.decision_matrix(n_classes)
    preds, gaps = [], []
    for gamma in gammas:
        K = rbf_kernel(X, gamma=gamma)
        for C in Cs:
            pred, gap = np.empty(n, dtype=int), np.empty(n)
            for p in range(n):
                keep = np.arange(n) != p
                coding = formulation.encode(y[keep], n_classes)
                Q = dual_matrix(K[np.ix_(keep, keep)], coding)
                mask = coding.var_mask.ravel()
                alpha = np.zeros(mask.size)
                alpha[mask] = dual_qp(Q[np.ix_(mask, mask)], C)
                scores = K[p, keep] @ coefficient_matrix(alpha.reshape(-1, n_classes), coding) @ A
                top = np.sort(scores)[::-1]
                pred[p], gap[p] = int(np.argmax(scores)), top[0] - top[1]
            preds.append(classes[pred])
            gaps.append(gap)
    return np.array(preds), np.array(gaps)


def _compare(X, y, method, gammas, Cs):
    """Disagreements between loo_grid and the QP reference, and how many are near-ties."""
    frame, pred = loo_grid(X, y, method, gammas, Cs, return_predictions=True)
    ref, gap = _qp_refit(X, y, method, gammas, Cs)
    differ = pred != ref
    near_tie = differ & (gap < NEAR_TIE)
    return frame, int(differ.sum()), int(near_tie.sum())


def test_refit_baseline_agrees_with_engine():
    """isvm.loo.loo_refit (the benchmarks' baseline) gives the engine's predictions."""
    X, y = clustered(11, 24, 3)
    _, pred = loo_grid(X, y, "ova", [5.0], [0.6, 5.0], return_predictions=True)
    frame, ref, gap = loo_refit(X, y, "ova", [5.0], [0.6, 5.0], tol=1e-8)
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()
    assert frame["n_errors"].tolist() == (ref != y).sum(axis=1).tolist()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(3))
def test_loo_matches_refitting_random(method, seed):
    n_classes = (3, 2, 5)[seed]
    X, y = clustered(seed, n=24 + 6 * seed, n_classes=n_classes)
    frame, differ, near_tie = _compare(X, y, method, [5.0, 10.0], [0.1, 1.0, 7.5, 40.0])
    print(f"{method} seed {seed}: {differ} disagreements, {near_tie} at near-ties")
    assert differ == near_tie, f"{differ - near_tie} disagreements away from a near-tie"
    assert frame["converged"].all()


@pytest.mark.parametrize("name", ["wine", "iris", "ecoli"])
@pytest.mark.parametrize("method", ["isvm", "ova", "ww"])
def test_loo_matches_refitting_real(name, method):
    data = load_dataset(name, source="bundled")
    idx = rng(7, "test-loo", name).choice(data.y.shape[0], 40, replace=False)
    frame, differ, near_tie = _compare(data.X[idx], data.y[idx], method, [5.0], [0.6, 10.1, 49.6])
    print(f"{name} {method}: {differ} disagreements, {near_tie} at near-ties")
    assert differ == near_tie
    assert frame["converged"].all()


def _far_pair_problem():
    """Three clusters near the origin and a far pair: a class-0 point whose only
    neighbour (kernel value ~1e-39) is of class 2, 100 units from everything else."""
    gen = np.random.default_rng(0)
    X = np.concatenate([gen.normal(c, 0.5, (8, 2)) for c in ([0, 0], [2, 0], [0, 2])])
    X = np.vstack([X, [[100.0, 0.0], [106.0, 0.0]]])
    y = np.append(np.repeat([0, 1, 2], 8), [0, 2])
    return X, y


@pytest.mark.parametrize("method", METHODS)
def test_far_held_out_point_is_predicted_from_the_fold_solution(method):
    """A held-out point far from every training point has true class scores of the
    order of its largest kernel value (1e-39 here); the prediction must come from
    them, not from the rounding residue (1e-16 x C) of removing the point's own
    contribution from the full fit's scores. Compared with exact refits, no near-tie
    allowance: the refit's top-two gaps are tiny in absolute terms but decisive."""
    X, y = _far_pair_problem()
    Cs = [0.6, 10.1, 40.1]
    _, pred = loo_grid(X, y, method, [5.0], Cs, return_predictions=True)
    _, ref, gap = loo_refit(X, y, method, [5.0], Cs, tol=1e-9)
    assert (gap[:, -2:] > 0).all()  # not ties: the neighbour decides
    np.testing.assert_array_equal(pred[:, -2:], ref[:, -2:])
    assert (pred[:, -2] == 2).all()  # the class-0 point takes its class-2 neighbour's label
    assert ((pred != ref) <= (gap < NEAR_TIE)).all()


@pytest.mark.parametrize("method", ["ova", "isvm", "ww"])
def test_raw_scale_features_match_refitting(method):
    """Vehicle unscaled (features in the hundreds): most kernel values underflow or are
    below 1e-200, so most held-out scores are exact ties (class 0 by the argmax rule) or
    decided by one tiny kernel value. Every prediction must equal the refit's."""
    data = load_dataset("vehicle", source="bundled", scaling="none")
    idx = rng(7, "test-loo", "vehicle-raw").choice(data.y.shape[0], 40, replace=False)
    X, y = data.X[idx], data.y[idx]
    frame, pred = loo_grid(X, y, method, [5.0], [0.6, 10.1], return_predictions=True)
    _, ref, _ = loo_refit(X, y, method, [5.0], [0.6, 10.1], tol=1e-9)
    np.testing.assert_array_equal(pred, ref)
    assert frame["converged"].all()


def test_accuracy_and_errors_consistent():
    X, y = clustered(3, 30, 3)
    frame, pred = loo_grid(X, y, "isvm", [5.0], [0.5, 2.0], return_predictions=True)
    assert list(frame.columns) == list(GRID_COLUMNS)
    assert pred.shape == (2, 30)
    errors = (pred != y[None, :]).sum(axis=1)
    assert frame["n_errors"].tolist() == errors.tolist()
    assert np.allclose(frame["loo_accuracy"], 1 - errors / 30)
    assert (frame["n_support"] <= 30).all()


def test_labels_of_any_type_come_back():
    X, y = clustered(4, 24, 3)
    names = np.array(["cat", "dog", "eel"])[y]
    _, pred = loo_grid(X, names, "ova", [5.0], [1.0], return_predictions=True)
    assert set(pred.ravel()) <= set(names)


def test_threads_do_not_change_results():
    X, y = clustered(5, 40, 4)
    grid = ([5.0, 10.0], [0.1, 2.6, 20.1])
    one = loo_grid(X, y, "isvm", *grid, threads=1, seed=3)
    two = loo_grid(X, y, "isvm", *grid, threads=2, seed=3)
    again = loo_grid(X, y, "isvm", *grid, threads=1, seed=3)
    cols = [c for c in GRID_COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(one[cols], two[cols])
    pd.testing.assert_frame_equal(one[cols], again[cols])


@pytest.mark.parametrize("method", ["ova", "ww"])
def test_threads_do_not_change_counts_on_zscored_data(method):
    """z-scored glass, where many folds sit at the certificate's edge: with BLAS on
    `threads` threads the full fit's rounding moved iteration and uncertified-fold
    counts between 1 and 2 threads (both methods, this subsample)."""
    data = load_dataset("glass", source="bundled", scaling="zscore")
    idx = draw_subsamples(data.y, 30, 2, seed=2012, dataset="glass")[1]
    grid = ([5.0, 10.0], [0.1, 0.8, 1.5])
    one = loo_grid(data.X[idx], data.y[idx], method, *grid, threads=1, seed=1)
    two = loo_grid(data.X[idx], data.y[idx], method, *grid, threads=2, seed=1)
    cols = [c for c in GRID_COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(one[cols], two[cols])


def test_iteration_cap_is_recorded():
    # cd alone: with the active-set finish an exact optimum counts as converged and its
    # folds may all be proved within the cap (so they were at the dependency floors on
    # the 2026-12-02 machine, at the previous commit too), so that path need not show it
    X, y = clustered(6, 30, 3)
    frame = loo_grid(X, y, "isvm", [5.0], [40.0], max_iter=1, active_set=False)
    assert not frame["converged"].iloc[0]
    assert frame["n_capped"].iloc[0] > 0


def test_the_fold_kernel_compiles_once_with_and_without_an_exact_full_fit():
    # each extra specialisation of the parallel fold kernel costs a fresh clone ~10 s
    from isvm.loo import folds

    X, y = clustered(8, 12, 3)
    for active_set in (True, False):
        loo_grid(X, y, "isvm", [5.0], [0.5, 1.0], active_set=active_set)
    assert len(folds.fit_folds.signatures) == 1
    assert len(folds._fit_fold.signatures) <= 1  # 0: loaded with fit_folds from the cache


def test_kernel_cache_is_filled_and_reused():
    X, y = clustered(7, 20, 2)
    cache: dict = {}
    first = loo_grid(X, y, "ova", [5.0, 10.0], [1.0], kernel_cache=cache)
    assert sorted(cache) == [5.0, 10.0]
    cache[5.0] = cache[5.0].copy()
    again = loo_grid(np.full_like(X, np.nan), y, "ova", [5.0, 10.0], [1.0], kernel_cache=cache)
    assert first["n_errors"].tolist() == again["n_errors"].tolist()


def test_paper_grid():
    Cs = c_grid(0.1, 50, 0.5)
    assert len(Cs) == 100
    assert Cs[0] == 0.1 and Cs[-1] == 49.6
    assert np.all(np.diff(Cs) > 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y": np.zeros(10, dtype=int)}, "at least 2 classes"),
        ({"Cs": [0.0, 1.0]}, "must be > 0"),
        ({"Cs": [1.0, 1.0]}, "repeated"),
        ({"gammas": []}, "at least one gamma"),
        ({"solver": "smo"}, "runs the cd solver"),
        ({"threads": 0}, "threads must be"),
        ({"X": np.full((10, 2), np.nan)}, "NaN"),
        ({"y": np.arange(11) % 2}, "different numbers"),
    ],
)
def test_clear_errors(kwargs, message):
    args = {"X": np.random.default_rng(0).random((10, 2)), "y": np.arange(10) % 2}
    args.update({"gammas": [5.0], "Cs": [1.0]})
    args.update(kwargs)
    X, y, gammas, Cs = args.pop("X"), args.pop("y"), args.pop("gammas"), args.pop("Cs")
    with pytest.raises(ValueError, match=message):
        loo_grid(X, y, "isvm", gammas, Cs, **args)


def test_c_grid_rejects_bad_ranges():
    with pytest.raises(ValueError, match="start < stop"):
        c_grid(1.0, 0.5, 0.1)


@pytest.fixture(scope="module")
def wine_npz(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "wine.npz"
    save_npz(load_dataset("wine", source="bundled", scaling="minmax"), path)
    return path


def test_chunks_do_not_change_numbers(wine_npz, tmp_path):
    data = load_dataset("wine", source="bundled", scaling="minmax")
    idx = np.stack([rng(0, "sub", r).choice(178, 25, replace=False) for r in range(3)])
    np.save(tmp_path / "sub.npy", idx)
    grid = dict(gammas=[5.0], Cs=np.array([0.6, 5.1]), tol=1e-3, max_iter=None, threads=1, seed=1)
    whole = run_chunk(wine_npz, tmp_path / "sub.npy", "isvm", 0, 3, **grid)
    parts = pd.concat(
        [run_chunk(wine_npz, tmp_path / "sub.npy", "isvm", k, 1, **grid) for k in range(3)],
        ignore_index=True,
    )
    assert list(whole.columns) == list(RECORD_COLUMNS)
    assert len(whole) == 3 * 2 and set(whole["subsample"]) == {0, 1, 2}
    cols = [c for c in RECORD_COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(whole[cols], parts[cols])
    assert (whole["dataset"] == data.name).all()


def test_chunk_errors(wine_npz, tmp_path):
    one_class = np.zeros((1, 20), dtype=np.int64)  # wine rows are sorted by class
    np.save(tmp_path / "one.npy", one_class)
    grid = dict(gammas=[5.0], Cs=np.array([1.0]), tol=1e-3, max_iter=None, threads=1, seed=0)
    with pytest.raises(ValueError, match="single class"):
        run_chunk(wine_npz, tmp_path / "one.npy", "ova", 0, 1, **grid)
    with pytest.raises(ValueError, match="chunk 5"):
        run_chunk(wine_npz, tmp_path / "one.npy", "ova", 5, 1, **grid)


def test_cli_writes_records(wine_npz, tmp_path):
    from isvm.cli import main

    idx = np.stack([rng(1, "cli", r).choice(178, 20, replace=False) for r in range(2)])
    np.save(tmp_path / "sub.npy", idx)
    out = tmp_path / "loo" / "0.parquet"
    sub = str(tmp_path / "sub.npy")
    grid = "--method ww --chunk 1 --reps-per-job 1 --gammas 5 --C-start 0.1 --C-stop 1.5"
    code = main(
        ["loo", "--data", str(wine_npz), "--subsamples", sub, *grid.split(), "--C-step", "0.7"]
        + ["--out", str(out)]
    )
    assert code == 0
    records = pd.read_parquet(out)
    assert len(records) == 2 and records["subsample"].unique().tolist() == [1]
    missing = str(tmp_path / "missing.npz")
    grid = "--method ww --gammas 5 --C-start 0.1 --C-stop 1 --C-step 0.5"
    bad = main(["loo", "--data", missing, "--subsamples", sub, *grid.split(), "--out", str(out)])
    assert bad == 2


def test_warmup_command_writes_its_record(tmp_path, capsys):
    from isvm.cli import main

    out = tmp_path / "warm" / "numba-warmup.txt"
    assert main(["warmup", "--out", str(out)]) == 0
    assert re.search(r"LOO kernels (compiled|loaded) in \d+\.\d s", out.read_text())
    assert "numba" in capsys.readouterr().out


def test_shared_warm_up_compiles_one_process_at_a_time(tmp_path, monkeypatch):
    """Two jobs that find the cache cold at once compile one after the other (under the
    lock), each leaving its method's stamp; later jobs of those methods only load."""
    import threading

    from isvm import warmup

    calls = []

    def fake_warm_up(methods=None):
        calls.append(("start", list(methods)))
        time.sleep(0.3)  # long enough for the other thread to reach the lock
        calls.append(("end", list(methods)))
        return 0.3

    monkeypatch.setattr(warmup, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(warmup, "warm_up", fake_warm_up)
    results = []
    threads = [
        threading.Thread(target=lambda m=m: results.append(warmup.warm_up_shared([m])))
        for m in ("isvm", "ww")
    ]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    assert results == [(0.3, True), (0.3, True)]
    assert calls == [("start", ["isvm"]), ("end", ["isvm"]), ("start", ["ww"]), ("end", ["ww"])]
    stamps = sorted(path.name.rsplit("-", 1)[1] for path in (tmp_path / "cache").glob("*.txt"))
    assert stamps == ["isvm.txt", "ww.txt"]
    assert warmup.warm_up_shared(["ww", "isvm"]) == (0.3, False)  # later jobs only load
    assert warmup.warm_up_shared(["ova", "isvm"]) == (0.3, True)  # ova was not compiled yet


def _loo_args(data: Path, subsamples: Path, out: Path, reps: int) -> list[str]:
    grid = "--method isvm --chunk 0 --gammas 5 10 --C-start 0.1 --C-stop 50 --C-step 0.5"
    return ["loo", "--data", str(data), "--subsamples", str(subsamples), *grid.split()] + [
        "--reps-per-job",
        str(reps),
        "--out",
        str(out),
    ]


def test_a_killed_chunk_resumes_from_its_checkpoints(wine_npz, tmp_path):
    """SIGKILL `isvm loo` after its first subsample is saved; the rerun reads that one back,
    computes the rest, writes records equal to an uninterrupted run's (all but seconds)
    and removes the checkpoints."""
    import signal
    import subprocess
    import sys
    import time

    from isvm.cli import main

    idx = np.stack([rng(2, "kill", r).choice(178, 40, replace=False) for r in range(3)])
    np.save(tmp_path / "sub.npy", idx)
    whole = tmp_path / "whole.parquet"
    assert main(_loo_args(wine_npz, tmp_path / "sub.npy", whole, 3) + ["--no-checkpoints"]) == 0
    out = tmp_path / "loo" / "0.parquet"
    partial = out.with_suffix(".partial")
    cmd = [sys.executable, "-m", "isvm", *_loo_args(wine_npz, tmp_path / "sub.npy", out, 3)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (partial / "subsample-0.parquet").exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "the chunk finished before the kill: make it longer"
    kept = pd.read_parquet(partial / "subsample-0.parquet")
    log = tmp_path / "log.txt"
    with log.open("w") as stream:
        subprocess.run(cmd, check=True, stderr=stream)
    assert "subsample 0: read from the checkpoint" in log.read_text()
    records, reference = pd.read_parquet(out), pd.read_parquet(whole)
    cols = [c for c in RECORD_COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(records[cols], reference[cols])
    # subsample 0 came from the checkpoint, seconds and all
    pd.testing.assert_frame_equal(
        records[records.subsample == 0].reset_index(drop=True),
        kept.assign(dataset=records.dataset[0], scaling=records.scaling[0], Ns=40, method="isvm")[
            list(RECORD_COLUMNS)
        ],
    )
    assert not partial.exists()


def test_checkpoints_of_other_settings_are_ignored(wine_npz, tmp_path):
    from isvm.loo.cli import Checkpoints, fingerprint

    np.save(tmp_path / "sub.npy", np.stack([np.arange(20) * 8]))
    key = fingerprint(wine_npz, tmp_path / "sub.npy", method="ova", tol=1e-3)
    other = fingerprint(wine_npz, tmp_path / "sub.npy", method="ova", tol=1e-4)
    assert key != other
    store = Checkpoints(tmp_path / "c.partial", key)
    store.save(0, pd.DataFrame({"subsample": [0], "seconds": [-1.0]}))
    assert Checkpoints(tmp_path / "c.partial", key).load(0) is not None
    assert Checkpoints(tmp_path / "c.partial", other).load(0) is None


# Run in a fresh interpreter: which kernel signatures does ``warm_up([method])`` leave
# loaded, and which more does the LOO work of a config (its cells, grid, seeds and
# scalings, the sensitivity study's too) reach on top of it?
_SIGNATURE_PROBE = """
import json, sys
from numba.core.dispatcher import Dispatcher
from isvm import study
from isvm.data import load_dataset
import yaml
from isvm.experiment.subsample import draw_subsamples
from isvm.loo.refit import loo_records
from isvm.seeding import derive_seed
from isvm.warmup import warm_up

def signatures():
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("isvm"):
            for obj in vars(module).values():
                if isinstance(obj, Dispatcher):
                    key = f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"
                    found[key] = {str(sig) for sig in obj.signatures}
    return found

method = sys.argv[1]
with open(sys.argv[2], encoding="utf-8") as fh:  # plain YAML: no snakemake at the floors
    config = yaml.safe_load(fh)
seed, n_sub = config["seed"], config["n_subsamples"]
scalings = {config["data"]["scaling"], *config.get("sensitivity", {}).get("scalings", [])}
warm_up([method])
before = signatures()
for scaling in sorted(scalings):
    for name, ns in study.cells(config):
        data = load_dataset(name, source="bundled", scaling=scaling)
        idx = draw_subsamples(data.y, ns, n_sub, seed=seed, dataset=name)
        for r in range(n_sub):
            loo_records(data.X[idx[r]], data.y[idx[r]], method, config["grid"]["gammas"],
                        study.c_values(config), tol=config["solver"]["tol"],
                        max_iter=config["solver"]["max_iter"],
                        seed=derive_seed(seed, "loo", name, ns, r))
new = {key: sorted(sigs - before.get(key, set())) for key, sigs in signatures().items()}
print(json.dumps({key: sigs for key, sigs in new.items() if sigs}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("method", [m for m, way in LOO_METHODS.items() if way == "engine"])
def test_warm_up_reaches_every_kernel_signature_the_smoke_config_does(method):
    """A job's warm-up must load every kernel its LOO work calls: a signature it misses
    is compiled inside the job's clock on a cold cache (CI, 2026-11-27: 0.86 s added to
    one glass WW record, a compile outlier in the training-time table)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _SIGNATURE_PROBE, method, str(SMOKE_CONFIG)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    missed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert missed == {}, f"signatures the warm-up of {method} never loads: {missed}"
