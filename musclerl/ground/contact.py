"""Foot contact from the motion alone: speed and height of foot points, with hysteresis.

A foot point (a heel or toe site of the model, an ankle or toe keypoint of a skeleton) is in
stance when it is slow and low. "Slow" is relative to the ground under it: on a treadmill the
stance foot moves with the belt, so a ground velocity can be given (see
:mod:`musclerl.retarget.markers.ground`, which estimates it). "Low" cannot mean "near z = 0":
on stairs a planted foot stands a step above the other one. So height is measured against the
point's own support level nearby in time: the lowest height it reaches in the next or the
previous ``level_window_s`` seconds (whichever is closer to its current height). A foot landing
on a higher step is level with its own coming stance; a foot in mid swing is above both its past
and its coming stance.

"Slow" also scales with the body's own speed where that is given: a runner's planted foot
rolls over its forefoot, and foot points a skeleton or a marker fit places on it move at 0.3-0.6
m/s for most of a 0.2 s stance at 3.5 m/s (CMU 09_03, whose swing foot moves at 6-8 m/s), where a
walker's stay under 0.25 m/s. The thresholds are the larger of the fixed ones and a fraction of the
body's horizontal speed over the ground (``speed_*_body_frac``), which leaves walks up to 1.66 m/s
(0.25 / 0.15) exactly as before.

Hysteresis keeps the flags from chattering: a point enters stance when both speed and height are
under the ``*_on`` thresholds and leaves it when either exceeds the ``*_off`` thresholds. Stance
or swing runs shorter than ``min_phase_s`` are then removed (short swings filled, short stances
dropped).

All positions are world coordinates in metres, Z up; arrays are (T, P, 3) for T frames and P
points; flags are (T, P) bool.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.ndimage import maximum_filter1d, uniform_filter1d

from musclerl.geometry.arrays import runs


@dataclasses.dataclass(frozen=True)
class ContactParams:
    """Thresholds of the stance detector (speeds in m/s, heights in m above the local level)."""

    speed_on_mps: float = 0.25
    speed_off_mps: float = 0.45
    speed_on_body_frac: float = 0.15  # of the body's horizontal speed, where larger (runs)
    speed_off_body_frac: float = 0.25
    body_speed_window_s: float = 0.5  # the body's speed averaged over about a step
    height_on_m: float = 0.03
    height_off_m: float = 0.06
    level_window_s: float = 0.4
    smooth_s: float = 0.05
    min_phase_s: float = 0.06


def point_velocity_mps(
    points_m: np.ndarray, rate_hz: float, loop: bool = False, smooth_s: float = 0.0
) -> np.ndarray:
    """Velocity of each point, (T, P, 3) in m/s, by central differences (wrapping when ``loop``).

    ``points_m`` is (T, P, 3). ``smooth_s`` > 0 averages positions over that many seconds first.
    """
    pts = np.asarray(points_m, dtype=float)
    n = pts.shape[0]
    if n < 2:
        return np.zeros(pts.shape)
    mode = "wrap" if loop else "nearest"
    width = int(round(smooth_s * rate_hz))
    if width > 1:
        pts = uniform_filter1d(pts, size=width, axis=0, mode=mode)
    if loop:
        vel = (np.roll(pts, -1, axis=0) - np.roll(pts, 1, axis=0)) * (rate_hz / 2.0)
    else:
        vel = np.gradient(pts, 1.0 / rate_hz, axis=0)
    return vel


def point_speed_mps(
    points_m: np.ndarray,
    rate_hz: float,
    loop: bool = False,
    smooth_s: float = 0.0,
    ground_velocity_mps: np.ndarray | None = None,
) -> np.ndarray:
    """Speed (T, P) in m/s of points ``points_m`` (T, P, 3) relative to the ground under them,
    which moves at ``ground_velocity_mps`` (3,) (a treadmill belt; None: still ground)."""
    vel = point_velocity_mps(points_m, rate_hz, loop=loop, smooth_s=smooth_s)
    if ground_velocity_mps is not None:
        vel = vel - np.asarray(ground_velocity_mps, dtype=float)
    return np.linalg.norm(vel, axis=-1)


def height_above_local_level_m(
    heights_m: np.ndarray, rate_hz: float, window_s: float, loop: bool = False
) -> np.ndarray:
    """Height (T, P) of each point above its own support level nearby in time.

    The level is the minimum height over the next ``window_s`` or over the previous ``window_s``
    seconds, whichever is higher (i.e. closer to the current height).
    """
    z = np.asarray(heights_m, dtype=float)
    n = z.shape[0]
    width = min(max(int(round(window_s * rate_hz)), 1), n)
    if loop:
        padded = np.concatenate([z[-width:], z, z[:width]], axis=0)
    else:
        first, last = np.repeat(z[:1], width, axis=0), np.repeat(z[-1:], width, axis=0)
        padded = np.concatenate([first, z, last], axis=0)
    windows = np.lib.stride_tricks.sliding_window_view(padded, width + 1, axis=0)  # (n + width, P, w+1)
    behind = windows[:n].min(axis=-1)  # frames t - width .. t
    ahead = windows[width:].min(axis=-1)  # frames t .. t + width
    level = np.maximum(ahead, behind)
    return z - level


def body_speed_mps(
    root_xy_m: np.ndarray,
    rate_hz: float,
    window_s: float,
    loop: bool = False,
    ground_velocity_mps: np.ndarray | None = None,
) -> np.ndarray:
    """Horizontal speed (T,) in m/s of the body over the ground under it, from its root's
    horizontal positions ``root_xy_m`` (T, 2) averaged over ``window_s`` (a step's rise and fall of
    speed evened out); ``ground_velocity_mps`` (2,) or (3,): a treadmill belt's, subtracted."""
    xy = np.asarray(root_xy_m, dtype=float)[:, :2]
    points = np.zeros((len(xy), 1, 3))
    points[:, 0, :2] = xy
    vel = point_velocity_mps(points, rate_hz, loop=loop)[:, 0, :2]
    if ground_velocity_mps is not None:
        vel = vel - np.asarray(ground_velocity_mps, dtype=float)[:2]
    width = int(round(window_s * rate_hz))
    if width > 1:  # velocities averaged, not positions: the clip's ends keep their speed
        vel = uniform_filter1d(vel, size=width, axis=0, mode="wrap" if loop else "nearest")
    return np.linalg.norm(vel, axis=-1)


