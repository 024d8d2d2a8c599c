"""Tables across evaluated trials: per trial, per subject and aggregated (mean ± sd, median).

Inputs are :class:`musclerl.evaluate.trial.TrialResult` objects, or failure rows (a trial name and
its one-line error). Every metric is the per-trial value computed on valid samples only
(:mod:`musclerl.evaluate.metrics`); a trial whose column has no valid sample contributes NaN,
which the aggregates skip (``n`` counts the trials that had data).

Table rows are flat dicts (CSV-ready): ``trial_rows`` (one per trial, failures included with
``status`` "error"), ``column_rows`` (one per trial and compared column: kind, column, n_valid,
r, rmse, nrmse, lag_s), ``subject_rows``, ``subject_column_rows`` and ``aggregate_rows`` (one per
tracking metric and per kind/column/metric: n, mean, sd, median).
"""

from __future__ import annotations

from typing import Any

import numpy as np

TRACKING_FIELDS = (
    "success_rate",
    "duration_s",
    "mpjpe_global_m",
    "mpjpe_root_relative_m",
    "mean_site_error_m",
    "speed_mps",
    "reference_speed_mps",
)
COLUMN_FIELDS = ("r", "rmse", "nrmse", "lag_s")
KINDS = ("torque", "torque_muscle", "grf", "activation", "angle", "emg")


def stats(values: list[float]) -> dict[str, float]:
    """n (finite values), mean, sd (sample, ddof=1; 0 for one value), median and the quartiles
    q1, q3 (the IQR is q3 - q1)."""
    x = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        nan = float("nan")
        return {"n": 0, "mean": nan, "sd": nan, "median": nan, "q1": nan, "q3": nan}
    sd = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    q1, median, q3 = (float(v) for v in np.percentile(x, [25, 50, 75]))
    return {"n": int(x.size), "mean": float(np.mean(x)), "sd": sd, "median": median, "q1": q1, "q3": q3}


def _kind_means(columns: list[dict]) -> dict[str, float]:
    """Per kind: mean r, RMSE, nRMSE and |lag| over the columns with data."""
    out = {}
    for kind in KINDS:
        sel = [c for c in columns if c["kind"] == kind]
        if not sel:
            continue
        for field in COLUMN_FIELDS:
            vals = [abs(c[field]) if field == "lag_s" and np.isfinite(c["r"]) else c[field] for c in sel]
            if field == "lag_s":
                vals = [v if np.isfinite(c["r"]) else np.nan for v, c in zip(vals, sel, strict=True)]
            key = "mean_abs_lag_s" if field == "lag_s" else f"mean_{field}"
            out[f"{kind}_{key}"] = stats(vals)["mean"]
    return out


def trial_rows(results: list, failures: list[dict]) -> list[dict]:
    """One row per trial: name, subject, status, error, tracking metrics, per-kind means."""
    rows = []
    for res in results:
        row = {"trial": res.name, "subject": res.subject, "status": "done", "error": ""}
        row.update({k: res.tracking.get(k) for k in ("episodes", "frames", "early_terminations")})
        row.update({k: res.tracking.get(k) for k in ("trial_duration_s", "tracked_to_end", "end_reason")})
        row.update({k: res.tracking.get(k) for k in TRACKING_FIELDS})
        row.update(_kind_means(res.columns))
        rows.append(row)
    for fail in failures:
        rows.append({"trial": fail["trial"], "subject": "", "status": "error", "error": fail["error"]})
    return rows


def column_rows(results: list) -> list[dict]:
    """One row per trial and compared column (valid samples only)."""
    rows = []
    for res in results:
        for c in res.columns:
            rows.append(
                {
                    "trial": res.name,
                    "subject": res.subject,
                    "kind": c["kind"],
                    "column": c["column"],
                    "n_valid": c["n_valid"],
                    **{f: c[f] for f in COLUMN_FIELDS},
                    # a column without enough valid samples has no lag either
                    "lag_s": c["lag_s"] if np.isfinite(c["r"]) else float("nan"),
                    "lag_at_bound": bool(c.get("lag_at_bound", False)),
                    "r_applicable": bool(c.get("r_applicable", True)),
                }
            )
    return rows


def subject_rows(results: list) -> list[dict]:
    """One row per subject: trial count and the means of its trials' tracking and per-kind values."""
    rows = []
    for subject in sorted({r.subject for r in results}):
        mine = [r for r in results if r.subject == subject]
        row: dict[str, Any] = {"subject": subject, "trials": len(mine)}
        row["tracked_to_end"] = sum(bool(r.tracking.get("tracked_to_end")) for r in mine)
        for k in TRACKING_FIELDS:
            row[k] = stats([r.tracking.get(k, np.nan) for r in mine])["mean"]
        per_trial = [_kind_means(r.columns) for r in mine]
        for key in sorted({k for m in per_trial for k in m}):
            row[key] = stats([m.get(key, np.nan) for m in per_trial])["mean"]
        rows.append(row)
    return rows


def subject_column_rows(results: list) -> list[dict]:
    """Per subject, kind and column: the mean over that subject's trials of each column metric."""
    rows = []
    cols = column_rows(results)
    keys = sorted({(c["subject"], c["kind"], c["column"]) for c in cols})
    for subject, kind, column in keys:
        sel = [c for c in cols if (c["subject"], c["kind"], c["column"]) == (subject, kind, column)]
        row = {"subject": subject, "kind": kind, "column": column, "trials": len(sel)}
        row.update({f: stats([c[f] for c in sel])["mean"] for f in COLUMN_FIELDS})
        rows.append(row)
    return rows


def aggregate_rows(results: list) -> list[dict]:
    """Across trials: one row per tracking metric, and per kind/column/metric (n, mean, sd, median)."""
    rows = []
    for k in TRACKING_FIELDS:
        rows.append(
            {"kind": "tracking", "column": "", "metric": k, **stats([r.tracking.get(k) for r in results])}
        )
    cols = column_rows(results)
    for kind, column in sorted(
        {(c["kind"], c["column"]) for c in cols}, key=lambda kc: (KINDS.index(kc[0]), kc[1])
    ):
        sel = [c for c in cols if c["kind"] == kind and c["column"] == column]
        for f in COLUMN_FIELDS:
            rows.append({"kind": kind, "column": column, "metric": f, **stats([c[f] for c in sel])})
    return rows


def torque_cycle_stack(results: list) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per torque column, the trials' (sim, ref) cycle means stacked: two (n_trials, 101) arrays."""
    names = sorted({n for r in results for n in r.torque_cycles})
    out = {}
    for name in names:
        pairs = [r.torque_cycles[name] for r in results if name in r.torque_cycles]
        out[name] = (np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))
    return out
