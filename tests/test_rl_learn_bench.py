"""``musclerl bench learn`` and its deterministic tracking test, on the tiny model (fast)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from musclerl.cli import main
from musclerl.rl.learn_bench import tracking_test

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("learn") / "run"
    args = ["bench", "learn", "--config", str(REPO / "configs" / "tiny.yaml"), "--out", str(out)]
    args += [
        "--seconds",
        "1.0",
        "--json",
        "ppo.total_env_steps=2048",
        "ppo.num_envs=32",
        "ppo.rollout_steps=32",
    ]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(args) == 0
    return out, json.loads(printed.getvalue().strip().splitlines()[-1])


def test_bench_learn_trains_then_tests_from_the_first_frame(tiny_run):
    out, result = tiny_run
    assert result["env_steps"] == 2048 and result["wall_s"] > 0
    assert result["test_s"] == pytest.approx(1.0)
    assert 0 < result["tracked_s"] <= result["test_s"] + 1e-9
    assert result["success"] == (result["tracked_s"] >= result["test_s"] - 1e-9)
    assert np.isfinite(result["mpjpe_m"]) and result["mpjpe_m"] <= result["site_err_world_m"] + 0.5
    assert (out / "curves.png").is_file() and result["episode_length_first"] > 0


def test_tracking_test_of_a_policy_folder_repeats(tiny_run):
    from musclerl import load_policy

    out, _ = tiny_run
    policy = load_policy(out / "policy")
    motion = REPO / "assets" / "motions" / "walk_tiny.npz"
    a = tracking_test(policy, motion, seconds=0.5)
    b = tracking_test(policy, motion, seconds=0.5)
    assert a == b  # deterministic: the policy's mean from the clip's first frame
