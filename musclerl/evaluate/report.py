"""Evaluation outputs: ``metrics.json``, ``metrics.csv`` (one row per column) and ``report.md``.

``metrics.csv`` columns: kind (torque: net moment, torque_muscle, angle, grf, activation, emg),
column, unit, n_valid, rmse, nrmse, r, lag_frames, lag_s, r_at_lag, ref_range, r_applicable (False:
the reference is flatter than ``metrics.MIN_RANGE_FOR_R``, r empty), lag_at_bound, cycle_r,
cycle_rmse, sim_cycles, ref_cycles (cycle fields empty without gait cycles). ``metrics.json`` holds
the same rows plus tracking metrics, the gait events per foot (:func:`headline.gait_summary`),
per-kind summaries, inputs and notes. ``report.md`` starts with the headline table (sagittal
angles, moments and GRF per leg, on time and on gait cycles), then links every plot.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.evaluate.metrics import ColumnMetrics

CSV_FIELDS = (
    "kind",
    "column",
    "unit",
    "n_valid",
    "rmse",
    "nrmse",
    "r",
    "lag_frames",
    "lag_s",
    "r_at_lag",
    "ref_range",
    "r_applicable",
    "lag_at_bound",
    "cycle_r",
    "cycle_rmse",
    "sim_cycles",
    "ref_cycles",
)


def rows(column_metrics: list[ColumnMetrics], cycle_metrics: dict[str, dict[str, float]]) -> list[dict]:
    """Flat rows (one per column) joining time-domain and cycle metrics."""
    out = []
    for m in column_metrics:
        kind, _, name = m.column.partition(":")
        row = {"kind": kind, "column": name, **{k: v for k, v in m.as_dict().items() if k != "column"}}
        row.update(cycle_metrics.get(m.column, {}))
        out.append(row)
    return out


def summarise(table: list[dict]) -> dict[str, dict[str, float]]:
    """Per kind: number of columns, mean/median r, mean RMSE and nRMSE over columns with data."""
    out = {}
    for kind in dict.fromkeys(r["kind"] for r in table):
        sel = [r for r in table if r["kind"] == kind]
        rs = np.array([r["r"] for r in sel], dtype=float)
        rm = np.array([r["rmse"] for r in sel], dtype=float)
        nr = np.array([r["nrmse"] for r in sel], dtype=float)
        ok = np.isfinite(rs)
        out[kind] = {
            "columns": len(sel),
            "columns_with_data": int(ok.sum()),
            "mean_r": _nanmean(rs),
            "median_r": float(np.nanmedian(rs)) if ok.any() else float("nan"),
            "mean_rmse": _nanmean(rm),
            "mean_nrmse": _nanmean(nr),
        }
    return out


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def write_outputs(
    folder: Path,
    table: list[dict],
    tracking: dict[str, Any],
    inputs: dict[str, Any],
    notes: list[str],
    plots: dict[str, list[Path]],
    gait: dict[str, float] | None = None,
) -> None:
    """Write metrics.json, metrics.csv and report.md into ``folder`` (plots already there)."""
    folder = Path(folder)
    summary = summarise(table)
    gait = gait or {}
    doc = {
        "inputs": inputs,
        "tracking": tracking,
        "gait": gait,
        "summary": summary,
        "columns": table,
        "notes": notes,
        "plots": {k: [str(p.relative_to(folder)) for p in v] for k, v in plots.items()},
    }
    (folder / "metrics.json").write_text(json.dumps(_clean(doc), indent=2, allow_nan=False))
    with open(folder / "metrics.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in table:
            writer.writerow({k: ("" if _clean(row.get(k)) is None else row.get(k)) for k in CSV_FIELDS})
    (folder / "report.md").write_text(_markdown(folder, table, summary, tracking, inputs, notes, plots, gait))


def _markdown(
    folder: Path,
    table: list[dict],
    summary: dict,
    tracking: dict,
    inputs: dict,
    notes: list[str],
    plots: dict[str, list[Path]],
    gait: dict[str, float],
) -> str:
    lines = ["# musclerl evaluation", ""]
    lines += [f"- **{k}**: `{v}`" for k, v in inputs.items() if v is not None]
    lines += ["", *headline_markdown(table, gait)]
    lines += ["", "## Tracking", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {_fmt(_clean(v))} |" for k, v in tracking.items()]
    if "tracking" in plots:
        lines += ["", *[f"![tracking]({p.relative_to(folder)})" for p in plots["tracking"]]]
    lines += [
        "",
        "## Summary per kind",
        "",
        "| kind | columns | with data | mean r | median r | mean RMSE | mean nRMSE |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, s in summary.items():
        lines.append(
            f"| {kind} | {s['columns']} | {s['columns_with_data']} | {_fmt(s['mean_r'])} | "
            f"{_fmt(s['median_r'])} | {_fmt(s['mean_rmse'])} | {_fmt(s['mean_nrmse'])} |"
        )
    for kind in summary:
        lines += ["", f"## {kind}", ""]
        grid = [p for p in plots.get(f"{kind}_grid", [])]
        lines += [f"![{kind}]({p.relative_to(folder)})" for p in grid]
        lines += [
            "",
            "| column | unit | valid | r | RMSE | nRMSE | lag (s) | r at lag | cycle r | cycle RMSE | plot |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        files = {p.stem: p for p in plots.get(kind, [])}
        for r in (r for r in table if r["kind"] == kind):
            stem = f"{kind}_{_safe(r['column'])}"
            link = f"[png]({files[stem].relative_to(folder)})" if stem in files else ""
            lag = _fmt(r["lag_s"]) + (" (at bound)" if r.get("lag_at_bound") else "")
            lines.append(
                f"| {r['column']} | {r['unit']} | {r['n_valid']} | {_r(r, 'r')} | {_fmt(r['rmse'])} | "
                f"{_fmt(r['nrmse'])} | {lag} | {_r(r, 'r_at_lag')} | "
                f"{_r(r, 'cycle_r')} | {_fmt(r.get('cycle_rmse'))} | {link} |"
            )
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


NOT_APPLICABLE = "n/a (flat reference)"


def _r(row: dict, field: str) -> str:
    """An r of a metrics row: "n/a" where the reference is too flat for one, else the number."""
    return NOT_APPLICABLE if row.get("r_applicable") is False else _fmt(row.get(field))


def headline_markdown(table: list[dict], gait: dict[str, float]) -> list[str]:
    """The trial's headline section (:mod:`musclerl.evaluate.headline`): sagittal angles, moments
    and GRF per leg on time and on gait cycles, then the gait events per foot."""
    from musclerl.evaluate.headline import (
        BOUND_KEY,
        KNEE_CLEAR_DEG,
        KNEE_LIMIT_AIM,
        KNEE_LIMIT_MARGIN_DEG,
        headline_rows,
    )

    lines = [
        "## Headline: sagittal joints and ground reactions, per leg",
        "",
        "r and RMSE on time (valid reference samples) and of the gait-cycle means (101 points, each leg "
        "cut at its own heel strikes; policy cycles / reference cycles). Moments: the policy's net joint "
        "moment (muscles + passive + joint limits), the muscles' alone on the next rows.",
        "",
        "| quantity | leg | unit | r | RMSE | cycle r | cycle RMSE | cycles |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in headline_rows(table):
        cycles = f"{r.get('sim_cycles', 0)} / {r.get('ref_cycles', 0)}"
        lines.append(
            f"| {r['quantity']} | {r['leg']} | {r['unit']} | {_r(r, 'r')} | {_fmt(r['rmse'])} | "
            f"{_r(r, 'cycle_r')} | {_fmt(r.get('cycle_rmse'))} | {cycles} |"
        )
    if gait:
        lines += [
            "",
            "| foot | heel strikes policy / ref | heel-strike error (ms) | toe-off error (ms) | "
            "peak vertical GRF policy / ref (BW) | "
            f"stance frames with the knee within {KNEE_LIMIT_MARGIN_DEG:g}° of a limit: all / "
            f"where the motion is over {KNEE_CLEAR_DEG:g}° from it | touchdown after the heel's "
            "farthest reach, policy / ref (ms) |",
            "|---|---|---|---|---|---|---|",
        ]
        for side in ("r", "l"):
            g = {k.removesuffix(f"_{side}"): v for k, v in gait.items() if k.endswith(f"_{side}")}
            frac = g.get("knee_at_limit_stance_frac", float("nan"))
            beyond = g.get("knee_at_limit_beyond_motion_frac", float("nan"))
            over = " (over the aim)" if isinstance(beyond, float) and beyond > KNEE_LIMIT_AIM else ""
            knee = " / ".join(_fmt(100 * f if isinstance(f, float) else f) for f in (frac, beyond))
            lines.append(
                f"| {side} | {g['sim_heel_strikes']} / {g['ref_heel_strikes']} | "
                f"{_fmt(g['heel_strike_error_ms'])} | {_fmt(g['toe_off_error_ms'])} | "
                f"{_fmt(g['peak_vertical_sim_bw'])} / {_fmt(g['peak_vertical_ref_bw'])} | {knee} %{over} | "
                f"{_fmt(g.get('touchdown_delay_sim_ms'))} / {_fmt(g.get('touchdown_delay_ref_ms'))} |"
            )
        lines.append("")
        lines.append(
            "Timing errors: policy minus reference (negative: the policy is early), events paired within "
            f"0.3 s. Aim for the knee: at most {100 * KNEE_LIMIT_AIM:g} % of stance on its limit where the "
            "motion it tracks is not. Touchdown: from the heel's farthest reach ahead of the pelvis "
            "(Zeni's heel strike) to the foot's force heel strike; a person's is 25-40 ms (gait2354's "
            "plates), a foot that hovers before it lands takes longer."
        )
        lines += [
            "",
            f"Steps (Zeni's heel strikes, over the span the policy walked): the policy "
            f"{_fmt(gait.get('step_length_sim_m'))} m at {_fmt(gait.get('cadence_sim_spm'))} steps/min, "
            f"the reference {_fmt(gait.get('step_length_ref_m'))} m at {_fmt(gait.get('cadence_ref_spm'))} "
            "steps/min.",
        ]
        bounds = {k.removeprefix(BOUND_KEY): v for k, v in gait.items() if k.startswith(BOUND_KEY)}
        parked = sorted(((name, v) for name, v in bounds.items() if v >= 0.01), key=lambda kv: -kv[1])
        lines += [
            "",
            f"Joints on a bound of their range where the motion is over {KNEE_CLEAR_DEG:g}° from it "
            f"(within {KNEE_LIMIT_MARGIN_DEG:g}°, share of all frames): "
            + (", ".join(f"{name} {_fmt(100 * v)} %" for name, v in parked) if parked else "none")
            + ".",
        ]
    return lines


def _safe(name: str) -> str:
    """File-name-safe version of a column name."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name).strip("_")
