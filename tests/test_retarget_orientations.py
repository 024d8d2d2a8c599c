"""Segment orientations as IK targets, and the joint-limit report (``limit_bound_frac``).

Fast: the readers' rotations against their own joint positions, the offset calibration on a
known offset, the limit report on a hand-made table. Slow: a generated SMPL crouch-and-jump clip
(:func:`musclerl.retarget.synthetic.smpl.smpl_crouch_jump`, known joint angles, a deep crouch past
myolegs' 30 deg dorsiflexion limit) retargeted onto myolegs with and without orientation targets.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from musclerl.models.registry import load_model
from musclerl.motion.smpl import SMPL_NEUTRAL_OFFSETS_M, SMPL_PARENTS, read_amass
from musclerl.retarget import correspondence as corr
from musclerl.retarget.keypoints.orientations import calibrate_offsets, orientation_targets
from musclerl.retarget.report import limit_bound_summary
from musclerl.retarget.synthetic.smpl import smpl_crouch_jump, write_walk_npz


@pytest.mark.parametrize("name", ["myolegs", "myofullbody", "tiny"])
def test_segment_tables(name):
    """Every segment body exists in the model, and every source segment keypoint in its source."""
    from musclerl.motion.deepmimic import DEEPMIMIC_KEYPOINT_NAMES
    from musclerl.motion.smpl import SMPL_JOINT_NAMES

    model = load_model(name)
    for seg, body in corr.model_profile(name).segments.items():
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) >= 0, (seg, body)
    assert set(corr.SOURCE_SEGMENTS["smpl"].values()) <= set(SMPL_JOINT_NAMES)
    assert set(corr.SOURCE_SEGMENTS["deepmimic"].values()) <= set(DEEPMIMIC_KEYPOINT_NAMES)


def test_smpl_rotations_turn_the_bones(tmp_path):
    """The reader's world rotations carry each rest bone onto the joint positions it read:
    ``joint_j - joint_parent = R_parent @ offset_j`` in every frame."""
    clip = smpl_crouch_jump(rate_hz=20.0)
    write_walk_npz(tmp_path / "c.npz", clip)
    motion = read_amass(tmp_path / "c.npz").keypoints()
    pos, rot = motion.positions_m, motion.rotations
    for j in range(1, 22):  # the 21 body joints the file stores (hands hang from the wrists)
        p = SMPL_PARENTS[j]
        np.testing.assert_allclose(
            pos[:, j] - pos[:, p], rot[:, p] @ SMPL_NEUTRAL_OFFSETS_M[j], atol=1e-9, err_msg=str(j)
        )


def test_deepmimic_rotations_turn_the_bones(shared_data):
    """Same for DeepMimic: the foot's rotation (its Y-up joint frame, in the Z-up world) carries
    the ankle onto its toe point, DeepMimic's fixed offset in that frame."""
    from musclerl.motion.deepmimic import read_deepmimic

    motion = read_deepmimic(shared_data / "deepmimic" / "humanoid3d_walk.txt")
    names = motion.names
    for side in ("left", "right"):
        ankle, toe = names.index(f"{side}_ankle"), names.index(f"{side}_toe")
        got = motion.positions_m[:, toe] - motion.positions_m[:, ankle]
        toe_offset_m = np.array([0.1335, -0.05, 0.0])  # DeepMimic's, in the ankle's frame
        np.testing.assert_allclose(got, motion.rotations[:, ankle] @ toe_offset_m, atol=1e-9)


def test_calibrate_offsets_recovers_a_known_offset():
    """Model rotations made as ``source @ C`` (plus noise and a few wrong frames left out by
    ``use``): the calibration returns ``C``, and the targets reproduce the model rotations."""
    rng = np.random.default_rng(3)
    n, b = 200, 3
    source = Rotation.random(n * b, random_state=4).as_matrix().reshape(n, b, 3, 3)
    offsets = Rotation.random(b, random_state=5).as_matrix()
    noise = Rotation.from_rotvec(rng.normal(scale=0.02, size=(n * b, 3))).as_matrix().reshape(n, b, 3, 3)
    model = source @ offsets @ noise
    use = np.ones(n, bool)
    use[:20] = False
    model[:20] = Rotation.random(20 * b, random_state=6).as_matrix().reshape(20, b, 3, 3)
    source[25, 1] = np.nan  # a missing source rotation is skipped
    found = calibrate_offsets(source, model, use)
    angle = np.linalg.norm(Rotation.from_matrix(np.swapaxes(found, 1, 2) @ offsets).as_rotvec(), axis=-1)
    assert np.degrees(angle).max() < 0.5
    quats = orientation_targets(source, found)
    assert np.isnan(quats[25, 1]).all() and np.isfinite(quats[26]).all()
    back = Rotation.from_quat(quats[30:, :, [1, 2, 3, 0]].reshape(-1, 4)).as_matrix().reshape(-1, b, 3, 3)
    np.testing.assert_allclose(back, source[30:] @ found, atol=1e-9)


