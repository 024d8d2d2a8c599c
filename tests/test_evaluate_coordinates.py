"""OpenSim coordinates -> myolegs qpos: frames, pelvis, couplings, signs."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from musclerl.evaluate import coordinates as C
from musclerl.ground.belt import model_belt_velocity_mps
from musclerl.models import opensim_coordinates as OC
from musclerl.models.couplings import coupling_matrix, couplings, independent_coordinates
from musclerl.models.registry import load_model


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


def test_pelvis_frame_is_the_documented_permutation(myolegs):
    R, p = C.pelvis_in_root(myolegs)
    # pelvis X -> -y, Y -> +z, Z -> -x at the identity root (up to MyoConverter's 1e-3 tilt)
    expected = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(R, expected, atol=2e-3)
    np.testing.assert_allclose(p, 0.0, atol=1e-9)


def test_neutral_pose_and_translation(myolegs):
    cols = list(C.PELVIS_COLUMNS)
    conv = C.coordinates_to_qpos(myolegs, cols, np.array([[0, 0, 0, 0.3, 0.9, -0.2]]))
    d = mujoco.MjData(myolegs)
    d.qpos[:] = conv.qpos[0]
    mujoco.mj_kinematics(myolegs, d)
    pelvis = myolegs.body("pelvis").id
    np.testing.assert_allclose(d.xpos[pelvis], C.OPENSIM_TO_MUJOCO @ [0.3, 0.9, -0.2], atol=1e-9)
    # OpenSim neutral: pelvis axes equal ground axes, i.e. world axes mapped by OPENSIM_TO_MUJOCO
    np.testing.assert_allclose(d.xmat[pelvis].reshape(3, 3), C.OPENSIM_TO_MUJOCO, atol=1e-9)


def test_pelvis_tilt_rotates_about_opensim_z(myolegs):
    conv = C.coordinates_to_qpos(myolegs, list(C.PELVIS_COLUMNS), np.array([[30.0, 0, 0, 0, 1, 0]]))
    d = mujoco.MjData(myolegs)
    d.qpos[:] = conv.qpos[0]
    mujoco.mj_kinematics(myolegs, d)
    R = C.OPENSIM_TO_MUJOCO.T @ d.xmat[myolegs.body("pelvis").id].reshape(3, 3)
    c, s = np.cos(np.radians(30)), np.sin(np.radians(30))
    np.testing.assert_allclose(R, [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-9)


def test_pelvis_round_trip(myolegs):
    rng = np.random.default_rng(0)
    v = np.c_[rng.uniform(-40, 40, (20, 3)), rng.uniform(-1, 1, (20, 3))]
    conv = C.coordinates_to_qpos(myolegs, list(C.PELVIS_COLUMNS), v)
    np.testing.assert_allclose(OC.qpos_to_pelvis(myolegs, conv.qpos), v, atol=1e-9)


def test_couplings_and_virtual_work_matrix(myolegs):
    cols = ["knee_angle_r"]
    conv = C.coordinates_to_qpos(myolegs, cols, np.array([[40.0]]))
    q = conv.qpos[0]
    coups = [c for c in couplings(myolegs) if c.independent == "knee_angle_r"]
    assert len(coups) == 7
    for c in coups:
        assert q[c.y_qpos] == pytest.approx(c.value(q[c.x_qpos]))
    # P row = derivative of every dof w.r.t. the knee, checked by finite differences
    P = coupling_matrix(myolegs, q, ["knee_angle_r"])
    h = 1e-6
    qp = C.coordinates_to_qpos(myolegs, cols, np.array([[np.degrees(np.radians(40.0) + h)]])).qpos[0]
    dq = np.zeros(myolegs.nv)
    mujoco.mj_differentiatePos(myolegs, dq, h, q, qp)
    np.testing.assert_allclose(P[0], dq, atol=1e-5)
    assert "knee_angle_rotation2_r" not in independent_coordinates(myolegs)
    assert "knee_angle_r" in independent_coordinates(myolegs)


def test_sign_map_and_ignored_columns(myolegs):
    cols = ["knee_angle_r", "knee_angle_l", "lumbar_extension"]
    vals = np.array([[-50.0, 10.0, 5.0], [-30.0, 20.0, 5.0]])
    conv = C.coordinates_to_qpos(myolegs, cols, vals)
    assert conv.signs == {"knee_angle_r": -1.0}
    assert conv.ignored == ("lumbar_extension",)
    knee = myolegs.jnt_qposadr[myolegs.joint("knee_angle_r").id]
    np.testing.assert_allclose(np.degrees(conv.qpos[:, knee]), [50.0, 30.0])
    explicit = C.coordinates_to_qpos(myolegs, cols, vals, signs={})
    np.testing.assert_allclose(np.degrees(explicit.qpos[:, knee]), [-50.0, -30.0])


def test_gait2354_ik_keeps_markers_on_their_bodies(myolegs, gait2354):
    """Drive myolegs with OpenSim's IK; pelvis/heel markers must stay put in their body frames."""
    from musclerl.motion.storage import read_storage
    from musclerl.motion.trc import read_trc

    ik = read_storage(gait2354 / "subject01_walk1_ik.mot")
    conv = C.coordinates_to_qpos(myolegs, list(ik.columns), ik.data, ik.in_degrees)
    markers = read_trc(gait2354 / "subject01_walk1.trc")
    d = mujoco.MjData(myolegs)
    spread = {}
    pairs = [("R.ASIS", "pelvis"), ("V.Sacral", "pelvis"), ("R.Heel", "calcn_r"), ("L.Heel", "calcn_l")]
    for name, body in pairs:
        k = markers.names.index(name)
        local = []
        for t, time in enumerate(ik.time_s):
            i = int(np.argmin(np.abs(markers.time_s - time)))
            d.qpos[:] = conv.qpos[t]
            mujoco.mj_kinematics(myolegs, d)
            b = myolegs.body(body).id
            local.append(d.xmat[b].reshape(3, 3).T @ (markers.positions_m[i, k] - d.xpos[b]))
        spread[name] = float(np.linalg.norm(np.std(local, axis=0)))
    # pelvis markers: within 1 cm; heels within 3 cm (generic myolegs vs the scaled subject)
    assert spread["R.ASIS"] < 0.01 and spread["V.Sacral"] < 0.01, spread
    assert spread["R.Heel"] < 0.03 and spread["L.Heel"] < 0.03, spread


