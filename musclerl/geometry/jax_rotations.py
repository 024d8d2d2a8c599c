"""Rotation helpers in JAX: quaternions (w, x, y, z), 3x3 matrices, rotation vectors.

Small batched 3x3 products are written as broadcast multiply-adds (:func:`mm`, :func:`mv`):
XLA on CPU runs tiny batched ``dot``s far slower than fused elementwise code.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from musclerl.geometry import arrays as geometry


def quat_mul(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """Hamilton product of quaternions (..., 4) in (w, x, y, z)."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_left_matrix(a: jnp.ndarray) -> jnp.ndarray:
    """(4, 4) matrix ``L(a)`` with ``quat_mul(a, b) == L(a) @ b`` for a quaternion ``a`` (4,)."""
    w, x, y, z = a[0], a[1], a[2], a[3]
    return jnp.stack(
        [
            jnp.stack([w, -x, -y, -z]),
            jnp.stack([x, w, -z, y]),
            jnp.stack([y, z, w, -x]),
            jnp.stack([z, -y, x, w]),
        ]
    )


def quat_rotate(quat: jnp.ndarray, vec: jnp.ndarray) -> jnp.ndarray:
    """Rotate vectors (..., 3) by unit quaternions (..., 4)."""
    w, u = quat[..., :1], quat[..., 1:]
    t = 2.0 * jnp.cross(u, vec)
    return vec + w * t + jnp.cross(u, t)


def quat_to_mat(quat: jnp.ndarray) -> jnp.ndarray:
    """Unit quaternions (..., 4) -> rotation matrices (..., 3, 3) (JAX)."""
    return geometry.quat_to_mat(quat, jnp)


def quat_exp(rotvec: jnp.ndarray) -> jnp.ndarray:
    """Rotation vector (..., 3) in rad -> unit quaternion (..., 4); smooth at zero."""
    angle_sq = jnp.sum(rotvec * rotvec, axis=-1, keepdims=True)
    small = angle_sq < 1e-12
    angle = jnp.sqrt(jnp.where(small, 1.0, angle_sq))
    half = 0.5 * angle
    # sin(a/2)/a, with its Taylor expansion near zero so gradients stay finite.
    scale = jnp.where(small, 0.5 - angle_sq / 48.0, jnp.sin(half) / angle)
    cos = jnp.where(small, 1.0 - angle_sq / 8.0, jnp.cos(half))
    return jnp.concatenate([cos, scale * rotvec], axis=-1)


def mat_log(rot: jnp.ndarray) -> jnp.ndarray:
    """Rotation matrices (..., 3, 3) -> rotation vectors (..., 3) in rad (angle < pi)."""
    skew = jnp.stack(
        [rot[..., 2, 1] - rot[..., 1, 2], rot[..., 0, 2] - rot[..., 2, 0], rot[..., 1, 0] - rot[..., 0, 1]],
        axis=-1,
    )
    cos = jnp.clip((jnp.trace(rot, axis1=-2, axis2=-1) - 1.0) * 0.5, -1.0, 1.0)
    sin = 0.5 * jnp.linalg.norm(skew + 1e-30, axis=-1)
    angle = jnp.arctan2(sin, cos)
    small = angle < 1e-6
    factor = jnp.where(
        small, 0.5 + angle * angle / 12.0, angle / (2.0 * jnp.where(small, 1.0, jnp.sin(angle)))
    )
    return factor[..., None] * skew


def log_jacobian_inverse(rotvec: jnp.ndarray) -> jnp.ndarray:
    """Inverse left Jacobian of SO(3) (..., 3, 3) at rotation vectors ``e`` (..., 3), rad:
    ``log(exp(d) exp(e)) = e + J_l^{-1}(e) d`` to first order in ``d`` (a world-frame
    rotation applied on the left). ``I - [e]/2 + (1/a^2 - (1 + cos a) / (2 a sin a)) [e]^2``,
    with its Taylor coefficient 1/12 near zero."""
    x, y, z = rotvec[..., 0], rotvec[..., 1], rotvec[..., 2]
    zero = jnp.zeros_like(x)
    skew = jnp.stack(
        [jnp.stack([zero, -z, y], -1), jnp.stack([z, zero, -x], -1), jnp.stack([-y, x, zero], -1)], -2
    )
    angle_sq = jnp.sum(rotvec * rotvec, axis=-1)
    small = angle_sq < 1e-8
    angle = jnp.sqrt(jnp.where(small, 1.0, angle_sq))
    coeff = jnp.where(
        small,
        1.0 / 12.0 + angle_sq / 720.0,
        1.0 / jnp.where(small, 1.0, angle_sq) - (1.0 + jnp.cos(angle)) / (2.0 * angle * jnp.sin(angle)),
    )
    eye = jnp.eye(3, dtype=rotvec.dtype)
    return eye - 0.5 * skew + coeff[..., None, None] * (skew @ skew)


