"""``report.md`` of a dataset evaluation: the comparison users of a Gait120-style dataset expect.

Per trial: seconds tracked, whether the policy ran to the trial's end, and per kind the mean over
columns of r and RMSE: kinematics (the policy's coordinates vs the trial's ``joint_angle``, deg;
also over the sagittal hip/knee/ankle angles alone), torques (policy vs ``joint_torque`` on
``joint_torque_column_valid`` samples, per kg), activations (vs the ``_muscle_activation.sto``
where finite) and EMG where given. Dataset summary: median and IQR across trials of each, the
trials tracked to the end, and the published figures for a generalist muscle policy on
Boo_LevelWalking beside ours; then per subject, per column and per trial tables.
"""

from __future__ import annotations

import collections

from musclerl.evaluate import tables
from musclerl.evaluate.reference_motion import SIGN_NOTE
from musclerl.evaluate.report import _fmt as _f
from musclerl.models.couplings import SAGITTAL_LEG_COORDINATES

#: Published figures for a generalist muscle policy on Boo_LevelWalking (``REFERENCE_NPZ.md``).
PUBLISHED = {"kinematics r": 0.94, "joint-torque r": 0.71}

#: (label, trial_rows field, unit)
DATASET_METRICS = (
    ("seconds tracked", "duration_s", "s"),
    ("kinematics r", "angle_mean_r", ""),
    ("kinematics r, sagittal", "sagittal_mean_r", ""),
    ("kinematics RMSE", "angle_mean_rmse", "deg"),
    ("joint-torque r", "torque_mean_r", ""),
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
            out.append({"metric": label, "unit": unit, **st, "published": PUBLISHED.get(label)})
    ends = sum(bool(r.get("tracked_to_end")) for r in rows)
    out.append({"metric": "tracked to the end", "unit": "trials", "n": len(rows), "count": ends})
    return out


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
        "## Dataset summary",
        "",
        "Per trial, each value is the mean over its columns; across trials: median [IQR], mean. Torques "
        f"are compared per kg (the policy's over the {doc.get('sim_torque_mass', 'model')}'s mass, the "
        "reference's over `subject_weight_kg`) on `joint_torque_column_valid` samples only.",
        "",
        "| metric | unit | trials | median [q1, q3] | mean | published |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc["dataset"]:
        if "count" in r:
            continue
        pub = "" if r.get("published") is None else f"{r['published']:.2f}"
        lines.append(
            f"| {r['metric']} | {r['unit']} | {r['n']} | {_f(r['median'])} [{_f(r['q1'])}, {_f(r['q3'])}] | "
            f"{_f(r['mean'])} | {pub} |"
        )
    ends = next(r for r in doc["dataset"] if "count" in r)
    lines += ["", f"Tracked to the end: {ends['count']} of {ends['n']} trials.", ""]
    lines += ["Published: a generalist muscle policy on Boo_LevelWalking (kinematics r, joint-torque r).", ""]
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
    lines.append(
        f"| published (generalist muscle policy) | | | | {PUBLISHED['kinematics r']:.2f} | | "
        f"{PUBLISHED['joint-torque r']:.2f} | | |"
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
        to_end = ("yes" if r.get("tracked_to_end") else "no") if done else ""
        lines.append(
            f"| {r['trial']} | {r['subject']} | {r['status']} | {span} | {to_end} | "
            f"{_f(r.get('angle_mean_r'))} | {_f(r.get('torque_mean_r'))} | "
            f"{_f(r.get('activation_mean_r'))} | {link} |"
        )
    lines += ["", "## Plots", ""] + [f"![{k}]({p})" for k, p in doc["plots"].items()]
    return "\n".join(lines) + "\n"
