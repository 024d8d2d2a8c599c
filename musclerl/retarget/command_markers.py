"""``musclerl retarget markers``: .trc markers -> scaled model -> constrained IK -> Trajectory."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trc", nargs="+", help="marker trial(s) (.trc) or a folder of them")
    parser.add_argument("--model", default="myolegs")
    parser.add_argument("--markers", required=True, help="OpenSim model (.osim) or MarkerSet .xml")
    parser.add_argument("--static", help="static trial (.trc) used to scale the model first")
    parser.add_argument("--setup", help="OpenSim IK setup XML (marker weights, time range)")
    parser.add_argument("--start", type=float, help="first time (s)")
    parser.add_argument("--end", type=float, help="last time (s)")
    parser.add_argument("--out", required=True, help="output Trajectory .npz (or folder for many trials)")
    parser.add_argument("--mot", help="also write coordinates as an OpenSim .mot (degrees)")
    parser.add_argument("--report", help="quality report JSON")
    parser.add_argument("--plot", help="quality plot PNG")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("retarget markers: in progress")
