"""Retargeting accuracy pieces: anatomical joint centres for the static fit (fast, no shared data)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.models.registry import compile_spec, load_spec
from musclerl.retarget.markers.joint_centres import (
    JOINT_CENTRE_PREFIX,
    find_landmark,
    harrington_hip_centres_m,
    joint_centre_markers,
)


def _pelvis(width_m=0.24, depth_m=0.16, tilt_deg=0.0, origin=(0.3, -0.1, 0.9)):
    """ASIS pair and mid-PSIS for a pelvis facing +x, Z up, tilted about the lateral axis."""
    c, s = np.cos(np.radians(tilt_deg)), np.sin(np.radians(tilt_deg))
    rot = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])  # about world y (the pelvis' left-right axis)
    mid = np.asarray(origin)
    asis_r = mid + rot @ [0, -width_m / 2, 0]  # right is -y in a Z-up world facing +x
    asis_l = mid + rot @ [0, width_m / 2, 0]
    psis = mid + rot @ [-depth_m, 0, 0]
    return asis_r, asis_l, psis, rot


def test_harrington_hip_centres_match_the_regression_in_any_pose():
    for tilt in (0.0, 20.0, -15.0):
        asis_r, asis_l, psis, rot = _pelvis(tilt_deg=tilt)
        hips = harrington_hip_centres_m(asis_r, asis_l, psis, np.array([0.0, 0.0, 1.0]))
        mid = 0.5 * (asis_r + asis_l)
        for side, lateral in (("r", -1.0), ("l", 1.0)):
            local = rot.T @ (hips[side] - mid) * 1000.0  # pelvis frame: x anterior, y left, z up (mm)
            np.testing.assert_allclose(local[0], -0.24 * 160.0 - 9.9, atol=1e-9)  # posterior
            np.testing.assert_allclose(local[2], -0.30 * 240.0 - 10.9, atol=1e-9)  # inferior
            np.testing.assert_allclose(local[1], lateral * (0.33 * 240.0 + 7.3), atol=1e-9)


def test_landmark_names_are_matched_loosely_and_nan_is_absent():
    measured = {"RASI": np.ones(3), "l_asis": np.zeros(3), "R.Knee.Lat": np.full(3, np.nan)}
    np.testing.assert_array_equal(find_landmark(measured, "asis", "r"), np.ones(3))
    np.testing.assert_array_equal(find_landmark(measured, "asis", "l"), np.zeros(3))
    assert find_landmark(measured, "knee_lat", "r") is None  # NaN (marker gapped in the static trial)
    assert find_landmark(measured, "psis", "r") is None


@pytest.fixture(scope="module")
def myolegs():
    return compile_spec(load_spec("myolegs"))


def test_joint_centre_markers_on_myolegs(myolegs):
    asis_r, asis_l, psis, _ = _pelvis()
    measured = {
        "R.ASIS": asis_r, "L.ASIS": asis_l, "V.Sacral": psis,
        "R.Knee.Lat": np.array([0.3, -0.15, 0.5]), "R.Knee.Med": np.array([0.3, -0.05, 0.5]),
    }  # fmt: skip
    # No left knee pair: all four centres or none.
    assert joint_centre_markers(myolegs, measured) == ((), {})
    measured.update({"L.Knee.Lat": np.array([0.3, 0.15, 0.5]), "l_knee_med": np.array([0.3, 0.05, 0.5])})
    markers, targets = joint_centre_markers(myolegs, measured)
    names = {m.name for m in markers}
    assert names == {f"{JOINT_CENTRE_PREFIX}{n}" for n in ("hip_r", "hip_l", "knee_r", "knee_l")}
    assert all(m.fixed for m in markers)
    hip_r = next(m for m in markers if m.name.endswith("hip_r"))
    femur = myolegs.body("femur_r")
    assert hip_r.body == myolegs.body(int(femur.parentid[0])).name
    np.testing.assert_allclose(hip_r.location_m, femur.pos)  # the hip joint in the pelvis frame
    np.testing.assert_allclose(targets[f"{JOINT_CENTRE_PREFIX}knee_r"], [0.3, -0.10, 0.5])
    # A marker set without pelvis landmarks gets no hip centre, and nothing is invented.
    assert joint_centre_markers(myolegs, {"R.Knee.Lat": np.zeros(3)}) == ((), {})


def test_hip_centre_marker_sits_on_the_hip_joint(myolegs):
    """The virtual hip marker, added as a site, coincides with the femur's joint centre in any pose."""
    from musclerl.models.markers import MarkerSet, add_markers

    asis_r, asis_l, psis, _ = _pelvis()
    knees = {f"{s}.Knee.{k}": np.zeros(3) for s in "RL" for k in ("Lat", "Med")}
    markers, _ = joint_centre_markers(
        myolegs, {"R.ASIS": asis_r, "L.ASIS": asis_l, "V.Sacral": psis, **knees}
    )
    spec = load_spec("myolegs")
    add_markers(spec, MarkerSet(markers))
    model = compile_spec(spec)
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    data.qpos[model.jnt_qposadr[model.joint("hip_flexion_r").id]] = 0.6
    mujoco.mj_kinematics(model, data)
    np.testing.assert_allclose(
        data.site(f"{JOINT_CENTRE_PREFIX}hip_r").xpos, data.body("femur_r").xpos, atol=1e-12
    )


