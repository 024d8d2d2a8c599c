"""Joint-equality couplings: the polynomial against numpy's, jax against numpy, and poses it
builds against MuJoCo's own equality-constraint violation."""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from musclerl.models.couplings import (
    apply_couplings,
    couplings,
    equality_residual,
    polynomial,
    polynomial_slope,
)
from musclerl.models.registry import load_model
from musclerl.retarget.ik.constraints import JointEqualities

FIXED_JOINT_MJCF = """
<mujoco>
  <worldbody><body><joint name="a" type="hinge"/><joint name="b" type="hinge"/>
    <geom size="0.1" mass="1"/></body></worldbody>
  <equality><joint joint1="b" polycoef="0.3 0 0 0 0"/></equality>
</mujoco>
"""


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


def test_polynomial_matches_numpy_and_jax():
    rng = np.random.default_rng(0)
    coef = rng.normal(size=(7, 5))
    dx = rng.uniform(-1.5, 1.5, size=(11, 7))
    expected = np.stack([np.polynomial.polynomial.polyval(dx[:, k], coef[k]) for k in range(7)], axis=-1)
    np.testing.assert_allclose(polynomial(coef, dx), expected, rtol=1e-12, atol=1e-12)
    slope = np.stack(
        [
            np.polynomial.polynomial.polyval(dx[:, k], np.polynomial.polynomial.polyder(coef[k]))
            for k in range(7)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(polynomial_slope(coef, dx), slope, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(polynomial(jnp.asarray(coef, jnp.float32), jnp.asarray(dx, jnp.float32), jnp)),
        expected,
        rtol=1e-5,
        atol=1e-5,
    )


def test_coupled_pose_satisfies_mujoco_equalities(myolegs):
    rng = np.random.default_rng(1)
    coups = couplings(myolegs)
    assert coups, "myolegs has knee couplings"
    q = np.tile(myolegs.qpos0, (3, 1))
    for c in coups:
        q[:, c.x_qpos] = rng.uniform(*myolegs.jnt_range[myolegs.joint(c.independent).id], size=3)
    q = apply_couplings(myolegs, q)
    np.testing.assert_allclose(equality_residual(coups, q), 0.0, atol=1e-12)
    data = mujoco.MjData(myolegs)
    for row in q:
        data.qpos[:] = row
        mujoco.mj_forward(myolegs, data)
        eq_rows = data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        assert eq_rows.sum() >= len(coups)
        np.testing.assert_allclose(data.efc_pos[eq_rows], 0.0, atol=1e-9)
    # the IK constraint reads the same couplings: same dependent values
    eq = JointEqualities(myolegs)
    np.testing.assert_allclose(q[:, eq.dep_qadr], eq.dependent_values(q), atol=1e-12)


def test_fixed_joint_equality_is_a_constant():
    model = mujoco.MjModel.from_xml_string(FIXED_JOINT_MJCF)
    assert couplings(model) == []
    (fixed,) = couplings(model, fixed=True)
    assert fixed.independent is None and fixed.dependent == "b"
    eq = JointEqualities(model)
    np.testing.assert_allclose(eq.dependent_values(np.array([[1.2, 0.0]])), [[0.3]])
