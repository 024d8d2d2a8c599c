"""``musclerl info``: summarise a model (registry name / MJCF path) or a motion file (any suffix of
:data:`musclerl.motion.readers.READERS`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        help="model name (myolegs, tiny, ...), MJCF .xml path, motion file "
        "(.trc, .c3d, .mot, .sto, .npz, DeepMimic .txt, .bvh), or a folder of reference NPZ (a dataset root)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--plot", metavar="PNG", help="motion files: also draw a quick-look plot into this .png"
    )
    from musclerl.cli.retarget_smpl import add_trim_arguments

    add_trim_arguments(parser)
    parser.add_argument(
        "--keep-rest-frames", action="store_true", help="BVH files: keep the leading rest-pose frames"
    )


def run(args: argparse.Namespace) -> int:
    from musclerl.cli.retarget_smpl import trim_of
    from musclerl.motion.readers import READERS

    target = str(args.target)
    if trim_of(args).active and (Path(target).is_dir() or Path(target).suffix.lower() not in READERS):
        from musclerl.errors import InputError

        raise InputError(target, f"trimming ({trim_of(args).describe()}) applies to motion files")
    if Path(target).is_dir():
        if args.plot:
            from musclerl.errors import InputError

            raise InputError(args.plot, "--plot draws one motion file, not a folder")
        info = summarize_reference_folder(target)
        print(json.dumps(info, indent=2) if args.json else "\n".join(_folder_lines(info)))
        return 0
    if args.plot:
        from musclerl.fileio import check_outputs

        check_outputs({"--plot": args.plot}, inputs=[target])
    from musclerl.motion.readers import READERS, suffixes

    if Path(target).suffix.lower() in READERS:
        from musclerl.motion.summary import summarize_motion_file

        info = summarize_motion_file(target, trajectory_check, trim_of(args), args.keep_rest_frames)
        if args.plot and trim_of(args).active:
            from musclerl.errors import InputError

            raise InputError(args.plot, "--plot draws the whole file; leave out the trim options")
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

        raise InputError(args.plot, f"--plot draws motion files only ({', '.join(suffixes())})")
    suffix = Path(target).suffix.lower()
    if suffix and suffix != ".xml":
        from musclerl.errors import InputError

        raise InputError(
            target,
            f"unsupported file type '{suffix}': info reads models (a registry name or an MJCF .xml) "
            f"and motion files ({', '.join(suffixes())})",
        )
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
        from musclerl.dynamics.plausibility import format_plausibility

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


def summarize_reference_folder(folder: str) -> dict:
    """A dataset root (or one subject folder): the reference NPZ found below it, per subject the
    trials, frames, rates and the share of valid torque samples and rows, and every file that does
    not read with its one-line reason (files in the earlier layout are counted)."""
    import warnings

    import numpy as np

    from musclerl.errors import InputError
    from musclerl.motion.reference import LegacyLayoutWarning, read_reference
    from musclerl.retarget.batch import expand_inputs

    subjects: dict[str, dict] = {}
    unreadable, legacy = [], 0
    for path in expand_inputs([folder], (".npz",), "reference", recursive=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LegacyLayoutWarning)
            try:
                ref = read_reference(path)
            except InputError as err:
                unreadable.append(str(err))
                continue
        legacy += any(issubclass(w.category, LegacyLayoutWarning) for w in caught)
        empty = {"trials": 0, "frames": [], "rates_hz": set(), "valid": [], "rows": [], "activations": 0}
        row = subjects.setdefault(ref.subject or path.parent.name, empty)
        row["trials"] += 1
        row["frames"].append(ref.num_frames)
        row["rates_hz"].add(round(ref.rate_hz, 3))
        row["valid"].append(float(ref.joint_torque_column_valid.mean()))
        row["rows"].append(float(ref.joint_torque_valid.mean()))
        row["activations"] += path.with_name(path.stem + "_muscle_activation.sto").is_file()
    per_subject = {
        name: {
            "trials": r["trials"],
            "frames_min": int(min(r["frames"])),
            "frames_max": int(max(r["frames"])),
            "rates_hz": sorted(r["rates_hz"]),
            "torque_samples_valid": float(np.mean(r["valid"])),
            "torque_rows_valid": float(np.mean(r["rows"])),
            "activation_files": int(r["activations"]),
        }
        for name, r in sorted(subjects.items())
    }
    return {
        "kind": "reference dataset",
        "folder": str(folder),
        "trials": sum(r["trials"] for r in per_subject.values()),
        "subjects": per_subject,
        "earlier_layout_files": legacy,
        "unreadable": unreadable,
    }


def _folder_lines(info: dict) -> list[str]:
    lines = [
        f"reference dataset: {info['trials']} trials of {len(info['subjects'])} subject(s) under "
        f"{info['folder']}; {len(info['unreadable'])} unreadable, {info['earlier_layout_files']} in the "
        "earlier layout"
    ]
    for name, r in info["subjects"].items():
        rates = "/".join(f"{v:g}" for v in r["rates_hz"])
        lines.append(
            f"  {name}: {r['trials']} trials, {r['frames_min']}-{r['frames_max']} frames at {rates} Hz, "
            f"torque samples valid {100 * r['torque_samples_valid']:.1f} % "
            f"(rows {100 * r['torque_rows_valid']:.1f} %), "
            f"activation .sto {r['activation_files']}/{r['trials']}"
        )
    lines += [f"  unreadable: {e}" for e in info["unreadable"]]
    return lines


def trajectory_check(traj, path: Path) -> dict:
    """:func:`musclerl.dynamics.plausibility.trajectory_plausibility` on the registry model the
    motion names, as a dict; ``{"skipped": reason}`` when the motion names no registered model.
    A motion that names a registered model but does not fit it (nq, nv, joint names) is refused
    with :class:`InputError` naming ``path``: its arrays are inconsistent, not merely unchecked.
    (A motion retargeted onto a scaled model is checked on the unscaled one.)"""
    from musclerl.dynamics.plausibility import trajectory_plausibility
    from musclerl.models.registry import REGISTRY, load_model

    if traj.model_name not in REGISTRY:
        return {"skipped": f"{traj.model_name!r} is not a registered model"}
    return trajectory_plausibility(traj, load_model(traj.model_name), source=path).as_dict()
