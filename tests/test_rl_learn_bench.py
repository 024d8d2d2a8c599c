"""``musclerl bench learn`` and its deterministic tracking test, on the tiny model (fast).

The run trains on a two-clip list (the bundled looping walk and a generated 0.6 s clip that does
not loop), so the test covers a ``motion:`` list in training and a test of every clip."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from musclerl.bench.learn import bench_dataset, tracking_test
from musclerl.cli import main
from musclerl.envs.motions import sine_gait

REPO = Path(__file__).resolve().parents[1]
WALK = REPO / "assets" / "motions" / "walk_tiny.npz"


def _bench(args: list[str]) -> dict:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["bench", "learn", *args]) == 0
    return json.loads(printed.getvalue().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("learn")
    sine = folder / "sine.npz"
    sine_gait("tiny", duration_s=0.6, name="sine").save(sine)
    out = folder / "run"
    args = ["--config", str(REPO / "configs" / "tiny.yaml"), "--out", str(out), "--seconds", "1.0", "--json"]
    args += [f"motion=[{WALK},{sine}]", "ppo.total_env_steps=2048", "ppo.num_envs=32", "ppo.rollout_steps=32"]
    return out, _bench(args)


def test_bench_learn_trains_then_tests_every_clip_from_the_first_frame(tiny_run):
    out, result = tiny_run
    assert result["env_steps"] == 2048 and result["wall_s"] > 0
    clips = result["clips"]
    assert list(clips) == ["humanoid3d_walk", "sine"]
    walk, sine = clips["humanoid3d_walk"], clips["sine"]
    assert walk["test_s"] == pytest.approx(1.0)  # the walk loops: the whole test
    assert 0.5 < sine["test_s"] <= 0.6 + 1e-9  # the clip that does not loop ends its test
    for r in clips.values():
        assert r["success"] == (r["tracked_s"] >= r["test_s"] - 1e-9)
    for key in ("tracked_s", "test_s", "mpjpe_m", "site_err_world_m"):
        assert result[key] == pytest.approx((walk[key] + sine[key]) / 2)
    assert result["success_rate"] == pytest.approx((walk["success"] + sine["success"]) / 2)
    assert result["success"] == (walk["success"] and sine["success"])
    assert (out / "curves.png").is_file() and result["episode_length_first"] > 0


def test_bench_learn_of_a_policy_tests_its_training_dataset_or_one_clip(tiny_run, capsys):
    out, trained = tiny_run
    again = _bench(["--policy", str(out / "policy"), "--seconds", "1.0", "--json"])
    assert again["clips"] == trained["clips"]  # the policy's own dataset, deterministically
    one = _bench(["--policy", str(out / "policy"), "--seconds", "1.0", "--clip", "sine", "--json"])
    assert list(one["clips"]) == ["sine"] and one["clips"]["sine"] == trained["clips"]["sine"]
    assert one["mpjpe_m"] == trained["clips"]["sine"]["mpjpe_m"]
    by_index = _bench(["--policy", str(out / "policy"), "--seconds", "0.2", "--clip", "0", "--json"])
    assert list(by_index["clips"]) == ["humanoid3d_walk"]
    policy = ["--policy", str(out / "policy")]
    folder = _bench([*policy, "--motion", str(out.parent), "--seconds", "0.2", "--json"])
    assert list(folder["clips"]) == ["sine"]  # --motion as a folder: its .npz files
    assert main(["bench", "learn", "--policy", str(out / "policy"), "--clip", "run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("musclerl: error: --clip") and "humanoid3d_walk" in err[0]


def test_bad_clip_fails_before_training(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["bench", "learn", "--config", str(REPO / "configs" / "tiny.yaml"), "--out", str(out)]
    assert main([*args, "--clip", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no clip '7'" in err[0] and not out.exists()


def test_tracking_test_of_a_policy_folder_repeats(tiny_run):
    from musclerl import load_policy

    out, _ = tiny_run
    policy = load_policy(out / "policy")
    a = tracking_test(policy, WALK, seconds=0.5)
    b = tracking_test(policy, WALK, seconds=0.5)
    assert a == b  # deterministic: the policy's mean from the clip's first frame


def _stepped_by_hand(policy, motion, seconds: float, clip: int) -> tuple[float, float, float]:
    """The test redone with the env's own step and metrics (not the recording): control steps
    survived (s), and the mean root-relative and world site errors (m) over them."""
    from musclerl.bench.learn import evaluation_env

    env, steps = evaluation_env(policy, motion, seconds)
    state = env.reset(0, clip=np.array([clip]), time_s=np.array([0.0]))
    local, world = [], []
    for _ in range(steps):
        state = env.step(state, policy.act(np.asarray(state.obs), deterministic=True))
        if bool(np.asarray(state.done)[0]):
            break
        local.append(float(np.asarray(state.metrics["site_err_local_m"])[0]))
        world.append(float(np.asarray(state.metrics["site_err_m"])[0]))
    survived = len(local) + int(bool(np.asarray(state.done)[0]) and not bool(np.asarray(state.terminated)[0]))
    return survived * env.control_dt_s, float(np.mean(local)), float(np.mean(world))


def test_bench_learn_figures_match_the_env_stepped_by_hand(tiny_run):
    """tracked_s and the MPJPE of the bench equal those of a loop over the env's own step and
    metrics (rewards.tracking_errors), independent of the recording the bench reads."""
    from musclerl import load_policy

    out, result = tiny_run
    policy = load_policy(out / "policy")
    motion = bench_dataset([str(WALK), str(out.parent / "sine.npz")], "tiny")  # the training set
    for index, name in enumerate(("humanoid3d_walk", "sine")):
        r = result["clips"][name]
        tracked_s, local_m, world_m = _stepped_by_hand(policy, motion, 1.0, index)
        assert r["tracked_s"] == pytest.approx(tracked_s, abs=1e-9)
        assert r["mpjpe_m"] == pytest.approx(local_m, rel=1e-6)
        assert r["site_err_world_m"] == pytest.approx(world_m, rel=1e-6)
