"""Boo_LevelWalking-style datasets as users receive them: files written from the shared OpenSim
outputs by :mod:`boo_fixtures` (not by musclerl), read, found in subject folders and evaluated."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import warnings

import numpy as np
import pytest
from boo_fixtures import write_dataset

from musclerl.cli import main
from musclerl.evaluate import compare, metrics
from musclerl.evaluate.coordinates import detect_sign_map
from musclerl.evaluate.folder import plan
from musclerl.evaluate.reference_motion import reference_signs
from musclerl.motion.reference import read_reference
from musclerl.motion.storage import read_storage
from musclerl.resources import assets_dir
from musclerl.rl.rollout import Recording

POLICY = assets_dir() / "policies" / "myolegs_walk"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, request):
    """Two subject folders of three trials: left leg off the plates in trial 0 of S901, right in
    trial 1, none in trial 2 (then the pattern goes on in S902)."""
    shared = request.getfixturevalue("gait2354").parent
    if not (shared / "opensim_gait2392_so").is_dir():
        pytest.skip("opensim_gait2392_so data not present")
    root = tmp_path_factory.mktemp("boo") / "ROOT"
    write_dataset(root, subjects=2, trials=3, data=shared)
    return root


def _legs(ref, side: str) -> list[int]:
    return [k for k, c in enumerate(ref.joint_torque_columns) if c.endswith(f"_{side}_moment")]


def test_dataset_files_read_without_warning(dataset):
    paths = sorted(dataset.rglob("*.npz"))
    assert [p.parent.name for p in paths] == ["S901"] * 3 + ["S902"] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        refs = [read_reference(p) for p in paths]
    ref = refs[0]
    assert ref.subject == "S901" and ref.trial == "Trial01" and ref.step_label == "Step01_Step02"
    np.testing.assert_array_equal(ref.timestep, np.arange(ref.num_frames))
    assert ref.time_sec[0] == 0.0 and ref.id_source_time_sec.shape != ref.time_sec.shape
    # trial 0: the left leg (and the pelvis) invalid in a window, the right leg valid throughout
    left, right = _legs(ref, "l"), _legs(ref, "r")
    assert ref.joint_torque_column_valid[:, right].all()
    window = ~ref.joint_torque_column_valid[:, left].all(axis=1)
    assert 0 < window.sum() < ref.num_frames and np.isnan(ref.joint_torque[window][:, left]).all()
    assert not ref.joint_torque_valid[window].any() and ref.joint_torque_valid[~window].all()
    lumbar = ref.joint_torque_columns.index("lumbar_extension_moment")
    assert ref.joint_torque_column_valid[:, lumbar].all()
    # trial 1: the right leg instead; trial 2: every column valid
    assert not refs[1].joint_torque_column_valid[:, _legs(refs[1], "r")].all()
    assert refs[1].joint_torque_column_valid[:, _legs(refs[1], "l")].all()
    assert refs[2].joint_torque_valid.all()
    # the muscles of the off-plate leg are NaN in the .sto, the other leg's are not
    act = read_storage(paths[0].with_name(paths[0].stem + "_muscle_activation.sto"))
    assert act.num_rows == ref.num_frames
    assert np.isnan(act.column("soleus_l")[window]).all() and np.isfinite(act.column("soleus_r")).all()


def test_info_reads_a_dataset_file(dataset, capsys):
    path = next((dataset / "S902").glob("*.npz"))
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "reference: 58 frames at 60 Hz" in out and "subject: S902" in out


def test_info_summarises_a_dataset_root(dataset, tmp_path, capsys):
    assert main(["info", str(dataset), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["trials"] == 6 and list(info["subjects"]) == ["S901", "S902"]
    s901 = info["subjects"]["S901"]
    assert s901["activation_files"] == 3 and s901["rates_hz"] == [60.0]
    assert 0.5 < s901["torque_rows_valid"] < s901["torque_samples_valid"] < 1.0
    assert info["unreadable"] == [] and info["earlier_layout_files"] == 0
    assert main(["info", str(dataset / "S902")]) == 0
    assert capsys.readouterr().out.startswith("reference dataset: 3 trials of 1 subject(s)")


def test_references_found_in_roots_folders_globs_and_lists(dataset, tmp_path):
    def names(ref, **kw):
        return [t.name for t in plan(None, ref, **kw)[0]]

    every = names(str(dataset))
    assert len(every) == 6 and every[0] == "S901_Trial01_Step01_Step02"
    assert all(t.activations is not None for t in plan(None, str(dataset))[0])
    assert names(str(dataset / "S902")) == every[3:]
    assert names(str(dataset / "S9*" / "*Trial02*.npz")) == [every[1], every[4]]
    assert names([str(dataset / "S901"), str(dataset / "S902" / f"{every[5]}.npz")]) == every[:3] + every[5:]
    # an output folder inside the root is not searched
    (dataset / "ev" / "trials" / "x").mkdir(parents=True)
    np.savez(dataset / "ev" / "trials" / "x" / "recording.npz", a=np.zeros(1))
    assert names(str(dataset), exclude=dataset / "ev") == every
    shutil.rmtree(dataset / "ev")
    # the same stem in two folders: named by folder
    twin = tmp_path / "twin"
    for sub in ("A", "B"):
        (twin / sub).mkdir(parents=True)
        shutil.copy(next((dataset / "S901").glob("*.npz")), twin / sub / "t.npz")
    assert names(str(twin)) == ["A_t", "B_t"]


def _recording(ref, sim_torque: np.ndarray) -> Recording:
    """A stand-in rollout whose coordinates are the reference's torque columns, on its timeline."""
    coords = tuple(compare.coordinate_of(c) for c in ref.joint_torque_columns)
    n, k = sim_torque.shape
    zeros = np.zeros((n, 0))
    return Recording(
        time_s=ref.time_sec,
        coordinates=coords,
        angle=np.zeros((n, k)),
        pelvis=np.zeros((n, 6)),
        torque_nm=sim_torque,
        muscles=(),
        excitation=zeros,
        activation=zeros,
        force_n=zeros,
        feet=(),
        grf_n=np.zeros((n, 0, 3)),
        site_names=(),
        site_err_m=zeros,
        mpjpe_m=np.zeros(n),
        mpjpe_local_m=np.zeros(n),
        early_termination=False,
        model_mass_kg=1.0,
        control_dt_s=float(ref.time_sec[1]),
    )


