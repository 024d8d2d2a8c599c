"""The bundled walks (DeepMimic motion capture retargeted by ``musclerl.retarget.keypoints.bundled``): real,
looping, on the floor, and dynamically plausible where the check says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from musclerl.dynamics.plausibility import trajectory_plausibility
from musclerl.models.geoms import foot_geoms, geom_lowest_z
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory

MOTIONS = Path(__file__).resolve().parents[1] / "assets" / "motions"


@pytest.mark.parametrize("name", ["myolegs", "myofullbody", "tiny"])
def test_bundled_walk_is_a_looping_cycle_on_the_floor(name):
    import mujoco

    traj = Trajectory.load(MOTIONS / f"walk_{name}.npz")
    model = load_model(name)
    traj.check_model(model, name)
    assert traj.num_clips == 1 and bool(traj.clip_loop[0]) and traj.terrain is None
    assert traj.num_frames / traj.rate_hz == pytest.approx(39 / 30.0, rel=1e-3)  # the source cycle
    data = mujoco.MjData(model)
    lowest = []
    for q in traj.qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        lowest.append(geom_lowest_z(model, data, foot_geoms(model)).min())
    assert min(lowest) == pytest.approx(0.0, abs=1e-6)  # never below the floor, touching it
    assert np.median(lowest) < 0.02  # a foot is on the floor in most frames
    speed = (traj.qpos[-1, 0] - traj.qpos[0, 0]) / ((traj.num_frames - 1) / traj.rate_hz)
    assert 0.8 < speed < 1.3  # a walk (DeepMimic's is about 1 m/s)


@pytest.mark.parametrize("name", ["myolegs", "myofullbody"])
def test_bundled_walk_is_physically_plausible(name):
    """A body can follow the bundled walk: feet planted, the floor pushing about one body weight,
    no jerks, and (after the balance pass) the centre of pressure on the feet."""
    traj = Trajectory.load(MOTIONS / f"walk_{name}.npz")
    check = trajectory_plausibility(traj, load_model(name))
    assert check.stance_slip["median_mps"] <= check.thresholds.max_slip_median_mps
    assert check.vertical_force_bw["pulling_frames"] == 0 and check.vertical_force_bw["above_max_frames"] == 0
    assert 0.6 < check.vertical_force_bw["min"] and check.vertical_force_bw["max"] < 1.5  # walking
    accel = check.root_accel_mps2
    assert max(-accel["vertical_min"], accel["vertical_max"], accel["horizontal_max"]) < 0.5 * 9.81
    assert check.passed, check.failures
