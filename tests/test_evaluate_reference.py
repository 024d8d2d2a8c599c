"""Inverse dynamics, static optimisation and ``musclerl reference`` (gait2354 vs OpenSim's ID)."""

from __future__ import annotations

import copy
from pathlib import Path

import mujoco
import numpy as np
import pytest
from reference_samples import subject01_reference_args

from musclerl.cli import main
from musclerl.dynamics import inverse_dynamics as idyn
from musclerl.dynamics.static_optimisation import muscle_gain_bias, static_optimisation
from musclerl.errors import InputError
from musclerl.evaluate.coordinates import coordinates_to_qpos
from musclerl.models.couplings import independent_coordinates
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory

SIX = ["hip_flexion_r", "knee_angle_r", "ankle_angle_r", "hip_flexion_l", "knee_angle_l", "ankle_angle_l"]


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


def test_inverse_recovers_forward_dynamics_with_external_load(myolegs):
    """Forward: random joint torques + a foot load -> qacc; inverse must give the torques back."""
    m = idyn.id_model(myolegs)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)  # only the applied torques act
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    d.qpos[:] = myolegs.qpos0
    d.qpos[7:] += rng.uniform(-0.1, 0.1, myolegs.nq - 7)
    d.qvel[:] = rng.uniform(-0.5, 0.5, myolegs.nv)
    tau = rng.uniform(-20, 20, myolegs.nv)
    force, torque = np.array([30.0, -10.0, 600.0]), np.array([0.0, 0.0, 4.0])
    point = np.array([0.1, -0.05, 0.0])
    mujoco.mj_fwdPosition(m, d)  # the Jacobian in mj_applyFT needs com-based quantities
    d.qfrc_applied[:] = tau
    mujoco.mj_applyFT(m, d, force, torque, point, m.body("calcn_r").id, d.qfrc_applied)
    mujoco.mj_forward(m, d)
    qacc = d.qacc.copy()
    loads = idyn.AppliedLoads(
        ("right",), ("calcn_r",), force[None, None], point[None, None], torque[None, None]
    )
    names = independent_coordinates(myolegs)
    res = idyn.inverse_dynamics(
        myolegs, d.qpos[None].copy(), np.zeros(1), names, loads, qvel=d.qvel[None].copy(), qacc=qacc[None]
    )
    np.testing.assert_allclose(res.qfrc_joint[0], tau, atol=1e-6)


def test_read_external_loads(gait2354, tmp_path):
    forces, datafile = idyn.read_external_loads(gait2354 / "subject01_walk1_grf.xml")
    assert [f.body for f in forces] == ["calcn_r", "calcn_l"]
    assert forces[1].force_identifier == "1_ground_force_v" and datafile == "subject01_walk1_grf.mot"
    bad = tmp_path / "bad.xml"
    bad.write_text(
        "<OpenSimDocument><ExternalLoads><objects><ExternalForce name='x'>"
        "</ExternalForce></objects></ExternalLoads></OpenSimDocument>"
    )
    with pytest.raises(InputError, match="applied_to_body"):
        idyn.read_external_loads(bad)
    bad.write_text("<OpenSimDocument><ExternalLoads>")
    with pytest.raises(InputError, match="not valid XML"):
        idyn.read_external_loads(bad)


@pytest.fixture(scope="module")
def gait_id(gait2354, myolegs):
    from musclerl.motion.storage import read_storage

    ik = read_storage(gait2354 / "subject01_walk1_ik.mot")
    grf = read_storage(gait2354 / "subject01_walk1_grf.mot")
    forces, _ = idyn.read_external_loads(gait2354 / "subject01_walk1_grf.xml")
    values = idyn.lowpass(ik.data, ik.rate_hz, 6.0)
    conv = coordinates_to_qpos(myolegs, list(ik.columns), values, ik.in_degrees)
    loads = idyn.loads_from_table(forces, list(grf.columns), grf.data, grf.time_s, ik.time_s)
    names = independent_coordinates(myolegs)
    return idyn.inverse_dynamics(myolegs, conv.qpos, ik.time_s, names, loads), conv


