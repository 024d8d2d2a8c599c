"""Synthetic ground truth for IK: a known smooth motion of a model and the markers it produces.

Used by the solver's tests and ``musclerl bench ik``: the motion drives every independent
limited hinge/slide coordinate sinusoidally inside its range (30 % of the range around the
middle, 0.5–1.5 Hz), walks the free root forward at 1.2 m/s with a little bob and yaw, and sets
dependent coordinates through the model's joint equalities. Markers are 3 points per body
(random offsets of ~6 cm, fixed by ``seed``) measured with MuJoCo C (``mj_kinematics``) plus
Gaussian noise.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.retarget.ground.soles import point_positions_m
from musclerl.retarget.ik.constraints import JointEqualities
from musclerl.retarget.ik.kinematics import FREE, HINGE, SLIDE


@dataclasses.dataclass(frozen=True)
class SyntheticClip:
    """q: (T, nq) true qpos. markers_m: (T, M, 3) noisy world marker positions.
    marker_bodies: (M,) body names. local_points_m: (M, 3) marker offsets in their bodies.
    coord_qadr: qpos addresses of the driven (independent) coordinates. rate_hz: frame rate."""

    q: np.ndarray
    markers_m: np.ndarray
    marker_bodies: tuple[str, ...]
    local_points_m: np.ndarray
    coord_qadr: np.ndarray
    rate_hz: float


def marker_positions(
    model: mujoco.MjModel, qs: np.ndarray, bodies: list[str], local_points_m: np.ndarray
) -> np.ndarray:
    """World positions (T, M, 3) of body-fixed points for qs (T, nq), with MuJoCo C."""
    ids = [model.body(b).id for b in bodies]
    return point_positions_m(model, qs, list(zip(ids, np.asarray(local_points_m), strict=True)))


def synthetic_clip(
    model: mujoco.MjModel,
    n_frames: int,
    noise_m: float = 0.002,
    seed: int = 0,
    rate_hz: float = 100.0,
    markers_per_body: int = 3,
) -> SyntheticClip:
    """A smooth ``n_frames`` motion of ``model`` and its noisy markers (see module docstring)."""
    rng = np.random.default_rng(seed)
    eq = JointEqualities(model)
    dependent = set(eq.dep_qadr.tolist())
    t = np.arange(n_frames) / rate_hz
    qs = np.tile(model.qpos0, (n_frames, 1))
    coords, bodies = [], []
    for j in range(model.njnt):
        jtype, adr = int(model.jnt_type[j]), int(model.jnt_qposadr[j])
        body = model.body(int(model.jnt_bodyid[j])).name
        if jtype == FREE:
            qs[:, adr] += 1.2 * t
            qs[:, adr + 2] += 0.02 * np.sin(2 * np.pi * 1.8 * t)
            yaw = 0.3 * np.sin(2 * np.pi * 0.4 * t + rng.uniform(0, 2 * np.pi))
            turn = np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], axis=1)
            for k in range(n_frames):
                mujoco.mju_mulQuat(qs[k, adr + 3 : adr + 7], turn[k], model.qpos0[adr + 3 : adr + 7])
            bodies.append(body)
        elif jtype in (HINGE, SLIDE) and model.jnt_limited[j] and adr not in dependent:
            lo, hi = model.jnt_range[j]
            phase, freq = rng.uniform(0, 2 * np.pi), rng.uniform(0.5, 1.5)
            qs[:, adr] = 0.5 * (lo + hi) + 0.3 * (hi - lo) * np.sin(2 * np.pi * freq * t + phase)
            coords.append(adr)
            bodies.append(body)
    if eq.dep_qadr.size:
        qs[:, eq.dep_qadr] = eq.dependent_values(qs)
    marker_bodies = [b for b in dict.fromkeys(bodies) for _ in range(markers_per_body)]
    local = rng.normal(size=(len(marker_bodies), 3)) * 0.06
    clean = marker_positions(model, qs, marker_bodies, local)
    noisy = clean + rng.normal(size=clean.shape) * noise_m
    return SyntheticClip(
        q=qs,
        markers_m=noisy,
        marker_bodies=tuple(marker_bodies),
        local_points_m=local,
        coord_qadr=np.array(coords, dtype=np.int64),
        rate_hz=rate_hz,
    )
