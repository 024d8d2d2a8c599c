"""Checks on a skeleton motion as a file gives it: leading rest-pose frames, and a rest skeleton
whose legs are not straight.

Rest frames
-----------
Motion-capture conversions often open with the skeleton's rest pose (CMU's BVH files: a T-pose,
arms abducted ~80-90°, knees straight), and some blend from it into the motion over a few
frames (the DAZ conversion: 4-5 frames). Such a frame is not motion: the first frame-to-frame
change is a jump of 15-90 cm where the rest of the clip moves 1-4 cm per frame at 120 Hz.

:func:`leading_rest_frames` measures, between consecutive frames, the largest displacement of
the body keypoints (:data:`BODY_KEYPOINTS` that the motion has: pelvis, legs, spine, neck,
elbows, wrists; not fingers, whose single-frame glitches CMU's files have) relative to the
pelvis, so that walking speed does not count::

    jump_m[t] = max_k | (p[t+1, k] - p[t+1, pelvis]) - (p[t, k] - p[t, pelvis]) |     (T-1,)

and calls frame 0 a rest frame when ``jump_m[0]`` exceeds both :data:`REST_JUMP_MIN_M` and
:data:`REST_JUMP_RATIO` times the clip's median jump. The frames after it are dropped too while
their jump still exceeds that threshold (a blend out of the rest pose), at most
:data:`REST_MAX_S` of them. A clip of fewer than :data:`REST_MIN_FRAMES` frames is not judged
(no median to compare with). Measured on ``../shared/data/cmu_walks`` (2026-12-05): ``mb/``
first jump 57-90 cm against medians of 1.1-3.7 cm (one frame dropped), ``daz/`` 15-24 cm then
18-22, 16-20, 12-14 cm against medians of 1.2-2.3 cm (four frames dropped), ``max/`` 0.2-0.6 cm
(none dropped; its files have no rest frame). Single-frame glitches inside a clip (CMU 104_04:
20 cm at frame 17) are not at the start and are left alone.

Rest skeleton
-------------
A human skeleton's rest pose has straight legs: the thigh bone (hip to knee) and the shank
(knee to ankle) in line. :func:`rest_knee_bend_deg` measures the angle between them in the
rest skeleton (all joint angles zero, the OFFSETs alone). CMU's ``mb/`` and ``max/``
conversions have 0.0°; the DAZ conversion has 7.7° on both legs, and its motions come out in a
crouch: trial 07_06 straightens its knee fully in ``mb/`` (median flexion 31°), never below 11°
(median 39°) in ``daz/``, the joint angles having been solved for another skeleton. A bend
above :data:`MAX_REST_KNEE_BEND_DEG` is reported as a problem with the motion's knee flexion
(:func:`knee_flexion_deg`) as evidence; the retargeting refuses such a file unless told to
accept it.

Positions are metres in MuJoCo's Z-up world (:class:`~musclerl.motion.keypoints.KeypointMotion`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: Keypoints whose motion relative to the pelvis tells a rest frame (those a motion has).
BODY_KEYPOINTS = (
    "left_hip",
    "left_knee",
    "left_ankle",
    "left_foot",
    "right_hip",
    "right_knee",
    "right_ankle",
    "right_foot",
    "spine3",
    "neck",
    "left_elbow",
    "left_wrist",
    "right_elbow",
    "right_wrist",
)
REST_JUMP_RATIO = 4.0  # times the median frame-to-frame jump: a discontinuity, not motion
REST_JUMP_MIN_M = 0.05  # and at least 5 cm (a clip standing still has a median near 0)
REST_MAX_S = 0.1  # at most this much of a clip's start is a rest pose and its blend
REST_MIN_FRAMES = 10  # fewer frames: no median to judge by
MAX_REST_KNEE_BEND_DEG = 5.0  # human rest skeletons: straight legs (CMU mb/max 0.0°, DAZ 7.7°)


@dataclasses.dataclass(frozen=True)
class RestFrames:
    """Leading rest frames found by :func:`leading_rest_frames`: ``count`` frames dropped (0 when
    none), the first jump ``jump_m`` and the clip's median ``typical_jump_m`` (metres per frame),
    and the first frame's pose: upper-arm abduction from hanging (deg, mean of both arms; None
    without elbows) and knee flexion (deg, mean of both legs)."""

    count: int
    jump_m: float
    typical_jump_m: float
    arm_abduction_deg: float | None
    knee_flexion_deg: float

    def note(self) -> str:
        """One line for reports: what was dropped and why."""
        arms = "" if self.arm_abduction_deg is None else f"arms abducted {self.arm_abduction_deg:.0f}°, "
        return (
            f"dropped {self.count} leading rest-pose frame(s) ({arms}knees flexed "
            f"{self.knee_flexion_deg:.0f}°; a jump of {100 * self.jump_m:.0f} cm to the next frame "
            f"against {100 * self.typical_jump_m:.1f} cm per frame in the clip)"
        )


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (deg) between vectors ``a`` and ``b`` (..., 3), over the last axis."""
    cos = np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def pose_jumps_m(positions_m: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """(T-1,) largest pelvis-relative displacement of the :data:`BODY_KEYPOINTS` between
    consecutive frames of ``positions_m`` (T, K, 3) (module docstring)."""
    keep = [names.index(k) for k in BODY_KEYPOINTS if k in names]
    relative = positions_m[:, keep] - positions_m[:, [names.index("pelvis")]]
    return np.linalg.norm(np.diff(relative, axis=0), axis=-1).max(axis=1)


def knee_flexion_deg(positions_m: np.ndarray, names: tuple[str, ...], side: str) -> np.ndarray:
    """(T,) knee flexion of one leg (``"left"``/``"right"``), degrees: 180° minus the angle at
    the knee between hip and ankle (0 = straight), from the keypoint positions (T, K, 3)."""
    hip, knee, ankle = (positions_m[:, names.index(f"{side}_{p}")] for p in ("hip", "knee", "ankle"))
    return 180.0 - _angle_deg(hip - knee, ankle - knee)


def _arm_abduction_deg(
    positions_m: np.ndarray, names: tuple[str, ...], parents: tuple[int, ...]
) -> float | None:
    """Mean upper-arm angle from hanging straight down (deg) in one frame (K, 3), or None."""
    angles = []
    for side in ("left", "right"):
        if f"{side}_elbow" not in names or not parents:
            continue
        elbow = names.index(f"{side}_elbow")
        arm = positions_m[elbow] - positions_m[parents[elbow]]
        length = np.linalg.norm(arm)
        if length > 0:
            angles.append(np.degrees(np.arccos(np.clip(-arm[2] / length, -1.0, 1.0))))
    return float(np.mean(angles)) if angles else None


def leading_rest_frames(
    positions_m: np.ndarray, names: tuple[str, ...], rate_hz: float, parents: tuple[int, ...] = ()
) -> RestFrames:
    """The rest-pose frames a clip (T, K, 3) opens with (module docstring); ``count`` 0 when
    its first frame is motion or the clip is shorter than :data:`REST_MIN_FRAMES`."""
    first = positions_m[0]
    knees = [float(knee_flexion_deg(positions_m[:1], names, s)[0]) for s in ("left", "right")]
    arms = _arm_abduction_deg(first, names, parents)
    if len(positions_m) < REST_MIN_FRAMES:
        return RestFrames(0, 0.0, 0.0, arms, float(np.mean(knees)))
    jumps = pose_jumps_m(positions_m, names)
    typical = float(np.median(jumps))
    threshold = max(REST_JUMP_MIN_M, REST_JUMP_RATIO * typical)
    limit = min(max(1, int(round(REST_MAX_S * rate_hz))), len(jumps) // 2)
    count = 0
    while count < limit and jumps[count] > threshold:
        count += 1
    return RestFrames(count, float(jumps[0]), typical, arms, float(np.mean(knees)))


def rest_knee_bend_deg(thigh: np.ndarray, shank: np.ndarray) -> float:
    """Angle (deg) between a leg's thigh bone ``thigh`` (3,) (the knee's OFFSET) and shank
    ``shank`` (3,) (the ankle's OFFSET) in the rest skeleton: 0 for a straight leg."""
    return float(_angle_deg(thigh, shank))


def bent_rest_legs(bend_deg: dict[str, float], positions_m: np.ndarray, names: tuple[str, ...]) -> str | None:
    """The problem line when a leg's rest-skeleton knee bend (``{"left": deg, "right": deg}``)
    exceeds :data:`MAX_REST_KNEE_BEND_DEG`, with the motion's knee flexion (T, K, 3 positions)
    as evidence; None when both legs are straight."""
    if max(bend_deg.values()) <= MAX_REST_KNEE_BEND_DEG:
        return None
    flexion = np.stack([knee_flexion_deg(positions_m, names, s) for s in ("left", "right")])
    bends = ", ".join(f"{side} {deg:.1f}°" for side, deg in bend_deg.items())
    return (
        f"the rest skeleton bends the knees ({bends}; thigh and shank OFFSETs out of line by more "
        f"than {MAX_REST_KNEE_BEND_DEG:g}°, a human rest skeleton has straight legs): the joint "
        f"offsets put the knees in a crouch; in the motion the knees stay flexed more than "
        f"{np.percentile(flexion, 2, axis=1).min():.0f}° in 98 % of frames (median {np.median(flexion):.0f}°)"
    )
