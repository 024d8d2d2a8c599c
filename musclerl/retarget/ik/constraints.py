"""IK constraints: what the solver *holds* (not only penalises), through optional hooks.

The constraint interface
------------------------
A :class:`Constraint` is a :class:`~musclerl.retarget.ik.term.Term` (``target_shape``,
``residual``, ``residual_jacobian``, as the tasks) and may implement any of these; the solver
combines them all:

``qpos_bounds(tree) -> (lo (nq,), hi (nq,)) | None``
    Box bounds on hinge/slide coordinates (+-inf where none). The solver projects every
    candidate step onto the box and freezes coordinates that sit on a bound while the cost
    pushes outward (active set), so a solution is never outside them.
``dependent_dofs(tree) -> (k,) dof indices | None``
    Coordinates the solver must not move directly because :meth:`project` sets them.
``project(tree, q) -> q``  (JAX, differentiable)
    Maps any configuration onto the constraint manifold. Applied to every candidate and
    *inside* the Jacobian, so the chain rule sees e.g. the knee translations follow the knee
    angle (:class:`JointEqualities`).
``residual(tree, q, target, prev) -> (k,) | None``  (JAX)
    Extra least-squares rows, with this frame's ``targets[name]`` slice (None when not given)
    and ``prev`` the previous frame's solution (:class:`~musclerl.retarget.ik.term.Previous`,
    weight 0 when there is none). A terrain constraint adds its penetration rows here (e.g. ``sqrt(w) *
    relu(h(x, y) - z)`` per foot point, and stance feet held at their contact point), with the
    per-frame stance flags and contact points passed as its targets (``target_shape``).
    ``residual_jacobian(tree, q, target, prev, dq_dx)`` may give the rows with their Jacobian
    (k, n) in closed form, given ``dq_dx`` (nq, n); otherwise the solver uses ``jax.jacfwd``.
``finalize(problem, targets, result, resolve) -> IKResult``  (host)
    A pass over the solved clip: it may measure things (with MuJoCo C) and re-solve chosen
    frames through ``resolve(frames, q_init, q_prev, prev_weight)`` (see
    :meth:`musclerl.retarget.ik.solver.IKProblem.resolve_frames`). :class:`TendonContinuity` uses
    it to repair muscle-path jumps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.errors import require
from musclerl.geometry.jax_rotations import quat_left_matrix
from musclerl.models.couplings import couplings, polynomial
from musclerl.models.introspect import muscle_ids
from musclerl.retarget.ik.kinematics import BALL, FREE, HINGE, SLIDE, KinematicTree
from musclerl.retarget.ik.term import Term


class Constraint(Term):
    """A :class:`~musclerl.retarget.ik.term.Term` with the constraint hooks: every hook is optional
    (see the module docstring)."""

    name: str = "constraint"

    def qpos_bounds(self, tree: KinematicTree) -> tuple[np.ndarray, np.ndarray] | None:
        return None

    def dependent_dofs(self, tree: KinematicTree) -> np.ndarray | None:
        return None

    def project(self, tree: KinematicTree, q: jnp.ndarray) -> jnp.ndarray:
        return q

    def finalize(
        self,
        problem,
        targets: dict[str, np.ndarray],
        result,
        resolve: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]],
    ):
        """``problem``: the :class:`~musclerl.retarget.ik.solver.IKProblem` solved; ``result``: its
        :class:`~musclerl.retarget.ik.solver.IKResult`, returned (or a replaced copy). Left untyped:
        this module sits below the solver, which imports it."""
        return result


class JointLimits(Constraint):
    """Every limited hinge/slide coordinate the solver moves stays in ``jnt_range`` (held by
    projection and an active set). Coordinates eliminated by :class:`JointEqualities` follow their
    polynomial instead: myolegs' own knee polynomials leave their joints' ranges by up to 2.5e-4
    (rad or m) at some knee angles, a property of the model, so measure violations with
    ``violation(qs, skip_qadr=equalities.dep_qadr)``. Ball-joint cone limits are not handled:
    their joints are listed in ``ignored``."""

    name = "joint_limits"

    def __init__(self, model: mujoco.MjModel):
        lo = np.full(model.nq, -np.inf)
        hi = np.full(model.nq, np.inf)
        ignored = []
        for j in range(model.njnt):
            if not model.jnt_limited[j]:
                continue
            if int(model.jnt_type[j]) in (HINGE, SLIDE):
                adr = int(model.jnt_qposadr[j])
                lo[adr], hi[adr] = model.jnt_range[j]
            else:
                ignored.append(model.joint(j).name)
        self.lo, self.hi = lo, hi
        self.ignored = tuple(ignored)

    def qpos_bounds(self, tree):
        return self.lo, self.hi

    def violation(self, qs: np.ndarray, skip_qadr: np.ndarray | tuple = (), tol: float = 1e-9) -> np.ndarray:
        """Amount (T, nq) by which coordinates of ``qs`` (T, nq) leave their ranges (0 inside
        and at the ``skip_qadr`` addresses)."""
        qs = np.asarray(qs)
        out = np.maximum(np.maximum(self.lo - qs, qs - self.hi) - tol, 0.0)
        out[..., np.asarray(skip_qadr, dtype=np.int64)] = 0.0
        return out


class JointEqualities(Constraint):
    """The model's active joint equalities ``q1 - q1_0 = sum_k c_k (q2 - q2_0)^k`` (k <= 4; a
    constant when there is no ``joint2``), held exactly: ``q1`` is eliminated and recomputed from
    ``q2`` after every step (myolegs: the knee translations, rotations and patella follow
    ``knee_angle``). Non-joint equalities (connect, weld, tendon) are listed in ``ignored``."""

    name = "joint_equalities"

    def __init__(self, model: mujoco.MjModel):
        ignored = [
            model.eq(e).name or f"equality {e}"
            for e in range(model.neq)
            if model.eq_active0[e] and int(model.eq_type[e]) != int(mujoco.mjtEq.mjEQ_JOINT)
        ]
        coups = couplings(model, fixed=True)
        dep_q = [c.y_qpos for c in coups]
        dep_dof = [c.y_dof for c in coups]
        ind_q = [max(c.x_qpos, 0) for c in coups]  # a fixed joint reads qpos[0] times zero coefficients
        coef = [c.coef for c in coups]
        q0_dep = [c.y0 for c in coups]
        q0_ind = [c.x0 for c in coups]
        require(len(set(dep_q)) == len(dep_q), "model", "a joint is constrained by two equalities")
        require(
            not set(dep_q) & set(ind_q[i] for i, c in enumerate(coef) if np.any(c[1:])),
            "model",
            "chained joint equalities are not supported",
        )
        self.dep_qadr = np.array(dep_q, dtype=np.int64)
        self.dep_dofs = np.array(dep_dof, dtype=np.int64)
        self.ind_qadr = np.array(ind_q, dtype=np.int64)
        self.coef = np.array(coef, dtype=np.float64).reshape(-1, 5)
        self.q0_dep = np.array(q0_dep)
        self.q0_ind = np.array(q0_ind)
        self.ignored = tuple(ignored)

    def dependent_dofs(self, tree):
        return self.dep_dofs

    def dependent_values(self, q, xp=np):
        """Values (..., k) the dependent coordinates take for the independent ones in ``q``."""
        return self.q0_dep + polynomial(self.coef, q[..., self.ind_qadr] - self.q0_ind, xp)

    def project(self, tree, q):
        if self.dep_qadr.size == 0:
            return q
        return q.at[self.dep_qadr].set(self.dependent_values(q, jnp))

    def residual_max(self, qs: np.ndarray) -> float:
        """Largest |equality residual| over ``qs`` (T, nq) (rad or m); 0 without equalities."""
        if self.dep_qadr.size == 0:
            return 0.0
        qs = np.asarray(qs, dtype=np.float64)
        return float(np.max(np.abs(qs[..., self.dep_qadr] - self.dependent_values(qs, np))))


class Smoothness(Constraint):
    """Temporal smoothness: rows ``sqrt(weight) * (q - q_prev)`` over the tree's coordinates
    (hinge/slide rad or m, free-joint position m and rotation rad, ball rotation rad) against the
    previous frame's solution, so each frame stays close to its warm start unless the targets
    say otherwise. Cost added: ``weight * |q (-) q_prev|^2``."""

    name = "smoothness"

    def __init__(self, weight: float = 1e-3):
        require(weight >= 0, self.name, "weight must be non-negative")
        self.sqrt_w = float(np.sqrt(weight))

    def residual(self, tree, q, target, prev):
        return jnp.concatenate([r for r, _ in self._rows(tree, q, prev)]) * self._scale(prev)

    def residual_jacobian(self, tree, q, target, prev, dq_dx):
        rows = self._rows(tree, q, prev)
        scale = self._scale(prev)
        r = jnp.concatenate([r for r, _ in rows]) * scale
        return r, jnp.concatenate([d(dq_dx) for _, d in rows]) * scale

    def _scale(self, prev):
        return self.sqrt_w * jnp.sqrt(prev.weight)

    @staticmethod
    def _rows(tree, q, prev):
        """Unscaled rows, each with a function mapping ``dq_dx`` (nq, n) to its Jacobian (k, n):
        coordinate differences are linear in ``q``, and so is the rotation vector
        :func:`_quat_diff` (``2 vec(conj(q_prev) q)``, up to its sign)."""
        rows = []
        scalar = np.array([j.qpos_adr for j in tree.all_joints() if j.type in (HINGE, SLIDE)], dtype=np.int64)
        if scalar.size:
            rows.append((q[scalar] - prev.q[scalar], lambda d: d[scalar]))
        for j in tree.all_joints():
            a = j.qpos_adr
            if j.type == FREE:
                rows.append((q[a : a + 3] - prev.q[a : a + 3], lambda d, a=a: d[a : a + 3]))
                a = a + 3
            if j.type in (FREE, BALL):
                diff, rate = _quat_diff(prev.q[a : a + 4], q[a : a + 4])
                rows.append((diff, lambda d, a=a, rate=rate: rate @ d[a : a + 4]))
        return rows


def _quat_diff(q_from: jnp.ndarray, q_to: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Small-angle rotation vector (3,) from ``q_from`` to ``q_to`` (body frame), sign-safe, and
    its derivative (3, 4) w.r.t. ``q_to``."""
    conj = q_from * jnp.array([1.0, -1.0, -1.0, -1.0], q_from.dtype)
    left = quat_left_matrix(conj)
    sign = 2.0 * jnp.sign(left[0] @ q_to + 1e-30)
    return sign * (left[1:] @ q_to), sign * left[1:]


