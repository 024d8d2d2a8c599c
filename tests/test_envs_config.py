"""configs/env/default.yaml mirrors EnvConfig's defaults; YAML round trip."""

from __future__ import annotations

from pathlib import Path

import yaml

from musclerl.envs import EnvConfig

REPO = Path(__file__).resolve().parents[1]


def test_default_yaml_equals_code_defaults():
    data = yaml.safe_load((REPO / "configs" / "env" / "default.yaml").read_text())
    assert EnvConfig.from_dict(data) == EnvConfig()

    def keys(tree, prefix=""):  # every setting at every depth, e.g. "action.feedforward"
        out = set()
        for key, value in tree.items():
            out.add(prefix + key)
            if isinstance(value, dict):
                out |= keys(value, prefix + key + ".")
        return out

    assert keys(data) == keys(EnvConfig().to_dict())  # every setting is listed


def test_partial_dict_keeps_other_defaults():
    cfg = EnvConfig.from_dict({"reward": {"weights": {"site_pos": 0.5}}, "obs": {"goal_frames": 3}})
    assert cfg.reward.weights["site_pos"] == 0.5 and cfg.reward.weights["joint_pos"] == 0.15
    assert cfg.obs.goal_frames == 3 and cfg.obs.goal_stride == 5
    assert EnvConfig.from_dict(cfg.to_dict()) == cfg


def test_timestep_and_control_rate_set_the_physics_and_substeps():
    """``timestep_s`` replaces the model's physics step; ``control_hz`` then picks the substeps."""
    import pytest

    from musclerl.envs.motions import sine_gait
    from musclerl.envs.tracking import TrackingEnv
    from musclerl.errors import InputError

    clip = sine_gait("tiny", duration_s=0.5)
    env = TrackingEnv("tiny", clip, {"timestep_s": 0.004, "control_hz": 50.0}, num_envs=1)
    assert env.model.opt.timestep == 0.004
    assert env.config.substeps == 5 and abs(env.control_dt_s - 0.02) < 1e-12
    default = TrackingEnv("tiny", clip, {"control_hz": 50.0}, num_envs=1)
    assert default.model.opt.timestep == 0.002 and default.config.substeps == 10
    with pytest.raises(InputError, match="timestep_s"):
        EnvConfig.from_dict({"timestep_s": -0.001})
