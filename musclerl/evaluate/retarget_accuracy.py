"""Retargeting accuracy against an expert's OpenSim IK: one row per trial, and their mean.

Input: a folder written by ``musclerl retarget markers TRIALS --out FOLDER --mot 1`` (``<trial>.json``
reports and ``<trial>.mot`` tables in OpenSim coordinates) and the folder of the expert's
``<trial>.mot``. Per trial: RMS difference (deg) of hip, knee and ankle flexion and hip adduction
(both sides pooled; gait2354's negative knee flexion flipped), marker RMS (mm) of the lower-body
markers (every marker not on the trunk), the largest fraction of frames any coordinate spends at a
limit, whether the floor came out flat, and the stance feet's slip (m/s).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from musclerl.motion.storage import read_storage

ANGLES = {
    "hip_flexion": "hip",
    "knee_angle": "knee",
    "ankle_angle": "ankle",
    "hip_adduction": "hip_adduction",
}
TRUNK_BODIES = ("torso",)
COLUMNS = (
    "hip_rms_deg",
    "knee_rms_deg",
    "ankle_rms_deg",
    "hip_adduction_rms_deg",
    "marker_rms_lower_mm",
    "at_limit_max_frac",
    "floor_flat",
    "stance_slip_mps",
)


def trial_row(report_path: Path, mot_path: Path, expert_path: Path) -> dict:
    """One trial's row (keys :data:`COLUMNS`, plus ``trial`` and ``at_limit_worst``)."""
    report = json.loads(Path(report_path).read_text())
    ours, expert = read_storage(mot_path), read_storage(expert_path)
    row: dict = {"trial": Path(report_path).stem}
    for column, key in ANGLES.items():
        errors = []
        for side in "rl":
            name = f"{column}_{side}"
            ref = np.interp(ours.time_s, expert.time_s, expert.column(name))
            if column == "knee_angle" and np.median(ref) < 0:
                ref = -ref
            errors.append(ours.column(name) - ref)
        row[f"{key}_rms_deg"] = float(np.sqrt(np.mean(np.square(errors))))
    bodies = {n: m.get("body") for n, m in report.get("registration", {}).items()}
    lower = [rms for n, rms in report["marker_rms_by_name_m"].items() if bodies.get(n) not in TRUNK_BODIES]
    row["marker_rms_lower_mm"] = 1000.0 * float(np.sqrt(np.mean(np.square(lower))))
    limits = report.get("limit_bound_frac", {})
    worst = max(limits, key=limits.get) if limits else ""
    row["at_limit_max_frac"] = float(limits.get(worst, 0.0))
    row["at_limit_worst"] = worst
    floor = report.get("floor", {})
    row["floor_flat"] = bool(floor.get("flat", False))
    row["stance_slip_mps"] = floor.get("stance_speed_mps")
    return row


def accuracy_table(out_dir: Path, expert_dir: Path, trials: list[str]) -> tuple[list[dict], dict]:
    """Rows for ``trials`` (stems) and their mean (numbers averaged, ``floor_flat`` the fraction)."""
    rows = [
        trial_row(Path(out_dir) / f"{t}.json", Path(out_dir) / f"{t}.mot", Path(expert_dir) / f"{t}.mot")
        for t in trials
    ]
    mean = {"trial": "mean"}
    for key in COLUMNS:
        values = [float(r[key]) for r in rows if r[key] is not None]
        mean[key] = float(np.mean(values)) if values else float("nan")
    return rows, mean


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    head = "| trial | hip ° | knee ° | ankle ° | hip add ° | markers mm | at limit | floor | slip m/s |"
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        flat = r["floor_flat"]
        floor = ("flat" if flat else "sloped") if isinstance(flat, bool) else f"{100 * flat:.0f} % flat"
        slip = "-" if r["stance_slip_mps"] is None else f"{r['stance_slip_mps']:.3f}"
        lines.append(
            f"| {r['trial']} | {r['hip_rms_deg']:.1f} | {r['knee_rms_deg']:.1f} | {r['ankle_rms_deg']:.1f} | "
            f"{r['hip_adduction_rms_deg']:.1f} | {r['marker_rms_lower_mm']:.1f} | "
            f"{100 * r['at_limit_max_frac']:.0f} % {r.get('at_limit_worst', '')} | {floor} | {slip} |"
        )
    return "\n".join(lines)
