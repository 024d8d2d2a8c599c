"""The IK problem: tasks and constraints on a kinematic tree, and its compiled LM solver.

:class:`IKProblem` owns the free variables (tangent coordinates of the tree's joints, minus the
coordinates that constraints set), the bounds, the residual rows and their closed-form
linearisation, one Levenberg–Marquardt iteration, and the compiled sweeps that
:func:`musclerl.retarget.ik.solver.solve_clip` and :meth:`IKProblem.resolve_frames` call (the
algorithm and its stopping rules are described in :mod:`musclerl.retarget.ik.solver`).
Every JAX function here works on one frame (``q`` (nq,) full qpos, float64 inside
``jax.enable_x64``); the sweeps vmap them over chains and split the chains across the local JAX
devices. :func:`align_root` places a model's free root on point targets by a rigid fit (MuJoCo
C), the starting pose of both pipelines.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg
import mujoco
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from musclerl.errors import InputError, require
from musclerl.geometry.free_root import free_root_qposadr
from musclerl.geometry.jax_rotations import kabsch, quat_left_matrix
from musclerl.geometry.rotations import matrix_to_quat_wxyz, quat_wxyz_to_matrix
from musclerl.retarget.ik.constraints import Constraint
from musclerl.retarget.ik.kinematics import BALL, FREE, HINGE, SLIDE, KinematicTree
from musclerl.retarget.ik.tasks import MarkerTask, Task
from musclerl.retarget.ik.term import Previous, Term

LAMBDA_INIT = 1e-3  # initial damping of cold starts and repairs
# Initial damping of warm starts: the constant-velocity prediction is close, where Gauss-Newton
# steps are good (fewer LM iterations per frame than LAMBDA_INIT).
LAMBDA_WARM = 1e-5
LAMBDA_MIN = 1e-9
LAMBDA_MAX = 1e8
CHAINS_PER_DEVICE = 8  # warm-start chains side by side per JAX device (more start cold)
BLOCK_SWEEPS = 16  # sweeps per compiled call (one while_loop); time limits are checked between calls
ERRORS_BATCH = 256  # frames per compiled call of the point-error measurement
COLD, WARM, GIVEN = 0, 1, 2  # how a sweep starts (see IKProblem._sweeps)
STEP_TOL = 1e-5  # rad or m: a step this small from an accepted point ends the frame (converged)


def align_root(
    model: mujoco.MjModel, qpos: np.ndarray, sites: list[str], targets_m: np.ndarray
) -> np.ndarray:
    """Move the free root of ``qpos`` so the sites best match ``targets_m`` (M, 3) rigidly (Kabsch).

    Returns a new qpos; models without a free root are returned unchanged.
    """
    qpos = np.array(qpos, dtype=float)
    adr = free_root_qposadr(model)
    if adr is None:
        return qpos
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in sites]
    ok = ~np.isnan(targets_m[:, 0])
    if ok.sum() < 3:
        raise InputError("markers", "fewer than 3 markers present: cannot place the model")
    src = np.array(data.site_xpos[ids])[ok]
    dst = targets_m[ok]
    rot, src_c, dst_c = kabsch(src, dst)
    root_pos = qpos[adr : adr + 3]
    root_rot = quat_wxyz_to_matrix(qpos[adr + 3 : adr + 7])
    qpos[adr : adr + 3] = rot @ (root_pos - src_c) + dst_c
    qpos[adr + 3 : adr + 7] = matrix_to_quat_wxyz(rot @ root_rot)
    return qpos


class _LMState(NamedTuple):
    """One frame's LM state: best point ``q`` (nq,) with the normal equations of its rows
    (``hess`` = J^T J (n, n), ``grad`` = J^T r (n,)), its Jacobian ``jac`` (m, n) and ``cost``;
    the next candidate ``cand`` (nq,); damping ``lam``; evaluations so far ``it``; ``conv``."""

    q: jnp.ndarray
    hess: jnp.ndarray
    grad: jnp.ndarray
    jac: jnp.ndarray
    cost: jnp.ndarray
    cand: jnp.ndarray
    lam: jnp.ndarray
    it: jnp.ndarray
    conv: jnp.ndarray


class IKProblem:
    """Tasks and constraints on a kinematic tree; owns the compiled per-frame solver.

    Terms are keyed by ``name`` in the ``targets`` dict of :func:`solve_clip`; names must be
    unique. The compiled solver does not depend on the clip length: reuse one problem for many
    clips (it compiles once per set of target names and shapes and per device count).
    """

    def __init__(self, tree: KinematicTree, tasks: Sequence[Task], constraints: Sequence[Constraint] = ()):
        require(len(tasks) > 0, "IKProblem", "needs at least one task")
        names = [t.name for t in tasks] + [c.name for c in constraints]
        require(len(set(names)) == len(names), "IKProblem", f"duplicate term names in {names}")
        self.tree = tree
        self.tasks = tuple(tasks)
        self.constraints = tuple(constraints)
        self._setup_variables()
        self._compiled: dict[tuple, object] = {}

    # ------------------------------------------------------------------ variables and bounds
    def _setup_variables(self) -> None:
        tree = self.tree
        dofs = []
        for j in tree.all_joints():
            width = {FREE: 6, HINGE: 1, SLIDE: 1}.get(j.type, 3)
            dofs.extend(range(j.dof_adr, j.dof_adr + width))
        dependent = set()
        for c in self.constraints:
            dep = c.dependent_dofs(tree)
            if dep is not None:
                dependent.update(int(d) for d in dep)
        self.free_dofs = np.array([d for d in dofs if d not in dependent], dtype=np.int64)
        lo = np.full(tree.nq, -np.inf)
        hi = np.full(tree.nq, np.inf)
        for c in self.constraints:
            bounds = c.qpos_bounds(tree)
            if bounds is not None:
                lo, hi = np.maximum(lo, bounds[0]), np.minimum(hi, bounds[1])
        require(bool(np.all(lo <= hi)), "IKProblem", "constraint bounds are empty")
        # Bounds of free scalar coordinates, in reduced-variable order (inf for rotations).
        dof_to_qadr = {j.dof_adr: j.qpos_adr for j in tree.all_joints() if j.type in (HINGE, SLIDE)}
        self.var_qadr = np.array([dof_to_qadr.get(int(d), -1) for d in self.free_dofs])
        scalar = self.var_qadr >= 0
        self.var_lo = np.where(scalar, lo[np.maximum(self.var_qadr, 0)], -np.inf)
        self.var_hi = np.where(scalar, hi[np.maximum(self.var_qadr, 0)], np.inf)
        self.clip_qadr = self.var_qadr[scalar & (np.isfinite(self.var_lo) | np.isfinite(self.var_hi))]
        self.qpos_lo, self.qpos_hi = lo, hi
        # qpos entries that add linearly (hinge, slide, free-joint position): warm starts
        # extrapolate these at constant velocity.
        linear = []
        for j in tree.all_joints():
            if j.type in (HINGE, SLIDE):
                linear.append(j.qpos_adr)
            elif j.type == FREE:
                linear.extend(range(j.qpos_adr, j.qpos_adr + 3))
        self.linear_qadr = np.array(linear, dtype=np.int64)
        # tangent_basis: constant unit columns, and per free/ball rotation its quaternion rows
        # (nq, 4) and variable columns (3, n_vars) selectors.
        var_of = {int(d): k for k, d in enumerate(self.free_dofs)}
        self._basis_linear = np.zeros((tree.nq, self.n_vars))
        self._basis_rotations = []
        for j in tree.all_joints():
            if j.type in (HINGE, SLIDE) and j.dof_adr in var_of:
                self._basis_linear[j.qpos_adr, var_of[j.dof_adr]] = 1.0
            if j.type == FREE:
                for i in range(3):
                    self._basis_linear[j.qpos_adr + i, var_of[j.dof_adr + i]] = 1.0
            if j.type in (FREE, BALL):
                qadr, dof = (j.qpos_adr + 3, j.dof_adr + 3) if j.type == FREE else (j.qpos_adr, j.dof_adr)
                rows = np.zeros((tree.nq, 4))
                rows[qadr + np.arange(4), np.arange(4)] = 1.0
                cols = np.zeros((3, self.n_vars))
                for i in range(3):
                    cols[i, var_of[dof + i]] = 1.0
                self._basis_rotations.append((qadr, rows, cols))

    def cold_start(self, q0: np.ndarray) -> np.ndarray:
        """``q0`` (nq,) with bounded coordinates moved at least 5 % of their range inside it: a
        joint on its limit is often a singular start (a straight knee cannot tell which way to
        bend), from which LM stalls in a local minimum."""
        q = np.array(q0, dtype=np.float64)
        idx = self.clip_qadr
        lo, hi = self.qpos_lo[idx], self.qpos_hi[idx]
        margin = np.where(np.isfinite(hi - lo), 0.05 * (hi - lo), 0.0)
        q[idx] = np.clip(q[idx], lo + margin, hi - margin)
        return q

    @property
    def n_vars(self) -> int:
        return int(self.free_dofs.size)

    def project(self, q: jnp.ndarray) -> jnp.ndarray:
        """Clip bounded coordinates, then apply every constraint's projection (JAX)."""
        if self.clip_qadr.size:
            idx = self.clip_qadr
            q = q.at[idx].set(jnp.clip(q[idx], self.qpos_lo[idx], self.qpos_hi[idx]))
        return self._manifold(q)

    def _manifold(self, q: jnp.ndarray) -> jnp.ndarray:
        for c in self.constraints:
            q = c.project(self.tree, q)
        return q

    def retract(self, q: jnp.ndarray, dx: jnp.ndarray) -> jnp.ndarray:
        """Move ``q`` (nq,) by reduced tangent ``dx`` (n_vars,) and re-impose equalities."""
        v = jnp.zeros(self.tree.nv, q.dtype).at[self.free_dofs].set(dx)
        return self._manifold(self.tree.integrate(q, v))

    # ------------------------------------------------------------------ residuals
    def residual(self, q: jnp.ndarray, frame: Mapping[str, jnp.ndarray], prev: Previous) -> jnp.ndarray:
        """All weighted residual rows (m,) for one frame."""
        rows = [self._term_residual(term, q, frame, prev) for term in self.tasks + self.constraints]
        return jnp.concatenate([jnp.ravel(r) for r in rows if r is not None])

    def _count_rows(self, q, frame, prev) -> dict[str, int]:
        """Residual rows each term adds (static shapes, from tracing)."""
        counts = {}
        for term in self.tasks + self.constraints:
            shape = jax.eval_shape(lambda q, term=term: self._term_residual(term, q, frame, prev), q)
            counts[term.name] = 0 if shape is None else int(np.prod(shape.shape))
        return counts

    def tangent_basis(self, q: jnp.ndarray) -> jnp.ndarray:
        """``dq/dx`` (nq, n_vars) of :meth:`retract` at ``dx = 0``, in closed form: unit columns
        for hinge, slide and free-joint position variables, the unit-quaternion rate ``0.5 L(u)
        [:, 1:] / |quat|`` for free/ball rotations (body-frame angular velocity), then pushed
        through the derivative of the constraints' projection (e.g. the knee translations follow
        the knee angle through their polynomials)."""
        basis = jnp.asarray(self._basis_linear, q.dtype)
        for qadr, rows, cols in self._basis_rotations:
            quat = q[qadr : qadr + 4]
            rate = 0.5 * quat_left_matrix(quat)[:, 1:] / jnp.linalg.norm(quat)  # (4, 3)
            basis = basis + jnp.asarray(rows, q.dtype) @ rate @ jnp.asarray(cols, q.dtype)
        return jax.vmap(lambda t: jax.jvp(self._manifold, (q,), (t,))[1], in_axes=1, out_axes=1)(basis)

    def linearize(self, q: jnp.ndarray, frame: Mapping[str, jnp.ndarray], prev: Previous):
        """Jacobian (m, n_vars) of all residual rows w.r.t. the free tangent variables, and the
        rows (m,), in :meth:`residual`'s order. ``dq/dx`` (:meth:`tangent_basis`) is computed
        once; terms with a closed-form ``residual_jacobian`` (markers, coordinates, posture,
        smoothness) chain with it, any other term is differentiated by ``jax.jacfwd`` through
        the affine map ``q + dq/dx dx`` (the same first derivative, without the retraction)."""
        dq_dx = self.tangent_basis(q)
        closed = {}
        for term in self.tasks + self.constraints:
            out = term.residual_jacobian(self.tree, q, frame.get(term.name), prev, dq_dx)
            if out is not None:
                closed[term.name] = out
        counts = self._count_rows(q, frame, prev)
        rest = [
            term for term in self.tasks + self.constraints if term.name not in closed and counts[term.name]
        ]
        if rest:

            def rows_of(dx):
                qx = q + dq_dx @ dx
                r = jnp.concatenate([jnp.ravel(self._term_residual(term, qx, frame, prev)) for term in rest])
                return r, r

            jac_o, r_o = jax.jacfwd(rows_of, has_aux=True)(jnp.zeros(self.n_vars, q.dtype))
        rows, jacs, k = [], [], 0
        for term in self.tasks + self.constraints:  # back into residual() order
            if term.name in closed:
                rows.append(jnp.ravel(closed[term.name][0]))
                jacs.append(closed[term.name][1].reshape(-1, self.n_vars))
            elif counts[term.name]:
                size = counts[term.name]
                rows.append(r_o[k : k + size])
                jacs.append(jac_o[k : k + size])
                k += size
        return jnp.concatenate(jacs), jnp.concatenate(rows)

    def _term_residual(self, term: Term, q, frame, prev):
        return term.residual(self.tree, q, frame.get(term.name), prev)

    def point_errors_m(self, q: jnp.ndarray, frame: Mapping[str, jnp.ndarray]) -> jnp.ndarray:
        """Unweighted point errors (k,) of all positional tasks, NaN where missing."""
        errs = [
            e for t in self.tasks if (e := t.position_errors_m(self.tree, q, frame.get(t.name))) is not None
        ]
        return jnp.concatenate(errs) if errs else jnp.full((1,), jnp.nan, q.dtype)

    # ------------------------------------------------------------------ one frame of LM
    def _lm_start(self, q_init: jnp.ndarray, lam: jnp.ndarray, n_rows: int) -> _LMState:
        """LM state (:class:`_LMState`) before the first evaluation, at ``project(q_init)``,
        with initial damping ``lam`` (``n_rows``: the residual's rows)."""
        q0 = self.project(q_init)
        n, dtype = self.n_vars, q0.dtype
        return _LMState(
            q=q0,
            hess=jnp.zeros((n, n), dtype),
            grad=jnp.zeros(n, dtype),
            jac=jnp.zeros((n_rows, n), dtype),
            cost=jnp.asarray(jnp.inf, dtype),
            cand=q0,
            lam=jnp.asarray(lam, dtype),
            it=jnp.asarray(0, jnp.int32),
            conv=jnp.asarray(False),
        )

    def _lm_reuse(self, q_init: jnp.ndarray, last: _LMState, frame, prev: Previous, lam, tol) -> _LMState:
        """LM state for a new frame at ``project(q_init)`` (the constant-velocity prediction)
        without linearising there: its residual rows are evaluated exactly (one FK), and the last
        frame's Jacobian ``last.jac`` (at the last solution, one frame away) stands in for its
        own in the normal equations (``J^T J``, ``J^T r``). The first Gauss-Newton step is
        taken from there: a frame costs one linearisation when that step lands (most frames of
        a smooth clip), instead of one at the prediction and one after the step."""
        q0 = self.project(q_init)
        r = self.residual(q0, frame, prev)
        cost = 0.5 * r @ r
        grad = last.jac.T @ r
        lam = jnp.asarray(lam, cost.dtype)
        cand, final, g = self._propose(q0, last.hess, grad, cost, lam, tol)
        conv = final | (jnp.max(jnp.abs(g)) <= 1e-14)
        return _LMState(q0, last.hess, grad, last.jac, cost, cand, lam, jnp.asarray(1, jnp.int32), conv)

    def _propose(self, q, hess, grad, cost, lam, tol):
        """The next LM candidate (nq,) from the best point ``q`` and its normal equations
        (bounded coordinates on an active bound frozen), whether the Gauss-Newton model calls
        ``q`` final (the step is below ``STEP_TOL`` or predicted to lower the cost by less than
        ``tol`` relative), and the free gradient (n,)."""
        qv = q[np.maximum(self.var_qadr, 0)]
        bounded = self.var_qadr >= 0
        at_lo = bounded & (qv <= jnp.asarray(self.var_lo) + 1e-12) & (grad > 0)
        at_hi = bounded & (qv >= jnp.asarray(self.var_hi) - 1e-12) & (grad < 0)
        free = ~(at_lo | at_hi)
        g = jnp.where(free, grad, 0.0)
        h = hess * (free[:, None] & free[None, :])
        damp = lam * (jnp.diagonal(h) + 1e-9) + jnp.where(free, 0.0, 1.0)
        # Symmetric positive definite: Cholesky is cheaper than LU for the batched solves.
        dx = -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(h + jnp.diag(damp)), g)
        cand = self.project(self.retract(q, dx))
        # The Gauss-Newton model's predicted decrease of the next step: when even that is
        # below tol the point is final, without paying another evaluation.
        predicted = -(g @ dx) - 0.5 * (dx @ (h @ dx))
        final = (jnp.max(jnp.abs(dx)) <= STEP_TOL) | (predicted <= tol * cost)
        return cand, final, g

    def _lm_step(self, state: _LMState, frame, prev: Previous, tol) -> _LMState:
        """One LM iteration on one frame: linearise at the candidate (rows, Jacobian, and its
        normal equations); accept it if it lowers the cost; take the next step from the best
        point so far. The first call (``it == 0``) only evaluates the start point."""
        q, hess, grad, jac, cost, cand, lam, it, _ = state
        jac_c, r_c = self.linearize(cand, frame, prev)
        cost_c = 0.5 * r_c @ r_c
        accept = cost_c < cost
        small = accept & (it > 0) & ((cost - cost_c) <= tol * cost)
        q = jnp.where(accept, cand, q)
        hess = jnp.where(accept, jac_c.T @ jac_c, hess)
        grad = jnp.where(accept, jac_c.T @ r_c, grad)
        jac = jnp.where(accept, jac_c, jac)
        lam = jnp.where(it == 0, lam, jnp.where(accept, lam * 0.3, lam * 10.0))
        lam = jnp.clip(lam, LAMBDA_MIN, LAMBDA_MAX)
        cost = jnp.where(accept, cost_c, cost)
        cand, final, g = self._propose(q, hess, grad, cost, lam, tol)
        conv = small | (accept & final) | (jnp.max(jnp.abs(g)) <= 1e-14) | (lam >= LAMBDA_MAX)
        return _LMState(q, hess, grad, jac, cost, cand, lam, it + 1, conv)

    def _lm_trip(self, lm: _LMState, frame, prev: Previous, tol, max_iters) -> _LMState:
        """:meth:`_lm_step` on every chain of a batch (``lm``, ``frame``, ``prev`` batched over
        C chains); chains already done are left as they are."""
        active = ~(lm.conv | (lm.it >= max_iters + 1))
        new = jax.vmap(self._lm_step, in_axes=(0, 0, 0, None))(lm, frame, prev, tol)
        return jax.tree.map(lambda a, b: jnp.where(_rows(active, a), a, b), new, lm)

    # ------------------------------------------------------------------ sweeps (compiled)
    @property
    def chain_batch(self) -> int:
        """Chains solved side by side per compiled call: ``CHAINS_PER_DEVICE`` on every local
        JAX device (chains are split evenly across them)."""
        return CHAINS_PER_DEVICE * len(jax.local_devices())

    def _sweeps(self, q1, q2, mode, frame, q_given, q_prev, weight, max_iters, tol):
        """Up to ``BLOCK_SWEEPS`` sweeps (frames) of every chain in a batch of C chains.

        Carry: ``q1``, ``q2`` (C, nq), each chain's last two solutions. Per sweep (leading axis
        S): ``mode`` () (COLD, WARM or GIVEN), ``frame`` targets (C, ...), ``q_given`` and
        ``q_prev`` (C, nq), ``weight`` (C,) on the previous frame, ``max_iters`` () LM iterations
        (0 ends the block: only leading sweeps run). WARM starts from (and is smoothed towards)
        the constant-velocity prediction ``2 q1 - q2`` of the linear coordinates (rotations
        carried over), reusing the last sweep's Jacobians when this call solved it
        (:meth:`_lm_reuse`); COLD and GIVEN start from ``q_given``, smoothed towards ``q_prev``.
        COLD restarts the chain's carry, GIVEN (repairs) leaves it alone.

        The chains of a sweep iterate side by side (one ``while_loop`` trip = one iteration of
        every chain not yet done, :meth:`_lm_trip`) until all are done: on a smooth clip nearly
        every warm frame takes the same two iterations, so chains rarely wait. Returns the carry
        and per sweep q (S, C, nq), converged (S, C), iterations (S, C), cost (S, C).
        """
        n_sweeps = mode.shape[0]
        n_active = jnp.sum(max_iters > 0)
        lin = self.linear_qadr
        one = jax.tree.map(lambda a: a[0, 0], frame)
        n_rows = jax.eval_shape(lambda: self.residual(q1[0], one, Previous(q1[0], weight[0, 0]))).shape[0]

        def sweep(s, loop):
            q1, q2, last, out = loop
            here = jax.tree.map(lambda a: a[s], frame)
            warm = mode[s] == WARM
            q_init = jnp.where(warm, q1.at[:, lin].add(q1[:, lin] - q2[:, lin]), q_given[s])
            prev = Previous(jnp.where(warm, q_init, q_prev[s]), weight[s])
            lam = jnp.where(warm, LAMBDA_WARM, LAMBDA_INIT)
            reuse = warm & (s > 0) & (mode[jnp.maximum(s - 1, 0)] != GIVEN)
            lm = jax.lax.cond(
                reuse,
                lambda: jax.vmap(self._lm_reuse, in_axes=(0, 0, 0, 0, None, None))(
                    q_init, last, here, prev, LAMBDA_WARM, tol
                ),
                lambda: jax.vmap(lambda q: self._lm_start(q, lam, n_rows))(q_init),
            )
            lm = jax.lax.while_loop(
                lambda lm: jnp.any(~(lm.conv | (lm.it >= max_iters[s] + 1))),
                lambda lm: self._lm_trip(lm, here, prev, tol, max_iters[s]),
                lm,
            )
            out = tuple(o.at[s].set(v) for o, v in zip(out, (lm.q, lm.conv, lm.it - 1, lm.cost), strict=True))
            chained = mode[s] != GIVEN
            q2 = jnp.where(chained, jnp.where(mode[s] == COLD, lm.q, q1), q2)
            q1 = jnp.where(chained, lm.q, q1)
            return q1, q2, lm, out

        n_chains = q1.shape[0]
        blank = jax.vmap(lambda q: self._lm_start(q, LAMBDA_INIT, n_rows))(q1)
        out = (
            jnp.zeros((n_sweeps,) + q1.shape, q1.dtype),
            jnp.zeros((n_sweeps, n_chains), bool),
            jnp.zeros((n_sweeps, n_chains), jnp.int32),
            jnp.full((n_sweeps, n_chains), jnp.nan, q1.dtype),
        )
        q1, q2, _, out = jax.lax.fori_loop(0, n_active, sweep, (q1, q2, blank, out))
        return (q1, q2), out

    def _compiled_fn(self, kind: str, *args):
        """The jitted function ``kind`` compiled for ``args``; (fn, compile seconds).

        ``sweeps``: :meth:`_sweeps` with the chains split across the local devices
        (``shard_map``); args (q1, q2, mode, frame, q_given, q_prev, weight, max_iters, tol).
        ``errors``: :meth:`point_errors_m` vmapped; args (q (B, nq), frame targets).
        """
        shapes = jax.tree.map(lambda a: (np.shape(a), str(np.asarray(a).dtype)), args)
        key = (kind, str(shapes), len(jax.local_devices()))
        if key in self._compiled:
            return self._compiled[key], 0.0
        if kind == "sweeps":
            chains, per_sweep, one = P("chains"), P(None, "chains"), P()
            mesh = Mesh(np.array(jax.local_devices()), ("chains",))
            fn = jax.shard_map(
                self._sweeps,
                mesh=mesh,
                in_specs=(chains, chains, one, per_sweep, per_sweep, per_sweep, per_sweep, one, one),
                out_specs=((chains, chains), (per_sweep,) * 4),
                check_vma=False,
            )
        else:
            fn = jax.vmap(self.point_errors_m)
        t0 = time.perf_counter()
        compiled = jax.jit(fn).lower(*args).compile()
        self._compiled[key] = compiled
        return compiled, time.perf_counter() - t0

    def _run_sweeps(self, carry, mode, frame, q_given, q_prev, weight, max_iters, tol):
        """One compiled call of :meth:`_sweeps` (inside ``jax.enable_x64``). Returns the new
        carry (device arrays), per-sweep outputs as NumPy (S, C, ...), and compile seconds."""
        args = (
            *carry,
            np.asarray(mode, np.int32),
            frame,
            q_given,
            q_prev,
            weight,
            np.asarray(max_iters, np.int64),
            np.asarray(tol, np.float64),
        )
        fn, compile_s = self._compiled_fn("sweeps", *args)
        carry, out = fn(*args)
        return carry, tuple(np.asarray(x) for x in out), compile_s

    # ------------------------------------------------------------------ cold start
    def aligned_starts(self, q_start: np.ndarray, frames: Mapping[str, np.ndarray]) -> np.ndarray:
        """Cold starts (C, nq): ``q_start`` (nq,) with a free root moved rigidly so the markers
        best match each of C frames' targets (``frames``: name -> (C, ...)), by a weighted Kabsch
        fit (NumPy; model markers at ``q_start`` from MuJoCo C, which the tree reproduces). A
        frame with fewer than 3 weighted markers, or a tree without a free root, keeps
        ``q_start``."""
        n = len(next(iter(frames.values())))
        out = np.tile(np.asarray(q_start, dtype=np.float64), (n, 1))
        root = self.tree.joints[0][0] if self.tree.joints and self.tree.joints[0] else None
        markers = [t for t in self.tasks if isinstance(t, MarkerTask) and t.name in frames]
        if root is None or root.type != FREE or not markers:
            return out
        data = mujoco.MjData(self.tree.model)
        data.qpos[:] = q_start
        mujoco.mj_kinematics(self.tree.model, data)
        pts, tgt, w = [], [], []
        for t in markers:
            body = self.tree.model_body_ids[t.body_ids]
            rot = data.xmat[body].reshape(-1, 3, 3)
            local = np.broadcast_to(t.local_points(np.asarray(frames[t.name], np.float64)), (n, len(body), 3))
            pts.append(data.xpos[body] + np.einsum("mij,cmj->cmi", rot, local))  # (C, M, 3)
            p, wt = t.points_and_weights(frames[t.name])
            tgt.append(p)
            w.append(wt)
        pts, tgt, w = (np.concatenate(x, axis=1) for x in (pts, tgt, w))
        a = root.qpos_adr
        for c in range(n):
            if np.sum(w[c] > 0) < 3:
                continue
            target = np.where(np.isfinite(tgt[c]), tgt[c], 0.0)
            rot, cp, ct = kabsch(pts[c], target, w[c])
            quat = matrix_to_quat_wxyz(rot)
            out[c, a : a + 3] = rot @ (out[c, a : a + 3] - cp) + ct
            mujoco.mju_mulQuat(out[c, a + 3 : a + 7], quat, np.array(q_start[a + 3 : a + 7]))
        return out

    # ------------------------------------------------------------------ host entry points
    def resolve_frames(
        self,
        frames: np.ndarray,
        targets: Mapping[str, np.ndarray],
        q_init: np.ndarray,
        q_prev: np.ndarray,
        prev_weight: np.ndarray,
        max_iters: int = 50,
        tol: float = 1e-6,
    ):
        """Re-solve chosen ``frames`` (k,) from ``q_init`` (k, nq) smoothed towards ``q_prev``
        (k, nq) with ``prev_weight`` (k,). Returns (q (k, nq), converged (k,), iterations (k,)).

        Runs through the same compiled sweeps as :func:`solve_clip` (GIVEN sweeps), in calls of
        ``BLOCK_SWEEPS x chain_batch`` frames, so any ``k`` reuses one compiled function."""
        frames = np.asarray(frames, dtype=np.int64)
        q_init, q_prev = np.asarray(q_init, np.float64), np.asarray(q_prev, np.float64)
        prev_weight = np.asarray(prev_weight, np.float64)
        k, chains = len(frames), self.chain_batch
        per_call = BLOCK_SWEEPS * chains
        q, conv, iters = np.empty((k, self.tree.nq)), np.zeros(k, bool), np.zeros(k, np.int64)
        carry = (np.zeros((chains, self.tree.nq)),) * 2
        with jax.enable_x64(True):
            for lo in range(0, k, per_call):
                n = min(per_call, k - lo)
                rows = lo + np.minimum(np.arange(per_call), n - 1).reshape(BLOCK_SWEEPS, chains)
                used = np.arange(BLOCK_SWEEPS) * chains < n
                frame = {name: arr[frames[rows]] for name, arr in targets.items()}
                _, out, _ = self._run_sweeps(
                    carry,
                    np.full(BLOCK_SWEEPS, GIVEN),
                    frame,
                    q_init[rows],
                    q_prev[rows],
                    prev_weight[rows],
                    np.where(used, max_iters, 0),
                    tol,
                )
                q[lo : lo + n] = out[0].reshape(per_call, -1)[:n]
                conv[lo : lo + n] = out[1].reshape(-1)[:n]
                iters[lo : lo + n] = out[2].reshape(-1)[:n]
        return q, conv, iters


def _rows(mask: jnp.ndarray, a: jnp.ndarray) -> jnp.ndarray:
    """``mask`` (C,) shaped to broadcast against ``a`` (C, ...)."""
    return mask.reshape(mask.shape + (1,) * (a.ndim - 1))
