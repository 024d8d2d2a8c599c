"""Rollout recording, comparison, plots, report and the ``musclerl evaluate`` CLI (tiny model)."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from musclerl.cli import main
from musclerl.errors import InputError
from musclerl.evaluate import compare, emg, plots, report
from musclerl.models.couplings import coupling_matrix
from musclerl.models.introspect import total_mass_kg
from musclerl.models.registry import load_model
from musclerl.rl.rollout import foot_forces, foot_owner, rollout

REPO = Path(__file__).resolve().parents[1]
TINY_WALK = REPO / "assets" / "motions" / "walk_tiny.npz"


@pytest.fixture(scope="module")
def tiny_reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "tiny_ref.npz"
    assert main(["reference", str(TINY_WALK), "--model", "tiny", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def recording():
    from musclerl.envs.tracking import TrackingEnv

    env = TrackingEnv("tiny", TINY_WALK, {}, backend="cpu", num_envs=1)
    rec = rollout(env, lambda obs: np.full((1, env.action_size), 0.2), max_steps=25)
    return env, rec


def test_recording_shapes_and_torque_projection(recording):
    env, rec = recording
    T = rec.num_frames
    assert 2 <= T <= 26
    assert rec.angle.shape == (T, len(rec.coordinates)) and rec.torque_nm.shape == rec.angle.shape
    assert rec.activation.shape == (T, len(rec.muscles)) == rec.excitation.shape == rec.force_n.shape
    np.testing.assert_allclose(rec.excitation[1:], 0.2)
    assert np.all(rec.activation[1:] > 0) and np.all(rec.force_n > -1e-9)
    assert rec.grf_n.shape == (T, len(rec.feet), 3)
    np.testing.assert_allclose(rec.time_s[1] - rec.time_s[0], env.control_dt_s)
    assert rec.model_mass_kg == pytest.approx(total_mass_kg(env.model))
    np.testing.assert_allclose(rec.mpjpe_m, rec.site_err_m.mean(axis=1))
    assert rec.mpjpe_m[0] == pytest.approx(0.0, abs=1e-9)  # reset state is the reference


def test_torques_are_actuator_generalised_forces():
    model = load_model("myolegs")
    d = mujoco.MjData(model)
    d.act[:] = 0.3
    mujoco.mj_forward(model, d)
    names = ["knee_angle_r", "ankle_angle_r"]
    tau = coupling_matrix(model, d.qpos, names) @ d.qfrc_actuator
    assert tau[1] == pytest.approx(d.qfrc_actuator[model.jnt_dofadr[model.joint("ankle_angle_r").id]])
    # the knee adds its coupled dofs by virtual work
    assert tau[0] != pytest.approx(d.qfrc_actuator[model.jnt_dofadr[model.joint("knee_angle_r").id]])


def test_foot_forces_balance_weight_at_rest():
    """A body lying still on the floor: ground forces on all its bodies sum to its weight."""
    model = load_model("tiny")
    d = mujoco.MjData(model)
    mujoco.mj_resetData(model, d)
    for _ in range(int(3.0 / model.opt.timestep)):
        mujoco.mj_step(model, d)
    assert np.abs(d.qvel).max() < 0.05
    mujoco.mj_forward(model, d)
    root = int(model.jnt_bodyid[0])
    total = foot_forces(model, d, foot_owner(model, np.array([root])), 1)[0]
    weight = total_mass_kg(model) * -model.opt.gravity[2]
    assert total[2] == pytest.approx(weight, rel=0.03)
    assert abs(total[0]) < 0.03 * weight and abs(total[1]) < 0.03 * weight


def test_compare_plots_report(recording, tiny_reference, tmp_path):
    from musclerl.motion.reference import read_reference

    _, rec = recording
    ref = read_reference(tiny_reference)
    torques = compare.torque_series(rec, ref)
    assert [s.name for s in torques] == list(rec.coordinates)
    s0 = torques[0]
    assert np.isfinite(s0.sim[: rec.num_frames]).any() and np.isnan(s0.sim[-1])  # rollout is shorter
    flipped = compare.torque_series(rec, ref, signs={"hip_flexion_r_moment": -1.0})
    np.testing.assert_allclose(flipped[0].ref, -s0.ref)
    angles = compare.angle_series(rec, ref)
    assert {"hip_flexion_r", "pelvis_tilt"} <= {s.name for s in angles}
    summary = compare.tracking_summary([rec, rec])
    assert summary["episodes"] == 2 and summary["frames"] == 2 * rec.num_frames
    assert summary["success_rate"] == (0.0 if rec.early_termination else 1.0)
    assert summary["mpjpe_global_m"] == pytest.approx(rec.mpjpe_m.mean())
    rows = report.rows(compare.series_metrics(torques + angles), {})
    assert len(rows) == len(torques) + len(angles) and all(r["n_valid"] > 0 for r in rows)
    (tmp_path / "plots").mkdir()
    made = {
        "torque": [plots.plot_series(s, tmp_path / "plots" / f"torque_{s.name}.png") for s in torques],
        "torque_grid": [plots.plot_grid(torques, tmp_path / "plots" / "torque_overview.png", "t")],
        "tracking": [plots.plot_tracking(rec, tmp_path / "plots" / "tracking.png")],
    }
    report.write_outputs(
        tmp_path, rows, {"frames": rec.num_frames, "x": float("nan")}, {"policy": "p"}, [], made
    )
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["tracking"]["x"] is None and len(doc["columns"]) == len(rows)
    csv_lines = (tmp_path / "metrics.csv").read_text().splitlines()
    assert csv_lines[0].startswith("kind,column,unit") and len(csv_lines) == len(rows) + 1
    md = (tmp_path / "report.md").read_text()
    assert "plots/torque_overview.png" in md and "plots/torque_hip_flexion_r.png" in md
    for paths in made.values():
        for p in paths:
            assert p.stat().st_size > 5000 and p.read_bytes()[:4] == b"\x89PNG"


def test_walking_speeds_of_the_policy_and_the_reference(recording):
    """The policy's and the clip's mean horizontal pelvis speed over the rolled-out span: a policy
    that walks at its own pace shows it here (its world error grows, its root-relative does not).
    The clip's pace is the env reference root's (the one computation `bench learn` also prints)."""
    import dataclasses

    from musclerl.rl.validation import reference_speed_mps

    env, rec = recording
    ref = env.reference.as_arrays(np)
    span = rec.time_s[-1] - rec.time_s[0]
    n = int(round(rec.time_s[-1] * env.reference.rate_hz))
    root = ref["qpos"][[0, n], :2]
    assert reference_speed_mps(env, 0, rec.time_s) == pytest.approx(np.hypot(*(root[1] - root[0])) / span)
    assert reference_speed_mps(env, 0, rec.time_s) > 0.3  # the tiny walk walks
    pelvis = rec.pelvis.copy()
    pelvis[:, 3] = pelvis[0, 3] + 0.5 * (rec.time_s - rec.time_s[0])  # 0.5 m/s straight ahead
    pelvis[:, 5] = pelvis[0, 5]
    assert dataclasses.replace(rec, pelvis=pelvis).speed_mps == pytest.approx(0.5) and span > 0


def test_invalid_spans():
    t = np.arange(10) * 0.1
    valid = np.array([1, 1, 0, 0, 1, 1, 1, 0, 1, 0], dtype=bool)
    spans = plots.invalid_spans(t, valid)
    np.testing.assert_allclose(spans, [(0.15, 0.35), (0.65, 0.75), (0.85, 0.95)])
    assert plots.invalid_spans(t, np.ones(10, bool)) == []


def test_emg_inputs(tmp_path):
    csv = tmp_path / "emg.csv"
    t = np.arange(0, 0.05, 0.001)
    csv.write_text("time,TA,GAS\n" + "\n".join(f"{a},{np.sin(a)},{np.cos(a)}" for a in t))
    rec = emg.read_emg(csv)
    assert rec.channels == ("TA", "GAS") and rec.data.shape == (50, 2) and rec.rate_hz == pytest.approx(1000)
    mp = tmp_path / "map.yaml"
    mp.write_text("TA: tibant_r\nGAS: {muscles: [gasmed_r, gaslat_r], reference: 0.5}\n")
    cmap = emg.read_emg_map(mp, rec.channels)
    assert cmap.muscles == {"TA": ["tibant_r"], "GAS": ["gasmed_r", "gaslat_r"]} and cmap.reference == {
        "GAS": 0.5
    }
    mp.write_text("XX: tibant_r\n")
    with pytest.raises(InputError, match="XX"):
        emg.read_emg_map(mp, rec.channels)
    csv.write_text("time,TA\n0,1\n0.001,abc\n")
    with pytest.raises(InputError, match="line 3"):
        emg.read_emg(csv)


def test_evaluate_cli_bad_input(tmp_path, capsys):
    out = tmp_path / "eval"
    rc = main(["evaluate", str(tmp_path / "nopolicy"), "--motion", str(TINY_WALK), "--out", str(out)])
    assert rc == 2 and "not a policy folder" in capsys.readouterr().err
    rc = main(["evaluate", str(tmp_path), "--motion", str(TINY_WALK), "--emg", "x.csv", "--out", str(out)])
    assert rc == 2 and "--emg" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_evaluate_end_to_end_with_trained_policy(tiny_reference, tmp_path):
    """Train a tiny policy briefly, then evaluate it against `musclerl reference` output and EMG."""
    cfg = tmp_path / "train.yaml"
    cfg.write_text("model: tiny\n")
    run = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--config",
                str(cfg),
                "--out",
                str(run),
                "--quiet",
                f"motion={TINY_WALK}",
                "ppo.num_envs=4",
                "ppo.rollout_steps=32",
                "ppo.total_env_steps=512",
                "threads=1",
                "network.policy_hidden=[32,32]",
                "network.value_hidden=[32,32]",
            ]
        )
        == 0
    )
    act_sto = tiny_reference.with_name("tiny_ref_muscle_activation.sto")
    from musclerl.motion.storage import read_storage

    muscles = read_storage(act_sto).columns
    t = np.arange(0, 1.1, 0.001)
    emg_csv = tmp_path / "emg.csv"
    raw = np.random.default_rng(0).standard_normal((len(t), 2)) * (1 + np.sin(2 * np.pi * t))[:, None]
    emg_csv.write_text("time,ch0,ch1\n" + "\n".join(f"{a},{x},{y}" for a, (x, y) in zip(t, raw, strict=True)))
    emg_map = tmp_path / "map.yaml"
    emg_map.write_text(f"ch0: {muscles[0]}\nch1: [{muscles[1]}, {muscles[2]}]\n")
    out = tmp_path / "eval"
    rc = main(
        [
            "evaluate",
            str(run / "policy"),
            "--motion",
            str(TINY_WALK),
            "--reference",
            str(tiny_reference),
            "--activations",
            str(act_sto),
            "--emg",
            str(emg_csv),
            "--emg-map",
            str(emg_map),
            "--max-steps",
            "60",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    doc = json.loads((out / "metrics.json").read_text())
    kinds = {r["kind"] for r in doc["columns"]}
    # net joint moments and the muscles' part of them beside (issue: net = muscle + passive + limit)
    assert kinds == {"torque", "torque_muscle", "angle", "activation", "emg"}
    for name in ("tracking.png", "torque_overview.png", "activation_overview.png", "emg_overview.png"):
        assert (out / "plots" / name).stat().st_size > 5000
    assert (out / "report.md").read_text().count("](plots/") > 10
    with np.load(out / "recording.npz") as z:
        assert z["torque_nm"].shape[1] == 6
        assert doc["tracking"]["success_rate"] == (0.0 if z["early_termination"] else 1.0)
        assert doc["tracking"]["mpjpe_global_m"] == pytest.approx(np.nanmean(z["mpjpe_m"]))


def test_cycle_comparison_and_cycle_plot(tmp_path):
    t = np.linspace(0, 4, 401)
    strikes = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    ref = np.sin(2 * np.pi * t)
    sim = 0.8 * np.sin(2 * np.pi * (t - 0.02))
    valid = np.ones_like(t, dtype=bool)
    valid[100:120] = False
    s = compare.Series("torque", "x", "N*m/kg", t, sim, ref, valid)
    (cyc,) = compare.cycle_comparisons([s], strikes, strikes)
    m = cyc.metrics()
    assert m["sim_cycles"] == 4 and m["ref_cycles"] == 4
    assert m["cycle_r"] > 0.99
    assert m["cycle_rmse"] == pytest.approx(np.sqrt(np.mean((cyc.sim.mean() - cyc.ref.mean()) ** 2)))
    assert np.isnan(cyc.ref.values[1, :20, 0]).all()  # invalid reference frames stay gaps
    png = plots.plot_series(s, tmp_path / "c.png", cyc)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_sign_presets():
    from musclerl.cli.evaluate import _signs

    signs = _signs(["gait2354", "ankle_angle_r_moment=-1"])
    assert signs["knee_angle_r_moment"] == -1.0 and signs["ankle_angle_r_moment"] == -1.0
    with pytest.raises(InputError):
        _signs(["knee=2"])


def test_rollout_progress_total_is_the_steps_to_truncation():
    """The progress bar's total is the episode's real length: the horizon, or the end of a clip that
    does not loop; a rollout that nothing terminates runs exactly that many control steps."""
    from musclerl.envs.motions import sine_gait
    from musclerl.envs.tracking import TrackingEnv
    from musclerl.rl.rollout import episode_steps

    never_fail = {"root_height_min_m": -10.0, "max_tilt_deg": 180.0, "nonfoot_contact_m": -1.0}
    never_fail |= {"site_deviation_m": 0.0, "root_deviation_m": 0.0}
    clip = sine_gait("tiny", duration_s=0.5)
    for horizon, start_s in ((1000, 0.0), (1000, 0.21), (10, 0.0)):
        env = TrackingEnv("tiny", clip, {"horizon": horizon, "termination": never_fail}, num_envs=1)
        duration_s = float(env.reference.clip_duration_s[0])
        expected = min(horizon, int(np.floor((duration_s - start_s + 1e-6) / env.control_dt_s)))
        assert episode_steps(env, 0, start_s) == expected
        rec = rollout(env, lambda obs: np.full((1, 6), 0.2), start_time_s=start_s)
        assert not rec.early_termination
        assert len(rec.time_s) - 1 == expected - 1  # the last step ends the episode and is not recorded


def test_a_recording_names_the_rule_that_ended_it(recording):
    """An episode ended early says which termination rule ended it (trials.csv, report.md and the
    validation clips' results carry it); one that was not ended early says nothing."""
    from musclerl.envs.tracking import TrackingEnv

    _, rec = recording
    assert (rec.end_reason == "") == (not rec.early_termination)
    env = TrackingEnv(
        "tiny",
        TINY_WALK,
        {"termination": {"root_height_min_m": 4.0, "root_height_max_m": 5.0}},
        backend="cpu",
        num_envs=1,
    )
    ended = rollout(env, lambda obs: np.zeros((1, env.action_size)), max_steps=25)
    assert ended.early_termination and ended.end_reason == "height"