def test_gait2354_moments_match_opensim(gait2354, gait_id):
    """Hip, knee and ankle flexion moments of both legs against OpenSim's inverse_dynamics.sto."""
    from musclerl.motion.storage import read_storage

    res, conv = gait_id
    ref = read_storage(gait2354 / "inverse_dynamics.sto")
    assert np.allclose(ref.time_s, res.time_s, atol=1e-5)
    for name in SIX:
        opensim = ref.column(f"{name}_moment") * conv.signs.get(name, 1.0)  # gait2354 knee sign flipped
        ours = res.moments[:, res.coordinates.index(name)]
        r = np.corrcoef(opensim, ours)[0, 1]
        rmse = np.sqrt(np.mean((opensim - ours) ** 2))
        assert r >= 0.9, (name, r, rmse)
        assert rmse < 0.2 * np.ptp(opensim), (name, r, rmse)


def test_static_optimisation_meets_moments(gait_id, myolegs):
    res, _ = gait_id
    frames = slice(20, 26)
    names = list(res.coordinates)
    so = static_optimisation(myolegs, res.qpos[frames], res.qvel[frames], res.moments[frames], names)
    assert so.success.all()
    assert np.all((so.activation >= 0) & (so.activation <= 1))
    np.testing.assert_allclose(so.residual_nm, 0.0, atol=1e-3)
    # the big joints are carried by muscles, not reserves
    for name in ("hip_flexion_r", "knee_angle_r", "ankle_angle_r", "ankle_angle_l"):
        assert so.reserve_summary()[name]["max_abs_nm"] < 1.0
    assert np.all(so.force_n > -1e-6)  # muscles pull


def test_static_optimisation_reports_reserves_for_unreachable_moment(gait_id, myolegs):
    res, _ = gait_id
    names = list(res.coordinates)
    moments = res.moments[20:21].copy()
    moments[0, names.index("ankle_angle_r")] = -5000.0  # far beyond the plantarflexors
    so = static_optimisation(myolegs, res.qpos[20:21], res.qvel[20:21], moments, names)
    assert so.reserve_summary()["ankle_angle_r"]["max_abs_nm"] > 1000.0


def test_muscle_gain_bias_reproduce_mujoco_force(myolegs):
    d = mujoco.MjData(myolegs)
    d.qpos[:] = myolegs.qpos0
    d.qvel[:] = np.random.default_rng(1).uniform(-1, 1, myolegs.nv)
    d.act[:] = np.random.default_rng(2).uniform(0, 1, myolegs.na)
    mujoco.mj_forward(myolegs, d)
    g, b = muscle_gain_bias(myolegs, d)
    np.testing.assert_allclose(g * d.act + b, d.actuator_force, atol=1e-9)


