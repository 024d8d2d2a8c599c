"""A bundled walking motion built from normative sagittal joint-angle curves.

The default demo needs a walk that ships with the package. It is generated here, not captured:

1. **Joint angles** over one gait cycle (0-100 %, right heel strike to right heel strike) from
   periodic cubic splines through key points of the normative adult curves at natural cadence.
   Source: D. A. Winter, *Biomechanics and Motor Control of Human Movement*, 4th ed. (Wiley 2009),
   ch. 4 and appendix A (sagittal hip, knee and ankle angles of normal-cadence walking), whose peak
   values and timings agree with J. Perry & J. Burnfield, *Gait Analysis*, 2nd ed. (SLACK 2010):
   hip about +20 deg at heel strike, -10 deg peak extension near 55 %, +25 deg peak flexion near
   87 %; knee about 18 deg loading-response flexion at 15 %, 60 deg peak swing flexion at 72 %;
   ankle -4 deg after heel strike, +10 deg dorsiflexion at 45 %, -17 deg push-off at 65 %.
   The key points below are read off those mean curves (to about +-2 deg); the frontal-plane hip
   adduction is a small (+-6 deg) curve of the same source. The left leg runs half a cycle later.
2. **Model coordinates** (Rajagopal sign conventions: hip/knee flexion and ankle dorsiflexion
   positive). Coupled knee coordinates of myolegs follow the model's joint equality polynomials.
3. **Root translation**: the pelvis height is set per frame so that the lowest foot collision
   geom just touches the floor (``mj_geomDistance``), and the pelvis moves forward at the constant
   speed that keeps each foot's hind body still, on average, over its foot-flat phase (10-40 % of
   its cycle), so the walking speed follows from the legs' geometry. The pelvis keeps the model's
   neutral orientation (no tilt, obliquity or rotation): a simplification, so the trailing foot
   at double support is placed by the height rule, not by measured pelvis motion.
4. **Velocities** by finite differences (``mj_differentiatePos``) on a three-cycle sequence, of
   which the middle cycle is kept: the saved clip is one cycle, marked looping.

Regenerate the bundled files::

    python -m musclerl.motion.normative_gait --model myolegs --out assets/motions/walk_myolegs.npz
    python -m musclerl.motion.normative_gait --model tiny --out assets/motions/walk_tiny.npz
    python -m musclerl.motion.normative_gait --model myofullbody --out assets/motions/walk_myofullbody.npz

(myofullbody's arms keep their neutral pose.)
"""

from __future__ import annotations

import argparse
import dataclasses

import mujoco
import numpy as np
from scipy.interpolate import CubicSpline

from musclerl.errors import InputError
from musclerl.motion.trajectory import Trajectory, finite_difference_qvel

# Key points (gait-cycle %, angle in degrees) of the normative curves (see module docstring).
HIP_FLEXION_DEG = [
    (0, 20),
    (10, 19),
    (20, 13),
    (30, 5),
    (40, -3),
    (50, -9),
    (55, -10),
    (60, -6),
    (70, 8),
    (80, 21),
    (87, 25),
    (94, 22),
]
KNEE_FLEXION_DEG = [
    (0, 3),
    (5, 10),
    (15, 18),
    (25, 12),
    (35, 6),
    (42, 5),
    (50, 10),
    (57, 28),
    (62, 42),
    (67, 55),
    (72, 60),
    (80, 50),
    (88, 25),
    (95, 6),
]
ANKLE_DORSIFLEXION_DEG = [
    (0, 0),
    (5, -4),
    (10, -2),
    (20, 4),
    (35, 8),
    (45, 10),
    (52, 6),
    (58, -4),
    (62, -12),
    (66, -17),
    (72, -10),
    (80, -2),
    (88, 1),
    (95, 1),
]
HIP_ADDUCTION_DEG = [(0, 2), (15, 6), (30, 5), (50, 1), (62, -4), (75, -5), (90, -1)]

CYCLE_S = 1.1  # stride time at natural cadence (~109 steps/min)
RATE_HZ = 100.0


@dataclasses.dataclass(frozen=True)
class GaitModel:
    """Which coordinates of a registered model receive which curve, per side (right, left)."""

    hip_flexion: tuple[str, str]
    knee: tuple[str, str]
    ankle: tuple[str, str]
    hip_adduction: tuple[str, str] | None
    feet: tuple[tuple[str, ...], tuple[str, ...]]  # bodies whose collision geoms are the feet


