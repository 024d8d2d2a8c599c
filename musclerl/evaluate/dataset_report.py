"""``report.md`` of a dataset evaluation: the comparison users of a Gait120-style dataset expect.

First the headline (:mod:`musclerl.evaluate.headline`): per leg, the sagittal hip flexion, knee
and ankle angles and net moments (muscles alone beside them) and the vertical and
anterior-posterior GRF, r and RMSE on time and on gait cycles, median [IQR] across trials; the
published figures for a generalist muscle policy beside the same computation
(:mod:`musclerl.evaluate.published`: gait-cycle means, left leg); the gait events per foot (timing
errors, peak vertical GRF, stance at the knee's limit). Then, secondary, per kind the mean over all
columns of r and RMSE (kinematics, torques per kg on ``joint_torque_column_valid`` samples,
activations, EMG), the trials tracked to the end, per subject, per column and per trial tables.
"""

from __future__ import annotations

import collections

from musclerl.evaluate import tables
from musclerl.evaluate.headline import BOUND_KEY, KNEE_LIMIT_AIM, headline_keys
from musclerl.evaluate.reference_motion import SIGN_NOTE
from musclerl.evaluate.report import _fmt as _f
from musclerl.models.couplings import SAGITTAL_LEG_COORDINATES

#: (label, trial_rows field, unit): means over all columns of a kind, secondary to the headline
DATASET_METRICS = (
    ("seconds tracked", "duration_s", "s"),
    ("kinematics r, all columns", "angle_mean_r", ""),
    ("kinematics r, sagittal hip/knee/ankle", "sagittal_mean_r", ""),
    ("kinematics RMSE", "angle_mean_rmse", "deg"),
    ("joint-torque r, all columns (net)", "torque_mean_r", ""),
    ("joint-torque RMSE", "torque_mean_rmse", "N*m/kg"),
    ("joint-torque nRMSE", "torque_mean_nrmse", ""),
    ("joint-torque |lag|", "torque_mean_abs_lag_s", "s"),
    ("activation r", "activation_mean_r", ""),
    ("activation RMSE", "activation_mean_rmse", "0-1"),
    ("EMG r", "emg_mean_r", ""),
)


def dataset_rows(results: list) -> list[dict]:
    """One row per metric of :data:`DATASET_METRICS`: n, median, q1, q3, mean across the trials
    (each trial's value is its mean over columns), and the published figure where there is one."""
    rows = [r for r in tables.trial_rows(results, []) if r["status"] == "done"]
    for row, res in zip(rows, results, strict=True):
        row["sagittal_mean_r"] = sagittal_r(res)
    out = []
    for label, field, unit in DATASET_METRICS:
        st = tables.stats([r.get(field) for r in rows])
        if st["n"]:
            out.append({"metric": label, "unit": unit, **st})
    ends = sum(bool(r.get("tracked_to_end")) for r in rows)
    out.append({"metric": "tracked to the end", "unit": "trials", "n": len(rows), "count": ends})
    return out


#: per trial and column of the headline: (label, field of the metrics row)
HEADLINE_FIELDS = (("r", "r"), ("RMSE", "rmse"), ("cycle r", "cycle_r"), ("cycle RMSE", "cycle_rmse"))


def headline_across(results: list) -> list[dict]:
    """Per headline column (:func:`headline_keys`): ``kind``, ``column`` and, for each of r, RMSE,
    cycle r and cycle RMSE, its :func:`tables.stats` across the trials (keys ``<field>_<stat>``)."""
    out = []
    for key in headline_keys():
        kind, _, column = key.partition(":")
        rows = [c for r in results for c in r.columns if c["kind"] == kind and c["column"] == column]
        if not rows:
            continue
        row = {"kind": kind, "column": column, "trials": len(rows)}
        for _, field in HEADLINE_FIELDS:
            row.update({f"{field}_{k}": v for k, v in tables.stats([c.get(field) for c in rows]).items()})
        out.append(row)
    return out