def muscle_tendon_ids(model: mujoco.MjModel) -> np.ndarray:
    """Tendon ids driven by muscle actuators (all tendons when no muscle drives one)."""
    ids = [
        int(model.actuator_trnid[a, 0])
        for a in muscle_ids(model)
        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_TENDON
    ]
    return np.array(sorted(set(ids)) if ids else range(model.ntendon), dtype=np.int64)


def tendon_lengths(model: mujoco.MjModel, qs: np.ndarray, tendons: np.ndarray | None = None) -> np.ndarray:
    """Tendon path lengths (T, k) in metres from MuJoCo C (``mj_fwdPosition``) for qs (T, nq)."""
    data = mujoco.MjData(model)
    tendons = np.arange(model.ntendon) if tendons is None else tendons
    out = np.empty((len(qs), len(tendons)))
    for t, q in enumerate(np.asarray(qs)):
        data.qpos[:] = q
        mujoco.mj_fwdPosition(model, data)
        out[t] = data.ten_length[tendons]
    return out


#: A jump must also be this far (fraction of the path length) from the change the muscle's
#: moment arms predict for the pose change (see :func:`tendon_jumps`).
UNEXPLAINED_FRAC = 0.01


def predicted_tendon_changes(
    model: mujoco.MjModel, qs: np.ndarray, lengths: np.ndarray, tendons: np.ndarray | None = None
) -> np.ndarray:
    """Length changes (T-1, k), metres, that the paths' moment arms predict from frame t to t+1:
    the trapezoid of the directional derivatives of the lengths along the tangent ``v`` from
    ``q[t]`` to ``q[t+1]`` (``mj_differentiatePos``), taken at both ends by forward differences
    (``mj_integratePos`` by ``1e-6 v``). ``lengths`` (T, k) are :func:`tendon_lengths` of ``qs``."""
    qs = np.asarray(qs, dtype=np.float64)
    pairs = max(len(qs) - 1, 0)
    step = 1e-6
    tangent = np.zeros((pairs, model.nv))
    for t in range(pairs):
        mujoco.mj_differentiatePos(model, tangent[t], 1.0, qs[t], qs[t + 1])
    moved = np.concatenate([qs[:-1], qs[1:]])  # the start, then the end of every pair
    for q, v in zip(moved, np.concatenate([tangent, tangent]), strict=True):
        mujoco.mj_integratePos(model, q, v, step)
    moved_lengths = tendon_lengths(model, moved, tendons)
    return 0.5 * ((moved_lengths[:pairs] - lengths[:-1]) + (moved_lengths[pairs:] - lengths[1:])) / step


