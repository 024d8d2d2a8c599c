"""``musclerl train`` / ``python train.py``: PPO on a tracking environment."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="configs/demo.yaml", help="YAML config")
    parser.add_argument("--out", help="run folder (default runs/<config>-<time>)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides, e.g. ppo.num_envs=64")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("train: in progress")
