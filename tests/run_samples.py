"""A tiny policy trained briefly through the CLI, for tests that need one to evaluate."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


#: the tiny run's budget: a policy to evaluate, not one that tracks
TINY_BUDGET = ["ppo.total_env_steps=256", "ppo.num_envs=8", "ppo.rollout_steps=32", "threads=1"]
TINY_BUDGET += ["network.policy_hidden=[16]", "network.value_hidden=[16]"]


def train_tiny(motion: str | Path, out: Path) -> dict:
    """``musclerl train`` on tiny (configs/tiny.yaml, :data:`TINY_BUDGET`) on ``motion``; the
    run's summary."""
    from musclerl.cli import main

    args = ["train", "--config", str(REPO / "configs" / "tiny.yaml"), "--out", str(out), "--quiet"]
    assert main([*args, f"motion={motion}", *TINY_BUDGET]) == 0
    return json.loads((out / "summary.json").read_text())
