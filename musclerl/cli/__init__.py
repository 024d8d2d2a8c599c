"""``musclerl`` command line.

Subcommands: ``info``, ``convert``, ``retarget markers``, ``retarget smpl``, ``train``, ``evaluate``,
``reference``, ``bench ik|so|accuracy|env|train|learn|gpu``. Each is a module of this package (the
benchmarks: of :mod:`musclerl.bench`), which exposes ``add_arguments(parser)`` (cheap: no jax
import) and ``run(args) -> int``.

Bad input anywhere raises :class:`musclerl.errors.InputError`; ``main`` prints its one-line message
to stderr and returns 2, with no traceback and no partial output. Warnings raised while a command
runs (a header count that disagrees with the rows, ...) are printed as one
``musclerl: warning: ...`` line each, so an error is always the last line.
"""

from __future__ import annotations

import argparse
import ctypes.util
import importlib
import os
import sys
import warnings
from collections.abc import Sequence

from musclerl.errors import InputError

# (parser path, module, help). Modules are imported when the parser is built; they must keep
# heavy imports (mujoco, jax, scipy) inside ``run``: ``import mujoco`` picks its OpenGL backend from
# ``MUJOCO_GL`` and fails with a traceback when that backend's library is missing, before ``main``
# could say so in one line (tests/test_cli_environment.py checks both in a fresh interpreter).
COMMANDS: list[tuple[tuple[str, ...], str, str]] = [
    (("info",), "musclerl.cli.info", "summarise a model (registry name or MJCF) or a motion file"),
    (
        ("retarget", "markers"),
        "musclerl.cli.retarget_markers",
        "marker trajectories (.trc, .c3d) -> model coordinates by scaled, constrained IK",
    ),
    (
        ("retarget", "smpl"),
        "musclerl.cli.retarget_smpl",
        "SMPL/AMASS (.npz) or DeepMimic (.txt) motion -> model coordinates by keypoint IK "
        "with recovered terrain",
    ),
    (
        ("convert",),
        "musclerl.cli.convert",
        "C3D trial -> OpenSim files: markers .trc, per-foot GRF .mot and its ExternalLoads .xml",
    ),
    (("train",), "musclerl.cli.train", "train a tracking policy with PPO"),
    (
        ("evaluate",),
        "musclerl.cli.evaluate",
        "roll a policy out and compare torques/activations with ID, SO and EMG references",
    ),
    (
        ("reference",),
        "musclerl.cli.reference",
        "inverse dynamics + static optimisation for a motion -> reference NPZ and .sto files",
    ),
    (("bench", "ik"), "musclerl.bench.ik", "IK speed and accuracy: ours vs mink (and OpenSim)"),
    (("bench", "so"), "musclerl.bench.so", "our static optimisation vs OpenSim's on the same walk"),
    (
        ("bench", "accuracy"),
        "musclerl.bench.accuracy",
        "retargeted trials vs an expert's IK: per-trial and mean angle, marker, limit, floor table",
    ),
    (
        ("bench", "env"),
        "musclerl.bench.env",
        "environment steps/s vs raw mj_step and thread scaling (of a training config's env, or MJX)",
    ),
    (("bench", "train"), "musclerl.bench.train", "training env-steps/s vs env-only stepping"),
    (
        ("bench", "gpu"),
        "musclerl.bench.gpu",
        "the device check: env steps/s, memory, compile time on MJX-JAX and Warp at 1k-8k envs; training",
    ),
    (
        ("bench", "learn"),
        "musclerl.bench.learn",
        "train on a fixed budget, then the deterministic tracking test from t = 0",
    ),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="musclerl",
        description="Muscle-actuated motion imitation on MuJoCo: retarget, train, evaluate.",
    )
    from musclerl import __version__

    parser.add_argument("--version", action="version", version=f"musclerl {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for path, module_name, help_text in COMMANDS:
        if len(path) == 1:
            sub = top.add_parser(path[0], help=help_text, description=help_text)
        else:
            if path[0] not in groups:
                group_parser = top.add_parser(path[0], help=f"{path[0]} subcommands")
                groups[path[0]] = group_parser.add_subparsers(
                    dest="subcommand", required=True, metavar="SUBCOMMAND"
                )
            sub = groups[path[0]].add_parser(path[1], help=help_text, description=help_text)
        module = importlib.import_module(module_name)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


#: MUJOCO_GL values and the shared library ``import mujoco`` then loads (it fails without it).
GL_LIBRARIES = {"osmesa": ("OSMesa", "apt-get install libosmesa6"), "egl": ("EGL", "apt-get install libegl1")}
#: the values ``import mujoco`` accepts on Linux (mujoco/rendering/classic/gl_context.py); others raise
GL_VALUES = ("", "disable", "disabled", "off", "false", "0", "enable", "enabled", "on", "true", "1")
GL_VALUES += ("glfw", "glx", "egl", "osmesa", "wgl", "cgl")


def check_gl_backend() -> None:
    """Refuse, in one line, a ``MUJOCO_GL`` that ``import mujoco`` would fail on: an unknown value,
    or a backend whose library is missing (deep inside PyOpenGL, as an unrelated-looking
    AttributeError). Runs before the parser is built, so no command's module is imported yet."""
    backend = os.environ.get("MUJOCO_GL", "").lower().strip()
    if backend not in GL_VALUES:
        problem = f"'{backend}' is not a rendering backend; use egl, osmesa or glfw, or unset it"
        raise InputError("MUJOCO_GL", problem)
    if backend in GL_LIBRARIES:
        library, install = GL_LIBRARIES[backend]
        if ctypes.util.find_library(library) is None:
            problem = f"'{backend}' needs lib{library}, which is not installed ({install}); or unset it"
            raise InputError("MUJOCO_GL", problem)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the CLI: one line, no source location."""
    print(f"musclerl: warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        check_gl_backend()  # before the parser: building it imports every command's module
        args = build_parser().parse_args(argv)
        with warnings.catch_warnings():  # restores the caller's warning display on exit
            warnings.showwarning = _show_warning
            return int(args._run(args) or 0)
    except InputError as err:
        print(f"musclerl: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("musclerl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early
        sys.stderr.close()
        return 0
