"""The README's dataset chain, each link through the CLI on the tiny model:

    musclerl retarget smpl SMPL/ --model tiny --no-ground --out CLIPS/
    musclerl train --config configs/tiny.yaml --out RUN motion=CLIPS/ ...
    musclerl evaluate RUN/policy --motion CLIPS/ --out EVAL

Fast tests check each link on its own input (two generated SMPL walks retargeted; conftest's
``tiny_folder_run`` trained on a folder of generated tiny clips, then evaluated on that folder);
the slow test runs the whole chain from the retargeted folder (the retarget link compiles tiny's
IK problem: most of its time).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from run_samples import train_tiny

from musclerl.cli import main
from musclerl.dynamics.screening import load_dataset
from musclerl.models.registry import load_model
from musclerl.retarget.synthetic import gait as sg
from musclerl.retarget.synthetic.smpl import smpl_walk, write_walk_npz

MAX_STEPS = 10


@pytest.fixture(scope="module")
def retargeted(tmp_path_factory):
    """Two generated SMPL walks on flat ground (different step lengths), retargeted as a folder."""
    from musclerl.jax_setup import configure_compilation_cache

    root = tmp_path_factory.mktemp("chain")
    smpl = root / "smpl"
    smpl.mkdir()
    for name, step_m in (("walk_short", 0.32), ("walk_long", 0.42)):
        params = sg.GaitParams(
            rate_hz=30.0, step_length_m=step_m, stance_width_m=0.16, ankle_height_m=0.07, n_steps=3
        )
        write_walk_npz(smpl / f"{name}.npz", smpl_walk(sg.flat_course(), params))
    clips = root / "clips"
    with pytest.MonkeyPatch.context() as patch:  # a compilation cache private to this module
        patch.setenv("MUSCLERL_CACHE", str(root / "jax_cache"))
        configure_compilation_cache()
        args = ["retarget", "smpl", str(smpl), "--model", "tiny", "--no-ground", "--out", str(clips)]
        assert main(args) == 0
    return clips


def _evaluate(policy: Path, motion: Path, out: Path) -> list[dict]:
    args = ["evaluate", str(policy), "--motion", f"{motion}/", "--max-steps", str(MAX_STEPS)]
    assert main([*args, "--jobs", "1", "--out", str(out)]) == 0
    return list(csv.DictReader(open(out / "trials.csv")))


def test_retarget_a_folder_gives_a_training_dataset(retargeted):
    """Link 1: every motion of the folder is retargeted and the output folder is a dataset."""
    rows = {r["trial"]: r for r in json.loads((retargeted / "summary.json").read_text())}
    assert {k: r["status"] for k, r in rows.items()} == {"walk_long.npz": "done", "walk_short.npz": "done"}
    for r in rows.values():
        assert r["failed_frames"] == 0 and r["joint_limit_violation_frac"] == 0.0
        assert r["marker_rms_m"] < 0.03  # tiny's skeleton is cruder than SMPL's (as in test_retarget_smpl)
    dataset = load_dataset(str(retargeted), load_model("tiny"), "tiny")
    assert dataset.clip_names == ("walk_long", "walk_short") and dataset.trajectory.terrain is None
    traj = dataset.trajectory
    assert np.all(np.diff(np.r_[traj.clip_starts, traj.num_frames]) / traj.rate_hz > 1.0)


def test_train_on_a_folder(tiny_folder_run, tiny_clip_folder):
    """Link 2: one run on every clip of the folder, with per-clip results."""
    out, summary = tiny_folder_run
    clips = summary["clip_results"]["clips"]
    assert set(clips) == {"s0", "s1"}
    assert sum(c["steps"] for c in clips.values()) == summary["env_steps"] == 256
    policy_cfg = json.loads((out / "policy" / "config.json").read_text())
    assert policy_cfg["train_config"]["motion"] == str(tiny_clip_folder)


def test_evaluate_on_a_folder(tiny_folder_run, tiny_clip_folder, tmp_path):
    """Link 3: every motion of the folder evaluated, per-trial outputs and the tables."""
    out, _ = tiny_folder_run
    trials = _evaluate(out / "policy", tiny_clip_folder, tmp_path / "eval")
    assert [(r["trial"], r["status"]) for r in trials] == [("s0", "done"), ("s1", "done")]
    for r in trials:
        assert 1 < int(r["frames"]) <= MAX_STEPS + 1 and float(r["mpjpe_global_m"]) >= 0.0
        doc = json.loads((tmp_path / "eval" / "trials" / r["trial"] / "metrics.json").read_text())
        assert doc["tracking"]["frames"] == int(r["frames"])
    agg = {(r["kind"], r["metric"]) for r in csv.DictReader(open(tmp_path / "eval" / "aggregate.csv"))}
    assert ("tracking", "mpjpe_global_m") in agg
    assert "2 trials evaluated, 0 failed" in (tmp_path / "eval" / "report.md").read_text()


@pytest.mark.slow
def test_chain_retarget_train_evaluate(retargeted, tmp_path):
    """The whole chain: the retargeted folder trains one run and is evaluated in one command."""
    summary = train_tiny(retargeted, tmp_path / "run")
    assert set(summary["clip_results"]["clips"]) == {"walk_long", "walk_short"}
    trials = _evaluate(tmp_path / "run" / "policy", retargeted, tmp_path / "eval")
    assert {(r["trial"], r["status"]) for r in trials} == {("walk_long", "done"), ("walk_short", "done")}
