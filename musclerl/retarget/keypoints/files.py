"""One keypoint motion file (AMASS .npz, DeepMimic .txt, any keypoint format of
:data:`musclerl.motion.readers.READERS`) retargeted onto a model, with its quality
report: what ``musclerl retarget smpl`` (:mod:`musclerl.cli.retarget_smpl`) and the bundled
motions (:mod:`.bundled`) run per file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from musclerl.motion.trim import Trim

#: The reader kinds (:mod:`musclerl.motion.readers`) ``retarget smpl`` reads: keypoints, AMASS .npz.
MOTION_KINDS = ("keypoints", "npz")
MIN_FRAMES = 3
#: Suffixes retargeted with the balance pass unless told otherwise (``balance=None``): motion
#: capture of another body. Measured on CMU's walks (docs/training_data.md, "CMU walks"): without
#: it, every walk fails the plausibility check on myolegs (centre of pressure off the feet in most
#: frames: myolegs' trunk is rigid on its pelvis).
BALANCE_BY_DEFAULT = (".bvh",)


@dataclasses.dataclass(frozen=True)
class SmplOptions:
    model: str = "myolegs"
    # solve on the model scaled to the source's skeleton (``--scale``) rather than on the model
    # the Trajectory names: a closer keypoint fit, but the clip is played on the unscaled model,
    # whose other feet and hips put CMU's walks 2-5 cm into the floor in 15-29 % of frames and the
    # shins through each other (docs/training_data.md, "Scaled solves played unscaled")
    scale: bool = False
    ground: bool = True
    y_up: bool = False
    balance: bool | None = False  # None: by the file's suffix (BALANCE_BY_DEFAULT)
    units: str = "auto"  # BVH files: metres per file unit, or a unit name (musclerl.motion.bvh)
    keep_rest: bool = False  # BVH files: keep leading rest-pose frames (musclerl.motion.source_checks)
    accept_skeleton: bool = False  # retarget a motion whose reader listed problems (a bent rest skeleton)
    trim: Trim = Trim()  # the frames to keep (musclerl.motion.trim)

    def balances(self, path: Path) -> bool:
        """Whether ``path`` gets the balance pass: ``balance``, or by suffix when it is None."""
        return self.balance if self.balance is not None else Path(path).suffix.lower() in BALANCE_BY_DEFAULT


def read_motion(
    path: Path, y_up: bool = False, units: str = "auto", keep_rest: bool = False, trim: Trim | None = None
):
    """A :class:`~musclerl.motion.keypoints.KeypointMotion` from any keypoint file of
    :data:`~musclerl.motion.readers.READERS` (DeepMimic .txt / .json, BVH: ``units`` and
    ``keep_rest`` as :func:`musclerl.motion.bvh.read_bvh` takes them) or an AMASS .npz, cut to
    ``trim`` (:mod:`musclerl.motion.trim`), with at least :data:`MIN_FRAMES` frames (foot contact
    is found from velocities)."""
    from musclerl.errors import InputError
    from musclerl.motion.readers import read_keypoints
    from musclerl.motion.trim import trim_keypoints

    motion = read_keypoints(path, y_up, units=units, keep_rest=keep_rest)
    motion = trim_keypoints(motion, trim or Trim(), path)
    if motion.num_frames < MIN_FRAMES:
        raise InputError(
            path,
            f"{motion.num_frames} frame(s); retargeting needs at least {MIN_FRAMES} "
            "(contact from velocities)",
        )
    return motion


def retarget_file(path: Path, options: SmplOptions, solvers: dict | None = None):
    """Retarget one file; returns (RetargetResult, report dict, plot series). ``solvers``: the
    compiled IK problems kept across motions (see
    :func:`~musclerl.retarget.keypoints.pipeline.retarget_keypoints`)."""
    import time

    from musclerl.errors import InputError
    from musclerl.retarget.keypoints.pipeline import PipelineParams, retarget_keypoints
    from musclerl.retarget.report import quality_report

    motion = read_motion(path, options.y_up, options.units, options.keep_rest, options.trim)
    if motion.problems and not options.accept_skeleton:
        raise InputError(path, f"{'; '.join(motion.problems)} (--accept-skeleton retargets it anyway)")
    start = time.perf_counter()
    params = PipelineParams(scale=options.scale, ground=options.ground)
    result = retarget_keypoints(motion, options.model, params, solvers)
    # solved on a model scaled to the source, or on the registry's own (--no-scale): either way
    # the clip is put on that model's floor and low-passed as a run will imitate it
    named = _named_model(options.model) if options.ground else None
    placement = None
    if named is not None:
        result, placement = _placed_on(result, named)
    balance = None
    if options.balances(path):
        result, balance = _balanced(result, named)
    seconds = time.perf_counter() - start
    names = result.trajectory.site_names[: result.keypoint_error_m.shape[1]]
    report, series = quality_report(
        result.prepared.model,
        result.trajectory.qpos,
        result.trajectory.rate_hz,
        target_errors_m=result.keypoint_error_m,
        target_names=names,
        converged=result.converged,
        solve_seconds=result.metrics["solve_s"],
        terrain=result.trajectory.terrain,
        loop=bool(result.trajectory.clip_loop[0]),
    )
    for key in (
        "penetration_frac",
        "penetration_max_m",
        "skating_mps",
        "skating_max_mps",
        "stance_frac",
        "terrain",
    ):
        if key in result.metrics:
            report[key] = result.metrics[key]
    if balance is not None:
        report["balance"] = balance
    if placement is not None:  # measured as the dataset loader and `musclerl info` measure it
        report["plausibility"] = _check(result.trajectory, named)
        report["plausibility_model"] = options.model
        report["named_model_placement"] = placement
    report["scale_factors"] = {k: round(v, 4) for k, v in result.prepared.scale_factors.items()}
    report["trial"] = str(path)
    report["source"] = {
        "first_frame": motion.first_frame,
        "frames": motion.num_frames,
        "rate_hz": motion.rate_hz,
        "notes": list(motion.notes),
        "problems": list(motion.problems),
    }
    report["model"] = options.model
    report["wall_s"] = seconds  # model preparation, every IK pass, compile and measurement
    for key in ("compile_s", "solve_s", "tendon_jumps_detected", "tendon_jumps_left", "orientation_segments"):
        if key in result.metrics:
            report[key] = result.metrics[key]
    return result, report, series


def _named_model(name: str):
    """The registry's (unscaled) model ``name``, which the Trajectory names and a run imitates it
    with; None for a model that is not registered (an MJCF path)."""
    from musclerl.models.registry import REGISTRY, load_model

    return load_model(name) if name in REGISTRY else None


def _check(traj, model) -> dict:
    """The plausibility check of ``traj`` on ``model`` as a dict (``{"skipped": reason}`` when the
    model has no free root or feet)."""
    from musclerl.dynamics.plausibility import trajectory_plausibility
    from musclerl.errors import InputError

    try:
        return trajectory_plausibility(traj, model).as_dict()
    except InputError as err:
        return {"skipped": str(err)}


def _placed_on(result, model):
    """``result`` with its clip, solved on the model scaled to the motion's skeleton (or on the
    unscaled model itself), put on the ground with the feet of ``model`` (the model the
    Trajectory names), and the report's
    ``named_model_placement``; the result unchanged and None when ``model`` has no free root or feet.

    The root, and every site with it, is moved vertically by the median height of that model's
    lower foot above the terrain (``shift_m``: its legs have other lengths; CMU's walks floated 2-4
    cm on the unscaled myolegs, so the dataset loader's check found no support under a loaded
    body). A one-clip motion on a level floor (a lab's:
    :func:`musclerl.retarget.ground.terrain.one_floor`) then goes the way of the bundled walk
    (:mod:`musclerl.retarget.keypoints.bundled`): onto z = 0 without a heightfield (``floor_m``, the
    floor's height before), its stance feet planted when it does not loop (:func:`_planted`,
    ``planted``), and low-passed at the kinematics' usual 6 Hz (``smoothed_hz``: the IK follows the
    source's frame-to-frame noise; CMU's 120 Hz walks came out with a median root acceleration of
    22 m/s^2)."""
    import dataclasses

    import numpy as np

    from musclerl.dynamics.plausibility import plausibility
    from musclerl.errors import InputError
    from musclerl.retarget.keypoints.finish import FLAT_SPAN_M, SMOOTH_CUTOFF_HZ, on_flat_floor, smooth_clip

    traj = result.trajectory
    try:
        check = plausibility(
            model, traj.qpos, traj.rate_hz, terrain=traj.terrain, clip_loop=traj.clip_loop[:1]
        )
    except InputError:
        return result, None
    shift_m = -float(np.median(check.series.clearance_m.min(axis=1)))
    qpos = traj.qpos.copy()
    qpos[:, 2] += shift_m  # the free root's height (the check needs the free root first)
    sites = None if traj.site_pos_m is None else traj.site_pos_m + [0.0, 0.0, shift_m]
    placed = dataclasses.replace(traj, qpos=qpos, site_pos_m=sites)
    entry = {"shift_m": shift_m}
    level = traj.terrain is not None and np.ptp(traj.terrain.height_m) <= FLAT_SPAN_M
    if level and traj.num_clips == 1 and len(qpos) >= 3:
        entry["floor_m"] = float(np.mean(traj.terrain.height_m))
        placed = on_flat_floor(placed)
        planted = None
        if not placed.clip_loop[0]:
            planted, entry["planted"] = _planted(model, placed.qpos, placed.rate_hz)
        placed = smooth_clip(placed, model, qpos=planted)
        entry["smoothed_hz"] = SMOOTH_CUTOFF_HZ
    return dataclasses.replace(result, trajectory=placed), entry


def _planted(model, qpos, rate_hz: float):
    """``qpos`` (T, nq) on a level floor at z = 0 with the supporting feet planted frame by frame
    (:func:`musclerl.dynamics.foot_placement.plant_feet`, support from the motion), and the
    report's ``planted`` entry (the stance fit before and after). The joint angles were solved for
    the scaled skeleton: on the named model's shorter or longer legs the pelvis, travelling as the
    subject's did, lets the stance foot slide and float; only the root translation is changed."""
    from musclerl.dynamics.foot_placement import foot_track, kinematic_support, plant_feet, stance_fit

    track = foot_track(model, qpos)
    support = kinematic_support(track, rate_hz)
    planted, after = plant_feet(model, qpos, support, rate_hz, track=track)
    stance = support > 0.0
    return planted, {
        "before": stance_fit(track, stance, rate_hz, support=support).as_text(),
        "after": stance_fit(after, stance, rate_hz, support=support).as_text(),
    }


def _balanced(result, model=None):
    """``result`` with its trajectory through
    :func:`musclerl.retarget.balance.balance_for_report` on ``model`` (default: the model it was
    solved on), and the report's ``balance`` entry. (Not low-passed again, as the bundled walk is:
    on CMU's walks that let the stance feet slide past the check's limit in 5 of 8.)"""
    import dataclasses

    from musclerl.retarget.balance import balance_for_report

    traj, entry = balance_for_report(result.trajectory, result.prepared.model if model is None else model)
    return dataclasses.replace(result, trajectory=traj), entry
