"""Batched LM IK: synthetic truth (known smooth motion -> noisy markers -> recovered coordinates)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.retarget.constraints import JointEqualities, JointLimits, Smoothness
from musclerl.retarget.kinematics import KinematicTree
from musclerl.retarget.solver import IKProblem, solve_clip
from musclerl.retarget.synthetic import synthetic_clip
from musclerl.retarget.tasks import CoordinateTask, MarkerTask, PostureTask


def _problem(model, clip, extra_tasks=()):
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    markers = MarkerTask(tree, clip.marker_bodies, clip.local_points_m)
    return IKProblem(tree, [markers, PostureTask(model.qpos0, 1e-6), *extra_tasks],
                     [JointLimits(model), JointEqualities(model), Smoothness(1e-4)])


def _check_truth(model, clip, result, max_rms_deg):
    limits, equalities = JointLimits(model), JointEqualities(model)
    err_deg = np.degrees(result.q[:, clip.coord_qadr] - clip.q[:, clip.coord_qadr])
    assert np.sqrt(np.mean(err_deg ** 2)) < max_rms_deg
    assert result.converged.all(), result.failed_frames
    assert not result.timed_out.any()
    assert limits.violation(result.q, skip_qadr=equalities.dep_qadr).max() == 0.0
    assert equalities.residual_max(result.q) <= 1e-6
    # 2 mm noise per axis -> about 3.5 mm RMS marker error at the true pose.
    assert np.nanmean(result.residual_m) < 0.005


def test_synthetic_truth_tiny():
    model = load_model("tiny")
    clip = synthetic_clip(model, n_frames=24, noise_m=0.002, seed=0)
    result = solve_clip(_problem(model, clip), {"markers": clip.markers_m}, model.qpos0, chunk_len=8)
    _check_truth(model, clip, result, max_rms_deg=1.0)


def test_synthetic_truth_myolegs_short():
    model = load_model("myolegs")
    clip = synthetic_clip(model, n_frames=16, noise_m=0.002, seed=1)
    result = solve_clip(_problem(model, clip), {"markers": clip.markers_m}, model.qpos0, chunk_len=8)
    _check_truth(model, clip, result, max_rms_deg=1.0)


@pytest.mark.slow
def test_synthetic_truth_myolegs_full_clip():
    model = load_model("myolegs")
    clip = synthetic_clip(model, n_frames=600, noise_m=0.002, seed=2)
    result = solve_clip(_problem(model, clip), {"markers": clip.markers_m}, model.qpos0)
    _check_truth(model, clip, result, max_rms_deg=1.0)


def test_missing_markers_and_coordinate_task():
    model = load_model("tiny")
    clip = synthetic_clip(model, n_frames=8, noise_m=0.0, seed=3)
    markers = clip.markers_m.copy()
    markers[:, 0] = np.nan  # one marker never seen
    ankle = {"ankle_angle_r": 0.2}
    problem = _problem(model, clip, [CoordinateTask(ankle, weight=1e-2)])
    result = solve_clip(problem, {"markers": markers}, model.qpos0, chunk_len=4)
    assert result.converged.all()
    assert np.all(np.isfinite(result.residual_m))
    assert result.residual_m.max() < 0.01


def test_bad_targets_raise_input_error():
    model = load_model("tiny")
    clip = synthetic_clip(model, n_frames=4, noise_m=0.0, seed=4)
    problem = _problem(model, clip)
    with pytest.raises(InputError, match="markers"):
        solve_clip(problem, {"markers": clip.markers_m[:, :-1]}, model.qpos0)
    with pytest.raises(InputError, match="missing targets"):
        solve_clip(problem, {}, model.qpos0)
    with pytest.raises(InputError, match="no task or constraint"):
        solve_clip(problem, {"markers": clip.markers_m, "typo": clip.markers_m}, model.qpos0)


def test_iteration_limit_reports_not_converged():
    model = load_model("tiny")
    clip = synthetic_clip(model, n_frames=4, noise_m=0.002, seed=5)
    result = solve_clip(_problem(model, clip), {"markers": clip.markers_m}, model.qpos0,
                        cold_iters=1, max_iters=1, chunk_len=2)
    assert not result.converged.all()
    assert set(result.failed_frames) == set(np.flatnonzero(~result.converged))


def test_joint_equalities_follow_mujoco_definition():
    model = load_model("myolegs")
    eq = JointEqualities(model)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(6)
    q = model.qpos0.copy()
    knee = [model.jnt_qposadr[model.joint(n).id] for n in ("knee_angle_r", "knee_angle_l")]
    q[knee] = rng.uniform(0.1, 2.0, size=2)
    q[eq.dep_qadr] = eq.dependent_values(q)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    joint_rows = data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    assert joint_rows.sum() == len(eq.dep_qadr)
    assert np.abs(data.efc_pos[joint_rows]).max() < 1e-12
