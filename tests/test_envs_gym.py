"""gymnasium front ends (checker, vector form), rendering and MP4 video (headless, in a subprocess
with MUJOCO_GL=osmesa since the GL backend is fixed when mujoco is first imported)."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import musclerl.envs  # noqa: F401  (registers musclerl/Tracking-v0)
from musclerl.envs.motions import sine_gait


def test_single_env_passes_gymnasium_checker(tmp_path):
    path = tmp_path / "walk.npz"
    sine_gait("tiny", duration_s=1.0).save(path)
    env = gym.make("musclerl/Tracking-v0", model="tiny", motion=str(path))
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
    obs2, _ = env.reset(seed=3)
    np.testing.assert_array_equal(obs, obs2)  # seeded resets repeat
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert np.isfinite(reward) and "reward/site_pos" in info and not (terminated and truncated)
    env.close()


def test_single_env_truncates_at_clip_end_and_returns_the_reached_obs():
    env = gym.make(
        "musclerl/Tracking-v0",
        model="tiny",
        motion=sine_gait("tiny", duration_s=0.5),
        config={"termination": {"site_deviation_m": 10.0, "root_height_min_m": 0.0}},
    )
    env.reset(seed=0, options={"clip": 0, "time_s": 0.0})
    truncated, steps = False, 0
    while not truncated:
        obs, _, terminated, truncated, _ = env.step(np.full(6, 0.1, np.float32))
        assert not terminated
        steps += 1
    last_s = 24 / 50.0  # 25 frames at 50 Hz
    assert steps == round(last_s / env.unwrapped.env.control_dt_s)
    assert np.all(np.isfinite(obs))


def test_vector_env_steps_a_batch():
    vec = gym.make_vec(
        "musclerl/Tracking-v0", num_envs=4, vectorization_mode="vector_entry_point", model="tiny"
    )
    obs, _ = vec.reset(seed=1)
    assert obs.shape == (4, vec.single_observation_space.shape[0])
    obs, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
    assert reward.shape == (4,) and info["final_obs"].shape == obs.shape
    assert vec.single_action_space.shape == (6,)
    vec.close()


RENDER_SCRIPT = """
import json, sys
import numpy as np
import gymnasium as gym
from gymnasium.utils.env_checker import check_env
import musclerl.envs
from musclerl.envs import TrackingEnv
from musclerl.envs.motions import sine_gait
from musclerl.envs.video import record_rollout

env = gym.make("musclerl/Tracking-v0", model="tiny", render_mode="rgb_array", width=160, height=120)
check_env(env.unwrapped)
env.reset(seed=0)
frame = env.render()
env.close()
tracking = TrackingEnv("tiny", sine_gait("tiny", duration_s=1.0), num_envs=1)
stats = record_rollout(tracking, lambda obs: np.full((1, 6), 0.2), sys.argv[1], num_steps=12, clip=0,
                       width=160, height=120)
print(json.dumps({"shape": list(frame.shape), "std": float(frame.std()), **stats}))
"""


def test_render_and_mp4_headless(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    if ctypes.util.find_library("OSMesa") is None:
        pytest.skip("no OSMesa on this machine (apt-get install libosmesa6)")
    out = tmp_path / "rollout.mp4"
    env = {**os.environ, "MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}
    proc = subprocess.run(
        [sys.executable, "-c", RENDER_SCRIPT, str(out)], env=env, capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0 and ("OSMesa" in proc.stderr or "cannot create an OpenGL context" in proc.stderr):
        pytest.skip("no OSMesa on this machine (apt-get install libosmesa6)")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["shape"] == [120, 160, 3] and result["std"] > 1.0  # not a blank image
    assert result["steps"] >= 1
    assert out.stat().st_size > 1000 and out.read_bytes()[4:8] == b"ftyp"  # an MP4 container


def test_cli_refuses_a_gl_backend_whose_library_is_missing(monkeypatch, capsys):
    from musclerl import cli

    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    monkeypatch.setattr(cli.ctypes.util, "find_library", lambda name: None)
    assert cli.main(["info", "tiny"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MUJOCO_GL" in err[0] and "libosmesa6" in err[0]
