"""``musclerl evaluate POLICY --reference ROOT/`` (or ``--motion FOLDER/``): a whole dataset, one run.

Trials: with ``--reference``, every ``.npz`` below a root of subject folders (found recursively),
in one subject folder, a file, a glob (``'ROOT/S0*/*.npz'``) or several of these; with no motion,
each reference's own kinematics is tracked. With a motion folder too, a motion and a reference
pair up by file name (stem); a single file on one side pairs with every file of the other. A
reference's ``<stem>_muscle_activation.sto`` beside it is compared too, and with ``--emg-map``
its ``<stem>_emg.sto`` / ``<stem>_emg.csv``. Trials are named by their stem (by
``<folder>_<stem>`` when two folders hold the same stem).

Trials run in worker processes (:func:`musclerl.retarget.batch.run_items`, ``spawn``, ``--jobs``;
each worker loads the policy once) under a progress bar with the real total. Each trial's folder
is written when it is done, with its ``result.json``; ``--resume`` keeps the trials an earlier run
of the same ``--out`` finished and evaluates the rest (a crash at trial 300 keeps the first 299).
``--resume`` refuses an ``--out`` evaluated with another policy or other options (``run.json``).
Without ``--resume`` an existing ``--out`` is replaced. A trial whose files are bad is listed with
its one-line reason and the others go on; the command fails (exit 2) only when no trial could be
evaluated, and then leaves no ``--out`` it created.

Outputs in ``--out``:

- ``trials/<name>/``: what a single evaluation writes (:mod:`musclerl.evaluate.trial`);
- ``trials.csv`` (one row per trial, failures with their reason), ``columns.csv`` (per trial and
  column: r, RMSE, nRMSE, lag on valid samples), ``subjects.csv``, ``subject_columns.csv``,
  ``aggregate.csv`` (n, mean, sd, median, quartiles across trials) — see
  :mod:`musclerl.evaluate.tables`;
- ``summary.json`` (every table), ``report.md`` (:mod:`musclerl.evaluate.dataset_report`: the
  dataset summary beside the published figures, per subject, per trial) and
  ``plots/r_distribution.png``, ``plots/torque_cycles.png``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shutil
import time
from pathlib import Path

from musclerl.errors import InputError
from musclerl.evaluate.trial import TrialInputs, TrialOptions

ACTIVATION_SUFFIX = "_muscle_activation.sto"
EMG_SUFFIXES = ("_emg.sto", "_emg.csv")  # a reference's EMG beside it, compared with --emg-map
RESULT_FILE = "result.json"
RUN_FILE = "run.json"  # the policy and options of the run, so --resume refuses other settings
TABLES = ("trials", "columns", "subjects", "subject_columns", "aggregate")
#: What a folder evaluation writes into --out: another file there means the folder is not ours.
OUTPUT_NAMES = {"trials", "plots", RUN_FILE, "summary.json", "report.md", *(f"{t}.csv" for t in TABLES)}


def plan(
    motion: str | None,
    reference: str | list[str] | None,
    exclude: Path | None = None,
    emg_map: str | None = None,
    emg_processed: bool = False,
) -> tuple[list[TrialInputs], list[dict]]:
    """Trials to evaluate and the files that could not be paired (``{"trial", "error"}`` rows).

    ``reference``: files, folders (searched recursively) and glob patterns; files below
    ``exclude`` (the output folder) are not references. With ``emg_map``, a reference's
    ``<stem>_emg.sto`` / ``<stem>_emg.csv`` beside it is compared through that channel map."""
    from musclerl.retarget.batch import expand_inputs

    references = [reference] if isinstance(reference, str) else list(reference or [])
    motions = expand_inputs([motion], (".npz",), "motion") if motion else []
    refs = expand_inputs(references, (".npz",), "reference", recursive=True) if references else []
    if exclude is not None:
        skip = Path(exclude).resolve()
        refs = [r for r in refs if skip not in r.resolve().parents]
        if references and not refs:
            raise InputError(", ".join(references), "no .npz references found outside --out")
    many_refs = len(references) > 1 or any(not Path(r).is_file() for r in references)
    failures: list[dict] = []
    if motion and Path(motion).is_dir() and many_refs:
        by_stem = {p.stem: p for p in refs}
        pairs = [(m, by_stem.pop(m.stem, None)) for m in motions]
        where = ", ".join(references)
        for m, r in pairs:
            if r is None:
                failures.append({"trial": m.stem, "error": f"{m}: no reference {m.stem}.npz in {where}"})
        failures += [{"trial": s, "error": f"{p}: no motion {s}.npz in {motion}"} for s, p in by_stem.items()]
        pairs = [(m, r) for m, r in pairs if r is not None]
    elif motions and refs:
        pairs = [(m, r) for m in motions for r in refs]
    else:
        pairs = [(m, None) for m in motions] + [(None, r) for r in refs]
    stems = [Path(r or m).stem for m, r in pairs]
    trials = []
    for m, r in pairs:
        act = None if r is None else r.with_name(r.stem + ACTIVATION_SUFFIX)
        # one reference against many motions: trials are named after the motions
        label = m.stem if m is not None and r is not None and len(motions) > 1 else None
        source = Path(r or m)
        if label is None and stems.count(source.stem) > 1:
            label = f"{source.parent.name}_{source.stem}"
        emg = (
            None
            if r is None
            else next((e for e in (r.with_name(r.stem + x) for x in EMG_SUFFIXES) if e.is_file()), None)
        )
        trials.append(
            TrialInputs(
                motion=m,
                reference=r,
                activations=act if act and act.is_file() else None,
                emg=emg if emg_map else None,
                emg_map=Path(emg_map) if emg and emg_map else None,
                emg_processed=emg_processed,
                label=label,
            )
        )
    names = [t.name for t in trials]
    if len(set(names)) != len(names):
        raise InputError(
            ", ".join(references) or motion, "two trials share a file name; outputs would collide"
        )
    return trials, failures


def evaluate_item(item: TrialInputs, policy_path: str, options: TrialOptions, trials_dir: str, state: dict):
    """One trial for :func:`run_items`: its :class:`TrialResult` (also written as the trial's
    ``result.json``), or ``{"trial", "error"}``.

    ``state`` keeps the loaded policy across the worker's trials. Bad input is the trial's
    one-line reason; an unexpected exception too (marked as such), so one trial cannot stop the
    folder.
    """
    import warnings

    from musclerl.evaluate.trial import evaluate_trial, result_to_json
    from musclerl.motion.reference import LegacyLayoutWarning
    from musclerl.retarget.batch import failure_row
    from musclerl.rl.export import load_policy

    warnings.simplefilter("ignore", LegacyLayoutWarning)  # said once per file, before the workers
    try:
        if "policy" not in state:
            state["policy"] = load_policy(policy_path)
        folder = Path(trials_dir) / item.name
        result = evaluate_trial(state["policy"], item, options, folder)
        (folder / RESULT_FILE).write_text(json.dumps(result_to_json(result)))
        return result
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


def _earlier_results(trials: list[TrialInputs], trials_dir: Path) -> dict:
    """Results of the trials an earlier run finished (their ``result.json``), by trial name."""
    from musclerl.evaluate.trial import result_from_json

    done = {}
    for t in trials:
        path = trials_dir / t.name / RESULT_FILE
        if path.is_file():
            try:
                done[t.name] = result_from_json(json.loads(path.read_text()))
            except (ValueError, KeyError, TypeError):
                continue  # unreadable: evaluated again
    return done


def run_folder(args: argparse.Namespace, options: TrialOptions) -> int:
    """Evaluate every trial (see the module docstring); returns 0, raises InputError if none ran."""
    from musclerl.evaluate.trial import TrialResult
    from musclerl.jax_setup import available_cores
    from musclerl.retarget.batch import run_items
    from musclerl.rl.export import load_policy

    if args.activations or args.emg:
        raise InputError(
            "--activations/--emg",
            f"single-trial inputs; in folder mode a reference's <stem>{ACTIVATION_SUFFIX} and "
            f"<stem>{EMG_SUFFIXES[0]} or <stem>{EMG_SUFFIXES[1]} (with --emg-map) beside it are used",
        )
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {args.jobs}")
    load_policy(args.policy)  # a bad policy fails once, before any trial
    out = Path(args.out)
    foreign = sorted(p.name for p in out.iterdir() if p.name not in OUTPUT_NAMES) if out.is_dir() else []
    if foreign:
        raise InputError(
            out,
            f"--out holds files that no evaluation wrote ({', '.join(foreign[:3])}); it would be replaced",
        )
    trials, failures = plan(args.motion, args.reference, out, args.emg_map, args.emg_processed)
    setup = {"policy": str(Path(args.policy).resolve()), "options": dataclasses.asdict(options)}
    setup = json.loads(json.dumps(setup, default=str))  # as it reads back (tuples become lists)
    if args.resume and (out / RUN_FILE).is_file():
        earlier = json.loads((out / RUN_FILE).read_text())
        if earlier != setup:
            changed = sorted(
                k
                for k in {**earlier.get("options", {}), **setup["options"]}
                if earlier.get("options", {}).get(k) != setup["options"].get(k)
            )
            what = ", ".join(changed) or "policy"
            raise InputError(
                args.out, f"--resume: the earlier run used other settings ({what}); drop --resume"
            )
    done = _earlier_results(trials, out / "trials") if args.resume else {}
    todo = [t for t in trials if t.name not in done]
    unreadable = {t.name: err for t in todo if (err := _unreadable(t)) is not None}
    failures += [{"trial": name, "error": err} for name, err in unreadable.items()]
    todo = [t for t in todo if t.name not in unreadable]
    where = ", ".join(args.reference or []) or args.motion
    if not todo and not done:
        reasons = "; ".join(f["error"] for f in failures[:3])
        raise InputError(where, f"no trial could be evaluated ({reasons})")
    jobs = args.jobs or max(1, min(available_cores(), len(todo)))
    if out.exists() and not args.resume:
        shutil.rmtree(out)  # replaced, as a single evaluation replaces its folder
    created = not out.exists()
    (out / "trials").mkdir(parents=True, exist_ok=True)
    (out / RUN_FILE).write_text(json.dumps(setup, indent=2))
    t0 = time.perf_counter()
    rows = run_items(
        todo,
        evaluate_item,
        (str(args.policy), options, str(out / "trials")),
        jobs=min(jobs, max(len(todo), 1)),
        desc="evaluate",
        done_before=len(done),
    )
    wall_s = time.perf_counter() - t0
    fresh = {r.name: r for r in rows if isinstance(r, TrialResult)}
    failures += [r for r in rows if not isinstance(r, TrialResult)]
    results = [done.get(t.name) or fresh[t.name] for t in trials if t.name in done or t.name in fresh]
    if not results:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        reasons = "; ".join(f["error"] for f in failures[:3])
        raise InputError(where, f"no trial could be evaluated ({reasons})")
    _write_tables(out, results, failures, jobs, wall_s, len(done), options.sim_torque_mass)
    print(
        f"wrote {out}/report.md: {len(results)} trials evaluated ({len(done)} kept from an earlier run), "
        f"{len(failures)} failed, {jobs} process(es), {wall_s:.1f} s"
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


def _write_tables(
    folder: Path,
    results: list,
    failures: list[dict],
    jobs: int,
    wall_s: float,
    resumed: int = 0,
    sim_torque_mass: str = "model",
) -> None:
    from musclerl.evaluate import dataset_report, plots, published, tables
    from musclerl.evaluate.report import _clean

    doc = {
        "trials": tables.trial_rows(results, failures),
        "subjects": tables.subject_rows(results),
        "aggregate": tables.aggregate_rows(results),
        "columns": tables.column_rows(results),
        "subject_columns": tables.subject_column_rows(results),
        "dataset": dataset_report.dataset_rows(results),
        "headline": dataset_report.headline_across(results),
        "published": published.published_rows(results),
        "gait": dataset_report.gait_across(results),
        "sign_flips": dataset_report.sign_flip_counts(results),
        "failures": failures,
        "jobs": jobs,
        "wall_s": wall_s,
        "resumed_trials": resumed,
        "sim_torque_mass": sim_torque_mass,
    }
    for name in TABLES:
        _write_csv(folder / f"{name}.csv", doc[name])
    (folder / "plots").mkdir(exist_ok=True)
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
    (folder / "report.md").write_text(dataset_report.markdown(doc, len(results)))
