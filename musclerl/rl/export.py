"""Policy export: one folder with parameters, observation normaliser and config.

Layout of ``DIR/policy/``::

    params.msgpack      flax-serialised actor-critic parameters
    obs_stats.npz       mean (D,), std (D,), count of the running observation statistics
    config.json         the training config plus ``obs_size``, ``action_size``, ``action_bounds``
                        (low, high, neutral of the env's action space), run facts and, for a
                        symmetric network (``network.symmetric``), ``network_mirror``: the
                        observation and action mirrors (perm, sign) it averages over

``load_policy(path)`` (also ``musclerl.load_policy``) returns a :class:`Policy`:
``policy.act(obs (..., D), deterministic=True) -> actions (..., A)`` in the action space it was
trained in (``policy.train_config.env.action``; excitations in [0, 1] by default); a
``TrackingEnv`` built from the same config turns them into muscle excitations.
``policy.config`` is ``config.json`` as written; ``policy.train_config`` its ``train_config``
read as a :class:`~musclerl.rl.config.TrainConfig` (the keys an older export lacks keep their
defaults, as the run that wrote it had them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, read_npz
from musclerl.rl.config import TrainConfig

FORMAT_VERSION = 1


def export_policy(
    path: str | os.PathLike,
    cfg: TrainConfig,
    train_state,
    obs_size: int,
    bounds,
    extra: dict[str, Any] | None = None,
    network_mirror: tuple | None = None,
) -> Path:
    """Write the policy folder atomically (a temporary folder renamed into place);
    ``network_mirror`` is the learner network's ``mirror`` (a symmetric network's)."""
    import flax.serialization

    path = Path(path)
    stats = train_state.obs_stats
    params = flax.serialization.to_bytes(_host(train_state.params))
    config = _policy_config(cfg, obs_size, bounds, extra, network_mirror)
    with atomic_path(path) as tmp:
        tmp.mkdir(parents=True)
        (tmp / "params.msgpack").write_bytes(params)
        np.savez(
            tmp / "obs_stats.npz",
            mean=np.asarray(stats.mean),
            std=np.asarray(stats.std),
            count=np.asarray(stats.count),
        )
        (tmp / "config.json").write_text(json.dumps(config, indent=2, default=_json_default))
    return path


def _policy_config(
    cfg: TrainConfig, obs_size: int, bounds, extra: dict[str, Any] | None, network_mirror: tuple | None = None
) -> dict[str, Any]:
    """The ``config.json`` of a policy folder (module docstring)."""
    mirror = {} if network_mirror is None else {"network_mirror": [list(x) for x in network_mirror]}
    return {
        "format_version": FORMAT_VERSION,
        "obs_size": int(obs_size),
        "action_size": int(bounds.low.shape[0]),
        "action_bounds": bounds.to_dict(),
        "train_config": cfg.to_dict(),
        **mirror,
        **(extra or {}),
    }


def policy_of(
    cfg: TrainConfig,
    train_state,
    obs_size: int,
    bounds,
    path: str | os.PathLike,
    network_mirror: tuple | None = None,
) -> Policy:
    """The :class:`Policy` a run's ``train_state`` would export, in memory (no files): what the
    validation during training rolls out. ``path`` only names it in error messages."""
    stats = train_state.obs_stats
    return Policy(
        Path(path),
        _policy_config(cfg, obs_size, bounds, None, network_mirror),
        cfg,
        _host(train_state.params),
        np.asarray(stats.mean, np.float32),
        np.asarray(stats.std, np.float32),
    )


def _host(tree):
    import jax

    return jax.tree_util.tree_map(np.asarray, tree)


def _json_default(obj):
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


class Policy:
    """An exported policy: ``act(obs, deterministic=True, seed=0)``, the ``config`` dict of its
    ``config.json`` and the ``train_config`` it was trained with."""

    def __init__(
        self,
        path: Path,
        config: dict[str, Any],
        train_config: TrainConfig,
        params: Any,
        obs_mean: np.ndarray,
        obs_std: np.ndarray,
    ):
        import jax

        from musclerl.rl import networks

        self.path, self.config, self.train_config = path, config, train_config
        self.obs_size, self.action_size = int(config["obs_size"]), int(config["action_size"])
        self.bounds = policy_bounds(config)
        self.network = networks.make_network(train_config.network, self.bounds, config.get("network_mirror"))
        self.params, self.obs_mean, self.obs_std = params, obs_mean, obs_std
        self._normalize = train_config.ppo.normalize_obs
        self._clip = train_config.ppo.obs_clip
        self._squash = train_config.network.squash
        self._forward = jax.jit(self._forward_impl, static_argnums=(3,))

    def _forward_impl(self, params, obs, key, deterministic: bool):
        import jax.numpy as jnp

        from musclerl.rl import networks

        x = obs.astype(jnp.float32)
        if self._normalize:
            x = jnp.clip((x - self.obs_mean) / self.obs_std, -self._clip, self._clip)
        dist, _ = self.network.apply(params, x)
        u = dist.mean if deterministic else dist.sample(key)
        return networks.squash(u, self._squash, self.bounds)

    def act(self, obs: np.ndarray, deterministic: bool = True, seed: int = 0) -> np.ndarray:
        """Actions (..., A) for observations (..., D) (numpy in, numpy out)."""
        import jax

        obs = np.asarray(obs, dtype=np.float32)
        if obs.shape[-1] != self.obs_size:
            raise InputError(
                self.path, f"policy expects observations of size {self.obs_size}, got shape {obs.shape}"
            )
        return np.asarray(self._forward(self.params, obs, jax.random.PRNGKey(seed), bool(deterministic)))

    __call__ = act


def policy_bounds(config: dict[str, Any]):
    """The action bounds a policy config records (older exports: excitations in [0, 1] at 0.5)."""
    from musclerl.rl import networks

    if "action_bounds" in config:
        return networks.ActionBounds.from_dict(config["action_bounds"])
    size = int(config["action_size"])
    return networks.ActionBounds(np.zeros(size), np.ones(size), np.full(size, 0.5))


def load_policy(path: str | os.PathLike) -> Policy:
    """Read a policy folder written by :func:`export_policy` (or a run folder containing ``policy/``);
    ``assets/policies/<name>`` names a shipped policy from any working directory."""
    import flax.serialization
    import jax
    import jax.numpy as jnp

    from musclerl.resources import resolve_path
    from musclerl.rl import networks

    path = resolve_path(path)
    if (path / "policy" / "config.json").is_file():
        path = path / "policy"
    for name in ("config.json", "params.msgpack", "obs_stats.npz"):
        if not (path / name).is_file():
            raise InputError(path, f"not a policy folder: missing {name}")
    try:
        config = json.loads((path / "config.json").read_text())
        obs_size, action_size = int(config["obs_size"]), int(config["action_size"])
        saved = config["train_config"]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise InputError(
            path / "config.json", f"unreadable policy config ({type(err).__name__}: {err})"
        ) from err
    if int(config.get("format_version", 0)) != FORMAT_VERSION:
        raise InputError(
            path / "config.json",
            f"policy format_version {config.get('format_version')} is not supported (want {FORMAT_VERSION})",
        )
    try:
        bounds = policy_bounds(config)
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(path / "config.json", f"unreadable action bounds ({type(err).__name__})") from err
    if bounds.low.shape != (action_size,):
        raise InputError(path / "config.json", f"action bounds do not have action_size {action_size} entries")
    stats = read_npz(path / "obs_stats.npz")
    try:
        mean, std = np.asarray(stats["mean"], np.float32), np.asarray(stats["std"], np.float32)
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(
            path / "obs_stats.npz", f"no numeric 'mean' and 'std' ({type(err).__name__})"
        ) from err
    if mean.shape != (obs_size,) or std.shape != (obs_size,):
        raise InputError(
            path / "obs_stats.npz", f"normaliser shape {mean.shape} does not match obs_size {obs_size}"
        )
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)):
        raise InputError(path / "obs_stats.npz", "normaliser mean/std must be finite with std > 0")
    train_config = TrainConfig.from_dict(saved, str(path / "config.json"))
    net = networks.make_network(train_config.network, bounds, config.get("network_mirror"))
    template = jax.tree_util.tree_map(np.asarray, net.init(jax.random.PRNGKey(0), jnp.zeros((1, obs_size))))
    try:
        params = flax.serialization.from_bytes(template, (path / "params.msgpack").read_bytes())
    except Exception as err:
        raise InputError(
            path / "params.msgpack", f"parameters do not match the config ({type(err).__name__})"
        ) from err
    return Policy(path, config, train_config, params, mean, std)


def check_motion(policy: Policy, motion, source) -> None:
    """Refuse a Trajectory (``motion``, read from ``source``) made for another model than the one
    ``policy`` was trained on; the one line names both files."""
    from musclerl.models.registry import load_model

    name = policy.train_config.model
    try:
        motion.check_model(load_model(name), source)
    except InputError as err:
        raise InputError(
            source, f"{err.problem}; the policy {policy.path / 'config.json'} was trained on model '{name}'"
        ) from err
