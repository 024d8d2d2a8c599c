"""``musclerl bench train``."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", default="cpu", choices=["cpu", "mjx"])
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("bench train: in progress")