def mat_to_quat(rot: jnp.ndarray) -> jnp.ndarray:
    """Rotation matrices (..., 3, 3) -> unit quaternions (..., 4), w >= 0, robust at any angle."""
    m = rot
    tr = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    cands = jnp.stack(
        [
            jnp.stack(
                [
                    1.0 + tr,
                    m[..., 2, 1] - m[..., 1, 2],
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 1, 0] - m[..., 0, 1],
                ],
                -1,
            ),
            jnp.stack(
                [
                    m[..., 2, 1] - m[..., 1, 2],
                    1.0 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
                    m[..., 0, 1] + m[..., 1, 0],
                    m[..., 0, 2] + m[..., 2, 0],
                ],
                -1,
            ),
            jnp.stack(
                [
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 0, 1] + m[..., 1, 0],
                    1.0 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
                    m[..., 1, 2] + m[..., 2, 1],
                ],
                -1,
            ),
            jnp.stack(
                [
                    m[..., 1, 0] - m[..., 0, 1],
                    m[..., 0, 2] + m[..., 2, 0],
                    m[..., 1, 2] + m[..., 2, 1],
                    1.0 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2],
                ],
                -1,
            ),
        ],
        axis=-2,
    )
    pick = jnp.argmax(jnp.stack([tr, m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], -1), axis=-1)
    best = jnp.take_along_axis(cands, pick[..., None, None], axis=-2)[..., 0, :]
    best = best * jnp.where(best[..., :1] < 0, -1.0, 1.0)
    return best / jnp.linalg.norm(best, axis=-1, keepdims=True)


def mm(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """Batched 3x3 matrix product (..., 3, 3) as one ``einsum`` (a batched ``dot``): on XLA's
    CPU backend as fast as a broadcast multiply and a sum over the 3-long axis in the solver's
    8-chain loops, and about twice as fast over the 256-frame batches of the error measurement
    (the reduction over a middle axis vectorises badly)."""
    return jnp.einsum("...ij,...jk->...ik", a, b)


def mv(a: jnp.ndarray, v: jnp.ndarray) -> jnp.ndarray:
    """Batched 3x3 matrix times vector (..., 3), as :func:`mm` does it."""
    return jnp.einsum("...ij,...j->...i", a, v)


def quat_rate_matrix(quat: jnp.ndarray) -> jnp.ndarray:
    """(3, 4) matrix mapping d(quat) to the body-frame angular velocity of ``normalize(quat)``:
    ``2 vec(conj(u) (x) du)`` with ``u`` the unit quaternion (the radial part drops out)."""
    w, x, y, z = quat / jnp.linalg.norm(quat)
    rows = jnp.stack([jnp.stack([-x, w, z, -y]), jnp.stack([-y, -z, w, x]), jnp.stack([-z, y, -x, w])])
    return 2.0 * rows / jnp.linalg.norm(quat)


def normalize(quat: jnp.ndarray) -> jnp.ndarray:
    """Unit quaternions: ``quat`` (..., 4) divided by its norm along the last axis."""
    return quat / jnp.linalg.norm(quat, axis=-1, keepdims=True)


def kabsch(src_m: np.ndarray, dst_m: np.ndarray, weights: np.ndarray | None = None):
    """Best rigid motion ``dst ~ rot @ (src - src_c) + dst_c`` of points src_m, dst_m (N, 3)
    (weighted least squares, proper rotation); returns rot (3, 3), src_c (3,), dst_c (3,)."""
    w = np.ones(len(src_m)) if weights is None else np.asarray(weights, dtype=float)
    src_c, dst_c = w @ src_m / w.sum(), w @ dst_m / w.sum()
    u, _, vt = np.linalg.svd(((src_m - src_c) * w[:, None]).T @ (dst_m - dst_c))
    sign = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1.0, 1.0, sign]) @ u.T, src_c, dst_c