def test_reference_cli_end_to_end(gait2354, tmp_path):
    from musclerl.motion.reference import read_reference
    from musclerl.motion.storage import read_storage

    out = tmp_path / "ref.npz"
    rc = main([*subject01_reference_args(gait2354), "--model", "myolegs", "--out", str(out)])
    assert rc == 0
    from musclerl.motion.reference import REQUIRED_KEYS, TIME_KEYS

    with np.load(out) as z:  # the dataset layout, key for key
        assert set(z.files) == {*REQUIRED_KEYS, *TIME_KEYS}
        assert z["timestep"].dtype.kind == "i" and z["joint_torque_valid"].ndim == 1
        assert z["qc_notes"].shape == () and z["source_files"].shape == (3,)
    ref = read_reference(out)
    assert ref.subject_weight_kg == pytest.approx(72.6)
    assert "knee_angle_r_moment" in ref.joint_torque_columns and ref.joint_torque_column_valid.all()
    opensim = read_storage(gait2354 / "inverse_dynamics.sto")
    r = np.corrcoef(ref.torque("ankle_angle_l_moment"), opensim.column("ankle_angle_l_moment") / 72.6)[0, 1]
    assert r > 0.99
    assert ref.angle("knee_angle_r").max() > 50  # flexion positive in the model's convention
    act = read_storage(tmp_path / "ref_muscle_activation.sto")
    force = read_storage(tmp_path / "ref_muscle_force.sto")
    assert act.columns == force.columns and len(act.columns) == 80 and act.num_rows == ref.num_frames
    assert np.all((act.data >= 0) & (act.data <= 1))
    assert "reserve" in ref.qc_notes
    # right heel strike from the reference's GRF matches the raw plate data (trial starts at 0.4 s)
    from musclerl.evaluate.compare import reference_heel_strikes
    from musclerl.evaluate.gait_events import OFF_BW, ON_BW, gait_events

    grf = read_storage(gait2354 / "subject01_walk1_grf.mot")
    weight_n = 72.6 * 9.80665
    raw = gait_events(
        grf.time_s, grf.column("ground_force_vy"), ON_BW * weight_n, OFF_BW * weight_n
    ).heel_strikes_s
    raw = raw[(raw >= 0.4) & (raw <= 1.6)] - 0.4
    found = reference_heel_strikes(ref)
    assert len(found) == len(raw) >= 1
    np.testing.assert_allclose(found, raw, atol=1.0 / 60)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--grf", "GRF"], "give both"),
        (["--loads", "NODATA"], "datafile"),
        (["--sign", "knee_angle_r=2"], "--sign"),
        (["--mass", "-3"], "--mass"),
    ],
)
def test_reference_cli_bad_input(gait2354, tmp_path, capsys, extra, message):
    out = tmp_path / "ref.npz"
    nodata = tmp_path / "loads.xml"
    text = (gait2354 / "subject01_walk1_grf.xml").read_text()
    nodata.write_text(text.replace("<datafile> subject01_walk1_grf.mot </datafile>", ""))
    paths = {"GRF": str(gait2354 / "subject01_walk1_grf.mot"), "NODATA": str(nodata)}
    extra = [paths.get(e, e) for e in extra]
    rc = main(
        [
            "reference",
            str(gait2354 / "subject01_walk1_ik.mot"),
            "--no-static-optimisation",
            *extra,
            "--out",
            str(out),
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_reference_cli_missing_motion(tmp_path, capsys):
    rc = main(["reference", str(tmp_path / "nope.mot"), "--out", str(tmp_path / "r.npz")])
    assert rc == 2 and "nope.mot" in capsys.readouterr().err


@pytest.mark.parametrize("frames", [1, 2])
def test_reference_cli_too_short_trajectory(tmp_path, capsys, frames):
    walk = Trajectory.load(Path(__file__).resolve().parents[1] / "assets" / "motions" / "walk_tiny.npz")
    short = tmp_path / "short.npz"
    Trajectory(
        qpos=walk.qpos[:frames],
        qvel=walk.qvel[:frames],
        rate_hz=walk.rate_hz,
        joint_names=walk.joint_names,
        model_name=walk.model_name,
    ).save(short)
    out = tmp_path / "r.npz"
    assert main(["reference", str(short), "--model", "tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "short.npz" in err[0] and f"got {frames}" in err[0]
    assert not out.exists()


def test_id_model_leaves_original_untouched(myolegs):
    before = copy.copy(myolegs.opt.disableflags)
    idyn.id_model(myolegs)
    assert myolegs.opt.disableflags == before


def test_reference_cli_muscles_nan_where_torques_invalid(gait2354, tmp_path):
    """GRF ending before the motion: those rows' torques are invalid, and the muscles' rows of the
    ``.sto`` companions are NaN there (the layout's rule: NaN where a leg's torques are invalid)."""
    from musclerl.motion.reference import read_reference
    from musclerl.motion.storage import read_storage

    lines = (gait2354 / "subject01_walk1_grf.mot").read_text().splitlines()
    start = next(k for k, line in enumerate(lines) if line.strip().startswith("time")) + 1
    keep = [line for line in lines[start:] if line.strip() and float(line.split()[0]) <= 1.2]
    grf = tmp_path / "grf.mot"
    header = [f"nRows={len(keep)}" if h.startswith("nRows") else h for h in lines[:start]]
    grf.write_text("\n".join(header + keep) + "\n")
    loads = tmp_path / "loads.xml"
    loads.write_text((gait2354 / "subject01_walk1_grf.xml").read_text())
    out = tmp_path / "ref.npz"
    args = ["reference", str(gait2354 / "subject01_walk1_ik.mot"), "--model", "myolegs", "--mass", "72.6"]
    assert main([*args, "--grf", str(grf), "--loads", str(loads), "--out", str(out)]) == 0
    ref = read_reference(out)
    invalid = ~ref.joint_torque_valid
    assert 0 < invalid.sum() < ref.num_frames and np.all(ref.time_sec[invalid] > 0.75)
    act = read_storage(tmp_path / "ref_muscle_activation.sto")
    assert np.isnan(act.data[invalid]).all() and np.isfinite(act.data[~invalid]).all()
