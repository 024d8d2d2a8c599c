"""``musclerl retarget smpl``: SMPL/AMASS (.npz), DeepMimic (.txt) or BVH motion -> model Trajectory.

Keypoints are fitted by IK on the registered model (``--scale``: on the model scaled per segment
to the motion's skeleton), foot
contact and the support surface (flat, slopes, steps) are recovered from the motion, and a second
IK holds the feet on that surface (see :mod:`musclerl.retarget.keypoints.pipeline`). The Trajectory
stores the terrain heightfield and the contact flags of the sole points.

One motion: ``--out OUT.npz`` plus optional ``--report R.json`` and ``--plot P.png`` (with
``P_terrain.png`` beside it). Several motions (or a folder of ``.npz``/``.txt``): ``--out`` is a
folder receiving ``<motion>.npz`` and ``<motion>.json`` (and ``.png`` files when ``--plot`` is
given) and a ``summary.json``; finished motions are skipped; motions run spread over the
process's JAX devices, or over ``--jobs`` processes (:func:`musclerl.retarget.batch.run_folder`);
a motion that fails is listed with its reason while the others go on (exit 2 only when no motion
could be retargeted). JAX's persistent compilation cache is turned on first
(:func:`musclerl.jax_setup.configure_compilation_cache`, ``$MUSCLERL_CACHE``).

The summary (``summary.json``, ``summary.txt``) is the dataset report: per trial the subject
and kind (the ``MANIFEST.tsv`` beside the files, else a CMU ``SS_TT`` name), speed, strides and
the plausibility verdict with its reason, or why the trial was refused.

BVH files are read without their leading rest-pose frames (``--keep-rest-frames`` keeps them), a
bent rest skeleton is refused (``--accept-skeleton``), and they get the balance pass unless
``--no-balance`` (:data:`~musclerl.retarget.keypoints.files.BALANCE_BY_DEFAULT`: CMU's walks fail
the plausibility check on myolegs without it, docs/training_data.md). ``--start/--end`` (s) and
``--start-frame/--end-frame`` keep a window of every motion given (:mod:`musclerl.motion.trim`).

Report fields are those of :mod:`musclerl.retarget.report`, with the ground ones measured on the
recovered terrain: ``penetration_frac``/``penetration_max_m`` (every collision geom's lowest
surface point against the heightfield under it; a frame counts when deeper than 5 mm),
``skating_mps`` (mean horizontal speed of the sole points over stance frames), plus
``skating_max_mps``, ``stance_frac`` and ``scale_factors`` (empty unless ``--scale``). On a
registered model the clip is put on the ground with the feet of the model the Trajectory names
(``named_model_placement.shift_m``, the root's vertical move), balanced on that model, and its
``plausibility`` is measured there, as the dataset loader and ``musclerl info`` measure it
(``plausibility_model``). With ``--scale`` the fit's numbers (keypoints, limits, ground, skating)
are the scaled model's, and the clip played on the registry's model may fail the check's
penetration test: CMU's scaled walks put the registry myolegs' feet 2-5 cm into the floor.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from musclerl.retarget.batch import FOLDER_RULE
from musclerl.retarget.keypoints.files import MOTION_KINDS, SmplOptions, retarget_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "motion", nargs="+", help="AMASS/SMPL .npz, DeepMimic .txt or .bvh file(s), or a folder of them"
    )
    parser.add_argument(
        "--model",
        default="myolegs",
        help="registered model with a keypoint table: myolegs, myofullbody, musclemimic-fullbody, tiny",
    )
    parser.add_argument(
        "--out",
        required=True,
        help=f"output Trajectory .npz; a folder for many motions, which gets <motion>.npz/.json and a "
        f"summary.json (finished motions are skipped): {FOLDER_RULE}",
    )
    parser.add_argument("--report", help="quality report JSON (many motions: always written)")
    parser.add_argument("--plot", help="quality plot PNG; with many motions any value turns plots on")
    parser.add_argument(
        "--scale",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="solve on the model scaled to the motion's skeleton (closer keypoint fit; the clip is still "
        "played on the registry's model, where its feet may go into the floor); default: the model's own "
        "segment lengths, the model the clip is played on",
    )
    parser.add_argument(
        "--no-ground", action="store_true", help="keypoint IK only: no contact, terrain or ground constraint"
    )
    parser.add_argument(
        "--y-up", action="store_true", help="AMASS file in SMPL's Y-up frame (not AMASS's Z-up)"
    )
    parser.add_argument(
        "--units",
        default="auto",
        help="BVH files: m, cm, mm, inch, cmu (1/0.45 inch) or metres per file unit; default auto: "
        "the unit giving the skeleton human-length legs (docs/inputs.md)",
    )
    parser.add_argument(
        "--balance",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="then move the centre of mass, feet held, until the centre of pressure inverse dynamics "
        "needs stays on the feet (a clip a body can follow, to train on; the report's keypoint "
        "errors are the kinematic solve's); default: on for .bvh motion capture, off for the others",
    )
    add_trim_arguments(parser)
    parser.add_argument(
        "--keep-rest-frames",
        action="store_true",
        help="BVH files: keep the leading rest-pose (T-pose) frames, which are found and dropped by default",
    )
    parser.add_argument(
        "--accept-skeleton",
        action="store_true",
        help="retarget a BVH file whose rest skeleton has bent knees (refused by default: its joint "
        "offsets put the motion in a crouch)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="parallel processes for many motions (default 1: one process, motions "
        "spread over its JAX devices)",
    )


def add_trim_arguments(parser: argparse.ArgumentParser) -> None:
    """``--start/--end`` (seconds) and ``--start-frame/--end-frame`` (0-based), both ends inclusive,
    in the file's own time and frame numbers (:mod:`musclerl.motion.trim`)."""
    group = parser.add_argument_group("trim (both ends kept; the file's own times and frame numbers)")
    group.add_argument(
        "--start", type=float, metavar="S", help="first time kept (s from the file's first frame)"
    )
    group.add_argument("--end", type=float, metavar="S", help="last time kept (s)")
    group.add_argument("--start-frame", type=int, metavar="F", help="first frame kept (0 = the file's first)")
    group.add_argument("--end-frame", type=int, metavar="F", help="last frame kept")


