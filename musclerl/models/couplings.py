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


@dataclasses.dataclass(frozen=True)
class Coupling:
    """Dependent joint ``y`` driven by independent joint ``x`` through a quartic polynomial."""

    dependent: str
    independent: str
    y_qpos: int
    y_dof: int
    x_qpos: int
    x_dof: int
    coef: np.ndarray  # (5,) a0..a4
    x0: float
    y0: float

    def value(self, x: np.ndarray) -> np.ndarray:
        dx = np.asarray(x, dtype=float) - self.x0
        return self.y0 + np.polynomial.polynomial.polyval(dx, self.coef)

    def slope(self, x: np.ndarray) -> np.ndarray:
        dx = np.asarray(x, dtype=float) - self.x0
        return np.polynomial.polynomial.polyval(dx, np.polynomial.polynomial.polyder(self.coef))


def couplings(model: mujoco.MjModel) -> list[Coupling]:
    """Active joint-equality constraints between two scalar joints, as :class:`Coupling`."""
    out = []
    for e in range(model.neq):
        is_joint = int(model.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT)
        if not is_joint or not model.eq_active0[e] or model.eq_obj2id[e] < 0:
            continue
        j1, j2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        q1, q2 = int(model.jnt_qposadr[j1]), int(model.jnt_qposadr[j2])
        out.append(
            Coupling(
                dependent=model.joint(j1).name,
                independent=model.joint(j2).name,
                y_qpos=q1,
                y_dof=int(model.jnt_dofadr[j1]),
                x_qpos=q2,
                x_dof=int(model.jnt_dofadr[j2]),
                coef=np.array(model.eq_data[e, :5], dtype=float),
                x0=float(model.qpos0[q2]),
                y0=float(model.qpos0[q1]),
            )
        )
    return out


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