def gait_across(results: list) -> list[dict]:
    """Per :func:`headline.gait_summary` metric (per foot): :func:`tables.stats` across trials."""
    keys = list(dict.fromkeys(k for r in results for k in r.gait))
    return [{"metric": k, **tables.stats([r.gait.get(k) for r in results])} for k in keys]


def sagittal_r(result) -> float:
    """Mean r over a trial's hip/knee/ankle flexion angles (:data:`SAGITTAL_LEG_COORDINATES`)."""
    rs = [c["r"] for c in result.columns if c["kind"] == "angle" and c["column"] in SAGITTAL_LEG_COORDINATES]
    return tables.stats(rs)["mean"]


def sign_flip_counts(results: list) -> dict[str, int]:
    """How many trials stated each sign flip (their notes that start with :data:`SIGN_NOTE`), by
    the columns flipped and whether detected or given (each trial's report has the evidence)."""
    counts: collections.Counter = collections.Counter()
    for r in results:
        for n in r.notes:
            if n.startswith(SIGN_NOTE):
                flip, _, why = n[len(SIGN_NOTE) :].partition(" (")
                counts[f"{flip} ({'detected' if why.startswith('detected') else why.rstrip(')')})"] += 1
    return dict(sorted(counts.items()))


def markdown(doc: dict, evaluated: int) -> str:
    """The report of a folder evaluation from the tables of :func:`musclerl.evaluate.folder._write_tables`."""
    failures = doc["failures"]
    lines = ["# musclerl evaluation of a dataset", ""]
    kept = f" ({doc['resumed_trials']} kept from an earlier run)" if doc.get("resumed_trials") else ""
    lines += [
        f"{evaluated} trials evaluated{kept}, {len(failures)} failed; {doc['jobs']} process(es), "
        f"{doc['wall_s']:.1f} s for the trials evaluated in this run.",
        "",
        *_headline_markdown(doc),
        "## All columns (secondary)",
        "",
        "Per trial, each value is the mean over its columns; across trials: median [IQR], mean. Torques "
        f"are compared per kg (the policy's net moment over the {doc.get('sim_torque_mass', 'model')}'s "
        "mass, the reference's over `subject_weight_kg`) on `joint_torque_column_valid` samples only. "
        "Columns whose reference range is under 1° (0.02 N·m/kg for moments) have no r.",
        "",
        "| metric | unit | trials | median [q1, q3] | mean |",
        "|---|---|---|---|---|",
    ]
    for r in doc["dataset"]:
        if "count" in r:
            continue
        lines.append(
            f"| {r['metric']} | {r['unit']} | {r['n']} | {_f(r['median'])} [{_f(r['q1'])}, {_f(r['q3'])}] | "
            f"{_f(r['mean'])} |"
        )
    ends = next(r for r in doc["dataset"] if "count" in r)
    lines += ["", f"Tracked to the end: {ends['count']} of {ends['n']} trials{_end_reasons(doc)}.", ""]
    compared = [c for c in doc["columns"] if c["r_applicable"] and c["n_valid"]]
    at_bound = sorted({f"{c['kind']}:{c['column']}" for c in compared if c["lag_at_bound"]})
    n_bound = sum(c["lag_at_bound"] for c in compared)
    flat = sum(not c["r_applicable"] for c in doc["columns"])
    which = f" ({', '.join(at_bound[:8])}); widen --max-lag-s" if at_bound else ""
    lines += [
        f"Best lag at the search's bound: {n_bound} of {len(compared)} compared columns{which}. "
        f"Columns with no r (reference flatter than 1° or 0.02 N·m/kg): {flat}.",
        "",
    ]
    if doc.get("sign_flips"):
        lines += ["## Sign conventions", "", "| flip | trials |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in doc["sign_flips"].items()]
        lines.append("")
    lines += [
        "## Subjects",
        "",
        "| subject | trials | tracked to end | seconds tracked | kinematics r | kinematics RMSE (deg) | "
        "torque r | torque RMSE | activation r |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["subjects"]:
        lines.append(
            f"| {r['subject']} | {r['trials']} | {r['tracked_to_end']} | {_f(r.get('duration_s'))} | "
            f"{_f(r.get('angle_mean_r'))} | {_f(r.get('angle_mean_rmse'))} | {_f(r.get('torque_mean_r'))} | "
            f"{_f(r.get('torque_mean_rmse'))} | {_f(r.get('activation_mean_r'))} |"
        )
    lines += ["", "## Columns across trials (valid samples only): median [q1, q3]", ""]
    lines += ["| kind | column | trials | r | RMSE |", "|---|---|---|---|---|"]
    agg = {(r["kind"], r["column"], r["metric"]): r for r in doc["aggregate"] if r["kind"] != "tracking"}
    for kind, column in dict.fromkeys((k, c) for k, c, _ in agg):
        r, e = agg[(kind, column, "r")], agg[(kind, column, "rmse")]
        lines.append(
            f"| {kind} | {column} | {r['n']} | {_f(r['median'])} [{_f(r['q1'])}, {_f(r['q3'])}] | "
            f"{_f(e['median'])} [{_f(e['q1'])}, {_f(e['q3'])}] |"
        )
    lines += [
        "",
        "## Trials",
        "",
        "| trial | subject | status | seconds tracked / trial | to end | kinematics r | torque r | "
        "activation r | report |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["trials"]:
        done = r["status"] == "done"
        link = f"[report](trials/{r['trial']}/report.md)" if done else r["error"]
        span = f"{_f(r.get('duration_s'))} / {_f(r.get('trial_duration_s'))}" if done else ""
        reason = f" ({r['end_reason']})" if r.get("end_reason") else ""
        to_end = ("yes" if r.get("tracked_to_end") else f"no{reason}") if done else ""
        lines.append(
            f"| {r['trial']} | {r['subject']} | {r['status']} | {span} | {to_end} | "
            f"{_f(r.get('angle_mean_r'))} | {_f(r.get('torque_mean_r'))} | "
            f"{_f(r.get('activation_mean_r'))} | {link} |"
        )
    lines += ["", "## Plots", ""] + [f"![{k}]({p})" for k, p in doc["plots"].items()]
    return "\n".join(lines) + "\n"


def _end_reasons(doc: dict) -> str:
    """ "; ended early by site_deviation 3, tilt 1": the termination rules that ended the trials
    that were not tracked to the end, counted (empty when none was ended early)."""
    counts: dict[str, int] = {}
    for r in doc["trials"]:
        if r["status"] == "done" and r.get("end_reason"):
            counts[r["end_reason"]] = counts.get(r["end_reason"], 0) + 1
    if not counts:
        return ""
    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"; ended early by {shown}"


def _iqr(row: dict, field: str) -> str:
    return f"{_f(row[f'{field}_median'])} [{_f(row[f'{field}_q1'])}, {_f(row[f'{field}_q3'])}]"


def _headline_markdown(doc: dict) -> list[str]:
    """The headline, the published figures beside ours and the gait events (see the module doc)."""
    lines = [
        "## Headline: sagittal joints and ground reactions, per leg",
        "",
        "Median [IQR] across trials of each trial's r and RMSE, on time (valid reference samples) and of "
        "its gait-cycle means (101 points, each leg at its own heel strikes; n: trials with cycles). "
        "Moments: the policy's net joint moment; 'torque_muscle' the muscles alone.",
        "",
        "| kind | column | trials | r | RMSE | cycle r (n) | cycle RMSE |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc.get("headline", []):
        lines.append(
            f"| {r['kind']} | {r['column']} | {r['trials']} | {_iqr(r, 'r')} | {_iqr(r, 'rmse')} | "
            f"{_iqr(r, 'cycle_r')} ({r['cycle_r_n']}) | {_iqr(r, 'cycle_rmse')} |"
        )
    lines += [
        "",
        "## Published figures beside the same computation",
        "",
        "Published (MuscleMimic blog, a generalist muscle policy): five AMASS walks, cut at GRF onset into "
        "gait cycles, averaged, left leg, against the mean cycles of lab datasets of nine people at 1.2 m/s. "
        "Ours the same way: r of the policy's mean left-leg cycle (per-trial cycle means averaged) against "
        "the reference's, over the same columns (n: trials with cycles); then per trial on cycles and on "
        "time (median across trials), stricter. Ours are against this run's references, whichever dataset.",
        "",
        "| figure | against | what it is | published | ours, cycle means (n) | per trial, cycles (n) | "
        "per trial, time (n) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc.get("published", []):
        lines.append(
            f"| {r['figure']} | {r['against']} | {r['what']} | {r['published']:.2f} | "
            f"{_f(r['pooled_cycle_r'])} ({r['pooled_trials']}) | "
            f"{_f(r['trial_cycle_r'])} ({r['trial_cycle_n']}) | "
            f"{_f(r['trial_time_r'])} ({r['trial_time_n']}) |"
        )
    gait = {r["metric"]: r for r in doc.get("gait", [])}
    if gait:
        lines += [
            "",
            "## Gait events per foot",
            "",
            "Median [IQR] across trials: timing errors are the policy's event minus the reference's "
            "(within 0.3 s); peak vertical GRF is the mean over complete stances; knee at its limit: "
            "the fraction of the policy's stance frames within 1° of a bound of the knee's range, all of "
            "them and (beyond_motion) those where the motion it tracks keeps the knee over 5° from that "
            f"bound (aim: at most {100 * KNEE_LIMIT_AIM:g} %); touchdown delay: from the heel's farthest "
            "reach ahead of the pelvis to the force heel strike (a person: 25-40 ms).",
            "",
            "| metric | right | left |",
            "|---|---|---|",
        ]
        for name in (
            "heel_strike_error_ms",
            "toe_off_error_ms",
            "peak_vertical_sim_bw",
            "peak_vertical_ref_bw",
            "knee_at_limit_stance_frac",
            "knee_at_limit_beyond_motion_frac",
            "touchdown_delay_sim_ms",
            "touchdown_delay_ref_ms",
        ):
            cells = []
            for side in ("r", "l"):
                g = gait.get(f"{name}_{side}")
                cells.append(f"{_f(g['median'])} [{_f(g['q1'])}, {_f(g['q3'])}] ({g['n']})" if g else "")
            lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
        lines += ["", "| steps | policy | reference |", "|---|---|---|"]
        for name in ("step_length", "cadence"):
            unit = "m" if name == "step_length" else "spm"
            cells = []
            for who in ("sim", "ref"):
                g = gait.get(f"{name}_{who}_{unit}")
                cells.append(f"{_f(g['median'])} [{_f(g['q1'])}, {_f(g['q3'])}] ({g['n']})" if g else "")
            lines.append(f"| {name} ({unit}) | {cells[0]} | {cells[1]} |")
        parked = [
            g for k, g in gait.items() if k.startswith(BOUND_KEY) and g["q3"] is not None and g["q3"] >= 0.01
        ]
        if parked:
            lines += [
                "",
                "Joints on a bound of their range where the motion is over 5° from it (% of all frames, "
                "median [IQR] across trials; shown where a quarter of the trials reach 1 %):",
                "",
                "| coordinate | % of frames |",
                "|---|---|",
            ]
            for g in sorted(parked, key=lambda g: -g["median"]):
                name = g["metric"].removeprefix(BOUND_KEY)
                pct = [_f(100 * g[q]) for q in ("median", "q1", "q3")]
                lines.append(f"| {name} | {pct[0]} [{pct[1]}, {pct[2]}] ({g['n']}) |")
    return [*lines, ""]
