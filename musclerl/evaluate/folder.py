"""``musclerl evaluate POLICY --reference FOLDER/`` (or ``--motion FOLDER/``): every file, one run.

Trials: each ``.npz`` of the folder. With a reference folder and no motion, every reference's own
kinematics is tracked; with both folders, a motion and a reference pair up by file name (stem);
a single file on the other side pairs with every file of the folder. A reference's
``<stem>_muscle_activation.sto`` beside it (as ``musclerl reference`` writes) is compared too.

Trials run in worker processes (:func:`musclerl.retarget.batch.run_items`, ``spawn``; each
worker loads the policy once) with a progress bar over the trials. A trial whose files are bad
is listed with its one-line reason and the others go on; the command fails (exit 2, nothing
written) only when no trial could be evaluated.

Outputs in ``--out`` (written atomically, the whole folder):

- ``trials/<name>/``: what a single evaluation writes (:mod:`musclerl.evaluate.trial`);
- ``trials.csv`` (one row per trial, failures with their reason), ``columns.csv`` (per trial and
  column: r, RMSE, nRMSE, lag on valid samples), ``subjects.csv``, ``subject_columns.csv``,
  ``aggregate.csv`` (mean, sd, median across trials) — see :mod:`musclerl.evaluate.tables`;
- ``summary.json`` (every table), ``report.md`` and ``plots/r_distribution.png``,
  ``plots/torque_cycles.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

from musclerl.errors import InputError
from musclerl.evaluate.trial import TrialInputs, TrialOptions

ACTIVATION_SUFFIX = "_muscle_activation.sto"


def plan(motion: str | None, reference: str | None) -> tuple[list[TrialInputs], list[dict]]:
    """Trials to evaluate and the files that could not be paired (``{"trial", "error"}`` rows)."""
    from musclerl.retarget.batch import expand_inputs

    motions = expand_inputs([motion], (".npz",), "motion") if motion else []
    refs = expand_inputs([reference], (".npz",), "reference") if reference else []
    failures: list[dict] = []
    if motion and reference and Path(motion).is_dir() and Path(reference).is_dir():
        by_stem = {p.stem: p for p in refs}
        pairs = [(m, by_stem.pop(m.stem, None)) for m in motions]
        for m, r in pairs:
            if r is None:
                failures.append({"trial": m.stem, "error": f"{m}: no reference {m.stem}.npz in {reference}"})
        failures += [{"trial": s, "error": f"{p}: no motion {s}.npz in {motion}"} for s, p in by_stem.items()]
        pairs = [(m, r) for m, r in pairs if r is not None]
    elif motions and refs:
        pairs = [(m, r) for m in motions for r in refs]
    else:
        pairs = [(m, None) for m in motions] + [(None, r) for r in refs]
    trials = []
    for m, r in pairs:
        act = None if r is None else r.with_name(r.stem + ACTIVATION_SUFFIX)
        # one reference against many motions: trials are named after the motions
        label = m.stem if m is not None and r is not None and len(motions) > 1 else None
        trials.append(
            TrialInputs(
                motion=m, reference=r, activations=act if act and act.is_file() else None, label=label
            )
        )
    names = [t.name for t in trials]
    if len(set(names)) != len(names):
        raise InputError(reference or motion, "two trials share a file name; outputs would collide")
    return trials, failures


def evaluate_item(item: TrialInputs, policy_path: str, options: TrialOptions, trials_dir: str, state: dict):
    """One trial for :func:`run_items`: its :class:`TrialResult`, or ``{"trial", "error"}``.

    ``state`` keeps the loaded policy across the worker's trials. Bad input is the trial's
    one-line reason; an unexpected exception too (marked as such), so one trial cannot stop the
    folder.
    """
    from musclerl.evaluate.trial import evaluate_trial
    from musclerl.retarget.batch import failure_row
    from musclerl.rl.export import load_policy

    try:
        if "policy" not in state:
            state["policy"] = load_policy(policy_path)
        return evaluate_trial(state["policy"], item, options, Path(trials_dir) / item.name)
    except Exception as err:  # noqa: BLE001 - reported per trial, the folder goes on
        return failure_row(item.name, err)


def _unreadable(item: TrialInputs) -> str | None:
    """The one-line reason a trial's files cannot be read (checked before the workers start), or
    None."""
    from musclerl.evaluate.trial import load_inputs
    from musclerl.motion.trajectory import Trajectory

    try:
        load_inputs(item)
        if item.motion is not None:
            Trajectory.load(item.motion)
    except InputError as err:
        return str(err)
    return None


def run_folder(args: argparse.Namespace, options: TrialOptions) -> int:
    """Evaluate every trial (see the module docstring); returns 0, raises InputError if none ran."""
    from musclerl.evaluate.trial import TrialResult
    from musclerl.fileio import atomic_path
    from musclerl.jax_setup import available_cores
    from musclerl.retarget.batch import run_items
    from musclerl.rl.export import load_policy

    if args.activations or args.emg:
        raise InputError(
            "--activations/--emg",
            f"single-trial inputs; in folder mode a reference's <stem>{ACTIVATION_SUFFIX} beside it is used",
        )
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {args.jobs}")
    load_policy(args.policy)  # a bad policy fails once, before any trial
    trials, failures = plan(args.motion, args.reference)
    unreadable = {t.name: err for t in trials if (err := _unreadable(t)) is not None}
    failures += [{"trial": name, "error": err} for name, err in unreadable.items()]
    trials = [t for t in trials if t.name not in unreadable]
    if not trials:
        reasons = "; ".join(f["error"] for f in failures[:3])
        raise InputError(args.reference or args.motion, f"no trial could be evaluated ({reasons})")
    jobs = args.jobs or max(1, min(available_cores(), len(trials)))
    out = Path(args.out)
    t0 = time.perf_counter()
    with atomic_path(out) as tmp:
        trials_dir = tmp / "trials"
        trials_dir.mkdir(parents=True)
        rows = run_items(
            trials,
            evaluate_item,
            (str(args.policy), options, str(trials_dir)),
            jobs=min(jobs, max(len(trials), 1)),
            desc="evaluate",
        )
        results = [r for r in rows if isinstance(r, TrialResult)]
        failures += [r for r in rows if not isinstance(r, TrialResult)]
        if not results:
            reasons = "; ".join(f["error"] for f in failures[:3])
            raise InputError(args.reference or args.motion, f"no trial could be evaluated ({reasons})")
        wall_s = time.perf_counter() - t0
        _write_tables(tmp, results, failures, jobs, wall_s)
    print(
        f"wrote {out}/report.md: {len(results)} trials evaluated, {len(failures)} failed, "
        f"{jobs} process(es), {wall_s:.1f} s"
    )
    for f in failures:
        print(f"  failed: {f['error']}")
    return 0


def _write_csv(path: Path, rows: list[dict]) -> None:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(r.get(k)) for k in fields})


def _cell(value):
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return value


def _write_tables(folder: Path, results: list, failures: list[dict], jobs: int, wall_s: float) -> None:
    from musclerl.evaluate import plots, tables
    from musclerl.evaluate.report import _clean, _fmt

    doc = {
        "trials": tables.trial_rows(results, failures),
        "subjects": tables.subject_rows(results),
        "aggregate": tables.aggregate_rows(results),
        "columns": tables.column_rows(results),
        "subject_columns": tables.subject_column_rows(results),
        "failures": failures,
        "jobs": jobs,
        "wall_s": wall_s,
    }
    for name in ("trials", "columns", "subjects", "subject_columns", "aggregate"):
        _write_csv(folder / f"{name}.csv", doc[name])
    (folder / "plots").mkdir()
    bases = sorted({r.cycle_basis for r in results if r.torque_cycles})
    made = {
        "r_distribution": plots.plot_r_distribution(doc["columns"], folder / "plots" / "r_distribution.png"),
        "torque_cycles": plots.plot_cycle_stack(
            tables.torque_cycle_stack(results),
            folder / "plots" / "torque_cycles.png",
            "% of gait cycle" if bases == ["gait cycle"] else "% of gait cycle or trial",
        ),
    }
    doc["plots"] = {k: str(p.relative_to(folder)) for k, p in made.items() if p is not None}
    (folder / "summary.json").write_text(json.dumps(_clean(doc), indent=2, allow_nan=False))
    lines = ["# musclerl evaluation of a folder", ""]
    lines += [
        f"{len(results)} trials evaluated, {len(failures)} failed; {jobs} process(es), {wall_s:.1f} s.",
        "",
    ]
    lines += ["## Tracking across trials", "", "| metric | n | mean | sd | median |", "|---|---|---|---|---|"]
    for r in doc["aggregate"]:
        if r["kind"] == "tracking":
            lines.append(
                f"| {r['metric']} | {r['n']} | {_fmt(r['mean'])} | {_fmt(r['sd'])} | {_fmt(r['median'])} |"
            )
    lines += ["", "## Columns across trials (valid samples only)", ""]
    lines += ["| kind | column | metric | n | mean | sd | median |", "|---|---|---|---|---|---|---|"]
    for r in doc["aggregate"]:
        if r["kind"] != "tracking":
            lines.append(
                f"| {r['kind']} | {r['column']} | {r['metric']} | {r['n']} | {_fmt(r['mean'])} | "
                f"{_fmt(r['sd'])} | {_fmt(r['median'])} |"
            )
    lines += ["", "## Subjects", "", "| subject | trials | success rate | MPJPE (m) | torque mean r |"]
    lines += ["|---|---|---|---|---|"]
    for r in doc["subjects"]:
        lines.append(
            f"| {r['subject']} | {r['trials']} | {_fmt(r['success_rate'])} | {_fmt(r['mpjpe_global_m'])} | "
            f"{_fmt(r.get('torque_mean_r'))} |"
        )
    lines += [
        "",
        "## Trials",
        "",
        "| trial | subject | status | success rate | duration (s) | MPJPE (m) | report |",
    ]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in doc["trials"]:
        link = f"[report](trials/{r['trial']}/report.md)" if r["status"] == "done" else r["error"]
        lines.append(
            f"| {r['trial']} | {r['subject']} | {r['status']} | {_fmt(r.get('success_rate'))} | "
            f"{_fmt(r.get('duration_s'))} | {_fmt(r.get('mpjpe_global_m'))} | {link} |"
        )
    lines += ["", "## Plots", ""] + [f"![{k}]({p})" for k, p in doc["plots"].items()]
    (folder / "report.md").write_text("\n".join(lines) + "\n")
