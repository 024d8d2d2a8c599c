"""Put simulation and reference on one axis: the reference's timeline, or normalised gait cycles.

Time alignment
    :func:`resample` linearly interpolates a (T, C) series onto other sample times; samples outside
    the source's time span (and the neighbours of NaN samples) become NaN, so they drop out of
    every metric instead of being extrapolated.

Gait cycles
    A cycle runs from one heel strike of a foot to its next one. Heel strikes come from
    :mod:`musclerl.evaluate.gait_events` (the simulation's vertical contact force, the reference's
    GRF in any layout, boolean contact flags) or are given as event times. Each cycle is
    resampled to 0–100 % at ``CYCLE_SAMPLES`` (101) points;
    cycles whose duration differs from the median by more than ``tolerance`` (default 25 %) are
    dropped as outliers (a stumble, a trial edge).
"""

from __future__ import annotations

import dataclasses

import numpy as np

CYCLE_SAMPLES = 101


def resample(time_src_s: np.ndarray, values: np.ndarray, time_dst_s: np.ndarray) -> np.ndarray:
    """Values (T_src,) or (T_src, C) at ``time_dst_s`` (T_dst,), NaN outside / next to NaN."""
    t = np.asarray(time_src_s, dtype=float)
    v = np.asarray(values, dtype=float)
    squeeze = v.ndim == 1
    v2 = v[:, None] if squeeze else v
    dst = np.asarray(time_dst_s, dtype=float)
    out = np.full((len(dst), v2.shape[1]), np.nan)
    if len(t) == 0:
        return out[:, 0] if squeeze else out
    inside = (dst >= t[0] - 1e-9) & (dst <= t[-1] + 1e-9)
    for c in range(v2.shape[1]):
        col = v2[:, c]
        finite = np.isfinite(col)
        filled = np.interp(dst, t, np.where(finite, col, 0.0))
        # a destination sample is valid only if both neighbouring source samples are finite
        bad = np.interp(dst, t, (~finite).astype(float)) > 0
        out[:, c] = np.where(inside & ~bad, filled, np.nan)
    return out[:, 0] if squeeze else out


@dataclasses.dataclass(frozen=True)
class Cycles:
    """Cycle-normalised data. K kept cycles, 101 samples, C columns.

    ``values`` (K, 101, C); ``bounds_s`` (K, 2) start/end time of each kept cycle;
    ``dropped_s`` (D, 2) cycles dropped as duration outliers.
    """

    values: np.ndarray
    bounds_s: np.ndarray
    dropped_s: np.ndarray

    @property
    def percent(self) -> np.ndarray:
        return np.linspace(0.0, 100.0, CYCLE_SAMPLES)

    @property
    def count(self) -> int:
        return int(self.values.shape[0])

    def mean(self) -> np.ndarray:
        """(101, C) mean over cycles, NaN-aware (NaN where no cycle has data)."""
        if self.count == 0:
            return np.full(self.values.shape[1:], np.nan)
        with np.errstate(all="ignore"):
            return np.nanmean(np.where(np.isfinite(self.values), self.values, np.nan), axis=0)

    def sd(self) -> np.ndarray:
        if self.count == 0:
            return np.full(self.values.shape[1:], np.nan)
        with np.errstate(all="ignore"):
            return np.nanstd(self.values, axis=0)


def cycle_bounds(strikes_s: np.ndarray, tolerance: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """(kept (K, 2), dropped (D, 2)) cycle start/end times from sorted heel strikes (H,)."""
    s = np.sort(np.asarray(strikes_s, dtype=float))
    bounds = np.stack([s[:-1], s[1:]], axis=1) if len(s) >= 2 else np.zeros((0, 2))
    if len(bounds) == 0:
        return bounds, bounds
    duration = bounds[:, 1] - bounds[:, 0]
    median = np.median(duration)
    keep = np.abs(duration - median) <= tolerance * median
    return bounds[keep], bounds[~keep]


def normalise_cycles(
    time_s: np.ndarray, values: np.ndarray, strikes_s: np.ndarray, tolerance: float = 0.25
) -> Cycles:
    """Cut (T, C) ``values`` into heel-strike-to-heel-strike cycles of 101 samples each."""
    v = np.asarray(values, dtype=float)
    v = v[:, None] if v.ndim == 1 else v
    kept, dropped = cycle_bounds(strikes_s, tolerance)
    out = np.zeros((len(kept), CYCLE_SAMPLES, v.shape[1]))
    for k, (a, b) in enumerate(kept):
        out[k] = resample(time_s, v, np.linspace(a, b, CYCLE_SAMPLES))
    return Cycles(out, kept, dropped)
