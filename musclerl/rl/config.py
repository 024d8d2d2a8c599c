"""Training configuration: defaults, YAML inheritance, overlays and ``key=value`` overrides.

A run is described by one nested dict (``DEFAULTS`` below shows every key the trainer reads).
A YAML file may name a parent with ``base: other.yaml`` (resolved relative to the file); the
child is deep-merged over the parent, the parent over ``DEFAULTS``. More files can be stacked as
overlays (``load_config([a, b])``: b merged over a). Finally command-line overrides
``ppo.num_envs=64 network.layer_norm=true`` are applied; their values are parsed as YAML scalars.

Only the ``env`` section is free-form: it is handed to the environment's ``EnvConfig.from_dict``,
which validates it. Every other key must exist in ``DEFAULTS`` — a typo is an :class:`InputError`.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from musclerl.errors import InputError
from musclerl.fileio import load_yaml
from musclerl.resources import configs_dir

CONFIG_DIR = configs_dir()

DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "model": "myolegs",  # registry name or MJCF path
    "motion": "assets/motions/walk_myolegs.npz",  # Trajectory NPZ (relative to the repo or cwd)
    "backend": "cpu",  # "cpu" (MuJoCo C threads) or "mjx" (whole update jitted)
    "threads": 2,  # MuJoCo C threads for the cpu backend
    "env": {},  # passed to musclerl.envs.EnvConfig.from_dict
    "ppo": {
        "num_envs": 32,  # total over all devices
        "rollout_steps": 64,  # env steps per env per update
        "total_env_steps": 200_000,
        "update_epochs": 4,
        "num_minibatches": 4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_eps": 0.2,
        # PPO2's clipped value loss is off: with rewards scaled to unit returns a +-0.2 clip only
        # slows the critic (Andrychowicz et al. 2021 found it neutral to harmful)
        "clip_value": False,
        "value_clip": 0.2,  # half-width of the value clip when clip_value is on (scaled returns)
        "vf_coef": 0.5,
        "ent_coef": 0.0,
        "max_grad_norm": 1.0,  # actor (policy + noise) gradient norm clip (0 = off)
        "max_grad_norm_critic": 10.0,  # critic gradient norm clip, apart from the actor's
        "normalize_advantages": True,
        "normalize_rewards": True,  # divide rewards by the running std of the discounted return
        "reward_scale": 1.0,  # rewards are multiplied by this before GAE (after normalisation)
        "target_kl": 0.01,  # > 0: step size adapted per minibatch to this KL (rsl_rl); 0: schedule
        "lr_min": 1.0e-5,
        "lr_max": 3.0e-3,
        "normalize_obs": True,  # running mean/std of observations (kept in checkpoints)
        # add the left/right mirror of every sample to each PPO batch (musclerl.envs.symmetry):
        # twice the data for a symmetric motion set, for a larger batch in the update only
        "mirror_augment": False,
        "obs_clip": 5.0,  # normalised observations are clipped to +-obs_clip
    },
    "network": {
        "policy_hidden": [256, 256],
        "value_hidden": [256, 256],
        "activation": "tanh",  # tanh | relu | elu | swish | gelu
        "layer_norm": False,
        "init_log_std": -1.0,  # initial log standard deviation of the Gaussian (pre-squash)
        "squash": "sigmoid",  # sigmoid | clip: how Gaussian samples become actions in the env's bounds
        "noise": "diagonal",  # diagonal | lattice (latent, correlated across muscles)
    },
    "optimizer": {
        "name": "adam",  # adam | adamw | muon (optax.contrib.muon)
        "learning_rate": 3.0e-4,
        "schedule": "constant",  # constant | linear | cosine (over all updates)
        "warmup_updates": 0,
        "final_fraction": 0.0,  # final lr = learning_rate * final_fraction for linear/cosine
        "weight_decay": 0.0,
        "eps": 1.0e-5,
    },
    "checkpoint": {
        "every_updates": 10,
        "keep": 3,
    },
    # held-out clips tested deterministically during training (musclerl.rl.validation)
    "validation": {
        "motion": None,  # a motion set like ``motion:``; None: no validation
        "every_updates": 25,
        "seconds": 10.0,  # each clip from t = 0 for up to this long
        "at_start": True,  # also before the first update
    },
    # training-set augmentation: a copy of every training clip per speed factor (envs/time_scale.py)
    "augment": {"time_scales": []},
    # shown after the error of a missing motion file: how to make the files the config names
    "motion_help": "",
    "log": {
        "every_updates": 1,
        "progress": True,  # tqdm progress bar
    },
}


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


def _check_keys(cfg: Mapping[str, Any], ref: Mapping[str, Any], source: str, prefix: str = "") -> None:
    for key, value in cfg.items():
        dotted = f"{prefix}{key}"
        if key not in ref:
            raise InputError(source, f"unknown config key '{dotted}' (known: {sorted(ref)})")
        if key == "env":
            if not isinstance(value, Mapping):
                raise InputError(source, "'env' must be a mapping")
            continue
        if isinstance(ref[key], Mapping):
            if not isinstance(value, Mapping):
                raise InputError(source, f"'{dotted}' must be a mapping")
            _check_keys(value, ref[key], source, dotted + ".")


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
    """Apply ``key.sub=value`` strings; keys outside ``env`` must already exist."""
    out = copy.deepcopy(dict(cfg))
    for text in overrides:
        parts, value = parse_override(text)
        node: dict[str, Any] = out
        for i, part in enumerate(parts[:-1]):
            inside_env = parts[0] == "env"
            if part not in node:
                if not inside_env:
                    raise InputError(text, f"unknown config key '{'.'.join(parts[: i + 1])}'")
                node[part] = {}
            if not isinstance(node[part], dict):
                raise InputError(text, f"'{'.'.join(parts[: i + 1])}' is not a section")
            node = node[part]
        last = parts[-1]
        if parts[0] != "env" and last not in node:
            raise InputError(text, f"unknown config key '{'.'.join(parts)}'")
        node[last] = value
    return out


def _dotted(tree: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Every key of a nested mapping, dotted (``ppo``, ``ppo.num_envs``, ...)."""
    for key, value in tree.items():
        yield f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _dotted(value, f"{prefix}{key}.")


