"""Generated SMPL clips with a known truth for the SMPL pipeline: a walk over known ground (steps,
slopes), and crouches and a jump in place (:func:`smpl_crouch_jump`).

:func:`smpl_walk` takes the feet of :func:`musclerl.retarget.synthetic.gait.walk_feet`, puts the
pelvis between them at a height the legs can reach, and solves each leg of the built-in neutral
SMPL skeleton (:data:`musclerl.motion.smpl.SMPL_NEUTRAL_OFFSETS_M`) for hip, knee and ankle
rotations that place the ankle and foot (toe-base) joints on the planned feet. The result is
SMPL parameters (axis-angle, as AMASS stores them) which :func:`write_walk_npz` writes with
:func:`musclerl.motion.smpl.write_amass_npz`, so the clip goes through the real reader.

Ground convention of the generated clip: a planted foot has its ankle joint ``ANKLE_ABOVE_SOLE_M``
above the ground and its foot joint level with the foot's pitch; the true ground is
``course.height_m(x)``. (SMPL itself stores no ground; where a real clip puts its sole depends
on the body mesh, which the joint skeleton does not carry.)
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from scipy.ndimage import uniform_filter1d
from scipy.optimize import least_squares

from musclerl.geometry.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from musclerl.motion.smpl import SMPL_NEUTRAL_OFFSETS_M, smpl_forward_kinematics, write_amass_npz
from musclerl.retarget.synthetic.gait import Course, GaitParams, SyntheticGait, walk_feet

ANKLE_ABOVE_SOLE_M = 0.07
#: SMPL body frame (Y up, facing +Z, left +X) -> world (Z up) facing +x, left +y.
BODY_TO_WORLD = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
_LEGS = {"left": (1, 4, 7, 10), "right": (2, 5, 8, 11)}  # hip, knee, ankle, foot joint indices


@dataclasses.dataclass(frozen=True)
class SmplWalk:
    """SMPL parameters of a generated walk: ``root_orient`` (T, 3), ``body_pose`` (T, 23, 3)
    axis-angle radians, ``trans_m`` (T, 3); ``gait`` the planned feet and the true course."""

    root_orient: np.ndarray
    body_pose: np.ndarray
    trans_m: np.ndarray
    rate_hz: float
    gait: SyntheticGait
    fit_error_m: np.ndarray  # (T, 2) worst ankle/foot miss per leg


def _leg_points(
    params: np.ndarray, hip_m: np.ndarray, root: np.ndarray, joints: tuple[int, ...]
) -> np.ndarray:
    """Ankle and foot joint (2, 3) for hip rotvec (3), knee flexion (1), ankle rotvec (3)."""
    off = SMPL_NEUTRAL_OFFSETS_M
    _, knee, ankle, foot = joints
    r_hip = root @ axis_angle_to_matrix(params[:3])
    knee_m = hip_m + r_hip @ off[knee]
    r_knee = r_hip @ axis_angle_to_matrix([params[3], 0.0, 0.0])
    ankle_m = knee_m + r_knee @ off[ankle]
    r_ankle = r_knee @ axis_angle_to_matrix(params[4:7])
    return np.stack([ankle_m, ankle_m + r_ankle @ off[foot]])


def _foot_targets(
    gait: SyntheticGait, foot: int, side: str, heel_to_ankle_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Ankle (T, 3) and foot-joint (T, 3) targets: the foot joint hangs at SMPL's bone length
    and angle below-ahead of the ankle, turned by the foot's pitch."""
    off = SMPL_NEUTRAL_OFFSETS_M[_LEGS[side][3]]  # body frame: x left, y up, z forward
    drop = np.arctan2(off[1], np.hypot(off[2], off[0]))
    length = float(np.linalg.norm(off))
    pitch = gait.pitch_rad[:, foot]
    ankle = gait.heel_m[:, foot] + heel_to_ankle_m * np.stack(
        [np.cos(pitch), np.zeros_like(pitch), np.sin(pitch)], axis=-1
    )
    ankle[:, 2] += ANKLE_ABOVE_SOLE_M / np.cos(gait.pitch_rad[:, foot])
    angle = gait.pitch_rad[:, foot] + drop
    foot_pt = ankle + length * np.stack([np.cos(angle), np.zeros_like(angle), np.sin(angle)], axis=-1)
    return ankle, foot_pt


