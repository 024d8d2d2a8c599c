"""OpenSim coordinates of an MJCF model's pose: the pelvis in OpenSim's Y-up ground, joints by name.

The frames are :mod:`musclerl.evaluate.coordinates`' (which reads OpenSim tables onto a model;
this module is the model -> OpenSim direction, shared by the retargeting ``--mot`` writer and the
evaluation): ``v_mujoco = OPENSIM_TO_MUJOCO @ v_opensim``, and OpenSim's ``ground_pelvis`` is
``R_os = Rz(tilt) Rx(list) Ry(rotation)`` with the pelvis origin at ``(tx, ty, tz)`` in ground.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.geometry.free_root import free_root
from musclerl.models.couplings import independent_coordinates
from musclerl.motion.keypoints import Y_UP_TO_Z_UP

OPENSIM_TO_MUJOCO = Y_UP_TO_Z_UP
PELVIS_ROTATIONS = ("pelvis_tilt", "pelvis_list", "pelvis_rotation")
PELVIS_TRANSLATIONS = ("pelvis_tx", "pelvis_ty", "pelvis_tz")
PELVIS_COLUMNS = PELVIS_ROTATIONS + PELVIS_TRANSLATIONS
HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)


def _axis_rotation(axis: int, angle_rad: np.ndarray) -> np.ndarray:
    """Rotation matrices (T, 3, 3) about a coordinate axis (0 x, 1 y, 2 z)."""
    c, s = np.cos(angle_rad), np.sin(angle_rad)
    R = np.zeros(np.shape(angle_rad) + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R[..., axis, axis] = 1.0
    R[..., i, i] = c
    R[..., j, j] = c
    R[..., i, j] = -s
    R[..., j, i] = s
    return R


def opensim_pelvis_rotation(
    tilt_rad: np.ndarray, list_rad: np.ndarray, rotation_rad: np.ndarray
) -> np.ndarray:
    """OpenSim ground_pelvis orientation (T, 3, 3): Rz(tilt) @ Rx(list) @ Ry(rotation)."""
    return _axis_rotation(2, tilt_rad) @ _axis_rotation(0, list_rad) @ _axis_rotation(1, rotation_rad)


def _root_joint(model: mujoco.MjModel) -> int:
    root = free_root(model)
    if root is None:
        raise ValueError("model has no free joint")
    return root


def pelvis_in_root(model: mujoco.MjModel, pelvis_body: str = "pelvis") -> tuple[np.ndarray, np.ndarray]:
    """Pose of ``pelvis_body`` in the free-root body's frame: (R (3, 3), p (3,)) at qpos0."""
    data = mujoco.MjData(model)
    root_body = int(model.jnt_bodyid[_root_joint(model)])
    data.qpos[:] = model.qpos0
    mujoco.mj_kinematics(model, data)
    Rr = data.xmat[root_body].reshape(3, 3)
    b = model.body(pelvis_body).id
    R = Rr.T @ data.xmat[b].reshape(3, 3)
    p = Rr.T @ (data.xpos[b] - data.xpos[root_body])
    return R, p


def qpos_to_coordinates(
    model: mujoco.MjModel, qpos: np.ndarray, names: list[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """Model coordinates from qpos (T, nq): (names, values (T, K)); hinge in degrees, slide in m.

    Default ``names``: the independent scalar coordinates (:func:`independent_coordinates`).
    """
    names = independent_coordinates(model) if names is None else list(names)
    qpos = np.atleast_2d(qpos)
    out = np.zeros((qpos.shape[0], len(names)))
    for k, name in enumerate(names):
        j = model.joint(name).id
        v = qpos[:, model.jnt_qposadr[j]]
        out[:, k] = np.degrees(v) if int(model.jnt_type[j]) == HINGE else v
    return names, out


def qpos_to_pelvis(model: mujoco.MjModel, qpos: np.ndarray, pelvis_body: str = "pelvis") -> np.ndarray:
    """Inverse of the pelvis mapping: (T, 6) = tilt, list, rotation (deg, unwrapped over the frames),
    tx, ty, tz (m, OpenSim ground)."""
    qpos = np.atleast_2d(qpos)
    adr = int(model.jnt_qposadr[_root_joint(model)])
    R_pr, p_pr = pelvis_in_root(model, pelvis_body)
    out = np.zeros((qpos.shape[0], 6))
    R_root = np.zeros(9)
    for t in range(qpos.shape[0]):
        mujoco.mju_quat2Mat(R_root, qpos[t, adr + 3 : adr + 7])
        Rr = R_root.reshape(3, 3)
        R = OPENSIM_TO_MUJOCO.T @ Rr @ R_pr  # Rz(a) Rx(b) Ry(c)
        b = np.arcsin(np.clip(R[2, 1], -1.0, 1.0))
        a = np.arctan2(-R[0, 1], R[1, 1])
        c = np.arctan2(-R[2, 0], R[2, 2])
        out[t, :3] = [a, b, c]
        out[t, 3:] = OPENSIM_TO_MUJOCO.T @ (qpos[t, adr : adr + 3] + Rr @ p_pr)
    # continuous in time, as OpenSim's IK writes them: a walk heading along -x crosses the
    # rotation's +-180 deg, and a 360 deg jump there is a spin to anything that differentiates it
    out[:, :3] = np.degrees(np.unwrap(out[:, :3], axis=0))
    return out


def unwrap_pelvis_rotations(columns: list[str], values: np.ndarray, in_degrees: bool) -> np.ndarray:
    """``values`` (T, K) of a coordinates table with its pelvis rotations made continuous in time
    (a table written with angles in (-180, 180] jumps by 360 deg where a walk heads along -x; a
    joint cannot turn that far in one frame, so the jump is the writer's, not the motion's)."""
    out = np.array(values, dtype=float)
    period = 360.0 if in_degrees else 2.0 * np.pi
    for k, name in enumerate(columns):
        if name in PELVIS_ROTATIONS:
            out[:, k] = np.unwrap(out[:, k], period=period)
    return out


def opensim_coordinates(
    model: mujoco.MjModel, qpos: np.ndarray, pelvis_body: str = "pelvis"
) -> tuple[list[str], np.ndarray]:
    """The pose ``qpos`` (T, nq) as OpenSim coordinates: (names, values (T, K)).

    ``pelvis_tilt/list/rotation`` (deg) and ``pelvis_tx/ty/tz`` (m, OpenSim's Y-up ground), the
    inverse of :func:`musclerl.evaluate.coordinates.coordinates_to_qpos`, then the independent
    joints by name (degrees, slides in metres; myolegs' names are Rajagopal's). Joints driven by
    couplings are left out: OpenSim computes them from their driver.
    """
    pelvis = qpos_to_pelvis(model, qpos, pelvis_body)
    names, values = qpos_to_coordinates(model, qpos)
    return [*PELVIS_COLUMNS, *names], np.concatenate([pelvis, values], axis=1)
