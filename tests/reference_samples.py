"""Generated reference NPZs (the schema of :mod:`musclerl.motion.reference`) from a bundled walk
(myolegs, or tiny for fast tests): its own coordinates as ``joint_angle`` and synthetic torques
with NaN masks, for evaluating policies on reference folders without data files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from musclerl.models.couplings import SAGITTAL_LEG_COORDINATES
from musclerl.models.opensim_coordinates import PELVIS_COLUMNS, qpos_to_coordinates, qpos_to_pelvis
from musclerl.models.registry import load_model
from musclerl.motion.reference import STANDARD_GRAVITY, ReferenceData, write_reference
from musclerl.motion.trajectory import Trajectory
from musclerl.resources import assets_dir

WALK = assets_dir() / "motions" / "walk_myolegs.npz"
WALKS = {"myolegs": WALK, "tiny": assets_dir() / "motions" / "walk_tiny.npz"}
TORQUE_COORDS = SAGITTAL_LEG_COORDINATES
SUBJECT01_MASS_KG = 72.6  # subject01_simbody.osim: the sum of its body masses


def subject01_reference_args(gait2354: Path, motion: Path | None = None) -> list[str]:
    """``musclerl reference`` arguments for the shared gait2354 walk (``motion`` in place of its IK
    when given) with its two plates' loads and the subject's mass; callers add ``--out`` and options."""
    return [
        "reference",
        str(motion or gait2354 / "subject01_walk1_ik.mot"),
        "--grf",
        str(gait2354 / "subject01_walk1_grf.mot"),
        "--loads",
        str(gait2354 / "subject01_walk1_grf.xml"),
        "--mass",
        str(SUBJECT01_MASS_KG),
    ]


def walk_angles(model_name: str = "myolegs") -> tuple[list[str], np.ndarray, float]:
    """(columns, joint_angle (T, A) degrees / m, rate_hz) of the bundled walk of ``model_name``."""
    model = load_model(model_name)
    traj = Trajectory.load(WALKS[model_name])
    names, coords = qpos_to_coordinates(model, traj.qpos)
    pelvis = qpos_to_pelvis(model, traj.qpos)
    return [*PELVIS_COLUMNS, *names], np.hstack([pelvis, coords]), traj.rate_hz


def walk_reference(
    subject: str,
    trial: str,
    start_s: float = 0.5,
    knee_negative: bool = False,
    invalid_column: str | None = None,
    gap: tuple[int, int] | None = None,
    mass_kg: float = 70.0,
    model_name: str = "myolegs",
) -> ReferenceData:
    """One reference trial: the walk's coordinates (knees negated in gait2354's convention when
    ``knee_negative``), sinusoidal ``<coord>_moment`` torques (N·m/kg, negated with the knee),
    ``invalid_column`` without any valid sample and the samples ``gap`` = (a, b) of every torque
    column invalid; GRF columns all zero and valid. Time starts at ``start_s``."""
    columns, angles, rate_hz = walk_angles(model_name)
    angles = angles.copy()
    n = len(angles)
    time_s = start_s + np.arange(n) / rate_hz
    phase = 2 * np.pi * (time_s - start_s) / (n / rate_hz)
    torque = np.stack([0.5 * np.sin(phase + k) for k in range(len(TORQUE_COORDS))], axis=1)
    if knee_negative:
        for k, name in enumerate(columns):
            if name.startswith("knee_angle"):
                angles[:, k] *= -1
        for k, name in enumerate(TORQUE_COORDS):
            if name.startswith("knee_angle"):
                torque[:, k] *= -1
    valid = np.ones_like(torque, dtype=bool)
    if gap is not None:
        valid[gap[0] : gap[1]] = False
    torque_cols = [f"{c}_moment" for c in TORQUE_COORDS]
    if invalid_column is not None:
        valid[:, torque_cols.index(invalid_column)] = False
    torque[~valid] = np.nan
    grf_cols = ["calcn_r_force_z", "calcn_l_force_z"]
    return ReferenceData(
        subject=subject,
        trial=trial,
        step_label="Step01_Step02",
        time_sec=time_s,
        joint_angle=angles,
        joint_angle_columns=tuple(columns),
        joint_torque=torque,
        joint_torque_columns=tuple(torque_cols),
        joint_torque_column_valid=valid,
        subject_weight_kg=mass_kg,
        subject_body_weight_n=mass_kg * STANDARD_GRAVITY,
        computed_grf=np.zeros((n, 2)),
        computed_grf_columns=tuple(grf_cols),
        computed_grf_valid=np.ones(n, dtype=bool),
    )


def write_reference_folder(
    folder: Path, subjects: int, trials_per_subject: int, model_name: str = "myolegs"
) -> list[Path]:
    """``subjects`` x ``trials_per_subject`` references in ``folder`` (``S<k>_T<j>.npz``) from the
    walk of ``model_name``: start times, masks and the knee convention vary by trial. Returns the
    paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in range(subjects):
        for j in range(trials_per_subject):
            ref = walk_reference(
                f"S{s:02d}",
                f"S{s:02d}_T{j}",
                start_s=0.1 * j,
                knee_negative=(s + j) % 2 == 1,
                invalid_column="ankle_angle_l_moment" if j == 0 else None,
                gap=(5, 12) if j == 1 else None,
                mass_kg=60.0 + 5 * s,
                model_name=model_name,
            )
            path = folder / f"S{s:02d}_T{j}.npz"
            write_reference(path, ref)
            paths.append(path)
    return paths
