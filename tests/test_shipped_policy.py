"""The policies shipped in ``assets/policies/`` (the walker, ``myolegs_walk``, and the generalist
trained on many people, ``myolegs_walk_general``) load, act in their action space, and
``musclerl evaluate`` / ``bench learn`` roll them out on the bundled walk out of the box."""

from __future__ import annotations

import json

import numpy as np
import pytest

from musclerl import load_policy
from musclerl.cli import main
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory
from musclerl.resources import assets_dir

POLICIES = [assets_dir() / "policies" / name for name in ("myolegs_walk", "myolegs_walk_general")]
WALK = assets_dir() / "motions" / "walk_myolegs.npz"


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: p.name)
def test_shipped_policy_records_its_action_space_and_training(path):
    policy = load_policy(path)
    cfg = policy.config
    assert cfg["train_config"]["env"]["action"]["space"] == "joint_reference_pd"
    assert policy.action_size == 14 and np.all(policy.bounds.low == -1) and np.all(policy.bounds.high == 1)
    assert cfg["env_steps"] > 1_000_000  # a trained policy, not an untrained export


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: p.name)
def test_evaluate_runs_the_shipped_policy(tmp_path, path):
    out = tmp_path / "eval"
    assert main(["evaluate", str(path), "--motion", str(WALK), "--max-steps", "50", "--out", str(out)]) == 0
    doc = json.loads((out / "metrics.json").read_text())
    with np.load(out / "recording.npz") as z:
        assert z["excitation"].shape == (51, 80)
        assert np.all((z["excitation"] >= 0) & (z["excitation"] <= 1))
    tracking = doc["tracking"]
    # 50 control steps at the policy's 50 Hz from t = 0: the walker does not fall, and its site error
    # meets the tracking aim (MPJPE <= 5 cm)
    assert tracking["early_terminations"] == 0 and tracking["success_rate"] == 1.0
    assert tracking["duration_s"] == pytest.approx(
        50 / load_policy(path).config["train_config"]["env"]["control_hz"]
    )
    assert tracking["mpjpe_global_m"] <= 0.05
    # the recorded joint angles follow the clip itself, read here from the Trajectory (not the env):
    # the kinematics aim, r >= 0.9 at each sagittal joint and >= 0.95 on average
    model = load_model("myolegs")
    clip = Trajectory.load(WALK)
    with np.load(out / "recording.npz") as z:
        names, angle_deg, time_s = list(z["coordinates"]), z["angle"], z["time_s"]
    period_s = clip.num_frames / clip.rate_hz
    r = {}
    for name in ("hip_flexion_r", "hip_flexion_l", "knee_angle_r", "knee_angle_l"):
        clip_rad = clip.qpos[:, model.jnt_qposadr[model.joint(name).id]]
        ref_rad = np.interp(time_s, np.arange(clip.num_frames) / clip.rate_hz, clip_rad, period=period_s)
        r[name] = np.corrcoef(ref_rad, angle_deg[:, names.index(name)])[0, 1]
    assert min(r.values()) >= 0.9 and np.mean(list(r.values())) >= 0.95, r
    # the report compares the same angles itself when only a motion is given (the clip is the reference)
    reported = {c["column"]: c["r"] for c in doc["columns"] if c["kind"] == "angle"}
    for name, value in r.items():
        assert reported[name] == pytest.approx(value, abs=1e-6), name


def test_generalist_names_its_training_data():
    """CMU asks every user of its data for an acknowledgement; the policy trained on it carries it,
    and a table of every training trial, beside the weights (what may ship with them)."""
    text = (POLICIES[1] / "DATA.md").read_text()
    assert "obtained from mocap.cs.cmu.edu" in text and "NSF EIA-0196217" in text
    assert "data/cmu/" in load_policy(POLICIES[1]).config["train_config"]["motion"]["clips"]
    for trial in ("07_06", "16_21", "35_07", "37_01", "39_05", "55_04", "132_21", "humanoid3d_walk"):
        assert f"| {trial} |" in text, trial


def test_bench_learn_names_how_to_make_a_missing_training_set(tmp_path, monkeypatch, capsys):
    """The generalist's own training set (the retargeted CMU walks) is not shipped: ``bench learn``
    on it says in one line how to make it or which flag tests another set, and exits 2."""
    monkeypatch.chdir(tmp_path)  # no data/cmu/ here
    assert main(["bench", "learn", "--policy", str(POLICIES[1]), "--seconds", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data/cmu" in err
    assert "musclerl retarget smpl" in err and "--motion" in err


@pytest.mark.xfail(
    strict=True,
    reason="the bundled walk was re-fit with its toes free (2026-12-07) after this generalist trained "
    "on the old fit; it tracks the new one 8.9 s of 10 (root deviation), the old one 10 s; a "
    "generalist fine-tuned on the re-fit walk tracks it but lost 2 validation walks "
    "(docs/measurements.md, 'The bundled walk's toes re-fit')",
)
def test_bench_learn_tracks_the_bundled_walk_with_the_generalist(capsys):
    """Out of the box the generalist tracks the bundled walk (one of its training clips) 10 s from
    t = 0 with MPJPE <= 5 cm (the tracking aim)."""
    args = ["bench", "learn", "--policy", str(POLICIES[1]), "--motion", str(WALK), "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["success"] and result["mpjpe_m"] <= 0.05


def test_shipped_names_work_from_any_directory(tmp_path, monkeypatch):
    """The README's commands name ``assets/policies/...`` and ``assets/motions/...``: from a wheel
    install, or any other working directory, those are the bundled files."""
    monkeypatch.chdir(tmp_path)
    name, walk = "assets/policies/myolegs_walk_general", "assets/motions/walk_myolegs.npz"
    assert load_policy(name).path == POLICIES[1]
    assert main(["evaluate", name, "--motion", walk, "--max-steps", "5", "--out", "ev"]) == 0
    assert (tmp_path / "ev" / "report.md").is_file()


def test_a_trial_tracked_to_its_last_control_step_counts_as_tracked_to_the_end(tmp_path):
    """A clip that does not loop ends where the environment ends it, its last whole control step;
    no early termination there is a trial tracked to the end, whatever the clip's length in
    control periods (a 1.19 s trial ends at 1.16 s at 50 Hz)."""
    import dataclasses

    walk = Trajectory.load(WALK)
    n = 17  # 0.533 s at 30 Hz: not a whole number of 20 ms control steps
    cut = dataclasses.replace(
        walk,
        qpos=walk.qpos[:n],
        qvel=walk.qvel[:n],
        site_pos_m=None if walk.site_pos_m is None else walk.site_pos_m[:n],
        contact=None if walk.contact is None else walk.contact[:n],
        clip_loop=np.zeros(1, dtype=bool),
    )
    cut.save(tmp_path / "cut.npz")
    out = tmp_path / "eval"
    assert main(["evaluate", str(POLICIES[0]), "--motion", str(tmp_path / "cut.npz"), "--out", str(out)]) == 0
    tracking = json.loads((out / "metrics.json").read_text())["tracking"]
    assert tracking["early_terminations"] == 0 and tracking["tracked_to_end"]
