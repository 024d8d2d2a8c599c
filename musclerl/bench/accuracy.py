"""``musclerl bench accuracy``: retargeting accuracy against an expert's OpenSim IK, per trial and mean.

Input: a folder written by ``musclerl retarget markers TRIALS --out FOLDER --mot 1`` (``<trial>.json``
reports and ``<trial>.mot`` tables in OpenSim coordinates) and the folder of the expert's
``<trial>.mot``. Per trial: RMS difference (deg) of hip, knee and ankle flexion and hip adduction
(both sides pooled; gait2354's negative knee flexion flipped), marker RMS (mm) of the lower-body
markers (every marker not on the trunk), the largest fraction of frames in which a coordinate sits on
a bound of our model while the expert's is not there (the expert counted on it when within
:data:`EXPERT_LIMIT_TOLERANCE_DEG` of it or past it; a knee straight where the person's is straight is
no error), whether the floor came out flat, and the stance feet's slip (m/s) and the deepest
penetration of the floor (mm). The same per leg (``legs``: angles, markers on that leg's bodies,
bound frames of that leg's joints) in a second table, so a leg that failed is not averaged away.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.motion.storage import read_storage
from musclerl.retarget.sides import side_of

ANGLES = {
    "hip_flexion": "hip",
    "knee_angle": "knee",
    "ankle_angle": "ankle",
    "hip_adduction": "hip_adduction",
}
TRUNK_BODIES = ("torso",)
EXPERT_LIMIT_TOLERANCE_DEG = 1.0
COLUMNS = (
    "hip_rms_deg",
    "knee_rms_deg",
    "ankle_rms_deg",
    "hip_adduction_rms_deg",
    "marker_rms_lower_mm",
    "at_limit_excess_frac",
    "floor_flat",
    "stance_slip_mps",
    "penetration_max_mm",
)


def _expert_on_bound(model, expert, name: str) -> np.ndarray | None:
    """(T_expert,) bool: the expert's coordinate ``name`` at or past a bound of ``model``; None when
    the expert has no such column or the joint no range."""
    import mujoco  # here, not at the top: the command line builds its parser without mujoco

    j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if j < 0 or name not in expert.columns or not model.jnt_limited[j]:
        return None
    values = expert.column(name)
    if name.startswith("knee_angle") and np.median(values) < 0:
        values = -values
    angular = int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
    values = np.deg2rad(values) if angular and expert.in_degrees else values
    tol = np.deg2rad(EXPERT_LIMIT_TOLERANCE_DEG) if angular else 1e-3
    lo, hi = model.jnt_range[j]
    return (values <= lo + tol) | (values >= hi - tol)


def expert_span(time_s: np.ndarray, expert) -> np.ndarray:
    """(T,) bool: our frames at ``time_s`` (T,) inside the time the expert's IK covers (half a frame
    of slack at each end). An expert may solve part of a trial only (OpenCap's drop jump: 0.96-1.9 s
    of a 2.39 s recording); outside it there is nothing to compare with, and interpolation would
    hold the expert's first and last pose there (DJ1 came out 22 deg off at the knee that way, 1-2
    deg inside the span)."""
    time_s = np.asarray(time_s, dtype=float)
    slack = 0.5 * float(np.median(np.diff(time_s))) if len(time_s) > 1 else 0.0
    return (time_s >= expert.time_s[0] - slack) & (time_s <= expert.time_s[-1] + slack)


def bound_beyond_expert(model, qpos: np.ndarray, time_s: np.ndarray, expert) -> dict[str, float]:
    """Per independent limited joint ever on a bound in ``qpos`` (T, nq) at ``time_s`` (T,): the
    fraction of frames it is on a bound where the expert's coordinate (interpolated to our
    frames) is not, over the frames the expert covers (:func:`expert_span`)."""
    from musclerl.retarget.report import LIMIT_BOUND_TOLERANCE, limit_excess

    span = expert_span(time_s, expert)
    qpos, time_s = np.asarray(qpos)[span], np.asarray(time_s)[span]
    excess, coupled, names = limit_excess(model, qpos)
    ours = excess[:, ~coupled] > -LIMIT_BOUND_TOLERANCE
    out = {}
    for j, name in enumerate(n for n, c in zip(names, coupled, strict=True) if not c):
        if not ours[:, j].any():
            continue
        theirs = _expert_on_bound(model, expert, name)
        if theirs is None:
            out[name] = float(ours[:, j].mean())
            continue
        theirs_here = np.interp(time_s, expert.time_s, theirs.astype(float)) > 0.5
        out[name] = float((ours[:, j] & ~theirs_here).mean())
    return out


def _leg_row(row_angles: dict, markers: dict[str, float], bodies: dict, bound: dict, side: str) -> dict:
    """One leg's angle RMS (deg), markers on its bodies (mm), worst bound joint beyond the expert."""
    mine = [rms for n, rms in markers.items() if rms is not None and side_of(bodies.get(n) or "") == side]
    joints = {n: f for n, f in bound.items() if side_of(n) == side}
    worst = max(joints, key=joints.get) if joints else ""
    return {
        **row_angles,
        "marker_rms_mm": 1000.0 * float(np.sqrt(np.mean(np.square(mine)))) if mine else None,
        "at_limit_excess_frac": float(joints.get(worst, 0.0)),
        "at_limit_worst": worst,
    }


