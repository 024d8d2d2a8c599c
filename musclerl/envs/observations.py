"""Observation pieces, each switchable in ``EnvConfig.obs``, concatenated in this order.

=====================  =============  ========================================================
piece                  size           content
=====================  =============  ========================================================
``root_height``        1              root z above the ground under it, m
``root_orientation``   6              root rotation in the heading frame (yaw removed), 6D
``joint_pos``          nq - 7         joint positions (all joints but the free root)
``joint_vel``          nv             root linear velocity (heading frame), root angular
                                      velocity (root frame), then joint velocities
``muscle_length``      nu             actuator (tendon) length, m
``muscle_velocity``    nu             actuator velocity, m/s
``muscle_force``       nu             actuator force / peak isometric force (about -1..0)
``muscle_activation``  na             activations in [0, 1]
``foot_contact``       F              1 where a foot body is within ``contact_height_m`` of
                                      its rest height above the ground, else 0
``site_pos``           S * 3          current tracked sites relative to the root, heading frame
``site_error``         S * 3          reference (next control step) minus current site
                                      positions, world offsets turned to the heading frame
``reference_next``     nq - 7 + 6     the reference's next joint positions, and its root linear
                                      (heading frame) and angular (root frame) velocity
``goal``               k * S * 9      for the reference k frames ahead at ``goal_stride``:
                                      target site positions relative to the current root in
                                      the heading frame (3) and target site orientation relative
                                      to the current site orientation, 6D (6)
``phase``              2              sin, cos of 2 pi * clip time / clip duration (period)
=====================  =============  ========================================================

The heading frame is the world frame turned by the root's yaw, so observations do not change
when the whole motion is turned about the vertical. ``xp`` is numpy (cpu) or jax.numpy (mjx).
"""

from __future__ import annotations

from typing import Any

from musclerl.envs.config import ObsConfig
from musclerl.envs.reference import lookup
from musclerl.envs.state import Kinematics
from musclerl.geometry import arrays as geo

PIECES = (
    "root_height",
    "root_orientation",
    "joint_pos",
    "joint_vel",
    "muscle_length",
    "muscle_velocity",
    "muscle_force",
    "muscle_activation",
    "foot_contact",
    "site_pos",
    "site_error",
    "reference_next",
    "goal",
    "phase",
)


def piece_sizes(
    cfg: ObsConfig, nq: int, nv: int, nu: int, na: int, n_sites: int, n_feet: int
) -> dict[str, int]:
    """Size of each enabled piece, in concatenation order."""
    sizes = {
        "root_height": 1,
        "root_orientation": 6,
        "joint_pos": nq - 7,
        "joint_vel": nv,
        "muscle_length": nu,
        "muscle_velocity": nu,
        "muscle_force": nu,
        "muscle_activation": na,
        "foot_contact": n_feet,
        "site_pos": n_sites * 3,
        "site_error": n_sites * 3,
        "reference_next": nq - 7 + 6,
        "goal": cfg.goal_frames * n_sites * 9,
        "phase": 2,
    }
    return {name: sizes[name] for name in PIECES if getattr(cfg, name)}


def observe(
    kin: Kinematics,
    ref: dict[str, Any],
    clip: Any,
    time_s: Any,
    cfg: ObsConfig,
    consts: dict[str, Any],
    xp: Any,
) -> Any:
    """Observation (N, obs_dim) of the physics ``kin`` at clip time ``time_s`` (N,) of ``clip`` (N,).

    ``consts``: ``peak_force_n`` (nu,), ``foot_rest_height_m`` (F,), ``terrain`` (dict or None),
    ``control_dt_s`` (the step to the next reference frame).
    """
    n = kin.qpos.shape[0]
    root_pos = kin.qpos[:, :3]
    root_rot = geo.quat_to_mat(kin.qpos[:, 3:7], xp)
    cos, sin = geo.heading_cos_sin(root_rot, xp)
    parts = []
    if cfg.root_height:
        ground = geo.ground_height(root_pos[:, :2], consts["terrain"], xp)
        parts.append((root_pos[:, 2] - ground)[:, None])
    if cfg.root_orientation:
        parts.append(geo.rot6d(_unturn(root_rot, cos, sin, xp)))
    if cfg.joint_pos:
        parts.append(kin.qpos[:, 7:])
    if cfg.joint_vel:
        parts.append(geo.to_heading_frame(kin.qvel[:, :3], cos, sin, xp))
        parts.append(kin.qvel[:, 3:])
    if cfg.muscle_length:
        parts.append(kin.muscle_length_m)
    if cfg.muscle_velocity:
        parts.append(kin.muscle_velocity_mps)
    if cfg.muscle_force:
        parts.append(kin.muscle_force_n / consts["peak_force_n"])
    if cfg.muscle_activation:
        parts.append(kin.act)
    if cfg.foot_contact:
        ground = geo.ground_height(kin.foot_pos_m[..., :2], consts["terrain"], xp)
        clearance = kin.foot_pos_m[..., 2] - ground - consts["foot_rest_height_m"]
        parts.append((clearance < cfg.contact_height_m).astype(kin.qpos.dtype))
    if cfg.site_pos:
        rel = geo.to_heading_frame(kin.site_pos_m - root_pos[:, None, :], cos, sin, xp)
        parts.append(rel.reshape(n, -1))
    if cfg.site_error or cfg.reference_next:
        nxt = lookup(ref, clip, time_s + consts["control_dt_s"], xp, ("qpos", "qvel", "site_pos_m"))
        if cfg.site_error:
            diff = geo.to_heading_frame(nxt["site_pos_m"] - kin.site_pos_m, cos, sin, xp)
            parts.append(diff.reshape(n, -1))
        if cfg.reference_next:
            parts.append(nxt["qpos"][:, 7:])
            parts.append(geo.to_heading_frame(nxt["qvel"][:, :3], cos, sin, xp))
            parts.append(nxt["qvel"][:, 3:6])
    if cfg.goal and cfg.goal_frames > 0:
        cur_inv = xp.swapaxes(kin.site_xmat, -1, -2)  # (N, S, 3, 3) world-to-site
        for j in range(1, cfg.goal_frames + 1):
            time_j = time_s + j * cfg.goal_stride / ref["rate_hz"]
            target = lookup(ref, clip, time_j, xp, ("site_pos_m", "site_xmat"))
            rel_pos = geo.to_heading_frame(target["site_pos_m"] - root_pos[:, None, :], cos, sin, xp)
            rel_rot = cur_inv @ target["site_xmat"]
            parts.append(rel_pos.reshape(n, -1))
            parts.append(geo.rot6d(rel_rot).reshape(n, -1))
    if cfg.phase:
        length = ref["clip_lengths"][clip]  # a looping clip's period is all its frames
        duration = xp.where(ref["clip_loop"][clip], length, xp.maximum(length - 1, 1)) / ref["rate_hz"]
        angle = 2 * xp.pi * time_s / duration
        parts.append(xp.stack([xp.sin(angle), xp.cos(angle)], axis=-1))
    return xp.concatenate([p.astype(kin.qpos.dtype) for p in parts], axis=-1)


def _unturn(rot: Any, cos: Any, sin: Any, xp: Any) -> Any:
    """R_yaw^T @ rot for rotations (N, 3, 3)."""
    zero, one = cos * 0.0, cos * 0.0 + 1.0
    yaw_t = xp.stack(
        [
            xp.stack([cos, sin, zero], axis=-1),
            xp.stack([-sin, cos, zero], axis=-1),
            xp.stack([zero, zero, one], axis=-1),
        ],
        axis=-2,
    )
    return yaw_t @ rot
