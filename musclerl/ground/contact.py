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
) -> np.ndarray:
    """Stance flags (T, P) bool for foot points ``points_m`` (T, P, 3), world metres, Z up.

    ``ground_velocity_mps`` (3,): the ground's own velocity (a treadmill belt), against which
    "slow" is measured; None for still ground."""
    params = params or ContactParams()
    pts = np.asarray(points_m, dtype=float)
    if pts.ndim != 3 or pts.shape[-1] != 3:
        raise ValueError(f"points_m must be (T, P, 3), got {pts.shape}")
    speed = point_speed_mps(
        pts, rate_hz, loop=loop, smooth_s=params.smooth_s, ground_velocity_mps=ground_velocity_mps
    )
    height = height_above_local_level_m(pts[..., 2], rate_hz, params.level_window_s, loop=loop)
    enter = (speed < params.speed_on_mps) & (height < params.height_on_m)
    stay = (speed < params.speed_off_mps) & (height < params.height_off_m)
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
