"""configs/env/default.yaml mirrors EnvConfig's defaults; YAML round trip."""

from __future__ import annotations

from pathlib import Path

import yaml

from musclerl.envs import EnvConfig

REPO = Path(__file__).resolve().parents[1]


def test_default_yaml_equals_code_defaults():
    data = yaml.safe_load((REPO / "configs" / "env" / "default.yaml").read_text())
    assert EnvConfig.from_dict(data) == EnvConfig()
    assert set(data) == set(EnvConfig().to_dict())  # every setting is listed


def test_partial_dict_keeps_other_defaults():
    cfg = EnvConfig.from_dict({"reward": {"weights": {"site_pos": 0.5}}, "obs": {"goal_frames": 3}})
    assert cfg.reward.weights["site_pos"] == 0.5 and cfg.reward.weights["joint_pos"] == 0.15
    assert cfg.obs.goal_frames == 3 and cfg.obs.goal_stride == 5
    assert EnvConfig.from_dict(cfg.to_dict()) == cfg
