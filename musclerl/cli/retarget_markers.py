"""``musclerl retarget markers``: .trc (or .c3d) markers -> scaled model -> constrained IK -> Trajectory.

One trial: ``--out OUT.npz`` plus optional ``--mot``, ``--report``, ``--plot`` files. Several
trials (or a folder): ``--out`` is a folder receiving ``<trial>.npz/.json[/.mot/.png]`` and a
``summary.json``; finished trials are skipped, ``--jobs`` runs trials in parallel processes
(:func:`musclerl.retarget.batch.run_folder`), and a trial that fails is listed with its reason
while the others go on (exit 2 only when no trial could be retargeted). The subject model is
calibrated once per process and its IK problem compiled once; JAX's persistent compilation cache
(``$MUSCLERL_CACHE``, default ``~/.cache/musclerl/jax``) is turned on first, so later runs load
it instead.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from musclerl.errors import InputError
from musclerl.jax_setup import configure_jax
from musclerl.retarget import batch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trc", nargs="+", help="marker trial(s) (.trc or .c3d) or a folder of them")
    parser.add_argument("--model", default="myolegs", help="registered model name or MJCF path")
    parser.add_argument("--markers", required=True, help="OpenSim model (.osim) or MarkerSet .xml")
    parser.add_argument(
        "--static",
        help="static trial (.trc, .c3d) to scale the model and place markers; without it, the marker set's "
        "own .osim at its default pose (a model already scaled to the subject: used as it is)",
    )
    parser.add_argument("--setup", help="OpenSim IK setup XML (marker weights, coordinate tasks, time range)")
    parser.add_argument(
        "--scale-setup",
        help="OpenSim Scale setup XML (marker-pair measurements, "
        "placement weights, static time range, subject mass)",
    )
    parser.add_argument("--start", type=float, help="first time (s); overrides the setup's time range")
    parser.add_argument("--end", type=float, help="last time (s); overrides the setup's time range")
    parser.add_argument(
        "--no-robust",
        action="store_true",
        help="plain weighted least squares (no second pass down-weighting markers the model cannot follow)",
    )
    parser.add_argument(
        "--place-from-trial",
        default="",
        metavar="BODIES",
        help="comma-separated bodies whose markers are re-placed from the trial itself (mean body-frame "
        "position over a first IK pass), then IK again; off by default: it fits marker offsets to the "
        "trial measured. For a segment the model cannot bend whose posture differs from the static "
        "trial's (e.g. 'torso' for myolegs' rigid trunk on a walk that leans forward)",
    )
    belt = parser.add_mutually_exclusive_group()
    belt.add_argument(
        "--treadmill",
        nargs="?",
        type=float,
        const=float("nan"),
        metavar="SPEED_M_S",
        help="the trial is on a treadmill (default: detected from the stance feet); with SPEED_M_S, "
        "the belt speed (else estimated). The belt's travel is added to the root so the Trajectory "
        "walks overground",
    )
    belt.add_argument("--overground", action="store_true", help="never treat the trial as a treadmill trial")
    parser.add_argument(
        "--balance",
        action="store_true",
        help="then move the centre of mass, feet held, until the centre of pressure inverse dynamics "
        "needs stays on the feet (a clip a body can follow, to train on; the report's marker errors "
        "are the kinematic solve's); reported as the report's 'balance' entry",
    )
    parser.add_argument(
        "--out",
        required=True,
        help=f"output Trajectory .npz; a folder for many trials, which gets <trial>.npz/.json and a "
        f"summary.json (finished trials are skipped): {batch.FOLDER_RULE}",
    )
    parser.add_argument(
        "--mot",
        help="also write coordinates as an OpenSim .mot (degrees); with many "
        "trials any value turns .mot output on",
    )
    parser.add_argument(
        "--report",
        help="quality report JSON (many trials: always written); its "
        "'calibration' entry rebuilds the subject model (markers.calibration.subject_spec)",
    )
    parser.add_argument("--plot", help="quality plot PNG; with many trials any value turns plots on")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="parallel processes for many trials (default 1: one process, trials spread over its "
        "JAX devices)",
    )


def write_outputs(result, out: Path, report: Path | None, mot: Path | None, plot: Path | None) -> None:
    """Write the Trajectory and the optional report/.mot/plot files of one retargeted trial."""
    from musclerl.motion.storage import write_storage
    from musclerl.retarget.report import plot_report, write_report

    out.parent.mkdir(parents=True, exist_ok=True)
    result.trajectory.save(out)
    if report is not None:
        write_report(report, result.report)
    if mot is not None:
        write_storage(mot, result.table)
    if plot is not None:
        from musclerl.models.couplings import SAGITTAL_LEG_COORDINATES

        columns = [c for c in SAGITTAL_LEG_COORDINATES if c in result.table.columns]
        coords = {c: result.table.column(c) for c in columns}
        plot_report(plot, result.report, result.series, coords, title=Path(result.report["trial"]).name)


def expand_trials(inputs: list[str]) -> list[Path]:
    """Marker trials (``.trc``, any ``markers`` reader) from files and folders; InputError if none."""
    from musclerl.motion.readers import suffixes

    return batch.expand_inputs(inputs, suffixes(("markers",), folders=True), "trial")


def retarget_trial(paths: batch.ItemOutputs, options, state: dict) -> dict:
    """Retarget and write one trial of a folder run (:func:`musclerl.retarget.batch.run_folder`);
    returns its report.

    ``state`` is kept by the worker across its trials: the subject model (it depends only on
    ``options``) is calibrated once and its compiled IK problems are reused.
    """
    from musclerl.retarget.markers.pipeline import retarget_markers

    result = retarget_markers(paths.source, options, state.get("calibrated"))
    state["calibrated"] = result.calibrated
    write_outputs(result, paths.out, paths.report, paths.mot, paths.plot)
    return result.report


def _options(args: argparse.Namespace):
    from musclerl.retarget.markers.pipeline import MarkerOptions

    if args.treadmill is not None and not math.isnan(args.treadmill) and not 0.0 <= args.treadmill < 10.0:
        raise InputError("--treadmill", f"belt speed {args.treadmill} m/s is not in [0, 10) m/s")
    return MarkerOptions(
        model=args.model,
        markers=args.markers,
        static=args.static,
        setup=args.setup,
        scale_setup=args.scale_setup,
        start_s=args.start,
        end_s=args.end,
        robust=not args.no_robust,
        place_from_trial=tuple(b.strip() for b in args.place_from_trial.split(",") if b.strip()),
        treadmill=False if args.overground else (None if args.treadmill is None else True),
        belt_speed_mps=None if args.treadmill is None or math.isnan(args.treadmill) else args.treadmill,
        balance=args.balance,
    )


def run(args: argparse.Namespace) -> int:
    from musclerl.fileio import check_outputs
    from musclerl.retarget.markers.pipeline import load_inputs, retarget_markers

    trials = expand_trials(args.trc)
    single = len(trials) == 1 and Path(args.trc[0]).is_file() and Path(args.out).suffix == ".npz"
    inputs = [*trials, *args.trc, args.markers, args.static, args.setup, args.scale_setup]
    if single:
        files = {"--out": args.out, "--report": args.report, "--mot": args.mot, "--plot": args.plot}
        check_outputs(files, inputs=inputs)
    else:
        check_outputs(folders={"--out": args.out}, inputs=inputs)
    configure_jax(args.jobs)
    options = _options(args)
    load_inputs(options)  # fail early, before any output, on a bad marker set / setup / static trial
    if single:
        result = retarget_markers(trials[0], options)
        write_outputs(
            result,
            Path(args.out),
            Path(args.report) if args.report else None,
            Path(args.mot) if args.mot else None,
            Path(args.plot) if args.plot else None,
        )
        if result.calibrated.missing_body:
            print(
                "musclerl: warning: markers on bodies the model lacks were skipped: "
                f"{result.calibrated.missing_body}",
                file=sys.stderr,
            )
        for key in ("label_warning", "side_warning"):
            if result.report.get(key):
                print(f"musclerl: warning: {trials[0].name}: {result.report[key]}", file=sys.stderr)
        rms = result.report["marker_rms_m"]["mean"]
        print(
            f"{trials[0].name}: {result.report['frames']} frames, marker RMS {1e3 * rms:.1f} mm, "
            f"failed {result.report['failed_frames']} -> {args.out}"
        )
        return 0
    out_dir = Path(args.out)
    if out_dir.suffix == ".npz":
        raise InputError(out_dir, "with several trials or a folder, --out must be a folder")
    paths = batch.plan(trials, out_dir, mot=bool(args.mot), plot=bool(args.plot))
    rows = batch.run_folder(paths, retarget_trial, (options,), jobs=max(1, args.jobs), desc="retarget")
    return batch.finish_folder(out_dir, rows, ", ".join(args.trc))
