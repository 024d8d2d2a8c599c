"""The treadmill belt under a clip: the horizontal velocity of the ground under the stance feet.

On a treadmill the stance foot moves with the belt; overground it rests. One estimator
(:func:`belt_velocity_mps`, on sole points) serves the marker pipeline's ground pass and, on a
model's foot geoms (:func:`model_belt_velocity_mps`), the reference's treadmill-to-overground change.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.ground.contact import (
    ContactParams,
    detect_contacts,
    height_above_local_level_m,
    point_velocity_mps,
)
from musclerl.ground.surface import geom_positions_m
from musclerl.models.geoms import foot_geoms


def belt_velocity_mps(sole_m: np.ndarray, rate_hz: float, params: ContactParams | None = None) -> np.ndarray:
    """Horizontal velocity (2,) of the ground under the stance feet, from sole points ``sole_m``
    (T, P, 3) (:mod:`musclerl.retarget.markers.ground`'s step 2); zero when no point is ever low."""
    params = params or ContactParams()
    vel = point_velocity_mps(sole_m, rate_hz, smooth_s=params.smooth_s)[..., :2]
    height = height_above_local_level_m(sole_m[..., 2], rate_hz, params.level_window_s)
    low = height < params.height_on_m
    if not low.any():
        return np.zeros(2)
    belt = np.median(vel[low], axis=0)
    flags = detect_contacts(sole_m, rate_hz, params=params, ground_velocity_mps=np.append(belt, 0.0))
    return np.median(vel[flags], axis=0) if flags.any() else belt


def model_belt_velocity_mps(model: mujoco.MjModel, qpos: np.ndarray, time_s: np.ndarray) -> np.ndarray:
    """Treadmill belt velocity (2,) world x, y: the ground velocity under the stance feet, from the
    foot geoms' centres (:func:`musclerl.models.geoms.foot_geoms`) at the times ``time_s`` (T,) by
    :func:`belt_velocity_mps` (the median velocity of the feet while low and steady); zero for
    fewer than 3 frames."""
    pos = geom_positions_m(model, qpos, foot_geoms(model))
    time_s = np.asarray(time_s, dtype=float)
    if len(time_s) < 3:
        return np.zeros(2)
    return belt_velocity_mps(pos, float((len(time_s) - 1) / (time_s[-1] - time_s[0])))
