"""Joint equalities as couplings: a dependent joint ``y`` follows an independent joint ``x``.

MuJoCo's joint equality holds ``y - y0 = sum_k c_k (x - x0)^k`` (k <= 4, ``c = eq_data[:5]``,
``x0``/``y0`` from ``qpos0``); myolegs uses it for the knee translations, rotations and patella
that follow ``knee_angle``. This module reads them from a model once; the IK constraint, the
marker fit, the coordinate conversions and the references all evaluate them here.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

SCALAR_JOINTS = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
#: The sagittal leg coordinates (OpenSim names) that plots and comparisons show first.
SAGITTAL_LEG_COORDINATES = (
    "hip_flexion_r",
    "knee_angle_r",
    "ankle_angle_r",
    "hip_flexion_l",
    "knee_angle_l",
    "ankle_angle_l",
)


def polynomial(coef, dx, xp=np):
    """``sum_k coef[..., k] dx^k`` for k = 0..4: coef (..., 5) (or (5,)), dx (...) -> (...).

    ``xp`` is ``numpy`` or ``jax.numpy`` (the IK constraint evaluates it inside the Jacobian).
    """
    powers = xp.stack([xp.ones_like(dx), dx, dx * dx, dx * dx * dx, dx * dx * dx * dx], axis=-1)
    return xp.sum(powers * coef, axis=-1)


def polynomial_slope(coef, dx, xp=np):
    """d/d(dx) of :func:`polynomial`: coef (..., 5), dx (...) -> (...)."""
    powers = xp.stack([xp.ones_like(dx), 2 * dx, 3 * dx * dx, 4 * dx * dx * dx], axis=-1)
    return xp.sum(powers * coef[..., 1:], axis=-1)


@dataclasses.dataclass(frozen=True)
class Coupling:
    """Dependent joint ``y`` driven by independent joint ``x`` through a quartic polynomial.

    A joint fixed at a constant (no ``joint2``) has ``independent`` None, ``x_qpos = x_dof = -1``,
    ``x0 = 0`` and only ``coef[0]`` set.
    """

    dependent: str
    independent: str | None
    y_qpos: int
    y_dof: int
    x_qpos: int
    x_dof: int
    coef: np.ndarray  # (5,) a0..a4
    x0: float
    y0: float

    def value(self, x: np.ndarray) -> np.ndarray:
        """Dependent coordinate (...) for independent values ``x`` (...)."""
        return self.y0 + polynomial(self.coef, np.asarray(x, dtype=float) - self.x0)

    def slope(self, x: np.ndarray) -> np.ndarray:
        """dy/dx (...) at independent values ``x`` (...)."""
        return polynomial_slope(self.coef, np.asarray(x, dtype=float) - self.x0)


def couplings(model: mujoco.MjModel, fixed: bool = False) -> list[Coupling]:
    """Active joint-equality constraints as :class:`Coupling`, in model order: those between two
    joints, and with ``fixed`` also those holding one joint at a constant."""
    out = []
    for e in range(model.neq):
        is_joint = int(model.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT)
        if not is_joint or not model.eq_active0[e] or (model.eq_obj2id[e] < 0 and not fixed):
            continue
        j1, j2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        q1 = int(model.jnt_qposadr[j1])
        common = dict(dependent=model.joint(j1).name, y_qpos=q1, y_dof=int(model.jnt_dofadr[j1]))
        common["y0"] = float(model.qpos0[q1])
        if j2 < 0:
            coef = np.array([model.eq_data[e, 0], 0, 0, 0, 0], dtype=float)
            out.append(Coupling(independent=None, x_qpos=-1, x_dof=-1, coef=coef, x0=0.0, **common))
            continue
        q2 = int(model.jnt_qposadr[j2])
        out.append(
            Coupling(
                independent=model.joint(j2).name,
                x_qpos=q2,
                x_dof=int(model.jnt_dofadr[j2]),
                coef=np.array(model.eq_data[e, :5], dtype=float),
                x0=float(model.qpos0[q2]),
                **common,
            )
        )
    return out


def equality_residual(coups: list[Coupling], qpos: np.ndarray) -> np.ndarray:
    """Residual ``y - value(x)`` of each coupling between two joints for poses ``qpos`` (..., nq)
    -> (..., len(coups)) (rad or m)."""
    qpos = np.asarray(qpos, dtype=float)
    cols = [qpos[..., c.y_qpos] - c.value(qpos[..., c.x_qpos]) for c in coups]
    return np.stack(cols, axis=-1) if cols else np.zeros(qpos.shape[:-1] + (0,))


def independent_coordinates(model: mujoco.MjModel) -> list[str]:
    """Names of scalar (hinge/slide) joints that no joint equality drives, in model order."""
    dependent = {c.dependent for c in couplings(model)}
    scalar = SCALAR_JOINTS
    return [
        model.joint(j).name
        for j in range(model.njnt)
        if int(model.jnt_type[j]) in scalar and model.joint(j).name not in dependent
    ]


def apply_couplings(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """Copy of ``qpos`` (T, nq) with every dependent joint set from its independent joint."""
    q = np.array(qpos, dtype=float, copy=True)
    for c in couplings(model):
        q[..., c.y_qpos] = c.value(q[..., c.x_qpos])
    return q


def hold_coordinates(model: mujoco.MjModel, qpos: np.ndarray, names: list[str]) -> np.ndarray:
    """Copy of ``qpos`` (T, nq) with the scalar coordinates ``names`` held at their ``qpos0`` value
    and the joints they drive set from them: OpenSim's locked coordinates, whose moment the joint
    carries."""
    q = np.array(qpos, dtype=float, copy=True)
    for name in names:
        adr = int(model.jnt_qposadr[model.joint(name).id])
        q[..., adr] = model.qpos0[adr]
    return apply_couplings(model, q)


def coupling_matrix(model: mujoco.MjModel, qpos: np.ndarray, names: list[str]) -> np.ndarray:
    """P (K, nv) with ``tau_named = P @ tau_all`` for the scalar coordinates ``names`` at ``qpos`` (nq,).

    Row k has 1 at the coordinate's own dof and dy/dx at each dof it drives (virtual work).
    """
    P = np.zeros((len(names), model.nv))
    row = {}
    for k, name in enumerate(names):
        j = model.joint(name).id
        P[k, model.jnt_dofadr[j]] = 1.0
        row[name] = k
    for c in couplings(model):
        if c.independent in row:
            P[row[c.independent], c.y_dof] += float(c.slope(qpos[c.x_qpos]))
    return P
