"""The policy shipped in ``assets/policies/myolegs_walk`` loads, acts in its action space, and
``musclerl evaluate`` rolls it out on the bundled walk out of the box."""

from __future__ import annotations

import json

import numpy as np
import pytest

from musclerl import load_policy
from musclerl.cli import main
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory
from musclerl.resources import assets_dir

POLICY = assets_dir() / "policies" / "myolegs_walk"
WALK = assets_dir() / "motions" / "walk_myolegs.npz"


def test_shipped_policy_records_its_action_space_and_training():
    policy = load_policy(POLICY)
    cfg = policy.config
    assert cfg["train_config"]["env"]["action"]["space"] == "joint_reference_pd"
    assert policy.action_size == 14 and np.all(policy.bounds.low == -1) and np.all(policy.bounds.high == 1)
    assert cfg["env_steps"] > 1_000_000  # a trained policy, not an untrained export


def test_evaluate_runs_the_shipped_policy(tmp_path):
    out = tmp_path / "eval"
    assert main(["evaluate", str(POLICY), "--motion", str(WALK), "--max-steps", "50", "--out", str(out)]) == 0
    doc = json.loads((out / "metrics.json").read_text())
    with np.load(out / "recording.npz") as z:
        assert z["excitation"].shape == (51, 80)
        assert np.all((z["excitation"] >= 0) & (z["excitation"] <= 1))
    tracking = doc["tracking"]
    # 50 control steps at the policy's 50 Hz from t = 0: the walker does not fall, and its site error
    # meets the tracking aim (MPJPE <= 5 cm)
    assert tracking["early_terminations"] == 0 and tracking["success_rate"] == 1.0
    assert tracking["duration_s"] == pytest.approx(
        50 / load_policy(POLICY).config["train_config"]["env"]["control_hz"]
    )
    assert tracking["mpjpe_global_m"] <= 0.05
    # the recorded joint angles follow the clip itself, read here from the Trajectory (not the env)
    model = load_model("myolegs")
    clip = Trajectory.load(WALK)
    with np.load(out / "recording.npz") as z:
        names, angle_deg, time_s = list(z["coordinates"]), z["angle"], z["time_s"]
    period_s = clip.num_frames / clip.rate_hz
    for name in ("hip_flexion_r", "hip_flexion_l", "knee_angle_r", "knee_angle_l"):
        clip_rad = clip.qpos[:, model.jnt_qposadr[model.joint(name).id]]
        ref_rad = np.interp(time_s, np.arange(clip.num_frames) / clip.rate_hz, clip_rad, period=period_s)
        assert np.corrcoef(ref_rad, angle_deg[:, names.index(name)])[0, 1] >= 0.95, name
