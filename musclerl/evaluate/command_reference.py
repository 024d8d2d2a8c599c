"""``musclerl reference``: inverse dynamics + static optimisation -> reference NPZ."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("motion", help="Trajectory .npz or coordinates .mot (degrees, OpenSim names)")
    parser.add_argument("--model", default="myolegs")
    parser.add_argument("--grf", help="ground reaction forces .mot")
    parser.add_argument("--loads", help="OpenSim ExternalLoads .xml naming the bodies the GRFs act on")
    parser.add_argument("--mass", type=float, help="subject mass in kg (default: model mass)")
    parser.add_argument("--out", required=True, help="reference NPZ")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("reference: in progress")