# ------------------------------------------------------------------ SMPL / keypoint input checks
def _smpl_standing_file(path, frames=8):
    """An SMPL clip in SMPL's own Y-up frame: zero pose (standing along +Y), drifting along +Z."""
    from musclerl.motion.smpl import write_amass_npz

    trans = np.zeros((frames, 3))
    trans[:, 2] = np.linspace(0.0, 0.2, frames)
    trans[:, 1] = 0.9
    write_amass_npz(path, root_orient=np.zeros((frames, 3)), body_pose=np.zeros((frames, 21, 3)),
                    trans_m=trans, rate_hz=30.0)  # fmt: skip
    return path


def test_y_up_smpl_file_read_as_z_up_is_refused(tmp_path, capsys):
    from musclerl.cli import main
    from musclerl.motion.smpl import read_amass
    from musclerl.retarget.correspondence import check_upright

    path = _smpl_standing_file(tmp_path / "yup.npz")
    upright = read_amass(path, y_up=True).keypoints()
    check_upright("smpl", upright.names, upright.positions_m, upright.source)  # no error once rotated
    lying = read_amass(path).keypoints()
    with pytest.raises(InputError, match=r"trunk points along \+Y.*--y-up"):
        check_upright("smpl", lying.names, lying.positions_m, lying.source)
    out = tmp_path / "out.npz"
    assert main(["retarget", "smpl", str(path), "--model", "tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "yup.npz" in err[0] and "--y-up" in err[0]
    assert not out.exists()


def test_upright_check_ignores_missing_frames_and_accepts_a_lean():
    from musclerl.retarget.correspondence import SOURCE_LANDMARKS, check_upright

    src = SOURCE_LANDMARKS["deepmimic"]
    names = (src["hip_l"], src["hip_r"], src["trunk"])
    lean = np.radians(60.0)  # a sprinter's forward lean still counts as upright
    pos = np.zeros((10, 3, 3))
    pos[:, 0] = [0.0, 0.1, 1.0]
    pos[:, 1] = [0.0, -0.1, 1.0]
    pos[:, 2] = [0.5 * np.sin(lean), 0.0, 1.0 + 0.5 * np.cos(lean)]
    pos[:4] = np.nan
    check_upright("deepmimic", names, pos, "lean.txt")
    pos[:, 2] = [0.5, 0.0, 1.0]  # lying along +X
    with pytest.raises(InputError, match=r"lean.txt.*\+X"):
        check_upright("deepmimic", names, pos, "lean.txt")


# ------------------------------------------------------------------ terrain evidence
def test_settled_heights_ignore_a_sunk_strike_and_the_heel_rise():
    from musclerl.retarget.ground.terrain import settled_mask, support_patches

    heel = np.full(12, 0.002)
    heel[:2] = [-0.04, -0.025]  # driven into the floor at the strike (as DeepMimic's run does)
    heel[-3:] = [0.02, 0.04, 0.07]  # rising before toe-off, still flagged
    flags = np.ones((12, 1), dtype=bool)
    mask = settled_mask(heel[:, None], flags, 0.01)[:, 0]
    np.testing.assert_array_equal(mask, [False, False] + [True] * 7 + [False] * 3)
    points = np.zeros((12, 1, 3))
    points[:, 0, 0] = 0.3
    points[:, 0, 2] = heel
    patch = support_patches(points, flags, np.zeros(1, dtype=int), 0.0, settle_m=0.01)[0]
    assert patch.height_m == pytest.approx(0.002, abs=1e-9)
    # Unflagged frames never count, however many there are.
    flags[:8] = False
    assert settled_mask(heel[:, None], flags, 0.01)[:, 0].sum() == 1


# ------------------------------------------------------------------ markers placed from the trial (opt-in)
def test_trial_marker_locations_recover_body_frame_offsets():
    from markers_fixtures import gait_qpos, site_trajectories, subject_model

    from musclerl.retarget.markers.fit import trial_marker_locations

    model = subject_model()
    names = ["foot_r.0", "foot_r.1", "pelvis.2"]
    qpos = gait_qpos(model, 30, 60.0)
    targets = site_trajectories(model, qpos, names)
    targets[5:9, 1] = np.nan  # a gap
    targets[:, 2] = np.nan  # never seen: left out
    found = trial_marker_locations(model, qpos, names, targets)
    assert set(found) == {"foot_r.0", "foot_r.1"}
    for name in found:
        np.testing.assert_allclose(found[name], model.site(name).pos, atol=1e-12)


def test_place_from_trial_unknown_body_fails_before_solving(tmp_path, capsys):
    from markers_fixtures import write_case

    from musclerl.cli import main

    case = write_case(tmp_path / "case", frames=10)
    out = tmp_path / "x.npz"
    args = ["retarget", "markers", str(case["walk"]), "--model", "tiny", "--markers", str(case["markers"])]
    assert main([*args, "--out", str(out), "--place-from-trial", "torso,pelvis"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["musclerl: error: --place-from-trial: model 'tiny' has no body ['torso']"]
    assert not out.exists()


def test_stance_fragment_cut_by_the_clip_start_gives_no_patch_at_60_hz():
    from musclerl.retarget.ground.terrain import TerrainParams, terrain_from_contacts

    params = TerrainParams()
    assert [params.min_stance_frames(r) for r in (30.0, 60.0, 120.0)] == [3, 5, 10]
    rate_hz = 60.0
    points = np.zeros((60, 1, 3))
    points[:, 0, 0] = np.linspace(0.0, 1.0, 60)
    flags = np.zeros((60, 1), dtype=bool)
    flags[:4] = True  # the end of a toe-off, 2 cm up and rising
    points[:4, 0, 2] = [0.018, 0.02, 0.022, 0.024]
    flags[30:50] = True  # a full stance on the ground (z = 0)
    points[30:50, 0, 0] = 0.6
    terrain = terrain_from_contacts(points, flags, np.zeros(1, dtype=int), rate_hz=rate_hz)
    assert np.abs(terrain.height_at(points[flags[:, 0], 0, :2])).max() < 1e-6
    per_frame = terrain_from_contacts(points, flags, np.zeros(1, dtype=int))  # 3 frames suffice
    assert per_frame.height_at(points[:1, 0, :2])[0] > 0.015


@pytest.mark.slow
def test_gait2354_rigid_trunk_placed_from_the_walk(gait2354, tmp_path):
    """myolegs' rigid trunk with its markers re-placed from the walk (opt-in): measured 13.8 mm over
    all markers (44.0 mm without; OpenSim with a lumbar joint 21.9 mm), 12.7 mm lower body."""
    import json

    from musclerl.cli import main

    d = gait2354
    code = main(
        ["retarget", "markers", str(d / "subject01_walk1.trc"), "--model", "myolegs",
         "--markers", str(d / "gait2354_Scale_MarkerSet.xml"), "--static", str(d / "subject01_static.trc"),
         "--setup", str(d / "subject01_Setup_IK.xml"), "--scale-setup", str(d / "subject01_Setup_Scale.xml"),
         "--place-from-trial", "torso", "--out", str(tmp_path / "walk.npz"),
         "--report", str(tmp_path / "w.json")]
    )  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "w.json").read_text())
    assert report["markers_placed_from_trial_on"] == ["torso"] and report["failed_frames"] == 0
    assert report["marker_rms_m"]["mean"] < 0.0263  # the aim, OpenSim's 21.9 mm + 20 %
    torso = {n for n, m in report["calibration"]["markers"].items() if m["body"] == "torso"}
    assert torso == {"Sternum", "R.Acromium", "L.Acromium", "Top.Head"}


def test_thigh_and_shank_scaled_per_side_from_joint_centres(myolegs):
    from musclerl.retarget.markers.joint_centres import centre_scale_factors, harrington_hip_centres_m

    data = mujoco.MjData(myolegs)
    mujoco.mj_kinematics(myolegs, data)
    pelvis = {"R.ASIS": np.array([0.1, -0.12, 1.0]), "L.ASIS": np.array([0.1, 0.12, 1.0])}
    pelvis["V.Sacral"] = np.array([-0.08, 0.0, 1.02])
    up = np.array([0.0, 0.0, 1.0])
    hips = harrington_hip_centres_m(pelvis["R.ASIS"], pelvis["L.ASIS"], pelvis["V.Sacral"], up)
    measured = dict(pelvis)
    truth = {"r": (1.10, 0.95), "l": (1.05, 1.02)}  # thigh, shank
    for side, (thigh, shank) in truth.items():
        xpos = {b: data.xpos[myolegs.body(f"{b}_{side}").id] for b in ("femur", "tibia", "talus")}
        knee = hips[side] + thigh * (xpos["tibia"] - xpos["femur"])
        ankle = knee + shank * (xpos["talus"] - xpos["tibia"])
        across = np.array([0.0, 0.05, 0.0])  # lateral and medial markers either side of the centre
        s = side.upper()
        measured |= {f"{s}.Knee.Lat": knee + across, f"{s}.Knee.Med": knee - across}
        measured |= {f"{s}.Ankle.Lat": ankle - across, f"{s}.Ankle.Med": ankle + across}
    factors = centre_scale_factors(myolegs, measured)
    for side, (thigh, shank) in truth.items():
        for body, ratio in ((f"femur_{side}", thigh), (f"patella_{side}", thigh), (f"tibia_{side}", shank)):
            np.testing.assert_allclose(factors[body], ratio, rtol=1e-9)
        np.testing.assert_allclose(factors[f"talus_{side}"], shank, rtol=1e-9)
    del measured["L.Ankle.Med"]  # a side without its ankle centre keeps the setup's shank factor
    assert "tibia_l" not in centre_scale_factors(myolegs, measured)
