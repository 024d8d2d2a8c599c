"""Where the bundled data are: ``assets/`` and ``configs/`` of the repository, shipped in the wheel
as the packages ``musclerl.assets`` and ``musclerl.configs`` and found with ``importlib.resources``,
so a wheel install works from any working directory as an editable checkout does."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _package_dir(name: str) -> Path:
    """The folder of ``musclerl.<name>``: the installed package (wheel or editable install), or,
    when this ``musclerl`` is imported from a source checkout that maps no such package (e.g.
    ``python train.py`` in the repository beside a wheel install), the repository's folder."""
    try:
        return Path(str(files(f"musclerl.{name}")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[1] / name


def assets_dir() -> Path:
    """The bundled ``assets/`` folder (models, motions, policies)."""
    return _package_dir("assets")


def configs_dir() -> Path:
    """The bundled ``configs/`` folder."""
    return _package_dir("configs")


def bundled(name: str | Path) -> Path | None:
    """A repository-relative name such as ``assets/motions/walk_myolegs.npz`` or
    ``configs/demo.yaml`` as the bundled file's path, or None for any other name."""
    parts = Path(name).parts
    if len(parts) < 2 or parts[0] not in ("assets", "configs"):
        return None
    root = assets_dir() if parts[0] == "assets" else configs_dir()
    return root.joinpath(*parts[1:])


def resolve_path(name: str | Path) -> Path:
    """A data path from a config: as given if it exists, else the bundled file of that name
    (``assets/motions/...``), else as given."""
    path = Path(name)
    if path.exists() or path.is_absolute():
        return path
    return bundled(path) or path
