"""``musclerl evaluate``: roll a policy out and compare with ID/SO/EMG references.

One trial (files): see :mod:`musclerl.evaluate.trial` for what is written into ``--out``;
``--reference REF.npz`` without ``--motion`` tracks the reference's own kinematics. A folder as
``--motion`` or ``--reference`` evaluates every file in it: see :mod:`musclerl.evaluate.folder`.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from musclerl.errors import InputError

#: Reference conventions that differ from Rajagopal/myolegs. gait2354/gait2392 measure knee
#: flexion negative, so their knee angles and moments are negated. ``left_mirrored``: datasets
#: that report the left hip's adduction and rotation in the right side's (lab) sense, where
#: Rajagopal/myolegs mirror the left axes so that adduction is positive on both sides.
#: ``gait120``: knee extension positive and the left hip mirrored (Boo_LevelWalking).
SIGN_PRESETS: dict[str, dict[str, float]] = {
    "gait2354": {
        "knee_angle_r": -1.0,
        "knee_angle_l": -1.0,
        "knee_angle_r_moment": -1.0,
        "knee_angle_l_moment": -1.0,
    },
    "gait120": {  # Gait120's modified Rajagopal model (Boo_LevelWalking): both of the above
        **{f"knee_angle_{side}{suffix}": -1.0 for side in "rl" for suffix in ("", "_moment")},
        **{f"hip_{dof}_l{suffix}": -1.0 for dof in ("adduction", "rotation") for suffix in ("", "_moment")},
    },
    "left_mirrored": {
        "hip_adduction_l": -1.0,
        "hip_rotation_l": -1.0,
        "hip_adduction_l_moment": -1.0,
        "hip_rotation_l_moment": -1.0,
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", help="exported policy folder (run/policy)")
    parser.add_argument(
        "--motion",
        help="Trajectory .npz to track, or a folder of them (default: the reference's own joint_angle)",
    )
    parser.add_argument(
        "--reference",
        nargs="+",
        metavar="REF",
        help="reference NPZ (Boo_LevelWalking layout), a dataset root of subject folders or one "
        "subject folder (every .npz below it, found recursively), a quoted glob ('ROOT/S0*/*.npz'), "
        "or several of these; a reference's <stem>_muscle_activation.sto beside it is compared too",
    )
    parser.add_argument("--activations", help="static-optimisation activations .sto (one trial)")
    parser.add_argument("--emg", help="EMG .csv or .sto")
    parser.add_argument(
        "--emg-map",
        help="YAML channel -> muscle map (folder mode: for each reference's <stem>_emg.sto/.csv beside it)",
    )
    parser.add_argument(
        "--emg-processed",
        action="store_true",
        help="the EMG is already an envelope: skip band-pass/rectify/low-pass",
    )
    parser.add_argument("--clip", type=int, default=0, help="clip of the motion to evaluate")
    parser.add_argument("--max-steps", type=int, help="stop after this many control steps")
    parser.add_argument(
        "--all-clips",
        action="store_true",
        help="tracking metrics (success rate, site error, MPJPE) over one episode per clip; "
        "torque/activation comparisons still use --clip",
    )
    parser.add_argument(
        "--time-offset-s", type=float, default=0.0, help="reference time = simulation clip time + this offset"
    )
    parser.add_argument(
        "--max-lag-s",
        type=float,
        default=0.3,
        help="window for the best-lag search, s (a best lag at its bound is flagged in the report)",
    )
    parser.add_argument(
        "--sim-cycles",
        choices=("own", "reference"),
        default="own",
        help="cut the policy's gait cycles at its own heel strikes (default, as published figures are) "
        "or at the reference's (the same strides, time-locked: the rollout runs on the reference's clock)",
    )
    parser.add_argument(
        "--heel-strikes",
        help="reference heel-strike times (s), comma separated "
        "(default: per foot from the reference's GRF, any layout; without GRF the policy's contacts)",
    )
    parser.add_argument(
        "--ref-sign",
        action="append",
        default=[],
        metavar="COLUMN=SIGN",
        help="multiply a reference column by -1 to match the model's convention; repeatable; the presets "
        "'gait2354' (knee angles and moments of gait2354/gait2392 exports), 'left_mirrored' (left hip "
        "adduction/rotation) and 'gait120' (both: Boo_LevelWalking); without any, tracking a reference's "
        "own kinematics detects the knee's flexion sign and a mirrored left hip from the data, each "
        "flip stated in the report",
    )
    parser.add_argument(
        "--treadmill",
        action="store_true",
        help="tracking a reference's own kinematics: the trial is on a treadmill; add the belt's "
        "motion (estimated from the stance foot) so the model walks overground",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        help="folder mode: worker processes (default: one per available core, at most one per trial)",
    )
    parser.add_argument(
        "--sim-torque-mass",
        choices=("model", "subject"),
        default="model",
        help="divide the policy's joint torques by the model's mass (default: both sides per kg of "
        "their own body) or by the reference's subject_weight_kg",
    )
    parser.add_argument(
        "--column-plots",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="per trial, the overview pages and one PNG per compared column (default: on for one "
        "trial; off in folder mode, where drawing them takes most of a trial's time)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="folder mode: keep the trials an earlier run into the same --out finished, evaluate the rest",
    )
    parser.add_argument("--out", required=True, help="output folder")


def _signs(items: list[str]) -> dict[str, float]:
    """``COLUMN=+1|-1`` items (repeatable) and presets such as ``gait2354`` (:data:`SIGN_PRESETS`)."""
    out = {}
    for item in items:
        if item in SIGN_PRESETS:
            out.update(SIGN_PRESETS[item])
            continue
        name, _, value = item.partition("=")
        if value not in ("1", "+1", "-1") or not name:
            raise InputError(
                "--ref-sign", f"expected COLUMN=+1, COLUMN=-1 or one of {sorted(SIGN_PRESETS)}, got {item!r}"
            )
        out[name] = float(value)
    return out


def _strikes(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    try:
        return np.sort(np.array([float(v) for v in text.split(",") if v.strip()]))
    except ValueError as err:
        raise InputError("--heel-strikes", f"expected comma-separated seconds, got {text!r}") from err


def _options(args: argparse.Namespace):
    from musclerl.evaluate.trial import TrialOptions

    strikes = _strikes(args.heel_strikes)
    return TrialOptions(
        clip=args.clip,
        max_steps=args.max_steps,
        all_clips=args.all_clips,
        time_offset_s=args.time_offset_s,
        max_lag_s=args.max_lag_s,
        sim_cycles=args.sim_cycles,
        heel_strikes_s=None if strikes is None else tuple(float(v) for v in strikes),
        signs=_signs(args.ref_sign),
        treadmill=args.treadmill,
        column_plots=args.column_plots is not False,
        sim_torque_mass=args.sim_torque_mass,
    )


def run(args: argparse.Namespace) -> int:
    from musclerl.evaluate import report
    from musclerl.resources import resolve_path

    if args.motion:  # a bundled clip (assets/motions/...) from any working directory
        args.motion = str(resolve_path(args.motion))
    refs = args.reference or []
    one_reference = len(refs) == 1 and Path(refs[0]).is_file()
    folder_mode = bool((args.motion and Path(args.motion).is_dir()) or (refs and not one_reference))
    if bool(args.emg) != bool(args.emg_map) and not (folder_mode and args.emg_map):
        raise InputError("--emg/--emg-map", "give the EMG file and its channel map together")
    if not args.motion and not args.reference:
        raise InputError(
            "evaluate", "give --motion TRAJ.npz, --reference REF.npz, or both (files or folders)"
        )
    from musclerl.fileio import check_outputs

    inputs = [args.policy, args.motion, *refs, args.activations, args.emg, args.emg_map]
    check_outputs(folders={"--out": args.out}, inputs=inputs)
    options = _options(args)
    if folder_mode:
        from musclerl.evaluate.folder import run_folder

        return run_folder(args, dataclasses.replace(options, column_plots=bool(args.column_plots)))
    if args.resume:
        raise InputError(
            "--resume", "folder mode only (a dataset root, a folder, a glob or several references)"
        )
    from musclerl.evaluate.trial import TrialInputs, evaluate_trial
    from musclerl.rl.export import load_policy

    inputs = TrialInputs(
        motion=Path(args.motion) if args.motion else None,
        reference=Path(refs[0]) if refs else None,
        activations=Path(args.activations) if args.activations else None,
        emg=Path(args.emg) if args.emg else None,
        emg_map=Path(args.emg_map) if args.emg_map else None,
        emg_processed=args.emg_processed,
    )
    policy = load_policy(args.policy)
    result = evaluate_trial(policy, inputs, options, Path(args.out), progress=True)
    frames, early = result.tracking["frames"], result.tracking["early_terminations"] > 0
    print(f"wrote {args.out}/report.md: {frames} frames, early termination: {early}")
    for kind, s in report.summarise(result.columns).items():
        print(
            f"  {kind}: {s['columns_with_data']} columns, mean r {s['mean_r']:.3f}, "
            f"mean RMSE {s['mean_rmse']:.3g}"
        )
    return 0
