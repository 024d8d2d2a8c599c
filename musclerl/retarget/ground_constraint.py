"""The ground rules of :mod:`musclerl.retarget.ground` as a constraint of the batched JAX solver.

:class:`SoleContact` plugs into :class:`musclerl.retarget.solver.IKProblem` through the
``residual`` hook of :class:`musclerl.retarget.constraints.Constraint`. Its per-frame target
(P, 3) holds each sole point's stance anchor, NaN where the point is in swing (e.g.
:meth:`musclerl.retarget.ground.GroundContact.sole_targets` with swing rows set to NaN). Rows:

* ``sqrt(w) * (p - anchor)`` for anchored points — stance feet pinned, no skating;
* ``sqrt(w) * relu(h(x, y) - z)`` for the others — a swing sole point is pushed out of the
  ground and never pulled into it (``h`` the terrain, bilinear like :meth:`Terrain.height_at`).

Cost added: ``w * (|p - anchor|^2 + relu(h - z)^2)``. Positions world metres, Z up.
"""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.motion.trajectory import Terrain
from musclerl.retarget.constraints import Constraint
from musclerl.retarget.kinematics import KinematicTree


def terrain_height_jax(terrain: Terrain, xy_m: jnp.ndarray) -> jnp.ndarray:
    """:meth:`Terrain.height_at` in JAX (bilinear, clamped outside the grid): (..., 2) -> (...)."""
    h = jnp.asarray(terrain.height_m, dtype=xy_m.dtype)
    rows, cols = terrain.height_m.shape
    gx = jnp.clip((xy_m[..., 0] - terrain.origin_m[0]) / terrain.cell_m, 0, cols - 1)
    gy = jnp.clip((xy_m[..., 1] - terrain.origin_m[1]) / terrain.cell_m, 0, rows - 1)
    c0 = jnp.minimum(jnp.floor(gx).astype(jnp.int32), max(cols - 2, 0))
    r0 = jnp.minimum(jnp.floor(gy).astype(jnp.int32), max(rows - 2, 0))
    c1, r1 = jnp.minimum(c0 + 1, cols - 1), jnp.minimum(r0 + 1, rows - 1)
    fx, fy = gx - c0, gy - r0
    top = h[r0, c0] * (1 - fx) + h[r0, c1] * fx
    bottom = h[r1, c0] * (1 - fx) + h[r1, c1] * fx
    return top * (1 - fy) + bottom * fy


class SoleContact(Constraint):
    """Sole sites ``sole_sites`` (P,) of ``model`` held on ``terrain`` (see the module docstring).

    ``tree`` must contain the sites' bodies (``KinematicTree.from_model(model, keep_bodies=...)``).
    """

    target_required = True

    def __init__(self, model: mujoco.MjModel, tree: KinematicTree, sole_sites: tuple[str, ...],
                 terrain: Terrain, weight: float = 1e3, name: str = "ground"):
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
        self.terrain = terrain

    def target_shape(self, tree: KinematicTree) -> tuple[int, ...]:
        return (len(self.body_ids), 3)

    def residual(self, tree, q, target, prev):
        p = tree.point_positions(q, self.body_ids, self.local_m)
        anchored = jnp.all(jnp.isfinite(target), axis=-1, keepdims=True)
        pin = jnp.where(anchored, p - jnp.where(anchored, target, 0.0), 0.0).reshape(-1)
        below = jnp.maximum(terrain_height_jax(self.terrain, p[:, :2]) - p[:, 2], 0.0)
        free = jnp.where(anchored[:, 0], 0.0, below)
        return self.sqrt_w * jnp.concatenate([pin, free])
