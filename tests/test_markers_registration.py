"""Marker registration: a marker set written in another model's body frames lands on myolegs' bodies."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from musclerl.models.markers import read_marker_set
from musclerl.models.osim_frames import map_to_model
from musclerl.models.registry import compile_spec, load_spec


def _joint(name, parent, child, in_parent, in_child, orient_child):
    def vec(v):
        return " ".join(f"{x:.17g}" for x in v)

    return f"""<CustomJoint name="{name}">
  <socket_parent_frame>{parent}_offset</socket_parent_frame>
  <socket_child_frame>{child}_offset</socket_child_frame>
  <frames>
    <PhysicalOffsetFrame name="{parent}_offset"><socket_parent>/bodyset/{parent}</socket_parent>
      <translation>{vec(in_parent)}</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
    <PhysicalOffsetFrame name="{child}_offset"><socket_parent>/bodyset/{child}</socket_parent>
      <translation>{vec(in_child)}</translation><orientation>{vec(orient_child)}</orientation></PhysicalOffsetFrame>
  </frames></CustomJoint>"""


def _marker(name, body, location):
    loc = " ".join(f"{x:.17g}" for x in location)
    return (
        f'<Marker name="{name}"><socket_parent_frame>/bodyset/{body}</socket_parent_frame>'
        f"<location>{loc}</location><fixed>false</fixed></Marker>"
    )


@pytest.fixture(scope="module")
def myolegs():
    return compile_spec(load_spec("myolegs"))


def test_marker_set_in_other_frames_is_recovered_exactly(myolegs, tmp_path):
    """The marker set's femur frame is myolegs' turned by R (x_mj = R x_os), and its model puts the
    hip 2 cm elsewhere in the pelvis (the thigh markers stay on the bone, anchored at its origin,
    the hip centre); its torso, welded in myolegs, sits elsewhere in the pelvis and turned
    (x_mj = R2 x_os + t2). Both come back in myolegs' frames to rounding."""
    model = myolegs
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    turn = Rotation.from_euler("XYZ", [0.3, -0.2, 0.5]).as_matrix()
    shift = np.zeros(3)  # a body's origin is its proximal joint centre in both models
    femur = model.body("femur_r")
    pelvis, torso = model.body("pelvis").id, model.body("torso").id
    r_pelvis = data.xmat[pelvis].reshape(3, 3)
    torso_rot = r_pelvis.T @ data.xmat[torso].reshape(3, 3)
    torso_pos = r_pelvis.T @ (data.xpos[torso] - data.xpos[pelvis])
    turn2 = Rotation.from_euler("XYZ", [-0.1, 0.25, 0.05]).as_matrix()
    shift2 = np.array([-0.02, 0.03, 0.01])  # x_mj_torso = turn2 x_os_torso + shift2
    os_torso_rot = torso_rot @ turn2
    os_torso_pos = torso_rot @ shift2 + torso_pos
    expected = {"knee": np.array([0.01, -0.39, 0.05]), "thigh": np.array([0.06, -0.2, 0.07])}
    expected_torso = np.array([-0.08, 0.42, 0.01])
    hip_elsewhere = femur.pos + np.array([0.015, -0.012, 0.007])
    markers = [_marker(n, "femur_r", turn.T @ (loc - shift)) for n, loc in expected.items()]
    markers.append(_marker("C7", "torso", turn2.T @ (expected_torso - shift2)))
    markers.append(_marker("ASIS", "pelvis", [0.03, 0.0, 0.12]))
    hip = _joint(
        "hip_r",
        "pelvis",
        "femur_r",
        hip_elsewhere,
        turn.T @ -shift,
        Rotation.from_matrix(turn.T).as_euler("XYZ"),
    )
    back = _joint(
        "back",
        "pelvis",
        "torso",
        os_torso_pos,
        [0, 0, 0],
        Rotation.from_matrix(os_torso_rot.T).as_euler("XYZ"),
    )
    osim = f"""<OpenSimDocument><Model><JointSet><objects>
{hip}
{back}
</objects></JointSet><MarkerSet><objects>{"".join(markers)}</objects></MarkerSet></Model></OpenSimDocument>"""
    path = tmp_path / "other.osim"
    path.write_text(osim)
    marker_set = read_marker_set(path)
    assert set(marker_set.frames) == {"femur_r", "torso"}
    mapped = map_to_model(
        marker_set.frames, model, {m.name: (m.body, m.location_m) for m in marker_set.markers}
    )
    for name, loc in expected.items():
        np.testing.assert_allclose(mapped[name], loc, atol=1e-12)
    np.testing.assert_allclose(mapped["C7"], expected_torso, atol=1e-12)
    assert "ASIS" not in mapped  # the pelvis (parent: the ground) keeps its offsets


