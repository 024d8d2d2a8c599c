"""Many motions or marker trials: one output + report each, a summary table, resumable, parallel.

An item whose output ``.npz`` already exists is skipped (its report, when present, still enters
the summary), so an interrupted batch resumes where it stopped. :func:`run_items` runs the rest:

* ``jobs`` > 1: a process pool (``spawn``); each worker process keeps its own state across the
  items it runs (e.g. the calibrated subject model and its compiled IK problem);
* otherwise one item after the other in this process, sharing that state.

Across JAX devices: every solve splits its warm-start chains over all local devices
(:func:`musclerl.retarget.ik.solver.solve_clip`, ``shard_map``), so one process uses every device
it sees: the GPUs, or on a CPU-only host as many CPU devices as :func:`configure_jax` gives it
(the cores this process may use, divided among the ``jobs`` processes).

A tqdm bar shows progress. Failures on bad input are recorded per item and do not stop the batch.

:func:`configure_compilation_cache` points JAX's persistent compilation cache at
``$MUSCLERL_CACHE`` (default ``~/.cache/musclerl/jax``; ``MUSCLERL_CACHE=off`` disables it), so a
second run, or another process of the same batch, loads the compiled IK solver from disk instead
of compiling it again. The commands call :func:`configure_jax` (cache and CPU devices) first
thing; importing the library changes nothing.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from musclerl.errors import InputError
from musclerl.fileio import atomic_path

CACHE_ENV = "MUSCLERL_CACHE"
#: Compiles shorter than this are not written to the persistent cache. 0: every compile, the
#: the small eager-op kernels of a solve too, whose compiles add up per process.
CACHE_MIN_COMPILE_S = 0.0


def compilation_cache_dir() -> Path | None:
    """The persistent compilation cache folder: ``$MUSCLERL_CACHE``, else ``~/.cache/musclerl/jax``;
    None when ``MUSCLERL_CACHE=off``."""
    value = os.environ.get(CACHE_ENV, "")
    if value.lower() == "off":
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "musclerl" / "jax"


def configure_compilation_cache() -> Path | None:
    """Turn on JAX's persistent compilation cache in :func:`compilation_cache_dir` (every entry
    compiled in more than :data:`CACHE_MIN_COMPILE_S`, any size); returns the folder or None.

    Must run before the process compiles anything with JAX: JAX decides once, at its first
    compile, whether a cache is used.
    """
    import jax

    path = compilation_cache_dir()
    if path is None:
        return None
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_S)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def configure_jax(jobs: int = 1) -> int:
    """Set up JAX for one of ``jobs`` retargeting processes: the persistent compilation cache
    (:func:`configure_compilation_cache`) and :func:`set_cpu_devices` with this process's share of
    the cores (at least 1). Returns the CPU device count set (0: left as it was)."""
    configure_compilation_cache()
    return set_cpu_devices(max(1, available_cores() // max(1, jobs)))


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0))


def set_cpu_devices(count: int) -> int:
    """Give JAX ``count`` CPU devices (``jax_num_cpu_devices``), so that a solve split over the
    local devices runs each share on its own thread; on a GPU host the solver uses the GPUs and
    this does not matter. Left alone (returns 0) when ``XLA_FLAGS`` already sets a host device
    count or when JAX has already computed something in this process (the count is fixed then);
    else returns ``count``."""
    import jax

    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return 0
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # raised once JAX's backends are initialised: keep what it has
        return 0
    return count


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
) -> list[dict]:
    """``run_one(item, *args, state)`` for every item; returns the rows in ``items`` order.

    ``jobs`` > 1: that many spawned processes (``run_one`` must be a module-level function), each
    with its own ``state`` dict kept across its items; else in this process with one ``state``.
    """
    from tqdm import tqdm

    rows: list = [None] * len(items)
    with tqdm(total=len(items), desc=desc, unit="item", disable=not progress) as bar:
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
