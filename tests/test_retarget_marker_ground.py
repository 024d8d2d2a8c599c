"""Treadmill belt, stance and floor of marker trials (musclerl.retarget.markers.ground).

Known truth: an overground clip whose stance feet are still on a floor, put on a synthetic belt
(every point carried backwards at the belt's velocity) and raised or lowered in the lab. The
conversion must recover the belt, give back the overground root, and touch nothing else.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from musclerl.ground.belt import belt_velocity_mps
from musclerl.ground.contact import detect_contacts
from musclerl.ground.surface import GeomSurface, penetration_m
from musclerl.models.geoms import collision_geoms
from musclerl.models.registry import compile_spec, load_spec
from musclerl.retarget.ground.soles import model_soles, point_positions_m
from musclerl.retarget.markers.ground import (
    LEVEL_SLOPE_DEG,
    TREADMILL_MIN_SPEED_MPS,
    GroundOptions,
    ground_clip,
    looks_like_treadmill,
)

RATE_HZ = 60.0
BELT_MPS = np.array([-1.2, 0.05])


def _stepping_soles(frames: int = 150) -> np.ndarray:
    """Heel and toe of two feet (T, 4, 3) walking overground at 1.2 m/s: each foot still on z = 0
    for 0.6 s, then swinging 1.2 m forward in 0.4 s along an arc 8 cm high (truth: belt 0)."""
    t = np.arange(frames) / RATE_HZ
    out = np.zeros((frames, 4, 3))
    for foot, phase_s in ((0, 0.0), (1, 0.5)):
        cycle = (t + phase_s) % 1.0
        start = np.floor((t + phase_s) / 1.0) * 1.2
        swing = np.clip((cycle - 0.6) / 0.4, 0.0, 1.0)  # 0 in stance
        x = start + 1.2 * (0.5 - 0.5 * np.cos(np.pi * swing))
        z = 0.08 * np.sin(np.pi * swing)
        for k, dx in enumerate((0.0, 0.2)):
            out[:, 2 * foot + k] = np.column_stack([x + dx, np.full(frames, 0.1 * foot), z])
    return out


def _on_belt(points: np.ndarray) -> np.ndarray:
    moved = points.copy()
    moved[..., :2] += BELT_MPS * (np.arange(len(points)) / RATE_HZ)[:, None, None]
    return moved


def test_belt_velocity_is_the_stance_feet_ground_speed():
    overground = _stepping_soles()
    np.testing.assert_allclose(belt_velocity_mps(_on_belt(overground), RATE_HZ), BELT_MPS, atol=0.02)
    assert np.linalg.norm(belt_velocity_mps(overground, RATE_HZ)) < 0.02 < TREADMILL_MIN_SPEED_MPS
    # Relative to the belt, the stance feet of the treadmill walk are found where they are overground.
    flags = detect_contacts(overground, RATE_HZ)
    on_belt = detect_contacts(_on_belt(overground), RATE_HZ, ground_velocity_mps=np.append(BELT_MPS, 0))
    assert flags.mean() > 0.4 and (flags == on_belt).mean() > 0.97
    assert not detect_contacts(_on_belt(overground), RATE_HZ).any()  # still ground: no stance at all


def test_treadmill_needs_a_backward_belt_under_a_subject_walking_in_place():
    forward = np.array([1.0, 0.0])
    in_place, walking = np.zeros(2), np.array([1.2, 0.0])
    assert looks_like_treadmill(BELT_MPS, in_place, forward)
    assert not looks_like_treadmill(BELT_MPS, walking, forward)  # feet slipping under a walker
    assert not looks_like_treadmill(-BELT_MPS, in_place, forward)  # a "belt" running forwards
    assert not looks_like_treadmill(np.array([-0.1, 0.0]), in_place, forward)  # overground noise


@pytest.fixture(scope="module")
def myolegs() -> mujoco.MjModel:
    return compile_spec(load_spec("myolegs"), "myolegs")


def _standing_clip(model: mujoco.MjModel, frames: int = 120) -> np.ndarray:
    """Overground truth (T, nq): myolegs standing in its rest pose, both feet flat and still, the
    toes lifting and lowering (joints the conversion must not touch); the lab floor at z = 0.3 m."""
    t = np.arange(frames) / RATE_HZ
    qpos = np.tile(model.qpos0, (frames, 1))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    low = GeomSurface.of(model, collision_geoms(model)).world_points(data)[:, 2].min()
    qpos[:, 2] += 0.3 - low  # feet resting on z = 0.3
    for name in ("mtp_angle_r", "mtp_angle_l"):
        qpos[:, model.jnt_qposadr[model.joint(name).id]] = -0.2 * np.abs(np.sin(2 * np.pi * t))
    return qpos


def test_treadmill_clip_walks_overground_on_a_floor_at_zero(myolegs):
    truth = _standing_clip(myolegs)
    t = np.arange(len(truth)) / RATE_HZ
    treadmill = truth.copy()
    treadmill[:, :2] += BELT_MPS * t[:, None]
    # Standing carried by the belt, the body travels with it: forced (detection needs a walk in place).
    out = ground_clip(myolegs, "myolegs", treadmill, RATE_HZ, GroundOptions(treadmill=True))
    assert out.treadmill
    np.testing.assert_allclose(out.belt_velocity_mps, BELT_MPS, atol=0.01)
    # The overground root comes back (up to the constant vertical placement), joints untouched.
    np.testing.assert_allclose(out.qpos[:, :2], truth[:, :2], atol=0.005)
    # Vertically: one shift onto the floor; nothing reaches below it, so no frame is lifted.
    np.testing.assert_allclose(out.qpos[:, 2], truth[:, 2] + out.floor_shift_m, atol=1e-9)
    assert not out.lift_m.any()
    np.testing.assert_array_equal(out.qpos[:, 3:], treadmill[:, 3:])
    # Floor at z = 0: nothing below it, the stance soles on it, and stance everywhere.
    depth = penetration_m(myolegs, out.qpos, out.terrain, GeomSurface.of(myolegs, collision_geoms(myolegs)))
    assert depth.max() <= 0.005
    # The swinging toes tilt the fitted plane a little; under LEVEL_SLOPE_DEG the floor is level.
    assert np.abs(out.terrain.height_m).max() < 1e-9 and out.floor_slope_deg < LEVEL_SLOPE_DEG
    assert abs(out.floor_shift_m + 0.3) < 0.005
    heels = out.sole_m[:, [0, 4], 2]  # the toes move; the heels stand still
    assert out.flags.mean() > 0.95 and np.abs(heels).max() < 0.005
    assert out.stance_speed_mps < 0.05  # the aim; the toe tips move with the toes
    report = out.report()
    assert report["treadmill"]["belt_speed_mps"] == pytest.approx(np.linalg.norm(BELT_MPS), abs=0.01)
    assert report["floor"]["stance_frac"] > 0.95


def test_frames_with_a_geom_below_the_floor_are_lifted_by_its_depth(myolegs):
    qpos = _standing_clip(myolegs)
    bent = slice(40, 50)  # toes bent down into the floor: what a rigid toe does rolling off
    mtp = myolegs.jnt_qposadr[myolegs.joint("mtp_angle_r").id]
    qpos[bent, mtp] = 0.4
    sunk = slice(20, 26)  # the whole body 1 cm too low: only a lift takes it out
    qpos[sunk, 2] -= 0.01
    out = ground_clip(myolegs, "myolegs", qpos, RATE_HZ, GroundOptions(treadmill=False))
    lifted = np.flatnonzero(out.lift_m)
    assert lifted.min() >= 20 and lifted.max() < 26 and out.lift_m.max() > 0.005
    # The toes bend back out of the floor instead of lifting the body.
    assert np.all(out.toe_bend_rad[bent] > 0.1) and np.all(out.qpos[bent, mtp] < 0.4)
    surface = GeomSurface.of(myolegs, collision_geoms(myolegs))
    assert penetration_m(myolegs, out.qpos, out.terrain, surface).max() < 1e-3
    report = out.report()["floor"]
    assert report["lift_max_m"] == pytest.approx(out.lift_m.max())
    assert report["lift_frac"] == pytest.approx(len(lifted) / 120)


def test_forced_belt_speed_and_forced_overground(myolegs):
    truth = _standing_clip(myolegs, frames=60)
    treadmill = truth.copy()
    treadmill[:, :2] += BELT_MPS * (np.arange(len(truth)) / RATE_HZ)[:, None]
    forced = ground_clip(myolegs, "myolegs", treadmill, RATE_HZ, GroundOptions(True, 2.0))
    assert forced.treadmill_forced and not ground_clip(myolegs, "myolegs", treadmill, RATE_HZ).treadmill
    np.testing.assert_allclose(forced.belt_velocity_mps, 2.0 * BELT_MPS / np.linalg.norm(BELT_MPS), atol=0.01)
    overground = ground_clip(myolegs, "myolegs", treadmill, RATE_HZ, GroundOptions(False))
    assert not overground.treadmill and np.all(overground.belt_velocity_mps == 0)
    np.testing.assert_array_equal(overground.qpos[:, :2], treadmill[:, :2])
    # Still ground under a belt-carried body: no stance is found, so no floor either.
    assert not overground.flags.any() and overground.terrain is None
    assert overground.report()["floor"]["source"].startswith("none")


def test_sole_points_follow_their_bodies(myolegs):
    names, foot, points = model_soles(myolegs, "myolegs")
    assert names[0] == "sole_heel_l" and list(foot) == [0] * 4 + [1] * 4
    qpos = _standing_clip(myolegs, frames=3)
    sole = point_positions_m(myolegs, qpos, points)
    data = mujoco.MjData(myolegs)
    data.qpos[:] = qpos[1]
    mujoco.mj_kinematics(myolegs, data)
    body, local = points[5]
    np.testing.assert_allclose(
        sole[1, 5], data.xpos[body] + data.xmat[body].reshape(3, 3) @ local, atol=1e-12
    )


def test_negative_belt_speed_exits_2_before_any_output(tmp_path, capsys):
    from markers_fixtures import write_case

    from musclerl.cli import main

    case = write_case(tmp_path / "case", frames=10)
    out = tmp_path / "x.npz"
    args = ["retarget", "markers", str(case["walk"]), "--model", "tiny", "--markers", str(case["markers"])]
    assert main([*args, "--out", str(out), "--treadmill", "-1.2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["musclerl: error: --treadmill: belt speed -1.2 m/s is not in [0, 10) m/s"]
    assert not out.exists()


def _stance_runs(slope_deg, foot_offset_m, noise_m, seed=0, runs=6):
    """Stance runs alternating feet along +x on a floor rising ``slope_deg`` along x, the left
    foot's markers ``foot_offset_m`` higher, each run's height off by Gaussian ``noise_m``."""
    from musclerl.retarget.ground.terrain import SupportPatch

    rng = np.random.default_rng(seed)
    patches = []
    for k in range(runs):
        foot = k % 2
        xy = np.array([0.7 * k, 0.1 if foot else -0.1])
        z = np.tan(np.radians(slope_deg)) * xy[0] + foot * foot_offset_m + rng.normal(0, noise_m)
        samples = np.column_stack([np.tile(xy, (20, 1)) + rng.normal(0, 0.01, (20, 2)), np.full(20, z)])
        patches.append(SupportPatch(foot, (0, 20), samples, xy, z, np.zeros(2)))
    return patches


def test_floor_is_flat_unless_the_stance_feet_show_a_slope_beyond_their_noise():
    from musclerl.retarget.ground.terrain import SLOPE_TEST_ALPHA, slope_p_value

    # A flat floor with 3 mm of run-to-run noise and one foot's markers 8 mm higher: flat.
    flat = [slope_p_value(_stance_runs(0.0, 0.008, 0.003, seed)) for seed in range(20)]
    assert np.mean(np.array(flat) < SLOPE_TEST_ALPHA) <= 0.1  # the test's false-alarm rate, ~alpha
    # A 4 degree ramp (24 cm rise over the walk) under the same noise is found.
    assert all(slope_p_value(_stance_runs(4.0, 0.008, 0.003, seed)) < SLOPE_TEST_ALPHA for seed in range(5))
    # Too few runs to test: flat.
    assert slope_p_value(_stance_runs(4.0, 0.0, 0.003, runs=3)) == 1.0


def test_toes_bend_out_of_the_floor_instead_of_lifting_the_body():
    """A heel-off pose whose rigid toes sink into the floor: the toe joint bends just enough to
    clear it (the bisection stops on the surface), the other joints and the root do not move,
    and a pose clear of the floor is left alone."""
    import mujoco

    from musclerl.ground.surface import GeomSurface, penetration_m
    from musclerl.models.geoms import collision_geoms
    from musclerl.models.registry import load_model
    from musclerl.motion.trajectory import Terrain
    from musclerl.retarget.markers.ground import bend_toes_off_floor

    model = load_model("myolegs")
    q = np.tile(model.qpos0, (2, 1))
    ankle = model.jnt_qposadr[model.joint("ankle_angle_r").id]
    q[0, ankle] = np.radians(-25.0)  # plantarflexed: the toes point down
    data = mujoco.MjData(model)
    data.qpos[:] = q[0]
    mujoco.mj_kinematics(model, data)
    toes = GeomSurface.of(model, collision_geoms(model, [model.body("toes_r").id]))
    floor_z = float(toes.lowest_points(data)[:, 2].min()) + 0.004  # 4 mm into the toes
    terrain = Terrain(np.full((2, 2), floor_z), np.array([-5.0, -5.0]), 10.0)
    q[1, 2] += 0.5  # the second frame is in the air
    bent, angle = bend_toes_off_floor(model, "myolegs", q, terrain)
    mtp = model.jnt_qposadr[model.joint("mtp_angle_r").id]
    assert angle[0] > 0 and angle[1] == 0.0
    np.testing.assert_allclose(abs(bent[0, mtp] - q[0, mtp]), angle[0])
    np.testing.assert_array_equal(np.delete(bent, mtp, axis=1), np.delete(q, mtp, axis=1))
    assert penetration_m(model, bent[:1], terrain, toes).max() == 0.0
    nearly = bent[:1].copy()
    nearly[0, mtp] = q[0, mtp] + 0.98 * (bent[0, mtp] - q[0, mtp])  # 2 % less bend: still in the floor
    assert penetration_m(model, nearly, terrain, toes).max() > 0.0
