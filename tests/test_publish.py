"""``python -m isvm publish``: the workflow's last step, copying staged files into place."""

from __future__ import annotations

from isvm.cli import main


def test_publish_copies_each_file_to_its_target(tmp_path, capsys):
    staged = [tmp_path / "stage" / name for name in ("t.csv", "f.png")]
    for i, path in enumerate(staged):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(bytes([i]) * 10)
    targets = [tmp_path / "out" / "tables" / "t.csv", tmp_path / "out" / "figures" / "f.png"]
    targets[0].parent.mkdir(parents=True)
    targets[0].write_text("the last run's table")
    args = ["publish", "--staged", *map(str, staged), "--to", *map(str, targets)]
    assert main(args) == 0
    assert [t.read_bytes() for t in targets] == [s.read_bytes() for s in staged]
    assert not list(tmp_path.rglob(".*.publishing"))  # no temporary file left
    assert "published 2 files" in capsys.readouterr().out


def test_publish_refuses_unpaired_lists_and_missing_files(tmp_path, capsys):
    target = tmp_path / "t.csv"
    assert main(["publish", "--staged", "a", "b", "--to", str(target)]) == 2
    assert "2 staged files but 1 targets" in capsys.readouterr().err
    assert main(["publish", "--staged", str(tmp_path / "missing"), "--to", str(target)]) == 2
    assert "isvm publish: error:" in capsys.readouterr().err and not target.exists()
