"""Contact detection and terrain recovery on synthetic feet walking known ground."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musclerl.ground.contact import (
    ContactParams,
    body_speed_mps,
    detect_contacts,
    dilate_flags,
    foot_flags,
    height_above_local_level_m,
    point_speed_mps,
    remove_short_phases,
    stance_phases,
)
from musclerl.motion.trajectory import Terrain
from musclerl.retarget.ground.terrain import (
    TerrainParams,
    fit_patch,
    free_space_ceiling,
    one_floor,
    support_patches,
    terrain_from_contacts,
    terrain_summary,
)
from musclerl.retarget.synthetic import gait as sg

FEET = np.array([0, 1, 0, 1])  # heel L, heel R, toe L, toe R
COURSES = {
    "flat": sg.flat_course(),
    "slope": sg.slope_course(8.0),
    "step": sg.step_course(0.12),
    "stairs": sg.stairs_course(4, 0.15, 0.32),
}


def _gait(course: sg.Course) -> tuple[sg.SyntheticGait, np.ndarray]:
    gait = sg.walk_feet(course, sg.GaitParams(n_steps=10))
    return gait, np.concatenate([gait.heel_m, gait.toe_m], axis=1)


def _corridor_error(terrain: Terrain, course: sg.Course, x_max: float, edge_margin_m: float) -> np.ndarray:
    """|recovered - true| along the walking band, away from step edges by ``edge_margin_m``."""
    x, y = np.meshgrid(np.linspace(-0.2, x_max, 300), np.array([-0.09, 0.0, 0.09]))
    err = np.abs(terrain.height_at(np.stack([x, y], axis=-1)) - course.height_m(x))
    keep = np.ones_like(x, dtype=bool)
    for edge in course.edges_x_m():
        keep &= np.abs(x - edge) > edge_margin_m
    return err[keep]


def test_speed_and_local_height_basic():
    t = np.arange(100) / 100.0
    pts = np.zeros((100, 1, 3))
    pts[:, 0, 0] = 2.0 * t  # 2 m/s along x
    np.testing.assert_allclose(point_speed_mps(pts, 100.0), 2.0, atol=1e-9)
    # A foot standing at 0.15 m (a step) after standing at 0: level follows its own stance.
    z = np.where(t < 0.5, 0.0, 0.15)[:, None]
    rel = height_above_local_level_m(z, 100.0, window_s=0.2)
    assert np.all(np.abs(rel) < 1e-12)
    # A bump between two stances is above both levels.
    z = (0.1 * np.sin(np.pi * np.clip((t - 0.4) / 0.2, 0, 1)))[:, None]
    rel = height_above_local_level_m(z, 100.0, window_s=0.3)
    assert rel[50, 0] == pytest.approx(0.1)


def test_hysteresis_and_short_phases():
    flags = np.array([1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0], dtype=bool)[:, None]
    out = remove_short_phases(flags, 2)[:, 0]
    # The one-frame gap at 2 is filled, the isolated stance at 10 is dropped.
    assert out.tolist() == [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert stance_phases(out) == [(0, 6)]
    speed_noise = np.zeros((60, 1, 3))
    speed_noise[:, 0, 0] = np.cumsum(np.where(np.arange(60) % 2, 0.004, -0.003))  # jitter, ~0.2 m/s
    flags = detect_contacts(speed_noise, 60.0, params=ContactParams(smooth_s=0.0))
    assert flags.all(), "sub-threshold jitter must not break a stance"


@pytest.mark.parametrize("name", list(COURSES))
def test_contacts_match_truth(name):
    gait, pts = _gait(COURSES[name])
    flags = detect_contacts(pts, gait.rate_hz)
    truth = np.concatenate([gait.stance, gait.stance], axis=1)
    assert not np.any(flags & ~truth), "stance reported during a true swing"
    assert (flags == truth).mean() > 0.9
    feet = foot_flags(flags, FEET)
    # One stance per foothold: the planner uses n_steps + 2 footholds, split over two feet.
    assert len(stance_phases(feet[:, 0])) + len(stance_phases(feet[:, 1])) == 12


def _run_foot(speed_mps: float = 3.5, rate_hz: float = 120.0, roll_mps: float = 0.45):
    """One foot point of a run along x at ``speed_mps``: stance 0.2 s in which the point creeps
    forward at ``roll_mps`` (a forefoot rolling, a skeleton's toe joint), 0.5 s strides, swing
    raised 10 cm; returns (points (T, 1, 3), true stance (T,), the body's x (T,))."""
    t = np.arange(int(3.0 * rate_hz)) / rate_hz
    stride_s, stance_s = 0.5, 0.2
    k, phase = np.divmod(t, stride_s)
    stance = phase < stance_s
    swing = np.clip((phase - stance_s) / (stride_s - stance_s), 0.0, 1.0)
    ease = swing**3 * (10 - 15 * swing + 6 * swing**2)  # minimum jerk
    stance_start_x = k * speed_mps * stride_s
    travel = speed_mps * stride_s - roll_mps * stance_s  # the swing covers the rest of the stride
    x = stance_start_x + np.where(stance, roll_mps * phase, roll_mps * stance_s + travel * ease)
    z = np.where(stance, 0.0, 0.10 * np.sin(np.pi * swing))
    points = np.stack([x, np.zeros_like(x), z], axis=-1)[:, None, :]
    return points, stance, speed_mps * t


def test_a_runners_rolling_stance_is_found_by_the_body_speed():
    """A run's stance foot point creeps at 0.45 m/s (CMU 09_03's toes: 0.3-0.6 m/s for most of a
    0.2 s stance at 3.5 m/s): the fixed 0.25 m/s threshold misses the stances, thresholds scaled by
    the body's speed find them, and no swing frame is called stance beyond toe-off's first 25 ms."""
    points, truth, body_x = _run_foot()
    rate_hz = 120.0
    body = body_speed_mps(np.column_stack([body_x, np.zeros_like(body_x)]), rate_hz, 0.5)
    np.testing.assert_allclose(body[10:-10], 3.5, atol=1e-6)
    fixed = detect_contacts(points, rate_hz)[:, 0]
    scaled = detect_contacts(points, rate_hz, body_speed=body)[:, 0]
    assert (fixed & truth).sum() < 0.2 * truth.sum()
    assert (scaled & truth).sum() > 0.8 * truth.sum()
    late = scaled & ~truth  # the swing's first frames, still low and slow (toe-off)
    assert not np.any(late & ~dilate_flags(truth[:, None], 3)[:, 0]), "stance beyond 25 ms of a true one"
    assert len(stance_phases(scaled)) == 6


def test_a_walks_stances_do_not_move_with_the_body_speed():
    """Up to 1.66 m/s (0.25 / 0.15) the body's speed changes no threshold: a walk's flags are
    the fixed thresholds' to the frame."""
    gait, pts = _gait(COURSES["flat"])
    for speed_mps in (1.0, 1.6):
        body = np.full(len(pts), speed_mps)
        np.testing.assert_array_equal(
            detect_contacts(pts, gait.rate_hz, body_speed=body), detect_contacts(pts, gait.rate_hz)
        )


def test_patch_plane_fit_recovers_slope():
    rng = np.random.default_rng(0)
    xy = rng.uniform(-0.1, 0.1, size=(40, 2))
    z = 0.3 + 0.14 * xy[:, 0] - 0.05 * xy[:, 1]
    patch = fit_patch(np.column_stack([xy, z]), 0, (0, 10), ridge=1e-6)
    cx, cy = patch.centre_m
    assert patch.height_m == pytest.approx(0.3 + 0.14 * cx - 0.05 * cy, abs=1e-9)
    np.testing.assert_allclose(patch.slope, [0.14, -0.05], atol=1e-4)
    # Collinear samples (heel and toe only): the unseen cross slope stays at zero.
    line = np.column_stack([np.linspace(0, 0.2, 10), np.zeros(10), np.linspace(0, 0.02, 10)])
    np.testing.assert_allclose(fit_patch(line, 0, (0, 10), 1e-3).slope[1], 0.0, atol=1e-9)


def test_free_space_ceiling():
    pts = np.array([[0.12, 0.12, 0.4], [0.12, 0.12, 0.3], [0.5, 0.5, -1.0]])
    ceiling = free_space_ceiling(pts, np.zeros(2), 0.1, (4, 4))
    assert ceiling[1, 1] == 0.3 and ceiling[2, 2] == 0.3
    assert np.isinf(ceiling[0, 0]) and np.isinf(ceiling[3, 3])


@pytest.mark.parametrize(
    "name,kind", [("flat", "flat"), ("slope", "sloped"), ("step", "steps"), ("stairs", "steps")]
)
def test_terrain_recovered_within_2cm(name, kind):
    course = COURSES[name]
    gait, pts = _gait(course)
    flags = detect_contacts(pts, gait.rate_hz)
    terrain = terrain_from_contacts(pts, flags, FEET)
    err = _corridor_error(terrain, course, float(pts[..., 0].max()), edge_margin_m=0.15)
    assert err.max() < 0.02, f"{name}: max error {err.max():.3f} m away from edges"
    # Under every stance sample the ground is exact.
    planted = pts[flags]
    np.testing.assert_allclose(terrain.height_at(planted[:, :2]), course.height_m(planted[:, 0]), atol=0.01)
    summary = terrain_summary(terrain)
    assert summary["kind"] == kind
    if name == "stairs":
        assert summary["steps_along_x"] == 4
        assert summary["height_max_m"] == pytest.approx(0.6, abs=0.01)
    if name == "slope":
        assert summary["max_slope_deg"] == pytest.approx(8.0, abs=1.5)


def test_step_edge_stays_sharp_and_free_space_bounds_it():
    """Across a step the level switches within a few cells (no ramp over the whole gap)."""
    course = COURSES["step"]
    gait, pts = _gait(course)
    flags = detect_contacts(pts, gait.rate_hz)
    terrain = terrain_from_contacts(pts, flags, FEET)
    x = np.linspace(0.8, 2.2, 141)
    h = terrain.height_at(np.column_stack([x, np.zeros_like(x)]))
    ramp = (h > 0.01) & (h < 0.11)
    assert ramp.sum() * 0.01 <= 0.1, "step smeared into a ramp"
    # A body point skimming at 5 cm over the first 20 cm past the edge forbids the upper level there.
    skim = np.column_stack([np.linspace(1.5, 1.7, 30), np.zeros(30), np.full(30, 0.05)])
    bounded = terrain_from_contacts(pts, flags, FEET, free_points_m=skim)
    assert np.all(bounded.height_at(skim[:, :2]) <= 0.05 + 0.011)


def test_sole_offset_and_no_contact():
    course = COURSES["flat"]
    gait, pts = _gait(course)
    raised = pts + np.array([0.0, 0.0, 0.03])
    flags = detect_contacts(raised, gait.rate_hz)
    terrain = terrain_from_contacts(raised, flags, FEET, sole_offset_m=0.03)
    assert np.abs(terrain.height_m).max() < 1e-9
    assert len(support_patches(pts, np.zeros(pts.shape[:2], bool), FEET)) == 0
    with pytest.raises(ValueError):
        terrain_from_contacts(pts, np.zeros(pts.shape[:2], bool), FEET)


def _stance_patches(course: sg.Course, noise_m: float = 0.0, seed: int = 0) -> list:
    """The support patches of the synthetic feet on ``course``, each stance moved up or down by
    up to ``noise_m`` (a source skeleton unlike the model puts its stances 1-2 cm apart)."""
    gait, pts = _gait(course)
    rng = np.random.default_rng(seed)
    patches = support_patches(pts, detect_contacts(pts, gait.rate_hz), FEET)
    return [
        dataclasses.replace(p, samples_m=p.samples_m + [0.0, 0.0, rng.uniform(-noise_m, noise_m)])
        for p in patches
    ]


def test_one_floor_for_a_lab_walk_a_heightfield_for_steps():
    """Stances 1.2 cm about a level floor, or on a 1 degree tilt, stand on one level floor; on one
    8 degree plane, on that plane; a step, stairs or a ramp between flats are no single floor."""
    params, frames = TerrainParams(), (0, 600)
    for seed in range(3):
        level = one_floor(_stance_patches(sg.flat_course(0.02), 0.012, seed), params, frames)
        assert level is not None and np.all(level.slope == 0.0)
        assert level.height_m == pytest.approx(0.02, abs=0.012)
    tilted = one_floor(_stance_patches(sg.slope_course(1.0, -5.0, 50.0)), params, frames)
    assert tilted is not None and np.all(tilted.slope == 0.0)
    ramp = one_floor(_stance_patches(sg.slope_course(8.0, -5.0, 50.0), 0.005), params, frames)
    assert ramp is not None
    assert ramp.slope_deg == pytest.approx(8.0, abs=0.5)
    for course in (sg.step_course(0.12), sg.stairs_course(4, 0.15, 0.32), sg.slope_course(8.0)):
        assert one_floor(_stance_patches(course), params, frames) is None, course.name


def test_a_box_and_the_floor_are_no_single_floor():
    """A drop jump's four stances: both feet on a 0.3 m box, then both on the floor 0.9 m ahead.
    A 17.5 deg plane runs through all four within the one-floor tolerance, but each stance is
    level: no single floor (it was taken as one level floor at mid height)."""
    params = TerrainParams()
    patches = []
    for foot, (x, y, z) in enumerate(
        [(-1.1, 0.1, 0.3), (-1.1, -0.1, 0.3), (-0.2, 0.1, 0.0), (-0.2, -0.1, 0.0)]
    ):
        xy = np.column_stack([x + np.linspace(-0.1, 0.1, 20), np.full(20, y)])
        patches.append(
            fit_patch(np.column_stack([xy, np.full(20, z)]), foot % 2, (0, 20), params.slope_ridge)
        )
    assert one_floor(patches, params, (0, 100)) is None
