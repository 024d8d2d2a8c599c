"""Markers -> model: scale from a static trial, place the markers, then IK over a trial.

Steps (as OpenSim's Scale tool and IK tool, on an MJCF model):

1. :func:`musclerl.retarget.markers.calibration.calibrate` — the marker set registered to the
   model as OpenSim's Scale tool does (offsets mapped from the marker set's own model frames,
   segments scaled, the static pose fitted with the hip, knee and ankle centres seated, every
   non-fixed marker placed where the static trial saw it; see that module). With
   ``place_from_trial`` (off by default) the markers of the named bodies are then re-placed from
   the trial itself (:func:`place_from_trial`).
2. :func:`solve_trial` — weighted least squares over the trial (OpenSim's IK objective, the IK
   setup's marker weights and coordinate tasks) as one batched JAX solve of the whole clip
   (:func:`musclerl.retarget.ik.solver.solve_clip`): joint limits held, joint equalities exact,
   smoothness, and tendon continuity (muscle-path jumps detected and re-solved). With
   ``robust`` a second pass down-weights markers the model cannot follow over the clip (e.g.
   trunk markers on a model whose trunk is rigid): a marker whose clip RMS exceeds twice the
   median gets its weight scaled by ``(2 median / rms)^2``. The trunk's markers on a model that
   welds the trunk to the pelvis (:func:`musclerl.retarget.markers.registration.trunk_markers`)
   enter with their weight times :data:`RIGID_SEGMENT_WEIGHT`, unless an IK setup gives the
   marker weights (those are the user's, as in OpenSim). The marker weights travel with the
   targets, so both passes — and every later trial of the same subject and marker set — reuse
   one :class:`~musclerl.retarget.ik.solver.IKProblem` (cached on the :class:`CalibratedModel`);
   the JIT compile happens once per process, and not at all when JAX's persistent compilation
   cache (set up by the command, :func:`musclerl.jax_setup.configure_compilation_cache`)
   already holds it. Only the static-trial placement (one averaged pose, fitted in two stages
   with the root or the limbs locked) runs on MuJoCo C (``PoseFit``): a single pose costs
   milliseconds there, against seconds of compile for a JAX problem used once.
3. :func:`retarget_markers` — the above for one ``.trc``, then the clip on its floor (treadmill
   belt undone, stance detected, floor at z = 0; the root translation only:
   :mod:`musclerl.retarget.markers.ground`), returning the Trajectory (with contact flags and
   the floor as its terrain), the quality report (:mod:`musclerl.retarget.report`) and the
   coordinate table in OpenSim's coordinates (:func:`coordinate_table`, the ``--mot``).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import mujoco
import numpy as np

from musclerl.dynamics.plausibility import trajectory_plausibility
from musclerl.errors import InputError
from musclerl.geometry.free_root import free_root
from musclerl.ground.surface import site_positions_m
from musclerl.models.markers import MarkerSet, read_marker_set
from musclerl.models.opensim_coordinates import opensim_coordinates
from musclerl.models.opensim_setup import IKSetup, ScaleSetup, read_ik_setup, read_scale_setup
from musclerl.models.registry import load_model
from musclerl.motion.readers import read_motion_file
from musclerl.motion.storage import Table
from musclerl.motion.trajectory import Trajectory
from musclerl.motion.trc import MarkerData
from musclerl.retarget.ik.clip import start_pose
from musclerl.retarget.markers.calibration import (
    CalibratedModel,
    build_subject,
    calibrate,
    coordinate_targets,
    marker_weights,
    time_window,
)
from musclerl.retarget.markers.clusters import cluster_label_checks, cluster_warning
from musclerl.retarget.markers.fit import (
    trial_marker_locations,
)
from musclerl.retarget.markers.ground import GroundOptions, ground_trial
from musclerl.retarget.report import quality_report

ROBUST_MEDIAN_FACTOR = 2.0
#: Trial-IK weight factor of the trunk's markers on a model that welds the trunk to the pelvis
#: (:func:`musclerl.retarget.markers.registration.trunk_markers`; myolegs, against every subject's
#: lumbar spine): they then only settle what the pelvis markers leave open, instead of turning the
#: pelvis with a trunk sway or lean. Chosen on four OpenCap trials against 0, 0.3 and 1 (1 and 0.3
#: let the trunk turn the pelvis; 0 and 0.1 within 1 deg of each other): docs/retarget_accuracy.md.
RIGID_SEGMENT_WEIGHT = 0.1


@dataclasses.dataclass(frozen=True)
class MarkerOptions:
    """Inputs of one marker retargeting run (paths as given on the command line)."""

    model: str = "myolegs"
    markers: str = ""
    static: str | None = None
    setup: str | None = None
    scale_setup: str | None = None
    start_s: float | None = None
    end_s: float | None = None
    robust: bool = True
    # Bodies whose markers are re-placed from the trial itself (off by default; see place_from_trial).
    place_from_trial: tuple[str, ...] = ()
    # Treadmill: None detects it, True forces one (belt_speed_mps when known), False overground.
    treadmill: bool | None = None
    belt_speed_mps: float | None = None
    # Then the centre of mass moved, feet held, until the centre of pressure stays on the feet
    # (:func:`musclerl.retarget.balance.balance_for_report`, shared with ``retarget smpl``).
    balance: bool = False


@dataclasses.dataclass(frozen=True)
class TrialSolution:
    """IK of one trial: ``qpos`` (T, nq), ``converged`` (T,), ``errors_m`` (T, M) per marker."""

    qpos: np.ndarray
    converged: np.ndarray
    errors_m: np.ndarray
    names: tuple[str, ...]
    weights: np.ndarray
    seconds: float  # solving, without compiling
    compile_s: float = 0.0
    tendon_jumps_detected: int = 0  # muscle-path jumps found (and re-solved) over the passes
    tendon_jumps_left: int = 0  # frames still jumping after the repair


def trial_placed_markers(calibrated: CalibratedModel, bodies: tuple[str, ...], names) -> list[str]:
    """The markers of ``names`` riding on ``bodies``; InputError for an unknown body or none found."""
    model = calibrated.model
    unknown = sorted(b for b in bodies if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) < 0)
    if unknown:
        raise InputError("--place-from-trial", f"model {calibrated.model_name!r} has no body {unknown}")
    sites = {model.site(i).name for i in range(model.nsite)}
    on = [
        n for n in names if n in sites and model.body(int(model.site_bodyid[model.site(n).id])).name in bodies
    ]
    if not on:
        raise InputError("--place-from-trial", f"no marker of the trial rides on {sorted(bodies)}")
    return on


def place_from_trial(
    calibrated: CalibratedModel, solution: TrialSolution, markers: MarkerData, bodies: tuple[str, ...]
) -> CalibratedModel:
    """``calibrated`` with the markers on ``bodies`` re-placed from a first IK ``solution`` of the
    trial ``markers`` (their mean body-frame positions, :func:`trial_marker_locations`).

    Off by default (``--place-from-trial``): it fits marker offsets to the trial being measured,
    so those markers' errors no longer test the calibration. Its use is a segment whose posture in
    the trial differs from the static trial's and that the model cannot bend: myolegs' trunk is
    rigid on the pelvis, and gait2354's subject leans further forward walking than standing,
    so its trunk markers are far off until ``("torso",)`` re-places them.
    """
    on = trial_placed_markers(calibrated, bodies, solution.names)
    return placed_from_trial(calibrated, solution.qpos, markers, on)


def placed_from_trial(
    calibrated: CalibratedModel, qpos: np.ndarray, markers: MarkerData, names: list[str]
) -> CalibratedModel:
    """``calibrated`` with markers ``names`` placed at their mean body-frame positions in the trial
    ``markers`` posed by ``qpos`` (T, nq) (:func:`trial_marker_locations`), the model rebuilt."""
    targets = markers.positions_m[:, [markers.names.index(n) for n in names]]
    locations = trial_marker_locations(calibrated.model, qpos, names, targets)
    placed = calibrated.marker_set.with_locations(locations)
    spec, compiled, missing = build_subject(
        calibrated.model_name, placed, calibrated.scale_factors, calibrated.mass_kg, scale_markers=False
    )
    return dataclasses.replace(
        calibrated, model=compiled, spec=spec, marker_set=placed, markers_scaled=False, problems={}
    )


def unplaced_placeholders(calibrated: CalibratedModel, names: tuple[str, ...]) -> list[str]:
    """Markers of the trial ``names`` that sit at a generic point shared with another marker
    (placeholders: the point says nothing of where the marker is) and that the static trial
    lacked, so nothing placed them: posing the trial with them would pull the body to that point."""
    return [
        n
        for n, entry in calibrated.registration.items()
        if entry.get("placeholder") and not entry.get("in_static", True) and n in names
    ]


def without_markers(markers: MarkerData, names: list[str]) -> MarkerData:
    """``markers`` with the columns ``names`` left out."""
    keep = [i for i, n in enumerate(markers.names) if n not in names]
    return dataclasses.replace(
        markers, names=tuple(markers.names[i] for i in keep), positions_m=markers.positions_m[:, keep]
    )


def marker_targets(targets: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Targets of :func:`marker_clip_ik`: marker positions (T, M, 3) world metres (NaN =
    missing) with their weights (M,) as a fourth column, (T, M, 4)."""
    column = np.broadcast_to(weights[None, :, None], (*targets.shape[:2], 1))
    return {"markers": np.concatenate([targets, column], axis=-1)}


