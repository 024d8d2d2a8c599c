"""``musclerl retarget smpl``: SMPL/AMASS .npz -> scaled model -> keypoint IK -> Trajectory."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("motion", nargs="+", help="AMASS/SMPL .npz file(s) or a folder")
    parser.add_argument("--model", default="myolegs")
    parser.add_argument("--out", required=True, help="output Trajectory .npz (or folder for many)")
    parser.add_argument("--report", help="quality report JSON")
    parser.add_argument("--plot", help="quality plot PNG")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("retarget smpl: in progress")
