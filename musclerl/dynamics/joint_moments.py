"""A simulated state's joint moments by source, as inverse dynamics would report them.

Inverse dynamics gives the *net* moment about each joint: everything that acts across the joint
besides gravity, inertia and the ground. In a MuJoCo state that is the sum of three generalised
forces (nv,):

- ``qfrc_actuator``: the muscles (their passive force-length part is already in the muscle force);
- ``qfrc_passive``: joint springs and damping (and any other passive term the model enables);
- the joint-limit constraint forces: ``efc_J[rows].T @ efc_force[rows]`` over the rows of type
  ``mjCNSTR_LIMIT_JOINT`` (``qfrc_constraint`` also holds contacts and equalities, which are not
  joint moments).

Each is projected onto the independent coordinates with the couplings' virtual-work matrix
(:func:`musclerl.models.couplings.coupling_matrix`, the myolegs knee's coupled dofs added to
``knee_angle``), so every term has the coordinate's own sign convention. Units: N·m (N for slides).
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

LIMIT_JOINT = int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT)


def limit_qfrc(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """Generalised force (nv,) of the joint-limit constraints of ``data`` (after ``mj_forward``):
    ``J^T f`` over the ``mjCNSTR_LIMIT_JOINT`` rows, dense or sparse Jacobian alike."""
    out = np.zeros(model.nv)
    rows = np.flatnonzero(data.efc_type[: data.nefc] == LIMIT_JOINT)
    if not rows.size:
        return out
    force = data.efc_force[rows]
    if mujoco.mj_isSparse(model):
        for i, f in zip(rows, force, strict=True):
            adr, nnz = int(data.efc_J_rowadr[i]), int(data.efc_J_rownnz[i])
            cols = data.efc_J_colind[adr : adr + nnz]
            out[cols] += data.efc_J[adr : adr + nnz] * f
    else:
        J = data.efc_J[: data.nefc * model.nv].reshape(data.nefc, model.nv)
        out += J[rows].T @ force
    return out


@dataclasses.dataclass(frozen=True)
class JointMoments:
    """Moments (K,) on the coordinates a projection matrix names: ``muscle``, ``passive``,
    ``limit`` and their sum ``net``."""

    muscle: np.ndarray
    passive: np.ndarray
    limit: np.ndarray

    @property
    def net(self) -> np.ndarray:
        return self.muscle + self.passive + self.limit


def joint_moments(model: mujoco.MjModel, data: mujoco.MjData, projection: np.ndarray) -> JointMoments:
    """The state's moments by source, projected with ``projection`` (K, nv) (from
    :func:`musclerl.models.couplings.coupling_matrix` at ``data.qpos``); ``data`` after ``mj_forward``."""
    P = np.asarray(projection, dtype=float)
    return JointMoments(
        muscle=P @ data.qfrc_actuator,
        passive=P @ data.qfrc_passive,
        limit=P @ limit_qfrc(model, data),
    )
