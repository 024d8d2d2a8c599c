"""Legs that clear each other: a motion's hips abducted just enough for the model's own geoms.

A person's joint angles played on another body can put its limbs through each other: the C3D
walks of ``../shared/data/opensim_c3d`` (hip adduction up to 16°, internal rotation up to 26°) put
myolegs' knee capsules 1-5 cm into each other in 11-20 % of frames (docs/evaluation.md). The
simulation cannot take those poses, so a policy tracking them is asked for the impossible there.

:func:`clear_limbs` finds, per frame, the smallest abduction ``delta`` of both hips (the same angle
taken off each ``hip_adduction`` coordinate, bisection up to ``MAX_ABDUCTION_DEG``) that brings the
deepest overlap of two of the body's collision geoms (:func:`musclerl.dynamics.plausibility.body_overlap_m`,
the model's own contact pairs) to ``CLEAR_M``; spreads it over the neighbouring ``SPREAD_S`` and
low-passes it at the kinematics' 6 Hz, so the legs open and close smoothly. Frames whose geoms
already clear keep their pose. Angles in radians; qpos (T, nq) with the free root first.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.dynamics.clip_kinematics import LOWPASS_HZ
from musclerl.dynamics.inverse_dynamics import lowpass
from musclerl.dynamics.plausibility import body_overlap_m

CLEAR_M = 0.005  # overlap left: the depth soft contact itself gives
MAX_ABDUCTION_DEG = 10.0  # no more than this is taken off a hip's adduction
SPREAD_S = 0.05  # each frame's need held over its neighbours this far either side before the low-pass
HIP_ADDUCTION = ("hip_adduction_r", "hip_adduction_l")
BISECTIONS = 12  # 10 deg / 2^12: under 0.01 deg


def _overlap(model: mujoco.MjModel, data: mujoco.MjData, q: np.ndarray) -> float:
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    return body_overlap_m(model, data)


def clear_limbs(
    model: mujoco.MjModel, qpos: np.ndarray, rate_hz: float, coordinates: tuple[str, ...] = HIP_ADDUCTION
) -> tuple[np.ndarray, dict]:
    """``qpos`` (T, nq) with ``coordinates`` lowered (abducted) by the smooth per-frame ``delta``
    (rad) that clears the body's geoms (module docstring), and a summary: ``frames`` that needed it,
    ``overlap_max_m`` before, ``abduction_max_deg`` applied. Unchanged (and ``frames`` 0) when the
    model lacks a coordinate or no frame overlaps."""
    from scipy.ndimage import maximum_filter1d

    q = np.array(qpos, dtype=float, copy=True)
    names = [c for c in coordinates if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, c) >= 0]
    summary = {"frames": 0, "overlap_max_m": 0.0, "abduction_max_deg": 0.0}
    if len(names) != len(coordinates) or len(q) == 0:
        return q, summary
    adrs = np.array([int(model.joint(c).qposadr[0]) for c in names])
    data = mujoco.MjData(model)
    limit = np.radians(MAX_ABDUCTION_DEG)
    need = np.zeros(len(q))
    overlap = np.zeros(len(q))
    for t in range(len(q)):
        overlap[t] = _overlap(model, data, q[t])
        if overlap[t] <= CLEAR_M:
            continue
        low, high = 0.0, limit
        trial = q[t].copy()
        trial[adrs] = q[t, adrs] - high
        if _overlap(model, data, trial) <= CLEAR_M:
            for _ in range(BISECTIONS):
                mid = 0.5 * (low + high)
                trial[adrs] = q[t, adrs] - mid
                low, high = (low, mid) if _overlap(model, data, trial) <= CLEAR_M else (mid, high)
        need[t] = high
    if not need.any():
        return q, {**summary, "overlap_max_m": float(overlap.max())}
    spread = max(1, int(round(SPREAD_S * rate_hz)))
    delta = maximum_filter1d(need, size=2 * spread + 1, mode="nearest")
    delta = np.clip(lowpass(delta[:, None], rate_hz, LOWPASS_HZ)[:, 0], 0.0, limit)
    delta = np.maximum(delta, need)  # the low-pass may not undercut a frame's own need
    q[:, adrs] -= delta[:, None]
    return q, {
        "frames": int(np.sum(need > 0)),
        "overlap_max_m": float(overlap.max()),
        "abduction_max_deg": float(np.degrees(delta.max())),
    }
