"""Quick-look PNG of any supported motion file (``musclerl info FILE --plot OUT.png``).

* ``.trc``: side view (x-z, metres, Z up) of every marker's path, and marker heights over time.
* ``.mot`` / ``.sto``: every column over time (up to 24, grouped 8 per panel).
* AMASS ``.npz`` / DeepMimic / BVH: stick figures (side view) at 8 evenly spaced frames, and the feet's
  heights over time.
* reference ``.npz``: joint angles and torques over time. Trajectory ``.npz``: qpos over time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, existing_file
from musclerl.motion.keypoints import KeypointMotion
from musclerl.motion.readers import reader_for
from musclerl.motion.reference import ReferenceData
from musclerl.motion.smpl import SmplMotion
from musclerl.motion.storage import Table
from musclerl.motion.trc import MarkerData

#: The feet of SMPL-named keypoints (AMASS, BVH): ankles and feet (toes).
SMPL_FEET = ("left_ankle", "right_ankle", "left_foot", "right_foot")


def plot_motion_file(path: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """Draw ``path`` into ``out_png`` (written atomically) and return the output path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = existing_file(path, "motion file")
    out = Path(out_png)
    if out.suffix.lower() != ".png":
        raise InputError(out, "plot output must end in .png")
    reader = reader_for(path)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    try:
        _DRAW[reader.kind](reader.read(path), path, axes)
        fig.suptitle(path.name)
        fig.tight_layout()
        with atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=100)
    finally:
        plt.close(fig)
    return out


def _markers(data: MarkerData, path: Path, axes) -> None:
    pos = data.positions_m
    for m in range(pos.shape[1]):
        axes[0].plot(pos[:, m, 0], pos[:, m, 2], lw=0.8)
        axes[1].plot(data.time_s, pos[:, m, 2], lw=0.8)
    axes[0].set(xlabel="x (m, forward)", ylabel="z (m, up)", title=f"{len(data.names)} markers, side view")
    axes[0].set_aspect("equal", adjustable="datalim")
    axes[1].set(
        xlabel="time (s)", ylabel="height z (m)", title=f"{data.num_frames} frames at {data.rate_hz:g} Hz"
    )


def _columns_over_time(ax, time_s: np.ndarray, values: np.ndarray, names, ylabel: str) -> None:
    for c in range(values.shape[1]):
        ax.plot(time_s, values[:, c], lw=1, label=names[c])
    ax.set(xlabel="time (s)", ylabel=ylabel)
    if 0 < len(names) <= 12:
        ax.legend(fontsize=7, ncol=2)


def _table(table: Table, path: Path, axes) -> None:
    unit = "deg or m" if table.in_degrees else "rad, m or N/N*m"
    cols = list(range(min(len(table.columns), 24)))
    half = (len(cols) + 1) // 2
    for ax, chunk in zip(axes, (cols[:half], cols[half:]), strict=True):
        if chunk:
            names = [table.columns[c] for c in chunk]
            _columns_over_time(ax, table.time_s, table.data[:, chunk], names, unit)
    axes[0].set_title(f"{table.name}: {table.num_rows} rows, {len(table.columns)} columns")


def _keypoints(motion, axes, feet: tuple[str, ...]) -> None:
    pos = motion.positions_m
    frames = np.linspace(0, motion.num_frames - 1, min(8, motion.num_frames)).astype(int)
    span = np.ptp(pos[..., 0]) if motion.num_frames > 1 else 0.0
    shift = 0.0 if span > 0.8 else 0.6  # spread clips that stay in place
    for i, t in enumerate(frames):
        offset = i * shift
        for k, parent in enumerate(motion.parents):
            if parent >= 0:
                axes[0].plot(pos[t, [parent, k], 0] + offset, pos[t, [parent, k], 2], "k-", lw=1)
    axes[0].axhline(0.0, color="0.6", lw=0.8)
    axes[0].set(xlabel="x (m, forward)", ylabel="z (m, up)", title=f"{len(frames)} frames, side view")
    axes[0].set_aspect("equal", adjustable="datalim")
    for name in feet:
        if name in motion.names:
            axes[1].plot(motion.time_s, motion.keypoint(name)[:, 2], label=name)
    axes[1].set(
        xlabel="time (s)",
        ylabel="height z (m)",
        title=f"{motion.num_frames} frames at {motion.rate_hz:.4g} Hz",
    )
    axes[1].legend(fontsize=8)


def _npz(data: Any, path: Path, axes) -> None:
    if isinstance(data, SmplMotion):  # what read_npz made of the file's keys
        _keypoints(data.keypoints(), axes, SMPL_FEET)
    elif isinstance(data, ReferenceData):
        ref = data
        _columns_over_time(axes[0], ref.time_sec, ref.joint_angle, ref.joint_angle_columns, "angle (deg) / m")
        _columns_over_time(
            axes[1], ref.time_sec, ref.joint_torque, ref.joint_torque_columns, ref.joint_torque_units
        )
        axes[0].set_title("joint_angle")
        axes[1].set_title("joint_torque")
    else:
        traj = data
        time_s = np.arange(traj.num_frames) / traj.rate_hz
        nq = traj.qpos.shape[1]
        _columns_over_time(axes[0], time_s, traj.qpos[:, :3], [f"q{i}" for i in range(min(3, nq))], "qpos")
        _columns_over_time(axes[1], time_s, traj.qpos[:, 3:], [f"q{i}" for i in range(3, nq)], "qpos")
        axes[0].set_title(f"{traj.model_name}: qpos[0:3] (the root's position for a free root)")


def _keypoint_file(motion: KeypointMotion, path: Path, axes) -> None:
    # DeepMimic clips name heels and toes; SMPL-named skeletons (BVH) ankles and feet (toes)
    _keypoints(motion, axes, ("left_heel", "right_heel", "left_toe", "right_toe", *SMPL_FEET))


#: reader kind -> draw(what it read, path, the two axes).
_DRAW: dict[str, Callable[[Any, Path, Any], None]] = {
    "markers": _markers,
    "table": _table,
    "keypoints": _keypoint_file,
    "npz": _npz,
}