GAIT_MODELS = {
    "myolegs": GaitModel(
        ("hip_flexion_r", "hip_flexion_l"),
        ("knee_angle_r", "knee_angle_l"),
        ("ankle_angle_r", "ankle_angle_l"),
        ("hip_adduction_r", "hip_adduction_l"),
        (("calcn_r", "toes_r"), ("calcn_l", "toes_l")),
    ),
    "myofullbody": GaitModel(
        ("hip_flexion_r", "hip_flexion_l"),
        ("knee_angle_r", "knee_angle_l"),
        ("ankle_angle_r", "ankle_angle_l"),
        ("hip_adduction_r", "hip_adduction_l"),
        (("calcn_r", "toes_r"), ("calcn_l", "toes_l")),
    ),
    "tiny": GaitModel(
        ("hip_flexion_r", "hip_flexion_l"),
        ("knee_angle_r", "knee_angle_l"),
        ("ankle_angle_r", "ankle_angle_l"),
        None,
        (("foot_r",), ("foot_l",)),
    ),
}


def curve_deg(keypoints: list[tuple[float, float]], percent: np.ndarray) -> np.ndarray:
    """Periodic cubic spline through ``keypoints`` evaluated at gait-cycle ``percent`` (any real)."""
    x = np.array([p for p, _ in keypoints] + [100.0])
    y = np.array([v for _, v in keypoints] + [keypoints[0][1]])
    return CubicSpline(x, y, bc_type="periodic")(np.mod(percent, 100.0))


def _joint_qadr(model: mujoco.MjModel, name: str) -> int:
    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if jid < 0:
        raise InputError(name, "joint not found in the model")
    return int(model.jnt_qposadr[jid])


def _apply_joint_equalities(model: mujoco.MjModel, qpos: np.ndarray) -> None:
    """Set every joint-equality follower to its polynomial of the leader: q1 = poly(q2) (qpos0 offsets)."""
    for e in range(model.neq):
        if model.eq_type[e] != mujoco.mjtEq.mjEQ_JOINT or not model.eq_active0[e] or model.eq_obj2id[e] < 0:
            continue
        a1 = model.jnt_qposadr[model.eq_obj1id[e]]
        a2 = model.jnt_qposadr[model.eq_obj2id[e]]
        dx = qpos[:, a2] - model.qpos0[a2]
        coef = model.eq_data[e, :5]
        qpos[:, a1] = model.qpos0[a1] + sum(c * dx**k for k, c in enumerate(coef))


def _foot_geoms(model: mujoco.MjModel, bodies: tuple[str, ...]) -> list[int]:
    ids = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies}
    if -1 in ids:
        raise InputError(str(bodies), "foot body not found in the model")
    return [
        g
        for g in range(model.ngeom)
        if model.geom_bodyid[g] in ids and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]


def _floor_geom(model: mujoco.MjModel) -> int:
    planes = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
    if not planes:
        raise InputError("model", "no floor plane to stand on")
    return planes[0]


def _lowest_points(model, data, floor: int, feet: list[list[int]]) -> np.ndarray:
    """Per foot: (distance to the floor, world x, world y) of its lowest collision point."""
    out = np.zeros((len(feet), 3))
    fromto = np.zeros(6)
    for i, geoms in enumerate(feet):
        best = (np.inf, 0.0, 0.0)
        for g in geoms:
            d = mujoco.mj_geomDistance(model, data, floor, g, 1.0, fromto)
            if d < best[0]:
                best = (d, fromto[3], fromto[4])
        out[i] = best
    return out


def forward_axis(model: mujoco.MjModel, gait: GaitModel) -> np.ndarray:
    """World horizontal unit vector the model walks along (where hip flexion swings the foot)."""
    data = mujoco.MjData(model)
    foot = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, gait.feet[0][0])
    mujoco.mj_kinematics(model, data)
    rest = data.xpos[foot].copy()
    data.qpos[_joint_qadr(model, gait.hip_flexion[0])] = 0.5
    mujoco.mj_kinematics(model, data)
    d = data.xpos[foot] - rest
    d[2] = 0.0
    return d / np.linalg.norm(d)


