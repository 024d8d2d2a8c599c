"""Running observation statistics (mean and variance by Chan et al.'s parallel update).

The statistics are a pytree kept in the train state and in every checkpoint and export, so a
policy sees observations normalised exactly as during training.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class RunningStats:
    """Mean (obs_dim,), sum of squared deviations ``m2`` (obs_dim,) and the sample count."""

    mean: jax.Array
    m2: jax.Array
    count: jax.Array  # () float32

    @classmethod
    def create(cls, obs_dim: int) -> RunningStats:
        return cls(
            mean=jnp.zeros(obs_dim, jnp.float32),
            m2=jnp.zeros(obs_dim, jnp.float32),
            count=jnp.zeros((), jnp.float32),
        )

    @property
    def var(self) -> jax.Array:
        return jnp.where(self.count > 1, self.m2 / jnp.maximum(self.count, 1.0), 1.0)

    @property
    def std(self) -> jax.Array:
        return jnp.sqrt(jnp.maximum(self.var, 1e-8))


def update(stats: RunningStats, batch: jax.Array) -> RunningStats:
    """Merge a batch of observations (..., obs_dim) into the statistics."""
    batch = batch.reshape(-1, batch.shape[-1]).astype(jnp.float32)
    n = jnp.asarray(batch.shape[0], jnp.float32)
    batch_mean = jnp.mean(batch, axis=0)
    batch_m2 = jnp.sum(jnp.square(batch - batch_mean), axis=0)
    total = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * n / total
    m2 = stats.m2 + batch_m2 + jnp.square(delta) * stats.count * n / total
    return RunningStats(mean=mean, m2=m2, count=total)


def normalize(stats: RunningStats, obs: jax.Array, clip: float, enabled: bool = True) -> jax.Array:
    """``clip((obs - mean) / std, -clip, clip)``; identity (as float32) when not ``enabled``."""
    obs = obs.astype(jnp.float32)
    if not enabled:
        return obs
    return jnp.clip((obs - stats.mean) / stats.std, -clip, clip)
