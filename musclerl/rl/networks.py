"""Actor-critic networks and the action distribution.

The policy is a Gaussian over a pre-squash variable ``u`` (shape (..., A)); actions in the
environment's bounds [low, high] come from ``u`` by the configured squash:

* ``sigmoid``: ``a = low + (high - low) sigmoid(u)`` (smooth; the deterministic action is the
  squashed mean),
* ``clip``: ``a = clip(u, low, high)``.

The mean's output bias starts at the squash's inverse of the environment's neutral action (e.g.
a 7 % excitation, or a zero PD offset), so an untrained policy commands that action.

Noise (``network.noise``):

* ``diagonal``: independent per action, a learnable state-independent log std (Brax/CleanRL);
* ``lattice``: Lattice (Chiappa et al. 2023) latent exploration: the last hidden layer z is
  perturbed too, ``u = W (z + s_z * e_z) + b + s_a * e_a``, so the action noise has covariance
  ``W^T diag(s_z^2) W + diag(s_a^2)`` (A x A, state-independent): muscles driven by the same
  latent feature explore together. ``s_z`` starts so that the latent part has the variance of the
  independent part.

PPO's probability ratio is computed on ``u``, the sample actually drawn, so the squash's
Jacobian cancels in the ratio and the entropy is that of the Gaussian (as in Brax/CleanRL).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from musclerl.rl.config import NetworkConfig

ACTIVATIONS = {
    "tanh": nn.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "swish": nn.swish,
    "gelu": nn.gelu,
}
LOG_2PI = float(jnp.log(2.0 * jnp.pi))


@dataclasses.dataclass(frozen=True)
class ActionBounds:
    """The environment's action box (A,) and its neutral action (numpy)."""

    low: np.ndarray
    high: np.ndarray
    neutral: np.ndarray

    @classmethod
    def of(cls, env) -> ActionBounds:
        """From an environment with ``actions`` (an ActionSpace) or, lacking one, [0, 1] at 0.5."""
        space = getattr(env, "actions", None)
        if space is None:
            size = env.action_size
            return cls(np.zeros(size), np.ones(size), np.full(size, 0.5))
        return cls(np.asarray(space.low), np.asarray(space.high), np.asarray(space.neutral))

    def to_dict(self) -> dict[str, list[float]]:
        return {"low": self.low.tolist(), "high": self.high.tolist(), "neutral": self.neutral.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionBounds:
        return cls(*(np.asarray(data[k], dtype=float) for k in ("low", "high", "neutral")))


def unsquash(action: np.ndarray, kind: str, bounds: ActionBounds) -> np.ndarray:
    """The pre-squash ``u`` whose squash is ``action`` (kept 1e-3 inside the bounds)."""
    span = bounds.high - bounds.low
    frac = np.clip((action - bounds.low) / span, 1e-3, 1 - 1e-3)
    if kind == "sigmoid":
        return np.log(frac / (1 - frac))
    return bounds.low + frac * span


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


@dataclasses.dataclass(frozen=True)
class Gaussian:
    """N(mean, cov) over u (..., A): diagonal (``latent_std`` None) or Lattice's low-rank + diagonal.

    ``mean`` (..., A), ``log_std`` (A,), ``weight`` (H, A) last layer, ``latent_log_std`` (H,).
    """

    mean: jax.Array
    log_std: jax.Array
    weight: jax.Array | None = None
    latent_log_std: jax.Array | None = None

    def _cov_chol(self) -> jax.Array:
        w = self.weight * jnp.exp(self.latent_log_std)[:, None]  # (H, A)
        cov = w.T @ w + jnp.diag(jnp.exp(2.0 * self.log_std))
        return jnp.linalg.cholesky(cov)

    def sample(self, key: jax.Array) -> jax.Array:
        noise = jax.random.normal(key, self.mean.shape)
        if self.weight is None:
            return self.mean + jnp.exp(self.log_std) * noise
        return self.mean + noise @ self._cov_chol().T

    def log_prob(self, u: jax.Array) -> jax.Array:
        if self.weight is None:
            return gaussian_log_prob(u, self.mean, self.log_std)
        chol = self._cov_chol()
        diff = (u - self.mean).reshape(-1, u.shape[-1])
        z = jax.scipy.linalg.solve_triangular(chol, diff.T, lower=True).T
        half_logdet = jnp.sum(jnp.log(jnp.diag(chol)))
        out = -0.5 * jnp.sum(z * z, axis=-1) - half_logdet - 0.5 * u.shape[-1] * LOG_2PI
        return out.reshape(u.shape[:-1])

    def entropy(self) -> jax.Array:
        if self.weight is None:
            return gaussian_entropy(self.log_std)
        a = self.log_std.shape[0]
        return jnp.sum(jnp.log(jnp.diag(self._cov_chol()))) + 0.5 * a * (1.0 + LOG_2PI)

    def mean_std(self) -> jax.Array:
        """Mean over actions of each action's marginal standard deviation."""
        if self.weight is None:
            return jnp.mean(jnp.exp(self.log_std))
        var = jnp.sum((self.weight * jnp.exp(self.latent_log_std)[:, None]) ** 2, axis=0)
        return jnp.mean(jnp.sqrt(var + jnp.exp(2.0 * self.log_std)))


class ActorCritic(nn.Module):
    """``(obs (..., obs_dim)) -> (Gaussian over u (..., A), value (...))``."""

    action_size: int
    policy_hidden: Sequence[int] = (256, 256)
    value_hidden: Sequence[int] = (256, 256)
    activation: str = "tanh"
    layer_norm: bool = False
    init_log_std: float = -1.0
    mean_bias: Sequence[float] | float = 0.0
    noise: str = "diagonal"
    # (obs perm, obs sign, action perm, action sign): the env's left/right mirror g_o, g_a
    # (``x'[k] = sign[k] x[perm[k]]``, involutions); None: no symmetry imposed
    mirror: tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...], tuple[float, ...]] | None = None

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[Gaussian, jax.Array]:
        """With ``mirror``: mean(o) = (f(o) + g_a f(g_o o)) / 2, value(o) = (V(o) + V(g_o o)) / 2 and
        the log std averaged with its mirror, so that pi(g_a u | g_o o) = pi(u | o) exactly (for
        observations normalised by mirror-invariant statistics, which the mirrored batches' running
        statistics are): a mirrored copy of a sample is then a sample of the same policy."""
        out_scale = 0.01
        policy = MLP(
            self.policy_hidden,
            self.action_size,
            self.activation,
            self.layer_norm,
            out_scale=out_scale,
            out_bias=0.0,
            name="policy",
        )
        bias = jnp.asarray(self.mean_bias, jnp.float32)
        mean = policy(obs) + bias
        log_std = self.param("log_std", nn.initializers.constant(self.init_log_std), (self.action_size,))
        value_net = MLP(self.value_hidden, 1, self.activation, self.layer_norm, out_scale=1.0, name="value")
        value = value_net(obs)
        if self.mirror is not None:
            if self.noise != "diagonal":
                raise ValueError("a symmetric network needs diagonal noise")
            obs_perm, obs_sign, act_perm, act_sign = (np.asarray(x) for x in self.mirror)
            mirrored = obs[..., obs_perm] * obs_sign.astype(np.float32)
            mean_m = policy(mirrored) + bias
            mean = 0.5 * (mean + mean_m[..., act_perm] * act_sign.astype(np.float32))
            value = 0.5 * (value + value_net(mirrored))
            log_std = 0.5 * (log_std + log_std[act_perm])
        if self.noise == "lattice":
            hidden = self.policy_hidden[-1]
            latent = self.param(
                "latent_log_std",
                nn.initializers.constant(self.init_log_std - float(np.log(out_scale))),
                (hidden,),
            )
            last = len(self.policy_hidden)
            weight = policy.variables["params"][f"Dense_{last}"]["kernel"]
            return Gaussian(mean, log_std, weight, latent), value[..., 0]
        return Gaussian(mean, log_std), value[..., 0]