def test_marker_set_without_frames_maps_nothing(myolegs, tmp_path):
    path = tmp_path / "markers.xml"
    path.write_text(f"<MarkerSet><objects>{_marker('a', 'femur_r', [0, -0.1, 0])}</objects></MarkerSet>")
    marker_set = read_marker_set(path)
    assert marker_set.frames == {}
    assert map_to_model(marker_set.frames, myolegs, {"a": ("femur_r", np.zeros(3))}) == {}


def test_placeholder_markers_share_one_point_on_a_body():
    from musclerl.models.markers import Marker, MarkerSet
    from musclerl.retarget.markers.registration import placeholder_markers

    at = np.array([0.08, -0.32, 0.005])
    markers = MarkerSet(
        (
            Marker("thigh1", "femur_r", at),
            Marker("thigh2", "femur_r", at + 1e-4),
            Marker("knee", "femur_r", np.array([0.0, -0.4, 0.05])),
            Marker("shank", "tibia_r", at),  # same numbers, another body: informative
        )
    )
    assert placeholder_markers(markers) == ["thigh1", "thigh2"]


def test_registration_report_says_how_far_and_why(myolegs):
    from musclerl.models.markers import Marker, MarkerSet
    from musclerl.retarget.markers.registration import registration_report

    generic = MarkerSet(
        (
            Marker("a", "femur_r", np.array([0.0, -0.2, 0.05])),
            Marker("b", "femur_r", np.array([0.0, -0.2, 0.05])),
            Marker("c", "pelvis", np.zeros(3), fixed=True),
            Marker("d", "humerus_r", np.zeros(3)),
        )
    )
    placed = generic.with_locations({"a": np.array([0.0, -0.22, 0.05]), "b": np.array([0.03, -0.2, 0.09])})
    factors = {"femur_r": np.full(3, 1.1)}
    out = registration_report(
        generic, generic, placed, factors, ["a", "b"], (), {"a": 0.0, "b": 0.0, "c": 1.0}, {"d": "humerus_r"}
    )
    # a: scaled generic (0, -0.22, 0.055) -> placed (0, -0.22, 0.05): 5 mm.
    assert out["a"]["placed_mm"] == pytest.approx(5.0) and "placeholder" in out["a"]["why"]
    assert out["c"]["placed_mm"] == 0.0 and "fixed" in out["c"]["why"]
    assert "no body" in out["d"]["why"]


def test_opencap_landmarks_and_the_labs_hip_centres_are_found():
    from musclerl.retarget.markers.joint_centres import find_landmark, landmark_centres_m

    measured = {
        "r_knee": np.array([0.0, -0.1, 0.5]), "r_mknee": np.array([0.0, -0.0, 0.5]),
        "r_ankle": np.array([0.0, -0.1, 0.1]), "r_mankle": np.array([0.0, 0.0, 0.1]),
        "R_HJC": np.array([0.0, -0.08, 0.9]), "L_HJC": np.array([0.0, 0.08, 0.9]),
        "r.ASIS": np.array([0.1, -0.12, 1.0]), "L.ASIS": np.array([0.1, 0.12, 1.0]),
        "r.PSIS": np.array([-0.1, -0.05, 1.0]), "L.PSIS": np.array([-0.1, 0.05, 1.0]),
    }  # fmt: skip
    np.testing.assert_array_equal(find_landmark(measured, "knee_med", "r"), measured["r_mknee"])
    centres = landmark_centres_m(measured)
    np.testing.assert_allclose(centres["knee"]["r"], [0.0, -0.05, 0.5])
    np.testing.assert_allclose(centres["ankle"]["r"], [0.0, -0.05, 0.1])
    # The lab's own hip centres win over the regression from the pelvis markers.
    np.testing.assert_array_equal(centres["hip"]["r"], measured["R_HJC"])


def test_model_centre_is_the_landmark_midpoint_once_mapped(myolegs):
    from musclerl.models.markers import Marker, MarkerSet, add_markers
    from musclerl.retarget.markers.joint_centres import model_centre

    spec = load_spec("myolegs")
    lat, med = np.array([-0.017, -0.385, 0.047]), np.array([0.006, -0.38, -0.038])
    add_markers(spec, MarkerSet((Marker("r_ankle", "tibia_r", lat), Marker("r_mankle", "tibia_r", med))))
    model = compile_spec(spec)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    body, local, _ = model_centre(model, data, "ankle", "r", "talus_r", landmarks=True)
    assert model.body(body).name == "tibia_r"
    np.testing.assert_allclose(local, 0.5 * (lat + med))
    body, local, world = model_centre(model, data, "ankle", "r", "talus_r", landmarks=False)
    assert model.body(body).name == "talus_r" and np.all(local == 0)
    np.testing.assert_allclose(world, data.body("talus_r").xpos)


def test_static_fit_holds_subtalar_and_toes_without_a_setup(myolegs):
    from musclerl.retarget.markers.registration import default_placement_coordinates

    held = default_placement_coordinates(myolegs)
    assert set(held) == {"subtalar_angle_r", "subtalar_angle_l", "mtp_angle_r", "mtp_angle_l"}
    assert all(value is None and weight == 1000.0 for value, weight in held.values())


