"""Time-scaling augmentation (musclerl.envs.time_scale) on myolegs' bundled walk: the scaled
clip stays on the model's manifold (unit root quaternions, joint equalities held), is the
source's path at the scaled time, and its speed and velocities are scaled."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from musclerl.dynamics.screening import load_dataset
from musclerl.envs.time_scale import check_scales, time_scaled, with_time_scales
from musclerl.errors import InputError
from musclerl.models.couplings import couplings, equality_residual, independent_coordinates
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[1]
WALK = REPO / "assets" / "motions" / "walk_myolegs.npz"


@pytest.fixture(scope="module")
def model():
    return load_model("myolegs")


@pytest.fixture(scope="module")
def walk():
    return Trajectory.load(WALK)


def _speed_mps(traj: Trajectory, loop: bool) -> float:
    """Mean ground-plane root speed: travel over the clip's time (a loop: one period)."""
    n = traj.num_frames
    travel = traj.qpos[-1, :2] - traj.qpos[0, :2]
    if loop:  # the last interval runs to the first frame of the next cycle
        travel = travel + traj.qvel[-1, :2] / traj.rate_hz
    return float(np.linalg.norm(travel) / ((n if loop else n - 1) / traj.rate_hz))


@pytest.mark.parametrize("loop", [True, False])
@pytest.mark.parametrize("scale", [0.8, 1.2])
def test_scaled_clip_stays_on_the_manifold_with_its_speed_scaled(model, walk, scale, loop):
    clip = dataclasses.replace(walk, clip_loop=np.array([loop]))
    fast = time_scaled(clip, model, scale)
    n = clip.num_frames
    # whole frames nearest the scaled length: a loop's period, the intervals of a clip that does not loop
    intervals = fast.num_frames - (0 if loop else 1)
    assert abs(intervals - (n - (0 if loop else 1)) / scale) <= 0.5 + 1e-6 and fast.rate_hz == clip.rate_hz
    # on the manifold: unit root quaternion, every joint equality exactly held
    np.testing.assert_allclose(np.linalg.norm(fast.qpos[:, 3:7], axis=1), 1.0, atol=1e-12)
    assert np.abs(equality_residual(couplings(model), fast.qpos)).max() < 1e-12
    # the source's path at the scaled time: frame k is the source's pose at source frame
    # f_k = k * (source frames / scaled frames), whole frames per clip (a loop: per period), i.e.
    # ~ scale * k; the independent coordinates are scalar joints, interpolated linearly between frames
    ids = [model.joint(j).qposadr[0] for j in independent_coordinates(model)]
    count = fast.num_frames
    f = np.arange(count) * (n / count if loop else (n - 1) / (count - 1))
    assert np.allclose(f[1:] / np.arange(1, count), scale, rtol=0.02)
    src = np.vstack([clip.qpos, clip.qpos[:1]]) if loop else clip.qpos
    for i in ids:
        np.testing.assert_allclose(fast.qpos[:, i], np.interp(f, np.arange(len(src)), src[:, i]), atol=1e-9)
    # speed scaled: root travel per second, and the joint velocities against the source's
    assert _speed_mps(fast, loop) == pytest.approx(scale * _speed_mps(clip, loop), rel=0.02)
    hinge_dofs = [model.joint(j).dofadr[0] for j in independent_coordinates(model)]
    src_vel = np.stack([np.interp(f, np.arange(n), clip.qvel[:, d]) for d in hinge_dofs], axis=1)
    inner = slice(1, -1)  # one-sided differences at the ends of a clip that does not loop
    got, want = fast.qvel[inner][:, hinge_dofs], scale * src_vel[inner]
    assert np.sqrt(np.mean((got - want) ** 2)) < 0.1 * np.sqrt(np.mean(want**2))


def test_dataset_gets_one_copy_per_factor_with_weight_tags_and_ground(model):
    dataset = load_dataset({"clips": [{"path": str(WALK), "weight": 2.0, "tags": "walk"}]}, model, "myolegs")
    out = with_time_scales(dataset, model, [0.8, 1.2])
    assert out.clip_names == ("humanoid3d_walk", "humanoid3d_walk@0.8x", "humanoid3d_walk@1.2x")
    assert list(out.weights) == [2.0, 2.0, 2.0] and out.tags == (("walk",),) * 3
    assert out.sources == dataset.sources * 3 and out.ground_offset_m.shape == (3, 3)
    lengths = np.diff(np.append(out.trajectory.clip_starts, out.trajectory.num_frames))
    assert lengths[0] == 39 and all(
        abs(k - 39 / s) <= 0.5 + 1e-6 for k, s in zip(lengths[1:], (0.8, 1.2), strict=True)
    )
    np.testing.assert_array_equal(out.trajectory.qpos[:39], dataset.trajectory.qpos)  # the source unchanged
    assert with_time_scales(dataset, model, []) is dataset


@pytest.mark.parametrize("bad", [[1.0], [0.3], [0.8, 0.8], "fast", [True]])
def test_bad_factors_are_one_line_errors(bad):
    with pytest.raises(InputError, match="augment.time_scales"):
        check_scales(bad)
