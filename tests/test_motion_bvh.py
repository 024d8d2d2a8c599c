"""BVH reader: forward kinematics against hand computation, units, names, and a retarget run.

The test skeleton (cm, Y up, facing +Z, left at +X as in CMU's files) has both legs with toes,
a spine, neck and head; frames are written with known channel values. The bad-input cases
(truncated MOTION, wrong frame width, unknown channel, NaN, no legs) are in test_bad_input.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from motion_samples import BVH_SKELETON as SKELETON
from motion_samples import bvh_standing_sway, bvh_text

from musclerl.cli import main
from musclerl.errors import InputError
from musclerl.motion.bvh import UNIT_SCALES, read_bvh
from musclerl.motion.keypoints import Y_UP_TO_Z_UP
from musclerl.motion.summary import summarize_motion_file

JOINTS = [s for s in SKELETON if s[0] != "End"]
WIDTH = 3 + 3 * len(JOINTS)


def _rot(axis: str, degrees: float) -> np.ndarray:
    """Rotation matrix about one axis, written out."""
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return {
        "X": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
        "Y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
        "Z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
    }[axis]


def _hand_positions(frame: np.ndarray, order: str) -> dict[str, np.ndarray]:
    """Joint positions (cm, Y up) of one frame by the BVH rule: ``R_local`` is the product of
    the channels' rotations in the listed order, ``p = p_parent + R_world_parent @ offset``."""
    rot_world, pos, col = {}, {}, 3
    ends = 0
    for name, parent, offset in SKELETON:
        if name == "End":
            ends += 1
            pos[f"{parent}_end"] = pos[parent] + rot_world[parent] @ np.array(offset)
            continue
        local = np.eye(3)
        for k, axis in enumerate(order):
            local = local @ _rot(axis, frame[col + k])
        col += 3
        if parent is None:
            pos[name], rot_world[name] = frame[:3].copy(), local
        else:
            pos[name] = pos[parent] + rot_world[parent] @ np.array(offset)
            rot_world[name] = rot_world[parent] @ local
    return pos