def test_per_column_masks_use_one_leg_while_the_other_is_off_the_plates(dataset):
    """Trial 0: the left leg is invalid in a window. A simulation equal to the reference outside
    that window and far off inside it: the left leg's r stays 1 (its window samples are not
    used), the right leg's drops (its window samples are)."""
    ref = read_reference(next((dataset / "S901").glob("*Trial01*.npz")))
    left = ref.joint_torque_columns.index("hip_flexion_l_moment")
    right = ref.joint_torque_columns.index("hip_flexion_r_moment")
    window = ~ref.joint_torque_column_valid[:, left]
    clean = np.nan_to_num(ref.joint_torque)
    sim = clean.copy()
    sim[window] += 5.0 * np.abs(clean).max()
    series = {s.name: s for s in compare.torque_series(_recording(ref, sim), ref)}
    got = {s.name: metrics.column_metrics(s.name, s.sim, s.ref, 60.0, s.valid) for s in series.values()}
    assert got["hip_flexion_l"].n_valid == ref.num_frames - window.sum()
    assert got["hip_flexion_r"].n_valid == ref.num_frames
    assert got["hip_flexion_l"].r == pytest.approx(1.0)
    assert got["hip_flexion_r"].r < 0.9
    # rows of joint_torque_valid alone would have dropped the right leg's window too
    assert int(ref.joint_torque_valid.sum()) < got["hip_flexion_r"].n_valid
    assert right != left
    # --sim-torque-mass subject: the policy's torques over the subject's mass instead of the model's
    heavy = compare.torque_series(_recording(ref, sim), ref, sim_mass_kg=2.0)
    np.testing.assert_allclose(heavy[0].sim, series[heavy[0].name].sim / 2.0)


