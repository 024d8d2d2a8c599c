"""The figures the field reports for a walking policy, per trial and per leg.

Headline columns: the sagittal hip flexion, knee and ankle angles (deg) and moments (N·m/kg; the
policy's net moment, and the muscles' alone beside it), and the vertical and anterior-posterior
ground reaction (BW), each for both legs; r and RMSE on time (valid reference samples) and on gait
cycles (r and RMSE of the cycle means, 101 points, each leg cut at its own heel strikes). All other
columns are secondary.

Gait events per foot (:func:`gait_summary`): heel-strike and toe-off timing errors (ms, the
policy's event minus the reference's nearest within 0.3 s), the peak vertical GRF (BW, mean over
complete stances) of both, and the fraction of the policy's stance frames with the knee within
``KNEE_LIMIT_MARGIN_DEG`` of a bound of its joint range (the aim: at most 5 %): all of them, and
(``knee_at_limit_beyond_motion_frac``) those where the motion it tracks keeps the knee more than
``KNEE_CLEAR_DEG`` from that bound. A person who stands on a straight knee (some do: OpenCap's
subject at 0-3 deg in mid-stance) is copied, not locked; the lock the field objects to is the knee
on its stop where the person flexes it.
"""

from __future__ import annotations

import numpy as np

from musclerl.evaluate.gait_events import SIDES, FootGRF, GaitEvents, event_timing_errors_ms, stance_peaks_bw

JOINTS = ("hip_flexion", "knee_angle", "ankle_angle")
KINDS = ("angle", "torque", "torque_muscle")
GRF_COMPONENTS = ("vertical", "ap")
KNEE_LIMIT_MARGIN_DEG = 1.0
KNEE_CLEAR_DEG = 5.0
KNEE_LIMIT_AIM = 0.05
LABELS = {
    "angle": "angle",
    "torque": "moment (net)",
    "torque_muscle": "moment (muscles only)",
    "grf": "GRF",
}


def headline_keys() -> list[str]:
    """``kind:column`` of every headline column, in report order: per kind, joint, leg; then GRF."""
    keys = [f"{kind}:{joint}_{side}" for kind in KINDS for joint in JOINTS for side in SIDES]
    return keys + [f"grf:{what}_{side}" for what in GRF_COMPONENTS for side in SIDES]


def headline_rows(table: list[dict]) -> list[dict]:
    """The rows of a trial's metrics table (``report.rows``) for the headline columns, in
    :func:`headline_keys` order, each with ``quantity`` (e.g. "knee_angle moment (net)") and ``leg``."""
    by_key = {f"{r['kind']}:{r['column']}": r for r in table}
    out = []
    for key in headline_keys():
        if key in by_key:
            kind, _, column = key.partition(":")
            name, _, side = column.rpartition("_")
            out.append({**by_key[key], "quantity": f"{name} {LABELS[kind]}", "leg": side})
    return out


def _at_bound(angle, lo, hi, margin_deg: float, target=None, clear_deg: float = KNEE_CLEAR_DEG) -> np.ndarray:
    """(T,) bool: ``angle`` (T,) within ``margin_deg`` of the bound ``lo`` or ``hi``; with ``target``
    (T,), only where the target is more than ``clear_deg`` from that bound."""
    at_lo, at_hi = angle <= lo + margin_deg, angle >= hi - margin_deg
    if target is not None:
        at_lo &= target > lo + clear_deg
        at_hi &= target < hi - clear_deg
    return at_lo | at_hi


def knee_at_limit_fraction(
    rec,
    stance: np.ndarray,
    side: str,
    margin_deg: float = KNEE_LIMIT_MARGIN_DEG,
    target_deg: np.ndarray | None = None,
    clear_deg: float = KNEE_CLEAR_DEG,
) -> float:
    """Fraction of the policy's stance frames (``stance`` (T,) bool on the recording's frames) with
    ``knee_angle_<side>`` within ``margin_deg`` of a bound of its joint range; with ``target_deg``
    (T,), the tracked motion's knee on the same frames, only the frames where the target is more
    than ``clear_deg`` from that bound count. NaN without stance, knee or range."""
    name = f"knee_angle_{side}"
    if name not in rec.coordinates or rec.coordinate_range is None or not np.any(stance):
        return float("nan")
    k = rec.coordinates.index(name)
    lo, hi = rec.coordinate_range[k]
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return float("nan")
    stance = np.asarray(stance, bool)
    target = None if target_deg is None else np.asarray(target_deg, dtype=float)[stance]
    return float(np.mean(_at_bound(rec.angle[stance, k], lo, hi, margin_deg, target, clear_deg)))


#: gait-summary key prefix of :func:`bounds_beyond_motion` (followed by the coordinate's name)
BOUND_KEY = "at_bound_beyond_motion_frac_"


