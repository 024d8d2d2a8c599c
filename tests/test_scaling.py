"""Per-segment MjSpec scaling (musclerl.models.scaling) and OpenSim setup parsing."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from markers_fixtures import tiny_marker_set

from musclerl.errors import InputError
from musclerl.models.markers import add_markers
from musclerl.models.opensim_setup import Measurement, read_ik_setup, read_scale_setup
from musclerl.models.registry import compile_spec, load_model, load_spec
from musclerl.models.scaling import measure_scale_factors, scale_spec, segment_factors


def _tiny_with_markers(factors=None, mass_kg=None):
    spec = load_spec("tiny")
    add_markers(spec, tiny_marker_set())
    if factors is not None:
        scale_spec(spec, factors, mass_kg=mass_kg)
    return compile_spec(spec)


def test_segment_scaling_moves_children_sites_and_mass():
    base = _tiny_with_markers()
    s = np.array([1.2, 0.9, 1.3])
    scaled = _tiny_with_markers({"femur_r": s})
    np.testing.assert_allclose(scaled.body("tibia_r").pos, base.body("tibia_r").pos * s)
    np.testing.assert_allclose(scaled.site("femur_r.1").pos, base.site("femur_r.1").pos * s)
    np.testing.assert_allclose(scaled.body("tibia_l").pos, base.body("tibia_l").pos)
    assert np.isclose(scaled.body("femur_r").mass[0], base.body("femur_r").mass[0] * np.prod(s))
    assert np.isclose(scaled.body("femur_l").mass[0], base.body("femur_l").mass[0])


def test_uniform_scale_inertia_and_total_mass():
    base = _tiny_with_markers()
    k = 1.1
    scaled = _tiny_with_markers({"tibia_r": k})
    # mass x k^3, second moments x k^2 -> inertia x k^5
    np.testing.assert_allclose(
        np.sort(scaled.body("tibia_r").inertia), np.sort(base.body("tibia_r").inertia) * k**5, rtol=1e-9
    )
    heavy = _tiny_with_markers({"tibia_r": k}, mass_kg=80.0)
    assert np.isclose(heavy.body_mass.sum(), 80.0)


def test_body_with_fullinertia_scales_and_compiles():
    spec = load_spec("tiny")
    body = spec.body("tibia_r")
    body.explicitinertial = True
    body.mass = 3.0
    body.fullinertia = [0.05, 0.045, 0.02, 0.001, 0.0, 0.0]
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO
    base = compile_spec(spec)
    scale_spec(spec, {"tibia_r": 2.0})
    model = compile_spec(spec)
    assert np.isclose(model.body("tibia_r").mass[0], 3.0 * 8.0)
    np.testing.assert_allclose(
        np.sort(model.body("tibia_r").inertia), np.sort(base.body("tibia_r").inertia) * 32.0, rtol=1e-9
    )


def test_myolegs_knee_couplings_and_muscle_lengths_scale():
    base = load_model("myolegs")
    spec = load_spec("myolegs")
    scale_spec(spec, {"femur_r": 1.2, "tibia_r": 1.1})
    model = compile_spec(spec)
    e = model.eq("knee_angle_translation2_constraint_r").id
    np.testing.assert_allclose(model.eq_data[e, :5], base.eq_data[e, :5] * 1.2, rtol=1e-3)
    a = model.actuator("vasint_r").id
    assert model.actuator_lengthrange[a, 1] > base.actuator_lengthrange[a, 1] * 1.02
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data)
    assert np.all(np.isfinite(data.qpos))


def test_measure_scale_factors_from_marker_pairs():
    model = _tiny_with_markers()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    measured = {model.site(i).name: np.array(data.site_xpos[i]) * 1.25 for i in range(model.nsite)}
    measurement = Measurement("thigh", (("femur_r.0", "femur_r.2"),), ("femur_r", "femur_l"), (1,))
    factors = measure_scale_factors(model, measured, (measurement,))
    np.testing.assert_allclose(factors["femur_r"], [1.0, 1.25, 1.0])
    assert set(factors) == {"femur_r", "femur_l"}
    too_long = {name: pos * 80.0 for name, pos in measured.items()}  # a segment 100x the model's
    with pytest.raises(InputError, match="'thigh': the trial's marker pairs are 100 x the model's"):
        measure_scale_factors(model, too_long, (measurement,), "static.trc")


def test_gait2354_setups(gait2354):
    ik = read_ik_setup(gait2354 / "subject01_Setup_IK.xml")
    assert ik.time_range_s == (0.4, 1.6)
    assert ik.marker_weights["R.ASIS"] == 10 and ik.marker_weights["Top.Head"] == 0.1
    assert {c.name for c in ik.coordinate_targets} == {
        "subtalar_angle_r",
        "mtp_angle_r",
        "subtalar_angle_l",
        "mtp_angle_l",
    }
    scale = read_scale_setup(gait2354 / "subject01_Setup_Scale.xml")
    assert [m.name for m in scale.measurements] == ["torso", "pelvis", "thigh", "shank", "foot"]
    assert scale.time_range_s == (1.0, 2.0) and scale.mass_kg == 72.6


def test_segment_factors_from_an_opensim_model(shared_data):
    """myolegs against OpenSim models: the generic LaiArnold it shares its legs with (Rajagopal's
    lineage) gives 1; subject01's scaled gait2354 a long thigh; femur -> tibia beside the patella,
    toes from the calcaneus, no factor for the two-hipped pelvis; scaled by them, myolegs'
    shank is the subject's."""
    import xml.etree.ElementTree as ET

    from musclerl.models.osim_frames import read_body_frames

    generic = shared_data / "opencap_expert1" / "generic.osim"
    subject = shared_data / "opensim_gait2354" / "subject01_simbody.osim"
    if not generic.is_file() or not subject.is_file():
        pytest.skip("opencap_expert1 / opensim_gait2354 models not present")
    myolegs = load_model("myolegs")
    same = segment_factors(read_body_frames(ET.parse(generic).getroot()), myolegs)
    assert {"femur_r", "tibia_l", "calcn_r", "toes_l"} <= set(same) and "pelvis" not in same
    for name, factor in same.items():
        np.testing.assert_allclose(factor, 1.0, atol=0.01, err_msg=name)
    frames = read_body_frames(ET.parse(subject).getroot())
    factors = segment_factors(frames, myolegs)
    assert 1.10 < factors["femur_r"][0] < 1.15 and np.array_equal(factors["toes_r"], factors["calcn_r"])
    spec = load_spec("myolegs")
    scale_spec(spec, factors)
    data = mujoco.MjData(scaled := compile_spec(spec))
    mujoco.mj_kinematics(scaled, data)
    shank_m = np.linalg.norm(data.body("talus_r").xpos - data.body("tibia_r").xpos)
    talus = frames["talus_r"]
    np.testing.assert_allclose(shank_m, np.linalg.norm(talus.in_parent_m - talus.rotation @ talus.in_child_m))
    frames["tibia_r"] = dataclasses.replace(frames["tibia_r"], in_parent_m=frames["tibia_r"].in_parent_m * 40)
    with pytest.raises(InputError, match="femur_r"):
        segment_factors(frames, myolegs)
