"""MuJoCo C backend (:class:`~musclerl.envs.backends.Physics`): a batch of simulations stepped on a
thread pool by ``mujoco.batch.Batch``.

``mujoco.batch.Batch`` (MuJoCo 3.17) keeps the state rows of all simulations in one array and
steps them in C on ``nthread`` threads (the caller's included) without the GIL; ``bind`` gives
live (N, ...) numpy views, so reading observations costs one copy per field for the whole batch.
The batch is persistent (one MjData per env) so every derived field of an env is its own and
``mj_data(physics, i)`` can hand the whole MjData out.

``State.physics`` is the env indices (N,): the simulations live here, so stepping an older State
continues the live simulations, it does not rewind them. Random numbers come from numpy.

After a step the positions and velocities are made current (``stage=mjSTAGE_VEL``, free in a
persistent batch: the next step continues from it); ``actuator_force`` stays that of the last
substep, as after ``mj_step``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import mujoco
import mujoco.batch
import numpy as np

from musclerl.envs.state import Kinematics
from musclerl.envs.world import World
from musclerl.geometry.arrays import site_velocity

# Warnings MuJoCo raises (and then resets the MjData to qpos0) on a diverged state.
_BAD_WARNINGS = [
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
]


class CpuPhysics:
    """N MuJoCo C simulations of ``world.model`` on ``threads`` threads."""

    xp = np

    def __init__(self, world: World, num_envs: int, threads: int):
        self.world = world
        self.num_envs = num_envs
        self.batch = mujoco.batch.Batch(
            world.model, nsim=num_envs, nthread=max(int(threads), 1), persistent=True
        )
        b = self.batch
        self.qpos, self.qvel, self.act, self.ctrl = (
            b.bind("qpos"),
            b.bind("qvel"),
            b.bind("act"),
            b.bind("ctrl"),
        )
        self._root = np.array([world.root_body])  # its subtree is the whole body
        self._site_local_pos = world.model.site_pos[world.site_ids][..., None]  # (S, 3, 1) in body frame
        self._site_local_rot = np.zeros((len(world.site_ids), 3, 3))
        mat9 = np.zeros(9)
        for i, sid in enumerate(world.site_ids):
            mujoco.mju_quat2Mat(mat9, world.model.site_quat[sid])
            self._site_local_rot[i] = mat9.reshape(3, 3)
        self.warmstart = b.bind("qacc_warmstart")
        self.time = b.bind("time")
        self._fields = {
            name: b.bind(name)
            for name in (
                "xmat",
                "cvel",
                "subtree_com",
                "xpos",
                "actuator_length",
                "actuator_velocity",
                "actuator_force",
                "geom_xpos",
                "geom_xmat",
            )
        }
        self._nonfoot = np.asarray(world.nonfoot_geom_ids, dtype=int)
        #: set to a clock (e.g. ``time.process_time``) to sum the time spent inside MuJoCo's batch
        #: calls in ``mujoco_s`` (``musclerl bench env`` tells the serial work between them from
        #: it); None (the default): no clock is read
        self.clock: Callable[[], float] | None = None
        self.mujoco_s = 0.0
        #: set to a callable to have it called before every physics step, once that step's
        #: excitations are in ``ctrl`` (the steps then run one per batch call; the simulation is
        #: the same to the bit): how a rollout measures the forces over each physics step, where
        #: a read once per control step samples a 500 Hz contact force at the control rate
        self.before_physics_step: Callable[[], None] | None = None

    def set_state(
        self, physics: Any, qpos: np.ndarray, qvel: np.ndarray, act: np.ndarray
    ) -> tuple[Any, Kinematics]:
        """Every env at qpos (N, nq), qvel (N, nv), act (N, na); ``physics`` is not needed (the
        simulations live here). Returns the env indices (N,) and the kinematics."""
        ids = np.arange(self.num_envs)
        self._write(ids, qpos, qvel, act)
        return ids, self.kinematics()

    def reset_rows(self, done: np.ndarray) -> np.ndarray | None:
        """Indices (n,) of the done envs (N,) bool; None when there are none."""
        ids = np.flatnonzero(done)
        return ids if ids.size else None

    def reset(
        self,
        physics: Any,
        rows: np.ndarray,
        done: np.ndarray,
        qpos: np.ndarray,
        qvel: np.ndarray,
        act: np.ndarray,
    ) -> tuple[Any, Kinematics]:
        """Envs ``rows`` (n,) at qpos (n, nq), qvel (n, nv), act (n, na); their kinematics (n, ...)."""
        self._write(rows, qpos, qvel, act)
        return physics, self.kinematics(ids=rows)

    def merge(self, old: np.ndarray, rows: np.ndarray, done: np.ndarray, new: np.ndarray) -> np.ndarray:
        """A copy of ``old`` (N, k) with rows ``rows`` (n,) set to ``new`` (n, k)."""
        out = old.copy()
        out[rows] = new
        return out

    def _write(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, act: np.ndarray) -> np.ndarray:
        """Write the state of envs ``ids`` (n,) and run ``mj_forward`` on them; returns bad (n,) bool."""
        self.qpos[ids] = qpos
        self.qvel[ids] = qvel
        if self.act.shape[1]:
            self.act[ids] = act
        self.ctrl[ids] = 0.0
        self.warmstart[ids] = 0.0
        self.time[ids] = 0.0
        before = self._warnings()[ids]
        bad = np.zeros(len(ids), dtype=bool)
        try:
            self._call(self.batch.forward, ids)
        except mujoco.batch.SimulationError as err:
            bad[np.isin(ids, err.ids)] = True
        return bad | (self._warnings()[ids] > before)

    def step(self, physics: Any, ctrl: np.ndarray | Callable, substeps: int) -> tuple[Any, np.ndarray]:
        """``substeps`` mj_step with excitations ``ctrl``: an (N, nu) array held for all of them, or
        ``ctrl(length, velocity) -> (N, nu)`` called with the current actuator lengths and
        velocities (N, nu) before every physics step. Returns (N,) bool of envs whose state
        diverged (MuJoCo warned and reset them, or raised), with ``physics`` (unchanged: the
        simulations live here)."""
        before = self._warnings()
        bad = np.zeros(self.num_envs, dtype=bool)
        stage = mujoco.mjtStage.mjSTAGE_VEL
        length, velocity = self._fields["actuator_length"], self._fields["actuator_velocity"]
        hook = self.before_physics_step
        try:
            if callable(ctrl) or hook is not None:
                for _ in range(substeps):
                    self.ctrl[:] = ctrl(length.copy(), velocity.copy()) if callable(ctrl) else ctrl
                    if hook is not None:
                        hook()
                    self._call(self.batch.step, nstep=1, stage=stage)
            else:
                self.ctrl[:] = ctrl
                self._call(self.batch.step, nstep=substeps, stage=stage)
        except mujoco.batch.SimulationError as err:
            bad[err.ids] = True
        return physics, bad | (self._warnings() > before)

    def _call(self, method: Callable, *args, **kwargs) -> None:
        """A batch call, timed into ``mujoco_s`` when a ``clock`` is set."""
        if self.clock is None:
            method(*args, **kwargs)
            return
        start = self.clock()
        try:
            method(*args, **kwargs)
        finally:
            self.mujoco_s += self.clock() - start

    def muscle_state(self, physics: object = None) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the actuator lengths and velocities (N, nu) of every env, m and m/s."""
        return self._fields["actuator_length"].copy(), self._fields["actuator_velocity"].copy()

    def _warnings(self) -> np.ndarray:
        """(N,) count of divergence warnings each env has raised so far."""
        counts = self.batch.warning[:, :, 1]
        return counts[:, _BAD_WARNINGS[0]] + counts[:, _BAD_WARNINGS[1]] + counts[:, _BAD_WARNINGS[2]]

    def kinematics(self, physics: Any = None, ids: np.ndarray | None = None) -> Kinematics:
        """Copies of what observations and rewards read, for envs ``ids`` (n,) (default all);
        ``physics`` is not needed (the simulations live here)."""
        w = self.world
        if ids is None:  # whole batch: plain slices, gathers along the object axis only

            def take(name: str, objects: np.ndarray | None = None) -> np.ndarray:
                return self._fields[name] if objects is None else self._fields[name][:, objects]

        else:
            rows = np.asarray(ids)[:, None]

            def take(name: str, objects: np.ndarray | None = None) -> np.ndarray:
                return (
                    self._fields[name][rows[:, 0]] if objects is None else self._fields[name][rows, objects]
                )

        # tracked sites from their bodies' poses: binding site_xpos/xmat would copy every site of
        # the model (over a thousand muscle path points on myolegs) after each call
        body_rot = take("xmat", w.site_body).reshape(-1, len(w.site_ids), 3, 3)
        site_pos = take("xpos", w.site_body) + (body_rot @ self._site_local_pos)[..., 0]
        state = self.qpos, self.qvel, self.act
        qpos, qvel, act = (x.copy() for x in state) if ids is None else (x[ids] for x in state)
        return Kinematics(
            qpos=qpos,
            qvel=qvel,
            act=act,
            site_pos_m=site_pos,
            site_xmat=body_rot @ self._site_local_rot,
            site_vel_mps=site_velocity(
                take("cvel", w.site_body), take("subtree_com", w.site_body_root), site_pos, np
            ),
            foot_pos_m=take("xpos", w.foot_body_ids),
            muscle_length_m=take("actuator_length").copy(),
            muscle_velocity_mps=take("actuator_velocity").copy(),
            muscle_force_n=take("actuator_force").copy(),
            ctrl=self.ctrl.copy() if ids is None else self.ctrl[ids],
            geom_pos_m=take("geom_xpos", self._nonfoot),
            geom_xmat=take("geom_xmat", self._nonfoot).reshape(-1, len(self._nonfoot), 3, 3),
            com_m=take("subtree_com", self._root)[:, 0],
        )

    def mj_data(self, physics: Any, i: int) -> mujoco.MjData:
        """A copy of env ``i``'s whole MjData as of its last call.

        Positions and velocities (and what depends on them only) are current; acceleration-stage
        fields (actuator_force, efc_force, hence contact forces) are those of the last substep.
        Run ``mj_forward`` on the copy for a snapshot where everything belongs to one state.
        """
        return self.batch.get_data(int(i))

    def init_rng(self, rng: Any) -> np.uint64:
        """A numpy uint64 seed from a jax key (its first two words) or an int."""
        if isinstance(rng, (int, np.integer)):
            return np.uint64(rng)
        key = jax.random.key_data(rng) if jax.dtypes.issubdtype(rng.dtype, jax.dtypes.prng_key) else rng
        words = np.asarray(key, dtype=np.uint64).ravel()
        return np.uint64(sum(int(w) << (32 * i) for i, w in enumerate(words[:2])))

    def uniforms(self, rng: np.uint64, n: int, rows: int = 2) -> tuple[np.uint64, np.ndarray]:
        """Next seed and uniforms (rows, n) in [0, 1) from numpy's default generator (the first
        two rows are the same for any ``rows``)."""
        gen = np.random.default_rng(int(rng))
        u = gen.random((rows, n))
        return np.uint64(gen.integers(0, 2**63)), u
