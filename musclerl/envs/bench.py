"""``musclerl bench env``."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="myolegs")
    parser.add_argument("--backend", default="cpu", choices=["cpu", "mjx"])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("bench env: in progress")
