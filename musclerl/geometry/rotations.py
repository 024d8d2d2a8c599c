"""Rotations for numpy code: quaternions in MuJoCo's (w, x, y, z) order, rotation matrices,
axis-angle vectors; batched over leading axes. scipy's :class:`~scipy.spatial.transform.Rotation`
does the conversions, MuJoCo's ``mju_mat2Quat`` the matrix-to-quaternion one (the quaternions
written into qpos are those MuJoCo itself would produce). Differentiable jax versions for the IK
are :mod:`.jax_rotations`; the numpy/jax ``xp`` helpers the environments share are :mod:`.arrays`.
"""

from __future__ import annotations

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation


def axis_angle_to_matrix(rotvec: np.ndarray) -> np.ndarray:
    """Axis-angle vectors (..., 3), radians, to rotation matrices (..., 3, 3)."""
    rotvec = np.asarray(rotvec, dtype=float)
    flat = rotvec.reshape(-1, 3)
    return Rotation.from_rotvec(flat).as_matrix().reshape(*rotvec.shape[:-1], 3, 3)


def quat_wxyz_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Quaternions (..., 4) in (w, x, y, z) order to rotation matrices (..., 3, 3); normalises."""
    quat = np.asarray(quat, dtype=float)
    flat = quat.reshape(-1, 4)
    return Rotation.from_quat(flat[:, [1, 2, 3, 0]]).as_matrix().reshape(*quat.shape[:-1], 3, 3)


def matrix_to_quat_wxyz(matrix: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) to unit quaternions (..., 4) in (w, x, y, z) order.

    The one matrix-to-quaternion conversion for numpy code, MuJoCo's ``mju_mat2Quat`` so that
    quaternions written into qpos are the ones MuJoCo itself would produce.
    """
    matrix = np.asarray(matrix, dtype=float)
    flat = np.ascontiguousarray(matrix.reshape(-1, 9))
    out = np.zeros((len(flat), 4))
    for i, row in enumerate(flat):
        mujoco.mju_mat2Quat(out[i], row)
    return out.reshape(*matrix.shape[:-2], 4)


def matrix_to_axis_angle(matrix: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) to axis-angle vectors (..., 3), radians."""
    matrix = np.asarray(matrix, dtype=float)
    flat = matrix.reshape(-1, 3, 3)
    return Rotation.from_matrix(flat).as_rotvec().reshape(*matrix.shape[:-2], 3)


def intrinsic_euler_to_matrix(angles: np.ndarray, axes: str, degrees: bool = False) -> np.ndarray:
    """Rotation matrices (..., 3, 3) from Euler angles (..., len(axes)) about intrinsic
    (moving) axes in the order given: ``axes="ZXY"`` is ``Rz(a) @ Rx(b) @ Ry(c)`` (BVH's
    channel convention). ``axes`` is 1-3 of X, Y, Z."""
    angles = np.asarray(angles, dtype=float)
    flat = angles.reshape(-1, len(axes))
    matrices = Rotation.from_euler(axes.upper(), flat, degrees=degrees).as_matrix()
    return matrices.reshape(*angles.shape[:-1], 3, 3)
