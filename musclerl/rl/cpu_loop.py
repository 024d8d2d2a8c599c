"""The same PPO update with the physics on MuJoCo C threads (the ``cpu`` backend).

Per rollout step the host does one jitted call — normalise the observations, run the policy MLP,
sample — and hands the excitations (N, A) as numpy to the environment, which steps all N
environments on its MuJoCo thread pool. Everything that can wait is batched into one jitted call
at the end of the rollout: values V(obs) and V(terminal_obs) for all (T, N) steps, GAE, the PPO
epochs, the statistics update and the episode bookkeeping (:meth:`CpuTrainer.finish`).

The physics dominates a rollout; the policy calls are a small share. Running the policy of one
half of the envs while the other half's physics steps would need spare cores (both compete for
the same ones otherwise), so the loop is kept sequential and simple; on machines with spare
cores the physics threads (``threads``) are the knob.

Checkpoints: the MuJoCo C states live inside the environment's thread pool, not in the carry.
So that a resumed run is bit-identical to an uninterrupted one, every environment is
re-initialised (reference-state initialisation with a key derived from the seed and the update
number) right after each checkpoint — in both runs — and a checkpoint needs only the learner state
and the episode sums (:meth:`CpuTrainer.restart_envs`). Unfinished episodes are cut there; the
rollout before the cut bootstraps from V(last obs) as at every rollout end, so PPO's targets are
unaffected. Choose ``checkpoint.every_updates * ppo.rollout_steps`` well above the episode length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from musclerl.rl import networks, ppo
from musclerl.rl.clip_stats import clip_sums

if TYPE_CHECKING:
    from musclerl.rl.config import TrainConfig


class CpuTrainer:
    """``init(rng) -> Carry`` and ``update_step(carry) -> (carry, metrics)`` for a numpy env."""

    def __init__(self, cfg: TrainConfig, env, total_updates: int, mesh=None, mirror=None):
        self.cfg, self.env, self.mesh = cfg, env, mesh
        bounds = networks.ActionBounds.of(env)
        self.learner = ppo.make_learner(cfg, env.observation_size, bounds, total_updates, mesh, mirror)
        self._act = jax.jit(self._act_impl)
        self._finish = jax.jit(self._finish_impl)

    # --------------------------------------------------------------------------- jitted pieces
    def _act_impl(self, train: ppo.TrainState, obs: jax.Array, key: jax.Array):
        _, u, log_prob, _, action = self.learner.act(train, obs, key)
        return u, log_prob, action

    def _finish_impl(self, train: ppo.TrainState, episodes: ppo.EpisodeTracker, rollout: dict[str, Any]):
        """Values, GAE, PPO epochs and bookkeeping for one rollout of stacked (T, N, ...) arrays."""
        learner, mesh = self.learner, self.mesh
        raw_obs = ppo.shard_envs(rollout["obs"], mesh, axis=1)
        term_obs = ppo.shard_envs(rollout["terminal_obs"], mesh, axis=1)
        obs_n = learner.normalize(train, raw_obs)
        value = learner.network.apply(train.params, obs_n)[1]
        next_value = learner.value(train, term_obs)
        done = rollout["done"].astype(bool)
        terminated = rollout["terminated"].astype(bool)
        traj = ppo.Transition(
            obs=obs_n,
            action=jnp.stack(rollout["u"]),
            log_prob=jnp.stack(rollout["log_prob"]),
            value=value,
            reward=rollout["reward"].astype(jnp.float32),
            done=done,
            terminated=terminated,
            next_value=next_value,
        )
        train, metrics = learner.learn(train, traj, raw_obs)

        def track(ep, xs):
            return ep.step(*xs), None

        episodes, _ = jax.lax.scan(track, episodes, (traj.reward, done, terminated))
        ep_metrics, episodes = episodes.read()
        metrics.update(ep_metrics)
        metrics.update({f"env/{k}": jnp.mean(v) for k, v in rollout["metrics"].items()})
        metrics["episode/truncation_frac"] = jnp.mean(done & ~terminated)
        return train, episodes, metrics

    # --------------------------------------------------------------------------- loop
    def init(self, rng: jax.Array) -> ppo.Carry:
        rng, env_key = jax.random.split(rng)
        env_state = self.env.reset(env_key)
        return ppo.Carry(self.learner.init(rng), env_state, ppo.EpisodeTracker.create(self.cfg.ppo.num_envs))

    def rollout(self, train: ppo.TrainState, env_state):
        """Step every env ``ppo.rollout_steps`` times with the current policy (host loop)."""
        steps = self.cfg.ppo.rollout_steps
        rng, key = jax.random.split(train.rng)
        keys = jax.random.split(key, steps)
        out: dict[str, list] = {
            k: [] for k in ("obs", "u", "log_prob", "reward", "done", "terminated", "terminal_obs")
        }
        metrics: dict[str, list] = {}
        for t in range(steps):
            u, log_prob, action = self._act(train, env_state.obs, keys[t])
            out["obs"].append(np.asarray(env_state.obs))
            if "clip" in env_state.info:  # the clip each env is on during this step (per-clip results)
                out.setdefault("clip", []).append(np.asarray(env_state.info["clip"]))
            env_state = self.env.step(env_state, np.asarray(action))
            out["u"].append(u)
            out["log_prob"].append(log_prob)
            out["reward"].append(np.asarray(env_state.reward))
            out["done"].append(np.asarray(env_state.done))
            out["terminated"].append(np.asarray(env_state.terminated))
            out["terminal_obs"].append(np.asarray(env_state.info["terminal_obs"]))
            for name, value in env_state.metrics.items():
                metrics.setdefault(name, []).append(np.asarray(value, dtype=np.float32))
        rollout = {k: (v if k in ("u", "log_prob") else np.stack(v)) for k, v in out.items()}
        rollout["metrics"] = {k: np.stack(v) for k, v in metrics.items()}
        return train.replace(rng=rng), env_state, rollout

    def update_step(self, carry: ppo.Carry) -> tuple[ppo.Carry, dict[str, jax.Array]]:
        train, env_state, rollout = self.rollout(carry.train, carry.env_state)
        clips = rollout.pop("clip", None)
        train, episodes, metrics = self._finish(train, carry.episodes, rollout)
        if clips is not None:  # per-clip results, on the host (see musclerl.rl.clip_stats)
            num_clips = int(np.shape(env_state.info["clip_fail_rate"])[0])
            done, term, err = rollout["done"], rollout["terminated"], rollout["metrics"]["site_err_m"]
            metrics["clip_sums"] = clip_sums(clips, done, term, err, num_clips, np)
        return ppo.Carry(train, env_state, episodes), metrics

    def restart_envs(self, carry: ppo.Carry, update: int) -> ppo.Carry:
        """Fresh episodes for every env after checkpoint ``update`` (see the module docstring)."""
        key = jax.random.fold_in(jax.random.PRNGKey(self.cfg.seed), update)
        episodes = carry.episodes.replace(
            ret=jnp.zeros_like(carry.episodes.ret), length=jnp.zeros_like(carry.episodes.length)
        )
        return ppo.Carry(carry.train, self.env.reset(key), episodes)

    def env_only_rollout(self, env_state, excitation: np.ndarray):
        """Step the env ``ppo.rollout_steps`` times with fixed excitations (for ``bench train``)."""
        for _ in range(self.cfg.ppo.rollout_steps):
            env_state = self.env.step(env_state, excitation)
        return env_state