def generate(model_name: str, cycles: int = 3) -> Trajectory:
    """One looping cycle of normative walking for a registered model (see the module docstring)."""
    from musclerl.models.registry import load_model

    if model_name not in GAIT_MODELS:
        raise InputError(
            model_name, f"no gait coordinate map for this model; choose one of {sorted(GAIT_MODELS)}"
        )
    gait = GAIT_MODELS[model_name]
    model = load_model(model_name)
    data = mujoco.MjData(model)
    n = int(round(CYCLE_S * RATE_HZ))
    percent = np.arange(cycles * n) * (100.0 / n)
    qpos = np.tile(model.qpos0, (len(percent), 1))
    for side, shift in ((0, 0.0), (1, 50.0)):
        qpos[:, _joint_qadr(model, gait.hip_flexion[side])] = np.deg2rad(
            curve_deg(HIP_FLEXION_DEG, percent - shift)
        )
        qpos[:, _joint_qadr(model, gait.knee[side])] = np.deg2rad(
            curve_deg(KNEE_FLEXION_DEG, percent - shift)
        )
        qpos[:, _joint_qadr(model, gait.ankle[side])] = np.deg2rad(
            curve_deg(ANKLE_DORSIFLEXION_DEG, percent - shift)
        )
        if gait.hip_adduction is not None:
            qpos[:, _joint_qadr(model, gait.hip_adduction[side])] = np.deg2rad(
                curve_deg(HIP_ADDUCTION_DEG, percent - shift)
            )
    _apply_joint_equalities(model, qpos)

    axis = forward_axis(model, gait)
    floor = _floor_geom(model)
    feet = [_foot_geoms(model, bodies) for bodies in gait.feet]
    foot_bodies = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, bodies[0]) for bodies in gait.feet]
    lowest = np.zeros((len(percent), 2, 3))
    foot_pos = np.zeros((len(percent), 2, 3))
    for t in range(len(percent)):  # root at the origin: where would each foot touch?
        data.qpos[:] = qpos[t]
        data.qpos[:2] = 0.0
        mujoco.mj_kinematics(model, data)
        lowest[t] = _lowest_points(model, data, floor, feet)
        foot_pos[t] = data.xpos[foot_bodies]
    stance = np.argmin(lowest[:, :, 0], axis=1)  # (T,) the lower foot
    qpos[:, 2] = qpos[:, 2] - lowest[np.arange(len(percent)), stance, 0]
    # forward progress at the constant speed that keeps each foot still, on average, over its
    # foot-flat phase (10-40 % of its own cycle in normative gait)
    along = foot_pos[:, :, :2] @ axis[:2]  # (T, 2) relative to the root
    along_vel = np.gradient(along, 1.0 / RATE_HZ, axis=0)
    flat = [
        (np.mod(percent - shift, 100.0) >= 10) & (np.mod(percent - shift, 100.0) <= 40) for shift in (0, 50)
    ]
    speed_mps = -float(np.mean(np.concatenate([along_vel[flat[0], 0], along_vel[flat[1], 1]])))
    qpos[:, 0:2] = (np.arange(len(percent)) / RATE_HZ * speed_mps)[:, None] * axis[None, :2]
    qvel = finite_difference_qvel(model, qpos, RATE_HZ)

    keep = slice(n, 2 * n)  # the middle cycle: central differences everywhere
    qpos, qvel = qpos[keep].copy(), qvel[keep]
    qpos[:, 0:2] -= qpos[0, 0:2]
    contact = lowest[keep, :, 0] - lowest[keep, :, 0].min(axis=1, keepdims=True) < 0.01
    joint_names = tuple(model.joint(j).name for j in range(model.njnt))
    return Trajectory(
        qpos=qpos,
        qvel=qvel,
        rate_hz=RATE_HZ,
        joint_names=joint_names,
        model_name=model_name,
        contact_names=("foot_r", "foot_l"),
        contact=contact,
        clip_names=(f"normative_walk_{model_name}",),
        clip_loop=np.ones(1, dtype=bool),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="write the bundled normative walking motion (Trajectory NPZ)"
    )
    parser.add_argument("--model", default="myolegs", choices=sorted(GAIT_MODELS))
    parser.add_argument("--out", required=True, help="output .npz")
    args = parser.parse_args(argv)
    traj = generate(args.model)
    traj.save(args.out)
    speed = np.linalg.norm(traj.qpos[-1, :2] - traj.qpos[0, :2]) * traj.rate_hz / (traj.num_frames - 1)
    print(
        f"{args.out}: {traj.num_frames} frames at {traj.rate_hz:g} Hz, one looping cycle of {CYCLE_S} s, "
        f"walking speed {speed:.2f} m/s, "
        f"pelvis height {traj.qpos[:, 2].min():.3f}-{traj.qpos[:, 2].max():.3f} m"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
