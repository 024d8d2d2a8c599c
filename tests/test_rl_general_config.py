"""``configs/myolegs_walk_general.yaml``, the generalist recipe: its walks are files a user makes
(a missing one is one error line saying how), it trains a few updates with validation on
``tiny`` (tiny's bundled walk and a generated clip standing in for the walks) on both backends,
and its task fits the shipped walker, so ``--init-from assets/policies/myolegs_walk`` starts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from musclerl.envs.motions import sine_gait
from musclerl.errors import InputError
from musclerl.rl.config import load_config
from musclerl.rl.runner import train

REPO = Path(__file__).resolve().parents[1]
GENERAL = REPO / "configs" / "myolegs_walk_general.yaml"
WALKER = REPO / "assets" / "policies" / "myolegs_walk"
SMALL = [
    "ppo.num_envs=8",
    "ppo.rollout_steps=16",
    "ppo.total_env_steps=256",  # 2 updates
    "ppo.num_minibatches=2",
    "ppo.update_epochs=1",
    "network.policy_hidden=[16]",
    "network.value_hidden=[16]",
    "validation.every_updates=1",
    "validation.seconds=0.4",
    "log.progress=false",
    "threads=1",
]


def test_missing_walks_are_one_line_naming_the_file_and_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the walks are relative to where a run starts: none here
    with pytest.raises(InputError) as err:
        load_config(GENERAL)
    message = str(err.value)
    assert message.startswith("data/walks/walking1.npz: motion file not found (named by ")
    assert "myolegs_walk_general.yaml); make the walks" in message
    assert "musclerl retarget markers" in message and "\n" not in message


@pytest.mark.parametrize(
    "backend",
    # mjx: the whole update jitted, ~2 min of XLA CPU compile (small batch: XLA CPU deadlocked at 256)
    ["cpu", pytest.param("mjx", marks=[pytest.mark.slow, pytest.mark.timeout(600)])],
)
def test_general_recipe_trains_and_validates_on_tiny(tmp_path, backend):
    held_out = tmp_path / "held_out.npz"
    sine_gait("tiny", duration_s=0.6, name="held_out").save(held_out)
    walk = REPO / "assets" / "motions" / "walk_tiny.npz"
    overrides = [
        "model=tiny",
        f"motion={{clips: [{walk}], mirror: true}}",
        f"validation.motion={{clips: [{held_out}], mirror: true}}",
        f"backend={backend}",
        *SMALL,
    ]
    cfg = load_config(GENERAL, overrides)
    assert cfg.augment.time_scales == [0.8, 0.9, 1.1, 1.2] and cfg.env.sampling.adaptive
    summary = train(cfg, tmp_path / "run", quiet=True)
    assert summary["updates"] == 2 and summary["backend"] == backend
    rows = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [0, 1, 2] and all("val/success" in r for r in rows)
    trained = set(summary["clip_results"]["clips"])  # 2 mirrored walks x (1 + 4 speeds)
    assert len(trained) == 10 and "humanoid3d_walk:mirror@1.2x" in trained
    assert not any("held_out" in name for name in trained)
    assert summary["validation"]["clips"] == ["held_out", "held_out:mirror"]


def test_general_recipe_starts_from_the_shipped_walker(tmp_path):
    """One update of the recipe on myolegs (the bundled walk alone, no validation) from the
    shipped walker: the observation, action and network sizes fit."""
    overrides = [
        "motion=assets/motions/walk_myolegs.npz",
        "validation.motion=null",
        "ppo.num_envs=4",
        "ppo.rollout_steps=8",
        "ppo.total_env_steps=32",
        "ppo.num_minibatches=1",
        "augment.time_scales=[1.2]",
        "log.progress=false",
    ]
    summary = train(load_config(GENERAL, overrides), tmp_path / "run", quiet=True, init_from=WALKER)
    assert summary["init_from"] == str(WALKER) and summary["updates"] == 1


def test_cmu_recipe_without_its_walks_is_one_line_naming_the_folder_and_the_command(tmp_path, monkeypatch):
    """``configs/myolegs_walk_cmu.yaml``: the CMU walks are a folder a user makes (CMU's data may not
    be resold, so it is not shipped); without it, one line naming the folder and how to make it."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as err:
        load_config(REPO / "configs" / "myolegs_walk_cmu.yaml")
    message = str(err.value)
    assert message.startswith("data/cmu: motion file not found (named by ")
    assert "musclerl retarget smpl ../shared/data/cmu_walks/mb/" in message and "\n" not in message
