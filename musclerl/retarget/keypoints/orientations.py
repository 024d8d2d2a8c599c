"""Segment orientations of a keypoint source as IK targets: which bodies, and their fixed offsets.

A source skeleton that stores joint rotations (SMPL/AMASS, DeepMimic) gives per frame the world
orientation of its pelvis, thighs, shanks, feet and trunk
(:attr:`~musclerl.motion.keypoints.KeypointMotion.rotations`). Positions alone leave a segment's
twist about its own axis free, and where a joint limit holds a segment (a crouch at the ankle's
dorsiflexion limit) the IK is free to spread the miss over the other joints by twisting them;
the segments' orientations pin those down.

The source's joint frames are not the model's body frames (SMPL's thigh frame is its T-pose's
pelvis frame, the model's femur frame is OpenSim's), but both are fixed in the same segment, so
they differ by one constant rotation per segment: ``R_model(t) = R_source(t) C``.
:func:`calibrate_offsets` estimates ``C`` once per clip, from a positions-only solve, as the
rotation nearest to the mean of ``R_source(t)^T R_model(t)`` over the frames that solve fits
well (no joint on a limit, keypoint error at most the clip's median), so the targets carry the
source's motion, not its skeleton's conventions.

Rotations are (..., 3, 3) local -> world, world frame Z up; quaternions (w, x, y, z).
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.geometry.rotations import matrix_to_quat_wxyz
from musclerl.motion.keypoints import KeypointMotion
from musclerl.retarget import correspondence as corr


@dataclasses.dataclass(frozen=True)
class Segments:
    """Segments oriented by the source: ``names`` (B,), model ``bodies`` (B,) and the source
    keypoint index (B,) whose rotation each follows."""

    names: tuple[str, ...]
    bodies: tuple[str, ...]
    keypoints: np.ndarray


def segments(model: mujoco.MjModel, model_name: str, motion: KeypointMotion, kind: str) -> Segments:
    """The segments of ``motion`` (source ``kind``) that ``model`` has as bodies.

    Without source rotations there are none. A segment whose body moves rigidly with an earlier
    one (the same joints on its path from the world: myolegs' torso has no joint of its own, so
    the trunk would be a second target on the pelvis) is left out."""
    if motion.rotations is None:
        return Segments((), (), np.zeros(0, np.int64))
    names, bodies, index, paths = [], [], [], set()
    source = corr.SOURCE_SEGMENTS[kind]
    for seg, body in corr.model_profile(model_name).segments.items():
        b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if b < 0 or source.get(seg) not in motion.names:
            continue
        path = _joints_to_world(model, b)
        if path in paths:
            continue
        paths.add(path)
        names.append(seg)
        bodies.append(body)
        index.append(motion.names.index(source[seg]))
    return Segments(tuple(names), tuple(bodies), np.array(index, dtype=np.int64))


def _joints_to_world(model: mujoco.MjModel, body: int) -> tuple[int, ...]:
    joints = []
    while body > 0:
        first = int(model.body_jntadr[body])
        joints.extend(range(first, first + int(model.body_jntnum[body])))
        body = int(model.body_parentid[body])
    return tuple(sorted(joints))


def body_rotations(model: mujoco.MjModel, qpos: np.ndarray, bodies: tuple[str, ...]) -> np.ndarray:
    """World rotations (T, B, 3, 3) of ``bodies`` for ``qpos`` (T, nq) (MuJoCo C)."""
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies]
    data = mujoco.MjData(model)
    out = np.empty((len(qpos), len(ids), 3, 3))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[t] = data.xmat[ids].reshape(-1, 3, 3)
    return out


def nearest_rotation(matrix: np.ndarray) -> np.ndarray:
    """The rotation (..., 3, 3) nearest (Frobenius) to ``matrix`` (..., 3, 3)."""
    u, _, vt = np.linalg.svd(matrix)
    d = np.sign(np.linalg.det(u @ vt))
    u[..., :, 2] *= d[..., None]
    return u @ vt


def calibrate_offsets(source_rot: np.ndarray, model_rot: np.ndarray, use: np.ndarray) -> np.ndarray:
    """Fixed offsets ``C`` (B, 3, 3) with ``model_rot ~ source_rot @ C``: the rotation nearest
    the mean of ``source_rot^T model_rot`` (T, B, 3, 3 each) over frames ``use`` (T,) bool (all
    frames when none is marked). Frames with a NaN source rotation are skipped per segment."""
    rel = np.swapaxes(source_rot, -1, -2) @ model_rot  # (T, B, 3, 3)
    ok = np.all(np.isfinite(rel), axis=(-2, -1)) & (use if use.any() else np.ones_like(use))[:, None]
    total = np.where(ok[..., None, None], rel, 0.0).sum(axis=0)
    total[~ok.any(axis=0)] = np.eye(3)
    return nearest_rotation(total)


def orientation_targets(source_rot: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Targets (T, B, 4), quaternions (w, x, y, z) of ``source_rot @ offsets`` (NaN stays NaN)."""
    rot = source_rot @ offsets
    ok = np.all(np.isfinite(rot), axis=(-2, -1))
    out = np.full(rot.shape[:-2] + (4,), np.nan)
    out[ok] = matrix_to_quat_wxyz(rot[ok])
    return out
