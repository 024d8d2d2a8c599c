"""Training configuration: one dataclass tree, YAML inheritance, overlays and ``key=value`` overrides.

A run is described by a :class:`TrainConfig` (below, with every setting's default; its ``env`` is
the environment's :class:`~musclerl.envs.EnvConfig`). A YAML file may name a parent with
``base: other.yaml`` (resolved relative to the file); the child is deep-merged over the parent,
the parent over the defaults. More files can be stacked as overlays (``load_config([a, b])``: b
merged over a). Finally command-line overrides ``ppo.num_envs=64 network.layer_norm=true`` are
applied; their values are parsed as YAML scalars.

The tree is built by the loader every config shares (:func:`musclerl.typed_config.from_mapping`):
an unknown key or a value of the wrong type is an :class:`InputError` naming the key and the file
or override that set it, as are the range checks of :meth:`TrainConfig.validate`.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from musclerl.envs.config import EnvConfig
from musclerl.errors import InputError
from musclerl.fileio import load_yaml
from musclerl.resources import configs_dir
from musclerl.typed_config import Origins, flat_items, from_mapping, source_of

CONFIG_DIR = configs_dir()


@dataclasses.dataclass
class PpoConfig:
    """PPO's rollout size, losses, gradient clips, reward and observation normalisation."""

    num_envs: int = 32  # total over all devices
    rollout_steps: int = 64  # env steps per env per update
    total_env_steps: int = 200_000
    update_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    # PPO2's clipped value loss is off: with rewards scaled to unit returns a +-0.2 clip only
    # slows the critic (Andrychowicz et al. 2021 found it neutral to harmful)
    clip_value: bool = False
    value_clip: float = 0.2  # half-width of the value clip when clip_value is on (scaled returns)
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 1.0  # actor (policy + noise) gradient norm clip (0 = off)
    max_grad_norm_critic: float = 10.0  # critic gradient norm clip, apart from the actor's
    normalize_advantages: bool = True
    normalize_rewards: bool = True  # divide rewards by the running std of the discounted return
    reward_scale: float = 1.0  # rewards are multiplied by this before GAE (after normalisation)
    target_kl: float = 0.01  # > 0: step size adapted after each update to the KL it made; 0: schedule
    lr_min: float = 1.0e-5
    # updates at the start of a run in which only the critic learns (the actor's step is 0, the
    # critic's optimizer.learning_rate, the adaptive step held): a fine-tune from an exported
    # policy starts with a new critic, whose advantages would steer the first updates at random.
    # None: FRESH_CRITIC_WARMUP_UPDATES when --init-from brings no critic, else 0
    critic_warmup_updates: int | None = None
    lr_max: float = 3.0e-3
    normalize_obs: bool = True  # running mean/std of observations (kept in checkpoints)
    # add the left/right mirror of every sample to each PPO batch (musclerl.envs.symmetry):
    # twice the data for a symmetric motion set, for a larger batch in the update only
    mirror_augment: bool = False
    # weight of the mirror loss (Mittal et al. 2024): mean over actions of the squared difference,
    # in policy standard deviations, between the action mean at a sample's mirrored observation
    # and the mirror of its action mean. Mirrored copies are only learnt from while the policy is
    # near symmetric (their PPO ratio is pi(g_a u | g_o o) / pi_old(u | o)); needs mirror_augment
    symmetry_coef: float = 0.0
    obs_clip: float = 5.0  # normalised observations are clipped to +-obs_clip


@dataclasses.dataclass
class NetworkConfig:
    """The actor-critic (musclerl.rl.networks)."""

    policy_hidden: list[int] = dataclasses.field(default_factory=lambda: [256, 256])
    value_hidden: list[int] = dataclasses.field(default_factory=lambda: [256, 256])
    activation: str = "tanh"  # tanh | relu | elu | swish | gelu
    layer_norm: bool = False
    init_log_std: float = -1.0  # initial log standard deviation of the Gaussian (pre-squash)
    squash: str = "sigmoid"  # sigmoid | clip: how Gaussian samples become actions in the env's bounds
    noise: str = "diagonal"  # diagonal | lattice (latent, correlated across muscles)
    # mirror-symmetric by construction (needs ppo.mirror_augment): mean and value averaged over the
    # observation and its left/right mirror, so each mirrored copy is an on-policy sample
    symmetric: bool = False


