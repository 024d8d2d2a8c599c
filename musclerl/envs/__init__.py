"""Tracking environments: one functional interface, MuJoCo C (cpu) and MJX backends, gymnasium.

API::

    from musclerl.envs import TrackingEnv, EnvConfig
    cfg = EnvConfig.from_dict(yaml_dict)            # defaults for everything; unknown keys raise
    env = TrackingEnv(model="tiny" | "myolegs" | "path.xml", motion=trajectory, config=cfg,
                      backend="cpu" | "mjx", num_envs=N, threads=T)
    env.observation_size, env.action_size           # ints; env.actions: the action space (actions.py)
    state = env.reset(rng)                          # State, batched (N, ...); rng: jax key (or int on cpu)
    state = env.reset(rng, clip=c, time_s=t)        # start at given clips/times (evaluation)
    state = env.step(state, action)                 # action (N, A), clipped to env.actions' bounds
    state.obs (N, obs_dim), state.reward (N,), state.done = terminated | truncated (N,)
    state.metrics["reward/<term>"], ["site_err_m"], ["site_err_local_m"], ["term/<rule>"], ...
    state.info["terminal_obs"] (N, obs_dim): obs before the auto-reset (bootstrap truncations)
    state.info["clip"], ["frame"], ["time_s"], ["steps"], ["last_action"], ["last_ctrl"], ["clip_fail_rate"]
    env.physics_data(i, state) -> mujoco.MjData     # env i's MjData (copy; cpu: state optional)
    env.reference                                    # per-frame reference arrays (Reference)

``cpu``: numpy leaves, MuJoCo C stepping on ``threads`` threads (``mujoco.batch.Batch``).
``mjx``: jax leaves; ``jax.jit(env.step)`` / ``jax.lax.scan`` over it.
Pieces: config.py (EnvConfig), world.py (model + sites + terrain), reference.py (per-frame
reference arrays), state.py (State, Kinematics pytrees), actions.py (action spaces, PD inversion),
observations.py, rewards.py, termination.py, initial_state.py (RSI, clip sampling), time_scale.py
(faster and slower clip copies), start_activation.py (static-optimisation start activations),
backends/ (the Physics protocol; cpu.py, mjx.py), tracking.py (TrackingEnv), gym_env.py
(``musclerl/Tracking-v0``), video.py, motions.py (synthetic test motions), symmetry.py (the
left/right mirror of observations and actions, for PPO's mirrored batches). The numpy/jax
rotations and heights they share are :mod:`musclerl.geometry.arrays`.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium

# Heavy modules (flax, jax, mujoco batches) load on first use, so ``musclerl bench env`` and the
# CLI stay cheap to import.
_LAZY = {
    "EnvConfig": "musclerl.envs.config",
    "Reference": "musclerl.envs.reference",
    "Kinematics": "musclerl.envs.state",
    "State": "musclerl.envs.state",
    "TrackingEnv": "musclerl.envs.tracking",
}
__all__ = sorted(_LAZY)

GYM_ID = "musclerl/Tracking-v0"
if GYM_ID not in gymnasium.registry:
    gymnasium.register(
        id=GYM_ID,
        entry_point="musclerl.envs.gym_env:TrackingGymEnv",
        vector_entry_point="musclerl.envs.gym_env:TrackingVectorEnv",
    )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        try:
            module = importlib.import_module(_LAZY[name])
        except AttributeError as err:  # raised from here it would read as "no such name"
            raise ImportError(f"importing {_LAZY[name]} failed: {err!r}") from err
        return getattr(module, name)
    raise AttributeError(f"module 'musclerl.envs' has no attribute '{name}'")
