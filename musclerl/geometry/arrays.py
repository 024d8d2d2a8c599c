"""Small array-namespace-agnostic geometry (numpy or jax.numpy as ``xp``), batched over N.

Quaternions are MuJoCo's (w, x, y, z); rotation matrices map body to world.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def quat_to_mat(q: Any, xp: Any) -> Any:
    """(..., 4) quaternions (normalised here) -> (..., 3, 3) rotation matrices.

    The one quaternion-to-matrix formula for jax code (the IK's :mod:`musclerl.geometry.jax_rotations`
    uses it too); numpy code outside ``xp`` functions uses
    :func:`musclerl.geometry.rotations.quat_wxyz_to_matrix`.
    """
    q = q / xp.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    return xp.stack([xp.stack(r, axis=-1) for r in rows], axis=-2)


def heading_cos_sin(rot: Any, xp: Any) -> tuple[Any, Any]:
    """Yaw of the body x axis projected on the ground: (cos, sin), each (N,)."""
    hx, hy = rot[:, 0, 0], rot[:, 1, 0]
    norm = xp.sqrt(hx * hx + hy * hy) + 1e-9
    return hx / norm, hy / norm


def to_heading_frame(vec: Any, cos: Any, sin: Any, xp: Any) -> Any:
    """Rotate world vectors (N, ..., 3) by minus the heading yaw (cos, sin each (N,))."""
    shape = (-1,) + (1,) * (vec.ndim - 2)
    c, s = cos.reshape(shape), sin.reshape(shape)
    x, y = vec[..., 0], vec[..., 1]
    return xp.stack([c * x + s * y, -s * x + c * y, vec[..., 2]], axis=-1)


def rot6d(mat: Any) -> Any:
    """First two columns of rotation matrices (..., 3, 3) -> (..., 6)."""
    return mat[..., :, :2].reshape(mat.shape[:-2] + (6,))


def rotation_angle(rel: Any, xp: Any) -> Any:
    """Angle in rad of rotation matrices (..., 3, 3)."""
    trace = rel[..., 0, 0] + rel[..., 1, 1] + rel[..., 2, 2]
    return xp.arccos(xp.clip((trace - 1.0) / 2.0, -1.0, 1.0))


def ground_height(xy: Any, terrain: dict[str, Any] | None, xp: Any) -> Any:
    """Bilinear ground height (...,) under world points ``xy`` (..., 2); 0 without terrain.

    ``terrain`` holds ``height_m`` (R, Cc), ``origin_m`` (2,), ``cell_m`` () as ``xp`` arrays;
    the same convention as :meth:`musclerl.motion.Terrain.height_at` (clamped outside the grid).
    """
    if terrain is None:
        return xy[..., 0] * 0.0
    h = terrain["height_m"]
    rows, cols = h.shape
    gx = xp.clip((xy[..., 0] - terrain["origin_m"][0]) / terrain["cell_m"], 0, cols - 1)
    gy = xp.clip((xy[..., 1] - terrain["origin_m"][1]) / terrain["cell_m"], 0, rows - 1)
    c0 = xp.minimum(xp.floor(gx).astype(xp.int32), cols - 2)
    r0 = xp.minimum(xp.floor(gy).astype(xp.int32), rows - 2)
    fx, fy = gx - c0, gy - r0
    top = h[r0, c0] * (1 - fx) + h[r0, c0 + 1] * fx
    bottom = h[r0 + 1, c0] * (1 - fx) + h[r0 + 1, c0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def runs(flags: Any) -> list[tuple[int, int, bool]]:
    """(start, end, value) runs of a 1-D bool array (numpy), end exclusive, in order."""
    flags = np.asarray(flags, dtype=bool)
    edges = np.flatnonzero(np.diff(flags.astype(np.int8))) + 1
    bounds = [0, *edges.tolist(), len(flags)]
    return [(a, b, bool(flags[a])) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def site_velocity(cvel: Any, com: Any, site_pos: Any, xp: Any) -> Any:
    """World linear velocity (N, S, 3) of points ``site_pos`` (N, S, 3) fixed to bodies.

    ``cvel`` (N, S, 6) is MuJoCo's com-based spatial velocity (angular, linear) of each point's
    body, taken at ``com`` (N, S, 3), the subtree com of the body's root (``subtree_com[rootid]``);
    as ``mj_objectVelocity``: v = lin + ang x (p - com).
    """
    w, r = cvel[..., :3], site_pos - com
    cross = xp.stack(
        [
            w[..., 1] * r[..., 2] - w[..., 2] * r[..., 1],
            w[..., 2] * r[..., 0] - w[..., 0] * r[..., 2],
            w[..., 0] * r[..., 1] - w[..., 1] * r[..., 0],
        ],
        axis=-1,
    )
    return cvel[..., 3:] + cross
