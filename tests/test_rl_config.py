"""Config defaults, YAML inheritance and overlays, key=value overrides, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from musclerl.envs import EnvConfig
from musclerl.errors import InputError
from musclerl.rl.config import CONFIG_DIR, TrainConfig, load_config, num_updates


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_inheritance_overlay_and_overrides(tmp_path):
    _write(tmp_path / "base.yaml", "seed: 3\nppo: {num_envs: 8, gamma: 0.9}\nenv: {horizon: 100}\n")
    child = _write(tmp_path / "child.yaml", "base: base.yaml\nppo: {gamma: 0.95}\nenv: {substeps: 4}\n")
    overlay = _write(tmp_path / "overlay.yaml", "network: {layer_norm: true}\n")
    cfg = load_config(
        [child, overlay], ["ppo.num_envs=16", "env.obs.goal_frames=3", "network.policy_hidden=[64, 32]"]
    )
    assert cfg.seed == 3
    assert cfg.ppo.num_envs == 16 and cfg.ppo.gamma == 0.95
    assert cfg.ppo.rollout_steps == TrainConfig().ppo.rollout_steps
    assert cfg.env == EnvConfig.from_dict({"horizon": 100, "substeps": 4, "obs": {"goal_frames": 3}})
    assert cfg.network.layer_norm is True and cfg.network.policy_hidden == [64, 32]


@pytest.mark.parametrize(
    "text,override,match",
    [
        ("ppo: {num_env: 8}\n", None, "unknown config key 'ppo.num_env'"),
        ("ppo: [1, 2]\n", None, "'ppo' must be a mapping"),
        ("ppo: {num_envs: 0}\n", None, "positive integer"),
        ("backend: gpu\n", None, "backend must be"),
        ("network: {activation: sine}\n", None, "network.activation"),
        ("optimizer: {name: sgd}\n", None, "optimizer.name"),
        ("ppo: {num_envs: 3, rollout_steps: 3, num_minibatches: 4}\n", None, "divisible"),
        ("seed: 1\n", "ppo.nope=3", "unknown config key 'ppo.nope'"),
        ("seed: 1\n", "ppo.num_envs", "key=value"),
        ("seed: 1\n", "ppo.num_envs=[1", "valid YAML"),
        ("- a\n- b\n", None, "must be a mapping"),
        ("ppo: {num_envs: 8\n", None, "malformed YAML"),
        ("base: missing.yaml\n", None, "not found"),
        ("base: self.yaml\n", None, "loops back"),
    ],
)
def test_bad_configs_raise_one_line_input_error(tmp_path, text, override, match):
    path = _write(tmp_path / "self.yaml", text)
    with pytest.raises(InputError, match=match) as info:
        load_config(path, [override] if override else [])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "text,override,match",
    [
        ("ppo: {total_env_steps: -100}\n", None, "ppo.total_env_steps must be a positive integer, got -100"),
        ("ppo: {num_envs: -4}\n", None, "ppo.num_envs must be a positive integer"),
        ("optimizer: {learning_rate: 0}\n", None, "optimizer.learning_rate must be > 0"),
        ("optimizer: {eps: -1.0}\n", None, "optimizer.eps must be > 0"),
        ("optimizer: {warmup_updates: -5}\n", None, "optimizer.warmup_updates must be an integer >= 0"),
        ("ppo: {clip_eps: .inf}\n", None, "ppo.clip_eps must be a finite number"),
        ("env: {control_hz: -50}\n", None, "control_hz must be a finite rate >= 0"),
        ("env: {substeps: 0}\n", None, "substeps must be >= 1"),
        ("seed: 1\n", "ppo.num_envs=-2", "ppo.num_envs must be a positive integer"),
        ("seed: 1\n", "env.horizon=0", "horizon must be >= 1"),
    ],
)
def test_out_of_range_values_name_the_file_or_override(tmp_path, text, override, match):
    """Checked at load, before any work; the source is the file (or override) that set the value."""
    base = _write(tmp_path / "base.yaml", "seed: 2\n")
    path = _write(tmp_path / "run.yaml", text)
    with pytest.raises(InputError, match=match.replace("(", r"\(")) as info:
        load_config([base, path], [override] if override else [])
    assert info.value.source == (override or str(path))


def test_missing_config_file():
    with pytest.raises(InputError, match="config file not found"):
        load_config("/nonexistent/cfg.yaml")


@pytest.mark.parametrize("name", ["demo.yaml", "myolegs_walk.yaml", "fullbody_gpu.yaml", "tiny.yaml"])
def test_shipped_configs_load(name):
    cfg = load_config(CONFIG_DIR / name)
    assert num_updates(cfg) >= 1
    assert EnvConfig.from_dict(cfg.to_dict()["env"]) == cfg.env
    # what a run folder, checkpoint and policy export store reads back as the same config
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    "text,override,key",
    [
        ("ppo: {num_envs: 8, rollout_stepz: 4}\n", "ppo.rollout_stepz=4", "ppo.rollout_stepz"),  # unknown
        ("env: {termination: {max_tilt: 30}}\n", "env.termination.max_tilt=30", "env.termination.max_tilt"),
        ("ppo: {num_envs: 2.5}\n", "ppo.num_envs=2.5", "ppo.num_envs"),  # a float for an integer
        ("ppo: {normalize_obs: 1}\n", "ppo.normalize_obs=1", "ppo.normalize_obs"),  # a number for true/false
        (
            "network: {policy_hidden: 256}\n",
            "network.policy_hidden=256",
            "network.policy_hidden",
        ),  # not a list
        ("network: {policy_hidden: [64, x]}\n", "network.policy_hidden=[64, x]", "network.policy_hidden[1]"),
        ("optimizer: {learning_rate: fast}\n", "optimizer.learning_rate=fast", "optimizer.learning_rate"),
        ("model: 3\n", "model=3", "model"),  # a number for text
        ("env: {horizon: 10.5}\n", "env.horizon=10.5", "env.horizon"),  # a float for an env integer
        ("env: {obs: [root_height]}\n", "env.obs=[root_height]", "env.obs"),  # a list for a section
    ],
)
def test_unknown_key_or_wrong_type_names_the_file_and_the_key(tmp_path, text, override, key):
    """One loader checks the trainer and the env tree: one line naming the file that set the value
    (not the base it is overlaid on), or the override, and the dotted key."""
    base = _write(tmp_path / "base.yaml", "seed: 2\nppo: {num_envs: 16}\n")
    path = _write(tmp_path / "run.yaml", text)
    for files, overrides, source in (([base, path], [], str(path)), ([base], [override], override)):
        with pytest.raises(InputError) as info:
            load_config(files, overrides)
        message = str(info.value)
        assert info.value.source == source and "\n" not in message
        assert f"'{key}'" in message or f"{key} must be" in message
