"""`musclerl retarget markers` end to end: generated tiny case (default) and gait2354 (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from markers_fixtures import gait_qpos, subject_model, write_case

from musclerl.cli import main
from musclerl.motion.storage import read_storage
from musclerl.motion.trajectory import Trajectory

REPORT_FIELDS = (
    "frames",
    "fps",
    "marker_rms_m",
    "marker_max_m",
    "failed_frames",
    "joint_limit_violation_frac",
    "equality_residual_max",
    "penetration_frac",
    "penetration_max_m",
    "skating_mps",
    "tendon_jump_frac",
    "terrain",
)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return write_case(tmp_path_factory.mktemp("markers"))


def test_cli_tiny_generated_case(case, tmp_path):
    out = tmp_path / "walk.npz"
    code = main(
        [
            "retarget",
            "markers",
            str(case["walk"]),
            "--model",
            "tiny",
            "--markers",
            str(case["markers"]),
            "--static",
            str(case["static"]),
            "--scale-setup",
            str(case["scale"]),
            "--out",
            str(out),
            "--mot",
            str(tmp_path / "walk.mot"),
            "--report",
            str(tmp_path / "walk.json"),
            "--plot",
            str(tmp_path / "walk.png"),
        ]
    )
    assert code == 0
    report = json.loads((tmp_path / "walk.json").read_text())
    assert all(key in report for key in REPORT_FIELDS)
    assert report["frames"] == 60 and report["failed_frames"] == 0
    assert report["joint_limit_violation_frac"] == 0.0
    # Noise-free markers, but the generic marker set is 2 cm off and the scale comes from two marker
    # pairs: the placed markers absorb most of it; measured 6.9 mm mean RMS.
    assert report["marker_rms_m"]["mean"] < 0.012
    assert report["static_rms_m"] < 1e-6  # after placement the static trial is matched exactly
    traj = Trajectory.load(out)
    assert traj.qpos.shape == (60, 13) and traj.site_pos_m.shape == (60, 21, 3)
    table = read_storage(tmp_path / "walk.mot")
    assert table.in_degrees and "knee_angle_l" in table.columns
    model = subject_model()
    truth = np.rad2deg(gait_qpos(model, 60, 60.0)[:, model.jnt_qposadr[model.joint("knee_angle_l").id]])
    # The static pose is fitted with the generic markers, so joint zeros shift by a few degrees (as in
    # OpenSim); the motion itself must follow: measured 1.0 deg RMS for knee_angle_l.
    assert np.sqrt(np.mean((table.column("knee_angle_l") - truth) ** 2)) < 5.0
    assert (tmp_path / "walk.png").stat().st_size > 10_000


def test_cli_bad_marker_set_exits_2_without_output(case, tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<MarkerSet><objects/></MarkerSet>")
    out = tmp_path / "x.npz"
    assert (
        main(
            [
                "retarget",
                "markers",
                str(case["walk"]),
                "--model",
                "tiny",
                "--markers",
                str(bad),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "bad.xml" in capsys.readouterr().err
    assert not out.exists()


def test_batch_folder_is_resumable(case, tmp_path, capsys):
    trials = tmp_path / "trials"
    trials.mkdir()
    for name in ("a.trc", "b.trc"):
        (trials / name).write_bytes(case["walk"].read_bytes())
    out = tmp_path / "out"
    args = [
        "retarget",
        "markers",
        str(trials),
        "--model",
        "tiny",
        "--markers",
        str(case["markers"]),
        "--out",
        str(out),
        "--start",
        "0.0",
        "--end",
        "0.3",
    ]
    assert main([*args, "--jobs", "2"]) == 0
    rows = json.loads((out / "summary.json").read_text())
    assert [r["status"] for r in rows] == ["done", "done"]
    assert (out / "a.json").exists() and (out / "b.npz").exists()
    assert main(args) == 0
    rows = json.loads((out / "summary.json").read_text())
    assert [r["status"] for r in rows] == ["skipped", "skipped"]
    assert rows[0]["frames"] == 19


@pytest.mark.slow
def test_batched_solver_matches_sequential(case, tmp_path):
    tables = {}
    for solver in ("sequential", "batched"):
        mot = tmp_path / f"{solver}.mot"
        code = main(
            [
                "retarget",
                "markers",
                str(case["walk"]),
                "--model",
                "tiny",
                "--markers",
                str(case["markers"]),
                "--static",
                str(case["static"]),
                "--out",
                str(tmp_path / f"{solver}.npz"),
                "--mot",
                str(mot),
                "--solver",
                solver,
            ]
        )
        assert code == 0
        tables[solver] = read_storage(mot)
    for name in ("hip_flexion_r", "knee_angle_r", "ankle_angle_l"):
        diff = tables["batched"].column(name) - tables["sequential"].column(name)
        assert np.max(np.abs(diff)) < 0.5, name  # same objective, same constraints: same poses


@pytest.mark.slow
def test_gait2354_walk_against_opensim(gait2354, tmp_path):
    d = gait2354
    code = main(
        [
            "retarget",
            "markers",
            str(d / "subject01_walk1.trc"),
            "--model",
            "myolegs",
            "--markers",
            str(d / "gait2354_Scale_MarkerSet.xml"),
            "--static",
            str(d / "subject01_static.trc"),
            "--setup",
            str(d / "subject01_Setup_IK.xml"),
            "--scale-setup",
            str(d / "subject01_Setup_Scale.xml"),
            "--out",
            str(tmp_path / "walk.npz"),
            "--mot",
            str(tmp_path / "walk.mot"),
            "--report",
            str(tmp_path / "walk.json"),
        ]
    )
    assert code == 0
    report = json.loads((tmp_path / "walk.json").read_text())
    assert report["frames"] == 73 and report["failed_frames"] == 0
    assert report["joint_limit_violation_frac"] == 0.0 and report["equality_residual_max"] < 1e-6
    trunk = {"Sternum", "R.Acromium", "L.Acromium", "Top.Head"}
    lower = [v for k, v in report["marker_rms_by_name_m"].items() if k not in trunk]
    # OpenSim 4.6 reaches 12.0 mm over lower-body markers; measured here 15.0 mm (per-marker RMS
    # pooled differs slightly from the per-frame mean). 18 mm = OpenSim + 50 %: a regression guard.
    assert np.sqrt(np.mean(np.square(lower))) < 0.018
    ours, ref = read_storage(tmp_path / "walk.mot"), read_storage(d / "subject01_walk1_ik.mot")
    # OpenSim's gait2354 knee is negative in flexion, myolegs' positive. Aims of the issue: knee and
    # ankle within 5 deg RMS, hip within 8 deg (measured: hip 2.2/2.6, knee 2.3/2.5, ankle 2.1/1.8).
    for name, sign, limit in (("hip_flexion", 1, 8.0), ("knee_angle", -1, 5.0), ("ankle_angle", 1, 5.0)):
        for side in "rl":
            col = f"{name}_{side}"
            rms = np.sqrt(np.mean((ours.column(col) - sign * ref.column(col)) ** 2))
            assert rms < limit, (col, rms)
