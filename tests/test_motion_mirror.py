"""Left/right mirroring: an involution, and a mirror image in MuJoCo's own kinematics."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.motion.mirror import mirror_map, mirror_qpos_qvel, mirror_trajectory, partner
from musclerl.motion.trajectory import Trajectory, finite_difference_qvel
from musclerl.resources import assets_dir

WALK = assets_dir() / "motions" / "walk_myolegs.npz"
MIRROR_TOLERANCE_M = 2e-3  # myolegs' own left/right bodies differ by ~0.2 mm at qpos0


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


@pytest.fixture(scope="module")
def walk():
    return Trajectory.load(WALK)


def test_partner_names():
    assert partner("femur_r") == "femur_l" and partner("hip_flexion_l") == "hip_flexion_r"
    assert partner("pelvis") == "pelvis"


def test_mirroring_twice_is_the_identity(myolegs, walk):
    mm = mirror_map(myolegs)
    sites = np.random.default_rng(0).normal(size=(walk.num_frames, 3, 3))
    walk = dataclasses.replace(walk, site_names=("a_r", "a_l", "mid"), site_pos_m=sites)
    twice = mirror_trajectory(mirror_trajectory(walk, mm), mm)
    np.testing.assert_allclose(twice.qpos[:, 7:], walk.qpos[:, 7:], atol=1e-12)
    np.testing.assert_allclose(twice.qpos[:, :3], walk.qpos[:, :3], atol=1e-12)
    # a quaternion and its negative are one rotation
    dots = np.abs(np.sum(twice.qpos[:, 3:7] * walk.qpos[:, 3:7], axis=1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-12)
    np.testing.assert_allclose(twice.qvel, walk.qvel, atol=1e-12)
    np.testing.assert_allclose(twice.site_pos_m, walk.site_pos_m, atol=1e-12)
    np.testing.assert_array_equal(twice.contact, walk.contact)
    once = mirror_trajectory(walk, mm)
    assert not np.allclose(once.qpos[:, 7:], walk.qpos[:, 7:])  # it does change the pose
    flip = np.array([1.0, -1.0, 1.0])
    np.testing.assert_allclose(once.site_pos_m[:, 1], sites[:, 0] * flip)
    np.testing.assert_allclose(once.site_pos_m[:, 2], sites[:, 2] * flip)
    heel_r, heel_l = walk.contact_names.index("sole_heel_r"), walk.contact_names.index("sole_heel_l")
    np.testing.assert_array_equal(once.contact[:, heel_l], walk.contact[:, heel_r])


def test_mirrored_walk_is_the_reflection_in_forward_kinematics(myolegs, walk):
    """The mirrored walk's left foot traces the original right foot reflected in the world x-z
    plane (and so on for every paired body); muscle lengths swap sides; the mirrored qvel is the
    finite difference of the mirrored qpos as the original's is of the original's."""
    mm = mirror_map(myolegs)
    qpos, qvel = mirror_qpos_qvel(walk.qpos, walk.qvel, mm)
    d, dm = mujoco.MjData(myolegs), mujoco.MjData(myolegs)
    names = [myolegs.body(b).name for b in range(myolegs.nbody)]
    paired = [b for b, n in enumerate(names) if partner(n) in names and b > 0]
    worst_m = 0.0
    for t in range(walk.num_frames):
        d.qpos[:], dm.qpos[:] = walk.qpos[t], qpos[t]
        mujoco.mj_fwdPosition(myolegs, d)
        mujoco.mj_fwdPosition(myolegs, dm)
        for b in paired:
            want = d.xpos[b] * np.array([1.0, -1.0, 1.0])
            worst_m = max(worst_m, float(np.linalg.norm(dm.xpos[names.index(partner(names[b]))] - want)))
        np.testing.assert_allclose(dm.actuator_length, d.actuator_length[mm.actuator_perm], atol=1e-9)
    assert worst_m < MIRROR_TOLERANCE_M
    assert names.index("calcn_l") in paired
    fd, fd_mirror = (finite_difference_qvel(myolegs, q, walk.rate_hz) for q in (walk.qpos, qpos))
    np.testing.assert_allclose(mirror_qpos_qvel(walk.qpos, fd, mm)[1], fd_mirror, atol=1e-9)
    # the walk still goes forward (+x) and the root's lateral position flips
    np.testing.assert_allclose(qpos[:, 0], walk.qpos[:, 0])
    np.testing.assert_allclose(qpos[:, 1], -walk.qpos[:, 1])


def test_model_without_pairs_is_one_line_error():
    xml = """<mujoco><worldbody><body name="a"><freejoint/><geom size="0.1"/>
      <body name="arm_r"><joint name="j_r" axis="0 1 0"/><geom size="0.1"/></body>
      </body></worldbody></mujoco>"""
    with pytest.raises(InputError, match="no body pair"):
        mirror_map(mujoco.MjModel.from_xml_string(xml), "m.xml")