def tendon_jumps(
    lengths: np.ndarray, max_jump_frac: float, predicted: np.ndarray | None = None
) -> np.ndarray:
    """(T,) bool: frame t's muscle path jumped since frame t-1 (frame 0 is never flagged).

    A jump: some path's length (``lengths`` (T, k)) changed by more than ``max_jump_frac`` of it,
    and, when the moment arms' ``predicted`` changes (T-1, k) (:func:`predicted_tendon_changes`)
    are given, by more than :data:`UNEXPLAINED_FRAC` of it beyond that prediction. Without the
    prediction fast motion sampled coarsely reads as jumps: on the DeepMimic run (30 Hz) the
    adductor paths (~12 cm) change by up to 17 % per frame, all of it predicted to within 0.4 %;
    a path flipping across a wrap, or a frame on a wrong branch (on ``tiny``: 10 %
    unexplained), is not predicted.
    """
    if len(lengths) == 0:
        return np.zeros(0, bool)
    change = np.diff(lengths, axis=0)
    scale = np.maximum(np.abs(lengths[:-1]), 1e-9)
    jump = np.abs(change) / scale > max_jump_frac
    if predicted is not None:
        jump &= np.abs(change - predicted) / scale > UNEXPLAINED_FRAC
    return np.concatenate([[False], np.any(jump, axis=1)])


