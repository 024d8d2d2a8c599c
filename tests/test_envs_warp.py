"""MJX with MuJoCo Warp (``env.mjx.impl: warp``), run on Warp's CPU device: the PD action spaces
agree with MuJoCo C, a world whose contact buffer overflows is reported and reset (never trained
on), the trainer runs on it, and myolegs agrees with MuJoCo C for a few steps (slow).

The plain-excitation parity on tiny, with a NaN world reset, is in tests/test_envs_backends.py.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

pytest.importorskip("warp")
jax = pytest.importorskip("jax")

from backend_samples import mjx_step_from  # noqa: E402
from test_envs_backends import _compare  # noqa: E402

from musclerl.envs import EnvConfig, TrackingEnv  # noqa: E402
from musclerl.envs.motions import sine_dataset  # noqa: E402


def test_warp_agrees_with_mujoco_c_under_a_pd_action_space():
    """The PD law is inverted before every physics step, reading the Warp world's actuator
    lengths and velocities (one ``forward`` per substep)."""
    dataset = sine_dataset("tiny", num_clips=1, duration_s=2.0)
    cfg = EnvConfig.from_dict({"integrator": "euler", "substeps": 3, "action": {"space": "reference_pd"}})
    worst = _compare("tiny", dataset, cfg, np.array([0, 0]), np.array([0.2, 0.7]), 2, "warp")[0]
    assert worst["obs"] < 1e-3 and worst["reward"] < 1e-3 and worst["qpos"] < 1e-4


def test_warp_contact_overflow_is_reported_and_the_world_reset(capfd):
    """One contact per env for three envs in the model's default pose (8 contacts each, the feet
    in the floor): the worlds that did not fit are flagged (``nan_reset``), reset, named on
    stderr; their state never reaches the obs."""
    dataset = sine_dataset("tiny", num_clips=1, duration_s=2.0)
    cfg = EnvConfig.from_dict({"integrator": "euler", "substeps": 2, "mjx": {"impl": "warp", "nconmax": 1}})
    env = TrackingEnv("tiny", dataset, cfg, backend="mjx", num_envs=3)
    cpu = TrackingEnv(
        "tiny", dataset, EnvConfig.from_dict({"integrator": "euler"}), backend="cpu", num_envs=3
    )
    state = cpu.reset(0, clip=np.zeros(3, int), time_s=np.array([0.2, 0.5, 0.9]))
    kin = cpu.kinematics(state)
    qpos = np.repeat(env.model.qpos0[None], 3, axis=0)
    data = mujoco.MjData(env.model)
    mujoco.mj_forward(env.model, data)
    assert data.ncon > 1  # each world needs more than its share of the buffer
    shared = (
        state.info["clip"],
        state.info["time_s"],
        qpos,
        0 * kin.qvel,
        kin.act,
        kin.ctrl.astype(np.float32),
    )
    _, stepped = mjx_step_from(env)(*shared, np.full((3, env.action_size), 0.2, np.float32))
    flagged = np.asarray(stepped.metrics["nan_reset"])
    assert flagged.sum() >= 1
    assert np.all(np.asarray(stepped.terminated)[flagged == 1])
    assert np.all(np.asarray(stepped.info["steps"])[flagged == 1] == 0)
    assert np.all(np.isfinite(np.asarray(stepped.obs)))
    err = capfd.readouterr().err
    assert "contacts (naconmax) buffer overflowed in env(s) [" in err and "raise env.mjx.nconmax" in err


def test_warp_buffers_are_sized_from_the_reference_frames():
    from musclerl.envs.backends.warp import MIN_CONTACTS_PER_ENV, buffer_sizes

    dataset = sine_dataset("tiny", num_clips=1, duration_s=2.0)
    env = TrackingEnv(
        "tiny", dataset, EnvConfig.from_dict({"mjx": {"impl": "warp"}}), backend="mjx", num_envs=2
    )
    contacts, constraints = buffer_sizes(env.model, env.reference.qpos)
    assert contacts >= MIN_CONTACTS_PER_ENV and constraints > 0
    assert env._physics.contacts_per_env == contacts and env._physics.njmax == constraints
    cfg = EnvConfig.from_dict({"mjx": {"impl": "warp", "nconmax": 40, "njmax": 90}})
    given = TrackingEnv("tiny", dataset, cfg, backend="mjx", num_envs=2)._physics
    assert (given.contacts_per_env, given.njmax) == (40, 90)


@pytest.mark.slow
def test_trainer_runs_tiny_on_warp(tmp_path):
    """Two PPO updates of tiny through the normal trainer, the whole update jitted on Warp."""
    from test_rl_train import TINY_TWO_UPDATES

    from musclerl.rl.config import load_config
    from musclerl.rl.runner import train

    overrides = [*TINY_TWO_UPDATES, "backend=mjx", "env.mjx.impl=warp"]
    summary = train(load_config(None, overrides), tmp_path / "run", quiet=True)
    assert summary["updates"] == 2
    assert (tmp_path / "run" / "policy").is_dir()


@pytest.mark.slow
def test_warp_agrees_with_mujoco_c_on_myolegs():
    dataset = sine_dataset("myolegs", num_clips=1, duration_s=1.0)
    cfg = EnvConfig.from_dict({"substeps": 1, "integrator": "euler"})
    worst = _compare("myolegs", dataset, cfg, np.array([0, 0]), np.array([0.1, 0.4]), 2, "warp")[0]
    assert worst["start_obs"] < 1e-3
    assert worst["obs"] < 5e-3
    assert worst["reward"] < 1e-3
    assert worst["qpos"] < 1e-4
