"""Quick-look PNG of any supported motion file (``musclerl info FILE --plot OUT.png``).

* ``.trc``: side view (x-z, metres, Z up) of every marker's path, and marker heights over time.
* ``.mot`` / ``.sto``: every column over time (up to 24, grouped 8 per panel).
* AMASS ``.npz`` / DeepMimic / BVH: stick figures (side view) at 8 evenly spaced frames, and the feet's
  heights over time.
* reference ``.npz``: joint angles and torques over time. Trajectory ``.npz``: qpos over time.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, existing_file


def plot_motion_file(path: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """Draw ``path`` into ``out_png`` (written atomically) and return the output path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = existing_file(path, "motion file")
    out = Path(out_png)
    if out.suffix.lower() != ".png":
        raise InputError(out, "plot output must end in .png")
    suffix = path.suffix.lower()
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    try:
        if suffix == ".trc":
            _markers(path, axes)
        elif suffix in (".mot", ".sto"):
            _table(path, axes)
        elif suffix in (".txt", ".json"):
            from musclerl.motion.deepmimic import read_deepmimic

            _keypoints(read_deepmimic(path), axes, ("left_heel", "right_heel", "left_toe", "right_toe"))
        elif suffix == ".bvh":
            from musclerl.motion.bvh import read_bvh

            _keypoints(read_bvh(path), axes, ("left_ankle", "right_ankle", "left_foot", "right_foot"))
        elif suffix == ".npz":
            _npz(path, axes)
        else:
            raise InputError(path, f"unsupported motion file type '{suffix}'")
        fig.suptitle(path.name)
        fig.tight_layout()
        with atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=100)
    finally:
        plt.close(fig)
    return out


def _markers(path: Path, axes) -> None:
    from musclerl.motion.trc import read_trc

    data = read_trc(path)
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


def _table(path: Path, axes) -> None:
    from musclerl.motion.storage import read_storage

    table = read_storage(path)
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


def _npz(path: Path, axes) -> None:
    from musclerl.motion.summary import npz_kind

    kind = npz_kind(path)
    if kind == "amass":
        from musclerl.motion.smpl import read_amass

        feet = ("left_ankle", "right_ankle", "left_foot", "right_foot")
        _keypoints(read_amass(path).keypoints(), axes, feet)
    elif kind == "reference":
        from musclerl.motion.reference import read_reference

        ref = read_reference(path)
        _columns_over_time(axes[0], ref.time_sec, ref.joint_angle, ref.joint_angle_columns, "angle (deg) / m")
        _columns_over_time(
            axes[1], ref.time_sec, ref.joint_torque, ref.joint_torque_columns, ref.joint_torque_units
        )
        axes[0].set_title("joint_angle")
        axes[1].set_title("joint_torque")
    else:
        from musclerl.motion.trajectory import Trajectory

        traj = Trajectory.load(path)
        time_s = np.arange(traj.num_frames) / traj.rate_hz
        nq = traj.qpos.shape[1]
        _columns_over_time(axes[0], time_s, traj.qpos[:, :3], [f"q{i}" for i in range(min(3, nq))], "qpos")
        _columns_over_time(axes[1], time_s, traj.qpos[:, 3:], [f"q{i}" for i in range(3, nq)], "qpos")
        axes[0].set_title(f"{traj.model_name}: qpos[0:3] (the root's position for a free root)")