@dataclasses.dataclass
class OptimizerConfig:
    name: str = "adam"  # adam | adamw | muon (optax.contrib.muon)
    learning_rate: float = 3.0e-4
    schedule: str = "constant"  # constant | linear | cosine (over all updates)
    warmup_updates: int = 0
    final_fraction: float = 0.0  # final lr = learning_rate * final_fraction for linear/cosine
    weight_decay: float = 0.0
    eps: float = 1.0e-5


@dataclasses.dataclass
class CheckpointConfig:
    every_updates: int = 10
    keep: int = 3


@dataclasses.dataclass
class ValidationConfig:
    """Held-out clips tested deterministically during training (musclerl.rl.validation)."""

    motion: Any = None  # a motion set like ``motion:``; None: no validation
    every_updates: int = 25
    seconds: float = 10.0  # each clip from t = 0 for up to this long
    at_start: bool = True  # also before the first update


@dataclasses.dataclass
class AugmentConfig:
    """Training-set augmentation: a copy of every training clip per speed factor (envs/time_scale.py)."""

    time_scales: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class LogConfig:
    every_updates: int = 1
    progress: bool = True  # tqdm progress bar


@dataclasses.dataclass
class TrainConfig:
    """Everything a training run reads; ``TrainConfig()`` is the default run (a YAML file lists
    only what it changes). Built and checked by :meth:`from_dict`."""

    seed: int = 0
    model: str = "myolegs"  # registry name or MJCF path
    motion: Any = "assets/motions/walk_myolegs.npz"  # a motion set (musclerl.motion.dataset)
    backend: str = "cpu"  # "cpu" (MuJoCo C threads) or "mjx" (whole update jitted)
    threads: int = 2  # MuJoCo C threads for the cpu backend
    env: EnvConfig = dataclasses.field(default_factory=EnvConfig)
    ppo: PpoConfig = dataclasses.field(default_factory=PpoConfig)
    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    checkpoint: CheckpointConfig = dataclasses.field(default_factory=CheckpointConfig)
    validation: ValidationConfig = dataclasses.field(default_factory=ValidationConfig)
    augment: AugmentConfig = dataclasses.field(default_factory=AugmentConfig)
    # shown after the error of a missing motion file: how to make the files the config names
    motion_help: str = ""
    log: LogConfig = dataclasses.field(default_factory=LogConfig)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], source: str = "config", origins: Origins | None = None
    ) -> TrainConfig:
        """Build from a (YAML) mapping and :meth:`validate`; missing keys keep their defaults.
        ``origins`` maps dotted keys to the file or override that set them (errors name it)."""
        config = from_mapping(cls, data, str(source), origins)
        config.validate(str(source), origins)
        return config

    def to_dict(self) -> dict[str, Any]:
        """The plain nested dict (``config.yaml`` of a run folder, checkpoints, policy exports)."""
        return dataclasses.asdict(self)

    def validate(self, source: str = "config", origins: Origins | None = None) -> None:
        """Ranges and choices of every setting (types are the loader's), the ``env`` section by
        :meth:`EnvConfig.validate`; the error names the file or override that set the key."""
        ppo, net, opt, val = self.ppo, self.network, self.optimizer, self.validation

        def need(key: str, cond: bool, problem: str) -> None:
            if not cond:
                raise InputError(source_of(key, origins, source), f"{key} {problem}")

        def positive(key: str, value: int) -> None:
            need(key, value > 0, f"must be a positive integer, got {value!r}")

        for key in ("num_envs", "rollout_steps", "total_env_steps", "update_epochs", "num_minibatches"):
            positive(f"ppo.{key}", getattr(ppo, key))
        positive("checkpoint.every_updates", self.checkpoint.every_updates)
        positive("checkpoint.keep", self.checkpoint.keep)
        positive("log.every_updates", self.log.every_updates)
        positive("validation.every_updates", val.every_updates)
        positive("threads", self.threads)
        need(
            "validation.seconds",
            math.isfinite(val.seconds) and val.seconds > 0,
            f"must be a number of seconds > 0, got {val.seconds!r}",
        )
        scales = self.augment.time_scales
        need(
            "augment.time_scales",
            all(0.5 <= x <= 2.0 and x != 1 for x in scales),
            f"must be a list of speed factors in [0.5, 2] other than 1, got {scales!r}",
        )
        need("backend", self.backend in ("cpu", "mjx"), f"must be 'cpu' or 'mjx', got {self.backend!r}")
        batch = ppo.num_envs * ppo.rollout_steps
        need(
            "ppo.num_minibatches",
            batch % ppo.num_minibatches == 0,
            f"= {ppo.num_minibatches}: ppo.num_envs*ppo.rollout_steps ({batch}) must be divisible by it",
        )
        for key in ("gamma", "gae_lambda"):
            value = getattr(ppo, key)
            need(f"ppo.{key}", 0.0 <= value <= 1.0, f"must be in [0, 1], got {value!r}")
        for key in (
            "clip_eps",
            "value_clip",
            "vf_coef",
            "ent_coef",
            "max_grad_norm",
            "max_grad_norm_critic",
            "reward_scale",
            "obs_clip",
            "target_kl",
            "symmetry_coef",
        ):
            value = getattr(ppo, key)
            need(
                f"ppo.{key}",
                math.isfinite(value) and value >= 0,
                f"must be a finite number >= 0, got {value!r}",
            )
        for key in ("policy_hidden", "value_hidden"):
            sizes = getattr(net, key)
            need(
                f"network.{key}",
                all(s > 0 for s in sizes),
                f"must be a list of positive integers, got {sizes!r}",
            )
        choices = {
            "network.activation": (net.activation, ("tanh", "relu", "elu", "swish", "gelu")),
            "network.squash": (net.squash, ("sigmoid", "clip")),
            "network.noise": (net.noise, ("diagonal", "lattice")),
            "optimizer.name": (opt.name, ("adam", "adamw", "muon")),
            "optimizer.schedule": (opt.schedule, ("constant", "linear", "cosine")),
        }
        for key, (value, allowed) in choices.items():
            need(key, value in allowed, f"must be {'|'.join(allowed)}, got {value!r}")
        need(
            "network.init_log_std",
            math.isfinite(net.init_log_std),
            f"must be a finite number, got {net.init_log_std!r}",
        )
        need(
            "ppo.symmetry_coef",
            ppo.symmetry_coef == 0 or ppo.mirror_augment,
            "needs ppo.mirror_augment: true (the loss compares each sample with its mirrored copy)",
        )
        need(
            "ppo.critic_warmup_updates",
            ppo.critic_warmup_updates is None or ppo.critic_warmup_updates >= 0,
            f"must be >= 0 (or null), got {ppo.critic_warmup_updates!r}",
        )
        need("ppo.lr_max", math.isfinite(ppo.lr_max) and ppo.lr_max > 0, f"must be > 0, got {ppo.lr_max!r}")
        need("ppo.lr_min", 0 < ppo.lr_min <= ppo.lr_max, f"must be > 0 and <= ppo.lr_max, got {ppo.lr_min!r}")
        for key, low_open in (("learning_rate", True), ("eps", True), ("weight_decay", False)):
            value = getattr(opt, key)
            ok = math.isfinite(value) and (value > 0 if low_open else value >= 0)
            need(f"optimizer.{key}", ok, f"must be {'>' if low_open else '>='} 0, got {value!r}")
        need(
            "optimizer.final_fraction",
            0 <= opt.final_fraction <= 1,
            f"must be in [0, 1], got {opt.final_fraction!r}",
        )
        need(
            "optimizer.warmup_updates",
            opt.warmup_updates >= 0,
            f"must be an integer >= 0, got {opt.warmup_updates!r}",
        )
        self.env.validate(source_of("env", origins, source))


