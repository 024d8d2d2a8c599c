"""Trajectory NPZ round trip and validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.models import load_model
from musclerl.motion import Terrain, Trajectory, concatenate, finite_difference_qvel


def _tiny_traj(n=20, rate=50.0, name="walk"):
    model = load_model("tiny")
    qpos = np.tile(model.qpos0, (n, 1))
    t = np.arange(n) / rate
    qpos[:, 0] = 1.2 * t
    qpos[:, 7] = 0.4 * np.sin(2 * np.pi * t)
    qvel = finite_difference_qvel(model, qpos, rate)
    names = tuple(model.joint(j).name for j in range(model.njnt))
    return model, Trajectory(qpos, qvel, rate, names, "tiny", clip_names=(name,))


def test_round_trip_with_optional_fields(tmp_path):
    model, traj = _tiny_traj()
    sites = np.random.default_rng(0).normal(size=(traj.num_frames, 2, 3))
    terrain = Terrain(np.array([[0.0, 0.1, 0.2], [0.0, 0.1, 0.2]]), np.array([-1.0, -0.5]), 0.5)
    full = dataclasses.replace(
        traj,
        site_names=("a", "b"),
        site_pos_m=sites,
        contact_names=("foot_r",),
        contact=np.zeros((traj.num_frames, 1), bool),
        terrain=terrain,
    )
    full.save(tmp_path / "t.npz")
    back = Trajectory.load(tmp_path / "t.npz")
    np.testing.assert_array_equal(back.qpos, full.qpos)
    np.testing.assert_array_equal(back.site_pos_m, sites)
    assert back.site_names == ("a", "b") and back.clip_names == ("walk",)
    assert back.terrain.height_at(np.array([-0.75, 0.0])) == pytest.approx(0.05)
    back.check_model(model)


def test_finite_difference_velocity_of_free_root():
    _, traj = _tiny_traj(n=30, rate=100.0)
    assert traj.qvel[10, 0] == pytest.approx(1.2)  # forward speed, world frame
    hip = traj.qpos[:, 7]
    assert traj.qvel[10, 6] == pytest.approx((hip[11] - hip[9]) * 50.0)


def test_concatenate_clips():
    _, a = _tiny_traj(10, name="a")
    _, b = _tiny_traj(15, name="b")
    both = concatenate([a, b])
    assert both.num_clips == 2 and list(both.clip_starts) == [0, 10]
    assert both.clip(1).num_frames == 15 and both.clip(1).clip_names == ("b",)


def test_validation_errors(tmp_path):
    model, traj = _tiny_traj()
    with pytest.raises(InputError, match="NaN"):
        dataclasses.replace(traj, qpos=np.full_like(traj.qpos, np.nan))
    with pytest.raises(InputError, match="clip_starts"):
        dataclasses.replace(
            traj, clip_starts=np.array([0, 100]), clip_names=("a", "b"), clip_loop=np.zeros(2, bool)
        )
    other = load_model("myolegs")
    with pytest.raises(InputError, match="wrong model"):
        traj.check_model(other, "walk.npz")
    np.savez(tmp_path / "x.npz", qpos=np.zeros((3, 13)))
    with pytest.raises(InputError, match="missing key 'qvel'"):
        Trajectory.load(tmp_path / "x.npz")
