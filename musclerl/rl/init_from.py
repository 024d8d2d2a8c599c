"""``--init-from RUN_OR_POLICY``: start a new run from a trained policy (fine-tuning).

What is kept: the actor (policy MLP, ``log_std`` and, with Lattice noise, ``latent_log_std``) and
the observation normaliser's running statistics, so the policy sees observations scaled exactly
as before. The critic comes from the run's latest checkpoint when a run folder is given (its
``checkpoints/``), and is freshly initialised for an exported policy folder (which is meant for
acting). The optimiser state, return statistics, update count and PRNG key are the new run's
own: a new run, not a resume. Two things keep the first updates from undoing the policy: the
KL-adaptive step starts at ``ppo.lr_min``, and a new critic is trained alone for
``ppo.critic_warmup_updates``.

Sizes must match: the new run's observation and action sizes and hidden layers are those of
the source; anything else is an InputError naming the source with both sizes.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from musclerl.errors import InputError

CRITIC = "value"  # the critic's subtree in ActorCritic's params
# updates a fine-tune with a new critic trains it alone (ppo.critic_warmup_updates: null): measured
# on the shipped generalist, docs/measurements.md "Fine-tuning: the first update"
FRESH_CRITIC_WARMUP_UPDATES = 10


@dataclasses.dataclass(frozen=True)
class InitialWeights:
    """Host copies of a source's parameters (flax tree ``{"params": {...}}``) and observation
    statistics (mean (D,), m2 (D,), count ()); ``critic``: whether its critic is used too."""

    source: Path
    params: Any
    obs_mean: np.ndarray
    obs_m2: np.ndarray
    obs_count: float
    critic: bool
    symmetric: bool = False  # trained with network.symmetric: the weights act averaged with their mirror


def read_initial_weights(path: str | os.PathLike) -> InitialWeights:
    """Weights of a run folder (latest checkpoint) or an exported policy folder."""
    path = Path(path)
    ckpt = path / "checkpoints"
    if ckpt.is_dir() and any(p.name.isdigit() for p in ckpt.iterdir()):
        return _from_checkpoint(path, ckpt)
    return _from_policy(path)


def _from_checkpoint(run: Path, ckpt: Path) -> InitialWeights:
    from musclerl.rl.checkpoint import Checkpointer

    reader = Checkpointer(ckpt, keep=1)
    try:
        train = reader.read_tree()["train"]
        params, stats = train["params"], train["obs_stats"]
        symmetric = bool(reader.read_meta().get("config", {}).get("network", {}).get("symmetric", False))
    except KeyError as err:
        raise InputError(ckpt, f"checkpoint holds no training state ({err})") from err
    finally:
        reader.close()
    return InitialWeights(
        source=run,
        params=jax.tree_util.tree_map(np.asarray, params),
        obs_mean=np.asarray(stats["mean"], np.float32),
        obs_m2=np.asarray(stats["m2"], np.float32),
        obs_count=float(stats["count"]),
        critic=True,
        symmetric=symmetric,
    )


def _from_policy(path: Path) -> InitialWeights:
    from musclerl.rl.export import load_policy

    policy = load_policy(path)
    with np.load(policy.path / "obs_stats.npz") as z:
        count = float(z["count"]) if "count" in z else 1.0
    std = np.asarray(policy.obs_std, np.float32)
    return InitialWeights(
        source=policy.path,
        params=jax.tree_util.tree_map(np.asarray, policy.params),
        obs_mean=np.asarray(policy.obs_mean, np.float32),
        obs_m2=(std * std * count).astype(np.float32),  # var = m2 / count
        obs_count=count,
        critic=False,
        symmetric=bool(policy.train_config.network.symmetric),
    )


def check_network(init: InitialWeights, symmetric: bool) -> None:
    """InputError unless the new run's ``network.symmetric`` is the source's: the same weights
    averaged with their mirrored selves, or not, are two different policies (the shipped
    generalist is symmetric; fine-tuning it without the flag would start from another policy)."""
    if init.symmetric != symmetric:
        flag = "true" if init.symmetric else "false"
        raise InputError(
            init.source,
            f"trained with network.symmetric={flag}, this run has {str(symmetric).lower()}: "
            f"add network.symmetric={flag} (without it the same weights are another policy)",
        )


def _shapes(tree: Any) -> dict[str, tuple]:
    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(k): tuple(np.shape(v)) for k, v in flat}


def initial_train_state(state, learner, init: InitialWeights):
    """``state`` (a fresh :class:`musclerl.rl.ppo.TrainState`) with ``init``'s actor, observation
    statistics and (when ``init.critic``) critic; a fresh optimiser state for those parameters."""
    import jax.numpy as jnp

    from musclerl.rl import normalization as norm

    obs_size = int(np.shape(state.obs_stats.mean)[0])
    mine, theirs = _shapes(state.params), _shapes(init.params)
    if mine != theirs or init.obs_mean.shape != (obs_size,):
        action_size = int(np.shape(state.params["params"]["log_std"])[0])
        their_actions = theirs.get("['params']['log_std']", ("?",))[0]
        raise InputError(
            init.source,
            f"policy has obs {init.obs_mean.shape[0]}/actions {their_actions} and its layers, but this run "
            f"has obs {obs_size}/actions {action_size} (other model, env or network config?)",
        )
    new = {k: v for k, v in init.params["params"].items() if k != CRITIC or init.critic}
    merged = {"params": {**state.params["params"], **new}}
    params = jax.tree_util.tree_map(
        lambda ref, x: jnp.asarray(x, dtype=jnp.asarray(ref).dtype), state.params, merged
    )
    stats = norm.RunningStats(
        mean=jnp.asarray(init.obs_mean),
        m2=jnp.asarray(init.obs_m2),
        count=jnp.asarray(init.obs_count, jnp.float32),
    )
    ppo = learner.cfg.ppo
    # the KL-adaptive step starts at its floor and climbs 1.5x per update while the KL allows: the
    # first update of a trained policy at optimizer.learning_rate made a KL of 3-4
    lr = jnp.asarray(ppo.lr_min if ppo.target_kl > 0 else state.learning_rate, jnp.float32)
    return state.replace(params=params, opt_state=learner.tx.init(params), obs_stats=stats, learning_rate=lr)


def critic_warmup_updates(
    ppo_warmup: int | None, init: InitialWeights | None, saved: int | None = None
) -> int:
    """The run's ``ppo.critic_warmup_updates``: as set; unset (None), the value a resumed run was
    saved with (``saved``), else :data:`FRESH_CRITIC_WARMUP_UPDATES` when ``init`` brings no critic,
    else 0."""
    if ppo_warmup is not None:
        return ppo_warmup
    if saved is not None:
        return saved
    return FRESH_CRITIC_WARMUP_UPDATES if init is not None and not init.critic else 0
