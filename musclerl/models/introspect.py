"""MJCF introspection: what a compiled model holds, in plain Python data.

All lengths in metres, angles in radians (as MuJoCo stores them), forces in newtons.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

JOINT_TYPE_NAMES = {
    int(mujoco.mjtJoint.mjJNT_FREE): "free",
    int(mujoco.mjtJoint.mjJNT_BALL): "ball",
    int(mujoco.mjtJoint.mjJNT_SLIDE): "slide",
    int(mujoco.mjtJoint.mjJNT_HINGE): "hinge",
}
EQUALITY_TYPE_NAMES = {
    int(mujoco.mjtEq.mjEQ_CONNECT): "connect",
    int(mujoco.mjtEq.mjEQ_WELD): "weld",
    int(mujoco.mjtEq.mjEQ_JOINT): "joint",
    int(mujoco.mjtEq.mjEQ_TENDON): "tendon",
}


@dataclasses.dataclass(frozen=True)
class Coordinate:
    """One joint. ``range`` is (lo, hi) in rad (hinge/ball) or m (slide); None if unlimited."""

    name: str
    type: str
    qpos_adr: int
    qvel_adr: int
    range: tuple[float, float] | None
    body: str


@dataclasses.dataclass(frozen=True)
class Muscle:
    """One muscle actuator: its tendon (or joint) and peak isometric force in N."""

    name: str
    tendon: str
    max_force_n: float


def coordinates(model: mujoco.MjModel) -> list[Coordinate]:
    """Every joint of ``model`` (njnt,) in order: type, qpos/qvel addresses, range if limited, body."""
    out = []
    for j in range(model.njnt):
        limited = bool(model.jnt_limited[j])
        out.append(
            Coordinate(
                name=model.joint(j).name,
                type=JOINT_TYPE_NAMES[int(model.jnt_type[j])],
                qpos_adr=int(model.jnt_qposadr[j]),
                qvel_adr=int(model.jnt_dofadr[j]),
                range=tuple(float(v) for v in model.jnt_range[j]) if limited else None,
                body=model.body(int(model.jnt_bodyid[j])).name,
            )
        )
    return out


def muscle_ids(model: mujoco.MjModel) -> np.ndarray:
    """Indices of actuators with muscle dynamics or muscle gain, shape (n_muscles,)."""
    is_muscle = (model.actuator_gaintype == mujoco.mjtGain.mjGAIN_MUSCLE) | (
        model.actuator_dyntype == mujoco.mjtDyn.mjDYN_MUSCLE
    )
    return np.flatnonzero(is_muscle)


def muscles(model: mujoco.MjModel) -> list[Muscle]:
    """The muscle actuators (:func:`muscle_ids`): driven tendon or joint and peak force in N (NaN if
    the model states none)."""
    out = []
    for a in muscle_ids(model):
        trn = int(model.actuator_trnid[a, 0])
        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_TENDON:
            target = model.tendon(trn).name
        else:
            target = model.joint(trn).name
        # For muscles, gainprm[2] is the peak force (or -1: derived from scale); biasprm matches.
        force = float(model.actuator_gainprm[a, 2])
        if force <= 0:
            limited = model.actuator_forcelimited[a]
            force = float(-model.actuator_forcerange[a, 0]) if limited else float("nan")
        out.append(Muscle(model.actuator(a).name, target, force))
    return out


def equality_constraints(model: mujoco.MjModel) -> list[dict]:
    """Equality constraints; joint equalities carry their polynomial ``coef`` (5,)."""
    out = []
    for e in range(model.neq):
        kind = EQUALITY_TYPE_NAMES.get(int(model.eq_type[e]), str(int(model.eq_type[e])))
        item = {"name": model.eq(e).name, "type": kind, "active": bool(model.eq_active0[e])}
        if kind == "joint":
            item["joint1"] = model.joint(int(model.eq_obj1id[e])).name
            item["joint2"] = model.joint(int(model.eq_obj2id[e])).name if model.eq_obj2id[e] >= 0 else None
            item["coef"] = [float(c) for c in model.eq_data[e, :5]]
        out.append(item)
    return out


def total_mass_kg(model: mujoco.MjModel) -> float:
    """Sum of all body masses in kg."""
    return float(np.sum(model.body_mass))


def describe(model: mujoco.MjModel, name: str = "") -> dict:
    """JSON-ready summary of a model: sizes, coordinates, muscles, sites, bodies, equalities."""
    return {
        "model": name,
        "nq": int(model.nq),
        "nv": int(model.nv),
        "nu": int(model.nu),
        "timestep_s": float(model.opt.timestep),
        "total_mass_kg": total_mass_kg(model),
        "n_muscles": len(muscle_ids(model)),
        "coordinates": [dataclasses.asdict(c) for c in coordinates(model)],
        "muscles": [dataclasses.asdict(m) for m in muscles(model)],
        "sites": [model.site(i).name for i in range(model.nsite)],
        "bodies": [model.body(i).name for i in range(model.nbody)],
        "equality_constraints": equality_constraints(model),
    }