def test_gait120_signs_detected_and_overridden(dataset, gait2354):
    ref = read_reference(next((dataset / "S902").glob("*Trial03*.npz")))
    signs, notes = reference_signs(ref, {})
    flipped = {k for k, v in signs.items() if v < 0}
    assert {"knee_angle_r", "knee_angle_l", "hip_adduction_l", "hip_rotation_l"} <= flipped
    assert {"hip_adduction_l_moment", "knee_angle_r_moment"} <= flipped
    assert sum(n.startswith("sign flip:") for n in notes) == 3  # two knees, one left hip
    # gait2354 (the same walk, left hip not mirrored): the knees only
    ik = read_storage(gait2354 / "subject01_walk1_ik.mot")
    assert set(detect_sign_map(list(ik.columns), ik.data)[0]) == {"knee_angle_r", "knee_angle_l"}
    # the data of Rajagopal's own conventions: nothing flipped
    plain = dataclasses.replace(
        ref, joint_angle=ref.joint_angle * np.array([signs.get(c, 1.0) for c in ref.joint_angle_columns])
    )
    assert reference_signs(plain, {})[0] == {}
    # --ref-sign overrides detection, and says so
    assert reference_signs(ref, {"knee_angle_r": -1.0}) == (
        {"knee_angle_r": -1.0},
        ["sign flip: knee_angle_r multiplied by -1 (--ref-sign)"],
    )


