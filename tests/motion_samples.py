"""Small generated motion files shared by the motion-format tests and the bad-input table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from musclerl.motion.reference import ReferenceData, write_reference
from musclerl.motion.smpl import write_amass_npz

TRC_KEYS = "\t".join(
    [
        "DataRate",
        "CameraRate",
        "NumFrames",
        "NumMarkers",
        "Units",
        "OrigDataRate",
        "OrigDataStartFrame",
        "OrigNumFrames",
    ]
)


def trc_text(
    names: list[str],
    rows: list[list[str]],
    *,
    units: str = "mm",
    rate: str = "100",
    num_frames: int | None = None,
    num_markers: int | None = None,
    blank_line: bool = True,
    sep: str = "\t",
) -> str:
    """A .trc file as text; ``rows`` are the cells after Frame# and Time (strings, '' for blank)."""
    n = len(rows) if num_frames is None else num_frames
    m = len(names) if num_markers is None else num_markers
    lines = [
        sep.join(["PathFileType", "4", "(X/Y/Z)", "sample.trc"]),
        TRC_KEYS.replace("\t", sep),
        sep.join([rate, rate, str(n), str(m), units, rate, "1", str(n)]),
        sep.join(["Frame#", "Time"] + [f"{name}{sep}{sep}" for name in names]).rstrip(sep),
        sep + sep + sep.join(f"X{i + 1}{sep}Y{i + 1}{sep}Z{i + 1}" for i in range(len(names))),
    ]
    if blank_line:
        lines.append("")
    dt = 1.0 / float(rate) if rate.strip() else 0.01
    for t, cells in enumerate(rows):
        lines.append(sep.join([str(t + 1), f"{t * dt:.6f}", *cells]))
    return "\n".join(lines) + "\n"


def simple_trc_rows(n_frames: int = 4) -> list[list[str]]:
    """Two markers: 'A' walks along lab +x at 1000 mm height, 'B' sits at lab (0, 500, 200) mm."""
    return [[f"{100.0 * t:.3f}", "1000.000", "0.000", "0.000", "500.000", "200.000"] for t in range(n_frames)]


def storage_text(columns: list[str], rows: np.ndarray, *, header: list[str] | None = None) -> str:
    """A .mot/.sto file as text with a legacy header (counts taken from the data unless given)."""
    head = (
        header
        if header is not None
        else [
            "sample",
            "version=1",
            f"nRows={rows.shape[0]}",
            f"nColumns={rows.shape[1]}",
            "inDegrees=yes",
            "endheader",
        ]
    )
    lines = [*head, "\t".join(["time", *columns])]
    lines.extend("\t".join(f"{v:.8f}" for v in row) for row in rows)
    return "\n".join(lines) + "\n"


def yaw_then_body_to_world(yaw_rad: float) -> np.ndarray:
    """Root axis-angle that turns SMPL's body frame (Y up, facing +Z) to Z-up facing yaw (0 -> +x)."""
    to_z_up = Rotation.from_euler("x", 90, degrees=True)  # body +Y -> world +Z, body +Z -> world -Y
    face_x = Rotation.from_euler("z", 90, degrees=True)  # world -Y -> world +X
    return (Rotation.from_euler("z", yaw_rad) * face_x * to_z_up).as_rotvec()


def step_up_clip(n_frames: int = 60, rate_hz: float = 30.0, step_m: float = 0.15) -> dict[str, np.ndarray]:
    """A synthetic SMPL walk along +x that climbs a step of ``step_m`` half way through.

    Returns root_orient (T, 3), body_pose (T, 21, 3), trans_m (T, 3): legs swing in anti-phase
    (hip flexion about the body's x axis, knee flexion on the swing leg).
    """
    t = np.arange(n_frames) / rate_hz
    phase = 2 * np.pi * 1.0 * t
    body = np.zeros((n_frames, 21, 3))
    body[:, 0, 0] = -0.4 * np.sin(phase)  # left hip (joint 1): negative x = flex forward
    body[:, 1, 0] = 0.4 * np.sin(phase)  # right hip
    body[:, 3, 0] = 0.6 * np.clip(np.sin(phase), 0, None)  # left knee flexes (positive x)
    body[:, 4, 0] = 0.6 * np.clip(-np.sin(phase), 0, None)  # right knee
    root = np.tile(yaw_then_body_to_world(0.0), (n_frames, 1))
    rise = step_m / (1 + np.exp(-(t - t[-1] / 2) * 12))
    trans = np.stack([1.2 * t, np.full(n_frames, 0.2233), 0.95 + rise], axis=1)
    return {"root_orient": root, "body_pose": body, "trans_m": trans, "rate_hz": rate_hz}