def solve_trial(
    calibrated: CalibratedModel,
    markers: MarkerData,
    setup: IKSetup | None = None,
    robust: bool = True,
) -> TrialSolution:
    """IK of ``markers`` on the calibrated model (see the module docstring)."""
    model = calibrated.model
    sites = {model.site(i).name for i in range(model.nsite)}
    names = [n for n in calibrated.marker_set.names if n in markers.names and n in sites]
    if len(names) < 3:
        raise InputError(markers.source, f"only {len(names)} markers shared with the marker set and model")
    targets = markers.positions_m[:, [markers.names.index(n) for n in names]]
    if np.all(np.isnan(targets)):
        raise InputError(markers.source, "every marker shared with the marker set is missing in every frame")
    weights = marker_weights(names, setup)
    if setup is None or not setup.marker_weights:  # a setup's weights are the user's, as in OpenSim
        weights = weights * np.where(np.isin(names, calibrated.rigid), RIGID_SEGMENT_WEIGHT, 1.0)
    coordinates = coordinate_targets(setup)
    ik = calibrated.clip_ik(names, coordinates)
    ik.reset_stats()
    site_ids = np.array([model.site(n).id for n in names])
    start = time.perf_counter()
    q0 = start_pose(model, names, targets)
    result = ik.solve(marker_targets(targets, weights), q0)
    errors = np.linalg.norm(site_positions_m(model, result.q, site_ids) - targets, axis=-1)
    if robust:
        with np.errstate(invalid="ignore"):
            rms = np.sqrt(np.nanmean(errors**2, axis=0))
        used = (weights > 0) & np.isfinite(rms)
        median = float(np.median(rms[used])) if used.any() else 0.0
        bad = used & (rms > ROBUST_MEDIAN_FACTOR * median)
        if bad.any():
            factor = np.ones(len(names))
            factor[bad] = (ROBUST_MEDIAN_FACTOR * median / rms[bad]) ** 2
            weights = weights * factor
            result = ik.solve(marker_targets(targets, weights), q0)
            errors = np.linalg.norm(site_positions_m(model, result.q, site_ids) - targets, axis=-1)
    seconds = time.perf_counter() - start - ik.stats["compile_s"]
    return TrialSolution(
        result.q,
        result.converged,
        errors,
        tuple(names),
        weights,
        seconds,
        ik.stats["compile_s"],
        ik.stats["tendon_jumps_detected"],
        ik.stats["tendon_jumps_left"],
    )


