"""Quality report (musclerl.retarget.report) on hand-made tiny-model motions with known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from musclerl.models.registry import load_model
from musclerl.retarget.report import plot_report, quality_report, write_report

STAND_Z_M = 0.955  # tiny's feet touch z = 0 with the root at this height


def _clip(model, frames=40, speed_mps=0.0, z_m=STAND_Z_M):
    qpos = np.tile(model.qpos0, (frames, 1))
    qpos[:, 0] = speed_mps * np.arange(frames) / 60.0
    qpos[:, 2] = z_m
    return qpos


def test_standing_still_is_clean():
    model = load_model("tiny")
    report, _ = quality_report(model, _clip(model), 60.0, solve_seconds=0.5)
    assert report["frames"] == 40 and report["fps"] == pytest.approx(80.0)
    assert report["penetration_frac"] == 0.0 and report["penetration_max_m"] < 1e-9
    assert report["joint_limit_violation_frac"] == 0.0 and report["tendon_jump_frac"] == 0.0
    assert report["stance_frac"] > 0.9 and report["skating_mps"] == pytest.approx(0.0, abs=1e-9)
    assert report["terrain"]["kind"] == "flat"


def test_sliding_feet_penetration_and_limits_are_measured():
    model = load_model("tiny")
    qpos = _clip(model, speed_mps=0.1, z_m=STAND_Z_M - 0.01)
    hip = model.jnt_qposadr[model.joint("hip_flexion_l").id]
    qpos[:, hip] = 1.9  # above the hip's range [-0.6, 1.8]; lifts the left foot, the right one stays
    report, series = quality_report(model, qpos, 60.0)
    assert report["skating_mps"] == pytest.approx(0.1, rel=1e-6)
    assert report["penetration_frac"] == 1.0
    assert report["penetration_max_m"] == pytest.approx(0.01, abs=2e-3)
    assert report["joint_limit_violation_frac"] == pytest.approx(1 / 6)  # one of six limited joints
    assert series["penetration_m"].shape == (40,)


def test_marker_errors_and_tendon_jumps(tmp_path):
    model = load_model("tiny")
    qpos = _clip(model, frames=10)
    hip = model.jnt_qposadr[model.joint("hip_flexion_l").id]
    qpos[5:, hip] = 1.0  # the hip snaps in one frame: its muscles' paths jump (hip flexor -40 %)
    errors = np.full((10, 3), 0.01)
    errors[:, 2] = np.nan
    errors[4, 0] = 0.05
    converged = np.ones(10, dtype=bool)
    converged[7] = False
    report, series = quality_report(
        model, qpos, 60.0, target_errors_m=errors, target_names=("a", "b", "c"), converged=converged
    )
    assert report["tendon_jump_frac"] == pytest.approx(0.1)
    assert report["marker_max_m"]["worst_frame"] == pytest.approx(0.05)
    assert report["marker_rms_m"]["worst_frame"] == pytest.approx(np.sqrt((0.05**2 + 0.01**2) / 2))
    assert report["marker_rms_by_name_m"]["c"] is None
    assert report["failed_frames"] == 1 and report["failed_frame_indices"] == [7]
    write_report(tmp_path / "r.json", report)
    assert json.loads((tmp_path / "r.json").read_text())["frames"] == 10
    plot_report(tmp_path / "r.png", report, series, {"hip": np.degrees(qpos[:, hip])})
    assert (tmp_path / "r.png").stat().st_size > 5_000
