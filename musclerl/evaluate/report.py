"""Evaluation outputs: ``metrics.json``, ``metrics.csv`` (one row per column) and ``report.md``.

``metrics.csv`` columns: kind (torque, angle, activation, emg), column, unit, n_valid, rmse,
nrmse, r, lag_frames, lag_s, r_at_lag, cycle_r, cycle_rmse, sim_cycles, ref_cycles (cycle fields
empty without gait cycles). ``metrics.json`` holds the same rows plus tracking metrics, per-kind
summaries, inputs and notes. ``report.md`` summarises and links every plot (relative paths).
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
) -> None:
    """Write metrics.json, metrics.csv and report.md into ``folder`` (plots already there)."""
    folder = Path(folder)
    summary = summarise(table)
    doc = {
        "inputs": inputs,
        "tracking": tracking,
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
    (folder / "report.md").write_text(_markdown(folder, table, summary, tracking, inputs, notes, plots))


def _markdown(
    folder: Path,
    table: list[dict],
    summary: dict,
    tracking: dict,
    inputs: dict,
    notes: list[str],
    plots: dict[str, list[Path]],
) -> str:
    lines = ["# musclerl evaluation", ""]
    lines += [f"- **{k}**: `{v}`" for k, v in inputs.items() if v is not None]
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
            lines.append(
                f"| {r['column']} | {r['unit']} | {r['n_valid']} | {_fmt(r['r'])} | {_fmt(r['rmse'])} | "
                f"{_fmt(r['nrmse'])} | {_fmt(r['lag_s'])} | {_fmt(r['r_at_lag'])} | "
                f"{_fmt(r.get('cycle_r'))} | {_fmt(r.get('cycle_rmse'))} | {link} |"
            )
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def _safe(name: str) -> str:
    """File-name-safe version of a column name."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name).strip("_")
