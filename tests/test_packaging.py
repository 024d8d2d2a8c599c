"""A wheel install (not editable) runs the main job's pieces from any working directory: the
bundled configs, models, motions and policy are found with importlib.resources."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_wheel_lists_every_package():
    """pyproject's explicit package list names every folder of musclerl/ with an ``__init__.py``
    (a package left out is missing from a wheel install)."""
    block = re.search(r"^packages = \[(.*?)\]", (REPO / "pyproject.toml").read_text(), re.S | re.M)
    listed = set(re.findall(r'"([\w.]+)"', block.group(1)))
    assert "musclerl.envs" in listed  # the block was found and read
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "musclerl").rglob("__init__.py")}
    assert found - listed == set()


@pytest.mark.slow
def test_wheel_install_runs_from_any_directory(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(wheels)], check=True
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = next((venv / "lib").glob("python*/site-packages"))
    # the dependencies come from this environment (a plain path entry: its editable musclerl is not)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(wheels.glob("musclerl-*.whl"))
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*args: str) -> str:
        proc = subprocess.run(
            [str(python), "-m", "musclerl", *args], cwd=work, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    located = subprocess.run(
        [
            str(python),
            "-c",
            "import musclerl, musclerl.resources as r; print(musclerl.__file__, r.assets_dir())",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(REPO) not in located and "site-packages" in located
    assert "6 muscles" in run("info", "tiny")
    assert "plausibility" in run("info", str(REPO / "assets" / "motions" / "walk_tiny.npz"))
    out = run(
        "train", "--out", "run", "--quiet", "ppo.total_env_steps=64", "ppo.num_envs=8", "ppo.rollout_steps=8"
    )
    assert "trained 64 env steps" in out and (work / "run" / "policy" / "config.json").is_file()