def test_evaluate_a_dataset_root_and_resume(dataset, tmp_path, capsys):
    # one trial has EMG beside it (an envelope made from its activations), compared via --emg-map
    ref_path = next((dataset / "S902").glob("*Trial01*.npz"))
    act = read_storage(ref_path.with_name(ref_path.stem + "_muscle_activation.sto"))
    rows = [
        f"{t:.6f},{np.nan_to_num(a):.6f}" for t, a in zip(act.time_s, act.column("soleus_r"), strict=True)
    ]
    emg = ref_path.with_name(ref_path.stem + "_emg.csv")
    emg.write_text("time,SOL\n" + "\n".join(rows) + "\n")
    emg_map = tmp_path / "emg.yaml"
    emg_map.write_text("SOL: soleus_r\n")
    out = tmp_path / "ev"
    args = ["evaluate", str(POLICY), "--reference", str(dataset), "--max-steps", "4", "--jobs", "1"]
    args += ["--emg-map", str(emg_map), "--emg-processed"]
    assert main([*args, "--out", str(out)]) == 0
    emg_rows = [r for r in csv.DictReader(open(out / "columns.csv")) if r["kind"] == "emg"]
    assert [(r["trial"], r["column"]) for r in emg_rows] == [(ref_path.stem, "SOL (soleus_r)")]
    emg.unlink()
    trials = list(csv.DictReader(open(out / "trials.csv")))
    assert len(trials) == 6 and {r["status"] for r in trials} == {"done"}
    assert {r["subject"] for r in trials} == {"S901", "S902"}
    assert all(r["tracked_to_end"] == "False" for r in trials)  # 4 control steps of a 0.95 s trial
    subjects = list(csv.DictReader(open(out / "subjects.csv")))
    assert [(r["subject"], r["trials"]) for r in subjects] == [("S901", "3"), ("S902", "3")]
    report = (out / "report.md").read_text()
    assert (
        "| kinematics r | level walking (Gait120) |" in report
        and "| 0.94 |" in report
        and "| 0.71 |" in report
    )
    assert (
        "## Published figures beside the same computation" in report and "## Gait events per foot" in report
    )
    assert "Tracked to the end: 0 of 6 trials." in report and "## Sign conventions" in report
    doc = json.loads((out / "summary.json").read_text())
    assert doc["sign_flips"] == {
        "hip_adduction_l, hip_rotation_l multiplied by -1 (detected)": 6,
        "knee_angle_l multiplied by -1 (detected)": 6,
        "knee_angle_r multiplied by -1 (detected)": 6,
    }
    # every limited joint's share of frames on a bound the motion keeps clear of, across trials
    parked = {g["metric"] for g in doc["gait"] if g["metric"].startswith("at_bound_beyond_motion_frac_")}
    assert {"at_bound_beyond_motion_frac_knee_angle_r", "at_bound_beyond_motion_frac_mtp_angle_l"} <= parked
    columns = list(csv.DictReader(open(out / "columns.csv")))
    assert any(r["kind"] == "activation" and r["column"] == "soleus_r" for r in columns)
    # resume: a trial lost in a crash is evaluated again, the others are kept
    first = (out / "trials" / trials[0]["trial"] / "result.json").read_text()
    shutil.rmtree(out / "trials" / trials[4]["trial"])
    capsys.readouterr()
    assert main([*args, "--resume", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "6 trials evaluated (5 kept from an earlier run)" in said
    assert (out / "trials" / trials[4]["trial"] / "result.json").is_file()
    assert (out / "trials" / trials[0]["trial"] / "result.json").read_text() == first
    assert len(list(csv.DictReader(open(out / "trials.csv")))) == 6
    # a folder holding other files (a subject's data, say) is not replaced
    (tmp_path / "S999").mkdir()
    (tmp_path / "S999" / "mine.npz").write_bytes(b"x")
    assert main([*args, "--out", str(tmp_path / "S999")]) == 2
    assert "holds files that no evaluation wrote (mine.npz)" in capsys.readouterr().err
    assert (tmp_path / "S999" / "mine.npz").is_file()
    # other settings cannot be resumed into the same folder
    args[args.index("--max-steps") + 1] = "5"
    assert main([*args, "--resume", "--out", str(out)]) == 2
    assert "earlier run used other settings (max_steps)" in capsys.readouterr().err


def test_gait120_preset_is_what_detection_finds(dataset):
    from musclerl.cli.evaluate import _signs

    ref = read_reference(next((dataset / "S901").glob("*Trial02*.npz")))
    detected, _ = reference_signs(ref, {})
    preset = _signs(["gait120"])
    present = set(ref.joint_angle_columns) | set(ref.joint_torque_columns)
    assert {k for k, v in preset.items() if v < 0} == {
        k for k, v in detected.items() if v < 0 and k in present
    }
    # a preset and a column given together: the column wins where it is given after the preset
    assert _signs(["gait120", "knee_angle_r=+1"])["knee_angle_r"] == 1.0


@pytest.mark.parametrize("trial", ["walking2", "walkingTI1", "squats1"])
def test_left_hip_detection_on_another_labs_trials(shared_data, trial):
    """OpenCap expert IK (Rajagopal's signs): nothing flipped; with the left hip mirrored as
    Gait120's, both left hip axes are flipped back. Sit-to-stand, whose adduction patterns do
    not decide it, is left alone and says so."""
    folder = shared_data / "opencap_expert1"
    if not folder.is_dir():
        pytest.skip("opencap_expert1 data not present")
    table = read_storage(folder / f"{trial}.mot")
    cols, values = list(table.columns), np.array(table.data, dtype=float)
    assert detect_sign_map(cols, values)[0] == {}
    for name in ("hip_adduction_l", "hip_rotation_l"):
        values[:, cols.index(name)] *= -1
    assert detect_sign_map(cols, values)[0] == {"hip_adduction_l": -1.0, "hip_rotation_l": -1.0}
    sts = read_storage(folder / "STS1.mot")
    signs, notes = detect_sign_map(list(sts.columns), sts.data)
    assert signs == {} and any("do not decide the sign" in n for n in notes)
