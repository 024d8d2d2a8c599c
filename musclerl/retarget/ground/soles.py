"""Sole points of a model's feet: where a foot meets the ground, as points fixed in the foot bodies.

Shared by the keypoint (:mod:`musclerl.retarget.keypoints.pipeline`) and marker
(:mod:`musclerl.retarget.markers.ground`) pipelines. Per foot, :data:`SOLE_POINTS` are the
rearmost, foremost, outermost and innermost points of the foot's collision geoms on their lowest
level at ``qpos0`` (the rest pose stands the feet flat); positions are world metres, Z up.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.ground.surface import GeomSurface
from musclerl.models.geoms import collision_geoms
from musclerl.retarget import correspondence as corr

#: Sole points per foot; the first takes the source's heel contact, the others its toe contact.
SOLE_POINTS = ("heel", "toe_tip", "lateral", "medial")


def rest_points(model: mujoco.MjModel, key: str) -> dict[str, np.ndarray]:
    """World positions (3,) at ``qpos0`` of the landmarks of registered model ``key``'s profile."""
    table = corr.model_profile(key).landmarks
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out = {}
    for lm, (body, local) in table.items():
        b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if b < 0:
            raise InputError(key, f"model has no body '{body}' for landmark '{lm}'")
        offset = np.zeros(3) if local is None else np.asarray(local, dtype=float)
        out[lm] = data.xpos[b] + data.xmat[b].reshape(3, 3) @ offset
    return out


def sole_points(
    model: mujoco.MjModel, key: str, rest: dict[str, np.ndarray]
) -> dict[str, tuple[int, np.ndarray]]:
    """Back and front of each sole at ``qpos0``: landmark -> (body id, point in body frame).

    The points are the rearmost, foremost, outermost and innermost of the geom surface samples
    within 5 mm of the foot's lowest, dropped onto the lowest level (the model's rest pose stands
    the foot flat). Four points on the ground hold the foot flat: no pitch, no roll.
    """
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out = {}
    for side, bodies in corr.model_profile(key).feet.items():
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies]
        geoms = collision_geoms(model, [i for i in ids if i >= 0])
        if len(geoms) == 0:
            raise InputError(key, f"the {side} foot has no collision geoms to stand on")
        surface = GeomSurface.of(model, geoms)
        pts = surface.world_points(data)
        low = pts[:, 2] < pts[:, 2].min() + 0.005
        forward = rest[f"toe_{side}"] - rest[f"ankle_{side}"]
        forward[2] = 0.0
        forward /= np.linalg.norm(forward)
        outward = np.cross([0.0, 0.0, 1.0], forward) * (1.0 if side == "l" else -1.0)
        along, across = pts @ forward, pts @ outward
        for name, key_values, pick in (
            ("heel", along, np.argmin),
            ("toe_tip", along, np.argmax),
            ("lateral", across, np.argmax),
            ("medial", across, np.argmin),
        ):
            i = np.flatnonzero(low)[pick(key_values[low])]
            body = int(model.geom_bodyid[surface.geom_ids[surface.owner[i]]])
            # On the foot's lowest plane: these points on the ground put no geom below it.
            point = np.array([pts[i, 0], pts[i, 1], pts[:, 2].min()])
            local = data.xmat[body].reshape(3, 3).T @ (point - data.xpos[body])
            out[f"{name}_{side}"] = (body, local)
    return out


def sole_site_name(point: str, side: str) -> str:
    """Name of sole point ``point`` (of :data:`SOLE_POINTS`) of foot ``side`` as a site/contact."""
    return f"sole_{point}_{side}"


def model_soles(model: mujoco.MjModel, key: str) -> tuple[tuple[str, ...], np.ndarray, list]:
    """The sole points of ``model`` (the registered model ``key``, for its profile), foot-major
    (left, then right): names (P,), foot index (P,) (0 left, 1 right) and (body id, (3,) point in
    the body frame)."""
    soles = sole_points(model, key, rest_points(model, key))
    names, foot, points = [], [], []
    for f, side in enumerate(corr.SIDES):
        for p in SOLE_POINTS:
            names.append(sole_site_name(p, side))
            foot.append(f)
            points.append(soles[f"{p}_{side}"])
    return tuple(names), np.asarray(foot, dtype=int), points


def point_positions_m(model: mujoco.MjModel, qpos: np.ndarray, points: list) -> np.ndarray:
    """World positions (T, P, 3) over poses ``qpos`` (T, nq) of body-fixed ``points`` (body, (3,))."""
    data = mujoco.MjData(model)
    bodies = np.array([b for b, _ in points], dtype=int)
    local = np.array([p for _, p in points], dtype=float).reshape(-1, 3)
    out = np.zeros((len(qpos), len(points), 3))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[t] = data.xpos[bodies] + np.einsum("pij,pj->pi", data.xmat[bodies].reshape(-1, 3, 3), local)
    return out