def load_config(
    paths: str | os.PathLike | Sequence[str | os.PathLike] | None = None, overrides: Iterable[str] = ()
) -> dict[str, Any]:
    """DEFAULTS <- YAML file(s) (with their ``base`` chains, later files overlaid) <- overrides.

    Checked at once (:func:`validate`, the ``env`` section by :class:`~musclerl.envs.EnvConfig`;
    every motion file named must exist: :func:`check_motion_files`); an error names the file (or
    the ``key=value`` override) that set the bad value last.
    """
    if paths is None:
        paths = []
    elif isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    cfg = copy.deepcopy(DEFAULTS)
    origins: dict[str, str] = {}
    for p in paths:
        path = _resolve_file(p, None)
        if not path.is_file():
            raise InputError(p, "config file not found")
        layer = _load_with_bases(path, ())
        _check_keys(layer, DEFAULTS, str(p))
        cfg = deep_merge(cfg, layer)
        origins.update(dict.fromkeys(_dotted(layer), str(p)))
    overrides = list(overrides)
    cfg = apply_overrides(cfg, overrides)
    for text in overrides:
        parts, _ = parse_override(text)
        origins.update({".".join(parts[: i + 1]): text for i in range(len(parts))})
    validate(cfg, "config", origins)
    check_motion_files(cfg, origins)
    return cfg