def _hysteresis(enter: np.ndarray, stay: np.ndarray, loop: bool) -> np.ndarray:
    """Schmitt trigger along axis 0 for (T, P) bool arrays: on at ``enter``, off when not ``stay``."""
    n, p = enter.shape
    out = np.zeros((n, p), dtype=bool)
    for j in range(p):
        # For a loop, start from the state the cycle ends in (run twice, keep the second pass).
        state = False
        passes = 2 if loop else 1
        for k in range(passes):
            for t in range(n):
                state = bool(enter[t, j]) or (state and bool(stay[t, j]))
                if k == passes - 1:
                    out[t, j] = state
    return out


def remove_short_phases(flags: np.ndarray, min_frames: int) -> np.ndarray:
    """Fill swing gaps and drop stance runs shorter than ``min_frames`` (interior runs only for gaps).

    ``flags`` is (T, P) bool; returns a new array.
    """
    out = np.array(flags, dtype=bool, copy=True)
    if min_frames <= 1:
        return out
    for j in range(out.shape[1]):
        col = out[:, j]
        for start, end, value in runs(col):
            interior = start > 0 and end < len(col)
            if not value and interior and end - start < min_frames:
                col[start:end] = True
        for start, end, value in runs(col):
            if value and end - start < min_frames:
                col[start:end] = False
    return out


def detect_contacts(
    points_m: np.ndarray,
    rate_hz: float,
    loop: bool = False,
    params: ContactParams | None = None,
    ground_velocity_mps: np.ndarray | None = None,
    body_speed: np.ndarray | None = None,
) -> np.ndarray:
    """Stance flags (T, P) bool for foot points ``points_m`` (T, P, 3), world metres, Z up.

    ``ground_velocity_mps`` (3,): the ground's own velocity (a treadmill belt), against which
    "slow" is measured; None for still ground. ``body_speed`` (T,) m/s (:func:`body_speed_mps`):
    the body's speed over that ground, which raises the speed thresholds of a run (module
    docstring); None: the fixed thresholds alone."""
    params = params or ContactParams()
    pts = np.asarray(points_m, dtype=float)
    if pts.ndim != 3 or pts.shape[-1] != 3:
        raise ValueError(f"points_m must be (T, P, 3), got {pts.shape}")
    speed = point_speed_mps(
        pts, rate_hz, loop=loop, smooth_s=params.smooth_s, ground_velocity_mps=ground_velocity_mps
    )
    height = height_above_local_level_m(pts[..., 2], rate_hz, params.level_window_s, loop=loop)
    speed_on, speed_off = params.speed_on_mps, params.speed_off_mps
    if body_speed is not None:
        body = np.asarray(body_speed, dtype=float)[:, None]  # (T, 1)
        speed_on = np.maximum(speed_on, params.speed_on_body_frac * body)
        speed_off = np.maximum(speed_off, params.speed_off_body_frac * body)
    enter = (speed < speed_on) & (height < params.height_on_m)
    stay = (speed < speed_off) & (height < params.height_off_m)
    flags = _hysteresis(enter, stay, loop)
    return remove_short_phases(flags, max(int(round(params.min_phase_s * rate_hz)), 1))


def stance_phases(flags: np.ndarray) -> list[tuple[int, int]]:
    """Stance runs ``(start, end)`` (end exclusive) of a 1-D flag array (T,)."""
    return [(s, e) for s, e, v in runs(flags) if v]


def foot_flags(flags: np.ndarray, foot_of_point: np.ndarray) -> np.ndarray:
    """Per-foot stance (T, F): a foot is in stance when any of its points is.

    ``flags`` is (T, P); ``foot_of_point`` (P,) gives each point's foot index 0..F-1.
    """
    foot_of_point = np.asarray(foot_of_point, dtype=int)
    n_feet = int(foot_of_point.max()) + 1
    out = np.zeros((flags.shape[0], n_feet), dtype=bool)
    for f in range(n_feet):
        out[:, f] = flags[:, foot_of_point == f].any(axis=1)
    return out


def dilate_flags(flags: np.ndarray, frames: int, loop: bool = False) -> np.ndarray:
    """Grow stance runs by ``frames`` on each side (T, P), across the clip's end when ``loop``."""
    if frames <= 0:
        return np.asarray(flags, dtype=bool)
    grown = maximum_filter1d(
        np.asarray(flags, dtype=np.uint8), size=2 * frames + 1, axis=0, mode="wrap" if loop else "nearest"
    )
    return grown.astype(bool)
