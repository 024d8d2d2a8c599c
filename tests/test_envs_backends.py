"""The cpu (MuJoCo C) and mjx backends give the same observations, rewards and next states when
stepped from the same states.

Compared one control step at a time from shared states (a cpu rollout supplies them), not over
long rollouts: float32 MJX and float64 C drift apart, faster with contacts. Both use the Euler
integrator (MJX's implicitfast leaves out the muscle velocity derivative that C includes).
Tolerances: next qpos 1e-4, obs and reward 1e-3 (absolute; obs hold velocities of O(1-10)).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from backend_samples import mjx_step_from  # noqa: E402

from musclerl.envs import EnvConfig, TrackingEnv  # noqa: E402
from musclerl.envs.motions import sine_dataset  # noqa: E402
from musclerl.errors import InputError  # noqa: E402


def _compare(
    model: str, dataset, cfg: EnvConfig, clip: np.ndarray, time_s: np.ndarray, steps: int, impl: str = "jax"
) -> dict:
    n = len(clip)
    cpu = TrackingEnv(model, dataset, cfg, backend="cpu", num_envs=n)
    mjx = TrackingEnv(model, dataset, with_impl(cfg, impl), backend="mjx", num_envs=n)

    from_shared = mjx_step_from(mjx)
    rng = np.random.default_rng(0)
    state = cpu.reset(0, clip=clip, time_s=time_s)
    worst = {"obs": 0.0, "reward": 0.0, "qpos": 0.0, "start_obs": 0.0}
    for _ in range(steps):
        kin = cpu.kinematics(state)
        action = rng.uniform(0.0, 0.6, (n, cpu.action_size))
        last = state.info["last_ctrl"].astype(np.float32)
        shared = (state.info["clip"], state.info["time_s"], kin.qpos, kin.qvel, kin.act, last)
        start, stepped = from_shared(*shared, action.astype(np.float32))
        # muscle_force of a stepped state is the last substep's; with_physics recomputes it at the state
        diff = np.abs(np.asarray(start.obs) - state.obs)[:, _without(cpu, "muscle_force")]
        worst["start_obs"] = max(worst["start_obs"], float(diff.max()))
        state = cpu.step(state, action)
        assert not state.done.any()  # resets would sample different starts per backend
        worst["obs"] = max(worst["obs"], float(np.abs(np.asarray(stepped.obs) - state.obs).max()))
        worst["reward"] = max(worst["reward"], float(np.abs(np.asarray(stepped.reward) - state.reward).max()))
        next_qpos = np.asarray(mjx.kinematics(stepped).qpos)
        worst["qpos"] = max(worst["qpos"], float(np.abs(next_qpos - cpu.kinematics(state).qpos).max()))
        for key in state.metrics:
            np.testing.assert_allclose(
                np.asarray(stepped.metrics[key]), state.metrics[key], atol=2e-3, err_msg=key
            )
    structure = jax.tree.structure(start), jax.tree.structure(stepped)
    assert structure[0] == structure[1]  # step keeps the pytree (lax.scan needs it)
    for a, b in zip(jax.tree.leaves(start), jax.tree.leaves(stepped), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
    kin = cpu.kinematics(state)
    shared = (
        state.info["clip"],
        state.info["time_s"],
        kin.qpos,
        kin.qvel,
        kin.act,
        state.info["last_ctrl"],
    )
    return worst, from_shared, shared, (mjx, cpu)


def with_impl(cfg: EnvConfig, impl: str) -> EnvConfig:
    """``cfg`` with MJX's implementation set to ``impl``."""
    import dataclasses

    return dataclasses.replace(cfg, mjx=dataclasses.replace(cfg.mjx, impl=impl))


def _without(env: TrackingEnv, piece: str) -> np.ndarray:
    """Column mask (obs_dim,) of every observation piece but ``piece``."""
    keep = [np.full(size, name != piece) for name, size in env.obs_pieces.items()]
    return np.concatenate(keep)


