"""``musclerl info FILE``: a short, JSON-able summary of any supported motion file.

Every summary has ``kind``, ``frames`` (rows actually present), ``rate_hz``, ``duration_s`` (first
to last frame), ``columns`` (marker / column / joint / keypoint names) and ``units`` (as read);
kinds add a few extras (``markers``, ``in_degrees``, ``joints``, ...). A Trajectory's summary adds
``plausibility`` when the caller passes the check (``musclerl info`` passes
:func:`musclerl.cli.info.trajectory_check`: the dynamics it runs sit above the motion files).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import existing_file


def summarize_motion_file(
    path: str | os.PathLike, check_trajectory: Callable[[Any, Path], dict] | None = None
) -> dict:
    """Summarise a ``.trc``, ``.mot``, ``.sto``, ``.npz`` (AMASS, Trajectory, reference), BVH or DeepMimic
    clip; a Trajectory's summary gets ``plausibility = check_trajectory(trajectory, path)`` when given
    (inside the summary, so the check's warnings are listed with the others)."""
    path = existing_file(path, "motion file")
    suffix = path.suffix.lower()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if suffix == ".trc":
            info = _trc(path)
        elif suffix in (".mot", ".sto"):
            info = _storage(path)
        elif suffix == ".npz":
            info = _npz(path, check_trajectory)
        elif suffix in (".txt", ".json"):
            info = _deepmimic(path)
        elif suffix == ".bvh":
            info = _bvh(path)
        else:
            raise InputError(path, f"unsupported motion file type '{suffix}'")
    notes = [str(w.message).replace(f"{path}: ", "") for w in caught]
    if notes:
        info["warnings"] = notes
    return info


def _base(kind: str, frames: int, rate_hz: float | None, columns, units: str) -> dict:
    duration = (frames - 1) / rate_hz if rate_hz else 0.0
    return {
        "kind": kind,
        "frames": int(frames),
        "rate_hz": float(rate_hz or 0.0),
        "duration_s": float(duration),
        "columns": [str(c) for c in columns],
        "units": units,
    }


def _trc(path: Path) -> dict:
    from musclerl.motion.trc import read_trc

    data = read_trc(path)
    info = _base("trc", data.num_frames, data.rate_hz, data.names, data.units_in)
    info["duration_s"] = data.duration_s
    missing = data.missing_fraction()
    gaps = {n: round(float(f), 4) for n, f in zip(data.names, missing, strict=True) if f > 0}
    info.update(
        markers=len(data.names),
        frame="z_up (converted from the Y-up lab frame)",
        start_time_s=float(data.time_s[0]),
        markers_with_gaps=gaps,
    )
    return info


def _storage(path: Path) -> dict:
    from musclerl.motion.storage import read_storage

    table = read_storage(path)
    units = "degrees" if table.in_degrees else "radians"
    info = _base(path.suffix.lower().lstrip("."), table.num_rows, table.rate_hz, table.columns, units)
    if table.num_rows > 1:
        info["duration_s"] = float(table.time_s[-1] - table.time_s[0])
    info.update(
        in_degrees=table.in_degrees,
        name=table.name,
        start_time_s=float(table.time_s[0]) if table.num_rows else 0.0,
    )
    return info


def npz_kind(path: str | os.PathLike) -> str:
    """``"reference"``, ``"trajectory"`` or ``"amass"``, from the keys of an ``.npz`` alone (its
    arrays are not read); an unreadable or unrecognised file raises :class:`InputError`."""
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
    except Exception as err:
        raise InputError(path, f"not a readable .npz file ({type(err).__name__})") from err
    if {"joint_angle", "joint_torque"} <= keys:
        return "reference"
    if "qpos" in keys:
        return "trajectory"
    if keys & {"poses", "root_orient", "pose_body", "mocap_framerate", "mocap_frame_rate"}:
        return "amass"
    raise InputError(
        path,
        "unrecognised .npz: not a Trajectory (qpos), reference (joint_angle, "
        "joint_torque) or AMASS/SMPL (poses / root_orient) file",
    )


def _npz(path: Path, check_trajectory: Callable[[Any, Path], dict] | None) -> dict:
    kind = npz_kind(path)
    if kind == "reference":
        from musclerl.motion.reference import read_reference

        ref = read_reference(path)
        info = _base(
            "reference",
            ref.num_frames,
            ref.rate_hz,
            ref.joint_angle_columns,
            "degrees (pelvis translations m); torque " + ref.joint_torque_units,
        )
        info.update(
            subject=ref.subject,
            trial=ref.trial,
            step_label=ref.step_label,
            torque_columns=list(ref.joint_torque_columns),
            grf_columns=list(ref.computed_grf_columns),
            subject_weight_kg=ref.subject_weight_kg,
            torque_rows_valid=f"{int(ref.joint_torque_valid.sum())} of {ref.num_frames}",
            torque_columns_partly_valid=[
                f"{c} ({int(v.sum())}/{ref.num_frames})"
                for c, v in zip(ref.joint_torque_columns, ref.joint_torque_column_valid.T, strict=True)
                if not v.all()
            ],
            qc_notes=ref.qc_notes,
        )
        return info
    if kind == "trajectory":
        from musclerl.motion.trajectory import Trajectory

        traj = Trajectory.load(path)
        info = _base(
            "trajectory", traj.num_frames, traj.rate_hz, traj.joint_names, "qpos (m, rad; free root quat)"
        )
        info.update(
            model=traj.model_name,
            nq=int(traj.qpos.shape[1]),
            nv=int(traj.qvel.shape[1]),
            clips=list(traj.clip_names),
            sites=list(traj.site_names),
            terrain=traj.terrain is not None,
        )
        if check_trajectory is not None:
            info["plausibility"] = check_trajectory(traj, path)
        return info
    from musclerl.motion.smpl import SMPL_JOINT_NAMES, read_amass

    motion = read_amass(path)
    info = _base("amass", motion.num_frames, motion.rate_hz, SMPL_JOINT_NAMES, "m (Z up), axis-angle rad")
    info.update(
        model_type=motion.model_type,
        gender=motion.gender,
        joints=len(SMPL_JOINT_NAMES),
        num_betas=int(motion.betas.size),
        skeleton=motion.skeleton,
    )
    return info


def _deepmimic(path: Path) -> dict:
    from musclerl.motion.deepmimic import read_deepmimic

    motion = read_deepmimic(path)
    info = _base("deepmimic", motion.num_frames, motion.rate_hz, motion.names, "m (Z up)")
    info.update(loop=motion.loop, keypoints=len(motion.names))
    return info


def _bvh(path: Path) -> dict:
    from musclerl.motion.bvh import parse_bvh, read_bvh, unit_scale

    motion = read_bvh(path)
    joints, _, _ = parse_bvh(path)
    info = _base("bvh", motion.num_frames, motion.rate_hz, motion.names, "m (Z up)")
    info.update(joints=len(motion.names), metres_per_unit=unit_scale(path, joints))
    return info