def trial_row(report_path: Path, mot_path: Path, expert_path: Path, model=None) -> dict:
    """One trial's row (keys :data:`COLUMNS`, plus ``trial`` and ``at_limit_worst``); ``model``
    (compiled, for the joint ranges) defaults to the report's registered model."""
    from musclerl.models.registry import load_model
    from musclerl.motion.trajectory import Trajectory

    report = json.loads(Path(report_path).read_text())
    if model is None:
        model = load_model(report["model"])
    ours, expert = read_storage(mot_path), read_storage(expert_path)
    span = expert_span(ours.time_s, expert)
    if not span.any():
        raise InputError(
            expert_path,
            f"covers {expert.time_s[0]:.2f}-{expert.time_s[-1]:.2f} s, none of {mot_path}'s "
            f"{ours.time_s[0]:.2f}-{ours.time_s[-1]:.2f} s",
        )
    row: dict = {"trial": Path(report_path).stem, "compared_frac": float(span.mean())}
    per_side: dict[str, dict[str, float]] = {"right": {}, "left": {}}
    for column, key in ANGLES.items():
        errors = []
        for side, suffix in (("right", "r"), ("left", "l")):
            name = f"{column}_{suffix}"
            ref = np.interp(ours.time_s[span], expert.time_s, expert.column(name))
            if column == "knee_angle" and np.median(ref) < 0:
                ref = -ref
            errors.append(ours.column(name)[span] - ref)
            per_side[side][f"{key}_rms_deg"] = float(np.sqrt(np.mean(np.square(errors[-1]))))
        row[f"{key}_rms_deg"] = float(np.sqrt(np.mean(np.square(errors))))
    bodies = {n: m.get("body") for n, m in report.get("registration", {}).items()}
    by_name = report["marker_rms_by_name_m"]
    lower = [rms for n, rms in by_name.items() if bodies.get(n) not in TRUNK_BODIES and rms is not None]
    row["marker_rms_lower_mm"] = 1000.0 * float(np.sqrt(np.mean(np.square(lower))))
    trajectory = Path(report_path).with_suffix(".npz")
    qpos = Trajectory.load(trajectory).qpos if trajectory.is_file() else None
    if qpos is not None and len(qpos) == len(ours.time_s):
        excess = bound_beyond_expert(model, qpos, ours.time_s, expert)
    else:  # no trajectory beside the report: time on a bound minus the expert's time there
        limits = report.get("limit_bound_frac", {})
        expert_frac = {n: _expert_on_bound(model, expert, n) for n in limits}
        excess = {
            n: f - (0.0 if expert_frac[n] is None else expert_frac[n].mean()) for n, f in limits.items()
        }
    row["legs"] = {side: _leg_row(per_side[side], by_name, bodies, excess, side) for side in per_side}
    worst = max(excess, key=excess.get) if excess else ""
    row["at_limit_excess_frac"] = max(0.0, float(excess.get(worst, 0.0)))
    row["at_limit_worst"] = worst
    floor = report.get("floor", {})
    row["floor_flat"] = bool(floor.get("flat", False))
    row["floor_kind"] = floor.get("kind", "level" if row["floor_flat"] else "sloped")
    row["stance_slip_mps"] = floor.get("stance_speed_mps")
    row["penetration_max_mm"] = 1000.0 * float(report.get("penetration_max_m", 0.0))
    return row


