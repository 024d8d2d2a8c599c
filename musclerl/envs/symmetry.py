"""The left/right mirror of a tracking environment's observations and actions.

A walk seen in a mirror is another walk the same body can do. If the env's observation of a
state ``s`` is ``o`` and the policy acted ``a``, then the observation of the mirrored state (on the
mirrored reference, at the same clip time) is ``g_o(o)`` and the mirrored action is ``g_a(a)``.
Both are signed permutations, ``x'[..., k] = sign[k] * x[..., perm[k]]``, so PPO can add the
mirrored copy of every sample to its batch (symmetry by data augmentation, as in Mittal et al.
2024, "Symmetry considerations for learning task symmetric robot policies"; Yu et al. 2018 use a
loss instead): twice the data for a symmetric task, at the cost of a larger PPO batch only.

How each observation piece (:mod:`musclerl.envs.observations`) mirrors, with the model's mirror
map (:mod:`musclerl.motion.mirror`: joint pairs and signs, muscle pairs, the root frame's lateral
axis ``b`` and ``M_b`` the reflection that negates it):

- heading-frame vectors (site positions and errors, root velocity, goal positions): the heading
  frame's lateral axis negates (``D``) — the heading yaw ``theta`` of the mirrored root is
  ``-theta`` (heading axis forward) or ``pi - theta`` (heading axis lateral), and both give
  ``v_h' = D v_h``; sites swap with their ``_r``/``_l`` partners;
- the root orientation in the heading frame: ``R_h' = D R_h M_b`` (entry (i, j) times
  ``d_i m_j``); the root's angular velocity (root frame, a pseudovector): ``-M_b w``;
- joint positions and velocities: the mirror map's permutation and signs;
- muscle lengths, speeds, forces and activations, foot contacts: partners swap;
- goal orientations ``R_cur^T R_target`` of site ``s``: ``X^T (R_cur^T R_target)_p X`` with ``X``
  the partner ``p``'s frame reflected onto ``s``'s (``R_s = L R_p X`` at ``qpos0``, ``L`` the world
  reflection through the model's sagittal plane there); ``X`` must be diagonal (a reflection of one
  local axis), which holds for models whose left frames mirror the right ones (OpenSim's);
- the phase (clip time) stays: the mirrored sample is on the mirrored clip at the same time.

Actions: by the space's ``axis`` (:mod:`musclerl.envs.actions`): over joint coordinates
(``joint_reference_pd``) they mirror as joint positions; over muscles (``excitation``,
``muscle_length_pd``, ``reference_pd``) partner muscles swap.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry import arrays as geo
from musclerl.motion.mirror import MirrorMap, mirror_map, partner

FRAME_TOLERANCE = 0.05  # off-diagonal entries of a frame reflection (sin 3 deg): as mirror_map's axes


@dataclasses.dataclass(frozen=True)
class SignedPermutation:
    """``x'[..., k] = sign[k] * x[..., perm[k]]`` over the last axis of size D."""

    perm: np.ndarray  # (D,) int
    sign: np.ndarray  # (D,) +-1.0

    def apply(self, x: Any) -> Any:
        """The mirror of ``x`` (..., D) (numpy or jax)."""
        return x[..., self.perm] * self.sign.astype(x.dtype)

    @classmethod
    def concat(cls, parts: list[SignedPermutation]) -> SignedPermutation:
        """Block-diagonal: each part acts on its own consecutive slice."""
        perms, offset = [], 0
        for p in parts:
            perms.append(p.perm + offset)
            offset += len(p.perm)
        return cls(np.concatenate(perms), np.concatenate([p.sign for p in parts]))

    @classmethod
    def identity(cls, size: int) -> SignedPermutation:
        return cls(np.arange(size), np.ones(size))

    @classmethod
    def of_names(cls, names: list[str] | tuple[str, ...], what: str, source: str) -> SignedPermutation:
        """Swap ``*_r`` with ``*_l`` by name, signs +1."""
        index = {n: k for k, n in enumerate(names)}
        missing = [n for n in names if partner(n) not in index]
        if missing:
            raise InputError(source, f"{what} '{missing[0]}' has no mirror partner '{partner(missing[0])}'")
        return cls(np.array([index[partner(n)] for n in names]), np.ones(len(names)))


@dataclasses.dataclass(frozen=True)
class EnvMirror:
    """The mirror of one env's observations (D,) and actions (A,)."""

    observation: SignedPermutation
    action: SignedPermutation


def _diagonal_reflection(mat: np.ndarray, what: str, source: str) -> np.ndarray:
    """The diagonal (3,) of ``mat`` (3, 3) when it is diag(+-1) within tolerance."""
    diag = np.sign(np.diag(mat))
    if np.abs(mat - np.diag(diag)).max() > FRAME_TOLERANCE:
        raise InputError(source, f"{what} is not mirrored by a reflection of one of its axes")
    return diag


def _vectors(count: int, diag: np.ndarray, perm: np.ndarray | None = None) -> SignedPermutation:
    """``count`` 3-vectors (flattened (count*3,)), vector k from vector perm[k], times ``diag``."""
    perm = np.arange(count) if perm is None else perm
    idx = (3 * perm[:, None] + np.arange(3)).ravel()
    return SignedPermutation(idx, np.tile(diag, count))


