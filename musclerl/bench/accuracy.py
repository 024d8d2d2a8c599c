"""``musclerl bench accuracy``: retargeting accuracy against an expert's OpenSim IK, per trial and mean.

Input: a folder written by ``musclerl retarget markers TRIALS --out FOLDER --mot 1`` (``<trial>.json``
reports and ``<trial>.mot`` tables in OpenSim coordinates) and the folder of the expert's
``<trial>.mot``. Per trial: RMS difference (deg) of hip, knee and ankle flexion and hip adduction
(both sides pooled; gait2354's negative knee flexion flipped), marker RMS (mm) of the lower-body
markers (every marker not on the trunk), the largest fraction of frames any coordinate spends at a
limit beyond the expert's time there (the expert counted at a bound of our model when within
:data:`EXPERT_LIMIT_TOLERANCE_DEG` of it or past it), whether the floor came out flat, and the
stance feet's slip (m/s) and the deepest penetration of the floor (mm).
"""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np

from musclerl.models.registry import load_model
from musclerl.motion.storage import read_storage

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


def _expert_at_limit_frac(model, expert, name: str) -> float:
    """Fraction of the expert's frames with coordinate ``name`` at or past a bound of ``model``."""
    j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if j < 0 or name not in expert.columns or not model.jnt_limited[j]:
        return 0.0
    values = expert.column(name)
    if name.startswith("knee_angle") and np.median(values) < 0:
        values = -values
    angular = int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
    values = np.deg2rad(values) if angular and expert.in_degrees else values
    tol = np.deg2rad(EXPERT_LIMIT_TOLERANCE_DEG) if angular else 1e-3
    lo, hi = model.jnt_range[j]
    return float(np.mean((values <= lo + tol) | (values >= hi - tol)))


def trial_row(report_path: Path, mot_path: Path, expert_path: Path, model=None) -> dict:
    """One trial's row (keys :data:`COLUMNS`, plus ``trial`` and ``at_limit_worst``); ``model``
    (compiled, for the joint ranges) defaults to the report's registered model."""
    report = json.loads(Path(report_path).read_text())
    if model is None:
        model = load_model(report["model"])
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
    excess = {n: f - _expert_at_limit_frac(model, expert, n) for n, f in limits.items()}
    worst = max(excess, key=excess.get) if excess else ""
    row["at_limit_excess_frac"] = max(0.0, float(excess.get(worst, 0.0)))
    row["at_limit_worst"] = worst
    floor = report.get("floor", {})
    row["floor_flat"] = bool(floor.get("flat", False))
    row["stance_slip_mps"] = floor.get("stance_speed_mps")
    row["penetration_max_mm"] = 1000.0 * float(report.get("penetration_max_m", 0.0))
    return row


def accuracy_table(out_dir: Path, expert_dir: Path, trials: list[str]) -> tuple[list[dict], dict]:
    """Rows for ``trials`` (stems) and their mean (numbers averaged, ``floor_flat`` the fraction)."""
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
        "| trial | hip ° | knee ° | ankle ° | hip add ° | markers mm | at limit beyond expert | floor "
        "| slip m/s | pen. mm |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        flat = r["floor_flat"]
        floor = ("flat" if flat else "sloped") if isinstance(flat, bool) else f"{100 * flat:.0f} % flat"
        slip = "-" if r["stance_slip_mps"] is None else f"{r['stance_slip_mps']:.3f}"
        lines.append(
            f"| {r['trial']} | {r['hip_rms_deg']:.1f} | {r['knee_rms_deg']:.1f} | {r['ankle_rms_deg']:.1f} | "
            f"{r['hip_adduction_rms_deg']:.1f} | {r['marker_rms_lower_mm']:.1f} | "
            f"{100 * r['at_limit_excess_frac']:.0f} % {r.get('at_limit_worst', '')} | {floor} | {slip} | "
            f"{r['penetration_max_mm']:.1f} |"
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
    from musclerl.errors import InputError
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
    table = markdown([*rows, mean])
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "mean": mean}, indent=1) + "\n")
    if args.plot:
        plot_rows(Path(args.plot), [*rows, mean])
    return 0
