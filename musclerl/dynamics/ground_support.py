"""The ground's load on the feet when no force plates were recorded, from the motion itself.

Inverse dynamics of a free-floating model without external loads leaves the whole ground
reaction in the free root's residual (force in the world frame, moment in the root frame, about
the root body's origin). This module hands that load to the supporting feet:

1. each foot (a group of bodies, e.g. calcaneus + toes; the load acts on the group's first body)
   supports when its height is within :data:`DOUBLE_SUPPORT_M` of the lowest foot's; feet
   supporting together share the load equally (:func:`supporting_shares`);
2. either the whole wrench moves from the root origin to each foot body's origin, force unchanged
   and moment ``m_foot = m_root - (p_foot - p_root) x f`` (the root residual vanishes: the
   motion is reproduced exactly, whatever the model's mass distribution), or
   (``at_contact=True``, the shares passing gradually from foot to foot over
   :data:`TRANSFER_S`) only the force acts, at the foot's contact patch (the parts of its
   collision geoms within :data:`PATCH_M` of its lowest point, :func:`contact_point`); the
   moment stays a root residual, as with force plates. The patch keeps the centre of pressure under the foot
   (heel at heel strike, forefoot at push-off) where the exact wrench puts it wherever the
   model's mass distribution needs it, which for a model without the subject's trunk and arms
   can be behind the heel for a whole stance;
3. the result is an :class:`~musclerl.dynamics.inverse_dynamics.AppliedLoads` for a second
   inverse dynamics, in which the stance leg's joints carry the body.

The sharing is a stand-in for plates: an equal split in double support (where plates would show
the load moving from the trailing to the leading foot), and blind to anything else pushing on
the body. Measured against plates in ``docs/static_optimisation.md``.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.dynamics.inverse_dynamics import AppliedLoads, InverseDynamicsResult
from musclerl.models.geoms import collision_geoms, foot_geoms, geom_lowest_z

#: Feet whose lowest points are within 1 cm of each other share the load.
DOUBLE_SUPPORT_M = 0.01
#: A foot's geoms within 5 mm of its lowest point make its contact patch.
PATCH_M = 0.005
#: The load passes from foot to foot over 0.1 s, about the double support of a walk at 1.2 m/s.
TRANSFER_S = 0.1


def model_feet(model: mujoco.MjModel) -> list[tuple[int, ...]]:
    """The model's feet as body-id groups: the bodies of :func:`~musclerl.models.geoms.foot_geoms`,
    a body joined to its parent's group when the parent is a foot body too (toes -> calcaneus)."""
    bodies = sorted({int(b) for b in model.geom_bodyid[foot_geoms(model)]})
    groups: dict[int, list[int]] = {}
    for b in bodies:
        top = b
        while int(model.body_parentid[top]) in bodies:
            top = int(model.body_parentid[top])
        groups.setdefault(top, []).append(b)
    return [tuple(sorted(members, key=lambda b: b != top)) for top, members in groups.items()]


def supporting_shares(
    model: mujoco.MjModel, qpos: np.ndarray, feet: list[tuple[int, ...]], soles: bool = False
) -> np.ndarray:
    """(T, F) share of the ground load on each foot along ``qpos`` (T, nq); rows sum to 1.

    A foot's height: the lowest point of all its geoms, or (``soles``) the mean height of its
    collision geoms' centres, which a rigid toe dipping below the floor at push-off (a foot whose
    metatarsals the motion does not bend) or a visual mesh (counted by its bounding sphere: 12 cm
    below the centre on myolegs' foot) does not decide.
    """
    data = mujoco.MjData(model)
    geoms = [collision_geoms(model, list(foot)) if soles else _foot_geoms(model, foot) for foot in feet]
    share = np.zeros((len(qpos), len(feet)))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        if soles:
            height = np.array([data.geom_xpos[g, 2].mean() if len(g) else np.inf for g in geoms])
        else:
            height = np.array([geom_lowest_z(model, data, g).min() if len(g) else np.inf for g in geoms])
        share[t] = height <= height.min() + DOUBLE_SUPPORT_M
    return share / share.sum(axis=1, keepdims=True)