@pytest.mark.parametrize("impl", ["jax", "warp"])
def test_cpu_and_mjx_agree_step_by_step_on_tiny_and_mjx_resets_nan(impl):
    """MuJoCo C against MJX with each implementation (Warp on Warp's CPU device here)."""
    if impl == "warp":
        pytest.importorskip("warp")
    dataset = sine_dataset("tiny", num_clips=2, duration_s=2.0)
    cfg = EnvConfig.from_dict({"integrator": "euler", "substeps": 2})
    worst, from_shared, shared, envs = _compare(
        "tiny", dataset, cfg, np.array([0, 1, 1]), np.array([0.2, 0.5, 1.1]), 3, impl
    )
    assert worst["start_obs"] < 1e-3
    assert worst["obs"] < 1e-3
    assert worst["reward"] < 1e-3
    assert worst["qpos"] < 1e-4

    # a NaN state on mjx (same compiled step): only that env is reset, counted, and no NaN leaks
    clip, time_s, qpos, qvel, act, last = shared
    qvel = qvel.copy()
    qvel[1, 6] = np.nan
    _, state = from_shared(
        clip, time_s, qpos, qvel, act, last.astype(np.float32), np.full((3, 6), 0.1, np.float32)
    )
    np.testing.assert_array_equal(np.asarray(state.metrics["nan_reset"]), [0, 1, 0])
    assert bool(state.terminated[1]) and float(state.reward[1]) == 0.0
    assert np.all(np.isfinite(np.asarray(state.obs))) and np.all(
        np.isfinite(np.asarray(state.info["terminal_obs"]))
    )
    assert int(state.info["steps"][1]) == 0 and not bool(state.done[0]) and not bool(state.done[2])

    # physics_data: env i as a MjData on both backends (mjx reads it from the state it is given)
    mjx_env, cpu_env = envs
    qvel[1, 6] = 0.0
    start, _ = from_shared(
        clip, time_s, qpos, qvel, act, last.astype(np.float32), np.zeros((3, 6), np.float32)
    )
    cpu_env.with_physics(cpu_env.reset(0, clip=clip, time_s=time_s), qpos, qvel, act)
    np.testing.assert_allclose(mjx_env.physics_data(2, start).qpos, qpos[2], atol=1e-6)
    np.testing.assert_allclose(mjx_env.physics_data(2, start).xpos, cpu_env.physics_data(2).xpos, atol=1e-5)
    with pytest.raises(InputError, match="pass the state"):
        mjx_env.physics_data(2)


@pytest.mark.parametrize(
    "space, feedforward",
    [("reference_pd", False), ("joint_reference_pd", False), ("joint_reference_pd", True)],
)
def test_cpu_and_mjx_agree_with_pd_actions_on_tiny(space, feedforward):
    """The PD action spaces invert the PD law before every physics step on both backends alike
    (with the reference's activations fed forward too)."""
    dataset = sine_dataset("tiny", num_clips=1, duration_s=2.0)
    cfg = EnvConfig.from_dict(
        {"integrator": "euler", "substeps": 3, "action": {"space": space, "feedforward": feedforward}}
    )
    worst = _compare("tiny", dataset, cfg, np.array([0, 0]), np.array([0.2, 0.7]), 3)[0]
    assert worst["start_obs"] < 1e-3
    assert worst["obs"] < 1e-3
    assert worst["reward"] < 1e-3
    assert worst["qpos"] < 1e-4


@pytest.mark.slow
def test_cpu_and_mjx_agree_on_myolegs():
    dataset = sine_dataset("myolegs", num_clips=1, duration_s=1.0)
    cfg = EnvConfig.from_dict({"substeps": 1})
    worst = _compare("myolegs", dataset, cfg, np.array([0, 0]), np.array([0.1, 0.4]), steps=2)[0]
    assert worst["start_obs"] < 1e-3
    assert worst["obs"] < 5e-3
    assert worst["reward"] < 1e-3
    assert worst["qpos"] < 1e-4


def test_both_backends_implement_the_physics_protocol():
    """Every method of ``Physics`` on both backends, taking the protocol's parameters in order
    (further ones only with defaults)."""
    import inspect

    from musclerl.envs.backends import Physics
    from musclerl.envs.backends.cpu import CpuPhysics
    from musclerl.envs.backends.mjx import MjxPhysics

    methods = [n for n, v in vars(Physics).items() if inspect.isfunction(v) and not n.startswith("_")]
    assert len(methods) == 10
    for backend in (CpuPhysics, MjxPhysics):
        assert backend.xp.__name__ in ("numpy", "jax.numpy")
        for name in methods:
            expected = len(inspect.signature(getattr(Physics, name)).parameters)
            params = list(inspect.signature(getattr(backend, name)).parameters.values())
            assert len(params) >= expected, (backend, name)
            assert all(p.default is not p.empty for p in params[expected:]), (backend, name)