def trim_of(args: argparse.Namespace):
    """The :class:`~musclerl.motion.trim.Trim` of :func:`add_trim_arguments`'s options."""
    from musclerl.motion.trim import Trim

    return Trim(args.start, args.end, args.start_frame, args.end_frame)


def plot_terrain(path: Path, result) -> None:
    """PNG: recovered heightfield with the stance sole points, and the height along the walk."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from musclerl.fileio import atomic_path

    traj = result.trajectory
    terrain = traj.terrain
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    sole = traj.site_pos_m[:, -len(traj.contact_names) :]
    planted = sole[traj.contact]
    if terrain is not None:
        rows, cols = terrain.height_m.shape
        extent = [
            terrain.origin_m[0],
            terrain.origin_m[0] + (cols - 1) * terrain.cell_m,
            terrain.origin_m[1],
            terrain.origin_m[1] + (rows - 1) * terrain.cell_m,
        ]
        image = axes[0].imshow(
            terrain.height_m, origin="lower", extent=extent, cmap="viridis", aspect="equal"
        )
        fig.colorbar(image, ax=axes[0], label="height (m)")
        path_xy = sole.mean(axis=1)[:, :2]
        axes[1].plot(path_xy[:, 0], terrain.height_at(path_xy), label="terrain under the feet")
    axes[0].scatter(planted[:, 0], planted[:, 1], s=2, c="w")
    axes[0].set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    axes[0].set_title("recovered terrain and stance sole points")
    axes[1].scatter(planted[:, 0], planted[:, 2], s=2, c="k", label="stance sole points")
    axes[1].set_xlabel("x (m)")
    axes[1].set_ylabel("z (m)")
    axes[1].legend()
    axes[1].set_title(f"{traj.clip_names[0]}: {np.count_nonzero(traj.contact.any(axis=1))} stance frames")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def write_outputs(
    result, report_dict: dict, series: dict, out: Path, report: Path | None, plot: Path | None, title: str
) -> None:
    """Write the Trajectory of one retargeted motion (:func:`retarget_file`'s outputs) to ``out``,
    and its report and plots (``plot`` and ``<plot>_terrain.png`` beside it) when given."""
    import numpy as np

    from musclerl.retarget.report import plot_report, write_report

    out.parent.mkdir(parents=True, exist_ok=True)
    result.trajectory.save(out)
    if report is not None:
        write_report(report, report_dict)
    if plot is not None:
        traj = result.trajectory
        model = result.prepared.model
        coords = {
            name: np.degrees(traj.qpos[:, model.jnt_qposadr[model.joint(name).id]])
            for name in ("hip_flexion_r", "knee_angle_r", "ankle_angle_r")
            if name in traj.joint_names
        }
        plot_report(plot, report_dict, series, coords, title=title)
        if traj.terrain is not None:
            plot_terrain(plot.with_name(plot.stem + "_terrain.png"), result)


def expand_motions(inputs: list[str]) -> list[Path]:
    """Motion files from files and folders (folders: their files of every keypoint reader's
    suffix that folders yield, and .npz, sorted)."""
    from musclerl.motion.readers import suffixes
    from musclerl.retarget.batch import expand_inputs

    return expand_inputs(inputs, suffixes(MOTION_KINDS, folders=True), "motion")


def retarget_motion(paths, options: SmplOptions, state: dict) -> dict:
    """Retarget and write one motion of a folder run (:func:`musclerl.retarget.batch.run_folder`,
    ``paths`` its :class:`~musclerl.retarget.batch.ItemOutputs`); returns its report.
    ``state["solvers"]`` keeps the worker's compiled IK problems: motions of one skeleton and
    keypoint set share one (see :func:`musclerl.retarget.keypoints.pipeline.clip_key`)."""
    result, report, series = retarget_file(paths.source, options, state.setdefault("solvers", {}))
    write_outputs(result, report, series, paths.out, paths.report, paths.plot, paths.source.name)
    return report


def run(args: argparse.Namespace) -> int:
    from musclerl.errors import InputError
    from musclerl.fileio import check_outputs
    from musclerl.jax_setup import configure_jax
    from musclerl.retarget import batch

    options = SmplOptions(
        model=args.model,
        scale=args.scale,
        ground=not args.no_ground,
        y_up=args.y_up,
        balance=args.balance,
        units=args.units,
        keep_rest=args.keep_rest_frames,
        accept_skeleton=args.accept_skeleton,
        trim=trim_of(args),
    )
    motions = expand_motions(args.motion)
    inputs = [*motions, *args.motion]
    if len(motions) == 1 and not Path(args.motion[0]).is_dir():
        out = Path(args.out)
        if out.suffix.lower() != ".npz":
            raise InputError(out, "--out must be a .npz file for one motion")
        plot = Path(args.plot) if args.plot else None
        terrain_plot = None if plot is None or args.no_ground else plot.with_name(plot.stem + "_terrain.png")
        files = {"--out": out, "--report": args.report, "--plot": plot, "--plot (terrain)": terrain_plot}
        check_outputs(files, inputs=inputs)
        configure_jax(args.jobs)
        result, report, series = retarget_file(motions[0], options)
        write_outputs(
            result, report, series, out, Path(args.report) if args.report else None, plot, motions[0].name
        )
        return 0
    out_dir = Path(args.out)
    if out_dir.suffix.lower() == ".npz":
        raise InputError(out_dir, "--out must be a folder when several motions are given")
    check_outputs(folders={"--out": out_dir}, inputs=inputs)
    configure_jax(args.jobs)
    paths = batch.plan(motions, out_dir, plot=bool(args.plot))
    rows = batch.run_folder(paths, retarget_motion, (options,), jobs=max(1, args.jobs), desc="retarget smpl")
    return batch.finish_folder(out_dir, with_trial_info(rows, motions), ", ".join(args.motion))


def with_trial_info(rows: list[dict], motions: list[Path]) -> list[dict]:
    """The folder run's rows with each trial's subject, kind and description
    (:func:`musclerl.motion.trials.trial_info`: the MANIFEST.tsv beside the files, else a CMU
    ``SS_TT`` file name), for the dataset report."""
    from musclerl.motion.trials import trial_info

    return [{**row, "trial_info": trial_info(path)} for row, path in zip(rows, motions, strict=True)]
