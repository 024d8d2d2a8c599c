"""``musclerl bench env`` prints the documented JSON; bad input exits 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mujoco
import mujoco.batch
import numpy as np
import pytest

from musclerl.cli import main
from musclerl.envs.config import EnvConfig
from musclerl.envs.motions import sine_dataset
from musclerl.envs.tracking import TrackingEnv
from musclerl.models.couplings import independent_coordinates
from musclerl.models.registry import load_model

REPO = Path(__file__).resolve().parents[1]


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
    env = TrackingEnv("tiny", sine_dataset("tiny", num_clips=3, duration_s=4.0), EnvConfig(), backend="cpu")
    assert (result["nu"], result["obs_dim"]) == (env.model.nu, env.observation_size)
    assert result["substeps"] == EnvConfig().substeps and result["timed_steps"] == 10
    # the raw batch did the work the rates are per: 10 control steps of 5 mj_step on 4 simulations,
    # by MuJoCo's own clock against the model's timestep
    assert result["raw_sim_s"] == pytest.approx(10 * 4 * 5 * env.model.opt.timestep, rel=1e-9)
    assert result["env_mj_steps_per_s"] == pytest.approx(result["env_steps_per_s"] * 5)
    assert result["ratio"] == pytest.approx(result["env_steps_per_s"] / result["raw_steps_per_s"])
    assert result["contract_ratio"] == pytest.approx(
        result["env_steps_per_s"] / result["raw_contract_steps_per_s"]
    )
    assert "thread_speedup" not in result  # one thread: nothing to scale


def test_bench_env_of_a_training_config_measures_its_pd_env_and_thread_scaling(capsys):
    """``--config``: the env training builds (here tiny with the demo's joint_reference_pd at 50 Hz
    on 2 ms physics: 10 physics steps, the PD law inverted before each), on 2 threads and 1."""
    args = ["bench", "env", "--config", str(REPO / "configs" / "tiny.yaml"), "--steps", "6", "--json"]
    overrides = ["ppo.num_envs=4", "threads=2", "env.action.space=joint_reference_pd", "env.control_hz=25"]
    assert main([*args, *overrides]) == 0
    result = json.loads(capsys.readouterr().out)
    model = load_model("tiny")
    substeps = round(1 / (25 * model.opt.timestep))
    assert result["action_space"] == "joint_reference_pd" and result["substeps"] == substeps
    assert result["action_size"] == len(independent_coordinates(model)) and result["threads"] == 2
    assert result["raw_sim_s"] == pytest.approx(6 * 4 * substeps * model.opt.timestep, rel=1e-9)
    assert 0 < result["serial_frac"] < 1 and result["serial_ms_per_step"] > 0
    # Amdahl's law on 2 cores lies between no gain and perfect scaling, below it by the serial share
    f = result["serial_frac"]
    assert result["amdahl_thread_speedup"] == pytest.approx(1 / ((1 - f) / 2 + f))
    assert np.isfinite(result["thread_speedup"]) and np.isfinite(result["raw_thread_speedup"])


def test_bench_env_config_errors_are_one_line(capsys, tmp_path):
    tiny = str(REPO / "configs" / "tiny.yaml")
    assert main(["bench", "env", "--config", tiny, f"motion={tmp_path / 'none.npz'}"]) == 2
    assert "none.npz: motion file not found" in capsys.readouterr().err
    assert main(["bench", "env", "ppo.num_envs=4"]) == 2
    assert "need --config" in capsys.readouterr().err


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
        "import sys, musclerl.envs, musclerl.envs.config, musclerl.bench.env_steps; "
        "print([m for m in ('jax', 'flax', 'mujoco.mjx') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]"
