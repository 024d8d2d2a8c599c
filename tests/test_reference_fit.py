"""A reference's kinematics fitted to the model: the stance foot on the floor, not sliding.

On Boo-layout fixture trials (subject01's walk, ``tests/boo_fixtures.py``): the converted
Trajectory's supporting foot stands at z = 0 and stays put over its stance, the joint angles and
root orientation are the reference's (only the root translation moves), a treadmill trial gives
the overground walk, and a trial without GRF is planted from the feet's own motion. The stance
flags and shares measured against are the reference's GRF (its gait-event detector), not the
conversion's output.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from boo_fixtures import BELT_MPS, trial_arrays

from musclerl.dynamics.foot_placement import foot_track, stance_fit
from musclerl.evaluate.reference_feet import reference_support
from musclerl.evaluate.reference_motion import reference_signs, reference_trajectory
from musclerl.models.opensim_coordinates import qpos_to_coordinates
from musclerl.models.registry import load_model
from musclerl.motion.reference import read_reference

#: What "on the floor" and "not sliding" mean here (before the fit: 1.4 cm mean height, 4-5 cm of
#: slip per stance, 3 cm load-weighted).
HEIGHT_MEAN_CM = 1.0
SINGLE_SUPPORT_HEIGHT_CM = 0.5
LOADED_SLIP_CM = 2.0
SINGLE_SUPPORT_SLIP_CM = 1.0


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


@pytest.fixture(scope="module")
def trial(tmp_path_factory, gait2354):
    """A 0.95 s fixture trial with both feet on the plates (GRF valid throughout); skipped without
    the shared gait2354 walk it is made from."""
    path = tmp_path_factory.mktemp("boo") / "S901_Trial03_Step01_Step02.npz"
    arrays, _, _ = trial_arrays("S901", 2, 67.5, None, data=gait2354.parent)
    np.savez(path, **arrays)
    return read_reference(path)


def _convert(model, ref, **kwargs):
    signs, _ = reference_signs(ref, {})
    return reference_trajectory(model, "myolegs", ref, signs, "ref.npz", **kwargs)


def _fit(model, ref, traj):
    """(StanceFit over the reference's GRF stances, per-foot slip (cm) summed over single-support
    steps, the single-support heights (cm))."""
    track = foot_track(model, traj.qpos)
    support, stance, _ = reference_support(ref, track, traj.rate_hz)
    single = (support >= 0.95) & stance
    step_cm = 100 * np.linalg.norm(track.step_m, axis=-1)
    single_steps = single[:-1] & single[1:]
    slip_single_cm = (step_cm[:-1] * single_steps).sum(axis=0)
    return (
        stance_fit(track, stance, traj.rate_hz, support=support),
        slip_single_cm,
        100 * np.abs(track.height_m[single]),
    )


def test_stance_foot_stands_on_the_floor_without_sliding(myolegs, trial):
    before, slip_before, _ = _fit(myolegs, trial, _convert(myolegs, trial, plant=False)[0])
    traj, notes = _convert(myolegs, trial)
    after, slip_single_cm, single_cm = _fit(myolegs, trial, traj)
    assert after.stances >= 3
    assert after.height_mean_cm < HEIGHT_MEAN_CM < before.height_mean_cm
    assert single_cm.max() < SINGLE_SUPPORT_HEIGHT_CM
    assert after.loaded_slip_mean_cm < LOADED_SLIP_CM < before.loaded_slip_mean_cm
    # one foot carrying the body: held still (per foot, summed over its single-support steps)
    assert slip_single_cm.max() < SINGLE_SUPPORT_SLIP_CM < slip_before.max()
    assert any(n.startswith("pelvis translations scaled by the leg-length ratio 0.9") for n in notes)
    assert any("support from the reference's GRF (plates layout)" in n for n in notes)
    # the root's velocity stays a walk's: no jumps from the correction
    vel_mps = np.diff(traj.qpos[:, :3], axis=0) * traj.rate_hz
    assert np.abs(np.diff(vel_mps, axis=0)).max() * traj.rate_hz < 30.0  # m/s^2


def test_only_the_root_translation_changes(myolegs, trial):
    plain = _convert(myolegs, trial, plant=False)[0].qpos
    fitted = _convert(myolegs, trial)[0].qpos
    names, want = qpos_to_coordinates(myolegs, plain)
    _, got = qpos_to_coordinates(myolegs, fitted, names)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fitted[:, 3:], plain[:, 3:])  # orientation and every joint
    assert np.abs(fitted[:, :3] - plain[:, :3]).max() > 0.01


def test_treadmill_trial_walks_overground(myolegs, trial):
    """The same walk with the belt left in (the stance foot moving backward at the belt's speed):
    with ``treadmill``, the planted Trajectory is the overground one."""
    col = list(trial.joint_angle_columns).index("pelvis_tx")
    angles = trial.joint_angle.copy()
    angles[:, col] -= BELT_MPS * trial.time_sec
    on_belt = dataclasses.replace(trial, joint_angle=angles)
    overground = _convert(myolegs, trial)[0].qpos
    traj, notes = _convert(myolegs, on_belt, treadmill=True)
    assert any(n.startswith("treadmill belt velocity (-1.0") for n in notes)
    np.testing.assert_allclose(traj.qpos[:, :3], overground[:, :3], atol=0.01)
    after, slip_single_cm, _ = _fit(myolegs, on_belt, traj)
    assert after.height_mean_cm < HEIGHT_MEAN_CM and slip_single_cm.max() < SINGLE_SUPPORT_SLIP_CM
    assert traj.qpos[-1, 0] - traj.qpos[0, 0] > 0.8  # walks forward about a metre in 0.95 s


def test_without_grf_the_feet_decide(myolegs, trial):
    no_grf = dataclasses.replace(
        trial,
        computed_grf=np.zeros((trial.num_frames, 0)),
        computed_grf_columns=(),
    )
    traj, notes = _convert(myolegs, no_grf)
    assert any("support from the feet's motion on the model (no GRF)" in n for n in notes)
    assert any("floor: OpenSim's ground" in n for n in notes)
    after, _, _ = _fit(myolegs, trial, traj)  # measured on the GRF's stances all the same
    assert after.height_mean_cm < HEIGHT_MEAN_CM
    assert after.loaded_slip_mean_cm < LOADED_SLIP_CM