def write_step_up_amass(path: Path, layout: str = "smplh", **kwargs) -> dict[str, np.ndarray]:
    clip = step_up_clip(**kwargs)
    write_amass_npz(path, layout=layout, **clip)
    return clip


def small_reference(n: int = 5) -> ReferenceData:
    """A valid 5-frame reference with one invalid torque sample and one all-invalid column."""
    time = np.arange(n) / 60.0
    torque = np.linspace(-1, 1, n * 3).reshape(n, 3)
    valid = np.ones((n, 3), dtype=bool)
    valid[2, 0] = False
    valid[:, 2] = False
    torque[~valid] = np.nan
    grf = np.tile([0.1, 1.0, 0.0], (n, 1))
    return ReferenceData(
        subject="subject01",
        trial="walk1",
        step_label="Step01_Step02",
        time_sec=time,
        joint_angle=np.tile([10.0, 0.9, -20.0], (n, 1)),
        joint_angle_columns=("hip_flexion_r", "pelvis_ty", "knee_angle_r"),
        joint_torque=torque,
        joint_torque_columns=("hip_flexion_r_moment", "knee_angle_r_moment", "mtp_angle_r_moment"),
        joint_torque_column_valid=valid,
        subject_weight_kg=72.6,
        subject_body_weight_n=72.6 * 9.80665,
        computed_grf=grf,
        computed_grf_columns=("ground_force_vx", "ground_force_vy", "ground_force_vz"),
        computed_grf_valid=np.ones(n, dtype=bool),
        qc_notes="mtp moment not computed",
        source_files=("walk1_ik.mot", "inverse_dynamics.sto", "walk1_grf.mot"),
        timestep=np.arange(n),
        source_time_sec=time.copy(),
        original_kinematics_time_sec=0.4 + time,
        id_source_time_sec=np.arange(n + 1) / 60.0,
        original_id_source_time_sec=0.4 + np.arange(n + 1) / 60.0,
    )


def legacy_reference_arrays(n: int = 5) -> dict[str, np.ndarray]:
    """The arrays of a reference in the earlier musclerl layout (scalar ``timestep``, (T, Q)
    ``joint_torque_valid``, (Q,) ``joint_torque_column_valid``, (T, G) ``computed_grf_valid``, (N,)
    ``qc_notes``), as older ``musclerl reference`` runs wrote them."""
    ref = small_reference(n)
    arrays = {k: np.array(getattr(ref, k)) for k in ("subject", "trial", "step_label", "time_sec")}
    arrays.update(
        timestep=np.array(1 / 60.0),
        joint_angle=ref.joint_angle,
        joint_angle_columns=np.array(ref.joint_angle_columns),
        joint_torque=ref.joint_torque,
        joint_torque_columns=np.array(ref.joint_torque_columns),
        joint_torque_valid=ref.joint_torque_column_valid,
        joint_torque_column_valid=ref.joint_torque_column_valid.any(axis=0),
        joint_torque_sign_convention=np.array("OpenSim: positive moment increases the coordinate"),
        joint_torque_normalization=np.array("divided by subject_weight_kg"),
        joint_torque_units=np.array("N*m/kg"),
        subject_weight_kg=np.array(72.6),
        subject_body_weight_n=np.array(72.6 * 9.80665),
        computed_grf=ref.computed_grf,
        computed_grf_columns=np.array(ref.computed_grf_columns),
        computed_grf_valid=np.ones((n, 3), dtype=bool),
        computed_grf_normalization=np.array("divided by subject_body_weight_n"),
        computed_grf_units=np.array("BW"),
        qc_notes=np.array(["mtp moment not computed", "low-pass 6 Hz"]),
        source_files=np.array(["walk1_ik.mot"]),
        source_time_sec=ref.time_sec,
    )
    return arrays


def rewrite_npz(path: Path, **change) -> None:
    """Replace arrays of the ``.npz`` at ``path`` in place (value None: drop the key)."""
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    for key, value in change.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    with path.open("wb") as f:
        np.savez(f, **data)


