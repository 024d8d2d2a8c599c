"""``musclerl reference``: inverse dynamics + static optimisation -> reference NPZ and .sto files.

Outputs (all written only when everything succeeded):

- ``OUT.npz`` in the reference schema (:mod:`musclerl.motion.reference`): ``joint_angle`` (pelvis
  columns in OpenSim's ground frame, then the model's independent coordinates, degrees / metres),
  ``joint_torque`` = ID moments / mass (N·m/kg, model sign convention, columns
  ``<coordinate>_moment`` or ``<coordinate>_force`` for slides), ``computed_grf`` = the applied
  external loads in MuJoCo's world frame / body weight (columns ``<body>_force_x|y|z``, e.g.
  ``calcn_r_force_z``, the body the ExternalLoads file names);
- ``OUT_muscle_activation.sto`` and ``OUT_muscle_force.sto`` (N) from static optimisation.

``--subject-model SUBJECT.osim`` (the OpenSim model the ``.mot`` was solved on): the model is
scaled to its segment lengths and the plates' loads act where they acted on its feet.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import check_outputs

#: Fewest frames of a motion: central-difference accelerations need 3, and the low-pass filter
#: and the accelerations' end frames make fewer meaningless.
MIN_FRAMES = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("motion", help="Trajectory .npz or coordinates .mot (degrees, OpenSim names)")
    parser.add_argument("--model", default="myolegs")
    parser.add_argument(
        "--grf",
        help="ground reaction forces .mot (with --loads), or a C3D trial whose force plates' loads go "
        "to the nearer foot (calcn_r / calcn_l; --loads to name other bodies for its "
        "ground_force_r_v ... columns)",
    )
    parser.add_argument(
        "--loads",
        help="OpenSim ExternalLoads .xml naming the bodies the GRFs act on (its <datafile> is used "
        "when --grf is not given)",
    )
    parser.add_argument(
        "--mass",
        type=float,
        help="subject mass in kg (default: from the plates when --grf has one complete stance of each "
        "foot a step apart, else the model's mass)",
    )
    parser.add_argument(
        "--subject-model",
        metavar="SUBJECT.osim",
        help="the OpenSim model the .mot was solved on (scaled to the subject): the model's thigh, "
        "shank and foot take its segment lengths, and the plates' loads act where they acted on its "
        "feet (docs/static_optimisation.md)",
    )
    parser.add_argument(
        "--lowpass-hz",
        type=float,
        default=6.0,
        help="low-pass cutoff for .mot coordinates before differentiation (0: off)",
    )
    parser.add_argument(
        "--sign",
        action="append",
        default=[],
        metavar="COLUMN=SIGN",
        help="per-column sign for .mot input, e.g. knee_angle_r=-1 (default: gait2354 "
        "knees with negative flexion are flipped automatically)",
    )
    parser.add_argument(
        "--reserve-nm",
        type=float,
        default=1.0,
        help="strength of the weak reserve actuators in static optimisation (N·m)",
    )
    parser.add_argument(
        "--locked",
        nargs="+",
        default=[],
        metavar="COORDINATE",
        help="coordinates locked as in OpenSim (Gait120 locks subtalar_angle_* and mtp_angle_*): held "
        "at the model's default in inverse dynamics and static optimisation, their moment carried by "
        "the joint (no torque column, no muscle asked to hold it); joint_angle keeps the raw values",
    )
    parser.add_argument(
        "--no-static-optimisation", action="store_true", help="inverse dynamics only (no .sto outputs)"
    )
    parser.add_argument(
        "--no-ground-estimate",
        action="store_true",
        help="without --grf/--loads: leave the ground's load in the root residual instead of estimating "
        "it on the supporting feet",
    )
    parser.add_argument(
        "--save-trajectory",
        metavar="TRAJ.npz",
        help="also write the motion as a Trajectory to track: recentred over the origin and "
        "lowered onto the model's ground (joint angles unchanged)",
    )
    parser.add_argument(
        "--treadmill",
        action="store_true",
        help="with --save-trajectory: the trial is treadmill walking; add the belt's motion "
        "(estimated from the stance foot) so the Trajectory walks overground",
    )
    parser.add_argument("--out", required=True, help="reference NPZ")


def _parse_signs(items: list[str]) -> dict[str, float] | None:
    if not items:
        return None
    signs = {}
    for item in items:
        name, _, value = item.partition("=")
        if value not in ("1", "+1", "-1"):
            raise InputError("--sign", f"expected COLUMN=+1 or COLUMN=-1, got {item!r}")
        signs[name] = float(value)
    return signs


def _load_motion(args: argparse.Namespace, model) -> tuple[np.ndarray, np.ndarray, list[str], dict]:
    """(qpos (T, nq), time_s (T,), notes, signs) from a Trajectory NPZ or a coordinates .mot."""
    from musclerl.dynamics.inverse_dynamics import lowpass
    from musclerl.evaluate.coordinates import check_angle_units, coordinates_to_qpos
    from musclerl.models.opensim_coordinates import unwrap_pelvis_rotations
    from musclerl.motion.storage import read_storage
    from musclerl.motion.trajectory import Trajectory

    path = Path(args.motion)
    notes: list[str] = []
    if path.suffix.lower() == ".npz":
        traj = Trajectory.load(path)
        traj.check_model(model, path)
        if traj.num_frames < MIN_FRAMES:
            n = traj.num_frames
            problem = f"inverse dynamics needs {MIN_FRAMES} frames or more (accelerations), got {n}"
            raise InputError(path, problem)
        return traj.qpos, np.arange(traj.num_frames) / traj.rate_hz, notes, {}
    if path.suffix.lower() not in (".mot", ".sto"):
        raise InputError(path, "motion must be a Trajectory .npz or an OpenSim coordinates .mot")
    table = read_storage(path)
    if table.num_rows < MIN_FRAMES or table.rate_hz is None:
        raise InputError(path, f"need at least {MIN_FRAMES} rows of coordinates, got {table.num_rows}")
    values = np.asarray(table.data, dtype=float)
    if not np.all(np.isfinite(values)):
        raise InputError(path, "coordinates contain NaN or inf")
    check_angle_units(model, list(table.columns), values, table.in_degrees, path)
    values = unwrap_pelvis_rotations(list(table.columns), values, table.in_degrees)
    if args.lowpass_hz > 0:
        values = lowpass(values, table.rate_hz, args.lowpass_hz)
        notes.append(
            f"coordinates low-pass filtered at {args.lowpass_hz:g} Hz (4th-order zero-phase Butterworth)"
        )
    conv = coordinates_to_qpos(model, list(table.columns), values, table.in_degrees, _parse_signs(args.sign))
    if len(conv.used) == 0:
        raise InputError(path, "no column matches a model coordinate")
    if conv.ignored:
        notes.append(f"columns without a model joint ignored: {', '.join(conv.ignored)}")
    if conv.missing:
        notes.append(f"model coordinates absent from the motion (held at 0): {', '.join(conv.missing)}")
    for name, s in conv.signs.items():
        if s < 0:
            notes.append(f"column {name} sign flipped to the model's convention")
    return conv.qpos, np.asarray(table.time_s, dtype=float), notes, conv.signs


def _save_trajectory(
    args: argparse.Namespace, model, qpos: np.ndarray, time_s: np.ndarray, notes: list[str]
) -> None:
    from musclerl.evaluate.coordinates import place_on_ground, treadmill_to_overground
    from musclerl.motion.trajectory import Trajectory

    if args.treadmill:
        qpos, belt = treadmill_to_overground(model, qpos, time_s)
        notes.append(f"trajectory: treadmill belt velocity ({belt[0]:.3f}, {belt[1]:.3f}) m/s removed")
    qpos = place_on_ground(model, qpos)
    rate_hz = float((len(time_s) - 1) / (time_s[-1] - time_s[0]))
    traj = Trajectory.from_qpos(
        model,
        qpos,
        rate_hz,
        args.model,
        clip_names=(Path(args.motion).stem,),
    )
    Path(args.save_trajectory).parent.mkdir(parents=True, exist_ok=True)
    traj.save(args.save_trajectory)
    notes.append(
        f"trajectory written to {args.save_trajectory} ({traj.num_frames} frames at {rate_hz:.4g} Hz)"
    )


def _subject_model(args: argparse.Namespace, generic):
    """(``generic`` scaled to the segment lengths of ``--subject-model`` and to ``--mass``, the
    subject model's XML root)."""
    import xml.etree.ElementTree as ET

    from musclerl.fileio import read_text
    from musclerl.models.osim_frames import read_body_frames
    from musclerl.models.registry import compile_spec, load_spec
    from musclerl.models.scaling import scale_spec, segment_factors

    if Path(args.motion).suffix.lower() not in (".mot", ".sto"):
        raise InputError("--subject-model", "needs the coordinates .mot solved on that model as motion")
    try:
        root = ET.fromstring(read_text(args.subject_model, "OpenSim model"))
    except ET.ParseError as err:
        raise InputError(args.subject_model, f"not valid XML ({err})") from err
    frames = read_body_frames(root, args.subject_model)
    if not frames:
        raise InputError(args.subject_model, "no joints: not an OpenSim model")
    spec = load_spec(args.model)
    scale_spec(spec, segment_factors(frames, generic), mass_kg=args.mass, source=args.subject_model)
    return compile_spec(spec, args.model), root


def _subject_poses(args: argparse.Namespace, root, bodies: list[str]) -> dict:
    """Poses of ``bodies`` of the subject model along the motion, low-passed like the motion."""
    from musclerl.dynamics.inverse_dynamics import lowpass
    from musclerl.models.opensim_coordinates import unwrap_pelvis_rotations
    from musclerl.models.osim_frames import body_poses_along
    from musclerl.motion.storage import read_storage

    table = read_storage(args.motion)
    values = unwrap_pelvis_rotations(list(table.columns), table.data, table.in_degrees)
    if args.lowpass_hz > 0:
        values = lowpass(values, table.rate_hz, args.lowpass_hz)
    return body_poses_along(root, list(table.columns), values, table.in_degrees, bodies, args.subject_model)


def _grf_loads(args: argparse.Namespace, c3d_grf: bool):
    """(ExternalForces, GRF table): from ``--loads`` and its ``.mot`` (``--grf`` or the XML's
    ``<datafile>``), or from a C3D's plates, each contact given to the nearer foot
    (:mod:`musclerl.motion.foot_loads`), on ``calcn_r`` / ``calcn_l`` unless ``--loads`` names
    the bodies of the columns ``ground_force_r_v`` ... ``ground_torque_l_``."""
    from musclerl.dynamics.inverse_dynamics import ExternalForce, read_external_loads
    from musclerl.motion.storage import read_storage

    if c3d_grf:
        from musclerl.motion.c3d import read_c3d
        from musclerl.motion.foot_loads import FEET, foot_loads_table

        grf = foot_loads_table(read_c3d(args.grf))
        forces = [
            ExternalForce(name, body, f"ground_force_{s}_v", f"ground_force_{s}_p", f"ground_torque_{s}_")
            for s, (name, body) in FEET.items()
        ]
        if args.loads:
            forces, _ = read_external_loads(args.loads)
        return forces, grf
    forces, datafile = read_external_loads(args.loads)
    if not args.grf:
        if not datafile or datafile == "Unassigned":
            raise InputError(args.loads, "names no <datafile>; give the GRF file with --grf")
        args.grf = str(Path(args.loads).parent / datafile)
    return forces, read_storage(args.grf)


def run(args: argparse.Namespace) -> int:
    import mujoco

    from musclerl.dynamics import inverse_dynamics as idyn
    from musclerl.dynamics.static_optimisation import static_optimisation
    from musclerl.models.couplings import hold_coordinates, independent_coordinates
    from musclerl.models.introspect import total_mass_kg
    from musclerl.models.opensim_coordinates import PELVIS_COLUMNS, qpos_to_coordinates, qpos_to_pelvis
    from musclerl.models.registry import load_model
    from musclerl.motion.reference import STANDARD_GRAVITY, ReferenceData, muscle_rows_valid, write_reference
    from musclerl.motion.storage import Table, write_storage

    out = Path(args.out)
    if out.suffix != ".npz":
        raise InputError(out, "--out must end in .npz")
    stem = out.with_suffix("")
    companions = (
        {}
        if args.no_static_optimisation
        else {
            "--out (activations)": f"{stem}_muscle_activation.sto",
            "--out (muscle forces)": f"{stem}_muscle_force.sto",
        }
    )
    check_outputs(
        {"--out": out, **companions, "--save-trajectory": args.save_trajectory},
        inputs=[args.motion, args.grf, args.loads, args.subject_model],
    )
    c3d_grf = bool(args.grf) and Path(args.grf).suffix.lower() == ".c3d"
    if args.grf and not args.loads and not c3d_grf:
        raise InputError(
            "--grf", "give both the GRF .mot and the ExternalLoads .xml (--loads) naming its bodies"
        )
    if args.mass is not None and not (np.isfinite(args.mass) and args.mass > 0):
        raise InputError("--mass", f"must be a positive number of kg, got {args.mass}")
    generic = load_model(args.model)
    model, subject_root = generic, None
    if args.subject_model:
        model, subject_root = _subject_model(args, generic)
    qpos, time_s, notes, _signs = _load_motion(args, model)
    if subject_root is not None:
        notes.append(f"segments scaled to {args.subject_model}")
    mass_kg = float(args.mass) if args.mass is not None else total_mass_kg(model)
    coords = independent_coordinates(model)
    unknown = [c for c in args.locked if c not in coords]
    if unknown:
        raise InputError(
            "--locked", f"model {args.model!r} has no independent coordinate {', '.join(map(repr, unknown))}"
        )
    raw_qpos = qpos
    if args.locked:
        qpos = hold_coordinates(model, qpos, args.locked)
        notes.append(
            f"locked (held at the model's default, moment carried by the joint): {', '.join(args.locked)}"
        )
    free = [c for c in coords if c not in args.locked]

    loads = None
    grf_valid = np.ones(len(time_s), dtype=bool)
    if args.loads or c3d_grf:
        forces, grf = _grf_loads(args, c3d_grf)
        for f in forces:
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, f.body) < 0:
                raise InputError(
                    args.loads or args.grf,
                    f"ExternalForce '{f.name}' acts on body '{f.body}', which model '{args.model}' lacks"
                    + ("; name the feet's bodies with --loads" if not args.loads else ""),
                )
        loads = idyn.loads_from_table(forces, list(grf.columns), grf.data, grf.time_s, time_s, args.grf)
        if subject_root is not None:
            loads = idyn.loads_on_model_bodies(
                loads, model, qpos, _subject_poses(args, subject_root, sorted(set(loads.body)))
            )
            notes.append(f"loads applied where they acted on the feet of {args.subject_model}")
        grf_valid = (time_s >= grf.time_s[0] - 1e-9) & (time_s <= grf.time_s[-1] + 1e-9)
        if not grf_valid.any():
            raise InputError(args.grf, "GRF time range does not overlap the motion")
        if not grf_valid.all():
            notes.append(f"{int((~grf_valid).sum())} frames outside the GRF time range marked invalid")
        if args.mass is None:  # a C3D carries no mass: the plates weigh the person
            from musclerl.motion.foot_loads import body_weight_from_stances_n

            weight_n = body_weight_from_stances_n(grf)
            if weight_n is not None:
                mass_kg = weight_n / STANDARD_GRAVITY
                notes.append(f"mass {mass_kg:.1f} kg from the plates (one stance per foot, a stride apart)")
    result = idyn.inverse_dynamics(model, qpos, time_s, free, loads)
    rms_res = np.sqrt(np.mean(result.residual**2, axis=0))
    notes.append(
        "root residuals RMS (force N world x,y,z; moment N·m body x,y,z): "
        + ", ".join(f"{v:.1f}" for v in rms_res)
    )
    estimated = None
    if loads is None and not args.no_ground_estimate:
        from musclerl.dynamics.ground_support import model_feet, residual_on_feet

        feet = model_feet(model)
        if feet and result.residual.shape[1] == 6:  # a free root whose residual the feet can take
            estimated = residual_on_feet(model, result, feet, at_contact=True)
            result = idyn.inverse_dynamics(
                model, qpos, time_s, free, estimated, qvel=result.qvel, qacc=result.qacc
            )
            notes.append(
                "no ground reaction forces given: the ground's force is estimated from the motion (the "
                "root residual force at the contact patch of the lower foot, feet "
                f"{', '.join(estimated.body)}, handed over across double support)"
            )
    if loads is None and estimated is None:
        notes.append(
            "no ground reaction forces given: moments assume no external load (the ground's push appears "
            "as root residual), so stance-phase moments are not physiological"
        )

    slide = int(mujoco.mjtJoint.mjJNT_SLIDE)
    torque_cols = tuple(
        f"{c}_force" if int(model.jnt_type[model.joint(c).id]) == slide else f"{c}_moment" for c in free
    )
    valid = np.isfinite(result.moments) & grf_valid[:, None]
    torque = np.where(valid, result.moments / mass_kg, np.nan)
    _, angles = qpos_to_coordinates(model, raw_qpos, coords)
    has_pelvis = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis") >= 0
    pelvis_cols = PELVIS_COLUMNS if has_pelvis else ()
    joint_angle = np.hstack([qpos_to_pelvis(model, raw_qpos), angles]) if has_pelvis else angles

    weight_n = mass_kg * STANDARD_GRAVITY
    if loads is not None:
        unique = len(set(loads.body)) == len(loads.body)
        grf_cols = tuple(
            f"{b if unique else n + '_' + b}_force_{a}"
            for n, b in zip(loads.names, loads.body, strict=True)
            for a in "xyz"
        )
        grf_arr = loads.force_n.reshape(len(time_s), -1) / weight_n
    else:
        grf_cols, grf_arr = (), np.zeros((len(time_s), 0))
    grf_mask = np.repeat(grf_valid[:, None], grf_arr.shape[1], axis=1)
    so = None
    if not args.no_static_optimisation:
        so = static_optimisation(
            model, qpos, result.qvel, result.moments, free, args.reserve_nm, progress=True
        )
        worst = max(so.reserve_summary().items(), key=lambda kv: kv[1]["max_abs_nm"])
        notes.append(
            f"static optimisation: {int(so.success.sum())}/{len(so.success)} frames converged; "
            f"reserve strength {args.reserve_nm:g} N·m; "
            f"largest reserve {worst[1]['max_abs_nm']:.2f} N·m "
            f"at {worst[0]}"
        )
    t0 = time_s - time_s[0]
    ref = ReferenceData(
        subject=Path(args.motion).stem,
        trial=Path(args.motion).stem,
        step_label="whole_trial",
        time_sec=t0,
        joint_angle=joint_angle,
        joint_angle_columns=(*pelvis_cols, *coords),
        joint_torque=torque,
        joint_torque_columns=torque_cols,
        joint_torque_column_valid=valid,
        subject_weight_kg=mass_kg,
        subject_body_weight_n=weight_n,
        computed_grf=np.where(grf_mask, grf_arr, np.nan),
        computed_grf_columns=grf_cols,
        computed_grf_valid=grf_valid,
        computed_grf_normalization="force columns divided_by_subject_body_weight_n",
        computed_grf_units="BW (MuJoCo world frame, z up)",
        qc_notes="; ".join(notes),
        source_files=(str(args.motion), "", str(args.grf or "")),
        source_time_sec=t0,
        original_kinematics_time_sec=time_s,
        id_source_time_sec=t0,
        original_id_source_time_sec=time_s,
    )
    ref.validate(out)
    if so is not None:  # companions first, the NPZ last: a failure leaves no NPZ claiming them
        leg_ok = muscle_rows_valid(ref, so.muscles)
        write_storage(
            f"{stem}_muscle_activation.sto",
            Table(
                so.muscles,
                np.where(leg_ok, so.activation, np.nan),
                t0,
                False,
                "static optimisation activations",
            ),
        )
        write_storage(
            f"{stem}_muscle_force.sto",
            Table(
                so.muscles,
                np.where(leg_ok, so.force_n, np.nan),
                t0,
                False,
                "static optimisation muscle forces (N)",
            ),
        )
    write_reference(out, ref)
    if args.save_trajectory:
        _save_trajectory(args, generic, raw_qpos, time_s, notes)
    print(f"wrote {out} ({len(time_s)} frames, {len(free)} coordinates, mass {mass_kg:.2f} kg)")
    for note in notes:
        print(f"  note: {note}")
    return 0
