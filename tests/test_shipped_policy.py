"""The policy shipped in ``assets/policies/myolegs_walk`` loads, acts in its action space, and
``musclerl evaluate`` rolls it out on the bundled walk out of the box."""

from __future__ import annotations

import json

import numpy as np

from musclerl import load_policy
from musclerl.cli import main
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
    assert doc["tracking"]  # the tracking summary of the rollout is written
