"""AMASS/SMPL reader, writer and the built-in neutral skeleton (generated clips)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from motion_samples import step_up_clip, write_step_up_amass, yaw_then_body_to_world
from scipy.spatial.transform import Rotation

from musclerl.errors import InputError
from musclerl.motion.keypoints import Y_UP_TO_Z_UP
from musclerl.motion.smpl import (
    SMPL_JOINT_NAMES,
    SMPL_NEUTRAL_OFFSETS_M,
    SMPL_PARENTS,
    SMPLX_NEUTRAL_OFFSETS_M,
    SMPLX_NEUTRAL_REST_JOINTS_M,
    read_amass,
    smpl_forward_kinematics,
    smpl_rest_offsets_from_model,
    write_amass_npz,
)

J = {name: i for i, name in enumerate(SMPL_JOINT_NAMES)}


def _rest_joints() -> np.ndarray:
    joints = np.zeros((24, 3))
    for j in range(24):
        joints[j] = SMPL_NEUTRAL_OFFSETS_M[j] + (joints[SMPL_PARENTS[j]] if j else 0.0)
    return joints


def test_skeleton_facts():
    assert len(SMPL_JOINT_NAMES) == len(SMPL_PARENTS) == 24
    assert all(SMPL_PARENTS[j] < j for j in range(1, 24))
    rest = _rest_joints()
    # SMPL body frame: left side at +x, up +y, the feet (toes) forward at +z
    assert rest[J["left_hip"], 0] > 0 > rest[J["right_hip"], 0]
    assert rest[J["head"], 1] > rest[J["pelvis"], 1] > rest[J["left_ankle"], 1]
    assert rest[J["left_foot"], 2] > rest[J["left_ankle"], 2]
    assert 0.85 < rest[J["pelvis"], 1] - rest[J["left_ankle"], 1] < 0.9  # leg length, m
    left, right = [1, 4, 7, 16, 18, 20], [2, 5, 8, 17, 19, 21]
    np.testing.assert_allclose(rest[left, 0], -rest[right, 0], atol=0.02)


def test_smplx_skeleton_facts():
    rest = SMPLX_NEUTRAL_REST_JOINTS_M
    smpl = _rest_joints()
    assert rest[0, 1] - smpl[0, 1] == pytest.approx(-0.128, abs=1e-3)  # SMPL-X pelvis sits lower
    leg = rest[J["pelvis"], 1] - rest[J["left_ankle"], 1]
    assert 0.85 < leg < 0.9
    np.testing.assert_allclose(
        np.linalg.norm(SMPLX_NEUTRAL_OFFSETS_M[1:], axis=1),
        np.linalg.norm(rest[1:] - rest[list(SMPL_PARENTS[1:])], axis=1),
    )
    # limb bones within 2.5 cm of SMPL's (the same average body, two fits); SMPL-X moved the neck
    # joint down and the head joint up by ~5 cm, so those are not compared
    limbs = [
        J[f"{side}_{part}"]
        for side in ("left", "right")
        for part in ("hip", "knee", "ankle", "foot", "elbow", "wrist")
    ]
    smplx_len = np.linalg.norm(SMPLX_NEUTRAL_OFFSETS_M[limbs], axis=1)
    smpl_len = np.linalg.norm(SMPL_NEUTRAL_OFFSETS_M[limbs], axis=1)
    assert np.abs(smplx_len - smpl_len).max() < 0.025


def test_rest_pose_fk_and_pelvis_convention():
    trans = np.array([[0.3, -0.2, 1.0]])
    joints = smpl_forward_kinematics(np.zeros((1, 3)), np.zeros((1, 23, 3)), trans)
    np.testing.assert_allclose(joints[0], _rest_joints() + trans[0], atol=1e-12)
    # the root rotates the body about the pelvis; the pelvis itself is trans + rest pelvis
    root = Rotation.from_euler("z", 0.7).as_rotvec()[None]
    turned = smpl_forward_kinematics(root, np.zeros((1, 21, 3)), trans)
    np.testing.assert_allclose(turned[0, 0], joints[0, 0])
    rot = Rotation.from_rotvec(root[0]).as_matrix()
    np.testing.assert_allclose(turned[0] - turned[0, 0], (joints[0] - joints[0, 0]) @ rot.T, atol=1e-12)


def test_fk_keeps_bone_lengths():
    rng = np.random.default_rng(2)
    joints = smpl_forward_kinematics(
        rng.normal(size=(8, 3)), rng.normal(scale=0.5, size=(8, 23, 3)), rng.normal(size=(8, 3))
    )
    lengths = np.linalg.norm(joints[:, 1:] - joints[:, list(SMPL_PARENTS[1:])], axis=-1)
    np.testing.assert_allclose(
        lengths,
        np.broadcast_to(np.linalg.norm(SMPL_NEUTRAL_OFFSETS_M[1:], axis=1), lengths.shape),
        atol=1e-12,
    )


def test_knee_flexion_moves_the_ankle_back(tmp_path):
    body = np.zeros((1, 21, 3))
    body[0, J["left_knee"] - 1, 0] = 1.0  # +1 rad about the body x axis
    root = yaw_then_body_to_world(0.0)[None]
    joints = smpl_forward_kinematics(root, body, np.zeros((1, 3)))[0]
    straight = smpl_forward_kinematics(root, np.zeros((1, 21, 3)), np.zeros((1, 3)))[0]
    assert joints[J["left_ankle"], 0] < joints[J["left_knee"], 0] - 0.2  # behind the knee (facing +x)
    np.testing.assert_allclose(joints[J["right_ankle"]], straight[J["right_ankle"]])
    assert straight[J["left_hip"], 1] > straight[J["right_hip"], 1]  # facing +x, left is +y


@pytest.mark.parametrize("layout", ["smplh", "smplx", "smpl"])
def test_layouts_round_trip(tmp_path, layout):
    clip = write_step_up_amass(tmp_path / f"{layout}.npz", layout=layout)
    motion = read_amass(tmp_path / f"{layout}.npz")
    assert motion.model_type == layout and motion.rate_hz == clip["rate_hz"] and motion.num_frames == 60
    np.testing.assert_allclose(motion.trans_m, clip["trans_m"])
    np.testing.assert_allclose(motion.body_pose[:, :21], clip["body_pose"])
    offsets = SMPLX_NEUTRAL_OFFSETS_M if layout == "smplx" else SMPL_NEUTRAL_OFFSETS_M
    assert motion.skeleton == ("smplx-neutral" if layout == "smplx" else "smpl-neutral")
    expected = smpl_forward_kinematics(clip["root_orient"], clip["body_pose"], clip["trans_m"], offsets)
    np.testing.assert_allclose(motion.joints_m, expected, atol=1e-12)
    np.testing.assert_allclose(motion.joints_m[:, 0], clip["trans_m"] + offsets[0])  # SMPL's pelvis rule
    keypoints = motion.keypoints()
    assert keypoints.names == SMPL_JOINT_NAMES and keypoints.parents == SMPL_PARENTS
    assert keypoints.positions_m.shape == (60, 24, 3)


def test_step_up_clip_is_z_up_and_walks_forward(tmp_path):
    write_step_up_amass(tmp_path / "step.npz", step_m=0.15)
    motion = read_amass(tmp_path / "step.npz")
    pelvis, head = motion.joints_m[:, J["pelvis"]], motion.joints_m[:, J["head"]]
    assert np.all(head[:, 2] > pelvis[:, 2] + 0.4)
    assert pelvis[-1, 0] - pelvis[0, 0] > 1.5  # walked along +x
    assert pelvis[-1, 2] - pelvis[0, 2] == pytest.approx(0.15, abs=0.01)  # climbed the step
    feet_z = motion.joints_m[:, [J["left_ankle"], J["right_ankle"]], 2]
    assert feet_z.min() > 0.0 and feet_z[:10].min() < 0.15  # ankles near a floor at z = 0
    assert np.all(motion.joints_m[:, J["left_hip"], 1] > motion.joints_m[:, J["right_hip"], 1])


def test_frame_rate_key_variants_and_gender(tmp_path):
    clip = step_up_clip(n_frames=5)
    n = 5
    poses = np.concatenate([clip["root_orient"], clip["body_pose"].reshape(n, -1), np.zeros((n, 90))], axis=1)
    np.savez(
        tmp_path / "a.npz",
        poses=poses,
        trans=clip["trans_m"],
        mocap_frame_rate=np.array(120.0),
        gender=np.array(b"female"),
        betas=np.zeros(16),
    )
    motion = read_amass(tmp_path / "a.npz")
    assert motion.rate_hz == 120.0 and motion.gender == "female" and motion.betas.shape == (16,)


def test_y_up_option_rotates_everything(tmp_path):
    clip = step_up_clip(n_frames=6)
    to_y_up = Rotation.from_matrix(Y_UP_TO_Z_UP).inv()
    root_yup = (to_y_up * Rotation.from_rotvec(clip["root_orient"])).as_rotvec()
    write_amass_npz(
        tmp_path / "y.npz",
        root_orient=root_yup,
        body_pose=clip["body_pose"],
        trans_m=clip["trans_m"],
        rate_hz=30.0,
    )
    raw = read_amass(tmp_path / "y.npz")
    turned = read_amass(tmp_path / "y.npz", y_up=True)
    np.testing.assert_allclose(turned.joints_m, raw.joints_m @ Y_UP_TO_Z_UP.T, atol=1e-12)
    again = smpl_forward_kinematics(turned.root_orient, turned.body_pose, turned.trans_m)
    np.testing.assert_allclose(again, turned.joints_m, atol=1e-12)


def test_shape_only_file_is_rejected(tmp_path):
    np.savez(tmp_path / "shape.npz", betas=np.zeros(16), gender=np.array("male"))
    with pytest.raises(InputError, match="no pose data"):
        read_amass(tmp_path / "shape.npz")


def _write_model_npz(path, n_joints: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic SMPL-family model file whose zero-shape joints are the neutral skeleton.

    Vertices 0..n_joints-1 sit on the joints (J_regressor picks them); the rest are noise. Returns
    (shapedirs, all rest joints) so tests can predict the shaped joints.
    """
    rest = _rest_joints()
    joints = np.zeros((n_joints, 3))
    joints[:22] = rest[:22]
    if n_joints == 24:
        joints[22:] = rest[22:]
    else:  # hands: put the middle-finger knuckles where SMPL's hand joints are
        left, right = {52: (25, 40), 55: (28, 43)}[n_joints]
        joints[left], joints[right] = rest[22], rest[23]
    n_vert = n_joints + 30
    template = np.concatenate([joints, rng.normal(size=(30, 3))])
    regressor = np.zeros((n_joints, n_vert))
    regressor[np.arange(n_joints), np.arange(n_joints)] = 1.0
    shapedirs = rng.normal(scale=0.01, size=(n_vert, 3, 10))
    np.savez(
        path,
        v_template=template,
        J_regressor=regressor,
        shapedirs=shapedirs,
        kintree_table=np.zeros((2, n_joints), dtype=np.int64),
        bs_style=np.array("lbs"),
    )
    return shapedirs, joints


