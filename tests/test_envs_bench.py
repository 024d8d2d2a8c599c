"""``musclerl bench env`` prints the documented JSON; bad input exits 2."""

from __future__ import annotations

import json
import subprocess
import sys

import mujoco
import mujoco.batch
import numpy as np

from musclerl.cli import main
from musclerl.envs.config import EnvConfig
from musclerl.envs.motions import sine_dataset
from musclerl.envs.tracking import TrackingEnv


def test_bench_env_cpu_json(capsys):
    assert (
        main(
            [
                "bench",
                "env",
                "--model",
                "tiny",
                "--num-envs",
                "4",
                "--threads",
                "1",
                "--steps",
                "10",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    for key in ("env_steps_per_s", "raw_steps_per_s", "ratio", "raw_loop_mj_steps_per_s"):
        assert result[key] > 0
    env = TrackingEnv("tiny", sine_dataset("tiny", num_clips=3, duration_s=4.0), EnvConfig(), backend="cpu")
    assert (result["nu"], result["obs_dim"]) == (env.model.nu, env.observation_size)
    assert result["substeps"] == EnvConfig().substeps


def test_raw_baseline_does_the_env_physics():
    """The bench's premise: ``substeps`` raw ``mj_step`` from the env's state rows with the same
    controls reproduce the env's next physics state exactly (the env adds only observations,
    rewards and resets), so the ratio compares like with like."""
    config = EnvConfig()
    env = TrackingEnv(
        "tiny",
        sine_dataset("tiny", num_clips=3, duration_s=4.0),
        config,
        backend="cpu",
        num_envs=4,
        threads=1,
    )
    raw = mujoco.batch.Batch(env.model, nsim=4, nthread=1)
    state = env.reset(0)
    action = np.random.default_rng(0).uniform(0.0, 0.5, size=(4, env.action_size))
    for _ in range(3):
        raw.state[:] = env._physics.batch.state
        raw.bind("ctrl")[:] = action
        raw.step(nstep=config.substeps)
        state = env.step(state, action)
        kept = ~np.asarray(state.done)
        assert kept.any()
        np.testing.assert_array_equal(env._physics.batch.state[kept], raw.state[kept])


def test_bench_env_rejects_bad_counts(capsys):
    assert main(["bench", "env", "--model", "tiny", "--num-envs", "0", "--json"]) == 2
    assert "--num-envs" in capsys.readouterr().err


def test_importing_the_command_and_package_stays_light():
    code = (
        "import sys, musclerl.envs, musclerl.envs.bench; "
        "print([m for m in ('jax', 'flax', 'mujoco.mjx') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]"
