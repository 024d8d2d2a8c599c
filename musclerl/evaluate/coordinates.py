"""OpenSim coordinates (``.mot``, Rajagopal / gait2354 names) <-> MuJoCo ``qpos`` of a model.

Frames
------
OpenSim's ground is Y-up (X forward, Y up, Z right of the subject). Lab vectors are mapped to
MuJoCo's Z-up world exactly as the project's ``.trc`` reader does
(:data:`musclerl.motion.keypoints.Y_UP_TO_Z_UP`)::

    v_mujoco = OPENSIM_TO_MUJOCO @ v_opensim,   i.e.  (x, y, z)_mj = (x, -z, y)_os,

so walking along OpenSim's +x is walking along MuJoCo's +x, and markers, GRFs and coordinates
share one world. myolegs (converted from Rajagopal 2016 by MyoConverter) keeps OpenSim's body
frames and hangs its ``pelvis`` body under the free root with a fixed rotation: at the root's
identity pose the pelvis axes are, in the world, X -> -y, Y -> +z, Z -> -x (the model faces -y).
That fixed rotation is read from the model, not assumed, so a subject in OpenSim's neutral pose
gets a root quaternion with a 90-degree yaw. (Checked in the tests: the model's pelvis rotation is
this permutation to 1e-3, and myolegs driven by OpenSim's IK keeps the trial's pelvis and heel
markers fixed in the pelvis and calcaneus frames.)

Pelvis (free joint)
-------------------
OpenSim's ``ground_pelvis`` CustomJoint translates by (pelvis_tx, ty, tz) in ground, then rotates
body-fixed about Z (tilt), X (list), Y (rotation): ``R_os = Rz(tilt) Rx(list) Ry(rotation)``.
The MuJoCo root orientation is ``R_root = C R_os R_pelvis_in_root^T`` and its position places the
pelvis origin at ``C p_os``.

Coupled coordinates
-------------------
Rajagopal's knee moves the tibia and patella through functions of ``knee_angle``; myolegs keeps
them as extra joints tied by joint-equality polynomials ``y - y0 = sum_k c_k (x - x0)^k``. We set
them from the independent coordinate, and :func:`musclerl.models.couplings.coupling_matrix`
projects generalised forces of all dofs onto the independent coordinates by virtual work
(``tau_x += dy/dx * tau_y``), which is what OpenSim reports as the knee moment.

Signs
-----
A per-column sign map converts a reference's convention to the model's. gait2354/gait2392 measure
knee flexion negative (``knee_angle_r`` -60 deg is flexed) where Rajagopal/myolegs use positive:
:func:`detect_sign_map` flips a knee column whose swing flexion is negative, and the left hip's
adduction/rotation when they are mirrored (Gait120), where the data decides it.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.rotations import matrix_to_quat_wxyz
from musclerl.ground.belt import model_belt_velocity_mps
from musclerl.ground.floor import lowest_z_m
from musclerl.models.couplings import SCALAR_JOINTS, apply_couplings, independent_coordinates
from musclerl.models.geoms import body_collision_geoms
from musclerl.models.opensim_coordinates import (
    HINGE,
    OPENSIM_TO_MUJOCO,
    PELVIS_COLUMNS,
    PELVIS_ROTATIONS,
    PELVIS_TRANSLATIONS,
    _root_joint,
    opensim_pelvis_rotation,
    pelvis_in_root,
)

KNEE_COLUMNS = ("knee_angle_r", "knee_angle_l")


#: Knee flexion in swing reaches 40-70 deg; below this peak the knee's sign is not decided.
KNEE_SWING_MIN_DEG = 20.0
#: Left/right hip patterns (aligned by the flexion's lag) must correlate at least this well, in
#: one sign or the other, to decide the left hip's adduction/rotation axes.
HIP_PATTERN_MIN_R = 0.5
MIRRORED_LEFT_HIP = ("hip_adduction_l", "hip_rotation_l")


def _lagged_r(a: np.ndarray, b: np.ndarray, lag: int) -> float:
    """Pearson r of ``a[t]`` and ``b[t + lag]`` over their overlap."""
    x, y = (a[: len(a) - lag], b[lag:]) if lag >= 0 else (a[-lag:], b[: len(b) + lag])
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def detect_sign_map(columns: list[str], values: np.ndarray) -> tuple[dict[str, float], list[str]]:
    """Sign conventions decided from the data where it is unambiguous: (signs, notes).

    ``values`` (T, C) degrees by ``columns``. Knee: flexion in swing is the knee's largest
    excursion; when it is negative (gait2354, Gait120: extension positive) and beyond
    :data:`KNEE_SWING_MIN_DEG`, the knee column is flipped. Left hip: the left and right hip
    patterns are half a stride apart; the lag between the hip flexions (the same sign on both
    sides) aligns them, and when the aligned adduction patterns agree only after a flip
    (r <= -:data:`HIP_PATTERN_MIN_R`), ``hip_adduction_l`` and ``hip_rotation_l`` are flipped
    (Gait120's mirrored left axes). Each decision, and each case left undecided, is a note.
    """
    values = np.asarray(values, dtype=float)
    col = {name: values[:, k] for k, name in enumerate(columns)}
    signs: dict[str, float] = {}
    notes: list[str] = []
    for name in KNEE_COLUMNS:
        if name not in col:
            continue
        lo, hi = float(np.min(col[name])), float(np.max(col[name]))
        peak = lo if abs(lo) > abs(hi) else hi
        if abs(peak) < KNEE_SWING_MIN_DEG:
            notes.append(
                f"{name}: largest excursion {peak:.0f} deg, too small to tell the flexion sign; kept"
            )
        elif peak < 0:
            signs[name] = -1.0
            notes.append(
                f"{name} multiplied by -1 (detected: knee flexion in swing is negative, {peak:.0f} deg)"
            )
    need = ("hip_flexion_r", "hip_flexion_l", "hip_adduction_r", "hip_adduction_l")
    if all(n in col for n in need) and len(values) >= 10:
        n = len(values)
        lags = range(-(n // 2), n // 2 + 1)
        flex = [_lagged_r(col["hip_flexion_r"], col["hip_flexion_l"], lag) for lag in lags]
        k = int(np.nanargmax(flex)) if np.isfinite(flex).any() else None
        lag = lags[k] if k is not None else 0
        r_add = _lagged_r(col["hip_adduction_r"], col["hip_adduction_l"], lag) if k is not None else np.nan
        if (
            k is None
            or flex[k] < HIP_PATTERN_MIN_R
            or not np.isfinite(r_add)
            or abs(r_add) < HIP_PATTERN_MIN_R
        ):
            notes.append(
                "left hip adduction/rotation: right and left patterns do not decide the sign "
                f"(flexion r {flex[k] if k is not None else float('nan'):.2f}, adduction r {r_add:.2f}); kept"
            )
        elif r_add < 0:
            for name in MIRRORED_LEFT_HIP:
                if name in col:
                    signs[name] = -1.0
            notes.append(
                "hip_adduction_l, hip_rotation_l multiplied by -1 (detected: mirrored left hip axes; "
                f"left and right adduction r {r_add:.2f} at the flexion's lag {lag} frames, "
                f"{-r_add:.2f} after the flip)"
            )
    return signs, notes


@dataclasses.dataclass(frozen=True)
class CoordinateConversion:
    """Result of :func:`coordinates_to_qpos`: qpos (T, nq) and what was used or ignored."""

    qpos: np.ndarray
    used: tuple[str, ...]
    ignored: tuple[str, ...]  # columns the model has no joint for (e.g. lumbar_* on myolegs)
    missing: tuple[str, ...]  # independent model coordinates the table lacks (left at qpos0)
    signs: dict[str, float]


def check_angle_units(
    model: mujoco.MjModel, columns: list[str], values: np.ndarray, in_degrees: bool, source
) -> None:
    """Refuse a radians table (``inDegrees=no``) whose joint angles exceed one turn.

    ``values`` (T, C) by ``columns``. Checked: columns naming a hinge joint of ``model``, and the
    pelvis tilt and list; the pelvis rotation (heading) may wind up over a long turning trial. A
    joint angle beyond 2 pi rad is a table in degrees with a wrong header: read as radians, a 40
    degree knee would turn 6 times.
    """
    if in_degrees:
        return
    values = np.asarray(values, dtype=float)
    for k, name in enumerate(columns):
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        hinge = j >= 0 and int(model.jnt_type[j]) == HINGE and name not in PELVIS_COLUMNS
        if not (hinge or name in PELVIS_ROTATIONS[:2]):
            continue
        peak = float(np.nanmax(np.abs(values[:, k]))) if values.size else 0.0
        if peak > 2 * np.pi:
            raise InputError(
                source,
                f"column '{name}' reaches {peak:.4g} but the header says inDegrees=no: {peak:.4g} rad "
                f"is {np.degrees(peak):.0f} degrees; the values look like degrees (set inDegrees=yes)",
            )


def coordinates_to_qpos(
    model: mujoco.MjModel,
    columns: list[str],
    values: np.ndarray,
    in_degrees: bool = True,
    signs: dict[str, float] | None = None,
    pelvis_body: str = "pelvis",
) -> CoordinateConversion:
    """OpenSim coordinate table (T, C) -> model qpos (T, nq).

    Rotational columns are in degrees when ``in_degrees`` (pelvis translations always metres).
    ``signs`` multiplies columns before use (default: :func:`detect_sign_map`). The six pelvis
    columns drive the free root (see module docstring); other columns drive the model joint of the
    same name; dependent joints follow their couplings.
    """
    values = np.asarray(values, dtype=float)
    columns = list(columns)
    signs = detect_sign_map(columns, values)[0] if signs is None else dict(signs)
    col = {name: k for k, name in enumerate(columns)}
    T = values.shape[0]
    qpos = np.tile(model.qpos0, (T, 1)).astype(float)
    to_rad = np.pi / 180.0 if in_degrees else 1.0

    def column(name: str, angular: bool) -> np.ndarray:
        v = values[:, col[name]] * signs.get(name, 1.0)
        return v * to_rad if angular else v

    used, ignored = [], []
    scalar = SCALAR_JOINTS
    for name in columns:
        if name in PELVIS_COLUMNS:
            continue
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0 or int(model.jnt_type[j]) not in scalar:
            ignored.append(name)
            continue
        angular = int(model.jnt_type[j]) == HINGE
        qpos[:, model.jnt_qposadr[j]] = column(name, angular)
        used.append(name)
    if all(name in col for name in PELVIS_COLUMNS):
        root = _root_joint(model)
        adr = int(model.jnt_qposadr[root])
        R_os = opensim_pelvis_rotation(*(column(n, True) for n in PELVIS_ROTATIONS))
        p_os = np.stack([column(n, False) for n in PELVIS_TRANSLATIONS], axis=-1)
        R_pr, p_pr = pelvis_in_root(model, pelvis_body)
        R_root = OPENSIM_TO_MUJOCO @ R_os @ R_pr.T
        pos = p_os @ OPENSIM_TO_MUJOCO.T - np.einsum("tij,j->ti", R_root, p_pr)
        qpos[:, adr : adr + 3] = pos
        qpos[:, adr + 3 : adr + 7] = matrix_to_quat_wxyz(R_root)
        used.extend(PELVIS_COLUMNS)
    qpos = apply_couplings(model, qpos)
    missing = tuple(n for n in independent_coordinates(model) if n not in col)
    return CoordinateConversion(qpos, tuple(used), tuple(ignored), missing, signs)


def floor_clearance_m(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """Per frame (T,), the signed height of the lowest moving colliding geom above the ground.

    "Ground" is the colliding geoms of the world body, which must be horizontal planes (for the
    registered myo_sim models, the floor at z = 0); the highest of them counts. Lowest points are
    :func:`musclerl.ground.floor.lowest_z_m`, the same as the retarget report and the
    environment's fall detection use.
    """
    colliding = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    ground = np.flatnonzero(colliding & (model.geom_bodyid == 0))
    moving = body_collision_geoms(model)
    if len(ground) == 0 or len(moving) == 0:
        raise ValueError("model has no colliding ground or body geoms")
    d = mujoco.MjData(model)
    mujoco.mj_kinematics(model, d)
    up = d.geom_xmat[ground].reshape(-1, 3, 3)[:, :, 2]  # world direction of each plane's normal
    if np.any(model.geom_type[ground] != mujoco.mjtGeom.mjGEOM_PLANE) or not np.allclose(up, [0, 0, 1]):
        raise ValueError("floor clearance needs the ground to be horizontal planes")
    ground_z = float(d.geom_xpos[ground, 2].max())
    return lowest_z_m(model, qpos, moving) - ground_z


def place_on_ground(model: mujoco.MjModel, qpos: np.ndarray, percentile: float = 5.0) -> np.ndarray:
    """Copy of qpos (T, nq) recentred (mean root x, y at 0) and lowered so that the lowest geom
    touches the ground (the ``percentile`` of :func:`floor_clearance_m` over frames becomes 0).

    For making a trackable Trajectory from lab coordinates whose model does not match the
    subject's size; the joint angles are unchanged.
    """
    adr = int(model.jnt_qposadr[_root_joint(model)])
    q = np.array(qpos, dtype=float, copy=True)
    q[:, adr : adr + 2] -= q[:, adr : adr + 2].mean(axis=0)
    q[:, adr + 2] -= float(np.percentile(floor_clearance_m(model, q), percentile))
    return q


def treadmill_to_overground(
    model: mujoco.MjModel, qpos: np.ndarray, time_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(qpos (T, nq) with the root moving against the belt, belt velocity (2,)).

    A constant belt speed is a Galilean change of frame: accelerations, joint moments and
    ground forces are unchanged; only the root's horizontal velocity gains ``-belt``.
    """
    belt = model_belt_velocity_mps(model, qpos, time_s)
    adr = int(model.jnt_qposadr[_root_joint(model)])
    q = np.array(qpos, dtype=float, copy=True)
    q[:, adr : adr + 2] -= np.outer(np.asarray(time_s, float) - time_s[0], belt)
    return q, belt
