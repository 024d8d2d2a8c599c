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
    body_speed_mps,
    detect_contacts,
    height_above_local_level_m,
    point_velocity_mps,
)
from musclerl.ground.surface import geom_positions_m
from musclerl.models.geoms import foot_geoms


def belt_velocity_mps(
    sole_m: np.ndarray,
    rate_hz: float,
    params: ContactParams | None = None,
    root_xy_m: np.ndarray | None = None,
    rounds: int = 4,
) -> np.ndarray:
    """Horizontal velocity (2,) of the ground under the stance feet, from sole points ``sole_m``
    (T, P, 3) (:mod:`musclerl.retarget.markers.ground`'s step 2); zero when no point is ever low.

    A first guess from every low point (their median; with ``root_xy_m``, the velocity most low
    points share, :func:`_densest_velocity`), then the median velocity of the points in stance on a belt
    moving at the guess. With the body's root ``root_xy_m`` (T, 2), its speed over that belt also
    sets the stance thresholds (a runner's rolling forefoot, :mod:`musclerl.ground.contact`) and the
    estimate is repeated up to ``rounds`` times until it moves less than 1 cm/s: on a treadmill run
    the low points include landings and toe-offs, and the first guess is 60-85 % of the belt's
    speed (CMU runs put on a belt of 3.5-4.4 m/s)."""
    params = params or ContactParams()
    vel = point_velocity_mps(sole_m, rate_hz, smooth_s=params.smooth_s)[..., :2]
    height = height_above_local_level_m(sole_m[..., 2], rate_hz, params.level_window_s)
    low = height < params.height_on_m
    if not low.any():
        return np.zeros(2)
    belt = _densest_velocity(vel[low]) if root_xy_m is not None else np.median(vel[low], axis=0)
    for _ in range(rounds if root_xy_m is not None else 1):
        body = None
        if root_xy_m is not None:
            body = body_speed_mps(root_xy_m, rate_hz, params.body_speed_window_s, ground_velocity_mps=belt)
        flags = detect_contacts(
            sole_m, rate_hz, params=params, ground_velocity_mps=np.append(belt, 0.0), body_speed=body
        )
        if not flags.any():
            break
        previous, belt = belt, np.median(vel[flags], axis=0)
        if np.linalg.norm(belt - previous) < 0.01:
            break
    return belt


def _densest_velocity(vel_mps: np.ndarray, radius_mps: float = 0.5, most: int = 2000) -> np.ndarray:
    """The velocity (2,) most of ``vel_mps`` (N, 2) share: the median of the largest group within
    ``radius_mps`` of one of them (up to ``most`` of them tried, evenly spaced). The stance feet
    on a belt all move with it; landings and toe-offs spread out around it."""
    picks = vel_mps[:: max(1, len(vel_mps) // most)]
    near = np.linalg.norm(picks[:, None, :] - picks[None, :, :], axis=-1) < radius_mps  # (n, n)
    centre = picks[int(np.argmax(near.sum(axis=1)))]
    group = np.linalg.norm(vel_mps - centre, axis=-1) < radius_mps
    return np.median(vel_mps[group], axis=0)


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