def _frames(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frames = rng.uniform(-40.0, 40.0, size=(count, WIDTH))
    frames[:, :3] = rng.uniform(-50.0, 100.0, size=(count, 3))
    return frames


def test_a_quarter_turn_by_hand(tmp_path):
    """Root turned +90 deg about Y (and nothing else): the left hip offset (9, -6, 0) cm turns
    to (0, -6, -9) cm (Ry(90) x = -z), i.e. MuJoCo (0, 0.09, -0.06) m from the root."""
    frame = np.zeros((1, WIDTH))
    frame[0, :3] = (0.0, 90.0, 0.0)
    frame[0, 4] = 90.0  # ZYX order: Zrotation, Yrotation, Xrotation -> Y is the second
    path = tmp_path / "turn.bvh"
    path.write_text(bvh_text(frame, "ZYX"))
    motion = read_bvh(path)
    root = motion.keypoint("pelvis")[0]
    np.testing.assert_allclose(root, [0.0, 0.0, 0.9], atol=1e-12)
    np.testing.assert_allclose(motion.keypoint("left_hip")[0] - root, [0.0, 0.09, -0.06], atol=1e-12)


@pytest.mark.parametrize("order", ["ZYX", "XYZ"])
def test_positions_match_the_hand_computation(tmp_path, order):
    frames = _frames(5)
    path = tmp_path / f"clip_{order}.bvh"
    path.write_text(bvh_text(frames, order))
    motion = read_bvh(path)
    assert motion.rate_hz == pytest.approx(40.0) and motion.num_frames == 5
    names = {
        "pelvis": "Hips",
        "left_hip": "LeftUpLeg",
        "left_knee": "LeftLeg",
        "left_ankle": "LeftFoot",
        "left_foot": "LeftToeBase",
        "right_foot": "RightToeBase",
        "spine3": "Spine1",
        "neck": "Neck",
        "head": "Head",
        "LeftToeBase_end": "LeftToeBase_end",
        "Head_end": "Head_end",
    }
    for t, frame in enumerate(frames):
        hand = _hand_positions(frame, order)
        for keypoint, joint in names.items():
            expected = Y_UP_TO_Z_UP @ hand[joint] * 0.01
            np.testing.assert_allclose(motion.keypoint(keypoint)[t], expected, atol=1e-9)
    # rotations: the left shank's world frame carries the ankle offset from the knee
    knee, ankle = motion.names.index("left_knee"), motion.names.index("left_ankle")
    offset_m = Y_UP_TO_Z_UP @ np.array(SKELETON[3][2]) * 0.01
    np.testing.assert_allclose(
        motion.positions_m[:, ankle] - motion.positions_m[:, knee],
        motion.rotations[:, knee] @ (Y_UP_TO_Z_UP.T @ offset_m),
        atol=1e-9,
    )


def test_the_orders_differ(tmp_path):
    """ZYX and XYZ with the same values are different rotations (the order is read)."""
    frames = _frames(2, seed=3)
    for order in ("ZYX", "XYZ"):
        (tmp_path / f"{order}.bvh").write_text(bvh_text(frames, order))
    a, b = (read_bvh(tmp_path / f"{o}.bvh").keypoint("left_foot") for o in ("ZYX", "XYZ"))
    assert np.abs(a - b).max() > 0.05


def test_units_cm_and_cmu_give_the_same_metres(tmp_path):
    frames = _frames(3, seed=1)
    cmu = UNIT_SCALES["cmu"]
    (tmp_path / "cm.bvh").write_text(bvh_text(frames))
    in_cmu = frames.copy()
    in_cmu[:, :3] *= 0.01 / cmu
    (tmp_path / "cmu.bvh").write_text(bvh_text(in_cmu, scale=0.01 / cmu))
    in_m = frames.copy()
    in_m[:, :3] *= 0.01
    (tmp_path / "m.bvh").write_text(bvh_text(in_m, scale=0.01))
    ref = read_bvh(tmp_path / "cm.bvh").positions_m
    for name in ("cmu.bvh", "m.bvh"):
        np.testing.assert_allclose(read_bvh(tmp_path / name).positions_m, ref, atol=1e-9)
    # an override wins: cm read as metres is a 100x larger body
    big = read_bvh(tmp_path / "cm.bvh", units="m").positions_m
    np.testing.assert_allclose(big, 100.0 * ref, atol=1e-7)
    np.testing.assert_allclose(read_bvh(tmp_path / "cm.bvh", units="0.01").positions_m, ref, atol=1e-12)
    summary = summarize_motion_file(tmp_path / "cmu.bvh")
    assert summary["kind"] == "bvh" and summary["metres_per_unit"] == pytest.approx(cmu)


def test_no_unit_gives_a_human_skeleton(tmp_path):
    path = tmp_path / "giant.bvh"
    path.write_text(bvh_text(_frames(2), scale=30.0))  # legs 25 m if cm, 2.5 m if mm...
    with pytest.raises(InputError, match="give the units") as err:
        read_bvh(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError, match="unknown BVH units 'feet'"):
        read_bvh(path, units="feet")


def _renamed(mapping: dict[str, str]):
    return tuple((mapping.get(n, n), mapping.get(p, p) if p else None, o) for n, p, o in SKELETON)


@pytest.mark.parametrize(
    "mapping",
    [
        {n: f"mixamorig:{n}" for n, _, _ in SKELETON if n != "End"},
        {"LeftUpLeg": "L_Hip", "LeftLeg": "L_Knee", "LeftFoot": "L_Ankle", "LeftToeBase": "L_Toe"}
        | {"RightUpLeg": "R_Hip", "RightLeg": "R_Knee", "RightFoot": "R_Ankle", "RightToeBase": "R_Toe"},
        {
            "LeftUpLeg": "LeftUpperLeg",
            "LeftLeg": "LeftLowerLeg",
            "RightUpLeg": "thigh_r",
            "RightLeg": "shin_r",
        },
    ],
    ids=["mixamo", "l_hip", "unity"],
)
def test_other_namings(tmp_path, mapping):
    frames = _frames(2)
    (tmp_path / "cmu.bvh").write_text(bvh_text(frames))
    (tmp_path / "other.bvh").write_text(bvh_text(frames, skeleton=_renamed(mapping)))
    ref, other = read_bvh(tmp_path / "cmu.bvh"), read_bvh(tmp_path / "other.bvh")
    for keypoint in ("pelvis", "left_hip", "right_knee", "left_ankle", "right_foot", "spine3", "neck"):
        np.testing.assert_array_equal(other.keypoint(keypoint), ref.keypoint(keypoint))


def test_clavicle_and_toeless_foot(tmp_path):
    """A CMU-like ``LeftShoulder`` (clavicle) above ``LeftArm``: the arm joint is the
    shoulder; a foot without a toe joint gives its End Site as the toe."""
    arm = (
        ("LeftShoulder", "Spine1", (3.0, 18.0, 0.0)),
        ("LeftArm", "LeftShoulder", (15.0, 0.0, 0.0)),
        ("LeftForeArm", "LeftArm", (28.0, 0.0, 0.0)),
        ("LeftHand", "LeftForeArm", (25.0, 0.0, 0.0)),
    )
    skeleton = tuple(s for s in SKELETON if s[1] != "LeftToeBase" and s[0] != "LeftToeBase")
    skeleton = skeleton[:4] + (("End", "LeftFoot", (0.0, -5.0, 14.0)),) + skeleton[4:] + arm
    path = tmp_path / "arm.bvh"
    width = 3 + 3 * sum(s[0] != "End" for s in skeleton)
    path.write_text(bvh_text(np.zeros((1, width)), skeleton=skeleton))
    motion = read_bvh(path)
    assert "LeftShoulder" in motion.names and "left_elbow" in motion.names
    np.testing.assert_allclose(
        motion.keypoint("left_shoulder") - motion.keypoint("spine3"), [[0.18, 0.0, 0.18]], atol=1e-12
    )
    np.testing.assert_allclose(
        motion.keypoint("left_foot") - motion.keypoint("left_ankle"), [[0.0, -0.14, -0.05]], atol=1e-12
    )


def test_retarget_cli_on_tiny(tmp_path, capsys):
    path = tmp_path / "synthetic.bvh"
    path.write_text(bvh_text(bvh_standing_sway(), "ZXY"))
    out = tmp_path / "out.npz"
    code = main(["retarget", "smpl", str(path), "--model", "tiny", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    from musclerl.motion.trajectory import Trajectory

    traj = Trajectory.load(out)
    assert traj.num_frames == 24 and traj.rate_hz == pytest.approx(40.0)