def smpl_walk(
    course: Course, gait_params: GaitParams | None = None, pelvis_above_ankles_m: float = 0.84
) -> SmplWalk:
    """Generate the SMPL walk over ``course`` (see the module docstring)."""
    gp = gait_params or GaitParams(stance_width_m=0.16, ankle_height_m=ANKLE_ABOVE_SOLE_M)
    gait = walk_feet(course, gp)
    n = len(gait.heel_m)
    off = SMPL_NEUTRAL_OFFSETS_M
    targets = {
        side: _foot_targets(gait, f, side, gp.heel_to_ankle_m) for f, side in enumerate(("left", "right"))
    }
    ankles = np.stack([targets["left"][0], targets["right"][0]], axis=1)  # (T, 2, 3)
    smooth = max(int(round(0.25 * gp.rate_hz)), 1)
    pelvis = np.zeros((n, 3))
    pelvis[:, 0] = uniform_filter1d(ankles[:, :, 0].mean(axis=1), smooth, mode="nearest") + 0.03
    pelvis[:, 1] = 0.015 * np.sin(np.pi * np.arange(n) / (gp.step_time_s * gp.rate_hz))
    pelvis[:, 2] = uniform_filter1d(ankles[:, :, 2].mean(axis=1), smooth, mode="nearest")
    pelvis[:, 2] += pelvis_above_ankles_m
    root = BODY_TO_WORLD
    reach = 0.985 * (np.linalg.norm(off[4]) + np.linalg.norm(off[7]))
    for _ in range(3):  # lower the pelvis wherever a leg could not reach, then smooth again
        for f, side in enumerate(("left", "right")):
            hip = pelvis + off[_LEGS[side][0]] @ root.T
            d = ankles[:, f] - hip
            horiz = np.hypot(d[:, 0], d[:, 1])
            max_drop = np.sqrt(np.maximum(reach**2 - horiz**2, 0.0))
            hip_below_pelvis = -(root @ off[_LEGS[side][0]])[2]
            pelvis[:, 2] = np.minimum(pelvis[:, 2], ankles[:, f, 2] + max_drop + hip_below_pelvis)
        pelvis[:, 2] = np.minimum(pelvis[:, 2], uniform_filter1d(pelvis[:, 2], 5, mode="nearest"))
    body_pose = np.zeros((n, 23, 3))
    body_pose[:, 15] = [0.0, 0.0, -1.2]  # left shoulder: arm down from the T-pose
    body_pose[:, 16] = [0.0, 0.0, 1.2]
    body_pose[:, 17] = [0.0, -0.2, 0.0]  # elbows slightly bent
    body_pose[:, 18] = [0.0, 0.2, 0.0]
    error = np.zeros((n, 2))
    lower = np.array([-np.inf] * 3 + [0.0] + [-np.inf] * 3)
    upper = np.array([np.inf] * 3 + [2.5] + [np.inf] * 3)
    for f, side in enumerate(("left", "right")):
        hip_j, knee_j, ankle_j, _ = _LEGS[side]
        x = np.array([0.0, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0])
        for t in range(n):
            hip = pelvis[t] + root @ off[hip_j]
            goal = np.stack([targets[side][0][t], targets[side][1][t]])

            def residual(p, hip=hip, goal=goal, joints=_LEGS[side]):
                miss = (_leg_points(p, hip, root, joints) - goal).ravel()
                return np.concatenate([miss, 0.02 * p, [0.1 * p[1], 0.1 * p[5]]])

            x = least_squares(residual, np.clip(x, lower, upper), bounds=(lower, upper), xtol=1e-10).x
            error[t, f] = np.abs(_leg_points(x, hip, root, _LEGS[side]) - goal).max()
            body_pose[t, hip_j - 1] = x[:3]
            body_pose[t, knee_j - 1] = [x[3], 0.0, 0.0]
            body_pose[t, ankle_j - 1] = x[4:7]
    root_orient = np.repeat(matrix_to_axis_angle(root)[None], n, axis=0)
    return SmplWalk(
        root_orient=root_orient,
        body_pose=body_pose,
        trans_m=pelvis - off[0],
        rate_hz=gp.rate_hz,
        gait=gait,
        fit_error_m=error,
    )


#: Crouch-and-jump key poses: (time s, knee flexion, ankle dorsiflexion, trunk lean, degrees),
#: eased between with cosines. Standing; a shallow crouch; a deep crouch past a typical model's
#: 30 deg dorsiflexion limit (held 3.9-4.4 s); a counter-movement, push-off on the toes, flight
#: (``FLIGHT_S``) and a landing into a crouch.
CROUCH_JUMP_KEYS = (
    (0.0, 5.0, 2.0, 5.0),
    (0.6, 5.0, 2.0, 5.0),
    (1.3, 70.0, 20.0, 25.0),
    (1.8, 70.0, 20.0, 25.0),
    (2.5, 5.0, 2.0, 5.0),
    (3.0, 5.0, 2.0, 5.0),
    (3.9, 115.0, 38.0, 40.0),
    (4.4, 115.0, 38.0, 40.0),
    (5.2, 5.0, 2.0, 5.0),
    (5.6, 90.0, 26.0, 35.0),
    (5.95, 0.0, -35.0, 5.0),
    (6.15, 25.0, -20.0, 5.0),
    (6.3, 10.0, -10.0, 5.0),
    (6.65, 85.0, 25.0, 30.0),
    (7.4, 5.0, 2.0, 5.0),
)
FLIGHT_S = (5.95, 6.3)  # take-off and touch-down


@dataclasses.dataclass(frozen=True)
class SmplCrouchJump:
    """SMPL parameters (as :class:`SmplWalk`) of :func:`smpl_crouch_jump`, with the truth per
    frame: knee flexion, ankle dorsiflexion, trunk lean and hip flexion (T,) radians (both legs
    alike) and ``airborne`` (T,) bool."""

    root_orient: np.ndarray
    body_pose: np.ndarray
    trans_m: np.ndarray
    rate_hz: float
    knee_rad: np.ndarray
    ankle_rad: np.ndarray
    lean_rad: np.ndarray
    hip_rad: np.ndarray
    airborne: np.ndarray


