"""Lean kinematic tree vs MuJoCo C (mj_kinematics, mj_jac) on random poses of registered models."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.retarget.kinematics import KinematicTree, mat_to_quat, quat_to_mat

MODELS = ["tiny", "myolegs", "myofullbody", "musclemimic-fullbody"]


def _model(name: str) -> mujoco.MjModel:
    try:
        return load_model(name)
    except InputError as err:  # optional package not installed
        pytest.skip(str(err))


def _random_pose(model: mujoco.MjModel, rng: np.random.Generator) -> np.ndarray:
    q = model.qpos0.copy()
    mujoco.mj_integratePos(model, q, rng.normal(size=model.nv) * 0.6, 1.0)
    return q


@pytest.mark.parametrize("name", MODELS)
def test_fk_and_jacobians_match_mujoco(name):
    model = _model(name)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(1)
    tree = KinematicTree.from_model(model)
    with jax.enable_x64(True):
        last = tree.nbody - 1

        @jax.jit
        def kinematics(q, point):
            return (*tree.fk(q), tree.point_jacobian(q, last, point),
                    tree.rotation_jacobian(q, last))

        for _ in range(3):
            q = _random_pose(model, rng)
            data.qpos[:] = q
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            point = rng.normal(size=3) * 0.1
            pos, rot, got_jp, got_jr = (np.asarray(a) for a in kinematics(q, point))
            ids = tree.model_body_ids
            np.testing.assert_allclose(pos, data.xpos[ids], atol=1e-6)
            np.testing.assert_allclose(rot, data.xmat[ids].reshape(-1, 3, 3), atol=1e-6)
            body = int(ids[last])
            world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
            jp = np.zeros((3, model.nv))
            jr = np.zeros((3, model.nv))
            mujoco.mj_jac(model, data, jp, jr, world, body)
            np.testing.assert_allclose(got_jp, jp, atol=1e-6)
            np.testing.assert_allclose(got_jr, jr, atol=1e-6)


def test_lean_tree_keeps_only_paths_to_kept_bodies():
    model = _model("myolegs")
    tree = KinematicTree.from_model(model, keep_bodies=["toes_r"])
    assert tree.body_names[-1] == "toes_r"
    assert "femur_l" not in tree.body_names and "torso" not in tree.body_names
    assert {"pelvis", "femur_r", "tibia_r", "talus_r", "calcn_r"} <= set(tree.body_names)
    # The lean tree's bodies sit where the full model's do.
    data = mujoco.MjData(model)
    q = _random_pose(model, np.random.default_rng(2))
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    with jax.enable_x64(True):
        pos, _ = tree.fk(jnp.asarray(q))
    np.testing.assert_allclose(np.asarray(pos), data.xpos[tree.model_body_ids], atol=1e-9)
    with pytest.raises(InputError, match="femur_l"):
        tree.body_index("femur_l")
    with pytest.raises(InputError, match="no body"):
        KinematicTree.from_model(model, keep_bodies=["nonexistent"])


def test_integrate_matches_mj_integrate_pos():
    model = _model("tiny")
    tree = KinematicTree.from_model(model)
    rng = np.random.default_rng(3)
    q = _random_pose(model, rng)
    v = rng.normal(size=model.nv)
    expected = q.copy()
    mujoco.mj_integratePos(model, expected, v, 1.0)
    with jax.enable_x64(True):
        got = np.asarray(tree.integrate(jnp.asarray(q), jnp.asarray(v)))
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_quaternion_matrix_round_trip_at_all_angles():
    rng = np.random.default_rng(4)
    quats = rng.normal(size=(64, 4))
    quats[:4] = [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0]]  # 180 deg and identity
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats *= np.where(quats[:, :1] < 0, -1, 1)
    with jax.enable_x64(True):
        back = np.asarray(mat_to_quat(quat_to_mat(jnp.asarray(quats))))
    np.testing.assert_allclose(back, quats, atol=1e-12)
