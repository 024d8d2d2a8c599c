"""Shared fixtures: paths to ../shared/data (skipped when absent), small generated models, and a
tiny policy trained briefly on a folder of two generated clips."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from run_samples import train_tiny

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MUSCLERL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repo; tests that need it skip cleanly when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture(scope="session")
def gait2354(shared_data: Path) -> Path:
    path = shared_data / "opensim_gait2354"
    if not path.is_dir():
        pytest.skip("opensim_gait2354 data not present")
    return path


@pytest.fixture(scope="session")
def tiny_clip_folder(tmp_path_factory) -> Path:
    """Two generated tiny clips (different phases and speeds, 1 s each) in one folder."""
    from musclerl.envs.motions import sine_gait

    folder = tmp_path_factory.mktemp("clips")
    for k in range(2):
        clip = sine_gait("tiny", duration_s=1.0, speed_mps=0.4 + 0.2 * k, phase_rad=k, name=f"s{k}")
        clip.save(folder / f"s{k}.npz")
    return folder


@pytest.fixture(scope="session")
def tiny_folder_run(tiny_clip_folder, tmp_path_factory) -> tuple[Path, dict]:
    """(run folder, summary) of :func:`train_tiny` on :func:`tiny_clip_folder`."""
    out = tmp_path_factory.mktemp("run") / "run"
    return out, train_tiny(tiny_clip_folder, out)
