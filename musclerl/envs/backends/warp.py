"""MJX with MuJoCo Warp (``env.mjx.impl: warp``): the :class:`~.mjx.MjxPhysics` backend whose
physics steps run as Warp kernels (GPU, or Warp's CPU device where no GPU is present).

What differs from MJX's JAX implementation, and why:

- **No vmap.** Warp batches worlds itself: a ``Data`` whose per-world fields carry a leading env
  axis (N, ...) is stepped as N worlds in one kernel launch. Fields that Warp keeps for all worlds
  together (the contact and constraint buffers) have no env axis, so the batch is built field by
  field (:func:`batched`) and merged by :func:`where` (a ``jnp.where`` over every leaf would
  give the shared buffers an env axis and Warp refuses them).
- **Derived fields by ``forward``.** MJX-Warp exposes ``step``, ``forward``, ``kinematics``,
  ``com_pos``, ``tendon`` and ``collision``, not ``transmission`` or ``com_vel``: after the
  substeps the state's derived fields come from one ``forward``, ``actuator_force`` then set back
  to the last substep's, as on the other backends. Between the substeps of a PD action space,
  which reads actuator lengths and velocities before every physics step, a model whose actuators
  all pull on tendons (the muscle models) gets them from ``kinematics``, ``com_pos``, ``tendon``
  (length = gear x tendon length, velocity = gear x J qvel over the sparse tendon Jacobian): no
  collision, mass matrix or constraint solve. Other models take a ``forward`` there too.
- **Buffers sized from the model, overflow caught.** Contacts live in one buffer of ``naconmax``
  for all worlds, constraints in ``njmax`` per world. Both are sized from the environment's own
  reference frames (:func:`buffer_sizes`: the most contacts and constraints MuJoCo C finds on any
  frame, doubled, at least 16 and 64) unless the config gives them. A world whose contacts or
  constraints did not fit sets a bit in Warp's per-world ``overflow``; such a world is reported
  (env index, and which buffer), flagged bad and reset like a diverged one, never trained on.
  Non-finite states are reported the same way.

Float32 throughout, like MJX; on one step it matches MuJoCo C as MJX-JAX does (to about 1e-6 in
qpos; tests/test_envs_backends.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.envs.backends.mjx import MjxPhysics, mjx
from musclerl.envs.world import World
from musclerl.errors import InputError

try:  # MJX's own table of which Data fields carry the world axis under Warp
    from mujoco.mjx._src.types import tree_path_to_attr_str
    from mujoco.mjx.warp import WARP_INSTALLED
    from mujoco.mjx.warp import types as warp_types
except ImportError:  # pragma: no cover - mujoco-mjx without its warp module
    WARP_INSTALLED = False

#: Warp's overflow bits that mean a buffer was too small (mujoco_warp ``OverflowType``): nefc >
#: njmax (1), njmax_nnz (2), broadphase (4), narrowphase/contacts (8), CCD (16), heightfield (32).
#: Solver iteration limits (bits 10, 11) are not overflows of ours.
OVERFLOW_BITS = {
    1: "constraints (njmax)",
    2: "constraint Jacobian",
    4: "broadphase",
    8: "contacts (naconmax)",
    16: "CCD",
    32: "heightfield",
}
_OVERFLOW_MASK = sum(OVERFLOW_BITS)

MIN_CONTACTS_PER_ENV = 16
MIN_CONSTRAINTS_PER_ENV = 64


def require_warp() -> None:
    """A one-line error when the Warp extra is not installed."""
    if not WARP_INSTALLED:
        raise InputError(
            "env.mjx.impl",
            "'warp' needs warp-lang (pip install -e \".[gpu]\", which pins the version matching mujoco)",
        )
    import warp

    warp.config.log_level = warp.LOG_WARNING  # no banner or per-kernel lines on stdout (JSON stays clean)


def buffer_sizes(model: mujoco.MjModel, qpos_frames: np.ndarray, max_frames: int = 200) -> tuple[int, int]:
    """Contacts and constraints per env for Warp's buffers: twice the most MuJoCo C finds at any
    of up to ``max_frames`` frames of ``qpos_frames`` (T, nq) (the motions the env starts from),
    at least :data:`MIN_CONTACTS_PER_ENV` / :data:`MIN_CONSTRAINTS_PER_ENV`. Doubling covers a
    policy's feet pressing deeper or more geoms touching than the reference does; what still does
    not fit is caught per world (``overflow``)."""
    data = mujoco.MjData(model)
    rows = np.linspace(0, len(qpos_frames) - 1, min(len(qpos_frames), max_frames)).astype(int)
    ncon = nefc = 0
    for t in rows:
        data.qpos[:] = qpos_frames[t]
        mujoco.mj_forward(model, data)
        ncon, nefc = max(ncon, data.ncon), max(nefc, data.nefc)
    return max(2 * ncon, MIN_CONTACTS_PER_ENV), max(2 * nefc, MIN_CONSTRAINTS_PER_ENV)


def _has_world_axis(path: Any) -> bool:
    return bool(warp_types._BATCH_DIM["Data"].get(tree_path_to_attr_str(path), True))


def batched(data: mjx.Data, num_envs: int) -> mjx.Data:
    """``data`` of one world as ``num_envs`` worlds: per-world fields broadcast to (N, ...), the
    buffers Warp shares between worlds left as they are."""

    def one(path: Any, x: Any) -> Any:
        return jnp.broadcast_to(x, (num_envs,) + x.shape) if _has_world_axis(path) else x

    return jax.tree_util.tree_map_with_path(one, data)


def where(mask: Any, new: mjx.Data, old: mjx.Data) -> mjx.Data:
    """The worlds of ``new`` where ``mask`` (N,), else of ``old``; the shared buffers of ``old``
    (``Data.where`` of MJX, for an (N,) mask outside vmap)."""

    def one(path: Any, a: Any, b: Any) -> Any:
        if not _has_world_axis(path):
            return b
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree_util.tree_map_with_path(one, new, old)


class WarpPhysics(MjxPhysics):
    """``mjx.put_model(impl="warp")`` of ``world.model`` and N worlds stepped by Warp."""

    def __init__(self, world: World, num_envs: int, nconmax: int, njmax: int):
        require_warp()
        self._init_arrays(world, num_envs)
        self.model = mjx.put_model(world.model, impl="warp")
        self.contacts_per_env, self.njmax = int(nconmax), int(njmax)
        template = mjx.make_data(
            world.model, impl="warp", naconmax=self.contacts_per_env * num_envs, njmax=self.njmax
        )
        self._batch = batched(template, num_envs)
        m = world.model
        self._tendon_driven = bool(m.nu) and bool(np.all(m.actuator_trntype == mujoco.mjtTrn.mjTRN_TENDON))
        if self._tendon_driven:  # the sparse tendon Jacobian's layout, as Warp keeps it
            impl = self.model._impl
            rownnz, colind = np.asarray(impl.ten_J_rownnz), np.asarray(impl.ten_J_colind)
            self._j_row = jnp.asarray(np.repeat(np.arange(m.ntendon), rownnz))  # (nnz,) tendon of entry
            self._j_col = jnp.asarray(colind)  # (nnz,) dof of entry
            self._act_tendon = jnp.asarray(m.actuator_trnid[:, 0])  # (nu,)
            self._gear = jnp.asarray(m.actuator_gear[:, 0], dtype=jnp.float32)  # (nu,)

    def empty(self) -> mjx.Data:
        """A batch of N default worlds (state to be written by ``set_state``)."""
        return self._batch

    def _forward(self, d: mjx.Data) -> mjx.Data:
        """Every derived field at the current state, ``actuator_force`` kept as it was."""
        return mjx.forward(self.model, d).replace(actuator_force=d.actuator_force)

    def _muscle_state_now(self, d: mjx.Data) -> tuple[Any, Any]:
        """Actuator lengths and velocities (N, nu) at the current qpos/qvel of a stepped ``d``
        (whose derived fields are those of the state before the step)."""
        if not self._tendon_driven:
            d = self._forward(d)
            return d.actuator_length, d._impl.actuator_velocity
        m = self.model
        d = mjx.tendon(m, mjx.com_pos(m, mjx.kinematics(m, d)))  # the Jacobian needs cdof, subtree_com
        j_qvel = d._impl.ten_J * d.qvel[:, self._j_col]  # (N, nnz)
        ten_velocity = jax.ops.segment_sum(j_qvel.T, self._j_row, num_segments=self.world.model.ntendon).T
        return self._gear * d.ten_length[:, self._act_tendon], self._gear * ten_velocity[:, self._act_tendon]

    def _write(self, data: mjx.Data, mask: Any, qpos: Any, qvel: Any, act: Any) -> mjx.Data:
        """Worlds where ``mask`` (N,) get qpos (N, nq), qvel (N, nv), act (N, na), zero controls
        and warm start, and their derived fields recomputed; the others are unchanged (every
        world is written and recomputed, :func:`where` keeps the masked ones)."""
        dtype = data.qpos.dtype
        fresh = data.replace(
            qpos=qpos.astype(dtype),
            qvel=qvel.astype(dtype),
            act=act.astype(dtype),
            ctrl=jnp.zeros_like(data.ctrl),
            qacc_warmstart=jnp.zeros_like(data.qacc_warmstart),
            time=jnp.zeros_like(data.time),
        )
        fresh = mjx.forward(self.model, fresh)  # actuator_force at the written state, as fwd_actuation
        return where(mask, fresh, data)

    def step(
        self, data: mjx.Data, ctrl: Any | Callable[[Any, Any], Any], substeps: int
    ) -> tuple[mjx.Data, Any]:
        """``substeps`` Warp steps of all worlds with excitations ``ctrl`` ((N, nu), or a function
        of actuator lengths and velocities called before every physics step), then the derived
        fields. Returns the (N,) flags of worlds whose buffers overflowed or whose state is not
        finite (reported on stderr with their indices)."""
        if callable(ctrl):  # data's derived fields are current (reset or last control step)

            def substep(_, d: mjx.Data) -> mjx.Data:
                u = ctrl(*self._muscle_state_now(d)).astype(d.ctrl.dtype)
                return mjx.step(self.model, d.replace(ctrl=u))

            u = ctrl(data.actuator_length, data._impl.actuator_velocity).astype(data.ctrl.dtype)
            data = mjx.step(self.model, data.replace(ctrl=u))
            data = self._forward(jax.lax.fori_loop(1, substeps, substep, data))
        else:
            data = data.replace(ctrl=ctrl.astype(data.ctrl.dtype))
            data = jax.lax.fori_loop(0, substeps, lambda _, d: mjx.step(self.model, d), data)
            data = self._forward(data)
        overflow = jnp.bitwise_and(data._impl.overflow.reshape(self.num_envs), _OVERFLOW_MASK)
        finite = jnp.isfinite(data.qpos).all(axis=1) & jnp.isfinite(data.qvel).all(axis=1)
        bad = (overflow != 0) | ~finite
        jax.lax.cond(
            bad.any(),
            lambda: jax.debug.callback(_report, overflow, finite, self.contacts_per_env, self.njmax),
            lambda: None,
        )
        return data, bad


def _report(overflow: np.ndarray, finite: np.ndarray, contacts_per_env: int, njmax: int) -> None:
    """One stderr line per kind of failure, naming the env indices (called from the device)."""
    overflow, finite = np.asarray(overflow), np.asarray(finite)
    for bit, what in OVERFLOW_BITS.items():
        envs = np.nonzero(overflow & bit)[0]
        if len(envs):
            print(
                f"musclerl: warning: warp: {what} buffer overflowed in env(s) {envs.tolist()} "
                f"({contacts_per_env} contacts, {njmax} constraints per env; raise env.mjx.nconmax / "
                "njmax): those envs are reset",
                file=sys.stderr,
            )
    envs = np.nonzero(~finite)[0]
    if len(envs):
        print(
            f"musclerl: warning: warp: non-finite state in env(s) {envs.tolist()}: those envs are reset",
            file=sys.stderr,
        )
