"""Folder runs of the retarget commands: one output + report per input, a summary, resumable, parallel.

Each input file ``<stem>.<ext>`` gets ``<stem>.npz`` (the Trajectory), ``<stem>.json`` (its
report) and optional ``.mot``/``.png`` files in the output folder (:func:`plan`). An input whose
``.npz`` already exists is skipped (its report, when present, still enters the summary), so an
interrupted run resumes where it stopped. :func:`run_folder` runs the rest through
:func:`run_items`:

* ``jobs`` > 1: a process pool (``spawn``); each worker process keeps its own state across the
  items it runs (e.g. the calibrated subject model and its compiled IK problem);
* otherwise one item after the other in this process, sharing that state.

Across JAX devices: every solve splits its warm-start chains over all local devices, so one
process uses every device it sees: the GPUs, or on a CPU-only host as many CPU devices as
:func:`musclerl.jax_setup.configure_jax` gives it (the cores this process may use, divided among
the ``jobs`` processes). A tqdm bar shows progress.

Failures follow one rule (:data:`FOLDER_RULE`, the rule of ``musclerl evaluate`` on a folder): an
input that fails is listed with its one-line reason (``summary.json`` and stdout) and the others
go on; the run fails (exit 2, one error line, nothing written) only when no input has an output,
none retargeted now and none by an earlier run (:func:`finish_folder`).

The summary (``summary.json``, and the table on stdout and in ``summary.txt``) is the dataset
report: per trial its status and headline numbers, and when the reports carry them the subject
and kind (``trial_info``), the speed (m/s) and strides (``gait``), whether the plausibility check
passed and, for a trial that failed it or was refused, the reason.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import glob
import json
import multiprocessing
from collections.abc import Callable, Sequence
from pathlib import Path

from musclerl.errors import InputError
from musclerl.fileio import atomic_path
from musclerl.jax_setup import configure_jax

#: The failure rule of folder runs, for the commands' ``--help``.
FOLDER_RULE = (
    "an input that fails is listed with its one-line reason (summary.json, stdout) and the others "
    "go on (exit 0); exit 2 only when no input could be retargeted"
)

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


def expand_inputs(
    inputs: list[str], suffixes: tuple[str, ...], what: str, recursive: bool = False
) -> list[Path]:
    """Files from files, folders and glob patterns (``ROOT/S0*/*.npz``), each once, in order.

    A folder gives its files with one of ``suffixes`` (any case, sorted), with ``recursive`` every
    such file below it; hidden files and folders (``.name``, e.g. partial outputs) are skipped.
    ``what`` names an item in the errors ("trial", "motion"); InputError if nothing is found.
    """
    found: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            files = path.rglob("*") if recursive else path.iterdir()
            found += sorted(
                p
                for p in files
                if p.is_file()
                and p.suffix.lower() in suffixes
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.is_file():
            found.append(path)
        elif any(c in str(item) for c in "*?["):
            matched = sorted(
                Path(p) for p in glob.glob(str(item), recursive=True) if Path(p).suffix.lower() in suffixes
            )
            if not matched:
                raise InputError(path, f"no {' or '.join(suffixes)} {what} file matches this pattern")
            found += [p for p in matched if p.is_file()]
        else:
            raise InputError(path, f"{what} file or folder not found")
    found = list(dict.fromkeys(found))
    if not found:
        raise InputError(", ".join(map(str, inputs)), f"no {' or '.join(suffixes)} {what}s found")
    return found


@dataclasses.dataclass(frozen=True)
class ItemOutputs:
    """Where one input (``source``) of a folder run writes: the Trajectory ``out``, the report
    ``report``, and the optional ``mot`` (coordinates table) and ``plot`` (PNG) files."""

    source: Path
    out: Path
    report: Path
    mot: Path | None = None
    plot: Path | None = None


def plan(inputs: Sequence[Path], out_dir: Path, mot: bool = False, plot: bool = False) -> list[ItemOutputs]:
    """Outputs of every input inside ``out_dir``: ``<stem>.npz``, ``<stem>.json``, and with
    ``mot``/``plot`` ``<stem>.mot``/``<stem>.png``. InputError when two inputs share a stem."""
    stems = [Path(p).stem for p in inputs]
    shared = sorted({s for s in stems if stems.count(s) > 1})
    if shared:
        raise InputError(out_dir, f"two inputs share the file name {shared[0]!r}; outputs would collide")
    out_dir = Path(out_dir)
    return [
        ItemOutputs(
            Path(p),
            out_dir / f"{Path(p).stem}.npz",
            out_dir / f"{Path(p).stem}.json",
            out_dir / f"{Path(p).stem}.mot" if mot else None,
            out_dir / f"{Path(p).stem}.png" if plot else None,
        )
        for p in inputs
    ]


def failure_row(trial: str, err: Exception) -> dict:
    """``{"trial", "error"}`` of an item that failed: an InputError's one line, or an unexpected
    exception marked as such (one item must not stop the folder)."""
    if isinstance(err, InputError):
        return {"trial": trial, "error": str(err)}
    reason = " ".join(str(err).split()) or "no message"
    return {"trial": trial, "error": f"{trial}: unexpected {type(err).__name__}: {reason}"}


def skipped_row(item: Path, report: Path) -> dict:
    """Summary row of an item finished by an earlier run (its report when present)."""
    earlier = json.loads(report.read_text()) if report.exists() else {}
    return {**earlier, "trial": str(item), "skipped": True}


_WORKER_STATE: dict = {}  # per worker process (process pool): state kept across its items


def _worker_init(jobs: int) -> None:
    configure_jax(jobs)


def _in_worker(run_one: Callable, item, args: tuple) -> dict:
    return run_one(item, *args, _WORKER_STATE)


def run_items(
    items: Sequence,
    run_one: Callable,
    args: tuple = (),
    jobs: int = 1,
    desc: str = "retarget",
    progress: bool = True,
    done_before: int = 0,
) -> list[dict]:
    """``run_one(item, *args, state)`` for every item; returns the rows in ``items`` order.

    The progress bar counts ``done_before`` items finished by an earlier run into its total.

    ``jobs`` > 1: that many spawned processes (``run_one`` must be a module-level function), each
    with its own ``state`` dict kept across its items; else in this process with one ``state``.
    """
    from tqdm import tqdm

    rows: list = [None] * len(items)
    total = len(items) + done_before
    with tqdm(total=total, initial=done_before, desc=desc, unit="item", disable=not progress) as bar:
        if jobs <= 1:
            state: dict = {}
            for k, item in enumerate(items):
                rows[k] = run_one(item, *args, state)
                bar.update()
            return rows
        # spawn, not fork: the parent may hold JAX/XLA threads, which do not survive a fork
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_worker_init, initargs=(jobs,)
        ) as pool:
            futures = {pool.submit(_in_worker, run_one, item, args): k for k, item in enumerate(items)}
            for future in concurrent.futures.as_completed(futures):
                rows[futures[future]] = future.result()
                bar.update()
    return rows


def _guarded(item: ItemOutputs, run_one: Callable, *args) -> dict:
    """``run_one(item, *args)`` (args end with the worker's state), a failure as its row."""
    try:
        return run_one(item, *args)
    except Exception as err:  # noqa: BLE001 - reported per item, the folder goes on
        return failure_row(str(item.source), err)


def run_folder(
    items: Sequence[ItemOutputs],
    run_one: Callable,
    args: tuple = (),
    jobs: int = 1,
    desc: str = "retarget",
    progress: bool = True,
) -> list[dict]:
    """``run_one(item, *args, state)`` (it writes the item's outputs, returns its report) for every
    item whose ``out`` does not exist yet (:func:`run_items`); returns one row per item, in order:
    its report, :func:`skipped_row` or :func:`failure_row`."""
    rows: dict[int, dict] = {}
    todo = []
    for k, item in enumerate(items):
        if item.out.exists():
            rows[k] = skipped_row(item.source, item.report)
        else:
            todo.append(k)
    done = run_items(
        [items[k] for k in todo], _guarded, (run_one, *args), jobs=jobs, desc=desc, progress=progress
    )
    rows.update(zip(todo, done, strict=True))
    return [rows[k] for k in range(len(items))]


def finish_folder(out_dir: Path, rows: list[dict], source: str) -> int:
    """Apply the folder rule (:data:`FOLDER_RULE`) to the rows of :func:`run_folder`: when every
    input failed, InputError naming ``source`` with the first reasons (nothing written); else
    ``summary.json`` in ``out_dir``, the table and every failure's reason on stdout, and 0."""
    failures = [r for r in rows if "error" in r]
    if len(failures) == len(rows):
        reasons = "; ".join(r["error"] for r in failures[:3])
        more = f" and {len(failures) - 3} more" if len(failures) > 3 else ""
        raise InputError(source, f"no input could be retargeted ({reasons}{more})")
    table = summary_rows(rows)
    text = "\n".join([format_table(table), *(f"  failed: {f['error']}" for f in failures)])
    write_summary(out_dir, table)
    with atomic_path(Path(out_dir) / "summary.txt") as tmp:
        tmp.write_text(text + "\n")
    print(text)
    return 0


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
        info = report.get("trial_info") or {}
        row["subject"], row["kind"] = info.get("subject"), info.get("kind")
        gait = report.get("gait") or {}
        row["speed_mps"], row["strides"] = gait.get("speed_mps"), gait.get("strides")
        check = report.get("plausibility") or {}
        row["plausible"] = check.get("passed")
        row["reason"] = "; ".join(check.get("failures", [])) or None
        if "error" in report:
            row["plausible"], row["reason"] = False, report["error"].removeprefix(f"{report.get('trial')}: ")
        row["notes"] = (report.get("source") or {}).get("notes", [])
        row["warnings"] = [w for w in (report.get("label_warning"), report.get("side_warning")) if w]
        out.append(row)
    return out


def format_table(rows: list[dict]) -> str:
    """Plain-text table of :func:`summary_rows` (millimetres for marker errors); with subject,
    speed, strides and the plausibility verdict (and its reason below the row) when rows have
    them."""
    dataset = any(r.get("subject") is not None or r.get("speed_mps") is not None for r in rows)
    header = f"{'trial':30s} {'status':8s} {'frames':>6s} {'rms_mm':>8s} {'max_mm':>8s} {'failed':>6s}"
    if dataset:
        header += f" {'subject':>7s} {'kind':6s} {'m/s':>5s} {'strides':>7s} plausible"
    lines = [header]
    for r in rows:

        def mm(v):
            return f"{1e3 * v:8.1f}" if isinstance(v, float) else f"{'-':>8s}"

        line = (
            f"{r['trial'][:30]:30s} {r['status']:8s} {r.get('frames') or 0:6d} {mm(r.get('marker_rms_m'))} "
            f"{mm(r.get('marker_max_m'))} {r.get('failed_frames') or 0:6d}"
        )
        if dataset:
            speed = "-" if r.get("speed_mps") is None else f"{r['speed_mps']:.2f}"
            strides = "-" if r.get("strides") is None else f"{r['strides']:g}"
            verdict = {True: "pass", False: "FAIL", None: "-"}[r.get("plausible")]
            if r["status"] == "error":
                verdict = "refused"
            line += (
                f" {r.get('subject') or '-':>7s} {(r.get('kind') or '-')[:6]:6s} "
                f"{speed:>5s} {strides:>7s} "
                f"{verdict}"
            )
            if r.get("plausible") is False and r["status"] != "error":
                line += f"\n    {r['reason']}"
        for warning in r.get("warnings", []):
            line += f"\n    {warning}"
        lines.append(line)
    return "\n".join(lines)


def write_summary(out_dir: Path, rows: list[dict]) -> Path:
    """``summary.json`` in ``out_dir`` (written atomically); returns its path."""
    path = Path(out_dir) / "summary.json"
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(rows, indent=2) + "\n")
    return path
