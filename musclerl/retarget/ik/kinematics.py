"""Lean kinematic tree of a compiled ``MjModel``: forward kinematics and Jacobians in JAX.

Only the bodies on the paths from the world to the bodies we need (marker bodies, frame
targets) are kept, with their joints; everything else in the model (muscle-only bodies,
arms when retargeting legs) costs nothing. The tree reproduces MuJoCo's ``mj_kinematics``
exactly (body offsets ``body_pos``/``body_quat``, joint anchors ``jnt_pos`` and axes
``jnt_axis``, ``qpos0`` as the zero of hinge and slide joints) for free, ball, hinge and slide
joints; ``tests/test_retarget_kinematics.py`` checks it against MuJoCo C to 1e-6.

Conventions
-----------
* ``q`` is always the **full** model ``qpos`` (nq,), so a solution drops straight into
  ``MjData.qpos``; coordinates of bodies outside the tree are carried along untouched.
* Tangent vectors ``v`` are full model velocities (nv,) in MuJoCo's convention: free joint =
  world-frame linear part then body-frame angular part, ball joint = body-frame angular
  velocity. :meth:`KinematicTree.integrate` is ``mj_integratePos`` with unit time step.
* Positions are metres in the world frame, rotations are 3x3 matrices (body -> world),
  quaternions are (w, x, y, z).

Precision
---------
The tree computes in the dtype of ``q``. The solver runs it in float64 inside
``jax.enable_x64(True)`` (see :mod:`musclerl.retarget.ik.solver`); equality residuals of 1e-6 and
agreement with MuJoCo to 1e-6 need float64. Call it inside that context yourself when you use
it directly (float32 inputs give float32 results, accurate to ~1e-6 relative).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.jax_rotations import (
    mat_log,
    mat_to_quat,
    mm,
    mv,
    normalize,
    quat_exp,
    quat_mul,
    quat_rate_matrix,
    quat_rotate,
    quat_to_mat,
)
from musclerl.geometry.rotations import quat_wxyz_to_matrix

__all__ = [
    "KinematicTree",
    "TreeJoint",
    "mat_log",
    "mat_to_quat",
    "quat_mul",
    "quat_rotate",
    "quat_to_mat",
    "quat_exp",
]

FREE, BALL, SLIDE, HINGE = (
    int(mujoco.mjtJoint.mjJNT_FREE),
    int(mujoco.mjtJoint.mjJNT_BALL),
    int(mujoco.mjtJoint.mjJNT_SLIDE),
    int(mujoco.mjtJoint.mjJNT_HINGE),
)
JOINT_NQ = {FREE: 7, BALL: 4, SLIDE: 1, HINGE: 1}
JOINT_NV = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}


# ----------------------------------------------------------------------------- the tree
@dataclasses.dataclass(frozen=True)
class TreeJoint:
    """One joint of the lean tree: ``type`` (FREE/BALL/SLIDE/HINGE), its qpos/qvel addresses,
    anchor ``pos`` (3,) and unit ``axis`` (3,) in the body frame, and ``qpos0`` of a scalar
    joint (the coordinate value at which the body sits at its ``body_pos``/``body_quat``)."""

    name: str
    type: int
    qpos_adr: int
    dof_adr: int
    pos: tuple[float, float, float]
    axis: tuple[float, float, float]
    qpos0: float


@dataclasses.dataclass(frozen=True, eq=False)
class KinematicTree:
    """Bodies on the paths from the world to a set of kept bodies, in MuJoCo order.

    Attributes (``nb`` lean bodies):
        model_body_ids: (nb,) model body id of each lean body.
        parent: (nb,) lean index of the parent, -1 for a child of the world.
        body_pos: (nb, 3) offset in the parent frame, metres. body_quat: (nb, 4) (w, x, y, z).
        joints: per lean body, its joints in MuJoCo order.
        body_names: (nb,) names. nq, nv: sizes of the full model's qpos / qvel.
        qpos0: (nq,) the model's reference configuration.
    """

    model: mujoco.MjModel
    model_body_ids: np.ndarray
    parent: np.ndarray
    body_pos: np.ndarray
    body_quat: np.ndarray
    joints: tuple[tuple[TreeJoint, ...], ...]
    body_names: tuple[str, ...]
    nq: int
    nv: int
    qpos0: np.ndarray

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_model(
        cls, model: mujoco.MjModel, keep_bodies: Iterable[str | int] | None = None
    ) -> KinematicTree:
        """Tree of the bodies on the paths to ``keep_bodies`` (names or ids; None = all)."""
        if keep_bodies is None:
            wanted = set(range(1, model.nbody))
        else:
            wanted = {_body_id(model, b) for b in keep_bodies}
        keep: set[int] = set()
        for b in wanted:
            while b > 0 and b not in keep:
                keep.add(b)
                b = int(model.body_parentid[b])
        ids = np.array(sorted(keep), dtype=np.int64)  # MuJoCo orders parents before children
        lean = {int(b): i for i, b in enumerate(ids)}
        parent = np.array([lean.get(int(model.body_parentid[b]), -1) for b in ids], dtype=np.int64)
        joints = []
        for b in ids:
            first, count = int(model.body_jntadr[b]), int(model.body_jntnum[b])
            body_joints = []
            for j in range(first, first + count):
                jtype = int(model.jnt_type[j])
                adr = int(model.jnt_qposadr[j])
                body_joints.append(
                    TreeJoint(
                        name=model.joint(j).name,
                        type=jtype,
                        qpos_adr=adr,
                        dof_adr=int(model.jnt_dofadr[j]),
                        pos=tuple(float(x) for x in model.jnt_pos[j]),
                        axis=tuple(float(x) for x in model.jnt_axis[j]),
                        qpos0=float(model.qpos0[adr]) if jtype in (SLIDE, HINGE) else 0.0,
                    )
                )
            joints.append(tuple(body_joints))
        return cls(
            model=model,
            model_body_ids=ids,
            parent=parent,
            body_pos=np.array(model.body_pos[ids], dtype=np.float64),
            body_quat=np.array(model.body_quat[ids], dtype=np.float64),
            joints=tuple(joints),
            body_names=tuple(model.body(int(b)).name for b in ids),
            nq=int(model.nq),
            nv=int(model.nv),
            qpos0=np.array(model.qpos0, dtype=np.float64),
        )

    # ------------------------------------------------------------------ lookup
    @property
    def nbody(self) -> int:
        return len(self.model_body_ids)

    def all_joints(self) -> list[TreeJoint]:
        """Joints of the tree, in MuJoCo order."""
        return [j for body in self.joints for j in body]

    def body_index(self, body: str | int) -> int:
        """Lean index of a model body (name or model id); InputError when not in the tree."""
        model_id = _body_id(self.model, body)
        hits = np.flatnonzero(self.model_body_ids == model_id)
        if hits.size == 0:
            raise InputError(str(body), "body is not in the kinematic tree (add it to keep_bodies)")
        return int(hits[0])

    def frame(self, name: str) -> tuple[int, np.ndarray, np.ndarray]:
        """A body or site by name -> (lean body index, local pos (3,), local quat (4,))."""
        site_id = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, name)
        if site_id >= 0:
            return (
                self.body_index(int(self.model.site_bodyid[site_id])),
                np.array(self.model.site_pos[site_id]),
                np.array(self.model.site_quat[site_id]),
            )
        return self.body_index(name), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])

    # ------------------------------------------------------------------ kinematics (JAX)
    def fk(self, q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """``mj_kinematics`` on the lean tree: q (nq,) full qpos -> body world positions
        (nb, 3) in metres and rotation matrices (nb, 3, 3) (body -> world).

        Vectorised: every joint's local rigid motion at once (hinge ``T(a) R(axis, q - q0)
        T(-a)``, slide ``T(axis (q - q0))``, ball ``T(a) R(quat) T(-a)``), then per body its
        offset composed with its joints (padded to the most joints on a body), then the tree
        level by level. Its derivative (``jax.jvp``/``jacfwd``) is analytic: joint twists summed
        over each body's ancestors (what ``mj_jac`` does), not differentiation through the
        kinematic chain, so Jacobians cost little more than one FK and compile fast.
        """
        return self._fk_fn(jnp.asarray(q))

    @functools.cached_property
    def _fk_fn(self):
        fn = jax.custom_jvp(lambda q: self._to_tree_order(*self._fk_levels(q)[:2]))

        @fn.defjvp
        def _jvp(primals, tangents):
            (q,), (dq,) = primals, tangents
            levels = self._fk_levels(q)
            xt, xr = levels[:2]
            w, v = self._body_velocity(dq, xt, self._joint_twists(q, *levels))
            drot = jnp.cross(w[:, None, :], jnp.swapaxes(xr, 1, 2)).swapaxes(1, 2)
            return self._to_tree_order(xt, xr), self._to_tree_order(v, drot)

        return fn

    def _to_tree_order(self, pos, rot):
        order = self._plan.to_tree_order
        return pos[order], rot[order]

    def _fk_levels(self, q):
        """Forward kinematics in level order. Returns world positions (nb, 3), rotations
        (nb, 3, 3), each body's parent world transform (nb, 3), (nb, 3, 3), the body-local
        transform before each joint slot (nb, K, 3), (nb, K, 3, 3), and joint rotations in table
        order (see ``_FKPlan.joint_row``)."""
        plan = self._plan
        dtype = q.dtype
        eye = jnp.eye(3, dtype=dtype)
        # Joint motions stacked in table order (hinges, slides, balls, identity; see
        # _FKPlan.joint_row), built by concatenation: no scatters.
        jt, jr = [], []
        if plan.hinge.size:
            angle = q[plan.hinge_qadr] - plan.hinge_q0
            k1 = jnp.asarray(plan.hinge_k1, dtype)
            k2 = jnp.asarray(plan.hinge_k2, dtype)
            rot = eye + jnp.sin(angle)[:, None, None] * k1 + (1.0 - jnp.cos(angle))[:, None, None] * k2
            anchor = jnp.asarray(plan.hinge_pos, dtype)
            jt.append(anchor - mv(rot, anchor))
            jr.append(rot)
        if plan.slide.size:
            disp = q[plan.slide_qadr] - plan.slide_q0
            jt.append(jnp.asarray(plan.slide_axis, dtype) * disp[:, None])
            jr.append(jnp.broadcast_to(eye, (plan.slide.size, 3, 3)))
        for _, qadr, anchor in plan.balls:
            rot = quat_to_mat(normalize(q[qadr : qadr + 4]))
            a = jnp.asarray(anchor, dtype)
            jt.append((a - rot @ a)[None])
            jr.append(rot[None])
        jt = jnp.concatenate(jt + [jnp.zeros((1, 3), dtype)])
        jr = jnp.concatenate(jr + [eye[None]])
        # Body local transforms (level order): offset composed with its joints in order.
        lt = jnp.asarray(plan.body_pos, dtype)
        lr = jnp.asarray(plan.body_rot, dtype)
        before_t, before_r = [], []
        for k in range(plan.slots.shape[1]):
            idx = plan.joint_row[plan.slots[:, k]]
            before_t.append(lt)
            before_r.append(lr)
            lt = lt + mv(lr, jt[idx])
            lr = mm(lr, jr[idx])
        for body, qadr in plan.frees:
            lt = lt.at[body].set(q[qadr : qadr + 3])
            lr = lr.at[body].set(quat_to_mat(normalize(q[qadr + 3 : qadr + 7])))
        # World transforms, level by level; bodies are stored level-contiguous.
        n0 = len(plan.levels[0])
        xt, xr = [lt[plan.levels[0]]], [lr[plan.levels[0]]]
        pts = [jnp.zeros((n0, 3), dtype)]
        prs = [jnp.broadcast_to(jnp.eye(3, dtype=dtype), (n0, 3, 3))]
        for (lo, hi), parents in zip(plan.levels[1:], plan.parents[1:], strict=True):
            pt, pr = xt[-1][parents], xr[-1][parents]  # a body's parent is on the level above
            pts.append(pt)
            prs.append(pr)
            xt.append(pt + mv(pr, lt[lo:hi]))
            xr.append(mm(pr, lr[lo:hi]))
        nb, width = plan.slots.shape
        bt = jnp.stack(before_t, 1) if width else jnp.zeros((nb, 0, 3), dtype)
        br = jnp.stack(before_r, 1) if width else jnp.zeros((nb, 0, 3, 3), dtype)
        return (
            jnp.concatenate(xt),
            jnp.concatenate(xr),
            jnp.concatenate(pts),
            jnp.concatenate(prs),
            bt,
            br,
            jr,
        )

    def _joint_twists(self, q, xt, xr, par_t, par_r, before_t, before_r, jr):
        """Unit twists of the joints in the world: per hinge/slide joint its angular part (ns, 3)
        and linear part at the world origin (ns, 3); per free/ball joint (body, qpos address,
        angular (3, 4), linear (3, 4)) maps from d(quaternion). A body's velocity is the sum of
        its ancestors' joint twists (what ``mj_jac`` does)."""
        plan = self._plan
        dtype = q.dtype
        # World frame of each hinge/slide joint before it moves (only the slots that hold one).
        body, slot = plan.scalar_body, plan.scalar_slot_k
        wr = mm(par_r[body], before_r[body, slot])
        wt = par_t[body] + mv(par_r[body], before_t[body, slot])
        axis_s = mv(wr, jnp.asarray(plan.axis[plan.scalar], dtype))
        anchor_s = wt + mv(wr, jnp.asarray(plan.anchor[plan.scalar], dtype))
        hinge = jnp.asarray(plan.is_hinge[plan.scalar], dtype)[:, None]
        unit_w = hinge * axis_s
        unit_c = (1.0 - hinge) * axis_s - jnp.cross(unit_w, anchor_s)
        quats = []
        for jid, qadr, anchor in plan.balls:
            b, k = plan.joint_slot[jid]
            rot = par_r[b] @ before_r[b, k]
            anchor_w = par_t[b] + par_r[b] @ before_t[b, k] + rot @ jnp.asarray(anchor, dtype)
            cols = rot @ jr[plan.joint_row[jid]] @ quat_rate_matrix(q[qadr : qadr + 4])
            quats.append((b, qadr, cols, -jnp.cross(cols.T, anchor_w).T))
        for b, qadr in plan.frees:
            cols = xr[b] @ quat_rate_matrix(q[qadr + 3 : qadr + 7])
            quats.append((b, qadr + 3, cols, -jnp.cross(cols.T, xt[b]).T))
        return unit_w, unit_c, quats

    def _body_velocity(self, dq, xt, twists):
        """World angular (nb, 3) and linear (nb, 3) velocity of every body origin (level order)
        for the qpos tangent ``dq`` (nq,)."""
        plan = self._plan
        unit_w, unit_c, quats = twists
        rate = dq[plan.scalar_qadr][:, None]
        own = jnp.asarray(plan.scalar_ancestors, dq.dtype)  # (nb, ns)
        w = own @ (unit_w * rate)
        c = own @ (unit_c * rate)
        anc = jnp.asarray(plan.ancestors, dq.dtype)
        for body, qadr, cols_w, cols_c in quats:
            w = w + anc[:, body : body + 1] * (cols_w @ dq[qadr : qadr + 4])
            c = c + anc[:, body : body + 1] * (cols_c @ dq[qadr : qadr + 4])
        for body, qadr in plan.frees:
            c = c + anc[:, body : body + 1] * dq[qadr : qadr + 3]
        return w, c + jnp.cross(w, xt)

    def fk_quat(self, q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Like :meth:`fk` with orientations as quaternions (nb, 4) (w, x, y, z)."""
        pos, rot = self.fk(q)
        return pos, mat_to_quat(rot)

    @functools.cached_property
    def _plan(self) -> _FKPlan:
        return _FKPlan.build(self)

    def point_positions(
        self, q: jnp.ndarray, body_ids: Sequence[int] | np.ndarray, local_points: jnp.ndarray
    ) -> jnp.ndarray:
        """World positions (P, 3) of points fixed in bodies.

        ``body_ids`` (P,) are **lean** indices (see :meth:`body_index`); ``local_points`` (P, 3)
        are in the body frames, metres.
        """
        pos, rot = self.fk(q)
        idx = np.asarray(body_ids, dtype=np.int64)
        return pos[idx] + mv(rot[idx], jnp.asarray(local_points, pos.dtype))

    def integrate(self, q: jnp.ndarray, v: jnp.ndarray) -> jnp.ndarray:
        """``mj_integratePos(q, v, dt=1)`` for the tree's joints: q (nq,), v (nv,) -> (nq,)."""
        q = jnp.asarray(q)
        scalar = [j for j in self.all_joints() if j.type in (SLIDE, HINGE)]
        if scalar:
            qadr = np.array([j.qpos_adr for j in scalar])
            dadr = np.array([j.dof_adr for j in scalar])
            q = q.at[qadr].add(v[dadr])
        for jnt in self.all_joints():
            a, d = jnt.qpos_adr, jnt.dof_adr
            if jnt.type == FREE:
                quat = normalize(quat_mul(q[a + 3 : a + 7], quat_exp(v[d + 3 : d + 6])))
                q = q.at[a : a + 7].set(jnp.concatenate([q[a : a + 3] + v[d : d + 3], quat]))
            elif jnt.type == BALL:
                q = q.at[a : a + 4].set(normalize(quat_mul(q[a : a + 4], quat_exp(v[d : d + 3]))))
        return q

    def points_and_jacobian(
        self,
        q: jnp.ndarray,
        body_ids: Sequence[int] | np.ndarray,
        local_points: jnp.ndarray,
        dq_dx: jnp.ndarray | None = None,
    ) -> tuple[jnp.ndarray, jnp.ndarray]:
        """World positions (P, 3) of body-fixed points and their Jacobian (P, 3, n) w.r.t.
        variables ``x`` with ``dq_dx`` (nq, n) = d qpos / d x (default: qpos itself, n = nq;
        quaternion columns act through the unit-quaternion rate). ``body_ids`` are lean indices.
        Closed form from the joint twists (:meth:`_twist_jacobians`): ``p`` moves at ``c + w x p``."""
        lvl, xt, xr, w, c = self._twist_jacobians(q, body_ids, dq_dx)
        pts = xt[lvl] + mv(xr[lvl], jnp.asarray(local_points, xt.dtype))
        px, py, pz = (pts[:, i : i + 1] for i in range(3))
        jac = c + jnp.stack(
            [w[:, 1] * pz - w[:, 2] * py, w[:, 2] * px - w[:, 0] * pz, w[:, 0] * py - w[:, 1] * px], axis=1
        )
        return pts, jac

    def rotations_and_jacobian(
        self, q: jnp.ndarray, body_ids: Sequence[int] | np.ndarray, dq_dx: jnp.ndarray | None = None
    ) -> tuple[jnp.ndarray, jnp.ndarray]:
        """World rotations (B, 3, 3) of lean bodies ``body_ids`` and their world angular-velocity
        Jacobian (B, 3, n) (``dq_dx`` as in :meth:`points_and_jacobian`): ``dR/dx_k = [w_k]x R``."""
        lvl, _, xr, w, _ = self._twist_jacobians(q, body_ids, dq_dx)
        return xr[lvl], w

    def _twist_jacobians(self, q, body_ids, dq_dx):
        """Level-order index (B,) of each of ``body_ids``, all world positions and rotations
        (level order), and per body its world angular velocity ``w`` and linear velocity at the
        world origin ``c`` (B, 3, n) per variable: ``dq_dx``-weighted sums of its ancestors'
        joint twists (what ``mj_jac`` does); no per-variable passes, no scatters."""
        plan = self._plan
        q = jnp.asarray(q)
        dtype = q.dtype
        levels = self._fk_levels(q)
        xt, xr = levels[:2]
        lvl = plan.to_tree_order[np.asarray(body_ids, dtype=np.int64)]
        unit_w, unit_c, quats = self._joint_twists(q, *levels)
        dq = jnp.eye(self.nq, dtype=dtype) if dq_dx is None else dq_dx
        nb, n = self.nbody, dq.shape[1]
        w = jnp.zeros((nb, 3, n), dtype)
        c = jnp.zeros((nb, 3, n), dtype)
        if plan.scalar.size:
            own = jnp.asarray(plan.scalar_ancestors, dtype)  # (nb, ns)
            rate = dq[plan.scalar_qadr]  # (ns, n)
            w = (own @ (unit_w[:, :, None] * rate[:, None, :]).reshape(-1, 3 * n)).reshape(nb, 3, n)
            c = (own @ (unit_c[:, :, None] * rate[:, None, :]).reshape(-1, 3 * n)).reshape(nb, 3, n)
        for body, qadr, cols_w, cols_c in quats:
            anc = jnp.asarray(plan.ancestors[:, body], dtype)[:, None, None]
            w = w + anc * (cols_w @ dq[qadr : qadr + 4])
            c = c + anc * (cols_c @ dq[qadr : qadr + 4])
        for body, qadr in plan.frees:
            c = c + jnp.asarray(plan.ancestors[:, body], dtype)[:, None, None] * dq[qadr : qadr + 3]
        return lvl, xt, xr, w[lvl], c[lvl]

    def point_jacobian(self, q: jnp.ndarray, body: int, local_point: jnp.ndarray) -> jnp.ndarray:
        """Jacobian (3, nv) of a point fixed in lean body ``body`` w.r.t. the tangent at ``q``
        (what ``mj_jac`` returns as ``jacp``)."""

        def point(v: jnp.ndarray) -> jnp.ndarray:
            return self.point_positions(self.integrate(q, v), [body], local_point[None])[0]

        return jax.jacfwd(point)(jnp.zeros(self.nv, jnp.asarray(q).dtype))

    def rotation_jacobian(self, q: jnp.ndarray, body: int) -> jnp.ndarray:
        """Angular Jacobian (3, nv) of lean body ``body`` in the world frame (``mj_jac``'s jacr)."""
        q = jnp.asarray(q)
        rot0 = self.fk(q)[1][body]

        def rotvec(v: jnp.ndarray) -> jnp.ndarray:
            rot = self.fk(self.integrate(q, v))[1][body]
            return mat_log(rot @ rot0.T)

        return jax.jacfwd(rotvec)(jnp.zeros(self.nv, q.dtype))


@dataclasses.dataclass(frozen=True, eq=False)
class _FKPlan:
    """Static arrays for the vectorised forward kinematics (built once per tree). Bodies are
    renumbered level by level (world children first) so each level is a contiguous block."""

    n_joints: int
    joint_row: np.ndarray  # (nj + 1,) joint index -> row of the FK joint tables (hinges, slides,
    # balls, then one identity row, which padding slots and free joints use)
    hinge: np.ndarray
    hinge_qadr: np.ndarray
    hinge_q0: np.ndarray
    hinge_k1: np.ndarray  # (nh, 3, 3) cross-product matrix of the axis
    hinge_k2: np.ndarray  # its square
    hinge_pos: np.ndarray
    slide: np.ndarray
    slide_qadr: np.ndarray
    slide_q0: np.ndarray
    slide_axis: np.ndarray
    balls: tuple[tuple[int, int, tuple[float, float, float]], ...]
    frees: tuple[tuple[int, int], ...]  # (level-order body, qpos address)
    body_pos: np.ndarray  # (nb, 3) level order
    body_rot: np.ndarray  # (nb, 3, 3) level order
    slots: np.ndarray  # (nb, max joints per body) joint index, n_joints = identity; level order
    scalar: np.ndarray  # joint indices of hinge and slide joints
    scalar_qadr: np.ndarray
    is_hinge: np.ndarray  # (nj + 1,) 1.0 for hinge joints
    is_slide: np.ndarray
    axis: np.ndarray  # (nj + 1, 3) joint axes (zero for ball/free/padding)
    anchor: np.ndarray  # (nj + 1, 3) joint anchors in the body frame
    ancestors: np.ndarray  # (nb, nb) [b, a] = 1 when a is b or an ancestor of b (level order)
    scalar_body: np.ndarray  # (ns,) level-order body of each hinge/slide joint
    scalar_slot_k: np.ndarray  # (ns,) its slot in that body
    scalar_ancestors: np.ndarray  # (nb, ns) 1 when the joint's body is the body or an ancestor
    joint_slot: dict  # joint index -> (level-order body, slot)
    levels: tuple  # first entry: indices of level 0; then (lo, hi) slices
    parents: tuple  # per level, parent positions within the level above (None for level 0)
    to_tree_order: np.ndarray

    @classmethod
    def build(cls, tree: KinematicTree) -> _FKPlan:
        joints = tree.all_joints()
        nj = len(joints)
        kinds = {
            t: np.array([i for i, j in enumerate(joints) if j.type == t], dtype=np.int64)
            for t in (HINGE, SLIDE)
        }

        def field(t, f, width=3):
            return np.array([f(joints[i]) for i in kinds[t]], dtype=np.float64).reshape(-1, width)

        per_body, free_of = [], {}
        counter = 0
        for b, body_joints in enumerate(tree.joints):
            ids = []
            for j in body_joints:
                if j.type == FREE:
                    free_of[b] = j.qpos_adr
                else:
                    ids.append(counter)
                counter += 1
            per_body.append(ids)
        depth = np.zeros(tree.nbody, dtype=np.int64)
        for b in range(tree.nbody):
            p = tree.parent[b]
            depth[b] = 0 if (p < 0 or b in free_of) else depth[p] + 1
        order = np.argsort(depth, kind="stable")  # level order -> tree index
        position = np.empty(tree.nbody, dtype=np.int64)
        position[order] = np.arange(tree.nbody)
        width = max([len(i) for i in per_body] + [0])
        slots = np.full((tree.nbody, width), nj, dtype=np.int64)
        for b, ids in enumerate(per_body):
            slots[position[b], : len(ids)] = ids
        n_levels = int(depth.max()) + 1 if tree.nbody else 0
        levels, parents = [np.flatnonzero(depth[order] == 0)], [None]
        for d in range(1, n_levels):
            members = np.flatnonzero(depth[order] == d)
            levels.append((int(members[0]), int(members[-1]) + 1))
            above = levels[-2] if d == 1 else np.arange(*levels[-2])  # level d - 1, level order
            parents.append(np.searchsorted(above, position[tree.parent[order[members]]]))
        axes = field(HINGE, lambda j: j.axis)
        k1 = np.zeros((len(axes), 3, 3))
        k1[:, 0, 1], k1[:, 0, 2], k1[:, 1, 2] = -axes[:, 2], axes[:, 1], -axes[:, 0]
        k1 = k1 - np.transpose(k1, (0, 2, 1))
        body_rot = quat_wxyz_to_matrix(tree.body_quat[order])  # (B, 3, 3)
        ancestors = np.zeros((tree.nbody, tree.nbody))
        for b in range(tree.nbody):
            a = b
            while a >= 0:
                ancestors[position[b], position[a]] = 1.0
                a = -1 if a in free_of else int(tree.parent[a])
        axis = np.zeros((nj + 1, 3))
        anchor = np.zeros((nj + 1, 3))
        for i, j in enumerate(joints):
            anchor[i] = j.pos
            if j.type in (HINGE, SLIDE):
                axis[i] = j.axis
        scalar = np.array([i for i, j in enumerate(joints) if j.type in (HINGE, SLIDE)], dtype=np.int64)
        joint_slot = {
            int(jid): (b, k) for b in range(tree.nbody) for k, jid in enumerate(slots[b]) if jid < nj
        }
        scalar_body = np.array([joint_slot[int(i)][0] for i in scalar], dtype=np.int64)
        table = list(kinds[HINGE]) + list(kinds[SLIDE]) + [i for i, j in enumerate(joints) if j.type == BALL]
        joint_row = np.full(nj + 1, len(table), dtype=np.int64)
        joint_row[np.array(table, dtype=np.int64)] = np.arange(len(table))
        return cls(
            joint_row=joint_row,
            scalar_body=scalar_body,
            scalar_slot_k=np.array([joint_slot[int(i)][1] for i in scalar], dtype=np.int64),
            scalar_ancestors=ancestors[:, scalar_body].reshape(tree.nbody, len(scalar)),
            joint_slot=joint_slot,
            scalar=scalar,
            scalar_qadr=np.array([joints[i].qpos_adr for i in scalar], dtype=np.int64),
            is_hinge=np.array([float(j.type == HINGE) for j in joints] + [0.0]),
            is_slide=np.array([float(j.type == SLIDE) for j in joints] + [0.0]),
            axis=axis,
            anchor=anchor,
            ancestors=ancestors,
            n_joints=nj,
            hinge=kinds[HINGE],
            hinge_qadr=np.array([joints[i].qpos_adr for i in kinds[HINGE]], dtype=np.int64),
            hinge_q0=field(HINGE, lambda j: j.qpos0, 1)[:, 0],
            hinge_k1=k1,
            hinge_k2=k1 @ k1,
            hinge_pos=field(HINGE, lambda j: j.pos),
            slide=kinds[SLIDE],
            slide_qadr=np.array([joints[i].qpos_adr for i in kinds[SLIDE]], dtype=np.int64),
            slide_q0=field(SLIDE, lambda j: j.qpos0, 1)[:, 0],
            slide_axis=field(SLIDE, lambda j: j.axis),
            balls=tuple((i, j.qpos_adr, j.pos) for i, j in enumerate(joints) if j.type == BALL),
            frees=tuple((int(position[b]), a) for b, a in free_of.items()),
            body_pos=tree.body_pos[order],
            body_rot=body_rot,
            slots=slots,
            levels=tuple(levels),
            parents=tuple(parents),
            to_tree_order=position,
        )


def _body_id(model: mujoco.MjModel, body: str | int) -> int:
    if isinstance(body, (int, np.integer)):
        if not 0 < int(body) < model.nbody:
            raise InputError(str(body), f"body id out of range 1..{model.nbody - 1}")
        return int(body)
    body_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if body_id < 0:
        raise InputError(body, "no body of that name in the model")
    return int(body_id)
