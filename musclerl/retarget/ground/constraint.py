"""The ground rules of :mod:`musclerl.ground.surface` as a constraint of the batched JAX solver.

:class:`SoleContact` plugs into :class:`musclerl.retarget.ik.solver.IKProblem` through the
``residual`` hook of :class:`musclerl.retarget.ik.constraints.Constraint`. Its per-frame target
(P, 6) holds, per sole point, its stance anchor (3; NaN where the point is in swing, e.g.
:meth:`musclerl.ground.surface.GroundContact.sole_targets` with swing rows set to NaN) and the
ground plane under it, ``z = c0 + c1 x + c2 y`` (3; NaN where no ground is known), from
:func:`ground_planes`. Rows:

* ``sqrt(w) * (p - anchor)`` for anchored points — stance feet pinned, no skating;
* ``sqrt(w) * relu(c0 + c1 x + c2 y - z)`` for the others — a swing sole point is pushed out of
  the ground and never pulled into it.

Cost added: ``w * (|p - anchor|^2 + relu(h - z)^2)``. Positions world metres, Z up.

The terrain enters as data (a plane per frame and point, tangent to the heightfield where the
point was), not as a constant of the compiled solver: one compiled problem serves every pass,
every terrain, and the keypoint pass before any terrain is known (all targets NaN).
"""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.motion.trajectory import Terrain
from musclerl.retarget.ik.constraints import Constraint
from musclerl.retarget.ik.kinematics import KinematicTree


def ground_planes(terrain: Terrain, points_m: np.ndarray, step_m: float = 1e-3) -> np.ndarray:
    """Planes ``(c0, c1, c2)`` (..., 3), ``z = c0 + c1 x + c2 y``, tangent to ``terrain`` (its
    bilinear :meth:`Terrain.height_at`) under ``points_m`` (..., 3) world metres; slopes by
    central differences over ``step_m``."""
    xy = np.asarray(points_m, dtype=np.float64)[..., :2]
    dx, dy = np.array([step_m, 0.0]), np.array([0.0, step_m])
    slope_x = (terrain.height_at(xy + dx) - terrain.height_at(xy - dx)) / (2 * step_m)
    slope_y = (terrain.height_at(xy + dy) - terrain.height_at(xy - dy)) / (2 * step_m)
    height = terrain.height_at(xy)
    return np.stack([height - slope_x * xy[..., 0] - slope_y * xy[..., 1], slope_x, slope_y], axis=-1)


class SoleContact(Constraint):
    """Sole sites ``sole_sites`` (P,) of ``model`` held on the ground given with the targets (see
    the module docstring).

    ``tree`` must contain the sites' bodies (``KinematicTree.from_model(model, keep_bodies=...)``).
    """

    target_required = True

    def __init__(
        self,
        model: mujoco.MjModel,
        tree: KinematicTree,
        sole_sites: tuple[str, ...],
        weight: float = 1e3,
        name: str = "ground",
    ):
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in sole_sites]
        missing = [s for s, i in zip(sole_sites, ids, strict=True) if i < 0]
        if missing:
            raise InputError(name, f"model has no sole sites {missing}")
        if weight <= 0:
            raise InputError(name, f"weight must be > 0, got {weight}")
        self.name = name
        self.body_ids = np.array([tree.body_index(int(model.site_bodyid[i])) for i in ids], dtype=np.int64)
        self.local_m = np.array([model.site_pos[i] for i in ids], dtype=np.float64)
        self.sqrt_w = float(np.sqrt(weight))

    def target_shape(self, tree: KinematicTree) -> tuple[int, ...]:
        return (len(self.body_ids), 6)

    def residual(self, tree, q, target, prev):
        p = tree.point_positions(q, self.body_ids, self.local_m)
        anchor, plane = target[:, :3], target[:, 3:]
        anchored = jnp.all(jnp.isfinite(anchor), axis=-1, keepdims=True)
        pin = jnp.where(anchored, p - jnp.where(anchored, anchor, 0.0), 0.0).reshape(-1)
        known = jnp.all(jnp.isfinite(plane), axis=-1)
        c = jnp.where(known[:, None], plane, 0.0)
        below = jnp.maximum(c[:, 0] + c[:, 1] * p[:, 0] + c[:, 2] * p[:, 1] - p[:, 2], 0.0)
        free = jnp.where(anchored[:, 0] | ~known, 0.0, below)
        return self.sqrt_w * jnp.concatenate([pin, free])