def bounds_beyond_motion(
    rec,
    target_deg: dict[str, np.ndarray],
    margin_deg: float = KNEE_LIMIT_MARGIN_DEG,
    clear_deg: float = KNEE_CLEAR_DEG,
) -> dict[str, float]:
    """Per coordinate with a range and a tracked target (``target_deg``: name -> (T,) on the
    recording's frames, the recording's units), the fraction of all recorded frames within
    ``margin_deg`` of a bound where the target is more than ``clear_deg`` from it: a joint parked on
    its stop that the motion does not put there, in stance or swing. The knee's lock in stance has
    its own figure; the same lock elsewhere (a policy's toes held on their stop where the reference
    bends them only at toe-off: docs/evaluation.md) shows here. Keys ``BOUND_KEY + name``."""
    out: dict[str, float] = {}
    if rec.coordinate_range is None or not len(rec.time_s):
        return out
    for k, name in enumerate(rec.coordinates):
        lo, hi = rec.coordinate_range[k]
        if name in target_deg and np.isfinite(lo) and np.isfinite(hi):
            target = np.asarray(target_deg[name], dtype=float)
            parked = _at_bound(rec.angle[:, k], lo, hi, margin_deg, target, clear_deg)
            out[BOUND_KEY + name] = float(np.mean(parked))
    return out


def gait_summary(
    rec,
    sim_grf: FootGRF,
    sim_events: dict[str, GaitEvents],
    ref_grf: FootGRF | None,
    ref_events: dict[str, GaitEvents] | None,
    target_knee_deg: dict[str, np.ndarray] | None = None,
    timed_events: dict[str, GaitEvents] | None = None,
) -> dict[str, float]:
    """Per foot (suffix ``_r`` / ``_l``): ``peak_vertical_sim_bw``, ``peak_vertical_ref_bw``,
    ``heel_strike_error_ms``, ``heel_strike_abs_error_ms``, ``heel_strikes_matched``, the same for
    ``toe_off``, ``sim_heel_strikes``, ``ref_heel_strikes``, ``knee_at_limit_stance_frac`` and, given
    the tracked motion's knee angles on the recording's frames (``target_knee_deg``: side -> (T,)
    deg), ``knee_at_limit_beyond_motion_frac``. Timing errors compare ``ref_events`` with
    ``timed_events`` (default ``sim_events``: the policy's by the same rule as the reference's,
    e.g. both kinematic where the reference has no GRF); none without ``ref_events``. Reference
    peaks are NaN without reference GRF."""
    out: dict[str, float] = {}
    nan = float("nan")
    timed_events = timed_events or sim_events
    for side in SIDES:
        ev = sim_events[side]
        out[f"peak_vertical_sim_bw_{side}"] = stance_peaks_bw(sim_grf, side, ev)
        out[f"peak_vertical_ref_bw_{side}"] = stance_peaks_bw(ref_grf, side) if ref_grf is not None else nan
        out[f"sim_heel_strikes_{side}"] = len(timed_events[side].heel_strikes_s)
        out[f"ref_heel_strikes_{side}"] = len(ref_events[side].heel_strikes_s) if ref_events else 0
        for event, attr in (("heel_strike", "heel_strikes_s"), ("toe_off", "toe_offs_s")):
            if ref_events is None:
                timing = {"mean_error_ms": nan, "mean_abs_error_ms": nan, "matched": 0}
            else:
                timed = getattr(timed_events[side], attr)
                timing = event_timing_errors_ms(timed, getattr(ref_events[side], attr))
            out[f"{event}_error_ms_{side}"] = timing["mean_error_ms"]
            out[f"{event}_abs_error_ms_{side}"] = timing["mean_abs_error_ms"]
            out[f"{event}s_matched_{side}"] = timing["matched"]
        out[f"knee_at_limit_stance_frac_{side}"] = knee_at_limit_fraction(rec, ev.stance, side)
        if target_knee_deg is not None and side in target_knee_deg:
            out[f"knee_at_limit_beyond_motion_frac_{side}"] = knee_at_limit_fraction(
                rec, ev.stance, side, target_deg=target_knee_deg[side]
            )
    return out


def touchdown_delays_ms(force: dict[str, GaitEvents], kinematic: dict[str, GaitEvents]) -> dict[str, float]:
    """Per side, the mean time (ms) from each kinematic heel strike (Zeni's: the heel farthest
    ahead of the pelvis) to the force's heel strike nearest it (within 0.3 s): how long a foot
    that has finished reaching forward takes to land. A person lands 25-40 ms after it (the
    gait2354 walk's plates); a foot that hovers before it lands shows here while its leg's
    timing about the pelvis (the kinematic events) is right. NaN where no pair is found."""
    out = {}
    for side in SIDES:
        timing = event_timing_errors_ms(force[side].heel_strikes_s, kinematic[side].heel_strikes_s)
        out[side] = timing["mean_error_ms"]
    return out