def test_treadmill_to_overground_and_ground_placement(myolegs, gait2354):
    from musclerl.motion.storage import read_storage

    ik = read_storage(gait2354 / "subject01_walk1_ik.mot")
    q = C.coordinates_to_qpos(myolegs, list(ik.columns), ik.data, ik.in_degrees).qpos
    q2, belt = C.treadmill_to_overground(myolegs, q, ik.time_s)
    assert 0.8 < -belt[0] < 1.5  # the belt runs backwards (lab -x) at walking speed
    # overground, the stance foot no longer slides: its speed is small compared with the belt's
    np.testing.assert_allclose(model_belt_velocity_mps(myolegs, q2, ik.time_s), 0.0, atol=0.1)
    placed = C.place_on_ground(myolegs, q2)
    clearance = C.floor_clearance_m(myolegs, placed)
    assert np.percentile(clearance, 5) == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(placed[:, :2].mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(placed[:, 3:], q2[:, 3:])  # orientation and joints untouched


def test_floor_clearance_is_mujocos_signed_distance_to_the_floor(myolegs):
    """The analytic lowest points (models/geoms) against MuJoCo's own geom-floor distance, on
    random poses from 10 cm into the floor to 30 cm above it; agreement to 1 mm."""
    rng = np.random.default_rng(0)
    q = np.tile(myolegs.qpos0, (20, 1))
    limited = myolegs.jnt_limited.astype(bool) & (myolegs.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    adr, lo, hi = myolegs.jnt_qposadr[limited], *myolegs.jnt_range[limited].T
    q[:, adr] = rng.uniform(lo, hi, (20, len(adr)))
    q[:, 2] += rng.uniform(-0.1, 0.3, 20)
    floor = myolegs.geom("floor").id
    moving = [g for g in range(myolegs.ngeom) if myolegs.geom_bodyid[g] and myolegs.geom_contype[g]]
    d = mujoco.MjData(myolegs)
    expected = []
    for x in q:
        d.qpos[:] = x
        mujoco.mj_kinematics(myolegs, d)
        expected.append(min(mujoco.mj_geomDistance(myolegs, d, floor, g, 10.0, None) for g in moving))
    clearance = C.floor_clearance_m(myolegs, q)
    assert clearance.min() < 0.0 < clearance.max()  # both penetration and clearance are covered
    np.testing.assert_allclose(clearance, expected, atol=1e-3)


def test_floor_clearance_refuses_a_ground_that_is_not_a_horizontal_plane():
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="box" size="1 1 0.1"/>'
        '<body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>'
    )
    with pytest.raises(ValueError, match="horizontal planes"):
        C.floor_clearance_m(model, model.qpos0[None])


def test_retarget_mot_round_trips_through_opensim_coordinates(tmp_path):
    """The ``--mot`` table (pelvis in OpenSim's ground, joints by name) written, read back and
    put on the model again gives the same pose: every body where it was."""
    import mujoco as mj

    from musclerl.models.couplings import apply_couplings
    from musclerl.motion.storage import read_storage, write_storage
    from musclerl.retarget.markers.pipeline import coordinate_table

    model = load_model("myolegs")
    rng = np.random.default_rng(3)
    qpos = np.tile(model.qpos0, (5, 1))
    qpos[:, :3] = rng.normal([1.0, -0.5, 0.9], 0.3, (5, 3))
    quat = rng.normal(size=(5, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    for name in independent_coordinates(model):
        j = model.joint(name).id
        lo, hi = model.jnt_range[j] if model.jnt_limited[j] else (-0.5, 0.5)
        qpos[:, model.jnt_qposadr[j]] = rng.uniform(lo, hi, 5)
    qpos = apply_couplings(model, qpos)
    table = coordinate_table(model, qpos, np.arange(5) / 100.0, "round trip")
    assert table.columns[:6] == C.PELVIS_COLUMNS and "knee_angle_r" in table.columns
    assert "knee_angle_translation2_r" not in table.columns  # coupled: OpenSim computes it
    write_storage(tmp_path / "w.mot", table)
    back = read_storage(tmp_path / "w.mot")
    again = C.coordinates_to_qpos(model, list(back.columns), back.data, back.in_degrees, signs={}).qpos
    data = mj.MjData(model)

    def bodies(q):
        data.qpos[:] = q
        mj.mj_kinematics(model, data)
        return np.array(data.xpos), np.array(data.xmat)

    for t in range(5):
        for a, b in zip(bodies(qpos[t]), bodies(again[t]), strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_pelvis_rotation_stays_continuous_through_180_deg(myolegs):
    """A walk heading along -x turns the pelvis through +-180 deg: the coordinates written for it
    are continuous (a 360 deg jump differentiates into a spin: inverse dynamics on the C3D walk that
    heads that way gave hip moments of 23 N·m/kg), and still put the pelvis where it was."""
    rotation_deg = np.linspace(170.0, 190.0, 21)
    v = np.c_[np.full(21, 5.0), np.full(21, -3.0), rotation_deg, np.zeros((21, 1)), np.ones(21), np.zeros(21)]
    qpos = C.coordinates_to_qpos(myolegs, list(C.PELVIS_COLUMNS), v).qpos
    back = OC.qpos_to_pelvis(myolegs, qpos)
    assert np.abs(np.diff(back[:, 2])).max() < 2.0
    np.testing.assert_allclose(back[:, 2] - back[0, 2], rotation_deg - rotation_deg[0], atol=1e-6)
    again = C.coordinates_to_qpos(myolegs, list(C.PELVIS_COLUMNS), back).qpos
    np.testing.assert_allclose(np.abs(np.sum(again[:, 3:7] * qpos[:, 3:7], axis=1)), 1.0, atol=1e-9)


def test_a_wrapped_table_is_unwrapped_before_anything_differentiates_it():
    """A table another tool wrote with angles in (-180, 180]: the pelvis rotations come back
    continuous (degrees or radians); the joints are left as they are."""
    rotation_deg = np.linspace(170.0, 190.0, 11)
    wrapped = (rotation_deg + 180.0) % 360.0 - 180.0
    columns = ["pelvis_rotation", "knee_angle_r"]
    values = np.c_[wrapped, np.linspace(0.0, 60.0, 11)]
    out = OC.unwrap_pelvis_rotations(columns, values, in_degrees=True)
    np.testing.assert_allclose(out[:, 0] - out[0, 0], rotation_deg - rotation_deg[0], atol=1e-9)
    np.testing.assert_array_equal(out[:, 1], values[:, 1])
    rad = OC.unwrap_pelvis_rotations(columns, np.radians(values), in_degrees=False)
    np.testing.assert_allclose(np.degrees(rad[:, 0]), out[:, 0], atol=1e-9)
