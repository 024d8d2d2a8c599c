"""`musclerl retarget markers` end to end: generated tiny case (default) and gait2354 (slow).

The default tests share one subject model (tiny, scaled from the generated static trial), so one
IK problem is compiled: once in this process, then loaded from the module's persistent
compilation cache (``MUSCLERL_CACHE``) by the other runs and by the ``--jobs`` worker processes.
"""

from __future__ import annotations

import dataclasses
import json

import mujoco
import numpy as np
import pytest
from markers_fixtures import gait_qpos, subject_model, write_case

from musclerl.cli import main
from musclerl.dynamics.plausibility import leg_feet, trajectory_plausibility
from musclerl.models.registry import compile_spec, load_model
from musclerl.motion.storage import read_storage
from musclerl.motion.trajectory import Trajectory
from musclerl.motion.trc import read_trc, write_trc
from musclerl.retarget.balance import held_stance
from musclerl.retarget.ground.soles import model_soles, point_positions_m
from musclerl.retarget.markers.calibration import subject_spec

REPORT_FIELDS = (
    "frames",
    "fps",
    "marker_rms_m",
    "marker_max_m",
    "failed_frames",
    "joint_limit_violation_frac",
    "equality_residual_max",
    "penetration_frac",
    "penetration_max_m",
    "skating_mps",
    "tendon_jump_frac",
    "terrain",
)


