"""``TrackingEnv``: functional, batched motion tracking with muscle excitations as actions.

::

    env = TrackingEnv("tiny", motion, EnvConfig(), backend="cpu", num_envs=64, threads=2)
    state = env.reset(jax.random.PRNGKey(0))       # State, leaves (N, ...)
    state = env.step(state, action)                # action (N, nu) excitations, clipped to [0, 1]

One step: excitations for ``substeps`` physics steps, then the reward and termination against
the reference at the new clip time, the observation, and an automatic reset of every env that is
done (a fresh reference-state initialisation at a sampled clip and time, never a cached state).
``info['terminal_obs']`` keeps the observation reached before that reset.

A NaN or exploding physics state (non-finite qpos/qvel/act, |qvel| above
``termination.max_qvel``, or a MuJoCo divergence warning) ends that env only: it is reported as
terminated with reward 0, counted in ``metrics['nan_reset']``, its observations (obs and
terminal_obs) are zeros before the reset replaces them, so no NaN reaches the policy batch.

Backends (:mod:`musclerl.envs.backends`, one ``Physics`` protocol; this module never asks which
it has): ``cpu`` (MuJoCo C on threads, numpy leaves, not jittable) and ``mjx`` (jax leaves;
``step`` and ``reset`` are pure and jittable, ``jax.jit(env.step)`` is the intended use). On cpu
the simulations live in the backend and ``State.physics`` only names them: stepping an older
State continues the live simulations, it does not rewind them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import mujoco

from musclerl.envs.actions import MuscleParams, make_action_space
from musclerl.envs.backends import BACKENDS, Physics, make_physics
from musclerl.envs.config import EnvConfig
from musclerl.envs.initial_state import (
    StartNoise,
    base_weights,
    clip_probabilities,
    sample_starts,
    update_fail_rate,
)
from musclerl.envs.observations import observe, piece_sizes
from musclerl.envs.reference import Reference, build_reference, frame_index, lookup
from musclerl.envs.rewards import REWARD_TERMS, reward_terms, tracking_errors
from musclerl.envs.state import Kinematics, State
from musclerl.envs.termination import (
    TERMINATION_RULES,
    deviation_scale,
    is_bad,
    nonfoot_clearance_m,
    root_height_m,
    terminated,
    tilt_rad,
    truncated,
)
from musclerl.envs.world import World, build_world
from musclerl.errors import InputError
from musclerl.motion.dataset import check_clip_lengths
from musclerl.motion.trajectory import Trajectory

_START_FIELDS = ("qpos", "qvel", "activation", "com_m")  # what an episode's start reads of the reference


class TrackingEnv:
    """Batched tracking environment over ``num_envs`` copies of a model, tracking ``motion`` (a
    :class:`~musclerl.motion.trajectory.Trajectory`, every clip of it, or its .npz path).

    Attributes: ``observation_size``, ``action_size`` (= number of actuators), ``obs_pieces``
    (piece -> size, in order), ``reference`` (:class:`Reference`), ``model`` (the compiled
    ``MjModel`` with tracked sites and terrain), ``world``, ``control_dt_s``, ``config``.
    """

    def __init__(
        self,
        model: str | os.PathLike = "myolegs",
        motion: Trajectory | str | os.PathLike | None = None,
        config: EnvConfig | dict | None = None,
        backend: str = "cpu",
        num_envs: int = 1,
        threads: int = 1,
    ):
        if motion is None:
            raise InputError("TrackingEnv", "a motion (Trajectory or .npz path) is required")
        source = f"motion for model '{motion.model_name}'" if isinstance(motion, Trajectory) else str(motion)
        if not isinstance(motion, Trajectory):
            motion = Trajectory.load(motion)
        check_clip_lengths(motion, source)
        if backend not in BACKENDS:
            raise InputError("TrackingEnv", f"unknown backend '{backend}'; choose one of {list(BACKENDS)}")
        if num_envs < 1:
            raise InputError("TrackingEnv", f"num_envs must be >= 1, got {num_envs}")
        self.config = config if isinstance(config, EnvConfig) else EnvConfig.from_dict(config)
        self.backend = backend
        self.num_envs = int(num_envs)
        self.world: World = build_world(
            str(model),
            self.config.sites,
            self.config.foot_bodies,
            motion.terrain,
            self.config.integrator,
            self.config.timestep_s,
        )
        self.model: mujoco.MjModel = self.world.model
        try:  # the one line names the motion file (when given as a path) and this model
            motion.check_model(self.model, source)
        except InputError as err:
            raise InputError(err.source, f"{err.problem}; the environment's model is '{model}'") from err
        if self.config.control_hz > 0:  # a copy: the caller's config is not changed
            substeps = max(1, int(round(1.0 / (self.config.control_hz * self.model.opt.timestep))))
            self.config = dataclasses.replace(self.config, substeps=substeps)
        self.control_dt_s = float(self.config.substeps * self.model.opt.timestep)
        self.reference: Reference = build_reference(
            self.world,
            motion,
            1.0 / self.control_dt_s,
            self.config.initial_activation == "static" or self.config.action.feedforward,
            tuple(self.config.reward.limit_joints),
        )
        self.actions = make_action_space(
            self.config.action,
            MuscleParams.from_model(self.model, self.world.peak_force_n),
            len(self.reference.coordinate_names),
        )
        m = self.model
        self.obs_pieces = piece_sizes(
            self.config.obs, m.nq, m.nv, m.nu, m.na, len(self.world.site_ids), len(self.world.foot_body_ids)
        )
        self.observation_size = int(sum(self.obs_pieces.values()))
        self.action_size = int(self.actions.size)
        weights = base_weights(self.reference.num_clips, self.config.sampling)
        self._noise = StartNoise.of(self.model, self.config.sampling)
        self._rows = 2 + (self._noise.rows if self._noise is not None else 0)  # uniforms per start
        terrain = None
        if self.world.terrain is not None:
            t = self.world.terrain
            terrain = {"height_m": t.height_m, "origin_m": t.origin_m, "cell_m": float(t.cell_m)}
        self._physics: Physics = make_physics(
            backend, self.world, self.num_envs, threads, self.config.mjx, self.reference.qpos
        )
        xp = self._xp = self._physics.xp
        if terrain is not None:
            terrain = {k: (xp.asarray(v) if k != "cell_m" else v) for k, v in terrain.items()}
        self._ref = self.reference.as_arrays(xp)
        self._weights = xp.asarray(weights)
        g = self.world.nonfoot_geom_ids
        self._consts = {
            "peak_force_n": xp.asarray(self.world.peak_force_n),
            "foot_rest_height_m": xp.asarray(self.world.foot_rest_height_m),
            "terrain": terrain,
            "control_dt_s": self.control_dt_s,
            "nonfoot_geoms": {
                "kind": xp.asarray(m.geom_type[g]),
                "size": xp.asarray(m.geom_size[g]),
                "rbound": xp.asarray(m.geom_rbound[g]),
            },
        }

    # ------------------------------------------------------------------ public API
    def reset(self, rng: Any, clip: Any = None, time_s: Any = None) -> State:
        """Fresh episodes for all envs: RSI at sampled clips/times (with the initial-state noise
        of ``sampling``), or at the given ``clip`` (N,) and ``time_s`` (N,) exactly (e.g. clip
        starts, for evaluation)."""
        xp, n = self._xp, self.num_envs
        rng, u = self._physics.uniforms(self._physics.init_rng(rng), n, self._rows)
        fail_rate = xp.zeros(self.reference.num_clips)
        noise = None
        if clip is None:
            probs = clip_probabilities(self._weights, fail_rate, self.config.sampling, xp)
            clip, time_s = sample_starts(
                u[0], u[1], probs, self._ref, self.control_dt_s, self.config.sampling, xp
            )
            noise = u[2:]
        else:
            clip = xp.asarray(clip, dtype=xp.int32) + xp.zeros(n, dtype=xp.int32)
            time_s = xp.asarray(time_s if time_s is not None else 0.0) + xp.zeros(n)
        start = lookup(self._ref, clip, time_s, xp, _START_FIELDS)
        qpos, qvel = self._start_state(start, noise)
        physics, kin = self._physics.set_state(None, qpos, qvel, self._start_act(start))
        com_offset = self._com_offset_history(kin, start)
        obs = self._observe(kin, clip, time_s)
        zeros = xp.zeros(n)
        false = xp.zeros(n, dtype=bool)
        metrics = self._zero_metrics()
        info = {
            "terminal_obs": obs,
            "clip": clip,
            "time_s": time_s,
            "frame": frame_index(self._ref, clip, time_s, xp)[0],
            "steps": xp.zeros(n, dtype=xp.int32),
            "last_action": xp.zeros((n, self.action_size)) + xp.asarray(self.actions.neutral),
            "last_ctrl": kin.ctrl,
            "clip_fail_rate": fail_rate,
            "com_offset_m": com_offset,
        }
        return State(
            physics=physics,
            obs=obs,
            reward=zeros,
            done=false,
            terminated=false,
            truncated=false,
            metrics=metrics,
            info=info,
            rng=rng,
        )

    def step(self, state: State, action: Any) -> State:
        """Advance every env one control step (``substeps`` physics steps) and auto-reset done ones.

        ``action`` (N, A) in the action space's bounds (clipped to them)."""
        xp, cfg = self._xp, self.config
        action = xp.clip(xp.asarray(action), self.actions.low, self.actions.high)
        clip = state.info["clip"]
        time_s = state.info["time_s"] + self.control_dt_s
        steps = state.info["steps"] + 1
        target = lookup(self._ref, clip, time_s, xp)
        length, velocity = self._physics.muscle_state(state.physics)
        ctrl = self.actions.controller(action, target, length, velocity, xp)
        physics, bad_sim = self._physics.step(state.physics, ctrl, cfg.substeps)
        kin = self._physics.kinematics(physics)
        offset = kin.com_m - target["com_m"]  # (N, 3); the last two control steps' in com_offset_m
        history = state.info["com_offset_m"]
        dt = self.control_dt_s
        kin = kin.replace(com_acc_err_mps2=(offset - 2.0 * history[:, :3] + history[:, 3:]) / (dt * dt))
        errors = tracking_errors(kin, target, state.info["last_ctrl"], xp)
        terms = reward_terms(errors, cfg.reward, xp)
        bad = is_bad(kin, cfg.termination.max_qvel, xp) | bad_sim
        height = root_height_m(kin, self._consts["terrain"], xp)
        term, reasons = terminated(
            errors,
            height,
            tilt_rad(kin.qpos, target["qpos"], xp),
            nonfoot_clearance_m(kin, self._consts, xp),
            deviation_scale(steps, self.control_dt_s, cfg, xp),
            bad,
            cfg,
            xp,
        )
        trunc = truncated(steps, clip, time_s, self.control_dt_s, self._ref, cfg, xp) & ~term
        done = term | trunc
        obs = xp.where(bad[:, None], 0.0, self._observe(kin, clip, time_s))
        metrics = {k: xp.where(bad, 0.0, v) for k, v in terms.items()}
        metrics.update(
            site_err_m=xp.where(bad, 0.0, errors["site_err_m"]),
            site_err_local_m=xp.where(bad, 0.0, errors["site_err_local_m"]),
            root_height_m=xp.where(bad, 0.0, height),
            nan_reset=bad.astype(obs.dtype),
            terminated=term.astype(obs.dtype),
            truncated=trunc.astype(obs.dtype),
        )
        metrics.update({f"term/{k}": v.astype(obs.dtype) for k, v in reasons.items()})
        fail_rate = update_fail_rate(
            state.info["clip_fail_rate"], clip, done, term & ~bad, cfg.sampling.adaptive_ema, xp
        )
        rng, u = self._physics.uniforms(state.rng, self.num_envs, self._rows)
        probs = clip_probabilities(self._weights, fail_rate, cfg.sampling, xp)
        new_clip, new_time = sample_starts(u[0], u[1], probs, self._ref, self.control_dt_s, cfg.sampling, xp)
        history = xp.concatenate([offset, history[:, :3]], axis=1)
        physics, next_obs, reset_ctrl, history = self._auto_reset(
            physics, done, obs, new_clip, new_time, kin.ctrl, u[2:], history
        )
        clip = xp.where(done, new_clip, clip)
        time_s = xp.where(done, new_time, time_s)
        info = {
            "terminal_obs": obs,
            "clip": clip,
            "time_s": time_s,
            "frame": frame_index(self._ref, clip, time_s, xp)[0],
            "steps": xp.where(done, 0, steps).astype(xp.int32),
            "last_action": xp.where(done[:, None], xp.asarray(self.actions.neutral), action),
            "last_ctrl": reset_ctrl,
            "clip_fail_rate": fail_rate,
            "com_offset_m": history,
        }
        return State(
            physics=physics,
            obs=next_obs,
            reward=metrics["reward/total"],
            done=done,
            terminated=term,
            truncated=trunc,
            metrics=metrics,
            info=info,
            rng=rng,
        )

    def with_physics(self, state: State, qpos: Any, qvel: Any, act: Any) -> State:
        """``state`` with every env's physics set to qpos (N, nq), qvel (N, nv), act (N, na) and the
        observation recomputed (clip, time and the rest of info kept). For tests and analysis."""
        xp = self._xp
        physics, kin = self._physics.set_state(
            state.physics, xp.asarray(qpos), xp.asarray(qvel), xp.asarray(act)
        )
        obs = self._observe(kin, state.info["clip"], state.info["time_s"])
        return state.replace(physics=physics, obs=obs, info={**state.info, "terminal_obs": obs})

    def kinematics(self, state: State) -> Kinematics:
        """What observations and rewards read from ``state.physics`` (N, ...)."""
        return self._physics.kinematics(state.physics)

    def physics_data(self, i: int, state: State | None = None) -> mujoco.MjData:
        """A copy of env ``i``'s MjData. cpu: as of its last step, ``state`` not needed (see
        ``CpuPhysics.mj_data``: run ``mj_forward`` on it before reading contact forces); mjx:
        ``mj_forward`` at ``state``'s qpos, qvel and act (required)."""
        return self._physics.mj_data(None if state is None else state.physics, i)

    def call_before_physics_steps(self, hook: Callable[[], None] | None) -> None:
        """cpu: call ``hook()`` before every physics step of each later :meth:`step`, with that
        step's excitations set (``physics_data`` then holds the state the step starts from);
        None stops it. The simulation is unchanged."""
        if not hasattr(self._physics, "before_physics_step"):
            raise NotImplementedError(f"physics-step hooks need the cpu backend, not {self.backend!r}")
        self._physics.before_physics_step = hook

    # ------------------------------------------------------------------ helpers
    def _observe(self, kin: Kinematics, clip: Any, time_s: Any) -> Any:
        return observe(kin, self._ref, clip, time_s, self.config.obs, self._consts, self._xp)

    def _zero_metrics(self) -> dict[str, Any]:
        xp, n = self._xp, self.num_envs
        names = [f"reward/{t}" for t in (*REWARD_TERMS, "total")]
        names += ["site_err_m", "site_err_local_m", "root_height_m", "nan_reset", "terminated", "truncated"]
        names += [f"term/{k}" for k in TERMINATION_RULES]
        return {k: xp.zeros(n) for k in names}

    def _auto_reset(
        self, physics: Any, done: Any, obs: Any, clip: Any, time_s: Any, ctrl: Any, noise: Any, history: Any
    ) -> tuple[Any, Any, Any, Any]:
        """Reset the done envs at (clip, time_s) (with the start noise of uniforms ``noise``
        (rows, N)); return physics, the post-reset observation, the excitations (N, nu) the
        next step's action-rate penalty compares with and the centre-of-mass offset history (N, 6)."""
        rows = self._physics.reset_rows(done)
        if rows is None:
            return physics, obs, ctrl, history
        start = lookup(self._ref, clip[rows], time_s[rows], self._xp, _START_FIELDS)
        qpos, qvel = self._start_state(start, noise[:, rows])
        physics, kin = self._physics.reset(physics, rows, done, qpos, qvel, self._start_act(start))
        fresh = self._observe(kin, clip[rows], time_s[rows])
        merge = self._physics.merge
        started = self._com_offset_history(kin, start)
        return (
            physics,
            merge(obs, rows, done, fresh),
            merge(ctrl, rows, done, kin.ctrl),
            merge(history, rows, done, started),
        )

    def _com_offset_history(self, kin: Kinematics, start: dict[str, Any]) -> Any:
        """(n, 6) the centre of mass's offset from the reference's (3,) twice: an episode starts
        as if it had held that offset (start noise moves the body off the reference), so its first
        steps' ``com_acc`` error is the acceleration since the start, not the start's offset."""
        offset = kin.com_m - start["com_m"]
        return self._xp.concatenate([offset, offset], axis=1)

    def _start_state(self, start: dict[str, Any], noise: Any) -> tuple[Any, Any]:
        """qpos (n, nq), qvel (n, nv) an episode starts from at the reference state ``start``: with
        ``sampling``'s initial-state noise from uniforms ``noise`` (rows, n) (None: exactly)."""
        if self._noise is None or noise is None:
            return start["qpos"], start["qvel"]
        return self._noise.apply(start["qpos"], start["qvel"], noise, self._xp)

    def _start_act(self, start: dict[str, Any]) -> Any:
        """Activations (n, na) an episode starts with at the reference state ``start``."""
        n = start["qpos"].shape[0]
        if self.config.initial_activation == "static":
            return start["activation"]
        return self._xp.zeros((n, self.model.na))
