"""``python -m isvm select``: the best parameters printed, the grid CSV and the plot written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from problems import clustered

from isvm.cli import main
from isvm.data.preprocess import scale
from isvm.estimators import FIT_COMPILE_NOTE
from isvm.search import LOOSearchCV
from isvm.select import METHODS, build_estimator
from isvm.warmup import COMPILE_NOTE


@pytest.fixture
def table(tmp_path):
    X, y = clustered(seed=2, n=30, n_classes=3, n_features=3, spread=0.3)
    frame = pd.DataFrame(X * [1.0, 10.0, 100.0], columns=["a", "b", "c"])
    frame.insert(1, "kind", np.array(["x", "y", "z"])[y])
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_select_prints_the_best_and_writes_the_grid_and_plot(table, tmp_path, capsys):
    path, frame = table
    out = tmp_path / "out"
    argv = ["select", "--data", str(path), "--target", "kind", "--method", "ww"]
    argv += ["--gammas", "2", "8", "--C", "0.5", "5", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    X = scale(frame[["a", "b", "c"]].to_numpy(), "zscore")
    ref = LOOSearchCV(build_estimator("ww"), {"C": [0.5, 5.0], "gamma": [2.0, 8.0]})
    ref.fit(X, frame["kind"].to_numpy())
    best = ref.best_params_
    assert f"best: gamma = {best['gamma']:g}, C = {best['C']:g}" in printed
    assert f"LOO accuracy {100 * ref.best_score_:.2f}%" in printed
    grid = pd.read_csv(out / "loo_grid.csv")
    assert len(grid) == 4 and list(grid["gamma"]) == [2.0, 2.0, 8.0, 8.0]
    expected = pd.DataFrame(ref.cv_results_["params"]).assign(
        acc=ref.cv_results_["mean_test_score"]
    )
    merged = grid.merge(expected, on=["gamma", "C"])
    np.testing.assert_array_equal(merged["loo_accuracy"], merged["acc"])
    assert (out / "loo_vs_C.png").stat().st_size > 1000


def test_select_errors_are_one_line(table, capsys):
    path, _ = table
    assert main(["select", "--data", str(path), "--target", "label"]) == 2
    assert "no column named 'label'" in capsys.readouterr().err
    assert main(["select", "--data", str(path), "--target", "kind", "--C", "-1"]) == 2
    assert "C must be positive" in capsys.readouterr().err


def test_every_method_builds_the_estimator_of_that_loo_method():
    for method in METHODS:
        assert build_estimator(method)._loo_method() == method


def _run(argv, capsys):
    """(exit status, stdout, stderr lines) of ``isvm select ARGV``, without the compile
    notes a cold numba cache adds."""
    status = main(["select", *argv])
    captured = capsys.readouterr()
    notes = (COMPILE_NOTE, FIT_COMPILE_NOTE)
    err = [line for line in captured.err.splitlines() if line not in notes]
    return status, captured.out, err


def test_sep_reads_other_separators_and_names_it_in_the_error(table, tmp_path, capsys):
    _, frame = table
    path = tmp_path / "semicolon.csv"
    frame.to_csv(path, index=False, sep=";")
    argv = ["--data", str(path), "--target", "kind", "--gammas", "2", "--C", "1"]
    status, _, err = _run(argv + ["--out", str(tmp_path / "o")], capsys)
    assert status == 2 and len(err) == 1
    assert "no column named 'kind' (read with --sep ',')" in err[0]
    assert "the columns found are ['a;kind;b;c']" in err[0] and "--sep ';'" in err[0]
    status, out, _ = _run(argv + ["--sep", ";", "--out", str(tmp_path / "o")], capsys)
    assert status == 0 and "3 features" in out
    tsv = tmp_path / "data.tsv"
    frame.to_csv(tsv, index=False, sep="\t")
    argv[1] = str(tsv)
    status, _, err = _run(argv + ["--out", str(tmp_path / "o")], capsys)
    assert status == 2 and len(err) == 1 and "--sep '\\t'" in err[0]
    status, out, _ = _run(argv + ["--sep", "\\t", "--out", str(tmp_path / "o")], capsys)
    assert status == 0 and "3 features" in out


def test_sep_must_be_one_character(table, capsys):
    path, _ = table
    with pytest.raises(SystemExit) as caught:
        main(["select", "--data", str(path), "--target", "kind", "--sep", ";;"])
    assert caught.value.code == 2
    assert "argument --sep: must be one character" in capsys.readouterr().err


@pytest.mark.parametrize("threads", ["0", "-2", "two"])
def test_threads_is_checked_by_argparse(table, threads, capsys):
    path, _ = table
    with pytest.raises(SystemExit) as caught:
        main(["select", "--data", str(path), "--target", "kind", "--threads", threads])
    assert caught.value.code == 2
    assert "argument --threads" in capsys.readouterr().err


def test_user_errors_exit_2_with_one_line(table, tmp_path, capsys):
    path, frame = table
    base = ["--data", str(path), "--target", "kind", "--gammas", "2", "--C", "1"]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status, _, err = _run(base + ["--out", str(blocker / "out")], capsys)
    assert status == 2 and err == [
        f"isvm select: error: cannot write --out '{blocker / 'out'}': '{blocker}' is not a folder"
    ]
    single = frame.copy()
    single.loc[0, "kind"] = "w"  # the only sample of class w
    single.to_csv(tmp_path / "single.csv", index=False)
    argv = ["--data", str(tmp_path / "single.csv"), "--target", "kind", "--out", str(tmp_path)]
    status, _, err = _run(argv, capsys)
    assert status == 2 and len(err) == 1 and "class 'w' has a single sample" in err[0]
    status, _, err = _run(["--data", str(tmp_path / "missing.csv"), "--target", "kind"], capsys)
    assert status == 2 and len(err) == 1 and "No such file" in err[0]
    frame.iloc[:2].to_csv(tmp_path / "two.csv", index=False)  # labels x and y, once each
    argv = ["--data", str(tmp_path / "two.csv"), "--target", "kind", "--out", str(tmp_path)]
    status, _, err = _run(argv, capsys)
    assert status == 2 and len(err) == 1
    assert "at least 2 samples of every class" in err[0] and "classes 'x', 'y'" in err[0]


def test_a_continuous_target_is_refused_unless_insisted_on(tmp_path, capsys):
    X, y = clustered(seed=4, n=36, n_classes=12, n_features=3, spread=0.05)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(level=y + 0.5)
    frame.to_csv(tmp_path / "levels.csv", index=False)
    argv = ["--data", str(tmp_path / "levels.csv"), "--target", "level", "--gammas", "2"]
    argv += ["--C", "1", "--out", str(tmp_path / "out")]
    status, _, err = _run(argv, capsys)
    assert status == 2 and len(err) == 1
    assert "column 'level' looks continuous" in err[0] and "--allow-continuous-target" in err[0]
    assert not (tmp_path / "out").exists()
    status, out, _ = _run([*argv, "--allow-continuous-target"], capsys)
    assert status == 0 and "12 classes" in out


def test_constant_columns_are_dropped_with_a_note(table, tmp_path, capsys):
    path, frame = table
    frame.assign(flat=7.0).to_csv(tmp_path / "flat.csv", index=False)
    argv = ["--data", str(tmp_path / "flat.csv"), "--target", "kind", "--gammas", "2"]
    status, out, err = _run([*argv, "--C", "1", "--out", str(tmp_path / "out")], capsys)
    assert status == 0 and "3 features" in out
    assert err == [
        "isvm select: note: dropped 1 constant feature column(s) ('flat'): gamma is per "
        "feature over the 3 columns used, exp(-gamma ||x - x'||^2 / 3)"
    ]


def test_warnings_are_printed_as_one_line_notes(table, tmp_path, capsys, monkeypatch):
    import warnings

    path, _ = table
    fit = LOOSearchCV.fit

    def warning_fit(self, X, y):
        for _ in range(2):
            warnings.warn("something to know\nabout the fit", UserWarning, stacklevel=1)
        return fit(self, X, y)

    monkeypatch.setattr(LOOSearchCV, "fit", warning_fit)
    argv = ["--data", str(path), "--target", "kind", "--gammas", "2", "--C", "1"]
    status, _, err = _run([*argv, "--out", str(tmp_path / "out")], capsys)
    assert status == 0
    assert err == ["isvm select: note: something to know about the fit"]
