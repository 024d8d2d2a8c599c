"""Lean kinematic tree vs MuJoCo C (mj_kinematics, mj_jac) on random poses of registered models."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.retarget.ik.kinematics import KinematicTree, mat_to_quat, quat_to_mat

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
            return (*tree.fk(q), tree.point_jacobian(q, last, point), tree.rotation_jacobian(q, last))

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


BALL_SLIDE_XML = """
<mujoco>
  <worldbody>
    <body name="base" pos="0.1 0.2 0.3" quat="0.9 0.1 0.3 0.2">
      <joint name="rail" type="slide" axis="0.3 0.4 0.5" pos="0.1 0 0" range="-1 1"/>
      <geom size="0.05"/>
      <body name="arm" pos="0 0.1 0.2" euler="0.3 0.2 0.1">
        <joint name="shoulder" type="ball" pos="0.02 0.03 0.01"/>
        <geom size="0.04"/>
        <body name="hand" pos="0.3 0 0">
          <joint name="wrist" type="hinge" axis="1 1 0" pos="0 0.05 0" ref="0.3"/>
          <joint name="slide2" type="slide" axis="0 0 1"/>
          <geom size="0.03"/>
        </body>
      </body>
    </body>
    <body name="free" pos="1 0 0">
      <freejoint/>
      <geom size="0.1"/>
      <body name="child" pos="0 0.2 0">
        <joint name="ball2" type="ball"/>
        <geom size="0.02"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_ball_slide_and_hinge_ref_joints_match_mujoco():
    """Joint types the registered models lack (ball, chained slides, hinge with ``ref``)."""
    model = mujoco.MjModel.from_xml_string(BALL_SLIDE_XML)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(5)
    tree = KinematicTree.from_model(model)
    with jax.enable_x64(True):

        @jax.jit
        def kinematics(q, point):
            jacs = [tree.point_jacobian(q, b, point) for b in range(tree.nbody)]
            rots = [tree.rotation_jacobian(q, b) for b in range(tree.nbody)]
            pts, closed = tree.points_and_jacobian(
                q, np.arange(tree.nbody), jnp.broadcast_to(point, (tree.nbody, 3))
            )
            return (*tree.fk(q), jnp.stack(jacs), jnp.stack(rots), pts, closed)

        for _ in range(3):
            q = _random_pose(model, rng)
            point = rng.normal(size=3) * 0.1
            pos, rot, jacp, jacr, pts, closed = (np.asarray(a) for a in kinematics(q, point))
            data.qpos[:] = q
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            np.testing.assert_allclose(pos, data.xpos[1:], atol=1e-9)
            np.testing.assert_allclose(rot, data.xmat[1:].reshape(-1, 3, 3), atol=1e-9)
            for b in range(tree.nbody):
                world = data.xpos[b + 1] + data.xmat[b + 1].reshape(3, 3) @ point
                np.testing.assert_allclose(pts[b], world, atol=1e-9)
                jp, jr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
                mujoco.mj_jac(model, data, jp, jr, world, b + 1)
                np.testing.assert_allclose(jacp[b], jp, atol=1e-9)
                np.testing.assert_allclose(jacr[b], jr, atol=1e-9)
                # The closed-form qpos Jacobian maps tangents like mj_jac does.
                v = rng.normal(size=model.nv)
                q2 = q.copy()
                mujoco.mj_integratePos(model, q2, v, 1e-7)
                np.testing.assert_allclose(closed[b] @ (q2 - q) / 1e-7, jp @ v, atol=1e-5)
