"""Per leg and per segment quality of a retargeted trial, and one warning line when one side is
clearly worse than the other.

A trial that fits one leg and not the other (a cluster whose labels are swapped, a marker on the
wrong bone, a hip pinned on its rotation limit) shows in the pooled figures only as a middling
RMS: 26 mm overall may be 9 mm on one leg and 40 on the other. Split by side it shows, and the
retargeting says so.

Sides are read from names, as OpenSim's and the MJCF models' name them: a body or joint ending in
``_r`` is the right side's, ``_l`` the left's (``femur_r``, ``hip_rotation_l``); others (pelvis,
torso) belong to neither.

Fields added to the report:

``marker_rms_by_segment_m``
    per body, the RMS over its targets (each target's RMS over the frames it is present in).
``sides``
    per side: ``marker_rms_m`` (its targets pooled as above), ``bound_frac`` (frames in which
    one of its joints sits on a bound), ``bound_longest_s`` (the longest run of such frames) and
    ``joints_on_bound`` (joint -> fraction of frames).
``side_warning``
    None, or one line naming each worse side and why: its markers at least
    :data:`WORSE_MARKER_RATIO` x the other side's RMS and :data:`WORSE_MARKER_M` more, or its
    joints on a bound in :data:`WORSE_BOUND_FRAC` more of the frames than the other side's.
"""

from __future__ import annotations

import numpy as np

from musclerl.geometry.arrays import runs

SIDES = {"right": "_r", "left": "_l"}
WORSE_MARKER_RATIO = 1.5
WORSE_MARKER_M = 0.005
# a symmetric walk's legs differ in time on a bound by a few frames; OpenCap's right knee on its
# 0 deg extension bound in 15-17 % of frames vs 0 % on the left is the marker fit's (1-2 deg
# straighter than the expert's) and not called a failed leg; a hip pinned on its rotation limit
# in 29 % of frames is
WORSE_BOUND_FRAC = 0.20


def side_of(name: str) -> str | None:
    """``"right"``, ``"left"`` or None from a body or joint name's suffix."""
    for side, suffix in SIDES.items():
        if name.endswith(suffix):
            return side
    return None


def _pooled(values: list[float]) -> float | None:
    return float(np.sqrt(np.mean(np.square(values)))) if values else None


def _longest_run(flags: np.ndarray) -> int:
    """Length of the longest run of True in ``flags`` (T,)."""
    return max((b - a for a, b, on in runs(flags) if on), default=0)


def side_summary(
    rms_by_name_m: dict[str, float | None],
    target_bodies: dict[str, str],
    bound: np.ndarray,
    joint_names: list[str],
    rate_hz: float,
) -> dict:
    """The fields of the module docstring from per-target RMS (name -> m, None when never present),
    each target's body, and ``bound`` (T, J) bool: joint ``joint_names[j]`` on a bound in frame t."""
    segments: dict[str, list[float]] = {}
    for name, rms in rms_by_name_m.items():
        if rms is not None and name in target_bodies:
            segments.setdefault(target_bodies[name], []).append(rms)
    sides: dict[str, dict] = {}
    for side in SIDES:
        markers = [v for body, values in segments.items() if side_of(body) == side for v in values]
        columns = [j for j, name in enumerate(joint_names) if side_of(name) == side]
        on_bound = bound[:, columns] if columns else np.zeros((len(bound), 0), dtype=bool)
        any_bound = on_bound.any(axis=1) if len(bound) else np.zeros(0, dtype=bool)
        fractions = on_bound.mean(axis=0) if len(bound) else np.zeros(len(columns))
        sides[side] = {
            "marker_rms_m": _pooled(markers),
            "bound_frac": float(any_bound.mean()) if len(any_bound) else 0.0,
            "bound_longest_s": _longest_run(any_bound) / rate_hz,
            "joints_on_bound": {
                joint_names[j]: float(f) for j, f in zip(columns, fractions, strict=True) if f > 0
            },
        }
    by_segment = {body: _pooled(values) for body, values in segments.items()}
    return {
        "marker_rms_by_segment_m": by_segment,
        "sides": sides,
        "side_warning": side_warning(sides, by_segment),
    }


def side_warning(sides: dict[str, dict], by_segment_m: dict[str, float | None]) -> str | None:
    """One line naming each leg that is clearly worse than the other (module docstring), with its
    worst segment or joint; None when neither is."""
    reasons: dict[str, list[str]] = {"right": [], "left": []}
    rms = {s: sides[s]["marker_rms_m"] for s in SIDES}
    for worse, better in (("right", "left"), ("left", "right")):
        if rms[worse] is not None and rms[better] is not None:
            if rms[worse] >= WORSE_MARKER_RATIO * rms[better] and rms[worse] - rms[better] >= WORSE_MARKER_M:
                mine = {b: v for b, v in by_segment_m.items() if side_of(b) == worse and v is not None}
                segment = max(mine, key=mine.get)
                reasons[worse].append(
                    f"markers {1e3 * rms[worse]:.0f} mm RMS vs {1e3 * rms[better]:.0f} mm on the {better} "
                    f"({segment} {1e3 * mine[segment]:.0f} mm)"
                )
        if sides[worse]["bound_frac"] - sides[better]["bound_frac"] >= WORSE_BOUND_FRAC:
            joints = sides[worse]["joints_on_bound"]
            top = max(joints, key=joints.get)
            reasons[worse].append(
                f"on a joint bound in {100 * sides[worse]['bound_frac']:.0f} % of frames vs "
                f"{100 * sides[better]['bound_frac']:.0f} % ({top} {100 * joints[top]:.0f} %, longest "
                f"{sides[worse]['bound_longest_s']:.2f} s)"
            )
    parts = [f"the {side} leg is clearly worse: " + "; ".join(r) for side, r in reasons.items() if r]
    return " | ".join(parts) or None
