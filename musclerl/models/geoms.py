"""How low is a geom: analytic lowest points of collision geoms, and which geoms collide.

The one place that answers "how far below the ground is this geom" for the environment's fall
detection (jax or numpy, :func:`primitive_lowest_z`), the retarget report and the starting
activations (:func:`geom_lowest_z` on a ``MjData``). Spheres, capsules, cylinders, ellipsoids and
boxes are exact; meshes and other shapes use centre - bounding radius. Heights in metres, world z.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np


def primitive_lowest_z(kind: Any, size: Any, rbound: Any, pos: Any, xmat: Any, xp: Any) -> Any:
    """Lowest world z (..., G) of primitive geoms from their world poses.

    ``kind`` (G,) mjtGeom types, ``size`` (G, 3), ``rbound`` (G,) (the fallback for meshes and
    other shapes: centre - bounding radius); ``pos`` (..., G, 3) geom centres, ``xmat`` (..., G, 3, 3)
    geom-to-world rotations. Spheres, capsules, cylinders, ellipsoids and boxes are exact.
    """
    z = pos[..., 2]
    up = xmat[..., 2, :]  # world z of each local axis (..., G, 3)
    axial = xp.abs(size[:, 1] * up[..., 2])
    sphere = z - size[:, 0]
    capsule = z - axial - size[:, 0]
    cylinder = (
        z - xp.abs(size[:, 1] * up[..., 2]) - size[:, 0] * xp.sqrt(xp.maximum(1 - up[..., 2] ** 2, 0.0))
    )
    ellipsoid = z - xp.sqrt(xp.sum((size * up) ** 2, axis=-1))
    box = z - xp.sum(xp.abs(size * up), axis=-1)
    other = z - rbound
    # mjtGeom: 2 sphere, 3 capsule, 4 ellipsoid, 5 cylinder, 6 box
    out = xp.where(kind == 2, sphere, other)
    out = xp.where(kind == 3, capsule, out)
    out = xp.where(kind == 4, ellipsoid, out)
    out = xp.where(kind == 5, cylinder, out)
    return xp.where(kind == 6, box, out)


def collision_geoms(model: mujoco.MjModel, bodies: list[int] | None = None) -> np.ndarray:
    """Ids of collision geoms (contype or conaffinity set) on bodies other than the world.

    ``bodies`` restricts to those body ids. Planes, heightfields and SDFs are skipped.
    """
    g = mujoco.mjtGeom
    skip = {int(g.mjGEOM_PLANE), int(g.mjGEOM_HFIELD), int(g.mjGEOM_SDF)}
    keep = []
    for g in range(model.ngeom):
        body = int(model.geom_bodyid[g])
        if body == 0 or int(model.geom_type[g]) in skip:
            continue
        if not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        if bodies is not None and body not in bodies:
            continue
        keep.append(g)
    return np.asarray(keep, dtype=int)


def geom_lowest_z(model: mujoco.MjModel, data: mujoco.MjData, geoms: np.ndarray) -> np.ndarray:
    """Lowest world z (G,) of primitive geoms at the pose in ``data`` (meshes: centre - rbound)."""
    geoms = np.asarray(geoms, dtype=int)
    return primitive_lowest_z(
        model.geom_type[geoms],
        model.geom_size[geoms],
        model.geom_rbound[geoms],
        data.geom_xpos[geoms],
        data.geom_xmat[geoms].reshape(-1, 3, 3),
        np,
    )


def body_collision_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Collidable geoms on moving bodies (not the world), (G,) ids."""
    collidable = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    moving = model.geom_bodyid != 0
    primitive = model.geom_type != mujoco.mjtGeom.mjGEOM_PLANE
    return np.flatnonzero(collidable & moving & primitive)


def foot_geoms(model: mujoco.MjModel, tolerance_m: float = 0.04) -> np.ndarray:
    """Collidable geoms whose lowest point at ``qpos0`` is within ``tolerance_m`` of the lowest one."""
    geoms = body_collision_geoms(model)
    if len(geoms) == 0:
        return geoms
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    low = geom_lowest_z(model, data, geoms)
    return geoms[low <= low.min() + tolerance_m]