def test_bench_accuracy_refuses_a_folder_without_the_experts_tables(tmp_path, capsys):
    from musclerl.cli import main

    out, expert = tmp_path / "out", tmp_path / "expert"
    out.mkdir()
    expert.mkdir()
    (out / "walk.json").write_text("{}")
    (out / "walk.mot").write_text("")
    plot = tmp_path / "table.png"
    code = main(["bench", "accuracy", str(out), "--expert", str(expert), "--plot", str(plot)])
    assert code == 2 and not plot.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"musclerl: error: {expert}: no expert or retargeted .mot for ['walk']"


def test_a_custom_joints_translation_functions_place_the_child(tmp_path):
    """gait2354's knee: the tibia hangs from the femur by spline functions of the knee angle,
    evaluated at the coordinate's default value."""
    import xml.etree.ElementTree as ET

    from musclerl.models.osim_frames import read_body_frames

    axis = (
        '<TransformAxis name="{name}"><coordinates>{coord}</coordinates><axis>{axis}</axis>'
        "{fn}</TransformAxis>"
    )
    spline = "<SimmSpline><x>-1 0 1 2</x><y>{y}</y></SimmSpline>"
    axes = "".join(
        [
            axis.format(
                name="rotation1",
                coord="knee",
                axis="0 0 1",
                fn="<LinearFunction><coefficients>1 0</coefficients></LinearFunction>",
            ),
            axis.format(
                name="translation1", coord="knee", axis="1 0 0", fn=spline.format(y="0.01 0.002 -0.004 -0.01")
            ),
            axis.format(
                name="translation2", coord="knee", axis="0 1 0", fn=spline.format(y="-0.41 -0.4 -0.39 -0.38")
            ),
            axis.format(
                name="translation3", coord="", axis="0 0 1", fn="<Constant><value>0.003</value></Constant>"
            ),
        ]
    )
    osim = f"""<OpenSimDocument><Model><JointSet><objects>
<CustomJoint name="knee_r"><socket_parent_frame>/bodyset/femur_r</socket_parent_frame>
<socket_child_frame>/bodyset/tibia_r</socket_child_frame>
<coordinates><Coordinate name="knee"><default_value>0</default_value></Coordinate></coordinates>
<SpatialTransform>{axes}</SpatialTransform></CustomJoint></objects></JointSet></Model></OpenSimDocument>"""
    frame = read_body_frames(ET.fromstring(osim))["tibia_r"]
    assert frame.parent == "femur_r"
    np.testing.assert_allclose(frame.in_parent_m, [0.002, -0.4, 0.003], atol=1e-12)
    np.testing.assert_allclose(frame.rotation, np.eye(3), atol=1e-12)
    bent = osim.replace("<default_value>0</default_value>", "<default_value>1</default_value>")
    frame = read_body_frames(ET.fromstring(bent))["tibia_r"]
    np.testing.assert_allclose(frame.in_parent_m, [-0.004, -0.39, 0.003], atol=1e-12)
    np.testing.assert_allclose(frame.rotation, Rotation.from_rotvec([0, 0, 1.0]).as_matrix(), atol=1e-12)


def test_trunk_markers_are_the_ones_welded_to_the_pelvis_on_another_body(myolegs):
    from musclerl.models.markers import Marker, MarkerSet, add_markers
    from musclerl.retarget.markers.registration import trunk_markers

    markers = MarkerSet(
        (
            Marker("R.ASIS", "pelvis", np.array([0.02, 0.03, 0.13])),
            Marker("C7", "torso", np.array([-0.08, 0.42, 0.0])),
            Marker("knee", "femur_r", np.array([0.0, -0.4, 0.05])),
        )
    )
    spec = load_spec("myolegs")
    add_markers(spec, markers)
    model = compile_spec(spec)
    assert trunk_markers(model, markers) == ("C7",)
    no_pelvis = MarkerSet(markers.markers[1:])
    assert trunk_markers(model, no_pelvis) == ()  # without the pelvis landmarks nothing is assumed


def test_a_malformed_joint_location_names_the_file(tmp_path):
    from musclerl.errors import InputError

    bad = _joint("hip_r", "pelvis", "femur_r", [0.0, 0.0, 0.0], [0, 0, 0], [0, 0, 0]).replace(
        "<translation>0 0 0</translation>", "<translation>0 0 x</translation>", 1
    )
    path = tmp_path / "bad.osim"
    path.write_text(
        f"<OpenSimDocument><Model><JointSet><objects>{bad}</objects></JointSet><MarkerSet><objects>"
        f"{_marker('a', 'femur_r', [0, -0.1, 0])}</objects></MarkerSet></Model></OpenSimDocument>"
    )
    with pytest.raises(InputError, match="bad.osim.*'pelvis_offset' <translation> '0 0 x' is not 3 finite"):
        read_marker_set(path)
