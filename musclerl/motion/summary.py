"""``musclerl info FILE``: a short, JSON-able summary of any supported motion file.

Every summary has ``kind``, ``frames`` (rows actually present), ``rate_hz``, ``duration_s`` (first
to last frame), ``columns`` (marker / column / joint / keypoint names) and ``units`` (as read);
kinds add a few extras (``markers``, ``in_degrees``, ``joints``, ...); a keypoint motion its
``first_frame`` and ``notes`` (frames a reader dropped: a BVH file's rest pose) and ``problems``.
A keypoint motion or a Trajectory can be summarised trimmed (:mod:`musclerl.motion.trim`; other
kinds refuse a trim). A Trajectory's summary adds
``plausibility`` when the caller passes the check (``musclerl info`` passes
:func:`musclerl.cli.info.trajectory_check`: the dynamics it runs sit above the motion files).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from musclerl.errors import InputError
from musclerl.fileio import existing_file
from musclerl.motion.keypoints import KeypointMotion
from musclerl.motion.readers import Reader, reader_for
from musclerl.motion.reference import ReferenceData
from musclerl.motion.smpl import SMPL_JOINT_NAMES
from musclerl.motion.storage import Table
from musclerl.motion.trajectory import Trajectory
from musclerl.motion.trc import MarkerData
from musclerl.motion.trim import Trim, trim_keypoints, trim_trajectory


def summarize_motion_file(
    path: str | os.PathLike,
    check_trajectory: Callable[[Any, Path], dict] | None = None,
    trim: Trim | None = None,
    keep_rest: bool = False,
) -> dict:
    """Summarise any file :data:`~musclerl.motion.readers.READERS` reads (``.trc``, ``.mot``,
    ``.sto``, ``.npz`` (AMASS, Trajectory, reference), DeepMimic clips); a Trajectory's summary gets
    ``plausibility = check_trajectory(trajectory, path)`` when given (inside the summary, so the
    check's warnings are listed with the others)."""
    path = existing_file(path, "motion file")
    reader = reader_for(path)
    trim = trim or Trim()
    options = {"keep_rest": keep_rest} if "keep_rest" in reader.options else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = reader.read(path, **options)
        if isinstance(data, KeypointMotion):
            data = trim_keypoints(data, trim, path)
        elif isinstance(data, Trajectory):
            data = trim_trajectory(data, trim, path)
        elif trim.active:
            raise InputError(
                path, f"trimming ({trim.describe()}) applies to keypoint motions and Trajectories"
            )
        info = _SUMMARIES[reader.kind](path, reader, data, check_trajectory)
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


def _markers(path: Path, reader: Reader, data: MarkerData, check: Any) -> dict:
    info = _base(reader.name, data.num_frames, data.rate_hz, data.names, data.units_in)
    info["duration_s"] = data.duration_s
    missing = data.missing_fraction()
    gaps = {n: round(float(f), 4) for n, f in zip(data.names, missing, strict=True) if f > 0}
    info.update(
        markers=len(data.names),
        frame=f"z_up (from the lab frame: {data.header['LabFrame']})"
        if "LabFrame" in data.header
        else "z_up (converted from the Y-up lab frame)",
        start_time_s=float(data.time_s[0]),
        markers_with_gaps=gaps,
    )
    if reader.details is not None:
        info.update(reader.details(path))
    return info


def _table(path: Path, reader: Reader, table: Table, check: Any) -> dict:
    units = "degrees" if table.in_degrees else "radians"
    info = _base(reader.name, table.num_rows, table.rate_hz, table.columns, units)
    if table.num_rows > 1:
        info["duration_s"] = float(table.time_s[-1] - table.time_s[0])
    info.update(
        in_degrees=table.in_degrees,
        name=table.name,
        start_time_s=float(table.time_s[0]) if table.num_rows else 0.0,
    )
    return info


def _npz(path: Path, reader: Reader, data: Any, check_trajectory: Callable[[Any, Path], dict] | None) -> dict:
    if isinstance(data, ReferenceData):  # what read_npz made of the file's keys
        ref = data
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
    if isinstance(data, Trajectory):
        traj = data
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
    motion = data
    info = _base("amass", motion.num_frames, motion.rate_hz, SMPL_JOINT_NAMES, "m (Z up), axis-angle rad")
    info.update(
        model_type=motion.model_type,
        gender=motion.gender,
        joints=len(SMPL_JOINT_NAMES),
        num_betas=int(motion.betas.size),
        skeleton=motion.skeleton,
    )
    return info


def _keypoints(path: Path, reader: Reader, motion: KeypointMotion, check: Any) -> dict:
    info = _base(reader.name, motion.num_frames, motion.rate_hz, motion.names, "m (Z up)")
    info.update(
        loop=motion.loop,
        keypoints=len(motion.names),
        first_frame=motion.first_frame,
        notes=list(motion.notes),
        problems=list(motion.problems),
    )
    if reader.details is not None:
        info.update(reader.details(path))
    return info


#: reader kind -> summary(path, reader, what it read, check_trajectory).
_SUMMARIES: dict[str, Callable[[Path, Reader, Any, Any], dict]] = {
    "markers": _markers,
    "table": _table,
    "keypoints": _keypoints,
    "npz": _npz,
}
