"""The folder runner of the retarget commands (musclerl.retarget.batch): outputs per input, resume,
and the failure rule shared with ``musclerl evaluate`` on a folder (a failing input is listed
with its reason and the others go on; exit 2 only when nothing could be retargeted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from musclerl.cli import main
from musclerl.errors import InputError
from musclerl.retarget import batch


def test_plan_names_every_output_after_its_input(tmp_path):
    items = batch.plan([Path("x/a.trc"), Path("y/b.TRC")], tmp_path, mot=True)
    assert [i.out.name for i in items] == ["a.npz", "b.npz"]
    assert [i.report.name for i in items] == ["a.json", "b.json"]
    assert [i.mot.name for i in items] == ["a.mot", "b.mot"] and items[0].plot is None
    assert all(i.out.parent == tmp_path for i in items)
    with pytest.raises(InputError, match="'a'.*collide"):
        batch.plan([Path("x/a.npz"), Path("y/a.txt")], tmp_path)


def _run_one(item, offset, state):
    """A folder item: fails on names starting with 'bad' (bad input) or 'bug' (a bug), else writes."""
    if item.source.name.startswith("bad"):
        raise InputError(item.source, "not a motion")
    if item.source.name.startswith("bug"):
        raise ValueError("index 3\nis out of bounds")
    state.setdefault("seen", []).append(item.source.name)
    item.out.write_text("done")
    return {"trial": str(item.source), "frames": offset, "seen": list(state["seen"])}


def test_run_folder_skips_finished_and_lists_failures(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.npz").write_text("earlier")
    (out / "a.json").write_text(json.dumps({"frames": 7}))
    names = ["a.npz", "bad.npz", "bug.npz", "c.npz", "d.npz"]
    rows = batch.run_folder(batch.plan([Path(n) for n in names], out), _run_one, (5,), progress=False)
    assert [r["trial"] for r in rows] == names
    assert rows[0] == {"frames": 7, "trial": "a.npz", "skipped": True}
    assert rows[1] == {"trial": "bad.npz", "error": "bad.npz: not a motion"}
    assert rows[2] == {
        "trial": "bug.npz",
        "error": "bug.npz: unexpected ValueError: index 3 is out of bounds",
    }
    assert rows[4]["seen"] == ["c.npz", "d.npz"]  # the items after the failures ran, sharing state
    assert (out / "a.npz").read_text() == "earlier"


def test_finish_folder_rule(tmp_path, capsys):
    out = tmp_path / "out"
    done = {"trial": "x/a.npz", "frames": 3, "marker_rms_m": {"mean": 0.01}, "failed_frames": 0}
    failed = {"trial": "x/b.npz", "error": "x/b.npz: no frames"}
    skipped = {"trial": "x/c.npz", "skipped": True}
    for rows in ([failed], [failed, failed]):  # nothing retargeted: exit 2, nothing written
        with pytest.raises(InputError, match="x: no input could be retargeted .x/b.npz: no frames"):
            batch.finish_folder(out, rows, "x")
        assert not out.exists()
    for rows in ([done, failed], [skipped, failed]):
        assert batch.finish_folder(out, rows, "x") == 0
        summary = json.loads((out / "summary.json").read_text())
        assert [r["status"] for r in summary] == [("done" if "frames" in rows[0] else "skipped"), "error"]
        assert summary[1]["error"] == "x/b.npz: no frames"
        assert "failed: x/b.npz: no frames" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["retarget", "markers", "--markers", "m.xml"], ["retarget", "smpl"]])
def test_help_states_the_folder_rule(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*command, "x", "--out", "o", "--help"])
    assert exit_.value.code == 0
    assert batch.FOLDER_RULE in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "command, suffix, content",
    [
        (["retarget", "smpl", "--model", "tiny"], ".npz", b"not a zip"),
        (["retarget", "markers", "--model", "tiny", "--markers", "MARKERS"], ".trc", b"not a trc\n"),
    ],
)
def test_folder_of_bad_files_exits_2_and_writes_nothing(command, suffix, content, tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}{suffix}").write_bytes(content)
    markers = tmp_path / "markers.xml"
    markers.write_text(
        '<OpenSimDocument><MarkerSet><objects><Marker name="M1"><body>pelvis</body>'
        "<location>0 0 0</location><fixed>false</fixed></Marker></objects></MarkerSet></OpenSimDocument>"
    )
    command = [str(markers) if c == "MARKERS" else c for c in command]
    out = tmp_path / "out"
    assert main([*command, str(folder), "--out", str(out)]) == 2
    # stderr: the progress bar, then one error line
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("musclerl")]
    assert len(err) == 1 and err[0].startswith("musclerl: error: ")
    assert "no input could be retargeted" in err[0]
    assert "a" + suffix in err[0] and "b" + suffix in err[0]
    assert not out.exists()
