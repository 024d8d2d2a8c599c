"""``musclerl evaluate``: roll a policy out and compare with ID/SO/EMG references."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", help="exported policy folder (run/policy)")
    parser.add_argument("--motion", required=True, help="Trajectory .npz to track")
    parser.add_argument("--reference", help="reference NPZ (joint_angle / joint_torque schema)")
    parser.add_argument("--activations", help="static-optimisation activations .sto")
    parser.add_argument("--emg", help="EMG .csv or .sto")
    parser.add_argument("--emg-map", help="YAML channel -> muscle map")
    parser.add_argument("--out", required=True, help="output folder")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("evaluate: in progress")