def coordinate_table(model: mujoco.MjModel, qpos: np.ndarray, time_s: np.ndarray, name: str) -> Table:
    """The ``--mot`` table. A model with a free root and a ``pelvis`` body (the OpenSim-derived
    ones): OpenSim's coordinates (:func:`musclerl.models.opensim_coordinates.opensim_coordinates`:
    the pelvis in OpenSim's Y-up ground, joints by their OpenSim names), so the file loads onto the
    marker set's OpenSim model. Otherwise hinge joints in degrees, slides in metres, free/ball roots
    as ``<joint>_tx/_ty/_tz`` (m) and ``<joint>_rx/_ry/_rz`` (deg, extrinsic x-y-z Euler angles)."""
    from scipy.spatial.transform import Rotation

    if free_root(model) is not None and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis") >= 0:
        columns, values = opensim_coordinates(model, qpos)
        return Table(tuple(columns), values, np.asarray(time_s, dtype=float), True, name)

    columns, values = [], []
    for j in range(model.njnt):
        adr, kind, joint = int(model.jnt_qposadr[j]), model.jnt_type[j], model.joint(j).name
        if kind == mujoco.mjtJoint.mjJNT_HINGE:
            columns.append(joint)
            values.append(np.rad2deg(qpos[:, adr]))
        elif kind == mujoco.mjtJoint.mjJNT_SLIDE:
            columns.append(joint)
            values.append(qpos[:, adr])
        else:
            if kind == mujoco.mjtJoint.mjJNT_FREE:
                columns += [f"{joint}_tx", f"{joint}_ty", f"{joint}_tz"]
                values += [qpos[:, adr + k] for k in range(3)]
                adr += 3
            quat_wxyz = qpos[:, adr : adr + 4]
            euler = Rotation.from_quat(quat_wxyz[:, [1, 2, 3, 0]]).as_euler("xyz", degrees=True)
            columns += [f"{joint}_rx", f"{joint}_ry", f"{joint}_rz"]
            values += [euler[:, k] for k in range(3)]
    return Table(tuple(columns), np.stack(values, axis=1), np.asarray(time_s, dtype=float), True, name)


