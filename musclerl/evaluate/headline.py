"""The figures the field reports for a walking policy, per trial and per leg.

Headline columns: the sagittal hip flexion, knee and ankle angles (deg) and moments (N·m/kg; the
policy's net moment, and the muscles' alone beside it), and the vertical and anterior-posterior
ground reaction (BW), each for both legs; r and RMSE on time (valid reference samples) and on gait
cycles (r and RMSE of the cycle means, 101 points, each leg cut at its own heel strikes). All other
columns are secondary.

Gait events per foot (:func:`gait_summary`): heel-strike and toe-off timing errors (ms, the
policy's event minus the reference's nearest within 0.3 s), the peak vertical GRF (BW, mean over
complete stances) of both, and the fraction of the policy's stance frames with the knee within
``KNEE_LIMIT_MARGIN_DEG`` of a bound of its joint range (the aim: at most 5 %).
"""

from __future__ import annotations

import numpy as np

from musclerl.evaluate.gait_events import SIDES, FootGRF, GaitEvents, event_timing_errors_ms, stance_peaks_bw

JOINTS = ("hip_flexion", "knee_angle", "ankle_angle")
KINDS = ("angle", "torque", "torque_muscle")
GRF_COMPONENTS = ("vertical", "ap")
KNEE_LIMIT_MARGIN_DEG = 1.0
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


def knee_at_limit_fraction(
    rec, stance: np.ndarray, side: str, margin_deg: float = KNEE_LIMIT_MARGIN_DEG
) -> float:
    """Fraction of the policy's stance frames (``stance`` (T,) bool on the recording's frames) with
    ``knee_angle_<side>`` within ``margin_deg`` of a bound of its joint range; NaN without stance,
    knee or range."""
    name = f"knee_angle_{side}"
    if name not in rec.coordinates or rec.coordinate_range is None or not np.any(stance):
        return float("nan")
    k = rec.coordinates.index(name)
    lo, hi = rec.coordinate_range[k]
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return float("nan")
    angle = rec.angle[np.asarray(stance, bool), k]
    return float(np.mean((angle <= lo + margin_deg) | (angle >= hi - margin_deg)))


def gait_summary(
    rec,
    sim_grf: FootGRF,
    sim_events: dict[str, GaitEvents],
    ref_grf: FootGRF | None,
    ref_events: dict[str, GaitEvents] | None,
) -> dict[str, float]:
    """Per foot (suffix ``_r`` / ``_l``): ``peak_vertical_sim_bw``, ``peak_vertical_ref_bw``,
    ``heel_strike_error_ms``, ``heel_strike_abs_error_ms``, ``heel_strikes_matched``, the same for
    ``toe_off``, ``sim_heel_strikes``, ``ref_heel_strikes`` and ``knee_at_limit_stance_frac``.
    Reference figures are NaN without reference GRF (``ref_events`` None)."""
    out: dict[str, float] = {}
    nan = float("nan")
    for side in SIDES:
        ev = sim_events[side]
        out[f"peak_vertical_sim_bw_{side}"] = stance_peaks_bw(sim_grf, side, ev)
        out[f"peak_vertical_ref_bw_{side}"] = stance_peaks_bw(ref_grf, side) if ref_grf is not None else nan
        out[f"sim_heel_strikes_{side}"] = len(ev.heel_strikes_s)
        out[f"ref_heel_strikes_{side}"] = len(ref_events[side].heel_strikes_s) if ref_events else 0
        for event, attr in (("heel_strike", "heel_strikes_s"), ("toe_off", "toe_offs_s")):
            if ref_events is None:
                timing = {"mean_error_ms": nan, "mean_abs_error_ms": nan, "matched": 0}
            else:
                timing = event_timing_errors_ms(getattr(ev, attr), getattr(ref_events[side], attr))
            out[f"{event}_error_ms_{side}"] = timing["mean_error_ms"]
            out[f"{event}_abs_error_ms_{side}"] = timing["mean_abs_error_ms"]
            out[f"{event}s_matched_{side}"] = timing["matched"]
        out[f"knee_at_limit_stance_frac_{side}"] = knee_at_limit_fraction(rec, ev.stance, side)
    return out
