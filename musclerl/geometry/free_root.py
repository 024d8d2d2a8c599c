"""The free root joint of a model: the 7-qpos / 6-dof joint that places the whole body in the world.

Every stage asks the same questions of it (is there one, which joint, where its qpos and dofs are);
these are the one answer. A model may have no free joint (a fixed-base arm), or, rarely, several
(separate bodies): the root is the first.
"""

from __future__ import annotations

import mujoco
import numpy as np


def free_joints(model: mujoco.MjModel) -> np.ndarray:
    """Ids (K,) of the model's free joints, in joint order; empty when there are none."""
    return np.flatnonzero(np.asarray(model.jnt_type) == int(mujoco.mjtJoint.mjJNT_FREE))


def free_root(model: mujoco.MjModel) -> int | None:
    """Id of the first free joint (the root), or None when the model has none."""
    free = free_joints(model)
    return int(free[0]) if len(free) else None


def free_root_qposadr(model: mujoco.MjModel) -> int | None:
    """qpos address of the root's 7 coordinates (position (3,), quaternion (4,) w x y z), or None."""
    root = free_root(model)
    return None if root is None else int(model.jnt_qposadr[root])
