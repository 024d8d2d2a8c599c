"""OpenSim marker sets -> MjSpec sites (musclerl.models.markers)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from markers_fixtures import marker_set_xml, tiny_marker_set

from musclerl.errors import InputError
from musclerl.models.markers import Marker, MarkerSet, add_markers, read_marker_set
from musclerl.models.registry import compile_spec, load_spec


@pytest.mark.parametrize("opensim4", [False, True])
def test_read_and_add_markers_on_tiny(tmp_path, opensim4):
    original = tiny_marker_set(offset_m=0.01)
    path = tmp_path / "set.xml"
    path.write_text(marker_set_xml(original, opensim4=opensim4))
    read = read_marker_set(path)
    assert read.names == original.names
    spec = load_spec("tiny")
    added = add_markers(spec, read)
    assert added.added == original.names and added.missing_body == {}
    model = compile_spec(spec)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    for marker in original.markers:
        body = model.body(marker.body).id
        expected = data.xpos[body] + data.xmat[body].reshape(3, 3) @ marker.location_m
        np.testing.assert_allclose(data.site(marker.name).xpos, expected, atol=1e-9)


def test_missing_bodies_reported_and_fixed_flag_kept():
    markers = MarkerSet((Marker("a", "pelvis", np.zeros(3), True), Marker("b", "humerus_r", np.ones(3))))
    spec = load_spec("tiny")
    added = add_markers(spec, markers)
    assert added.added == ("a",)
    assert added.missing_body == {"b": "humerus_r"}
    model = compile_spec(spec)
    assert model.site_user[model.site("a").id][0] == 1.0


@pytest.mark.parametrize(
    "text, problem",
    [
        ('<OpenSimDocument><MarkerSet name="x"><objects/></MarkerSet></OpenSimDocument>', "no <Marker>"),
        (
            '<MarkerSet><objects><Marker name="m"><body>pelvis</body><location>1 2</location></Marker>'
            "</objects></MarkerSet>",
            "3 finite numbers",
        ),
        (
            '<MarkerSet><objects><Marker name="m"><body>pelvis</body><location>1 a 2</location></Marker>'
            "</objects></MarkerSet>",
            "not numeric",
        ),
        (
            '<MarkerSet><objects><Marker name="m"><location>1 2 3</location></Marker></objects></MarkerSet>',
            "no <body>",
        ),
        ("<MarkerSet><objects><Marker", "not valid XML"),
    ],
)
def test_bad_marker_sets(tmp_path, text, problem):
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(InputError, match=problem):
        read_marker_set(path)


def test_gait2354_marker_set_on_myolegs(gait2354):
    marker_set = read_marker_set(gait2354 / "gait2354_Scale_MarkerSet.xml")
    assert len(marker_set.markers) == 39
    spec = load_spec("myolegs")
    added = add_markers(spec, marker_set)
    assert added.missing_body == {} and len(added.added) == 39
    scaled_subject = read_marker_set(gait2354 / "subject01_simbody.osim")
    assert "R.ASIS" in scaled_subject.names
    with pytest.raises(InputError, match="no <Marker>"):
        read_marker_set(gait2354 / "gait2354_simbody.osim")  # its MarkerSet is empty