def network_mirror(mirror) -> tuple | None:
    """An ``envs.symmetry.EnvMirror`` as :class:`ActorCritic`'s ``mirror`` field (None: None)."""
    if mirror is None:
        return None
    o, a = mirror.observation, mirror.action
    return (
        tuple(int(i) for i in o.perm),
        tuple(float(x) for x in o.sign),
        tuple(int(i) for i in a.perm),
        tuple(float(x) for x in a.sign),
    )


def make_network(net_cfg: NetworkConfig, bounds: ActionBounds, mirror: tuple | None = None) -> ActorCritic:
    """Build the actor-critic from the ``network`` config section and the env's action bounds;
    ``mirror`` (:func:`network_mirror`) makes it symmetric (``network.symmetric``)."""
    return ActorCritic(
        action_size=int(bounds.low.shape[0]),
        policy_hidden=tuple(net_cfg.policy_hidden),
        value_hidden=tuple(net_cfg.value_hidden),
        activation=net_cfg.activation,
        layer_norm=net_cfg.layer_norm,
        init_log_std=net_cfg.init_log_std,
        mean_bias=tuple(float(x) for x in unsquash(bounds.neutral, net_cfg.squash, bounds)),
        noise=net_cfg.noise,
        mirror=tuple(tuple(x) for x in mirror) if mirror is not None else None,
    )


def gaussian_log_prob(u: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Log density of ``u`` (..., nu) under N(mean, exp(log_std)^2), summed over the last axis."""
    z = (u - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z * z - log_std - 0.5 * LOG_2PI, axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy of the diagonal Gaussian (a scalar; the std does not depend on the state)."""
    return jnp.sum(log_std + 0.5 * (1.0 + LOG_2PI))


def squash(u: jax.Array, kind: str, bounds: ActionBounds) -> jax.Array:
    """Map pre-squash samples to actions in [low, high] (see the module docstring)."""
    low, high = jnp.asarray(bounds.low, jnp.float32), jnp.asarray(bounds.high, jnp.float32)
    if kind == "sigmoid":
        return low + (high - low) * jax.nn.sigmoid(u)
    return jnp.clip(u, low, high)
