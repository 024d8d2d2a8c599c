"""IK tasks: each adds weighted residual rows ``r`` to the least-squares cost ``0.5 * |r|^2``.

A task is small and stateless once built. The solver calls, per frame,
``task.residual(tree, q, target, prev)`` (the :class:`~musclerl.retarget.ik.term.Term` interface,
shared with the constraints) with ``q`` the full qpos (nq,) and ``target`` this frame's
slice of ``targets[task.name]`` (or ``None`` for tasks without per-frame targets). Tasks that
measure distances also give ``task.position_errors_m(...)`` (unweighted point errors in metres,
NaN where missing), which the solver folds into ``IKResult.residual_m``.

=====================  ==============================================  ====================
task                   cost added per frame                            target (per clip)
=====================  ==============================================  ====================
``MarkerTask``         ``sum_i w_i |p_i(q) - m_i|^2`` (m)              (T, M, 3) world, NaN=missing
                                                                       (+1 weight, +3 local point)
``FrameTask``          ``w |mask_p (p - p*)|^2 + w_r |mask_r log(R R*^T)|^2``  (T, 7) pos + quat wxyz
``OrientationTask``    ``sum_b w_b |log(R_b R*_b^T)|^2`` (rad)         (T, B, 4) quat wxyz, NaN=free
``CoordinateTask``     ``w sum_j (q_j - c_j)^2`` (rad or m)            optional (T, J), NaN=free
``PostureTask``        ``w sum_j (q_j - q_rest_j)^2`` over hinge/slide none
``ComTask``            ``w |mask (c(q) - c*)|^2``, c the whole-body     (T, 3) world, NaN=free
                       centre of mass (m)
=====================  ==============================================  ====================

All weights are multiplied in as ``sqrt(w)`` on the residual rows. A task may also give
``residual_jacobian(tree, q, target, prev, dq_dx)``: its rows and their Jacobian w.r.t. the solver's
variables in closed form (MarkerTask and OrientationTask from the tree's joint twists; CoordinateTask and
PostureTask, whose rows are linear in the coordinates, as rows of ``dq_dx``; ComTask as the
mass-weighted sum of the bodies' centre Jacobians); otherwise the
solver differentiates ``residual`` with ``jax.jacfwd`` (FK has an analytic JVP, so that is
cheap too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.errors import InputError, require
from musclerl.geometry.jax_rotations import log_jacobian_inverse
from musclerl.retarget.ik.kinematics import HINGE, SLIDE, KinematicTree, mat_log, quat_to_mat
from musclerl.retarget.ik.term import Previous, Term


class Task(Term):
    """A :class:`~musclerl.retarget.ik.term.Term` that always adds rows (``prev`` is unused by
    every task here) and may measure point errors. ``name`` keys its per-frame targets."""

    name: str = "task"
    target_required: bool = True

    def residual(
        self, tree: KinematicTree, q: jnp.ndarray, target: jnp.ndarray | None, prev: Previous
    ) -> jnp.ndarray:
        raise NotImplementedError

    def position_errors_m(
        self, tree: KinematicTree, q: jnp.ndarray, target: jnp.ndarray | None
    ) -> jnp.ndarray | None:
        """Unweighted point errors (k,) in metres, NaN where the target is missing; None if the
        task has no positional meaning."""
        return None


class MarkerTask(Task):
    """Markers fixed on bodies should sit on measured positions.

    Args:
        tree: the kinematic tree (must contain ``bodies``).
        bodies: (M,) body name of each marker.
        local_points_m: (M, 3) marker positions in their body frames, metres; None: they come
            with the targets (last 3 of each marker's row), so problems whose markers differ
            only in placement (per-clip calibrated sites) share one compiled solver.
        weights: (M,) non-negative weights (OpenSim IK setup ``<weight>`` values fit here).
        name: key of the (T, M, 3) world-frame targets; a marker with any NaN coordinate in a
            frame is ignored in that frame.
        frame_weights: targets are (T, M, 4) instead: position (3) then a non-negative weight
            multiplier (NaN = ignored) applied on top of ``weights``. Weights then change with
            the targets, without building (and compiling) a new problem.

    A target row per marker is ``(x, y, z[, weight multiplier][, local x, y, z])``.
    """

    def __init__(
        self,
        tree: KinematicTree,
        bodies: Sequence[str],
        local_points_m: np.ndarray | None,
        weights: np.ndarray | Sequence[float] | None = None,
        name: str = "markers",
        frame_weights: bool = False,
    ):
        local = None if local_points_m is None else np.asarray(local_points_m, dtype=np.float64)
        require(
            local is None or (local.ndim == 2 and local.shape == (len(bodies), 3)),
            name,
            f"local_points_m must be ({len(bodies)}, 3), got {None if local is None else local.shape}",
        )
        w = np.ones(len(bodies)) if weights is None else np.asarray(weights, dtype=np.float64)
        require(
            w.shape == (len(bodies),) and bool(np.all(w >= 0)) and bool(np.all(np.isfinite(w))),
            name,
            "weights must be (M,) finite and non-negative",
        )
        self.name = name
        self.body_names = tuple(bodies)
        self.body_ids = np.array([tree.body_index(b) for b in bodies], dtype=np.int64)
        self.local_points_m = local
        self.sqrt_w = np.sqrt(w)
        self.frame_weights = bool(frame_weights)

    def target_shape(self, tree: KinematicTree) -> tuple[int, ...]:
        return (len(self.body_ids), 3 + int(self.frame_weights) + 3 * (self.local_points_m is None))

    def local_points(self, target):
        """Marker positions (..., M, 3) in their body frames for ``target`` (..., M, k): the
        fixed ``local_points_m``, or the target's last 3 columns when they come with it."""
        return target[..., -3:] if self.local_points_m is None else self.local_points_m

    def positions(
        self, tree: KinematicTree, q: jnp.ndarray, target: jnp.ndarray | None = None
    ) -> jnp.ndarray:
        """Model marker positions (M, 3), world frame (``target``: this frame's, needed when
        the local points come with it)."""
        return tree.point_positions(q, self.body_ids, self.local_points(target))

    def points_and_weights(self, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One frame's target positions (..., M, 3) (NaN = missing) and weights (..., M)
        (``weights`` times the frame's multipliers with ``frame_weights``; 0 where missing).
        NumPy (host side: the solver's cold-start alignment)."""
        target = np.asarray(target, dtype=np.float64)
        points = target[..., :3]
        w = self.sqrt_w**2
        if self.frame_weights:
            mult = target[..., 3]
            w = w * np.where(np.isfinite(mult), mult, 0.0)
        return points, np.where(np.all(np.isfinite(points), axis=-1), w, 0.0)

    def _scale(self, target: jnp.ndarray, dtype) -> tuple[jnp.ndarray, jnp.ndarray]:
        """(valid (M, 1), sqrt weight per row (M, 1), 0 where missing) of one frame's target."""
        points = target[..., :3]
        valid = jnp.all(jnp.isfinite(points), axis=-1, keepdims=True)
        sqrt_w = jnp.asarray(self.sqrt_w, dtype)[:, None]
        if self.frame_weights:
            mult = target[..., 3:4]
            sqrt_w = sqrt_w * jnp.sqrt(jnp.where(jnp.isfinite(mult) & (mult > 0), mult, 0.0))
        return valid, jnp.where(valid, sqrt_w, 0.0)

    def residual(self, tree, q, target, prev):
        valid, scale = self._scale(target, q.dtype)
        diff = self.positions(tree, q, target) - jnp.where(valid, target[..., :3], 0.0)
        return jnp.where(valid, diff * scale, 0.0).reshape(-1)

    def residual_jacobian(self, tree, q, target, prev, dq_dx):
        pts, jac = tree.points_and_jacobian(q, self.body_ids, self.local_points(target), dq_dx)
        valid, scale = self._scale(target, q.dtype)  # (M, 1) each
        r = (pts - jnp.where(valid, target[..., :3], 0.0)) * scale
        return r.reshape(-1), (jac * scale[:, :, None]).reshape(len(pts) * 3, -1)

    def position_errors_m(self, tree, q, target):
        return jnp.linalg.norm(self.positions(tree, q, target) - target[..., :3], axis=-1)


class FrameTask(Task):
    """A body or site frame should reach a pose.

    Position rows: ``sqrt(weight) * pos_mask * (p - p*)`` (world axes, metres). Rotation rows:
    ``sqrt(rot_weight) * rot_mask * log(R R*^T)`` (world-frame rotation vector, rad). Targets are
    (T, 7): position (3) then quaternion (w, x, y, z); NaN position or NaN quaternion rows are
    ignored in that frame. Several FrameTasks (several links) are solved jointly.
    """

    def __init__(
        self,
        tree: KinematicTree,
        frame: str,
        pos_mask=(1.0, 1.0, 1.0),
        rot_mask=(1.0, 1.0, 1.0),
        weight: float = 1.0,
        rot_weight: float | None = None,
        name: str | None = None,
    ):
        require(
            weight >= 0 and (rot_weight is None or rot_weight >= 0), frame, "weights must be non-negative"
        )
        self.name = name or f"frame:{frame}"
        self.frame = frame
        self.body, self.local_pos, self.local_quat = tree.frame(frame)
        self.pos_scale = np.sqrt(weight) * np.asarray(pos_mask, dtype=np.float64)
        self.rot_scale = np.sqrt(weight if rot_weight is None else rot_weight) * np.asarray(
            rot_mask, dtype=np.float64
        )

    def target_shape(self, tree):
        return (7,)

    def pose(self, tree: KinematicTree, q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """World position (3,) and rotation (3, 3) of the frame."""
        pos, rot = tree.fk(q)
        local_rot = quat_to_mat(jnp.asarray(self.local_quat, q.dtype))
        return (
            pos[self.body] + rot[self.body] @ jnp.asarray(self.local_pos, q.dtype),
            rot[self.body] @ local_rot,
        )

    def residual(self, tree, q, target, prev):
        p, rot = self.pose(tree, q)
        pos_ok = jnp.all(jnp.isfinite(target[:3]))
        rot_ok = jnp.all(jnp.isfinite(target[3:]))
        quat = jnp.where(rot_ok, target[3:], jnp.array([1.0, 0.0, 0.0, 0.0], q.dtype))
        rot_target = quat_to_mat(quat / jnp.linalg.norm(quat))
        dp = jnp.where(pos_ok, (p - jnp.where(pos_ok, target[:3], 0.0)) * self.pos_scale, 0.0)
        dr = jnp.where(rot_ok, mat_log(rot @ rot_target.T) * self.rot_scale, 0.0)
        return jnp.concatenate([dp, dr])

    def position_errors_m(self, tree, q, target):
        if not np.any(self.pos_scale):
            return None
        return jnp.linalg.norm(self.pose(tree, q)[0] - target[:3])[None]


class OrientationTask(Task):
    """Bodies should take world orientations (segment directions and twists of a source skeleton).

    Rows per body: ``sqrt(w_b) log(R_b R*_b^T)`` (world-frame rotation vector, rad) for the body
    rotation ``R_b`` (body -> world) and its target ``R*_b``. Targets are (T, B, 4) quaternions
    (w, x, y, z), body -> world; a NaN quaternion leaves that body free in that frame (an
    all-NaN clip adds only zero rows, so one compiled problem serves with and without).
    Closed-form Jacobian: the bodies' world angular-velocity Jacobian ``W`` (3, n) from the joint
    twists, through the inverse left Jacobian of SO(3) at the error ``e``:
    ``d log(R R*^T) = J_l^{-1}(e) W dx``.

    Args:
        tree: the kinematic tree (must contain ``bodies``).
        bodies: (B,) body names.
        weights: (B,) non-negative weights per rad^2 (a marker's weight is per m^2).
        name: key of the targets.
    """

    def __init__(
        self,
        tree: KinematicTree,
        bodies: Sequence[str],
        weights: np.ndarray | Sequence[float],
        name: str = "orientations",
    ):
        w = np.asarray(weights, dtype=np.float64)
        require(
            w.shape == (len(bodies),) and bool(np.all(w >= 0)) and bool(np.all(np.isfinite(w))),
            name,
            "weights must be (B,) finite and non-negative",
        )
        self.name = name
        self.body_names = tuple(bodies)
        self.body_ids = np.array([tree.body_index(b) for b in bodies], dtype=np.int64)
        self.sqrt_w = np.sqrt(w)

    def target_shape(self, tree: KinematicTree) -> tuple[int, ...]:
        return (len(self.body_ids), 4)

    def _errors(self, rot: jnp.ndarray, target: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Rotation errors (B, 3) of body rotations (B, 3, 3) and the valid mask (B, 1)."""
        valid = jnp.all(jnp.isfinite(target), axis=-1, keepdims=True)
        quat = jnp.where(valid, target, jnp.array([1.0, 0.0, 0.0, 0.0], rot.dtype))
        goal = quat_to_mat(quat / jnp.linalg.norm(quat, axis=-1, keepdims=True))
        return mat_log(rot @ jnp.swapaxes(goal, -1, -2)), valid

    def residual(self, tree, q, target, prev):
        rot = tree.fk(q)[1][self.body_ids]
        err, valid = self._errors(rot, target)
        return jnp.where(valid, err * jnp.asarray(self.sqrt_w, q.dtype)[:, None], 0.0).reshape(-1)

    def residual_jacobian(self, tree, q, target, prev, dq_dx):
        rot, w = tree.rotations_and_jacobian(q, self.body_ids, dq_dx)  # (B, 3, 3), (B, 3, n)
        err, valid = self._errors(rot, target)
        scale = jnp.where(valid, jnp.asarray(self.sqrt_w, q.dtype)[:, None], 0.0)  # (B, 1)
        jac = log_jacobian_inverse(err) @ w * scale[:, :, None]
        return (err * scale).reshape(-1), jac.reshape(3 * len(self.body_ids), -1)

    def rotation_errors_rad(self, tree: KinematicTree, q: jnp.ndarray, target: jnp.ndarray) -> jnp.ndarray:
        """Unweighted angles (B,) between the bodies and their targets, NaN where missing."""
        err, valid = self._errors(tree.fk(q)[1][self.body_ids], target)
        return jnp.where(valid[:, 0], jnp.linalg.norm(err, axis=-1), jnp.nan)


def _scalar_joint_qadr(model: mujoco.MjModel, names: Sequence[str], source: str) -> np.ndarray:
    out = []
    for name in names:
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            raise InputError(source, f"no joint named {name!r} in the model")
        if int(model.jnt_type[j]) not in (HINGE, SLIDE):
            raise InputError(source, f"joint {name!r} is not a hinge or slide joint")
        out.append(int(model.jnt_qposadr[j]))
    return np.array(out, dtype=np.int64)


class CoordinateTask(Task):
    """Coordinates (hinge rad, slide m) should take given values (OpenSim "coordinate tasks").

    ``values`` maps joint name -> value. If ``targets[name]`` is given it overrides the values
    per frame: (T, J) in the order of ``values``, NaN = no target for that coordinate and frame.
    """

    def __init__(self, values: Mapping[str, float], weight: float = 1.0, name: str = "coordinates"):
        require(len(values) > 0, name, "needs at least one coordinate")
        require(weight >= 0, name, "weight must be non-negative")
        self.name = name
        self.joint_names = tuple(values)
        self.values = np.array([float(v) for v in values.values()])
        self.sqrt_w = float(np.sqrt(weight))
        self.target_required = False

    def target_shape(self, tree):
        return (len(self.joint_names),)

    def residual(self, tree, q, target, prev):
        return self.residual_jacobian(tree, q, target, prev, None)[0]

    def residual_jacobian(self, tree, q, target, prev, dq_dx):
        """Rows ``sqrt(w) (q_j - c_j)`` (0 where the target is NaN); their Jacobian is the rows
        of ``dq_dx`` (None: rows only)."""
        qadr = _scalar_joint_qadr(tree.model, self.joint_names, self.name)
        goal = jnp.asarray(self.values, q.dtype) if target is None else target
        ok = jnp.isfinite(goal)
        r = jnp.where(ok, (q[qadr] - jnp.where(ok, goal, 0.0)) * self.sqrt_w, 0.0)
        return r, None if dq_dx is None else jnp.where(ok[:, None], dq_dx[qadr] * self.sqrt_w, 0.0)


class PostureTask(Task):
    """Rest-pose regulariser: every hinge/slide coordinate of the tree pulled towards ``q_rest``
    (nq,) with ``weight``; it keeps redundant coordinates (those no marker sees) still."""

    def __init__(self, q_rest: np.ndarray, weight: float = 1e-4, name: str = "posture"):
        require(weight >= 0, name, "weight must be non-negative")
        self.name = name
        self.q_rest = np.asarray(q_rest, dtype=np.float64)
        self.sqrt_w = float(np.sqrt(weight))

    def residual(self, tree, q, target, prev):
        return self.residual_jacobian(tree, q, target, prev, None)[0]

    def residual_jacobian(self, tree, q, target, prev, dq_dx):
        """Rows ``sqrt(w) (q_j - q_rest_j)``; their Jacobian is the rows of ``dq_dx`` (None:
        rows only)."""
        require(
            self.q_rest.shape == (tree.nq,),
            self.name,
            f"q_rest must be ({tree.nq},), got {self.q_rest.shape}",
        )
        qadr = np.array([j.qpos_adr for j in tree.all_joints() if j.type in (HINGE, SLIDE)], dtype=np.int64)
        r = (q[qadr] - jnp.asarray(self.q_rest[qadr], q.dtype)) * self.sqrt_w
        return r, None if dq_dx is None else dq_dx[qadr] * self.sqrt_w


class ComTask(Task):
    """The whole-body centre of mass should reach a target (world frame, m).

    ``c(q) = sum_b m_b x_b(q) / M`` over the bodies' inertial centres ``x_b`` (``body_ipos`` in
    each body frame), so the tree must hold every body with mass (build it from all bodies).
    Rows ``sqrt(w) (c - c*)`` per axis; a NaN target axis is free in that frame, so (T, 3)
    targets with NaN heights move the centre of mass horizontally only. Closed-form Jacobian:
    the mass-weighted sum of the centres' point Jacobians (what ``mj_jacSubtreeCom`` gives for
    the root).
    """

    def __init__(self, tree: KinematicTree, weight: float = 1.0, name: str = "com"):
        require(weight >= 0, name, "weight must be non-negative")
        model = tree.model
        mass = np.asarray(model.body_mass[tree.model_body_ids], dtype=np.float64)
        total = float(mujoco.mj_getTotalmass(model))
        require(
            total > 0 and abs(mass.sum() - total) <= 1e-9 * total,
            name,
            f"the kinematic tree holds {mass.sum():.3f} of the model's {total:.3f} kg: "
            "build it from all bodies",
        )
        self.name = name
        self.body_ids = np.arange(tree.nbody, dtype=np.int64)
        self.local_points_m = np.asarray(model.body_ipos[tree.model_body_ids], dtype=np.float64)
        self.mass_frac = mass / mass.sum()
        self.sqrt_w = float(np.sqrt(weight))

    def target_shape(self, tree: KinematicTree) -> tuple[int, ...]:
        return (3,)

    def com(self, tree: KinematicTree, q: jnp.ndarray) -> jnp.ndarray:
        """Whole-body centre of mass (3,), world frame, m."""
        pts = tree.point_positions(q, self.body_ids, self.local_points_m)
        return jnp.asarray(self.mass_frac, pts.dtype) @ pts

    def residual(self, tree, q, target, prev):
        ok = jnp.isfinite(target)
        return jnp.where(ok, (self.com(tree, q) - jnp.where(ok, target, 0.0)) * self.sqrt_w, 0.0)

    def residual_jacobian(self, tree, q, target, prev, dq_dx):
        pts, jac = tree.points_and_jacobian(q, self.body_ids, self.local_points_m, dq_dx)
        frac = jnp.asarray(self.mass_frac, pts.dtype)
        com, com_jac = frac @ pts, jnp.einsum("b,bin->in", frac, jac)
        ok = jnp.isfinite(target)
        r = jnp.where(ok, (com - jnp.where(ok, target, 0.0)) * self.sqrt_w, 0.0)
        return r, jnp.where(ok[:, None], com_jac * self.sqrt_w, 0.0)

    def position_errors_m(self, tree, q, target):
        ok = jnp.isfinite(target)
        diff = jnp.where(ok, self.com(tree, q) - jnp.where(ok, target, 0.0), 0.0)
        return jnp.where(jnp.any(ok), jnp.linalg.norm(diff), jnp.nan)[None]
