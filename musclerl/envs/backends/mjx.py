"""MJX backend (:class:`~musclerl.envs.backends.Physics`): the same physics as pure jax functions
over a batched ``mjx.Data``, which is ``State.physics``; random numbers from ``jax.random``.

Everything here is jittable and vmapped over the env axis; ``TrackingEnv.step`` on this backend
can be jitted, vmapped and scanned. As on the CPU backend, positions and velocities are made
current after the physics substeps (kinematics, com, tendons, transmission, com velocity: no
collision or constraint solve), and ``actuator_force`` stays that of the last substep; a reset
computes it at the reset state (``fwd_actuation``).

MJX runs in float32 unless ``jax_enable_x64`` is set, so it matches the float64 CPU backend to
about 1e-4 relative on a single step (see tests/test_envs_backends.py).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mujoco

with contextlib.redirect_stdout(io.StringIO()):  # MJX prints "Failed to import warp" to stdout
    from mujoco import mjx

from musclerl.envs.state import Kinematics
from musclerl.envs.world import World
from musclerl.errors import InputError
from musclerl.geometry.arrays import site_velocity


class MjxPhysics:
    """``mjx.put_model`` of ``world.model`` and batched pure functions over ``mjx.Data``."""

    xp = jnp

    def __init__(self, world: World, num_envs: int, impl: str = "jax"):
        if world.model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST and world.model.nu:
            warnings.warn(
                "MJX's implicitfast integrator leaves out the muscle force-velocity derivative that "
                "MuJoCo C includes: cpu and mjx dynamics differ; set integrator: euler in the env "
                "config for identical stepping",
                stacklevel=4,  # the caller of TrackingEnv (through make_physics)
            )
        self._init_arrays(world, num_envs)
        self.model = mjx.put_model(world.model, impl=impl)
        self._template = mjx.make_data(self.model)

    def _init_arrays(self, world: World, num_envs: int) -> None:
        """What every implementation keeps: the world, N and the index arrays kinematics reads."""
        self.world = world
        self.num_envs = num_envs
        self._site_ids = jnp.asarray(world.site_ids)
        self._site_body = jnp.asarray(world.site_body)
        self._site_root = jnp.asarray(world.site_body_root)
        self._feet = jnp.asarray(world.foot_body_ids)
        self._nonfoot = jnp.asarray(world.nonfoot_geom_ids, dtype=jnp.int32)

    def empty(self) -> mjx.Data:
        """A batch of N default Data (state to be written by ``set_state``)."""
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (self.num_envs,) + x.shape), self._template)

    def _refresh(self, d: mjx.Data) -> mjx.Data:
        """Position- and velocity-dependent fields at the current qpos/qvel (one env)."""
        m = self.model
        d = mjx.kinematics(m, d)
        d = mjx.com_pos(m, d)
        d = mjx.tendon(m, d)
        d = mjx.transmission(m, d)
        d = mjx.com_vel(m, d)
        # jax impl keeps actuator_velocity in _impl; fwd_velocity computes it the same way
        return d.tree_replace({"_impl.actuator_velocity": d._impl.actuator_moment @ d.qvel})

    def set_state(self, data: mjx.Data | None, qpos: Any, qvel: Any, act: Any) -> tuple[mjx.Data, Kinematics]:
        """Every env at qpos (N, nq), qvel (N, nv), act (N, na) in ``data`` (None: a fresh batch)."""
        data = self.empty() if data is None else data
        data = self._write(data, jnp.ones(self.num_envs, dtype=bool), qpos, qvel, act)
        return data, self.kinematics(data)

    def reset_rows(self, done: Any) -> slice:
        """Every row (a fixed shape under jit); :meth:`reset` and :meth:`merge` mask with ``done``."""
        return slice(None)

    def reset(
        self, data: mjx.Data, rows: slice, done: Any, qpos: Any, qvel: Any, act: Any
    ) -> tuple[mjx.Data, Kinematics]:
        """Envs where ``done`` (N,) at qpos (N, nq), qvel (N, nv), act (N, na); all kinematics."""
        data = self._write(data, done, qpos, qvel, act)
        return data, self.kinematics(data)

    def merge(self, old: Any, rows: slice, done: Any, new: Any) -> Any:
        """``new`` (N, k) where ``done`` (N,), else ``old`` (N, k)."""
        return jnp.where(done[:, None], new, old)

    def _write(self, data: mjx.Data, mask: Any, qpos: Any, qvel: Any, act: Any) -> mjx.Data:
        """Envs where ``mask`` (N,) get qpos (N, nq), qvel (N, nv), act (N, na), zero controls and
        warm start, and their derived fields recomputed; the others are unchanged."""

        def one(d: mjx.Data, m_i: Any, q: Any, v: Any, a: Any) -> mjx.Data:
            fresh = d.replace(
                qpos=q,
                qvel=v,
                act=a,
                ctrl=jnp.zeros_like(d.ctrl),
                qacc_warmstart=jnp.zeros_like(d.qacc_warmstart),
                time=jnp.zeros_like(d.time),
            )
            fresh = mjx.fwd_actuation(self.model, self._refresh(fresh))
            return jax.tree.map(lambda new, old: jnp.where(m_i, new, old), fresh, d)

        return jax.vmap(one)(
            data, mask, qpos.astype(data.qpos.dtype), qvel.astype(data.qvel.dtype), act.astype(data.act.dtype)
        )

    def step(
        self, data: mjx.Data, ctrl: Any | Callable[[Any, Any], Any], substeps: int
    ) -> tuple[mjx.Data, Any]:
        """``substeps`` mjx.step with excitations ``ctrl``: (N, nu) held for all of them, or
        ``ctrl(length, velocity) -> (N, nu)`` called with the current actuator lengths and
        velocities (N, nu) before every physics step (as on the cpu backend); then the refresh.
        Divergence shows in the state itself (NaN, exploding qvel), so the (N,) bad flags are
        all False."""
        return self._step(data, ctrl, substeps), jnp.zeros(self.num_envs, dtype=bool)

    def _step(self, data: mjx.Data, ctrl: Any | Callable[[Any, Any], Any], substeps: int) -> mjx.Data:
        if not callable(ctrl):

            def one(d: mjx.Data, u: Any) -> mjx.Data:
                d = d.replace(ctrl=u.astype(d.ctrl.dtype))
                d = jax.lax.fori_loop(0, substeps, lambda _, x: mjx.step(self.model, x), d)
                return self._refresh(d)

            return jax.vmap(one)(data, ctrl)

        def substep(_, d: mjx.Data) -> mjx.Data:
            u = ctrl(d.actuator_length, d._impl.actuator_velocity).astype(d.ctrl.dtype)
            d = jax.vmap(lambda x, c: mjx.step(self.model, x.replace(ctrl=c)))(d, u)
            return jax.vmap(self._refresh)(d)

        return jax.lax.fori_loop(0, substeps, substep, data)

    def muscle_state(self, data: mjx.Data) -> tuple[Any, Any]:
        """Actuator lengths and velocities (N, nu) of every env, m and m/s."""
        return data.actuator_length, data._impl.actuator_velocity

    def kinematics(self, data: mjx.Data) -> Kinematics:
        """What observations and rewards read (N, ...)."""
        site_pos = data.site_xpos[:, self._site_ids]
        cvel = data.cvel[:, self._site_body]
        com = data.subtree_com[:, self._site_root]
        return Kinematics(
            qpos=data.qpos,
            qvel=data.qvel,
            act=data.act,
            site_pos_m=site_pos,
            site_xmat=data.site_xmat[:, self._site_ids].reshape(site_pos.shape[:2] + (3, 3)),
            site_vel_mps=site_velocity(cvel, com, site_pos, jnp),
            foot_pos_m=data.xpos[:, self._feet],
            muscle_length_m=data.actuator_length,
            muscle_velocity_mps=data._impl.actuator_velocity,
            muscle_force_n=data.actuator_force,
            ctrl=data.ctrl,
            geom_pos_m=data.geom_xpos[:, self._nonfoot],
            geom_xmat=data.geom_xmat[:, self._nonfoot],
            com_m=data.subtree_com[:, self.world.root_body],
        )

    def mj_data(self, data: mjx.Data | None, i: int) -> mujoco.MjData:
        """Env ``i`` of ``data`` as a MuJoCo C ``MjData`` (``mj_forward`` at its qpos, qvel, act)."""
        if data is None:
            raise InputError("physics_data", "the mjx backend keeps its physics in the State: pass the state")
        return to_mujoco_data(self.world.model, data, i)

    def init_rng(self, rng: Any) -> Any:
        """The jax key itself."""
        return rng

    def uniforms(self, rng: Any, n: int, rows: int = 2) -> tuple[Any, Any]:
        """Next key and uniforms (rows, n) in [0, 1) from ``jax.random``."""
        rng, key = jax.random.split(rng)
        return rng, jax.random.uniform(key, (rows, n))


def to_mujoco_data(model: mujoco.MjModel, data: mjx.Data, i: int) -> mujoco.MjData:
    """Env ``i`` of a batched ``mjx.Data`` as a MuJoCo C ``MjData`` (for rendering)."""
    out = mujoco.MjData(model)
    out.qpos[:] = jax.device_get(data.qpos[i])
    out.qvel[:] = jax.device_get(data.qvel[i])
    if model.na:
        out.act[:] = jax.device_get(data.act[i])
    mujoco.mj_forward(model, out)
    return out
