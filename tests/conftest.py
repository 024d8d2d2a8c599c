"""Shared fixtures: paths to ../shared/data (skipped when absent) and small generated models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
