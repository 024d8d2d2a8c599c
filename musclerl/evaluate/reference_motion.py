"""A reference NPZ's own kinematics as a Trajectory to track, and the sign map that goes with it.

A reference trial (:mod:`musclerl.motion.reference`) stores ``joint_angle``: OpenSim coordinate
names, degrees, pelvis translations in metres in OpenSim's ground frame (Y up). Evaluating a
policy on that trial without a separate motion needs those coordinates as model ``qpos``:
:func:`musclerl.evaluate.coordinates.coordinates_to_qpos` maps the pelvis columns onto the free
root and every other column onto the joint of the same name, and sets coupled joints (the
myolegs knee's tibia/patella dofs) from their independent coordinate. The result is then set on
the ground as ``musclerl reference --save-trajectory`` does (mean root x, y at 0; the lowest
geom touching the floor), so a model of another size than the subject still starts on its feet.

Signs: one map (column -> +1/-1) serves the kinematics and the torque/angle comparison, so a
flipped knee angle also flips the knee moment. Without one from the user, the knee's flexion sign
and the left hip's mirrored adduction/rotation axes are detected from the data where it is
unambiguous (:func:`musclerl.evaluate.coordinates.detect_sign_map`), and each coordinate's
``_moment`` / ``_force`` column follows its angle.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from musclerl.errors import InputError
from musclerl.evaluate.compare import TORQUE_SUFFIXES
from musclerl.evaluate.coordinates import (
    PELVIS_COLUMNS,
    coordinates_to_qpos,
    detect_sign_map,
    place_on_ground,
    treadmill_to_overground,
)
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
) -> tuple[Trajectory, list[str]]:
    """The reference's ``joint_angle`` (T, A) as a one-clip Trajectory on ``model`` at the
    reference's own rate, and notes (ignored and missing coordinates, flipped columns).

    ``treadmill``: the trial is treadmill walking; the belt's motion (estimated from the stance
    foot, :func:`musclerl.evaluate.coordinates.treadmill_to_overground`) is added so the
    Trajectory walks overground, as ``musclerl reference --save-trajectory --treadmill`` does.
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
    qpos = place_on_ground(model, qpos)
    duration_s = float(ref.time_sec[-1] - ref.time_sec[0])
    rate_hz = (ref.num_frames - 1) / duration_s
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


def policy_model(policy) -> tuple[mujoco.MjModel, str]:
    """The MuJoCo model a policy was trained on (its training config's ``model``) and its name."""
    from musclerl.models.registry import load_model

    name = policy.train_config.model
    return load_model(name), name
