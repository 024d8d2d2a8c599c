"""The command line under a broken environment, each in a fresh interpreter (what a user's shell
starts): ``MUJOCO_GL`` naming a backend whose library is missing, or a value mujoco rejects, gives
one line and exit 2 for every command; building the parser imports neither mujoco nor jax (the
import order these guards depend on is only visible in a new process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from musclerl.cli import COMMANDS

# A machine without OSMesa, as PyOpenGL sees it: the library cannot be found or loaded.
NO_OSMESA = textwrap.dedent(
    """
    import ctypes
    import ctypes.util

    _find = ctypes.util.find_library
    ctypes.util.find_library = lambda name: None if "OSMesa" in name else _find(name)
    _init = ctypes.CDLL.__init__


    def _no_osmesa(self, name, *args, **kwargs):
        if name and "OSMesa" in str(name):
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        _init(self, name, *args, **kwargs)


    ctypes.CDLL.__init__ = _no_osmesa
    """
)


def _run(args: list[str], env_extra: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "musclerl", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def _no_osmesa_env(tmp_path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(NO_OSMESA)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}


def test_the_stand_in_for_a_machine_without_osmesa_breaks_import_mujoco(tmp_path):
    """The premise of the next test: under the stand-in, ``import mujoco`` itself fails."""
    proc = subprocess.run(
        [sys.executable, "-c", "import mujoco"],
        env={**os.environ, **_no_osmesa_env(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "Traceback" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["info", "tiny"],
        ["bench", "accuracy", "out", "--expert", "expert"],
        ["retarget", "smpl", "walk.bvh", "--out", "walk.npz"],
        ["evaluate", "policy", "--motion", "walk.npz", "--out", "eval"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_missing_osmesa_gives_one_line_and_exit_2(tmp_path, args):
    proc = _run(args, _no_osmesa_env(tmp_path), tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and "MUJOCO_GL" in lines[0] and "libosmesa6" in lines[0], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # nothing written


def test_an_unknown_mujoco_gl_value_gives_one_line_and_exit_2(tmp_path):
    proc = _run(["info", "tiny"], {"MUJOCO_GL": "osmeza"}, tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "MUJOCO_GL" in lines[0] and "osmeza" in lines[0]


def test_building_the_parser_imports_neither_mujoco_nor_jax():
    code = (
        "import json, sys; from musclerl.cli import build_parser; build_parser(); "
        "print(json.dumps(sorted(m for m in ('mujoco', 'jax', 'scipy', 'flax') if m in sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert len(COMMANDS) >= 14  # every command's module was imported by build_parser
