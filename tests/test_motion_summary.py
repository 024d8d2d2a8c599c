"""``musclerl info FILE``: summaries of every motion format, through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from motion_samples import simple_trc_rows, trc_text, write_small_reference, write_step_up_amass

from musclerl.cli import main
from musclerl.motion.summary import summarize_motion_file
from musclerl.motion.trajectory import Trajectory

KEYS = {"kind", "frames", "rate_hz", "duration_s", "columns", "units"}


def _info_json(capsys, path) -> dict:
    assert main(["info", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)


@pytest.mark.parametrize(
    "relative, kind, frames, rate_hz, duration_s, units, n_columns",
    [
        ("opensim_gait2354/subject01_walk1.trc", "trc", 151, 60.0, 2.5, "mm", 41),
        ("opensim_gait2354/subject01_static.trc", "trc", 300, 60.0, 4.983, "mm", 49),
        ("opensim_gait2354/subject01_walk1_ik.mot", "mot", 73, 60.0, 1.2, "degrees", 23),
        ("opensim_gait2354/subject01_walk1_grf.mot", "mot", 1501, 600.0, 2.5, "degrees", 18),
        ("opensim_gait2354/inverse_dynamics.sto", "sto", 73, 60.0, 1.2, "radians", 23),
        ("opensim_gait10dof18musc/subject01_walk_IK.mot", "mot", 151, 60.0, 2.5, "degrees", 10),
        ("deepmimic/humanoid3d_walk.txt", "deepmimic", 39, 30.0, 1.2666, "m (Z up)", 20),
        ("deepmimic/humanoid3d_run.txt", "deepmimic", 25, 30.0, 0.8, "m (Z up)", 20),
    ],
)
def test_real_files(shared_data, capsys, relative, kind, frames, rate_hz, duration_s, units, n_columns):
    path = shared_data / relative
    if not path.exists():
        pytest.skip(f"{relative} not present")
    info = _info_json(capsys, path)
    assert KEYS <= set(info)
    assert (info["kind"], info["frames"], info["units"]) == (kind, frames, units)
    assert len(info["columns"]) == n_columns
    assert info["rate_hz"] == pytest.approx(rate_hz, rel=1e-3)
    assert info["duration_s"] == pytest.approx(duration_s, abs=2e-3)


def test_text_output(gait2354, capsys):
    assert main(["info", str(gait2354 / "subject01_walk1.trc")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("trc: 151 frames at 60 Hz (2.500 s)") and "R.ASIS" in out


def test_generated_npz_kinds(tmp_path, capsys):
    write_step_up_amass(tmp_path / "amass.npz", n_frames=12, rate_hz=120.0)
    info = _info_json(capsys, tmp_path / "amass.npz")
    assert (info["kind"], info["frames"], info["model_type"]) == ("amass", 12, "smplh")
    assert info["rate_hz"] == 120.0
    assert info["columns"][:3] == ["pelvis", "left_hip", "right_hip"]
    assert info["duration_s"] == pytest.approx(11 / 120)

    write_small_reference(tmp_path / "ref.npz")
    info = _info_json(capsys, tmp_path / "ref.npz")
    assert (info["kind"], info["frames"], info["subject"]) == ("reference", 5, "subject01")
    assert info["rate_hz"] == pytest.approx(60.0) and info["columns"][0] == "hip_flexion_r"

    Trajectory(
        qpos=np.zeros((7, 3)),
        qvel=np.zeros((7, 3)),
        rate_hz=50.0,
        joint_names=("a", "b", "c"),
        model_name="lab_model",  # not registered: summarised, its plausibility skipped
    ).save(tmp_path / "traj.npz")
    info = _info_json(capsys, tmp_path / "traj.npz")
    assert (info["kind"], info["frames"], info["rate_hz"]) == ("trajectory", 7, 50.0)
    assert info["model"] == "lab_model" and "skipped" in info["plausibility"]


def test_warnings_are_reported(tmp_path):
    (tmp_path / "w.trc").write_text(trc_text(["A", "B"], simple_trc_rows(3), num_frames=5))
    info = summarize_motion_file(tmp_path / "w.trc")
    assert info["frames"] == 3 and any("NumFrames=5" in w for w in info["warnings"])


def test_plots_for_every_kind(shared_data, tmp_path, capsys):
    write_step_up_amass(tmp_path / "amass.npz", n_frames=12)
    write_small_reference(tmp_path / "ref.npz")
    Trajectory(
        qpos=np.zeros((7, 3)),
        qvel=np.zeros((7, 3)),
        rate_hz=50.0,
        joint_names=("a", "b", "c"),
        model_name="lab_model",
    ).save(tmp_path / "traj.npz")
    inputs = [tmp_path / "amass.npz", tmp_path / "ref.npz", tmp_path / "traj.npz"]
    inputs += [
        p
        for p in (
            shared_data / "opensim_gait2354/subject01_walk1.trc",
            shared_data / "opensim_gait2354/inverse_dynamics.sto",
            shared_data / "deepmimic/humanoid3d_run.txt",
        )
        if p.exists()
    ]
    for i, path in enumerate(inputs):
        out = tmp_path / "plots" / f"{i}.png"
        assert main(["info", str(path), "--json", "--plot", str(out)]) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["plot"] == str(out) and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_errors(tmp_path, capsys):
    write_small_reference(tmp_path / "ref.npz")
    assert main(["info", str(tmp_path / "ref.npz"), "--plot", str(tmp_path / "out.jpg")]) == 2
    assert "out.jpg: plot output must end in .png" in capsys.readouterr().err
    assert main(["info", "tiny", "--plot", str(tmp_path / "model.png")]) == 2
    assert "model.png: --plot draws motion files only" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.npz"]
