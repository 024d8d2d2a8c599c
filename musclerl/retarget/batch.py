"""Many marker trials: one output + report per trial, a summary table, resumable, parallel.

A trial whose output ``.npz`` already exists is skipped (its report, when present, still enters
the summary), so an interrupted batch resumes where it stopped. With ``jobs`` > 1 trials run in a
process pool (started with ``spawn``; each trial calibrates the subject model from the shared
static trial); run sequentially, the trials share one calibration. A tqdm bar shows progress.
Failures on bad input are recorded per trial and do not stop the batch.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import multiprocessing
from pathlib import Path

from musclerl.errors import InputError
from musclerl.fileio import atomic_path

SUMMARY_FIELDS = (
    "frames",
    "fps",
    "marker_rms_m",
    "marker_max_m",
    "failed_frames",
    "joint_limit_violation_frac",
    "equality_residual_max",
    "penetration_max_m",
    "tendon_jump_frac",
)


@dataclasses.dataclass(frozen=True)
class TrialPaths:
    trc: Path
    out: Path
    report: Path
    mot: Path | None = None
    plot: Path | None = None


def expand_inputs(inputs: list[str], suffixes: tuple[str, ...], what: str) -> list[Path]:
    """Files from files and folders (folders: their files with one of ``suffixes``, any case, sorted).

    ``what`` names an item in the errors ("trial", "motion"); InputError if nothing is found.
    """
    found: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
        elif path.is_file():
            found.append(path)
        else:
            raise InputError(path, f"{what} file or folder not found")
    if not found:
        raise InputError(", ".join(inputs), f"no {' or '.join(suffixes)} {what}s found")
    return found


def expand_trials(inputs: list[str]) -> list[Path]:
    """``.trc`` trials from files and folders; InputError if none."""
    return expand_inputs(inputs, (".trc",), "trial")


def plan(trials: list[Path], out_dir: Path, mot: bool, plot: bool) -> list[TrialPaths]:
    """Output paths per trial inside ``out_dir`` (``<stem>.npz``, ``.json``, ``.mot``, ``.png``)."""
    stems = [t.stem for t in trials]
    if len(set(stems)) != len(stems):
        raise InputError(out_dir, "two trials share a file name; outputs would collide")
    return [
        TrialPaths(
            t,
            out_dir / f"{t.stem}.npz",
            out_dir / f"{t.stem}.json",
            out_dir / f"{t.stem}.mot" if mot else None,
            out_dir / f"{t.stem}.png" if plot else None,
        )
        for t in trials
    ]


def _retarget_one(paths: TrialPaths, options, calibrated=None) -> tuple[dict, object]:
    """Retarget and write one trial: (its report or error row, the subject model used or given).

    ``calibrated``: a :class:`~musclerl.retarget.markers_pipeline.CalibratedModel` from an earlier
    trial of the batch (it depends only on ``options``), or None to calibrate here.
    """
    from musclerl.retarget.command_markers import write_outputs
    from musclerl.retarget.markers_pipeline import retarget_markers

    try:
        result = retarget_markers(paths.trc, options, calibrated)
    except InputError as err:
        return {"trial": str(paths.trc), "error": str(err)}, calibrated
    write_outputs(result, paths.out, paths.report, paths.mot, paths.plot)
    return result.report, result.calibrated


def _run_one(paths: TrialPaths, options) -> dict:
    """One trial in a worker process (it calibrates its own subject model)."""
    return _retarget_one(paths, options)[0]


def run_batch(trials: list[TrialPaths], options, jobs: int = 1, progress: bool = True) -> list[dict]:
    """Retarget every trial not already done; returns one summary row per trial (input order)."""
    from tqdm import tqdm

    rows: dict[Path, dict] = {}
    todo = []
    for paths in trials:
        if paths.out.exists():
            report = json.loads(paths.report.read_text()) if paths.report.exists() else {}
            rows[paths.trc] = {**report, "trial": str(paths.trc), "skipped": True}
        else:
            todo.append(paths)
    bar = tqdm(total=len(todo), desc="retarget", unit="trial", disable=not progress)
    if jobs <= 1:
        calibrated = None  # the subject model depends only on ``options``: calibrate it once
        for paths in todo:
            rows[paths.trc], calibrated = _retarget_one(paths, options, calibrated)
            bar.update()
    else:
        # spawn, not fork: the parent may hold JAX/XLA threads, which do not survive a fork
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {pool.submit(_run_one, paths, options): paths for paths in todo}
            for future in concurrent.futures.as_completed(futures):
                rows[futures[future].trc] = future.result()
                bar.update()
    bar.close()
    return [rows[p.trc] for p in trials]


def summary_rows(reports: list[dict]) -> list[dict]:
    """Flat rows for the summary table: trial, status and the headline numbers."""
    out = []
    for report in reports:
        row = {
            "trial": Path(report.get("trial", "?")).name,
            "status": "error" if "error" in report else ("skipped" if report.get("skipped") else "done"),
        }
        for key in SUMMARY_FIELDS:
            value = report.get(key)
            row[key] = value["mean"] if isinstance(value, dict) else value
        if "error" in report:
            row["error"] = report["error"]
        out.append(row)
    return out


def format_table(rows: list[dict]) -> str:
    """Plain-text table of :func:`summary_rows` (millimetres for marker errors)."""
    header = f"{'trial':30s} {'status':8s} {'frames':>6s} {'rms_mm':>8s} {'max_mm':>8s} {'failed':>6s}"
    lines = [header]
    for r in rows:

        def mm(v):
            return f"{1e3 * v:8.1f}" if isinstance(v, float) else f"{'-':>8s}"

        lines.append(
            f"{r['trial'][:30]:30s} {r['status']:8s} {r.get('frames') or 0:6d} {mm(r.get('marker_rms_m'))} "
            f"{mm(r.get('marker_max_m'))} {r.get('failed_frames') or 0:6d}"
        )
    return "\n".join(lines)


def write_summary(out_dir: Path, rows: list[dict]) -> Path:
    """``summary.json`` in ``out_dir`` (written atomically); returns its path."""
    path = Path(out_dir) / "summary.json"
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(rows, indent=2) + "\n")
    return path