@pytest.fixture(scope="module", autouse=True)
def compilation_cache(tmp_path_factory):
    """A persistent compilation cache private to this module (not the user's ~/.cache)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MUSCLERL_CACHE", str(tmp_path_factory.mktemp("jax_cache")))
        yield


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return write_case(tmp_path_factory.mktemp("markers"))


def _retarget_tiny(trial, markers, *options: str) -> int:
    """``musclerl retarget markers TRIAL --model tiny --markers MARKERS OPTIONS...``: the exit code."""
    return main(["retarget", "markers", str(trial), "--model", "tiny", "--markers", str(markers), *options])


def _subject(case) -> list[str]:
    """The options that scale tiny from the static trial and place the markers."""
    return ["--static", str(case["static"]), "--scale-setup", str(case["scale"])]


@pytest.fixture(scope="module")
def walk(case, tmp_path_factory):
    """The generated walk retargeted once through the CLI (all outputs): their folder."""
    folder = tmp_path_factory.mktemp("walk")
    code = _retarget_tiny(
        case["walk"], case["markers"], *_subject(case), "--out", str(folder / "walk.npz"),
        "--mot", str(folder / "walk.mot"), "--report", str(folder / "walk.json"),
        "--plot", str(folder / "walk.png"),
    )  # fmt: skip
    assert code == 0
    return folder


def test_cli_tiny_generated_case(walk):
    tmp_path, out = walk, walk / "walk.npz"
    report = json.loads((tmp_path / "walk.json").read_text())
    assert all(key in report for key in REPORT_FIELDS)
    assert report["frames"] == 60 and report["failed_frames"] == 0
    assert report["joint_limit_violation_frac"] == 0.0 and report["tendon_jumps_left"] == 0
    assert report["compile_s"] >= 0.0 and report["fps"] > 0
    # Noise-free markers, but the generic marker set is 2 cm off and the scale comes from two marker
    # pairs: the placed markers absorb most of it; measured 6.9 mm mean RMS.
    assert report["marker_rms_m"]["mean"] < 0.012
    assert report["static_rms_m"] < 1e-6  # after placement the static trial is matched exactly
    traj = Trajectory.load(out)
    # 21 markers, then the 8 sole points (heel, toe tip, lateral, medial per foot) with their flags.
    assert traj.qpos.shape == (60, 13) and traj.site_pos_m.shape == (60, 29, 3)
    assert traj.site_names[21:] == traj.contact_names and traj.contact.shape == (60, 8)
    table = read_storage(tmp_path / "walk.mot")
    assert table.in_degrees and "knee_angle_l" in table.columns
    model = subject_model()
    truth = np.rad2deg(gait_qpos(model, 60, 60.0)[:, model.jnt_qposadr[model.joint("knee_angle_l").id]])
    # The static pose is fitted with the generic markers, so joint zeros shift by a few degrees (as in
    # OpenSim); the motion itself must follow: measured 1.0 deg RMS for knee_angle_l.
    assert np.sqrt(np.mean((table.column("knee_angle_l") - truth) ** 2)) < 5.0
    assert (tmp_path / "walk.png").stat().st_size > 10_000
    # The report's calibration rebuilds the subject model: its markers reproduce the trajectory's sites.
    spec = subject_spec(report["calibration"])
    model = compile_spec(spec)
    data = mujoco.MjData(model)
    data.qpos[:] = traj.qpos[10]
    mujoco.mj_kinematics(model, data)
    markers = [n for n in traj.site_names if n not in traj.contact_names]
    np.testing.assert_allclose([data.site(n).xpos for n in markers], traj.site_pos_m[10, :21], atol=1e-9)
    # The sole points (and the floor) are those of the model the Trajectory names, the registry's
    # tiny, which is the one a run imitates the clip with; the markers stay the subject's.
    registry = load_model("tiny")
    _, _, soles = model_soles(registry, "tiny")
    np.testing.assert_allclose(
        point_positions_m(registry, traj.qpos[10:11], soles)[0], traj.site_pos_m[10, 21:]
    )
    assert report["plausibility"]["frames"] == 60 and "balance" not in report


def test_cli_balance_is_reported(case, walk, tmp_path):
    code = _retarget_tiny(
        case["walk"], case["markers"], *_subject(case), "--balance",
        "--out", str(tmp_path / "walk.npz"), "--report", str(tmp_path / "walk.json"),
    )  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "walk.json").read_text())
    plain = json.loads((walk / "walk.json").read_text())
    balance = report["balance"]
    assert balance["cop_outside_frac_before"] == plain["plausibility"]["cop"]["outside_frac"]
    assert balance["cop_outside_frac_after"] == report["plausibility"]["cop"]["outside_frac"]
    assert balance["passed_after"] == report["plausibility"]["passed"]
    assert balance["cop_outside_frac_after"] <= balance["cop_outside_frac_before"]
    if balance["rounds"]:  # the pass moved the body, feet held
        assert balance["root_shift_max_m"] > 0.0
    traj, before = Trajectory.load(tmp_path / "walk.npz"), Trajectory.load(walk / "walk.npz")
    assert traj.site_names == before.site_names and traj.contact_names == before.contact_names
    registry = load_model("tiny")
    names, foot, soles = model_soles(registry, "tiny")
    moved = point_positions_m(registry, traj.qpos, soles) - point_positions_m(registry, before.qpos, soles)
    moved = np.linalg.norm(moved, axis=-1)  # (T, P)
    # the pass holds the stance feet's heels and toes (5 mm); a foot may roll, a swing foot
    # follows its path to a few cm
    stance = held_stance(trajectory_plausibility(before, registry), before.rate_hz)
    legs = leg_feet(registry)[0]
    for p, name in enumerate(names):
        leg = legs.index("left" if foot[p] == 0 else "right")
        if name.startswith(("sole_heel", "sole_toe_tip")):
            assert moved[stance[:, leg], p].max() < 0.005, name
    assert moved.max() < 0.03


def test_cli_bad_marker_set_exits_2_without_output(case, tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<MarkerSet><objects/></MarkerSet>")
    out = tmp_path / "x.npz"
    assert _retarget_tiny(case["walk"], bad, "--out", str(out)) == 2
    assert "bad.xml" in capsys.readouterr().err
    assert not out.exists()


def test_cli_empty_time_window_exits_2_without_output(case, tmp_path, capsys):
    out = tmp_path / "x.npz"
    options = ["--out", str(out), "--report", str(tmp_path / "x.json"), "--start", "5.0", "--end", "6.0"]
    assert _retarget_tiny(case["walk"], case["markers"], *options) == 2
    assert "no frames between 5.0 and 6.0 s" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "x.json").exists()


def test_cli_static_without_shared_markers(case, tmp_path, capsys):
    other = tmp_path / "other.xml"
    other.write_text(case["markers"].read_text().replace('name="', 'name="X'))
    options = ["--static", str(case["static"]), "--out", str(tmp_path / "x.npz")]
    code = _retarget_tiny(case["walk"], other, *options)
    assert code == 2
    assert "static.trc: fewer than 2 markers shared" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


def test_against_per_frame_reference(case, walk):
    """The batched clip solve against an independent per-frame solve of the same objective:
    MuJoCo C's Levenberg-Marquardt (PoseFit, the static-placement fitter) frame by frame,
    warm-started, on the subject model rebuilt from the report. Same objective, same limits
    and equalities: the same poses and marker errors (the poses compared after the pipeline's
    floor pass, which moves a trailing foot's leg out of the floor)."""
    from musclerl.retarget.ik.problem import align_root
    from musclerl.retarget.markers.fit import PoseFit
    from musclerl.retarget.markers.ground import GroundOptions, ground_clip

    report = json.loads((walk / "walk.json").read_text())
    traj = Trajectory.load(walk / "walk.npz")
    model = compile_spec(subject_spec(report["calibration"]))
    names = [n for n in traj.site_names if n not in traj.contact_names]
    weights = np.array([report["marker_weights"][n] for n in names])
    trial = read_trc(case["walk"])
    targets = trial.positions_m[:, [trial.names.index(n) for n in names]]
    fit = PoseFit(model, names, weights)
    q = fit.solve(targets[0], align_root(model, model.qpos0, names, targets[0])).qpos
    reference = []
    for frame in targets:
        q = fit.solve(frame, q).qpos
        reference.append(q)
    reference = np.array(reference)
    grounded = ground_clip(model, "tiny", reference, trial.rate_hz)
    placed = ground_clip(
        load_model("tiny"), "tiny", grounded.qpos, trial.rate_hz, GroundOptions(treadmill=False)
    )
    hinge = mujoco.mjtJoint.mjJNT_HINGE
    hinges = [model.jnt_qposadr[j] for j in range(model.njnt) if model.jnt_type[j] == hinge]
    diff_deg = np.rad2deg(np.abs(traj.qpos[:, hinges] - placed.qpos[:, hinges]))
    assert diff_deg.max() < 0.5, diff_deg.max(axis=0)
    ref_errors = np.linalg.norm(np.stack([fit.site_positions(r) for r in reference]) - targets, axis=-1)
    ref_rms = np.sqrt(np.mean(ref_errors**2, axis=1)).mean()
    assert report["marker_rms_m"]["mean"] <= ref_rms + 1e-4  # never worse than the reference


def test_batch_folder_is_resumable(case, tmp_path, capsys):
    trials = tmp_path / "trials"
    trials.mkdir()
    for name in ("a.trc", "b.trc"):
        (trials / name).write_bytes(case["walk"].read_bytes())
    out = tmp_path / "out"
    options = [*_subject(case), "--out", str(out), "--start", "0.0", "--end", "0.3"]
    assert _retarget_tiny(trials, case["markers"], *options, "--jobs", "2") == 0
    rows = json.loads((out / "summary.json").read_text())
    assert [r["status"] for r in rows] == ["done", "done"]
    assert (out / "a.json").exists() and (out / "b.npz").exists()
    assert _retarget_tiny(trials, case["markers"], *options) == 0
    rows = json.loads((out / "summary.json").read_text())
    assert [r["status"] for r in rows] == ["skipped", "skipped"]
    assert rows[0]["frames"] == 19


def test_folder_with_a_bad_trial_goes_on(case, tmp_path, capsys):
    """The folder rule (musclerl.retarget.batch): a trial that fails is listed with its reason
    and the trial after it still runs; the run succeeds (exit 0)."""
    trials = tmp_path / "trials"
    trials.mkdir()
    (trials / "a_bad.trc").write_text("PathFileType\t4\t(X/Y/Z)\ta_bad.trc\nno header\n")
    (trials / "b.trc").write_bytes(case["walk"].read_bytes())
    out = tmp_path / "out"
    options = [*_subject(case), "--out", str(out), "--start", "0.0", "--end", "0.3"]
    assert _retarget_tiny(trials, case["markers"], *options) == 0
    rows = json.loads((out / "summary.json").read_text())
    assert [r["status"] for r in rows] == ["error", "done"]
    assert rows[0]["error"].startswith(str(trials / "a_bad.trc"))
    assert f"failed: {rows[0]['error']}" in capsys.readouterr().out
    assert (out / "b.npz").exists() and not (out / "a_bad.npz").exists()


TRUNK = ("Sternum", "R.Acromium", "L.Acromium", "Top.Head")


def test_run_items_keeps_order_and_state():
    from musclerl.retarget.batch import run_items

    def run_one(item, offset, state):
        state.setdefault("items", []).append(item)
        return {"value": item + offset, "seen": list(state["items"])}

    rows = run_items([3, 1, 2], run_one, (10,), progress=False)
    assert [r["value"] for r in rows] == [13, 11, 12] and rows[2]["seen"] == [3, 1, 2]


@pytest.mark.slow
def test_folder_on_two_host_devices(case, walk, tmp_path):
    """A fresh process with two (virtual) CPU devices, the solver's chains split over them: a
    folder of 2 trials gives the poses of the one-device run (other chain cuts, same optimum)."""
    import os
    import subprocess
    import sys

    trials = tmp_path / "trials"
    trials.mkdir()
    for name in "ab":
        (trials / f"{name}.trc").write_bytes(case["walk"].read_bytes())
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    command = [
        sys.executable,
        "-c",
        "import sys; from musclerl.cli import main; sys.exit(main(sys.argv[1:]))",
        "retarget",
        "markers",
        str(trials),
        "--model",
        "tiny",
        "--markers",
        str(case["markers"]),
        *_subject(case),
        "--out",
        str(tmp_path / "out"),
    ]
    subprocess.run(command, env=env, check=True, capture_output=True)
    one_device = Trajectory.load(walk / "walk.npz").qpos
    for name in "ab":
        report = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        assert report["failed_frames"] == 0
        qpos = Trajectory.load(tmp_path / "out" / f"{name}.npz").qpos
        assert np.rad2deg(np.abs(qpos[:, 7:] - one_device[:, 7:]).max()) < 0.5


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, all_max_m, lower_max_m",
    [
        # myolegs has a rigid trunk (no lumbar joints) and the subject leans ~14 deg further forward
        # walking than standing, so the static-placed trunk markers cannot follow the walk:
        # all-marker RMS measured 44.0 mm (OpenSim: 21.9 mm with a lumbar joint); guard at 48 mm.
        # Lower body measured 12.5 mm with the hip/knee joint centres seated (OpenSim 12.0 mm):
        # the aim, OpenSim + 20 % = 14.4 mm, is the threshold.
        ("myolegs", 0.048, 0.0144),
        # myofullbody has a spine: all markers measured 23.8 mm, within the aim (OpenSim + 20 % =
        # 26.3 mm), which is the threshold here; lower body measured 12.3 mm (aim 14.4 mm).
        ("myofullbody", 0.0263, 0.0144),
    ],
)
def test_gait2354_walk_against_opensim(gait2354, tmp_path, model, all_max_m, lower_max_m):
    d = gait2354
    code = main(
        ["retarget", "markers", str(d / "subject01_walk1.trc"), "--model", model,
         "--markers", str(d / "gait2354_Scale_MarkerSet.xml"), "--static", str(d / "subject01_static.trc"),
         "--setup", str(d / "subject01_Setup_IK.xml"), "--scale-setup", str(d / "subject01_Setup_Scale.xml"),
         "--out", str(tmp_path / "walk.npz"), "--mot", str(tmp_path / "walk.mot"),
         "--report", str(tmp_path / "walk.json")]
    )  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "walk.json").read_text())
    assert all(key in report for key in REPORT_FIELDS)
    assert report["frames"] == 73 and report["failed_frames"] == 0
    assert report["joint_limit_violation_frac"] == 0.0 and report["equality_residual_max"] < 1e-6
    assert report["marker_rms_m"]["mean"] < all_max_m
    # The Trajectory walks overground (belt undone, floor at z = 0), so its sites are not the lab's
    # markers: the fit is the report's, per marker over the trial, pooled over the lower body (the
    # pooled RMS is at least the mean per-frame RMS).
    lower = [rms for name, rms in report["marker_rms_by_name_m"].items() if name not in TRUNK]
    assert np.sqrt(np.mean(np.square(lower))) < lower_max_m
    ours, ref = read_storage(tmp_path / "walk.mot"), read_storage(d / "subject01_walk1_ik.mot")
    # OpenSim's gait2354 knee is negative in flexion, the MyoSuite models' positive. Issue 11's aims:
    # hip within 5 deg RMS, knee and ankle within 4 deg, on both sides.
    for name, sign, limit in (("hip_flexion", 1, 5.0), ("knee_angle", -1, 4.0), ("ankle_angle", 1, 4.0)):
        for side in "rl":
            col = f"{name}_{side}"
            rms = np.sqrt(np.mean((ours.column(col) - sign * ref.column(col)) ** 2))
            assert rms < limit, (col, rms)


