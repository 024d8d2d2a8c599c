"""A pure-JAX toy tracking task with the TrackingEnv interface, for fast trainer checks.

A point in R^A is driven by "excitations" a in [0, 1]^A (velocity ``(a - 0.5) * gain``) and must
follow a reference ``r(t) = amp * sin(2 pi f t + offset_i)`` per axis. Reward
``exp(-k * |x - r|^2)`` per step (maximum 1). Reference-state initialisation at a random phase
with a small position error; early termination when the error exceeds ``fail_m``; truncation at
``horizon`` steps. Auto-reset keeps the pre-reset observation in ``info["terminal_obs"]``.
Needs no MuJoCo, so it tests PPO, multi-device sharding, checkpoints and exports in seconds.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class ToyState:
    x: jax.Array  # (N, A) position
    t: jax.Array  # (N,) step within the episode
    phase: jax.Array  # (N,) reference phase offset in steps
    rng: jax.Array  # (N, 2) per-env keys for resets
    obs: jax.Array  # (N, 2A + 2)
    reward: jax.Array  # (N,)
    done: jax.Array  # (N,) bool
    terminated: jax.Array  # (N,) bool
    truncated: jax.Array  # (N,) bool
    metrics: dict[str, jax.Array]
    info: dict[str, Any]


class ToyTrackingEnv:
    """Batched toy tracking; ``reset(rng)``/``step(state, action)`` are pure and jittable."""

    def __init__(
        self,
        num_envs: int = 16,
        action_size: int = 3,
        horizon: int = 50,
        dt_s: float = 0.05,
        gain: float = 4.0,
        amp_m: float = 0.5,
        freq_hz: float = 1.0,
        fail_m: float = 0.6,
        reward_k: float = 10.0,
    ):
        self.num_envs, self.action_size, self.horizon = num_envs, action_size, horizon
        self.dt_s, self.gain, self.amp_m, self.freq_hz = dt_s, gain, amp_m, freq_hz
        self.fail_m, self.reward_k = fail_m, reward_k
        self.observation_size = 2 * action_size + 2

    def reference(self, t: jax.Array, phase: jax.Array) -> jax.Array:
        """Reference positions (N, A) at step ``t`` (N,) for phase offsets (N,)."""
        offsets = jnp.arange(self.action_size) * (2 * jnp.pi / self.action_size)
        angle = 2 * jnp.pi * self.freq_hz * ((t + phase) * self.dt_s)[:, None] + offsets
        return self.amp_m * jnp.sin(angle)

    def _obs(self, x, t, phase):
        ref_next = self.reference(t + 1, phase)
        angle = 2 * jnp.pi * self.freq_hz * (t + phase) * self.dt_s
        return jnp.concatenate(
            [x - self.reference(t, phase), ref_next - x, jnp.sin(angle)[:, None], jnp.cos(angle)[:, None]],
            axis=-1,
        )

    def _init(self, keys):
        def one(key):
            k1, k2, k3 = jax.random.split(key, 3)
            phase = jax.random.uniform(k1, (), minval=0.0, maxval=1.0 / (self.freq_hz * self.dt_s))
            noise = 0.05 * jax.random.normal(k2, (self.action_size,))
            return phase, noise, k3

        phase, noise, keys = jax.vmap(one)(keys)
        x = self.reference(jnp.zeros_like(phase), phase) + noise
        return x, phase, keys

    def reset(self, rng: jax.Array) -> ToyState:
        keys = jax.random.split(rng, self.num_envs)
        x, phase, keys = self._init(keys)
        t = jnp.zeros(self.num_envs, jnp.float32)
        false = jnp.zeros(self.num_envs, bool)
        obs = self._obs(x, t, phase)
        zero = jnp.zeros(self.num_envs, jnp.float32)
        return ToyState(
            x=x,
            t=t,
            phase=phase,
            rng=keys,
            obs=obs,
            reward=zero,
            done=false,
            terminated=false,
            truncated=false,
            metrics={"reward/pos": zero, "nan_reset": zero},
            info={"terminal_obs": obs},
        )

    def step(self, state: ToyState, action: jax.Array) -> ToyState:
        x = state.x + self.dt_s * self.gain * (jnp.clip(action, 0.0, 1.0) - 0.5)
        t = state.t + 1
        err2 = jnp.sum(jnp.square(x - self.reference(t, state.phase)), axis=-1)
        reward = jnp.exp(-self.reward_k * err2)
        terminated = jnp.sqrt(err2) > self.fail_m
        truncated = (t >= self.horizon) & ~terminated
        done = terminated | truncated
        terminal_obs = self._obs(x, t, state.phase)
        x0, phase0, keys = self._init(state.rng)
        x = jnp.where(done[:, None], x0, x)
        phase = jnp.where(done, phase0, state.phase)
        t = jnp.where(done, 0.0, t)
        return ToyState(
            x=x,
            t=t,
            phase=phase,
            rng=keys,
            obs=self._obs(x, t, phase),
            reward=reward,
            done=done,
            terminated=terminated,
            truncated=truncated,
            metrics={"reward/pos": reward, "nan_reset": jnp.zeros_like(reward)},
            info={"terminal_obs": terminal_obs},
        )


class HostToyEnv:
    """The toy task behind the ``cpu`` backend's interface: numpy actions in, numpy state out.

    Lets the host-loop trainer (:mod:`musclerl.rl.cpu_loop`) and its checkpoints be tested without
    MuJoCo. The wrapped env's ``reset``/``step`` are jitted; the state's leaves come back as numpy.
    """

    def __init__(self, env: ToyTrackingEnv):
        self.env = env
        self.num_envs, self.action_size = env.num_envs, env.action_size
        self.observation_size = env.observation_size
        self._reset = jax.jit(env.reset)
        self._step = jax.jit(env.step)

    def reset(self, rng: jax.Array) -> ToyState:
        return jax.device_get(self._reset(rng))

    def step(self, state: ToyState, action) -> ToyState:
        return jax.device_get(self._step(state, action))
