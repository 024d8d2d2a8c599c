"""A reference NPZ's own kinematics as a Trajectory to track, and the sign map that goes with it.

A reference trial (:mod:`musclerl.motion.reference`) stores ``joint_angle``: OpenSim coordinate
names, degrees, pelvis translations in metres in OpenSim's ground frame (Y up). Evaluating a
policy on that trial without a separate motion needs those coordinates as model ``qpos``:
:func:`musclerl.evaluate.coordinates.coordinates_to_qpos` maps the pelvis columns onto the free
root and every other column onto the joint of the same name, and sets coupled joints (the
myolegs knee's tibia/patella dofs) from their independent coordinate. The result is then set on
the ground so that a model of another size than the subject walks on its feet
(:func:`fit_to_model`): the pelvis translations scaled by the leg-length ratio, then the root
translation corrected frame by frame so the supporting foot stands on the floor (z = 0) without
sliding (:func:`musclerl.dynamics.foot_placement.plant_feet`; support from the reference's GRF,
:mod:`musclerl.evaluate.reference_feet`); mean root x, y at 0. Joint angles and the root's
orientation are unchanged.

Signs: one map (column -> +1/-1) serves the kinematics and the torque/angle comparison, so a
flipped knee angle also flips the knee moment. Without one from the user, the knee's flexion sign
and the left hip's mirrored adduction/rotation axes are detected from the data where it is
unambiguous (:func:`musclerl.evaluate.coordinates.detect_sign_map`), and each coordinate's
``_moment`` / ``_force`` column follows its angle.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from musclerl.dynamics.foot_placement import foot_track, plant_feet, stance_fit
from musclerl.dynamics.limb_clearance import clear_limbs
from musclerl.errors import InputError
from musclerl.evaluate.compare import TORQUE_SUFFIXES
from musclerl.evaluate.coordinates import (
    PELVIS_COLUMNS,
    coordinates_to_qpos,
    detect_sign_map,
    place_on_ground,
    treadmill_to_overground,
)
from musclerl.evaluate.reference_feet import leg_length_ratio, reference_support
from musclerl.geometry.free_root import free_root_qposadr
from musclerl.models.opensim_coordinates import OPENSIM_TO_MUJOCO, qpos_to_pelvis
from musclerl.motion.reference import ReferenceData
from musclerl.motion.trajectory import Trajectory

MIN_FRAMES = 5
SIGN_NOTE = "sign flip: "  # the notes that state a flip (counted across a dataset's trials)


def with_torque_signs(signs: dict[str, float]) -> dict[str, float]:
    """``signs`` plus the same sign for each coordinate's torque columns (``<name>_moment``, ...)."""
    out = dict(signs)
    for name, sign in signs.items():
        if not name.endswith(TORQUE_SUFFIXES):
            for suffix in TORQUE_SUFFIXES:
                out.setdefault(name + suffix, sign)
    return out