def test_limit_bound_summary_runs_and_fractions():
    bound = np.zeros((10, 3), bool)
    bound[2:5, 0] = True  # a run with joint a
    bound[4, 2] = True  # and c inside it
    bound[8:10, 1] = True  # a run at the end, joint b
    rms = np.full(10, 0.01)
    rms[3] = 0.2
    rms[9] = 0.05
    out = limit_bound_summary(bound, ["a", "b", "c"], rms)
    assert out["limit_bound_frac"] == {"a": 0.3, "b": 0.2, "c": 0.1}
    assert out["limit_bound_frames"] == [
        {"frames": [2, 4], "joints": ["a", "c"], "marker_rms_worst_m": 0.2},
        {"frames": [8, 9], "joints": ["b"], "marker_rms_worst_m": 0.05},
    ]


def _offset_free_max_deg(got_rad: np.ndarray, truth_rad: np.ndarray) -> float:
    """Largest deviation (deg) of ``got - truth`` from its mean: SMPL's and the model's zero
    angles differ by a constant."""
    diff = np.degrees(got_rad - truth_rad)
    return float(np.abs(diff - diff.mean()).max())


@pytest.mark.slow
def test_crouch_jump_orientations_and_limit_report(tmp_path):
    """Deep crouch, landing, jump onto myolegs. The aims: worst-frame keypoint RMS <= 60 mm in
    every frame where no limit binds, no limit violated, penetration <= 5 mm. Every frame of the
    deep crouch (SMPL dorsiflexion 38 deg against the model's 30) is marked as limit-bound, on
    the ankles; frames well inside every range are not. Orientation targets must do better than
    positions alone on the worst frame and on the hip angle, which positions leave free to take
    up the ankle's miss."""
    from musclerl.retarget.keypoints.pipeline import PipelineParams, retarget_keypoints
    from musclerl.retarget.report import limit_excess

    clip = smpl_crouch_jump()
    write_walk_npz(tmp_path / "crouch_jump.npz", clip)
    motion = read_amass(tmp_path / "crouch_jump.npz").keypoints()
    solvers: dict = {}
    runs = {
        w: retarget_keypoints(motion, "myolegs", PipelineParams(orientation_weight=w), solvers)
        for w in (0.0, 0.1)
    }
    worst, hip_err = {}, {}
    for w, result in runs.items():
        model, q = result.prepared.model, result.trajectory.qpos
        rms = np.sqrt(np.mean(result.keypoint_error_m**2, axis=1))
        excess, coupled, names = limit_excess(model, q)
        bound = excess[:, ~coupled] > -1e-4
        names = [n for n, c in zip(names, coupled, strict=True) if not c]
        worst[w] = rms.max()
        hips = [model.jnt_qposadr[model.joint(f"hip_flexion_{s}").id] for s in "lr"]
        hip_err[w] = max(_offset_free_max_deg(q[:, a], clip.hip_rad) for a in hips)
        assert result.metrics["joint_limit_violation_frac"] == 0.0
        assert result.metrics["penetration_max_m"] <= 0.005
        assert rms[~bound.any(axis=1)].max() <= 0.060
        deep = np.degrees(clip.ankle_rad) > 35.0
        ankles = [names.index(f"ankle_angle_{s}") for s in "lr"]
        assert bound[deep][:, ankles].any(axis=1).all()
        inside = (
            (np.abs(np.degrees(clip.ankle_rad)) < 20.0)
            & (np.degrees(clip.hip_rad) < 90.0)
            & (np.degrees(clip.knee_rad) > 10.0)
            & ~clip.airborne
        )
        assert inside.sum() > 50 and not bound[inside].any()
    assert worst[0.1] < worst[0.0]
    assert hip_err[0.1] < hip_err[0.0]
