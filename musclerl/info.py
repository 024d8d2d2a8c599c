"""``musclerl info``: summarise a model (registry name / MJCF path) or a motion file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

MOTION_SUFFIXES = (".trc", ".mot", ".sto", ".npz", ".txt", ".json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        help="model name (myolegs, tiny, ...), MJCF .xml path, or motion file "
        "(.trc, .mot, .sto, .npz, DeepMimic .txt)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--plot", metavar="PNG", help="motion files: also draw a quick-look plot into this .png"
    )


def run(args: argparse.Namespace) -> int:
    target = str(args.target)
    if args.plot:
        from musclerl.fileio import check_outputs

        check_outputs({"--plot": args.plot}, inputs=[target])
    if Path(target).suffix.lower() in MOTION_SUFFIXES:
        from musclerl.motion.summary import summarize_motion_file

        info = summarize_motion_file(target)
        if args.plot:
            from musclerl.motion.plot import plot_motion_file

            info["plot"] = str(plot_motion_file(target, args.plot))
        if args.json:
            print(json.dumps(info, indent=2))
        else:
            _print_motion(info)
        return 0
    if args.plot:
        from musclerl.errors import InputError

        raise InputError(args.plot, "--plot draws motion files only (.trc, .mot, .sto, .npz, .txt, .json)")
    from musclerl.models import load_model
    from musclerl.models.introspect import describe

    model = load_model(target)
    info = describe(model, target)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_model(info)
    return 0


def _print_motion(info: dict) -> None:
    print(f"{info['kind']}: {info['frames']} frames at {info['rate_hz']:.4g} Hz ({info['duration_s']:.3f} s)")
    print(f"units: {info['units']}")
    cols = info["columns"]
    print(f"columns ({len(cols)}): {', '.join(cols[:40])}{' ...' if len(cols) > 40 else ''}")
    for key, value in info.items():
        if key not in ("kind", "frames", "rate_hz", "duration_s", "columns", "units", "plausibility"):
            print(f"{key}: {value}")
    if "plausibility" in info:
        from musclerl.evaluate.plausibility import format_plausibility

        print("\n".join(format_plausibility(info["plausibility"])))


def _print_model(info: dict) -> None:
    print(
        f"model {info['model']}: nq {info['nq']}, nv {info['nv']}, nu {info['nu']}, "
        f"{info['n_muscles']} muscles, mass {info['total_mass_kg']:.2f} kg, dt {info['timestep_s']} s"
    )
    print(f"coordinates ({len(info['coordinates'])}):")
    for c in info["coordinates"]:
        rng = "unlimited" if c["range"] is None else f"[{c['range'][0]:.3f}, {c['range'][1]:.3f}]"
        print(f"  {c['name']:<36} {c['type']:<6} qpos {c['qpos_adr']:>3} qvel {c['qvel_adr']:>3} {rng}")
    print(f"muscles ({len(info['muscles'])}): " + ", ".join(m["name"] for m in info["muscles"]))
    print(
        f"bodies ({len(info['bodies'])}), sites ({len(info['sites'])}), "
        f"equality constraints ({len(info['equality_constraints'])})"
    )