def reference_signs(ref: ReferenceData, given: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """The sign map for a reference and one note per flip, each starting with
    :data:`SIGN_NOTE`: ``given`` when the user gave one (``--ref-sign`` overrides detection), else
    the knee and left-hip flips detected from ``joint_angle`` (:func:`detect_sign_map`), extended to
    their torque columns."""
    if given:
        flips = sorted(k for k, v in given.items() if v < 0)
        return dict(given), [f"{SIGN_NOTE}{', '.join(flips)} multiplied by -1 (--ref-sign)"] if flips else []
    signs, notes = detect_sign_map(list(ref.joint_angle_columns), ref.joint_angle)
    stated = [f"{SIGN_NOTE}{n}" if "multiplied by -1" in n else f"sign kept: {n}" for n in notes]
    return with_torque_signs(signs), stated


def reference_trajectory(
    model: mujoco.MjModel,
    model_name: str,
    ref: ReferenceData,
    signs: dict[str, float],
    source: str | Path = "reference",
    treadmill: bool = False,
    plant: bool = True,
) -> tuple[Trajectory, list[str]]:
    """The reference's ``joint_angle`` (T, A) as a one-clip Trajectory on ``model`` at the
    reference's own rate, and notes (ignored and missing coordinates, flipped columns).

    ``treadmill``: the trial is treadmill walking; the belt's motion (estimated from the stance
    foot, :func:`musclerl.evaluate.coordinates.treadmill_to_overground`) is added so the
    Trajectory walks overground, as ``musclerl reference --save-trajectory --treadmill`` does.
    ``plant``: fit the root translation to the model (:func:`fit_to_model`); without it the clip is
    only lowered onto the floor (:func:`musclerl.evaluate.coordinates.place_on_ground`), as before.
    Either way, frames whose legs go through each other on the model get the hips abducted just
    enough to clear (:func:`musclerl.dynamics.limb_clearance.clear_limbs`; noted).
    Clip time 0 is the reference's first sample (``time_sec[0]``). InputError when the
    reference lacks the six pelvis columns, has fewer than :data:`MIN_FRAMES` samples, or no
    column matches a model coordinate.
    """
    columns = list(ref.joint_angle_columns)
    missing = [c for c in PELVIS_COLUMNS if c not in columns]
    if missing:
        raise InputError(
            source, f"joint_angle lacks the pelvis column(s) {', '.join(missing)}: give --motion to track"
        )
    if ref.num_frames < MIN_FRAMES:
        raise InputError(source, f"need at least {MIN_FRAMES} samples of joint_angle, got {ref.num_frames}")
    conv = coordinates_to_qpos(model, columns, ref.joint_angle, in_degrees=True, signs=signs)
    if len(conv.used) == len(PELVIS_COLUMNS):
        raise InputError(source, f"no joint_angle column matches a joint of model '{model_name}'")
    qpos = conv.qpos
    belt_notes = []
    if treadmill:
        qpos, belt = treadmill_to_overground(model, qpos, ref.time_sec)
        belt_notes.append(f"treadmill belt velocity ({belt[0]:.3f}, {belt[1]:.3f}) m/s removed")
    duration_s = float(ref.time_sec[-1] - ref.time_sec[0])
    rate_hz = (ref.num_frames - 1) / duration_s
    qpos, cleared = clear_limbs(model, qpos, rate_hz)
    if cleared["frames"]:
        belt_notes.append(
            f"hips abducted by up to {cleared['abduction_max_deg']:.1f} deg in {cleared['frames']} frames so "
            f"that the model's legs clear each other (they overlapped by up to "
            f"{1000 * cleared['overlap_max_m']:.0f} mm)"
        )
    if plant:
        qpos, fit_notes = fit_to_model(model, ref, qpos, rate_hz)
        belt_notes += fit_notes
    else:
        qpos = place_on_ground(model, qpos)
    traj = Trajectory.from_qpos(
        model,
        qpos,
        rate_hz,
        model_name,
        clip_names=(ref.trial or Path(source).stem,),
    )
    notes = [f"tracked the reference's own joint_angle ({ref.num_frames} samples at {rate_hz:.4g} Hz)"]
    notes += belt_notes
    if conv.ignored:
        notes.append(f"joint_angle columns without a model joint ignored: {', '.join(conv.ignored)}")
    if conv.missing:
        notes.append(
            f"model coordinates absent from joint_angle (held at default): {', '.join(conv.missing)}"
        )
    present = set(columns) | set(ref.joint_torque_columns)
    flipped = sorted(k for k, v in signs.items() if v < 0 and k in present)
    if flipped:
        notes.append(f"reference columns multiplied by -1: {', '.join(flipped)}")
    return traj, notes


def fit_to_model(
    model: mujoco.MjModel, ref: ReferenceData, qpos: np.ndarray, rate_hz: float
) -> tuple[np.ndarray, list[str]]:
    """``qpos`` (T, nq), the reference's coordinates on ``model`` (overground), with the root
    translation fitted to the model, and notes: the pelvis translations scaled by the leg-length
    ratio (:func:`musclerl.evaluate.reference_feet.leg_length_ratio`, about the world origin: the
    lab floor stays at z = 0 up to its measured height), the supporting feet planted
    (:func:`musclerl.dynamics.foot_placement.plant_feet`, support from the reference's GRF), mean
    root x, y at 0. Only the root's translation changes."""
    track = foot_track(model, qpos)
    support, stance, support_note = reference_support(ref, track, rate_hz)
    ratio, ratio_note = leg_length_ratio(ref, track, support)
    pelvis_m = qpos_to_pelvis(model, qpos)[:, 3:] @ OPENSIM_TO_MUJOCO.T  # world, Z up
    scale_m = (ratio - 1.0) * pelvis_m
    adr = int(free_root_qposadr(model))  # coordinates_to_qpos has set the free root
    q = np.array(qpos, dtype=float, copy=True)
    q[:, adr : adr + 3] += scale_m
    q, planted = plant_feet(model, q, support, rate_hz, track=track.shifted(scale_m))
    q[:, adr : adr + 2] -= q[:, adr : adr + 2].mean(axis=0)
    lowered_m = np.zeros_like(scale_m)  # the clip as place_on_ground alone puts it: for the note
    lowered_m[:, 2] = place_on_ground(model, qpos)[:, adr + 2] - qpos[:, adr + 2]
    before = stance_fit(track.shifted(lowered_m), stance, rate_hz, support=support)
    after = stance_fit(planted, stance, rate_hz, support=support)
    return q, [
        ratio_note,
        f"supporting feet planted on the floor ({support_note}); before: {before.as_text()}; "
        f"after: {after.as_text()}",
    ]


def policy_model(policy) -> tuple[mujoco.MjModel, str]:
    """The MuJoCo model a policy was trained on (its training config's ``model``) and its name."""
    from musclerl.models.registry import load_model

    name = policy.train_config.model
    return load_model(name), name
