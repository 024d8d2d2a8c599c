"""Physics backends of :class:`~musclerl.envs.tracking.TrackingEnv`: one :class:`Physics` protocol,
two implementations, and :func:`make_physics` to pick one by name.

- ``cpu`` (:mod:`.cpu`): MuJoCo C simulations stepped on a thread pool; numpy arrays; the
  simulations live in the backend and ``State.physics`` holds the env indices (N,).
- ``mjx`` (:mod:`.mjx`): pure jax functions over a batched ``mjx.Data``, which is
  ``State.physics``; everything jittable. With ``env.mjx.impl: warp`` (:mod:`.warp`) the physics
  steps are MuJoCo Warp kernels behind the same functions.

The environment's reward, observation and termination code is written once for both, against
the array module ``xp`` a backend gives; the random numbers of resets come from the backend too,
so a State's leaves are all of one kind (numpy or jax).

Resetting some envs: a backend says which rows of the batch a reset touches
(:meth:`Physics.reset_rows`): the cpu backend only the done envs (their indices), the mjx backend
every row (``slice(None)``, a fixed shape under jit) with the done mask choosing which change.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol

import mujoco

from musclerl.envs.state import Kinematics
from musclerl.envs.world import World
from musclerl.errors import InputError

BACKENDS = ("cpu", "mjx")

#: An index into the env axis: integer indices (n,) or ``slice(None)`` (all N envs).
Rows = Any


class Physics(Protocol):
    """N simulations of one ``World``, as ``TrackingEnv`` uses them.

    ``physics`` arguments are ``State.physics``; arrays are of the module :attr:`xp`, batched over
    the N envs, except where ``rows`` selects n of them.
    """

    #: array module of every array in and out (``numpy`` or ``jax.numpy``)
    xp: ModuleType

    def set_state(self, physics: Any, qpos: Any, qvel: Any, act: Any) -> tuple[Any, Kinematics]:
        """Every env at qpos (N, nq), qvel (N, nv), act (N, na), zero controls, derived fields
        computed; ``physics`` None for a fresh batch. Returns the new physics and its kinematics."""
        ...

    def reset_rows(self, done: Any) -> Rows | None:
        """The rows a reset of the envs where ``done`` (N,) touches; None when there is nothing
        to reset."""
        ...

    def reset(
        self, physics: Any, rows: Rows, done: Any, qpos: Any, qvel: Any, act: Any
    ) -> tuple[Any, Kinematics]:
        """The done envs set as in :meth:`set_state` from qpos (n, nq), qvel (n, nv), act (n, na)
        given for ``rows`` (from :meth:`reset_rows`); returns the physics and the kinematics of
        ``rows`` (n, ...)."""
        ...

    def merge(self, old: Any, rows: Rows, done: Any, new: Any) -> Any:
        """``old`` (N, k) with the done envs' rows replaced by ``new`` (n, k) given for ``rows``."""
        ...

    def step(self, physics: Any, ctrl: Any | Callable[[Any, Any], Any], substeps: int) -> tuple[Any, Any]:
        """``substeps`` physics steps with excitations ``ctrl``: (N, nu) held for all of them, or
        ``ctrl(length, velocity) -> (N, nu)`` called with the actuator lengths and velocities
        (N, nu) before every physics step. Returns the physics and (N,) bool of envs whose
        simulation diverged (beyond what :func:`~musclerl.envs.termination.is_bad` sees)."""
        ...

    def muscle_state(self, physics: Any) -> tuple[Any, Any]:
        """Actuator lengths and velocities (N, nu), m and m/s."""
        ...

    def kinematics(self, physics: Any) -> Kinematics:
        """What observations, rewards and termination read, (N, ...)."""
        ...

    def mj_data(self, physics: Any, i: int) -> mujoco.MjData:
        """Env ``i`` as a MuJoCo C ``MjData`` (a copy), for rendering and contact analysis."""
        ...

    def init_rng(self, rng: Any) -> Any:
        """The backend's random state from a jax key (or an int seed)."""
        ...

    def uniforms(self, rng: Any, n: int, rows: int = 2) -> tuple[Any, Any]:
        """Next random state and uniforms (rows, n) in [0, 1)."""
        ...


def make_physics(
    name: str, world: World, num_envs: int, threads: int = 1, mjx: Any = None, qpos_frames: Any = None
) -> Physics:
    """The backend ``name`` (one of :data:`BACKENDS`) for ``num_envs`` copies of ``world.model``;
    ``threads`` is the cpu backend's thread pool; ``mjx`` the env config's ``MjxConfig`` (its
    ``impl``, and for Warp its buffer sizes, 0 meaning sized from ``qpos_frames`` (T, nq), the
    reference frames the envs start from)."""
    # imported here: each backend loads its own heavy stack (mujoco.batch, or jax and MJX)
    if name == "cpu":
        from musclerl.envs.backends.cpu import CpuPhysics

        return CpuPhysics(world, num_envs, threads)
    if name == "mjx":
        impl = getattr(mjx, "impl", "jax")
        if impl == "warp":
            from musclerl.envs.backends.warp import WarpPhysics, buffer_sizes, require_warp

            require_warp()
            nconmax, njmax = mjx.nconmax, mjx.njmax
            if not (nconmax and njmax):  # one or both sized from the reference frames
                frames = world.model.qpos0[None] if qpos_frames is None else qpos_frames
                sized = buffer_sizes(world.model, frames)
                nconmax, njmax = (nconmax or sized[0]), (njmax or sized[1])
            return WarpPhysics(world, num_envs, nconmax, njmax)
        from musclerl.envs.backends.mjx import MjxPhysics

        return MjxPhysics(world, num_envs, impl)
    raise InputError("TrackingEnv", f"unknown backend '{name}'; choose one of {list(BACKENDS)}")
