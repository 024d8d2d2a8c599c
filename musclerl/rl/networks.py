"""Actor-critic networks and the action distribution.

The policy is a diagonal Gaussian over a pre-squash variable ``u`` (shape (..., nu)) with a
state-independent, learnable log standard deviation. Muscle excitations in [0, 1] come from
``u`` by the configured squash:

* ``sigmoid``: ``a = sigmoid(u)`` (smooth; the deterministic action is ``sigmoid(mean)``),
* ``clip``: ``a = clip(u, 0, 1)`` (the mean is initialised at 0.5).

PPO's probability ratio is computed on ``u``, the sample actually drawn, so the squash's
Jacobian cancels in the ratio and the entropy is that of the Gaussian (as in Brax/CleanRL).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

ACTIVATIONS = {
    "tanh": nn.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "swish": nn.swish,
    "gelu": nn.gelu,
}
LOG_2PI = float(jnp.log(2.0 * jnp.pi))


class MLP(nn.Module):
    """Dense layers with an activation (and optional LayerNorm) between them; linear output."""

    hidden: Sequence[int]
    out_size: int
    activation: str = "tanh"
    layer_norm: bool = False
    out_scale: float = 1.0
    out_bias: float = 0.0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for size in self.hidden:
            x = nn.Dense(size, kernel_init=nn.initializers.orthogonal(jnp.sqrt(2.0)))(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = act(x)
        return nn.Dense(
            self.out_size,
            kernel_init=nn.initializers.orthogonal(self.out_scale),
            bias_init=nn.initializers.constant(self.out_bias),
        )(x)


class ActorCritic(nn.Module):
    """``(obs (..., obs_dim)) -> (mean (..., nu), log_std (nu,), value (...))``."""

    action_size: int
    policy_hidden: Sequence[int] = (256, 256)
    value_hidden: Sequence[int] = (256, 256)
    activation: str = "tanh"
    layer_norm: bool = False
    init_log_std: float = -1.0
    mean_bias: float = 0.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        mean = MLP(
            self.policy_hidden,
            self.action_size,
            self.activation,
            self.layer_norm,
            out_scale=0.01,
            out_bias=self.mean_bias,
            name="policy",
        )(obs)
        log_std = self.param("log_std", nn.initializers.constant(self.init_log_std), (self.action_size,))
        value = MLP(self.value_hidden, 1, self.activation, self.layer_norm, out_scale=1.0, name="value")(obs)
        return mean, log_std, value[..., 0]


def make_network(net_cfg: dict[str, Any], action_size: int) -> ActorCritic:
    """Build the actor-critic from the ``network`` config section."""
    return ActorCritic(
        action_size=action_size,
        policy_hidden=tuple(net_cfg["policy_hidden"]),
        value_hidden=tuple(net_cfg["value_hidden"]),
        activation=net_cfg["activation"],
        layer_norm=bool(net_cfg["layer_norm"]),
        init_log_std=float(net_cfg["init_log_std"]),
        mean_bias=0.5 if net_cfg["squash"] == "clip" else 0.0,
    )


def gaussian_log_prob(u: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Log density of ``u`` (..., nu) under N(mean, exp(log_std)^2), summed over the last axis."""
    z = (u - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z * z - log_std - 0.5 * LOG_2PI, axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy of the diagonal Gaussian (a scalar; the std does not depend on the state)."""
    return jnp.sum(log_std + 0.5 * (1.0 + LOG_2PI))


def squash(u: jax.Array, kind: str) -> jax.Array:
    """Map pre-squash samples to excitations in [0, 1] (see the module docstring)."""
    if kind == "sigmoid":
        return jax.nn.sigmoid(u)
    return jnp.clip(u, 0.0, 1.0)
