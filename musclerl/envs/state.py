"""The environment's pytrees: :class:`State` (what ``reset``/``step`` return) and :class:`Kinematics`.

Both are ``flax.struct.dataclass`` so the MJX backend can jit, vmap and scan over them; on the
CPU backend their leaves are numpy arrays. N is the number of environments.
"""

from __future__ import annotations

from typing import Any

from flax import struct


@struct.dataclass
class State:
    """One batched environment state.

    physics
        backend-specific (:mod:`musclerl.envs.backends`): an ``mjx.Data`` batch (mjx) or the env
        indices (N,) into the CPU backend's MuJoCo batch (cpu; the MjData live in the backend, see
        ``env.physics_data``).
    obs (N, obs_dim), reward (N,), done (N,) = terminated | truncated, terminated (N,) failure,
    truncated (N,) time limit or end of a non-looping clip (never set together with terminated).
    metrics
        dict of (N,) float arrays: ``reward/<term>`` (weighted contribution of each term),
        ``reward/total``, ``site_err_m``, ``root_height_m``, ``nan_reset`` (1 where the physics went
        NaN/exploded and that env was reset), ``terminated``, ``truncated``.
    info
        ``terminal_obs`` (N, obs_dim): observation of the state reached by the step, before the
        auto-reset (equal to ``obs`` where not done; use it to bootstrap truncated episodes);
        ``clip`` (N,) int, ``time_s`` (N,) clip time, ``frame`` (N,) global reference frame,
        ``steps`` (N,) control steps since the episode began, ``last_action`` (N, A) the policy's
        last action, ``last_ctrl`` (N, nu) the excitations of the last physics step,
        ``clip_fail_rate`` (C,) running per-clip failure rate (for adaptive sampling).
    rng
        mjx: a jax PRNG key; cpu: a numpy uint64 seed (shape ()).
    """

    physics: Any
    obs: Any
    reward: Any
    done: Any
    terminated: Any
    truncated: Any
    metrics: dict[str, Any]
    info: dict[str, Any]
    rng: Any


@struct.dataclass
class Kinematics:
    """What the observation, reward and termination read from the physics, batched (N, ...).

    All quantities are at the state after the step (positions and velocities current), except
    ``muscle_force_n``, which is ``actuator_force`` of the last physics substep (as after
    ``mj_step``); after a reset it is computed at the reset state.
    """

    qpos: Any  # (N, nq)
    qvel: Any  # (N, nv)
    act: Any  # (N, na) muscle activations in [0, 1]
    site_pos_m: Any  # (N, S, 3) world
    site_xmat: Any  # (N, S, 3, 3) site-to-world
    site_vel_mps: Any  # (N, S, 3) world linear velocity of site origins
    foot_pos_m: Any  # (N, F, 3) world origin of foot bodies
    muscle_length_m: Any  # (N, nu) actuator_length
    muscle_velocity_mps: Any  # (N, nu) actuator_velocity
    muscle_force_n: Any  # (N, nu) actuator_force (negative: pulling)
    ctrl: Any  # (N, nu) excitations applied in the last physics step
    geom_pos_m: Any  # (N, G, 3) world centres of the non-foot collision geoms (fall detection)
    geom_xmat: Any  # (N, G, 3, 3) their geom-to-world rotations
    com_m: Any  # (N, 3) whole-body centre of mass, world
    # (N, 3) the centre of mass's acceleration minus the reference's, m/s^2: the second difference
    # of their offset over the last three control steps (TrackingEnv.step sets it; None elsewhere).
    # Times the body mass it is the error of the net ground reaction force
    com_acc_err_mps2: Any = None
