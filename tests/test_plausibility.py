"""Physical plausibility (musclerl.dynamics.plausibility): hand-built motions with known answers,
the old synthetic walk (must fail), a real retargeted walk, and the hooks in ``musclerl info`` and
the retarget report."""

from __future__ import annotations

import dataclasses
import json

import mujoco
import numpy as np
import pytest

from musclerl.cli import main
from musclerl.dynamics.plausibility import Thresholds, format_plausibility, plausibility
from musclerl.models.geoms import foot_geoms, geom_lowest_z
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory
from musclerl.retarget.report import quality_report

GRAVITY = 9.81
UNFILTERED = Thresholds(lowpass_hz=0.0)


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _standing(model, frames: int) -> np.ndarray:
    """``qpos0`` lowered until the lowest foot geom touches z = 0, repeated (frames, nq)."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    q = model.qpos0.copy()
    q[2] -= geom_lowest_z(model, data, foot_geoms(model)).min()
    return np.tile(q, (frames, 1))


def _failed(result, criterion: str) -> bool:
    return any(f.startswith(criterion) for f in result.failures)


@pytest.mark.parametrize("name", ["myolegs", "tiny"])
def test_standing_still_is_one_body_weight_under_the_com(name, myolegs, tiny):
    model = {"myolegs": myolegs, "tiny": tiny}[name]
    result = plausibility(model, _standing(model, 20), 60.0)
    s = result.series
    assert result.passed and result.failures == ()
    assert result.body_weight_n == pytest.approx(mujoco.mj_getTotalmass(model) * GRAVITY)
    assert s.force_n[:, 2] / result.body_weight_n == pytest.approx(np.ones(20), abs=1e-9)
    assert np.abs(s.force_n[:, :2]).max() < 1e-9 and np.abs(s.moment_nm).max() < 1e-9
    assert s.cop_m[:, :2] == pytest.approx(s.com_m[:, :2], abs=1e-9)  # COP right under the COM
    assert s.cop_m[:, 2] == pytest.approx(np.zeros(20), abs=1e-12)
    assert result.cop == {"loaded_frames": 20, "outside_frac": 0.0, "outside_max_m": 0.0}
    assert result.stance_slip["median_mps"] == pytest.approx(0.0, abs=1e-9)
    assert set(result.stance_slip["by_foot"]) == {"left", "right"}
    assert result.root_accel_mps2["vertical_max"] == pytest.approx(0.0, abs=1e-9)


def test_held_in_the_air_needs_one_body_weight_but_has_no_foot_down(tiny):
    qpos = _standing(tiny, 20)
    qpos[:, 2] += 1.0
    result = plausibility(tiny, qpos, 60.0)
    s = result.series
    assert s.force_n[:, 2] / result.body_weight_n == pytest.approx(np.ones(20), abs=1e-9)
    assert s.cop_m[:, :2] == pytest.approx(s.com_m[:, :2], abs=1e-9)
    assert result.stance_slip["stance_frames"] == 0 and result.stance_slip["median_mps"] is None
    assert result.cop["outside_frac"] == 1.0 and result.cop["outside_max_m"] >= 1.0
    assert not result.passed and _failed(result, "centre of pressure outside the feet: 100%")


def test_free_fall_needs_no_force(myolegs):
    qpos = _standing(myolegs, 30)
    t = np.arange(30) / 60.0
    qpos[:, 0] = 0.3 * t  # thrown forward and up, then falling
    qpos[:, 2] += 1.0 + 0.7 * t - 0.5 * GRAVITY * t**2
    exact = plausibility(myolegs, qpos, 60.0, thresholds=UNFILTERED)  # a parabola differentiates exactly
    assert np.abs(exact.series.force_n).max() / exact.body_weight_n < 1e-9
    assert exact.series.root_accel_mps2 == pytest.approx(np.tile([0, 0, -GRAVITY], (30, 1)), abs=1e-6)
    assert exact.cop["loaded_frames"] == 0 and exact.cop["outside_frac"] is None
    filtered = plausibility(myolegs, qpos, 60.0)  # default 6 Hz filter: the ends bend a little
    assert np.abs(filtered.series.force_n).max() / filtered.body_weight_n < 0.01
    assert filtered.passed


def test_clips_are_differentiated_separately(tiny):
    stand = _standing(tiny, 20)
    fall = stand.copy()
    fall[:, 2] += 1.0 - 0.5 * GRAVITY * (np.arange(20) / 50.0) ** 2
    result = plausibility(
        tiny, np.vstack([stand, fall]), 50.0, clip_starts=np.array([0, 20]), thresholds=UNFILTERED
    )
    fz = result.series.force_n[:, 2] / result.body_weight_n
    assert fz[:20] == pytest.approx(np.ones(20), abs=1e-9)
    assert fz[20:] == pytest.approx(np.zeros(20), abs=1e-9)


def test_looping_clips_wrap_across_the_seam(tiny):
    rate, frames = 50.0, 40
    t = np.arange(frames) / rate
    hip = tiny.jnt_qposadr[tiny.joint("hip_flexion_l").id]
    # walking in a circle (radius 2 m, 1 m/s) with a leg swinging once per clip
    circle = _standing(tiny, frames)
    angle = t / 2.0
    circle[:, 0], circle[:, 1] = 2.0 * np.sin(angle), 2.0 * (1 - np.cos(angle))
    circle[:, 3], circle[:, 6] = np.cos(angle / 2), np.sin(angle / 2)
    circle[:, hip] = 0.3 * np.sin(2 * np.pi * t * rate / frames)
    looped = plausibility(tiny, circle, rate, clip_loop=np.array([True]), thresholds=UNFILTERED)
    horizontal = np.linalg.norm(looped.series.root_accel_mps2[:, :2], axis=1)
    assert horizontal == pytest.approx(np.full(frames, 0.5), abs=1e-3)  # centripetal v^2 / r
    # the same cycle with the first frame repeated at its end (moved by one period) reads the same
    repeated = np.vstack([circle, circle[:1]])
    repeated[-1, 0], repeated[-1, 1] = 2.0 * np.sin(frames / rate / 2), 2.0 * (1 - np.cos(frames / rate / 2))
    repeated[-1, 3], repeated[-1, 6] = np.cos(frames / rate / 4), np.sin(frames / rate / 4)
    again = plausibility(tiny, repeated, rate, clip_loop=np.array([True]), thresholds=UNFILTERED)
    # (without the repeat the seam step is the mean of its neighbours: exact to ~1e-4 BW on a circle)
    assert again.series.force_n[:frames] == pytest.approx(
        looped.series.force_n, abs=1e-3 * looped.body_weight_n
    )


def _level_pelvis_walk(model, speed_mps=1.2, period_s=1.0, rate=100.0) -> np.ndarray:
    """The old synthetic walk's kind of clip: a level pelvis at constant speed, legs swinging
    (hips +-0.35 rad in anti-phase, knees bent in swing), lowest foot just touching the floor."""
    t = np.arange(int(period_s * rate)) / rate
    qpos = _standing(model, len(t))
    phase = 2 * np.pi * t / period_s
    for side, shift in (("r", 0.0), ("l", np.pi)):
        qpos[:, model.jnt_qposadr[model.joint(f"hip_flexion_{side}").id]] = 0.35 * np.sin(phase + shift)
        knee = model.jnt_qposadr[model.joint(f"knee_angle_{side}").id]  # flexion positive
        qpos[:, knee] = 0.8 * np.clip(np.sin(phase + shift), 0.0, None)
    qpos[:, 0] = speed_mps * t
    data = mujoco.MjData(model)
    feet = foot_geoms(model)
    lowest = []
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        lowest.append(geom_lowest_z(model, data, feet).min())
    qpos[:, 2] -= min(lowest)
    return qpos


def test_level_pelvis_swinging_legs_fails_on_slip(tiny):
    result = plausibility(tiny, _level_pelvis_walk(tiny), 100.0, clip_loop=np.array([True]))
    assert not result.passed and _failed(result, "stance-foot slip")
    assert result.stance_slip["median_mps"] > 0.3


@pytest.fixture(scope="module")
def old_walk() -> Trajectory:
    """The old bundled ``walk_myolegs.npz`` (normative joint curves on a level, constant-speed
    pelvis, the lowest foot on the floor), kept as a test fixture since its generator was dropped."""
    from pathlib import Path

    return Trajectory.load(Path(__file__).resolve().parent / "data" / "old_synthetic_walk_myolegs.npz")


def test_old_synthetic_walk_fails(old_walk, myolegs, capsys):
    from musclerl.dynamics.plausibility import trajectory_plausibility

    result = trajectory_plausibility(old_walk, myolegs)
    assert not result.passed and _failed(result, "stance-foot slip")  # the lowest foot is swinging
    assert result.stance_slip["median_mps"] > 0.5
    # without the 6 Hz filter its pelvis height kinks show: floor pulling, > 2.5 BW, > 2 g
    raw = trajectory_plausibility(old_walk, myolegs, UNFILTERED)
    for criterion in ("floor pulling", "vertical force above 2.5 BW", "root vertical acceleration"):
        assert _failed(raw, criterion), (criterion, raw.failures)
    assert raw.vertical_force_bw["min"] < -0.3 and raw.vertical_force_bw["max"] > 3.0


def test_info_shows_plausibility(tiny, tmp_path, capsys):
    qpos = _standing(tiny, 10)
    Trajectory(
        qpos=qpos,
        qvel=np.zeros((10, tiny.nv)),
        rate_hz=30.0,
        joint_names=tuple(tiny.joint(j).name for j in range(tiny.njnt)),
        model_name="tiny",
    ).save(tmp_path / "stand.npz")
    assert main(["info", str(tmp_path / "stand.npz"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["plausibility"]
    assert info["passed"] is True and info["failures"] == []
    assert info["vertical_force_bw"]["min"] == pytest.approx(1.0, abs=1e-6)
    assert main(["info", str(tmp_path / "stand.npz")]) == 0
    out = capsys.readouterr().out
    assert "plausibility: passed" in out and "vertical external force: 1.00 to 1.00 BW" in out
    three_joints = Trajectory(
        qpos=np.zeros((7, 3)),
        qvel=np.zeros((7, 3)),
        rate_hz=50.0,
        joint_names=("a", "b", "c"),
        model_name="tiny",
    )
    three_joints.save(tmp_path / "wrong.npz")  # names tiny but does not fit it: refused
    assert main(["info", str(tmp_path / "wrong.npz"), "--json"]) == 2
    assert "wrong.npz: motion has nq=3, nv=3 but the model has nq=13" in capsys.readouterr().err
    # names no registered model: nothing to check it on
    dataclasses.replace(three_joints, model_name="my_lab_model").save(tmp_path / "unregistered.npz")
    assert main(["info", str(tmp_path / "unregistered.npz"), "--json"]) == 0
    assert "not a registered model" in json.loads(capsys.readouterr().out)["plausibility"]["skipped"]


def test_retarget_report_has_plausibility(tiny):
    report, _ = quality_report(tiny, _standing(tiny, 30), 60.0)
    assert report["plausibility"]["passed"] is True
    json.dumps(report, allow_nan=False)
    assert format_plausibility(report["plausibility"])[0] == "plausibility: passed"


def test_retargeted_deepmimic_walk(shared_data):
    from pathlib import Path

    from musclerl.retarget.keypoints.files import SmplOptions, retarget_file

    path = Path(shared_data) / "deepmimic" / "humanoid3d_walk.txt"
    if not path.exists():
        pytest.skip("deepmimic walk not present")
    _, report, _ = retarget_file(path, SmplOptions(model="myolegs"))
    check = report["plausibility"]
    json.dumps(check, allow_nan=False)
    assert check["stance_slip"]["median_mps"] < 0.1  # planted heels stay put
    assert check["vertical_force_bw"]["pulling_frames"] == 0 and check["vertical_force_bw"]["min"] > 0.5
    assert check["vertical_force_bw"]["max"] < 1.6  # walking peaks ~1.2 BW
    assert (
        max(-check["root_accel_mps2"]["vertical_min"], check["root_accel_mps2"]["vertical_max"]) < 2 * GRAVITY
    )
    if not check["passed"]:
        known = ("centre of pressure", "feet in the ground")
        assert all(f.startswith(known) for f in check["failures"]), check["failures"]
        pytest.xfail(
            "known retarget defects: the pelvis jumps 2-4 cm sideways within 2-3 frames at each "
            "heel strike, so the centre of pressure leaves the feet; solved on the model scaled to "
            f"the humanoid, the registry's longer feet dip 2 cm into the floor: {check['failures']}"
        )


@pytest.mark.slow
def test_retargeted_deepmimic_walk_with_balance_passes(shared_data):
    """``retarget smpl --balance``: the same walk, its centre of mass moved with the feet held,
    passes every check (the centre of pressure included) and keeps its feet planted."""
    from pathlib import Path

    from musclerl.retarget.keypoints.files import SmplOptions, retarget_file

    path = Path(shared_data) / "deepmimic" / "humanoid3d_walk.txt"
    if not path.exists():
        pytest.skip("deepmimic walk not present")
    result, report, _ = retarget_file(path, SmplOptions(model="myolegs", balance=True))
    check = report["plausibility"]
    assert check["passed"], check["failures"]
    assert report["balance"]["cop_outside_frac_before"] > 0.1  # it needed the pass
    assert report["balance"]["cop_outside_frac_after"] == 0.0
    assert report["balance"]["root_shift_max_m"] < 0.1  # a correction, not another motion
    assert result.trajectory.site_pos_m.shape[1] == len(result.trajectory.site_names)


def test_feet_in_the_ground_and_legs_through_each_other_fail(myolegs):
    """A pose the simulator cannot take fails: the standing body sunk 2 cm into the floor in a
    fifth of the frames (0.5 cm, soft contact's own depth, passes), and the legs crossed so far that
    the shins' collision geoms overlap (the registry model's contact pairs)."""
    stand = _standing(myolegs, 40)
    ok = plausibility(myolegs, stand, 100.0)
    assert ok.penetration == {
        "feet_below_frac": 0.0,
        "feet_below_max_m": pytest.approx(0.0, abs=1e-6),
        "limbs_overlap_frac": 0.0,
        "limbs_overlap_max_m": 0.0,
    }
    shallow = stand.copy()
    shallow[:, 2] -= 0.005
    assert not _failed(plausibility(myolegs, shallow, 100.0), "feet in the ground")
    sunk = stand.copy()
    sunk[10:18, 2] -= 0.02  # 8 of 40 frames: 20 % > 10 %
    result = plausibility(myolegs, sunk, 100.0)
    assert result.penetration["feet_below_frac"] == pytest.approx(0.2)
    assert result.penetration["feet_below_max_m"] == pytest.approx(0.02, abs=1e-3)
    assert _failed(result, "feet in the ground: 20% of 40 frames")
    crossed = stand.copy()
    for side in ("r", "l"):  # both thighs turned in (adduction is positive on either side)
        crossed[:, myolegs.joint(f"hip_adduction_{side}").qposadr[0]] = np.radians(25.0)
    result = plausibility(myolegs, crossed, 100.0)
    assert result.penetration["limbs_overlap_max_m"] > 0.01, result.penetration
    assert _failed(result, "limbs through each other: 100% of 40 frames")
    assert any(line.startswith("  feet in the ground") for line in format_plausibility(result.as_dict()))
