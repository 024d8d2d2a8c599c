"""Retargeting accuracy pieces: anatomical joint centres for the static fit (fast, no shared data)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from musclerl.models.registry import compile_spec, load_spec
from musclerl.retarget.joint_centres import (
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
