"""Model registry and MJCF introspection."""

from __future__ import annotations

import json

import mujoco
import pytest

from musclerl.cli import main
from musclerl.errors import InputError
from musclerl.models import load_model, load_spec, model_names
from musclerl.models.introspect import coordinates, describe, muscles


def test_myolegs_sizes():
    model = load_model("myolegs")
    assert (model.nq, model.nv, model.nu) == (35, 34, 80)
    assert len(muscles(model)) == 80
    names = [c.name for c in coordinates(model)]
    assert names[0] == "root" and "knee_angle_r" in names and "hip_flexion_l" in names


def test_tiny_model_is_a_small_muscle_biped():
    model = load_model("tiny")
    assert model.nu == 6 and model.ntendon == 6
    assert model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    data = mujoco.MjData(model)
    data.qpos[model.joint("hip_flexion_r").qposadr[0]] = 0.6
    mujoco.mj_forward(model, data)
    assert data.ten_wrapnum[model.tendon("hipext_r_tendon").id] > 2, "flexed hip: extensor wraps the cylinder"
    data = mujoco.MjData(model)
    # Feet reach the floor: drop it and it lands on the feet.
    for _ in range(500):
        mujoco.mj_step(model, data)
    foot_geoms = {model.geom("foot_r").id, model.geom("foot_l").id}
    touching = {int(g) for c in data.contact[: data.ncon] for g in (c.geom1, c.geom2)}
    assert foot_geoms & touching


def test_load_spec_is_fresh_and_editable():
    a = load_spec("tiny")
    a.worldbody.add_site(name="extra_site")
    b = load_spec("tiny")
    assert "extra_site" in [s.name for s in a.sites] and "extra_site" not in [s.name for s in b.sites]


def test_describe_myolegs_json(capsys):
    assert main(["info", "myolegs", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["nq"] == 35 and info["nv"] == 34 and info["n_muscles"] == 80
    assert info["total_mass_kg"] > 50
    knee = next(c for c in info["coordinates"] if c["name"] == "knee_angle_r")
    assert knee["type"] == "hinge" and knee["range"][1] > 1.5
    assert any(e["type"] == "joint" and e["joint2"] == "knee_angle_r" for e in info["equality_constraints"])


def test_describe_matches_model_fields():
    model = load_model("tiny")
    info = describe(model, "tiny")
    assert [c["qpos_adr"] for c in info["coordinates"]] == list(model.jnt_qposadr)
    assert info["muscles"][0]["max_force_n"] == pytest.approx(2500.0)


def test_unknown_model_and_bad_mjcf(tmp_path, capsys):
    with pytest.raises(InputError, match="unknown model"):
        load_spec("nonexistent-model")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><geom type='sphere'/></body></worldbody>")
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.xml" in err[0]


def test_registry_lists_musclemimic_with_licence_note():
    from musclerl.models import REGISTRY

    expected = {"myolegs", "myofullbody", "tiny", "musclemimic-fullbody", "musclemimic-bimanual"}
    assert expected <= set(model_names())
    assert "non-commercial" in REGISTRY["musclemimic-bimanual"].licence