def _eased(keys: np.ndarray, time_s: np.ndarray) -> np.ndarray:
    """Values (T, k) through key rows (n, 1 + k) (time first), cosine-eased between keys."""
    idx = np.clip(np.searchsorted(keys[:, 0], time_s, side="right") - 1, 0, len(keys) - 2)
    t0, t1 = keys[idx, 0], keys[idx + 1, 0]
    u = np.clip((time_s - t0) / (t1 - t0), 0.0, 1.0)
    w = (0.5 - 0.5 * np.cos(np.pi * u))[:, None]
    return (1.0 - w) * keys[idx, 1:] + w * keys[idx + 1, 1:]


def smpl_crouch_jump(rate_hz: float = 60.0, jump_height_m: float = 0.15) -> SmplCrouchJump:
    """Crouches and a jump in place of the neutral SMPL skeleton (:data:`CROUCH_JUMP_KEYS`).

    Sagittal poses only: trunk lean ``p`` tilts the pelvis forward, knee flexion ``k`` and ankle
    dorsiflexion ``a`` as keyed, hip flexion ``h = k - a + p`` so the feet stay level (pitch
    ``p - h + k - a = 0``) while on the ground. Standing, the lower of each foot's ankle
    (``ANKLE_ABOVE_SOLE_M`` above its sole) and foot joint (its flat height) rests on z = 0 at a
    fixed x; in flight the pelvis follows a parabola ``jump_height_m`` above the line joining its
    take-off and touch-down heights."""
    off = SMPL_NEUTRAL_OFFSETS_M
    time_s = np.arange(int(round(CROUCH_JUMP_KEYS[-1][0] * rate_hz)) + 1) / rate_hz
    knee, ankle, lean = np.radians(_eased(np.array(CROUCH_JUMP_KEYS), time_s)).T
    hip = knee - ankle + lean
    n = len(time_s)
    tilt = axis_angle_to_matrix(np.outer(lean, [1.0, 0.0, 0.0]))
    root = np.einsum("ij,tjk->tik", BODY_TO_WORLD, tilt)
    body_pose = np.zeros((n, 23, 3))
    for side in ("left", "right"):
        hip_j, knee_j, ankle_j, _ = _LEGS[side]
        body_pose[:, hip_j - 1, 0] = -hip
        body_pose[:, knee_j - 1, 0] = knee
        body_pose[:, ankle_j - 1, 0] = -ankle
    body_pose[:, 15] = [0.0, 0.0, -1.2]  # arms down from the T-pose, as in smpl_walk
    body_pose[:, 16] = [0.0, 0.0, 1.2]
    root_orient = matrix_to_axis_angle(root)
    joints = smpl_forward_kinematics(root_orient, body_pose, np.zeros((n, 3)))
    feet_idx = [j for side in ("left", "right") for j in _LEGS[side][2:]]  # ankle, foot per leg
    flat_foot_m = ANKLE_ABOVE_SOLE_M + (BODY_TO_WORLD @ off[_LEGS["left"][3]])[2]
    lift = np.array([ANKLE_ABOVE_SOLE_M, flat_foot_m] * 2)
    lowest = (joints[:, feet_idx, 2] - lift).min(axis=1)  # (T,) sole below the pelvis
    trans = np.zeros((n, 3))
    trans[:, 0] = -joints[:, feet_idx[0], 0]  # the left ankle's x fixed at 0 while standing
    trans[:, 2] = -lowest
    airborne = (time_s > FLIGHT_S[0]) & (time_s < FLIGHT_S[1])
    span = FLIGHT_S[1] - FLIGHT_S[0]
    tau = np.clip(time_s - FLIGHT_S[0], 0.0, span)
    i0, i1 = (int(np.argmin(np.abs(time_s - s))) for s in FLIGHT_S)
    line = trans[i0, 2] + (trans[i1, 2] - trans[i0, 2]) * tau / span
    parabola = line + 4.0 * jump_height_m * tau * (span - tau) / span**2
    trans[airborne, 2] = np.maximum(parabola, trans[:, 2])[airborne]
    trans[airborne, 0] = trans[i0, 0] + (trans[i1, 0] - trans[i0, 0]) * tau[airborne] / span
    return SmplCrouchJump(root_orient, body_pose, trans, rate_hz, knee, ankle, lean, hip, airborne)


def write_walk_npz(path: str | os.PathLike, walk: SmplWalk | SmplCrouchJump) -> None:
    """Write ``walk`` (or any generated clip) as an AMASS SMPL-H ``.npz`` (21 body joints;
    SMPL's hand joints dropped)."""
    write_amass_npz(
        path,
        root_orient=walk.root_orient,
        body_pose=walk.body_pose[:, :21],
        trans_m=walk.trans_m,
        rate_hz=walk.rate_hz,
    )