def write_small_reference(path: Path, **overrides) -> None:
    """Write :func:`small_reference`, then replace raw arrays (to build broken files)."""
    write_reference(path, small_reference())
    if overrides:
        rewrite_npz(path, **overrides)


# A BVH test skeleton (cm, Y up, facing +Z, left at +X as in CMU's files): (name, parent,
# offset in cm), parents before children; "End" marks an End Site.
BVH_SKELETON = (
    ("Hips", None, (0.0, 0.0, 0.0)),
    ("LeftUpLeg", "Hips", (9.0, -6.0, 0.0)),
    ("LeftLeg", "LeftUpLeg", (0.0, -42.0, 1.0)),
    ("LeftFoot", "LeftLeg", (0.0, -41.0, -1.0)),
    ("LeftToeBase", "LeftFoot", (0.0, -5.0, 13.0)),
    ("End", "LeftToeBase", (0.0, 0.0, 5.0)),
    ("RightUpLeg", "Hips", (-9.0, -6.0, 0.0)),
    ("RightLeg", "RightUpLeg", (0.0, -42.0, 1.0)),
    ("RightFoot", "RightLeg", (0.0, -41.0, -1.0)),
    ("RightToeBase", "RightFoot", (0.0, -5.0, 13.0)),
    ("End", "RightToeBase", (0.0, 0.0, 5.0)),
    ("Spine", "Hips", (0.0, 12.0, 0.0)),
    ("Spine1", "Spine", (0.0, 20.0, 0.0)),
    ("Neck", "Spine1", (0.0, 20.0, 0.0)),
    ("Head", "Neck", (0.0, 10.0, 0.0)),
    ("End", "Head", (0.0, 12.0, 0.0)),
)
_BVH_ROOT_CHANNELS = ("Xposition", "Yposition", "Zposition")


def bvh_text(
    frames: np.ndarray,
    order: str = "ZYX",
    scale: float = 1.0,
    frame_time: float = 0.025,
    skeleton=BVH_SKELETON,
) -> str:
    """A BVH file of ``skeleton`` (offsets times ``scale``); every joint has rotation channels
    in ``order``, the root its positions first; ``frames`` (T, C) are written as given."""
    children: dict[str | None, list[int]] = {}
    for i, (_, parent, _) in enumerate(skeleton):
        children.setdefault(parent, []).append(i)
    lines = ["HIERARCHY"]

    def block(i: int, depth: int) -> None:
        name, parent, offset = skeleton[i]
        pad = "  " * depth
        head = "End Site" if name == "End" else ("ROOT " if parent is None else "JOINT ") + name
        lines.extend(
            [pad + head, pad + "{", pad + "  OFFSET " + " ".join(f"{scale * v:.12g}" for v in offset)]
        )
        if name != "End":
            channels = (_BVH_ROOT_CHANNELS if parent is None else ()) + tuple(f"{a}rotation" for a in order)
            lines.append(pad + f"  CHANNELS {len(channels)} " + " ".join(channels))
            for child in children.get(name, []):
                block(child, depth + 1)
        lines.append(pad + "}")

    block(0, 0)
    lines += ["MOTION", f"Frames: {len(frames)}", f"Frame Time: {frame_time}"]
    lines += [" ".join(f"{v:.12g}" for v in row) for row in frames]
    return "\n".join(lines) + "\n"


def bvh_width(skeleton=BVH_SKELETON) -> int:
    """Channels per frame of :func:`bvh_text`'s file."""
    return 3 + 3 * sum(name != "End" for name, _, _ in skeleton)


def bvh_standing_sway(count: int = 24) -> np.ndarray:
    """Stands with the hips 0.93 m up (feet on y = 0), swaying 2 cm sideways, knees slightly bent."""
    t = np.arange(count) / 40.0
    frames = np.zeros((count, bvh_width()))
    frames[:, 0] = 2.0 * np.sin(2 * np.pi * t)
    frames[:, 1] = 92.5
    for side in (1, 6):  # LeftUpLeg, RightUpLeg: hip flexion about X, then the knee back
        hip, knee, ankle = 3 + 3 * side, 3 + 3 * (side + 1), 3 + 3 * (side + 2)
        frames[:, hip + 2] = -8.0
        frames[:, knee + 2] = 12.0
        frames[:, ankle + 2] = -4.0
    return frames
