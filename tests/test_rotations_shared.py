"""The shared rotation pieces: Kabsch against a known motion, and the one quaternion -> matrix
formula (numpy/jax ``xp``) against MuJoCo's ``mju_quat2Mat``, and the one matrix -> quaternion
conversion back."""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from musclerl.geometry.arrays import quat_to_mat
from musclerl.geometry.jax_rotations import kabsch
from musclerl.geometry.jax_rotations import quat_to_mat as jax_quat_to_mat
from musclerl.geometry.rotations import matrix_to_quat_wxyz, quat_wxyz_to_matrix


def test_kabsch_recovers_a_known_rigid_motion():
    rng = np.random.default_rng(0)
    rot = Rotation.from_rotvec([0.3, -1.1, 2.0]).as_matrix()
    src = rng.normal(size=(9, 3))
    shift = np.array([0.5, -2.0, 1.0])
    dst = src @ rot.T + shift
    found, src_c, dst_c = kabsch(src, dst)
    np.testing.assert_allclose(found, rot, atol=1e-12)
    np.testing.assert_allclose(src @ found.T - src_c @ found.T + dst_c, dst, atol=1e-12)
    # a zero weight removes an outlier exactly; a mirrored cloud still gives a proper rotation
    dst[0] += 10.0
    weights = np.ones(9)
    weights[0] = 0.0
    np.testing.assert_allclose(kabsch(src, dst, weights)[0], rot, atol=1e-12)
    assert np.linalg.det(kabsch(src, src * [1, 1, -1])[0]) > 0


def test_quat_to_mat_matches_mujoco():
    rng = np.random.default_rng(1)
    quat = rng.normal(size=(2, 5, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    expected = np.zeros((2, 5, 9))
    for i in np.ndindex(2, 5):
        mujoco.mju_quat2Mat(expected[i], quat[i])
    expected = expected.reshape(2, 5, 3, 3)
    np.testing.assert_allclose(quat_to_mat(quat, np), expected, atol=1e-12)
    np.testing.assert_allclose(quat_wxyz_to_matrix(quat), expected, atol=1e-12)
    np.testing.assert_allclose(jax_quat_to_mat(jnp.asarray(quat, jnp.float32)), expected, atol=1e-5)
    np.testing.assert_allclose(quat_to_mat(3.0 * quat, np), expected, atol=1e-12)  # normalised


def test_matrix_to_quat_inverts_quat_to_matrix_up_to_sign():
    rng = np.random.default_rng(2)
    quat = rng.normal(size=(3, 7, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    found = matrix_to_quat_wxyz(quat_wxyz_to_matrix(quat))
    assert found.shape == (3, 7, 4)
    # q and -q are one rotation: the result is the input up to that sign
    sign = np.sign(np.sum(found * quat, axis=-1, keepdims=True))
    np.testing.assert_allclose(found, quat * sign, atol=1e-12)
    np.testing.assert_allclose(matrix_to_quat_wxyz(np.eye(3)), [1.0, 0.0, 0.0, 0.0])