def read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    """Read a YAML mapping with the project's loader (one-line :class:`InputError` on any problem)."""
    return load_yaml(path)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``over`` merged in: nested mappings merge, everything else replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _resolve_file(name: str | os.PathLike, relative_to: Path | None) -> Path:
    path = Path(name)
    candidates = [path]
    if relative_to is not None and not path.is_absolute():
        candidates.insert(0, relative_to / path)
    if not path.is_absolute():
        candidates.append(CONFIG_DIR / path)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return candidates[0]


def _load_with_bases(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    path = path.resolve()
    if path in seen:
        raise InputError(path, "config inheritance loops back to itself through 'base'")
    data = read_yaml(path)
    parent = data.pop("base", None)
    if parent is None:
        return data
    parents = [parent] if isinstance(parent, (str, os.PathLike)) else parent
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise InputError(path, "'base' must be a file name or a list of file names")
    merged: dict[str, Any] = {}
    for p in parents:
        merged = deep_merge(merged, _load_with_bases(_resolve_file(p, path.parent), (*seen, path)))
    return deep_merge(merged, data)


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"ppo.num_envs=64"`` -> (["ppo", "num_envs"], 64); the value is read as a YAML scalar/list."""
    if "=" not in text:
        raise InputError(text, "an override must look like key=value (e.g. ppo.num_envs=64)")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise InputError(text, "empty key in override")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as err:
        raise InputError(text, "the value is not a valid YAML scalar") from err
    return parts, value


def apply_overrides(cfg: Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``key.sub=value`` strings to a raw (YAML) config mapping; sections are created as
    needed (unknown keys are refused when the :class:`TrainConfig` is built from it)."""
    out = copy.deepcopy(dict(cfg))
    for text in overrides:
        parts, value = parse_override(text)
        node: dict[str, Any] = out
        for i, part in enumerate(parts[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise InputError(text, f"'{'.'.join(parts[: i + 1])}' is not a section")
        node[parts[-1]] = value
    return out


def load_config(
    paths: str | os.PathLike | Sequence[str | os.PathLike] | None = None, overrides: Iterable[str] = ()
) -> TrainConfig:
    """Defaults <- YAML file(s) (with their ``base`` chains, later files overlaid) <- overrides.

    Each file's keys and types are checked on their own, the merged result by
    :meth:`TrainConfig.from_dict` (ranges; the ``env`` section by :class:`~musclerl.envs.EnvConfig`),
    and every motion file named must exist (:func:`check_motion_files`); an error names the file
    (or the ``key=value`` override) that set the bad value last.
    """
    if paths is None:
        paths = []
    elif isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    raw: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for p in paths:
        path = _resolve_file(p, None)
        if not path.is_file():
            raise InputError(p, "config file not found")
        layer = _load_with_bases(path, ())
        from_mapping(TrainConfig, layer, str(p))  # keys and types, named after this file
        raw = deep_merge(raw, layer)
        origins.update((key, str(p)) for key, _ in flat_items(layer))
    overrides = list(overrides)
    raw = apply_overrides(raw, overrides)
    for text in overrides:
        parts, _ = parse_override(text)
        origins.update({".".join(parts[: i + 1]): text for i in range(len(parts))})
    cfg = TrainConfig.from_dict(raw, "config", origins)
    check_motion_files(cfg, origins)
    return cfg


def num_updates(cfg: TrainConfig) -> int:
    """Number of PPO updates the run performs (at least one)."""
    return max(1, cfg.ppo.total_env_steps // (cfg.ppo.num_envs * cfg.ppo.rollout_steps))


def check_motion_files(cfg: TrainConfig, origins: Origins | None = None) -> None:
    """Every file ``motion:`` and ``validation.motion`` name exists (read nothing yet): a missing
    one is one :class:`InputError` line naming it and the config file (or override) that named
    it (``origins``, as :func:`load_config` collects them), followed by the config's
    ``motion_help`` (how to make the files) when it has one."""
    from musclerl.motion.dataset import dataset_sources

    origins = origins or {}
    if cfg.model == "toy":  # the toy task has no motion files
        return
    for key, spec in (("motion", cfg.motion), ("validation.motion", cfg.validation.motion)):
        if spec is None:
            continue
        try:
            dataset_sources(spec, key)
        except InputError as err:
            named_by = f" (named by {origins[key]})" if key in origins else ""
            hint = cfg.motion_help.strip()
            problem = err.problem + named_by
            raise InputError(err.source, f"{problem}; {hint}" if hint else problem) from err
