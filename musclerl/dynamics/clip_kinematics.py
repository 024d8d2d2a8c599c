"""One clip's motion smoothed and differentiated the way the plausibility check reads it.

:func:`clip_kinematics` extends a clip beyond its ends (a looping clip by its own cycle, moved by
the cycle's root displacement and heading change; a non-looping clip by a quadratic fitted on the
manifold to its first and last ``EDGE_FIT_S``), low-passes the coordinates at 6 Hz with
quaternions kept in one hemisphere (:func:`lowpass_qpos`), and differentiates by central
differences. Used by :mod:`musclerl.dynamics.plausibility` and the retargeting finish.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from musclerl.dynamics.inverse_dynamics import lowpass, velocities

LOWPASS_HZ = 6.0  # OpenSim's inverse-dynamics default; gait kinematics carry little above 6 Hz (Winter)
PAD_S = 0.5  # frames added beyond each clip end before filtering: the 6 Hz filter settles in ~0.3 s
EDGE_FIT_S = 0.15  # quadratic fit to this much of a non-looping clip's ends to extend it


def _quat_adrs(model: mujoco.MjModel) -> list[int]:
    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    return [
        int(model.jnt_qposadr[j]) + (3 if int(model.jnt_type[j]) == free else 0)
        for j in range(model.njnt)
        if int(model.jnt_type[j]) in (free, ball)
    ]


def _heading(quat: np.ndarray) -> float:
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    return math.atan2(mat[3], mat[0])  # world direction of the body x axis in the ground plane


def _wrapped(model: mujoco.MjModel, qpos: np.ndarray, pad: int) -> np.ndarray:
    """A looping clip (T, nq) continued ``pad`` frames both ways, (T + 2 pad, nq)."""
    n = len(qpos)
    rest = np.ones(model.nq, dtype=bool)
    rest[:7] = False
    steps = np.linalg.norm(np.diff(qpos[:, rest], axis=0), axis=1) if n > 1 else np.zeros(1)
    seam = np.linalg.norm(qpos[-1, rest] - qpos[0, rest])
    repeat = n >= 3 and np.median(steps) > 0 and seam < 0.5 * np.median(steps)
    period = n - 1 if repeat else n
    xy = qpos[:, :2]
    yaw = np.unwrap([_heading(q) for q in qpos[:, 3:7]])
    if repeat or n < 2:
        end_xy, turn = xy[n - 1], yaw[n - 1] - yaw[0]
    else:  # one more step: the mean of the steps either side of the seam (the first one turned)
        turn = yaw[-1] + 0.5 * ((yaw[-1] - yaw[-2]) + (yaw[1] - yaw[0])) - yaw[0]
        c, s = math.cos(turn), math.sin(turn)
        first = xy[1] - xy[0]
        end_xy = xy[-1] + 0.5 * (
            (xy[-1] - xy[-2]) + [c * first[0] - s * first[1], s * first[0] + c * first[1]]
        )
    out = np.zeros((n + 2 * pad, model.nq))
    for i in range(-pad, n + pad):
        cycles, j = divmod(i, period)
        q = qpos[j].copy()
        angle = turn * cycles
        for _ in range(abs(cycles)):  # x -> R(turn)(x - xy0) + end_xy, or its inverse
            c, s = math.cos(math.copysign(turn, cycles)), math.sin(math.copysign(turn, cycles))
            d = q[:2] - (xy[0] if cycles > 0 else end_xy)
            q[:2] = [c * d[0] - s * d[1], s * d[0] + c * d[1]]
            q[:2] += end_xy if cycles > 0 else xy[0]
        yaw_quat = np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)])
        mujoco.mju_mulQuat(q[3:7], yaw_quat, qpos[j, 3:7].copy())
        out[i + pad] = q
    return out


def _extended(model: mujoco.MjModel, qpos: np.ndarray, pad: int, fit: int) -> np.ndarray:
    """A non-looping clip (T, nq) extended ``pad`` frames both ways by a quadratic in the tangent
    space fitted to its first/last ``fit`` frames, (T + 2 pad, nq)."""
    n = len(qpos)
    fit = min(n, max(fit, 3))
    degree = min(2, fit - 1)
    out = np.zeros((n + 2 * pad, model.nq))
    out[pad : pad + n] = qpos
    for ref, frames, times, targets, slots in (
        (qpos[0], qpos[:fit], np.arange(fit), -np.arange(pad, 0, -1), range(pad)),
        (
            qpos[-1],
            qpos[n - fit :],
            np.arange(1 - fit, 1),
            np.arange(1, pad + 1),
            range(pad + n, 2 * pad + n),
        ),
    ):
        tangent = np.zeros((fit, model.nv))
        for k in range(fit):
            mujoco.mj_differentiatePos(model, tangent[k], 1.0, ref, frames[k])
        coef = np.polyfit(times, tangent, degree) if fit > 1 else tangent[:1]
        for slot, time in zip(slots, targets, strict=True):
            q = ref.copy()
            mujoco.mj_integratePos(model, q, np.vander([time], degree + 1)[0] @ coef, 1.0)
            out[slot] = q
    return out


def lowpass_qpos(model: mujoco.MjModel, qpos: np.ndarray, rate_hz: float, cutoff_hz: float) -> np.ndarray:
    """Zero-phase low-pass of (T, nq) coordinates (:func:`musclerl.dynamics.inverse_dynamics.lowpass`);
    quaternions kept in one hemisphere first (q and -q are one rotation; IK may return either),
    then renormalised."""
    q = np.array(qpos, dtype=float)
    adrs = _quat_adrs(model)
    for a in adrs:
        flips = np.concatenate([[0], np.cumsum(np.sum(q[1:, a : a + 4] * q[:-1, a : a + 4], axis=1) < 0) % 2])
        q[:, a : a + 4] *= np.where(flips, -1.0, 1.0)[:, None]
    q = lowpass(q, rate_hz, cutoff_hz)
    for a in adrs:
        q[:, a : a + 4] /= np.linalg.norm(q[:, a : a + 4], axis=1, keepdims=True)
    return q


def clip_kinematics(
    model: mujoco.MjModel, qpos: np.ndarray, rate_hz: float, loop: bool, cutoff_hz: float = LOWPASS_HZ
) -> tuple[np.ndarray, ...]:
    """One clip's neighbours and smoothed motion, each (T, nq) or (T, nv).

    Returns (qpos of the previous frame, qpos of the next frame, filtered qpos, filtered qvel,
    filtered qacc); neighbours beyond the clip's ends come from the wrap or the extension.
    """
    n = len(qpos)
    pad = max(3, math.ceil(PAD_S * rate_hz))
    if loop:
        padded = _wrapped(model, qpos, pad)
    else:
        padded = _extended(model, qpos, pad, round(EDGE_FIT_S * rate_hz))
    time_s = np.arange(len(padded)) / rate_hz
    keep = slice(pad, pad + n)
    smooth = lowpass_qpos(model, padded, rate_hz, cutoff_hz)
    qvel, qacc = velocities(model, smooth, time_s)
    return padded[pad - 1 : pad - 1 + n], padded[pad + 1 : pad + 1 + n], smooth[keep], qvel[keep], qacc[keep]