@pytest.mark.parametrize("n_joints", [24, 52, 55])
def test_model_npz_gives_the_shaped_skeleton(tmp_path, n_joints):
    rng = np.random.default_rng(n_joints)
    shapedirs, joints = _write_model_npz(tmp_path / "model.npz", n_joints, rng)
    zero = smpl_rest_offsets_from_model(tmp_path / "model.npz", "smplh", "neutral", np.zeros(16))
    np.testing.assert_allclose(zero, SMPL_NEUTRAL_OFFSETS_M, atol=1e-12)

    betas = rng.normal(size=16)  # AMASS stores 16; the model has 10 -> the first 10 are used
    clip = write_step_up_amass(tmp_path / "clip.npz", n_frames=8)
    data = dict(np.load(tmp_path / "clip.npz"))
    data["betas"] = betas
    np.savez(tmp_path / "clip.npz", **data)
    motion = read_amass(tmp_path / "clip.npz", model_path=tmp_path / "model.npz")
    shaped = joints + shapedirs[:n_joints] @ betas[:10]
    if n_joints != 24:
        left, right = {52: (25, 40), 55: (28, 43)}[n_joints]
        shaped = np.concatenate([shaped[:22], shaped[[left, right]]])
    offsets = shaped - shaped[np.maximum(SMPL_PARENTS, 0)]
    offsets[0] = shaped[0]
    expected = smpl_forward_kinematics(clip["root_orient"], clip["body_pose"], clip["trans_m"], offsets)
    np.testing.assert_allclose(motion.joints_m, expected, atol=1e-12)
    neutral = read_amass(tmp_path / "clip.npz").joints_m
    assert np.abs(motion.joints_m - neutral).max() > 1e-3  # the shape changed the skeleton


def test_bad_model_files(tmp_path):
    np.savez(tmp_path / "nomodel.npz", foo=np.zeros(3))
    with pytest.raises(InputError, match="missing v_template, J_regressor, shapedirs"):
        smpl_rest_offsets_from_model(tmp_path / "nomodel.npz", "smpl", "neutral", np.zeros(10))
    np.savez(
        tmp_path / "odd.npz",
        v_template=np.zeros((5, 3)),
        J_regressor=np.eye(5),
        shapedirs=np.zeros((5, 3, 2)),
    )
    with pytest.raises(InputError, match="model has 5 joints"):
        smpl_rest_offsets_from_model(tmp_path / "odd.npz", "smpl", "neutral", np.zeros(10))


@pytest.mark.skipif(importlib.util.find_spec("smplx") is not None, reason="smplx installed")
def test_model_folder_without_smplx_is_a_clear_error(tmp_path):
    write_step_up_amass(tmp_path / "c.npz", n_frames=3)
    with pytest.raises(InputError, match="smplx"):
        read_amass(tmp_path / "c.npz", model_path=tmp_path)