class TendonContinuity(Constraint):
    """No muscle path may jump between consecutive frames by more than ``max_jump_frac`` of its
    length beyond what its moment arms explain (:func:`tendon_jumps`). Detected on the solved
    clip with MuJoCo C (``mj_fwdPosition``, wrapping included).
    Both frames around a jump are re-solved, started from and pulled (through
    :class:`Smoothness`, which the problem must hold) towards the time interpolation of their
    nearest unflagged neighbours, the pull multiplied by ``repair_weight`` and by 10 more in each
    further round, up to ``rounds`` rounds. Then each run of consecutive changed frames is kept
    only when it leaves fewer jumps across that run than the solve had: some jumps are a
    muscle path flipping across a wrap surface under a tiny change of pose (myofullbody's psoas
    and rectus abdominis at the DeepMimic walk's heel strikes), which re-solving cannot remove,
    only trade for a pose dragged off its targets. Frames still jumping are reported in
    ``IKResult.tendon_jump``, never hidden; ``IKResult.tendon_jumps_detected`` counts the jumps
    found before repair."""

    name = "tendon_continuity"

    def __init__(
        self,
        model: mujoco.MjModel,
        max_jump_frac: float = 0.05,
        rounds: int = 2,
        repair_weight: float = 100.0,
    ):
        require(max_jump_frac > 0, self.name, "max_jump_frac must be positive")
        self.model = model
        self.max_jump_frac = float(max_jump_frac)
        self.rounds = int(rounds)
        self.repair_weight = float(repair_weight)
        self.tendons = muscle_tendon_ids(model)

    def finalize(self, problem, targets, result, resolve):
        q = np.array(result.q)
        converged = np.array(result.converged)
        iterations = np.array(result.iterations)
        jumps = self.jumps(q)
        found = jumps.copy()
        last = len(q) - 1
        for round_ in range(self.rounds):
            if not jumps.any():
                break
            # A jump at t lies between t-1 and t: either may be the odd frame, re-solve both,
            # each started from and pulled towards the interpolation of its nearest unflagged
            # neighbours.
            flagged = np.flatnonzero(jumps)
            frames = np.unique(np.clip(np.concatenate([flagged - 1, flagged]), 0, last))
            anchor = self._interpolate_good(q, frames, problem.linear_qadr)
            weight = np.full(frames.size, self.repair_weight * 10.0**round_)
            q_new, conv_new, it_new = resolve(frames, anchor, anchor, weight)
            q[frames], converged[frames] = q_new, conv_new
            iterations[frames] += it_new
            jumps = self.jumps(q)
        # Keep each run of consecutive changed frames only if it now jumps less than before (the
        # jumps a run can change lie on its frames and on the frame after it).
        changed = np.flatnonzero(np.any(q != result.q, axis=1))
        if changed.size:
            for run in np.split(changed, np.flatnonzero(np.diff(changed) > 1) + 1):
                span = slice(run[0], min(run[-1] + 2, last + 1))
                if jumps[span].sum() >= found[span].sum():
                    q[run], converged[run] = result.q[run], result.converged[run]
            jumps = self.jumps(q)
        return dataclasses.replace(
            result,
            q=q,
            converged=converged,
            iterations=iterations,
            tendon_jump=jumps,
            tendon_jumps_detected=int(found.sum()),
        )

    def jumps(self, qs: np.ndarray) -> np.ndarray:
        """(T,) frames of ``qs`` (T, nq) whose muscle paths jumped (:func:`tendon_jumps`, with the
        moment arms' prediction)."""
        lengths = tendon_lengths(self.model, qs, self.tendons)
        predicted = predicted_tendon_changes(self.model, qs, lengths, self.tendons)
        return tendon_jumps(lengths, self.max_jump_frac, predicted)

    @staticmethod
    def _interpolate_good(q: np.ndarray, frames: np.ndarray, linear_qadr: np.ndarray) -> np.ndarray:
        """Per frame in ``frames`` (k,), a pose (k, nq) between its nearest neighbours outside
        ``frames``: linear coordinates interpolated in time, rotations from the left one."""
        bad = np.zeros(len(q), bool)
        bad[frames] = True
        good = np.flatnonzero(~bad)
        out = q[frames].copy()
        if good.size == 0:
            return out
        for row, f in enumerate(frames):
            left, right = good[good < f], good[good > f]
            lo = left[-1] if left.size else right[0]
            hi = right[0] if right.size else left[-1]
            out[row] = q[lo]
            if hi != lo:
                frac = (f - lo) / (hi - lo)
                out[row, linear_qadr] = (1 - frac) * q[lo, linear_qadr] + frac * q[hi, linear_qadr]
        return out