def gradual_transfer(share: np.ndarray, time_s: np.ndarray, window_s: float = TRANSFER_S) -> np.ndarray:
    """``share`` (T, F) averaged over a centred ``window_s`` window: the load moves from one foot
    to the other over about a double support's duration instead of in one frame, which would
    put a step into every stance-leg moment. Rows still sum to 1."""
    from scipy.ndimage import uniform_filter1d

    if len(time_s) < 2 or window_s <= 0:
        return share
    frames = int(round(window_s / float(np.median(np.diff(time_s)))))
    if frames < 2:
        return share
    smooth = uniform_filter1d(share, size=frames, axis=0, mode="nearest")
    return smooth / smooth.sum(axis=1, keepdims=True)


def residual_on_feet(
    model: mujoco.MjModel, free: InverseDynamicsResult, feet: list[tuple[int, ...]], at_contact: bool = False
) -> AppliedLoads:
    """The root residual of ``free`` (inverse dynamics without loads) as loads on the feet:
    the whole wrench at each foot body's origin, or (``at_contact``) the force alone at each
    foot's contact patch, support judged by the soles (:func:`supporting_shares`) and handed
    over gradually (:func:`gradual_transfer`)."""
    qpos = free.qpos
    root = int(model.jnt_bodyid[0])
    data = mujoco.MjData(model)
    share = supporting_shares(model, qpos, feet, soles=at_contact)
    if at_contact:
        share = gradual_transfer(share, free.time_s)
    bodies = [foot[0] for foot in feet]
    geoms = [collision_geoms(model, list(foot)) for foot in feet]
    force = np.zeros((len(qpos), len(feet), 3))
    torque = np.zeros_like(force)
    point = np.zeros_like(force)
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        f = free.residual[t, :3]
        m_root = data.xmat[root].reshape(3, 3) @ free.residual[t, 3:6]
        for k, b in enumerate(bodies):
            force[t, k] = share[t, k] * f
            if at_contact and len(geoms[k]):
                point[t, k] = contact_point(model, data, geoms[k])
            else:
                point[t, k] = data.xpos[b]
                torque[t, k] = share[t, k] * (m_root - np.cross(data.xpos[b] - data.xpos[root], f))
    names = tuple(model.body(int(b)).name for b in bodies)
    return AppliedLoads(names, names, force, point, torque)


def contact_point(model: mujoco.MjModel, data: mujoco.MjData, geoms: np.ndarray) -> np.ndarray:
    """Centre (3,) of the contact patch of ``geoms`` (collision geoms of one foot) at ``data``'s pose.

    The geoms' bottom points: along each capsule's axis, five points lowered by its radius (a
    capsule can span heel to midfoot, so its centre is not where it touches first); the lowest
    point of any other geom at its centre. The patch: bottom points within :data:`PATCH_M` of the
    lowest; its centre is their mean in x, y at the lowest height.
    """
    bottoms = []
    low = geom_lowest_z(model, data, geoms)
    for g, z in zip(geoms, low, strict=True):
        centre = data.geom_xpos[g]
        if int(model.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_CAPSULE):
            radius, half = model.geom_size[g, :2]
            axis = data.geom_xmat[g].reshape(3, 3)[:, 2]
            for s in np.linspace(-1.0, 1.0, 5):
                p = centre + s * half * axis
                bottoms.append((p[0], p[1], p[2] - radius))
        else:
            bottoms.append((centre[0], centre[1], z))
    bottoms = np.asarray(bottoms)
    lowest = bottoms[:, 2].min()
    patch = bottoms[bottoms[:, 2] <= lowest + PATCH_M]
    return np.array([patch[:, 0].mean(), patch[:, 1].mean(), lowest])


def _foot_geoms(model: mujoco.MjModel, foot: tuple[int, ...]) -> np.ndarray:
    """All geoms (G,) of the foot's bodies."""
    return np.flatnonzero(np.isin(model.geom_bodyid, foot))