def accuracy_table(out_dir: Path, expert_dir: Path, trials: list[str]) -> tuple[list[dict], dict]:
    """Rows for ``trials`` (stems) and their mean (numbers averaged, ``floor_flat`` the fraction)."""
    from musclerl.models.registry import load_model

    models: dict = {}

    def model_of(report: Path):
        name = json.loads(report.read_text())["model"]
        return models.setdefault(name, load_model(name))

    out_dir, expert_dir = Path(out_dir), Path(expert_dir)
    rows = [
        trial_row(
            out_dir / f"{t}.json",
            out_dir / f"{t}.mot",
            expert_dir / f"{t}.mot",
            model_of(out_dir / f"{t}.json"),
        )
        for t in trials
    ]
    mean = {"trial": "mean"}
    for key in COLUMNS:
        values = [float(r[key]) for r in rows if r[key] is not None]
        mean[key] = float(np.mean(values)) if values else float("nan")
    return rows, mean


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    head = (
        "| trial | hip ° | knee ° | ankle ° | hip add ° | markers mm | at limit where expert is not | floor "
        "| slip m/s | pen. mm |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        flat = r["floor_flat"]  # a trial's bool, the mean row's fraction of flat floors
        floor = {"level": "flat"}.get(r.get("floor_kind"), r.get("floor_kind"))
        floor = floor if isinstance(flat, bool) else f"{100 * flat:.0f} % flat"
        slip = "-" if r["stance_slip_mps"] is None else f"{r['stance_slip_mps']:.3f}"
        lines.append(
            f"| {_trial_name(r)} | {r['hip_rms_deg']:.1f} | {r['knee_rms_deg']:.1f} | "
            f"{r['ankle_rms_deg']:.1f} | "
            f"{r['hip_adduction_rms_deg']:.1f} | {r['marker_rms_lower_mm']:.1f} | "
            f"{100 * r['at_limit_excess_frac']:.0f} % {r.get('at_limit_worst', '')} | {floor} | {slip} | "
            f"{r['penetration_max_mm']:.1f} |"
        )
    return "\n".join(lines)


def _trial_name(row: dict) -> str:
    """The trial's name, with the share of its frames the expert covers when not all."""
    share = row.get("compared_frac", 1.0)
    return row["trial"] if share > 0.999 else f"{row['trial']} ({100 * share:.0f} % of frames compared)"


def markdown_legs(rows: list[dict]) -> str:
    """Per trial and leg: the angle RMS, the leg's markers, its worst bound beyond the expert."""
    lines = [
        "| trial | leg | hip ° | knee ° | ankle ° | hip add ° | markers mm | at limit where expert is not |",
        "|" + "---|" * 8,
    ]
    for r in rows:
        for side, leg in r.get("legs", {}).items():
            markers = "-" if leg["marker_rms_mm"] is None else f"{leg['marker_rms_mm']:.1f}"
            lines.append(
                f"| {r['trial']} | {side} | {leg['hip_rms_deg']:.1f} | {leg['knee_rms_deg']:.1f} | "
                f"{leg['ankle_rms_deg']:.1f} | {leg['hip_adduction_rms_deg']:.1f} | {markers} | "
                f"{100 * leg['at_limit_excess_frac']:.0f} % {leg['at_limit_worst']} |"
            )
    return "\n".join(lines)


def plot_rows(path: Path, rows: list[dict]) -> None:
    """Bar plot PNG of the four angle RMS columns per trial (the last row, the mean, included)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [f"{k}_rms_deg" for k in ANGLES.values()]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(rows)), 3.5))
    for k, key in enumerate(keys):
        ax.bar(x + (k - 1.5) * 0.2, [r[key] for r in rows], 0.2, label=key.replace("_rms_deg", ""))
    ax.axhline(5.0, color="k", lw=0.8, ls="--", label="aim 5°")
    ax.set_xticks(x, [r["trial"] for r in rows], rotation=60, ha="right")
    ax.set_ylabel("RMS vs expert IK (deg)")
    ax.legend(fontsize=7, ncol=5)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_arguments(parser) -> None:
    parser.add_argument("out", help="folder written by 'musclerl retarget markers ... --out FOLDER --mot 1'")
    parser.add_argument("--expert", required=True, help="folder of the expert's <trial>.mot IK tables")
    parser.add_argument("--trials", nargs="*", help="trial names (default: every <trial>.json with a .mot)")
    parser.add_argument("--json", help="write the rows and their mean as JSON")
    parser.add_argument("--markdown", help="write the table as Markdown")
    parser.add_argument("--plot", help="write a bar plot PNG of the angle RMS per trial")


def run(args) -> int:
    from musclerl.fileio import check_outputs

    out, expert = Path(args.out), Path(args.expert)
    for folder in (out, expert):
        if not folder.is_dir():
            raise InputError(folder, "not a folder")
    trials = args.trials or sorted(
        p.stem for p in out.glob("*.json") if (out / f"{p.stem}.mot").is_file() and p.stem != "summary"
    )
    missing = [t for t in trials if not (expert / f"{t}.mot").is_file() or not (out / f"{t}.mot").is_file()]
    if missing:
        raise InputError(expert, f"no expert or retargeted .mot for {missing}")
    if not trials:
        raise InputError(out, "no retargeted trial (<trial>.json + <trial>.mot)")
    check_outputs(
        {"--json": args.json, "--markdown": args.markdown, "--plot": args.plot}, inputs=[out, expert]
    )
    rows, mean = accuracy_table(out, expert, trials)
    table = markdown([*rows, mean]) + "\n\nPer leg:\n\n" + markdown_legs(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "mean": mean}, indent=1) + "\n")
    if args.plot:
        plot_rows(Path(args.plot), [*rows, mean])
    return 0