@dataclasses.dataclass(frozen=True)
class MarkerRetarget:
    trajectory: Trajectory
    report: dict
    series: dict
    table: Table
    calibrated: CalibratedModel
    solution: TrialSolution


def load_inputs(
    options: MarkerOptions,
) -> tuple[MarkerSet, MarkerData | None, IKSetup | None, ScaleSetup | None]:
    """Read the marker set, static trial and setup files named in ``options``."""
    marker_set = read_marker_set(options.markers)
    static = read_motion_file(options.static, ("markers",), "static trial") if options.static else None
    ik_setup = read_ik_setup(options.setup) if options.setup else None
    scale_setup = read_scale_setup(options.scale_setup) if options.scale_setup else None
    return marker_set, static, ik_setup, scale_setup


def retarget_markers(
    trc: str | Path, options: MarkerOptions, calibrated: CalibratedModel | None = None
) -> MarkerRetarget:
    """Retarget one ``.trc`` trial; pass ``calibrated`` to reuse a subject model across trials."""
    start_time = time.perf_counter()
    marker_set, static, ik_setup, scale_setup = load_inputs(options)
    if calibrated is None:
        calibrated = calibrate(options.model, marker_set, static, scale_setup, ik_setup)
    markers = read_motion_file(trc, ("markers",), "marker trial")
    start = (
        options.start_s
        if options.start_s is not None
        else (ik_setup.time_range_s[0] if ik_setup and ik_setup.time_range_s else None)
    )
    end = (
        options.end_s
        if options.end_s is not None
        else (ik_setup.time_range_s[1] if ik_setup and ik_setup.time_range_s else None)
    )
    markers = time_window(markers, start, end)
    if options.place_from_trial:  # bad names fail before any solve
        trial_placed_markers(calibrated, options.place_from_trial, markers.names)
    unplaced = unplaced_placeholders(calibrated, markers.names)
    if unplaced:  # pose the trial without them, place them where it puts them, then solve with them
        first = solve_trial(calibrated, without_markers(markers, unplaced), ik_setup, robust=options.robust)
        calibrated = placed_from_trial(calibrated, first.qpos, markers, unplaced)
    solution = solve_trial(calibrated, markers, ik_setup, robust=options.robust)
    if options.place_from_trial:
        calibrated = place_from_trial(calibrated, solution, markers, options.place_from_trial)
        solution = solve_trial(calibrated, markers, ik_setup, robust=options.robust)
    model = calibrated.model
    rate = float(markers.rate_hz)
    grounded = ground_trial(
        model, options.model, solution.qpos, rate, GroundOptions(options.treadmill, options.belt_speed_mps)
    )
    on_floor = not isinstance(grounded, str)
    fitted = grounded.qpos if on_floor else solution.qpos  # only the root translation differs
    # The Trajectory names the registry's model, which a run imitates it with: it goes on the floor
    # with that model's feet (the scaled subject's floated 1-2 cm on it), and its plausibility is
    # measured there; the fit's numbers (markers, limits, floor, skating) are the subject's.
    output_model = load_model(options.model)
    placed = (
        ground_trial(output_model, options.model, fitted, rate, GroundOptions(treadmill=False))
        if on_floor
        else "no floor"
    )
    floor = placed if not isinstance(placed, str) else (grounded if on_floor else None)
    qpos = floor.qpos if floor is not None else fitted
    markers_m = site_positions_m(model, qpos, np.array([model.site(n).id for n in solution.names]))
    trajectory = Trajectory.from_qpos(
        model,
        qpos,
        rate,
        options.model,
        site_names=solution.names + (floor.sole_names if floor else ()),
        site_pos_m=np.concatenate([markers_m, floor.sole_m], axis=1) if floor else markers_m,
        contact_names=floor.sole_names if floor else (),
        contact=floor.flags if floor else None,
        terrain=floor.terrain if floor else None,
        clip_names=(Path(trc).stem,),
    )
    balance = None
    if options.balance:
        from musclerl.retarget.balance import balance_for_report

        trajectory, balance = balance_for_report(trajectory, output_model)
        qpos = trajectory.qpos
    report, series = quality_report(
        model,
        fitted,
        rate,
        target_errors_m=solution.errors_m,
        target_names=solution.names,
        converged=solution.converged,
        solve_seconds=solution.seconds,
        terrain=grounded.terrain if on_floor else None,
        target_bodies={m.name: m.body for m in calibrated.marker_set.markers},
    )
    report.update(grounded.report() if on_floor else {"floor": {"skipped": grounded}})
    report["cluster_labels"] = cluster_label_checks(calibrated.marker_set, markers)
    report["label_warning"] = cluster_warning(report["cluster_labels"])
    if not isinstance(placed, str):
        placed_floor = placed.report()["floor"]
        report["output_floor"] = {k: placed_floor[k] for k in ("shift_m", "lift_max_m", "lift_frac")}
    try:
        report["plausibility"] = trajectory_plausibility(trajectory, output_model).as_dict()
    except InputError as err:  # no free root or no feet: nothing to stand on
        report["plausibility"] = {"skipped": str(err)}
    report["plausibility_model"] = options.model
    if balance is not None:
        report["balance"] = balance
    report["trial"] = str(trc)
    report["model"] = options.model
    joints = {model.joint(j).name for j in range(model.njnt)}
    tasks = [c.name for c in ik_setup.coordinate_targets] if ik_setup else []
    report["coordinate_tasks_without_joint"] = [name for name in tasks if name not in joints]
    report["trial_markers_unused"] = [name for name in markers.names if name not in solution.names]
    report["compile_s"] = solution.compile_s
    report["solve_s"] = solution.seconds
    report["tendon_jumps_detected"] = solution.tendon_jumps_detected
    report["tendon_jumps_left"] = solution.tendon_jumps_left
    report["static_rms_m"] = calibrated.static_rms_m
    report["calibration"] = calibrated.to_dict()
    report["markers_missing_body"] = calibrated.missing_body
    report["registration"] = calibrated.registration
    report["markers_placed_from_trial_on"] = list(options.place_from_trial)
    report["markers_placed_from_trial"] = unplaced  # placeholders the static trial lacked
    report["marker_weights"] = {n: float(w) for n, w in zip(solution.names, solution.weights, strict=True)}
    report["time_range_s"] = [float(markers.time_s[0]), float(markers.time_s[-1])]
    table = coordinate_table(model, qpos, markers.time_s, Path(trc).stem)
    report["wall_s"] = time.perf_counter() - start_time  # calibration, IK passes, compile, measurement
    return MarkerRetarget(trajectory, report, series, table, calibrated, solution)