@pytest.mark.slow
def test_gait2354_treadmill_and_overground_on_the_floor(gait2354, tmp_path):
    """The shared walk is on a treadmill; the same markers carried forward at the belt's speed and
    raised 25 cm are an overground walk in another lab. Both must come out walking overground on a
    floor at z = 0 (issue 11's aims: penetration <= 5 mm, stance feet <= 5 cm/s), with the same joints."""
    d = gait2354
    trial = read_trc(d / "subject01_walk1.trc")
    moved = trial.positions_m.copy()
    moved[..., 0] += 1.13 * np.arange(trial.num_frames)[:, None] / trial.rate_hz
    moved[..., 2] += 0.25
    write_trc(tmp_path / "overground.trc", dataclasses.replace(trial, positions_m=moved))
    runs = {}
    for name, path in (("treadmill", d / "subject01_walk1.trc"), ("overground", tmp_path / "overground.trc")):
        code = main(
            ["retarget", "markers", str(path), "--model", "myolegs",
             "--markers", str(d / "gait2354_Scale_MarkerSet.xml"),
             "--static", str(d / "subject01_static.trc"), "--setup", str(d / "subject01_Setup_IK.xml"),
             "--scale-setup", str(d / "subject01_Setup_Scale.xml"),
             "--out", str(tmp_path / f"{name}.npz"), "--report", str(tmp_path / f"{name}.json")]
        )  # fmt: skip
        assert code == 0
        report = json.loads((tmp_path / f"{name}.json").read_text())
        assert report["penetration_max_m"] <= 0.005
        assert report["floor"]["stance_speed_mps"] <= 0.05 and report["skating_mps"] <= 0.05
        assert 0.3 < report["floor"]["stance_frac"] < 0.7
        runs[name] = (report, Trajectory.load(tmp_path / f"{name}.npz"))
    treadmill, overground = runs["treadmill"], runs["overground"]
    assert treadmill[0]["treadmill"]["detected"] and not overground[0]["treadmill"]["detected"]
    assert treadmill[0]["treadmill"]["belt_speed_mps"] == pytest.approx(1.13, abs=0.05)
    shift_m = treadmill[0]["floor"]["shift_m"] - 0.25  # the overground lab's floor is 25 cm higher
    assert overground[0]["floor"]["shift_m"] == pytest.approx(shift_m, abs=0.005)
    joints = np.rad2deg(np.abs(treadmill[1].qpos[:, 7:] - overground[1].qpos[:, 7:]).max())
    assert joints < 0.5
    travel = treadmill[1].qpos[:, 0] - overground[1].qpos[:, 0]
    assert np.ptp(travel) < 0.01  # the treadmill's root walks as the overground one, up to a constant
    assert treadmill[1].contact.shape == (73, 8) and treadmill[1].terrain is not None
