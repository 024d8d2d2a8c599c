"""Synthetic walking over known ground: truth for the contact, terrain and ground-constraint tests.

A :class:`Course` is ground that varies along +x only (flat runs, slopes, steps, stairs), as
piecewise-linear segments whose ends need not meet (a jump between segments is a step).
:func:`walk_feet` plans footholds along the course (never straddling a step edge), then moves
two feet through them: a stance foot lies flat on the ground, a swing foot follows a minimum-jerk
path that clears the ground under its whole length. The result holds heel and toe sole points,
the ankles, and the true stance flags, all world metres, Z up, feet left = 0, right = 1.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.ndimage import maximum_filter1d, uniform_filter1d

from musclerl.motion.trajectory import Terrain


@dataclasses.dataclass(frozen=True)
class Course:
    """Ground height along x, constant in y. Segment k spans ``x_m[k]..x_m[k+1]`` and rises
    linearly from ``z_start_m[k]`` to ``z_end_m[k]``; beyond the ends the height is held."""

    x_m: np.ndarray  # (K + 1,)
    z_start_m: np.ndarray  # (K,)
    z_end_m: np.ndarray  # (K,)
    name: str = "course"

    def height_m(self, x_m: np.ndarray) -> np.ndarray:
        """Ground height at positions ``x_m`` (...,) in metres."""
        x = np.asarray(x_m, dtype=float)
        k = np.clip(np.searchsorted(self.x_m, x, side="right") - 1, 0, len(self.z_start_m) - 1)
        x0, x1 = self.x_m[k], self.x_m[k + 1]
        f = np.clip((x - x0) / (x1 - x0), 0.0, 1.0)
        return self.z_start_m[k] + f * (self.z_end_m[k] - self.z_start_m[k])

    def edges_x_m(self, jump_m: float = 1e-6) -> np.ndarray:
        """x positions of steps (jumps between segments larger than ``jump_m``)."""
        jumps = np.abs(self.z_start_m[1:] - self.z_end_m[:-1]) > jump_m
        return self.x_m[1:-1][jumps]

    def terrain(
        self, x_range_m: tuple[float, float], y_range_m: tuple[float, float], cell_m: float = 0.02
    ) -> Terrain:
        """The true ground as a heightfield over the given ranges."""
        xs = np.arange(x_range_m[0], x_range_m[1] + 1e-9, cell_m)
        ys = np.arange(y_range_m[0], y_range_m[1] + 1e-9, cell_m)
        h = np.broadcast_to(self.height_m(xs)[None, :], (len(ys), len(xs))).copy()
        return Terrain(height_m=h, origin_m=np.array([xs[0], ys[0]]), cell_m=cell_m)


def _course(
    name: str, pieces: list[tuple[float, float, float]], start_m: float = -1.0, end_m: float = 8.0
) -> Course:
    """Build from (x_start, z_start, z_end) pieces; each piece ends where the next starts."""
    xs = [start_m] + [p[0] for p in pieces] + [end_m]
    z0 = [pieces[0][1] if pieces else 0.0] + [p[1] for p in pieces]
    z1 = [pieces[0][1] if pieces else 0.0] + [p[2] for p in pieces]
    return Course(np.asarray(xs, float), np.asarray(z0, float), np.asarray(z1, float), name)


def flat_course(height_m: float = 0.0) -> Course:
    """Level ground at ``height_m``."""
    return _course("flat", [(0.0, height_m, height_m)])


def slope_course(angle_deg: float = 8.0, start_x_m: float = 1.0, length_m: float = 2.0) -> Course:
    """Flat, then up at ``angle_deg`` from ``start_x_m`` for ``length_m`` (m along x), then flat."""
    rise = length_m * np.tan(np.radians(angle_deg))
    return _course("slope", [(0.0, 0.0, 0.0), (start_x_m, 0.0, rise), (start_x_m + length_m, rise, rise)])


def step_course(rise_m: float = 0.12, edge_x_m: float = 1.5) -> Course:
    """Flat, then one step up of ``rise_m`` at x = ``edge_x_m``."""
    return _course("step", [(0.0, 0.0, 0.0), (edge_x_m, rise_m, rise_m)])


def stairs_course(
    n_steps: int = 4, rise_m: float = 0.15, run_m: float = 0.32, start_x_m: float = 1.2
) -> Course:
    """``n_steps`` stairs up (``rise_m`` high, ``run_m`` deep) from x = ``start_x_m``."""
    pieces = [(0.0, 0.0, 0.0)]
    for k in range(n_steps):
        z = (k + 1) * rise_m
        pieces.append((start_x_m + k * run_m, z, z))
    return _course("stairs", pieces)


def step_and_slope_course(rise_m: float = 0.12, angle_deg: float = 8.0) -> Course:
    """Flat, a step up at x = 1.4 m, a landing, then a slope up from 2.6 m to 4.6 m, then flat."""
    top = rise_m + 2.0 * np.tan(np.radians(angle_deg))
    pieces = [(0.0, 0.0, 0.0), (1.4, rise_m, rise_m), (2.6, rise_m, top), (4.6, top, top)]
    return _course("step_and_slope", pieces)


@dataclasses.dataclass(frozen=True)
class GaitParams:
    """Walking pattern (metres, seconds)."""

    rate_hz: float = 60.0
    step_length_m: float = 0.36
    step_time_s: float = 0.55
    double_support_s: float = 0.1
    stance_width_m: float = 0.18
    heel_to_ankle_m: float = 0.05  # ankle lies this far ahead of the heel sole point
    ankle_height_m: float = 0.08  # ankle above the sole
    foot_length_m: float = 0.22  # heel to toe sole points
    clearance_m: float = 0.06  # swing foot peak lift
    start_x_m: float = 0.0
    n_steps: int = 10


@dataclasses.dataclass(frozen=True)
class SyntheticGait:
    """Feet walking a course. Arrays (T, 2, 3) in world metres; feet 0 = left, 1 = right."""

    heel_m: np.ndarray
    toe_m: np.ndarray
    ankle_m: np.ndarray
    pitch_rad: np.ndarray  # (T, 2) foot pitch (toe up positive when rising along +x)
    stance: np.ndarray  # (T, 2) true stance flags
    rate_hz: float
    course: Course


def plan_footholds(course: Course, params: GaitParams) -> np.ndarray:
    """Heel x of each foothold (n_steps + 2,), alternating left/right, never straddling a step."""
    edges = course.edges_x_m()
    xs = [params.start_x_m, params.start_x_m + params.step_length_m / 2]
    while len(xs) < params.n_steps + 2:
        x = xs[-2] + 2 * params.step_length_m if len(xs) == 2 else xs[-1] + params.step_length_m
        for edge in edges:
            if x - 0.04 < edge < x + params.foot_length_m + 0.04:
                back = edge - params.foot_length_m - 0.04
                x = back if back >= xs[-1] + 0.15 else edge + 0.04
        xs.append(max(x, xs[-1] + 0.1))
    return np.asarray(xs)


def _foot_on_ground(course: Course, heel_x: float, params: GaitParams) -> tuple[float, float]:
    """Heel sole height and foot pitch for a foot lying on the course at ``heel_x``."""
    z_heel = float(course.height_m(heel_x))
    z_toe = float(course.height_m(heel_x + params.foot_length_m))
    return z_heel, float(np.arctan2(z_toe - z_heel, params.foot_length_m))


def _min_jerk(tau: np.ndarray) -> np.ndarray:
    return tau**3 * (10 - 15 * tau + 6 * tau**2)


def walk_feet(course: Course, params: GaitParams | None = None) -> SyntheticGait:
    """Move two feet along ``course`` through :func:`plan_footholds`; see :class:`SyntheticGait`."""
    p = params or GaitParams()
    holds = plan_footholds(course, p)
    n_holds = len(holds)
    duration = (n_holds - 1) * p.step_time_s + p.double_support_s
    t = np.arange(int(round(duration * p.rate_hz))) / p.rate_hz
    heel_x = np.zeros((len(t), 2))
    heel_z = np.zeros((len(t), 2))
    pitch = np.zeros((len(t), 2))
    stance = np.zeros((len(t), 2), dtype=bool)
    for foot in range(2):
        own = list(range(foot, n_holds, 2))
        land = [k * p.step_time_s for k in own]
        for i, k in enumerate(own):
            z0, a0 = _foot_on_ground(course, holds[k], p)
            lift = (k + 1) * p.step_time_s + p.double_support_s if i + 1 < len(own) else np.inf
            on = (t >= land[i] - 1e-9) & (t < lift) if k > 1 else (t < lift)
            heel_x[on, foot], heel_z[on, foot], pitch[on, foot] = holds[k], z0, a0
            stance[on, foot] = True
            if i + 1 < len(own):
                k2 = own[i + 1]
                z1, a1 = _foot_on_ground(course, holds[k2], p)
                sw = (t >= lift) & (t < land[i + 1])
                tau = (t[sw] - lift) / (land[i + 1] - lift)
                s = _min_jerk(tau)
                x = holds[k] + (holds[k2] - holds[k]) * s
                z = z0 + (z1 - z0) * s + p.clearance_m * np.sin(np.pi * tau)
                probes = np.linspace(-0.03, p.foot_length_m + 0.03, 9)
                under = np.max([course.height_m(x + d) for d in probes], axis=0)
                heel_x[sw, foot], heel_z[sw, foot] = x, np.maximum(z, under + 0.03)
                pitch[sw, foot] = a0 + (a1 - a0) * s
    # Smooth the clearance bumps (running max then a short average keeps the foot above the ground).
    swing = ~stance
    lifted = uniform_filter1d(maximum_filter1d(heel_z, size=7, axis=0), size=5, axis=0)
    heel_z = np.where(swing, np.maximum(heel_z, lifted), heel_z)
    y = np.array([p.stance_width_m / 2, -p.stance_width_m / 2])[None, :].repeat(len(t), 0)
    heel = np.stack([heel_x, y, heel_z], axis=-1)
    along = np.stack([np.cos(pitch), np.zeros_like(pitch), np.sin(pitch)], axis=-1)
    up = np.stack([-np.sin(pitch), np.zeros_like(pitch), np.cos(pitch)], axis=-1)
    toe = heel + p.foot_length_m * along
    ankle = heel + p.heel_to_ankle_m * along + p.ankle_height_m * up
    return SyntheticGait(
        heel_m=heel,
        toe_m=toe,
        ankle_m=ankle,
        pitch_rad=pitch,
        stance=stance,
        rate_hz=p.rate_hz,
        course=course,
    )