def _rot6d(left: np.ndarray, right: np.ndarray) -> SignedPermutation:
    """rot6d (the first two columns, rows first) of ``diag(left) R diag(right)``."""
    sign = np.array([left[i] * right[j] for i in range(3) for j in range(2)])
    return SignedPermutation(np.arange(6), sign)


def _joint_pos(mm: MirrorMap, source: str) -> SignedPermutation:
    """qpos[7:] (joints after the free root at address 0)."""
    if mm.root_qpos != 0 or mm.root_dof != 0:
        raise InputError(source, "mirroring observations needs the free root joint first")
    return SignedPermutation(mm.qpos_perm[7:] - 7, mm.qpos_sign[7:])


def _root_frames(model: mujoco.MjModel, root_body: int, mm: MirrorMap, source: str) -> tuple[np.ndarray, ...]:
    """(D, m_b, L, data at qpos0): the heading-frame reflection (3,), the root-frame one (3,), the
    world reflection through the sagittal plane at qpos0 (3, 3), and the kinematics there."""
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    mujoco.mj_kinematics(model, data)
    rot0 = data.xmat[root_body].reshape(3, 3)
    m_b = np.diag(mm.reflection(mm.body_lateral_axis))
    cos, sin = geo.heading_cos_sin(rot0[None], np)
    lat_h = geo.to_heading_frame(rot0[None, :, mm.body_lateral_axis], cos, sin, np)[0, :2]
    axis = int(np.argmax(np.abs(lat_h)))
    if abs(abs(lat_h[axis]) - 1.0) > FRAME_TOLERANCE:
        raise InputError(source, "the root's lateral axis is not along a heading-frame axis at qpos0")
    d = np.ones(3)
    d[axis] = -1.0
    reflect_world = rot0 @ np.diag(m_b) @ rot0.T
    return d, m_b, reflect_world, data


def env_mirror(env: Any, source: str = "model") -> EnvMirror:
    """The observation and action mirror of a :class:`~musclerl.envs.TrackingEnv` (InputError from
    ``source`` when its model, sites or feet are not left/right symmetric)."""
    model, world, cfg = env.model, env.world, env.config.obs
    mm = mirror_map(model, source)
    d, m_b, reflect_world, data = _root_frames(model, world.root_body, mm, source)
    n_sites = len(world.site_names)
    sites = SignedPermutation.of_names(world.site_names, "tracked site", source).perm
    feet = SignedPermutation.of_names([model.body(b).name for b in world.foot_body_ids], "foot body", source)
    muscles = SignedPermutation(mm.actuator_perm, np.ones(model.nu))
    if model.na != model.nu or np.any(model.actuator_actadr != np.arange(model.nu)):
        raise InputError(source, "mirroring activations needs one activation per actuator, in order")
    joint_pos = _joint_pos(mm, source)
    joint_vel = SignedPermutation(mm.dof_perm[6:] - 6, mm.dof_sign[6:])
    root_vel = SignedPermutation.concat([_vectors(1, d), _vectors(1, -m_b)])
    site_vectors = _vectors(n_sites, d, sites)
    pieces: dict[str, SignedPermutation] = {
        "root_height": SignedPermutation.identity(1),
        "root_orientation": _rot6d(d, m_b),
        "joint_pos": joint_pos,
        "joint_vel": SignedPermutation.concat([root_vel, joint_vel]),
        "muscle_length": muscles,
        "muscle_velocity": muscles,
        "muscle_force": muscles,
        "muscle_activation": muscles,
        "foot_contact": feet,
        "site_pos": site_vectors,
        "site_error": site_vectors,
        "reference_next": SignedPermutation.concat([joint_pos, root_vel]),
        "phase": SignedPermutation.identity(2),
    }
    if cfg.goal and cfg.goal_frames > 0:
        site_rot = data.site_xmat[world.site_ids].reshape(-1, 3, 3)  # world rotations at qpos0
        signs = []
        for k, p in enumerate(sites):
            x = site_rot[p].T @ reflect_world @ site_rot[k]
            diag = _diagonal_reflection(x, f"tracked site '{world.site_names[k]}'", source)
            signs.append(_rot6d(diag, diag).sign)
        rotations = SignedPermutation((6 * sites[:, None] + np.arange(6)).ravel(), np.concatenate(signs))
        one_frame = SignedPermutation.concat([site_vectors, rotations])
        pieces["goal"] = SignedPermutation.concat([one_frame] * cfg.goal_frames)
    observation = SignedPermutation.concat([pieces[name] for name in env.obs_pieces])
    if len(observation.perm) != env.observation_size:
        raise InputError(source, "the observation mirror does not cover the observation")
    return EnvMirror(observation=observation, action=_action_mirror(env, mm, muscles, source))


def _action_mirror(env: Any, mm: MirrorMap, muscles: SignedPermutation, source: str) -> SignedPermutation:
    """An action over joint coordinates (``env.actions.axis``) mirrors as joint positions, one over
    muscles swaps partners (``muscles``)."""
    if env.actions.axis == "muscles":
        return muscles
    coords = env.reference.coordinate_names
    perm = SignedPermutation.of_names(coords, "coordinate", source).perm
    sign = np.array([mm.qpos_sign[env.model.jnt_qposadr[env.model.joint(c).id]] for c in coords])
    return SignedPermutation(perm, sign)
