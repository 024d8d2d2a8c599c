"""Per leg and per segment quality (musclerl.retarget.sides) and the per-leg accuracy table."""

from __future__ import annotations

import numpy as np

from musclerl.retarget.sides import WORSE_BOUND_FRAC, side_of, side_summary

BODIES = {
    "RThigh": "femur_r",
    "RShank": "tibia_r",
    "LThigh": "femur_l",
    "LShank": "tibia_l",
    "ASIS": "pelvis",
}


def _summary(
    rms_mm: dict[str, float], bound: np.ndarray | None = None, names=("hip_rotation_r", "hip_rotation_l")
):
    bound = np.zeros((100, len(names)), dtype=bool) if bound is None else bound
    return side_summary({k: v / 1000 for k, v in rms_mm.items()}, BODIES, bound, list(names), 100.0)


def test_side_of_reads_opensim_suffixes():
    assert side_of("femur_r") == "right" and side_of("hip_rotation_l") == "left"
    assert side_of("pelvis") is None and side_of("torso") is None


def test_a_leg_with_bad_markers_is_named_with_its_worst_segment():
    out = _summary({"RThigh": 8, "RShank": 6, "LThigh": 90, "LShank": 7, "ASIS": 5})
    assert abs(out["sides"]["left"]["marker_rms_m"] - np.sqrt((0.09**2 + 0.007**2) / 2)) < 1e-9
    assert abs(out["marker_rms_by_segment_m"]["femur_l"] - 0.09) < 1e-12
    warning = out["side_warning"]
    assert warning.startswith("the left leg is clearly worse: markers 64 mm RMS vs 7 mm on the right")
    assert "femur_l 90 mm" in warning and "right leg" not in warning


def test_similar_legs_give_no_warning():
    assert _summary({"RThigh": 8, "RShank": 6, "LThigh": 10, "LShank": 7})["side_warning"] is None
    # a 1.6x ratio of small errors is not a failed leg (under 5 mm apart)
    assert _summary({"RThigh": 3, "RShank": 3, "LThigh": 5, "LShank": 5})["side_warning"] is None


def test_a_joint_pinned_on_its_bound_on_one_side_is_named_with_how_long():
    bound = np.zeros((100, 2), dtype=bool)
    bound[10:40, 1] = True  # left hip rotation on its limit for 0.3 s, 30 % of frames
    out = _summary({"RThigh": 8, "LThigh": 8}, bound)
    left = out["sides"]["left"]
    assert left["bound_frac"] == 0.3 and abs(left["bound_longest_s"] - 0.3) < 1e-12
    assert left["joints_on_bound"] == {"hip_rotation_l": 0.3}
    assert out["side_warning"] == (
        "the left leg is clearly worse: on a joint bound in 30 % of frames vs 0 % (hip_rotation_l 30 %, "
        "longest 0.30 s)"
    )
    bound[:, 0] = np.arange(100) < 100 * (0.3 - WORSE_BOUND_FRAC + 0.01)  # the right leg nearly as long
    assert _summary({"RThigh": 8, "LThigh": 8}, bound)["side_warning"] is None


def test_both_legs_can_be_named():
    bound = np.zeros((100, 2), dtype=bool)
    bound[:50, 0] = True
    out = _summary({"RThigh": 8, "LThigh": 80}, bound)
    assert "the right leg is clearly worse: on a joint bound" in out["side_warning"]
    assert " | the left leg is clearly worse: markers" in out["side_warning"]


def test_bound_beyond_expert_counts_frames_where_the_expert_is_elsewhere():
    import mujoco

    from musclerl.bench.accuracy import bound_beyond_expert
    from musclerl.models.registry import load_model

    model = load_model("myolegs")
    knee = model.joint("knee_angle_r")
    lo = float(model.jnt_range[knee.id][0])
    time_s = np.arange(100) / 100.0
    qpos = np.repeat(model.qpos0[None], 100, axis=0)
    qpos[:, model.jnt_qposadr[knee.id]] = lo + 0.3  # flexed ...
    qpos[:40, model.jnt_qposadr[knee.id]] = lo  # ... but straight on the bound for the first 40 frames

    class Expert:  # straight (on the bound) for the first 20 frames only, in degrees
        columns = ("knee_angle_r",)
        in_degrees = True

        def __init__(self):
            self.time_s = time_s
            self._knee = np.where(np.arange(100) < 20, np.rad2deg(lo), np.rad2deg(lo + 0.3))

        def column(self, name):
            return self._knee

    out = bound_beyond_expert(model, qpos, time_s, Expert())
    assert abs(out["knee_angle_r"] - 0.20) < 1e-9  # frames 20..39
    assert mujoco.mjtJoint(model.jnt_type[knee.id]) == mujoco.mjtJoint.mjJNT_HINGE


def test_accuracy_compares_only_the_frames_the_expert_solved(tmp_path):
    """An expert's IK may cover part of a trial (OpenCap's drop jump: 0.96-1.9 s of 2.39 s): the
    angles are compared there only, and the table says how much was compared; an expert that covers
    none of the trial is a one-line error."""
    import json

    import pytest

    from musclerl.bench.accuracy import markdown, trial_row
    from musclerl.errors import InputError
    from musclerl.motion.storage import Table, write_storage

    columns = tuple(
        f"{c}_{s}" for c in ("hip_flexion", "knee_angle", "ankle_angle", "hip_adduction") for s in "rl"
    )
    time_s = np.arange(240) / 100.0
    ours = np.full((240, len(columns)), 10.0)
    ours[:96, :] = 60.0  # before the expert's span: another pose, which nothing can be compared with
    write_storage(tmp_path / "ours.mot", Table(columns, ours, time_s, True, "ours"))
    inside = (time_s >= 0.96) & (time_s <= 1.9)
    expert = np.full((int(inside.sum()), len(columns)), 12.0)
    write_storage(tmp_path / "expert.mot", Table(columns, expert, time_s[inside], True, "expert"))
    report = {"model": "myolegs", "marker_rms_by_name_m": {"RThigh": 0.01}, "registration": {}}
    (tmp_path / "trial.json").write_text(json.dumps(report))
    row = trial_row(tmp_path / "trial.json", tmp_path / "ours.mot", tmp_path / "expert.mot")
    for key in ("hip", "knee", "ankle", "hip_adduction"):
        assert abs(row[f"{key}_rms_deg"] - 2.0) < 1e-9, key  # 10 vs 12 deg inside; 60 outside ignored
    assert abs(row["compared_frac"] - inside.mean()) < 1e-9
    assert "(40 % of frames compared)" in markdown([row])
    late = Table(columns, expert, time_s[inside] + 5.0, True, "late")
    write_storage(tmp_path / "late.mot", late)
    with pytest.raises(InputError, match="covers 5.96-6.90 s, none of"):
        trial_row(tmp_path / "trial.json", tmp_path / "ours.mot", tmp_path / "late.mot")