def validate(cfg: Mapping[str, Any], source: str, origins: Mapping[str, str] | None = None) -> None:
    """Check types and ranges of every setting, the ``env`` section through
    :meth:`musclerl.envs.config.EnvConfig.from_dict`. ``origins`` maps dotted keys to the file or
    override that set them (the error's source); unset keys are attributed to ``source``."""
    from musclerl.envs.config import EnvConfig

    origins = origins or {}
    _check_keys(cfg, DEFAULTS, source)
    ppo, net, opt = cfg["ppo"], cfg["network"], cfg["optimizer"]

    def need(key: str, cond: bool, problem: str) -> None:
        if not cond:
            raise InputError(origins.get(key, source), f"{key} {problem}")

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    def positive_int(key: str, value: Any) -> None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        need(key, ok, f"must be a positive integer, got {value!r}")

    for key in ("num_envs", "rollout_steps", "total_env_steps", "update_epochs", "num_minibatches"):
        positive_int(f"ppo.{key}", ppo[key])
    for key in ("every_updates", "keep"):
        positive_int(f"checkpoint.{key}", cfg["checkpoint"][key])
    positive_int("log.every_updates", cfg["log"]["every_updates"])
    val = cfg["validation"]
    positive_int("validation.every_updates", val["every_updates"])
    need(
        "validation.seconds",
        number(val["seconds"]) and val["seconds"] > 0,
        f"must be a number of seconds > 0, got {val['seconds']!r}",
    )
    need(
        "validation.at_start",
        isinstance(val["at_start"], bool),
        f"must be true or false, got {val['at_start']!r}",
    )
    scales = cfg["augment"]["time_scales"]
    need(
        "augment.time_scales",
        isinstance(scales, list) and all(number(x) and 0.5 <= x <= 2.0 and x != 1 for x in scales),
        f"must be a list of speed factors in [0.5, 2] other than 1, got {scales!r}",
    )
    need("motion_help", isinstance(cfg["motion_help"], str), f"must be text, got {cfg['motion_help']!r}")
    positive_int("threads", cfg["threads"])
    need(
        "seed",
        isinstance(cfg["seed"], int) and not isinstance(cfg["seed"], bool),
        f"must be an integer, got {cfg['seed']!r}",
    )
    need("backend", cfg["backend"] in ("cpu", "mjx"), f"must be 'cpu' or 'mjx', got {cfg['backend']!r}")
    batch = ppo["num_envs"] * ppo["rollout_steps"]
    need(
        "ppo.num_minibatches",
        batch % ppo["num_minibatches"] == 0,
        f"= {ppo['num_minibatches']}: ppo.num_envs*ppo.rollout_steps ({batch}) must be divisible by it",
    )
    for key in ("gamma", "gae_lambda"):
        need(
            f"ppo.{key}", number(ppo[key]) and 0.0 <= ppo[key] <= 1.0, f"must be in [0, 1], got {ppo[key]!r}"
        )
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
    ):
        need(
            f"ppo.{key}",
            number(ppo[key]) and ppo[key] >= 0,
            f"must be a finite number >= 0, got {ppo[key]!r}",
        )
    for key in ("policy_hidden", "value_hidden"):
        sizes = net[key]
        need(
            f"network.{key}",
            isinstance(sizes, list)
            and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes),
            f"must be a list of positive integers, got {sizes!r}",
        )
    choices = {
        "network.activation": (net["activation"], ("tanh", "relu", "elu", "swish", "gelu")),
        "network.squash": (net["squash"], ("sigmoid", "clip")),
        "network.noise": (net["noise"], ("diagonal", "lattice")),
        "optimizer.name": (opt["name"], ("adam", "adamw", "muon")),
        "optimizer.schedule": (opt["schedule"], ("constant", "linear", "cosine")),
    }
    for key, (value, allowed) in choices.items():
        need(key, value in allowed, f"must be {'|'.join(allowed)}, got {value!r}")
    need(
        "network.init_log_std",
        number(net["init_log_std"]),
        f"must be a finite number, got {net['init_log_std']!r}",
    )
    need("ppo.lr_max", number(ppo["lr_max"]) and ppo["lr_max"] > 0, f"must be > 0, got {ppo['lr_max']!r}")
    need(
        "ppo.lr_min",
        number(ppo["lr_min"]) and 0 < ppo["lr_min"] <= ppo["lr_max"],
        f"must be > 0 and <= ppo.lr_max, got {ppo['lr_min']!r}",
    )
    for key, low, low_open in (("learning_rate", 0, True), ("eps", 0, True), ("weight_decay", 0, False)):
        value = opt[key]
        ok = number(value) and (value > low if low_open else value >= low)
        need(f"optimizer.{key}", ok, f"must be {'>' if low_open else '>='} {low}, got {value!r}")
    need(
        "optimizer.final_fraction",
        number(opt["final_fraction"]) and 0 <= opt["final_fraction"] <= 1,
        f"must be in [0, 1], got {opt['final_fraction']!r}",
    )
    warmup = opt["warmup_updates"]
    need(
        "optimizer.warmup_updates",
        isinstance(warmup, int) and not isinstance(warmup, bool) and warmup >= 0,
        f"must be an integer >= 0, got {warmup!r}",
    )
    EnvConfig.from_dict(cfg["env"], source=origins.get("env", source))


def num_updates(cfg: Mapping[str, Any]) -> int:
    """Number of PPO updates the run performs (at least one)."""
    ppo = cfg["ppo"]
    return max(1, int(ppo["total_env_steps"]) // (ppo["num_envs"] * ppo["rollout_steps"]))


def check_motion_files(cfg: dict[str, Any], origins: Mapping[str, str] | None = None) -> None:
    """Every file ``motion:`` and ``validation.motion`` name exists (read nothing yet): a missing
    one is one :class:`InputError` line naming it and the config file (or override) that named
    it (``origins``, as :func:`validate`'s), followed by the config's ``motion_help`` (how to make
    the files) when it has one."""
    from musclerl.motion.dataset import dataset_sources

    origins = origins or {}
    if cfg["model"] == "toy":  # the toy task has no motion files
        return
    specs = [("motion", cfg["motion"]), ("validation.motion", cfg["validation"]["motion"])]
    for key, spec in specs:
        if spec is None:
            continue
        try:
            dataset_sources(spec, key)
        except InputError as err:
            named_by = f" (named by {origins[key]})" if key in origins else ""
            hint = str(cfg.get("motion_help") or "").strip()
            problem = err.problem + named_by
            raise InputError(err.source, f"{problem}; {hint}" if hint else problem) from err
