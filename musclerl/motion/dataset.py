"""Training datasets: many Trajectory NPZs packed into one multi-clip Trajectory.

``motion:`` in a training config (and ``motion=...`` on the command line) names the dataset:

- one Trajectory ``.npz`` (every clip in it);
- a folder (its ``*.npz`` files, sorted by name) or a glob (``data/walk_*.npz``);
- a list of any of these (YAML list: ``motion=[a.npz,b.npz]``);
- a manifest: ``.csv`` with a header and the columns ``path`` (required), ``weight``, ``name``,
  ``tags`` (separated by ``;``), ``start_s``, ``end_s``, ``start_frame``, ``end_frame``, or
  ``.yaml`` with a mapping ``{clips: [...], mirror: bool}`` whose entries are paths or mappings
  ``{path, weight, name, tags, start_s, end_s, start_frame, end_frame}``; paths in a manifest are
  relative to the manifest's folder;
- a mapping ``{clips: <any of the above>, mirror: bool}`` in the config itself.

A manifest row's ``path`` may itself be a folder or glob: its weight and tags apply to every
clip found. ``weight`` (default 1) is the clip's base sampling weight (the env's
``sampling.clip_weights``, which adaptive sampling multiplies by the clip's failure rate);
``name`` renames a one-clip file's clip (a multi-clip file's clips become ``name/clip``).
``start_s``/``end_s`` (seconds) or ``start_frame``/``end_frame`` (0-based) keep only that window
of each clip, both ends included, counted from the clip's first frame (:mod:`musclerl.motion.trim`;
a window beyond a clip or ending before it starts is refused naming the manifest's row).

Clips of different rates are resampled on the model's manifold to one rate (the highest among
them; the env then resamples the packed dataset to its control rate once). Looping flags are kept
per clip. ``mirror: true`` appends the left/right mirror of every clip
(:mod:`musclerl.motion.mirror`), named ``<name>:mirror`` with the same weight and tags, doubling
the data.

Clips may stand on different grounds (flat, or each its own terrain): every distinct ground
becomes a tile of the one heightfield the run's environments share, each clip moved onto its
tile, flat clips left on the floor plane (:mod:`musclerl.motion.ground_tiles`; the moves are
``Dataset.ground_offset_m``). A mirrored clip stands on its mirrored ground.

Every clip is checked for physical plausibility on the run's model before it is packed
(:func:`musclerl.dynamics.plausibility.trajectory_plausibility`: stance-foot slip, external
force, centre of pressure on the feet, root acceleration), and the mapping's ``plausibility``
key decides what happens to a clip that fails: ``keep`` (default: kept, one warning line naming
the file, the clip and each failed check), ``drop`` (left out with that warning line; the
dataset is refused when nothing is left), ``refuse`` (InputError naming the clip and why), or
``off`` (no check, for large sets of checked clips). The default keeps clips because the check
judges the motion *on the model*: on myolegs, whose trunk is rigid on the pelvis, every OpenCap
walk fails the centre-of-pressure test though the recordings are fine, and the bundled tiny walk
fails on tiny (docs/training_data.md); a training set that must be plausible says ``drop`` or
``refuse``. Mirrored copies share their source's verdict. ``Dataset.plausibility`` keeps every
clip's verdict.

The result, :class:`Dataset`, is packed: one ``qpos`` (T, nq) / ``qvel`` (T, nv) array for all
clips with ``clip_starts`` (C,), so nothing per clip is a Python object once loaded. Loading reads
one file at a time and joins the arrays once at the end: peak memory is about twice the packed
arrays. This module parses the ``motion:`` value; :func:`musclerl.dynamics.screening.load_dataset`
loads it (the plausibility check is a dynamics computation, a layer above the motion files).
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.errors import InputError
from musclerl.motion.trajectory import Trajectory
from musclerl.motion.trim import Trim
from musclerl.resources import resolve_path

GLOB_CHARS = set("*?[")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".csv")


@dataclasses.dataclass(frozen=True)
class ClipSource:
    """One file of a dataset and what the manifest says about it."""

    path: Path
    weight: float = 1.0
    name: str | None = None
    tags: tuple[str, ...] = ()
    trim: Trim = Trim()


#: The keys of a manifest entry (module docstring).
ENTRY_KEYS = ("path", "weight", "name", "tags", "start_s", "end_s", "start_frame", "end_frame")


def _trim(item: Mapping, source: str) -> Trim:
    """The entry's window (:class:`~musclerl.motion.trim.Trim`); InputError for a value that is not
    a number (seconds) or a whole number (frames)."""
    values = {}
    for key, kind in (("start_s", float), ("end_s", float), ("start_frame", int), ("end_frame", int)):
        value = item.get(key)
        if value is None or value == "":
            continue
        try:
            number = float(value)
            if kind is int and number != int(number):
                raise ValueError
            values[key] = kind(number)
        except (TypeError, ValueError):
            what = "a time in seconds" if kind is float else "a whole frame number"
            raise InputError(source, f"{key} of {item['path']!r} must be {what}, got {value!r}") from None
    return Trim(**values)


@dataclasses.dataclass(frozen=True)
class Dataset:
    """All clips packed in one Trajectory, with per-clip weights (C,), tags and source files."""

    trajectory: Trajectory
    weights: np.ndarray  # (C,) base sampling weights, >= 0
    tags: tuple[tuple[str, ...], ...]  # (C,) tags of each clip
    sources: tuple[str, ...]  # (C,) file each clip came from
    mirrored: np.ndarray  # (C,) bool: the clip is a mirrored copy
    ground_offset_m: np.ndarray  # (C, 3) x, y, z each clip was moved by onto its ground's tile
    # "<file>: <clip>" -> {"passed", "failures", "action"} for every clip read (dropped ones too);
    # empty when the check was off
    plausibility: dict = dataclasses.field(default_factory=dict)

    @property
    def num_clips(self) -> int:
        return self.trajectory.num_clips

    @property
    def clip_names(self) -> tuple[str, ...]:
        return self.trajectory.clip_names


def _resolve(path: str | os.PathLike, base: Path | None) -> Path:
    """``path`` relative to ``base`` (a manifest's folder) or, without one, as the config gives
    it (the bundled file of a repository-relative name when no such file exists here)."""
    p = Path(path).expanduser()
    if base is not None and not p.is_absolute():
        return base / p
    return resolve_path(p)


def _expand_path(item: str | os.PathLike, base: Path | None, source: str) -> list[Path]:
    """Trajectory files of one path: a file, a folder's ``*.npz`` (sorted) or a glob (sorted)."""
    text = str(item)
    if GLOB_CHARS & set(text):
        pattern = str(base / text) if base is not None and not Path(text).is_absolute() else text
        found = sorted(Path(p) for p in glob.glob(pattern) if Path(p).suffix.lower() == ".npz")
        if not found:
            raise InputError(source, f"no .npz file matches {text!r}")
        return found
    path = _resolve(text, base)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".npz")
        if not found:
            raise InputError(path, "folder holds no .npz Trajectory")
        return found
    if not path.is_file():
        raise InputError(path, "motion file not found")
    return [path]


def _entry(item: Any, base: Path | None, source: str) -> list[ClipSource]:
    """ClipSources of one manifest/config entry: a path string or ``{path, weight, name, tags}``."""
    if isinstance(item, (str, os.PathLike)):
        path = _resolve(item, base) if not GLOB_CHARS & set(str(item)) else None
        if path is not None and path.suffix.lower() in MANIFEST_SUFFIXES:
            return read_manifest(path)[0]
        return [ClipSource(p) for p in _expand_path(item, base, source)]
    if not isinstance(item, Mapping) or "path" not in item:
        raise InputError(source, f"a dataset entry must be a path or a mapping with 'path', got {item!r}")
    unknown = set(item) - set(ENTRY_KEYS)
    if unknown:
        raise InputError(
            source, f"unknown dataset entry key(s) {sorted(unknown)} (known: {', '.join(ENTRY_KEYS)})"
        )
    try:
        weight = float(item.get("weight", 1.0))
    except (TypeError, ValueError):
        raise InputError(
            source, f"weight of {item['path']!r} must be a number, got {item.get('weight')!r}"
        ) from None
    if not np.isfinite(weight) or weight < 0:
        raise InputError(source, f"weight of {item['path']!r} must be >= 0, got {weight}")
    tags = item.get("tags") or ()
    if isinstance(tags, str):
        tags = [t for t in tags.replace(",", ";").split(";")]
    tags = tuple(str(t).strip() for t in tags if str(t).strip())
    name = item.get("name")
    name = None if name in (None, "") else str(name)
    trim = _trim(item, source)
    files = _expand_path(item["path"], base, source)
    if name is not None and len(files) > 1:
        names = [f"{name}/{p.stem}" for p in files]
        return [ClipSource(p, weight, n, tags, trim) for p, n in zip(files, names, strict=True)]
    return [ClipSource(p, weight, name, tags, trim) for p in files]


def read_manifest(path: Path) -> tuple[list[ClipSource], bool]:
    """ClipSources of a ``.csv`` or ``.yaml`` manifest and its ``mirror`` flag (CSV: False)."""
    from musclerl.fileio import load_yaml, read_text

    base = path.parent
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(io.StringIO(read_text(path, "manifest"))))
        if not rows or "path" not in rows[0]:
            raise InputError(path, "a CSV manifest needs a header with a 'path' column and one row per file")
        out = []
        for k, row in enumerate(rows):
            entry = {key.strip(): (v or "").strip() for key, v in row.items() if key}
            if not entry.get("path"):
                raise InputError(path, f"row {k + 2} has no path")
            entry = {key: v for key, v in entry.items() if v != "" or key == "path"}
            out += _entry(entry, base, f"{path}: row {k + 2}")
        return out, False
    doc = load_yaml(path)
    return _from_mapping(doc, base, str(path))


def _from_mapping(doc: Mapping, base: Path | None, source: str) -> tuple[list[ClipSource], bool]:
    unknown = set(doc) - {"clips", "mirror", "plausibility"}
    if unknown or "clips" not in doc:
        raise InputError(
            source,
            f"a dataset mapping has 'clips' (required), 'mirror' and 'plausibility', got {sorted(doc)}",
        )
    _policy(doc, source)
    mirror = doc.get("mirror", False)
    if not isinstance(mirror, bool):
        raise InputError(source, f"mirror must be true or false, got {mirror!r}")
    clips = doc["clips"]
    items = clips if isinstance(clips, list) else [clips]
    out = [c for item in items for c in _entry(item, base, source)]
    if not out:
        raise InputError(source, "the dataset lists no clip")
    return out, mirror


def dataset_sources(spec: Any, source: str = "motion") -> tuple[list[ClipSource], bool]:
    """The files a ``motion:`` value names (see the module docstring) and whether to mirror."""
    if isinstance(spec, Mapping):
        return _from_mapping(spec, None, source)
    if isinstance(spec, Sequence) and not isinstance(spec, (str, bytes)):
        out = [c for item in spec for c in _entry(item, None, source)]
        if not out:
            raise InputError(source, "the motion list is empty")
        return out, False
    if isinstance(spec, (str, os.PathLike)):
        path = _resolve(spec, None)
        if path.suffix.lower() in MANIFEST_SUFFIXES and not GLOB_CHARS & set(str(spec)):
            return read_manifest(path)
        return _entry(spec, None, source), False
    raise InputError(source, f"expected a path, a list, or a mapping with 'clips', got {spec!r}")


#: What the loader does with a clip that fails the plausibility check (module docstring).
PLAUSIBILITY_POLICIES = ("keep", "drop", "refuse", "off")
DEFAULT_PLAUSIBILITY = "keep"


def _policy(doc: Mapping, source: str) -> str:
    value = doc.get("plausibility", DEFAULT_PLAUSIBILITY)
    if value not in PLAUSIBILITY_POLICIES:
        raise InputError(
            source, f"plausibility must be one of {', '.join(PLAUSIBILITY_POLICIES)}, got {value!r}"
        )
    return value


def plausibility_policy(spec: Any, source: str = "motion") -> str:
    """The ``plausibility`` key of a ``motion:`` mapping or YAML manifest (default
    :data:`DEFAULT_PLAUSIBILITY` for anything else)."""
    if isinstance(spec, (str, os.PathLike)):
        path = _resolve(spec, None)
        if path.suffix.lower() in (".yaml", ".yml") and not GLOB_CHARS & set(str(spec)):
            from musclerl.fileio import load_yaml

            doc = load_yaml(path)
            return _policy(doc, str(path)) if isinstance(doc, Mapping) else DEFAULT_PLAUSIBILITY
    return _policy(spec, source) if isinstance(spec, Mapping) else DEFAULT_PLAUSIBILITY


#: Frames a clip needs for tracking: reference velocities and the next frame.
MIN_CLIP_FRAMES = 2


def check_clip_lengths(traj: Trajectory, source: str | os.PathLike) -> None:
    """Refuse (naming ``source``) a Trajectory with a clip shorter than :data:`MIN_CLIP_FRAMES`."""
    lengths = traj.clip_ends - traj.clip_starts
    if np.any(lengths < MIN_CLIP_FRAMES):
        raise InputError(
            source,
            f"clip {int(np.argmin(lengths))} has {int(lengths.min())} frame(s); tracking needs at least "
            f"{MIN_CLIP_FRAMES} per clip (reference velocities and the next frame)",
        )


def with_clip_weights(env_cfg, dataset: Dataset):
    """``env_cfg`` (an :class:`musclerl.envs.EnvConfig`) with the dataset's clip weights as
    ``sampling.clip_weights``, unless the config sets its own or every weight is 1."""
    if env_cfg.sampling.clip_weights is not None or np.all(dataset.weights == 1.0):
        return env_cfg
    sampling = dataclasses.replace(env_cfg.sampling, clip_weights=[float(w) for w in dataset.weights])
    return dataclasses.replace(env_cfg, sampling=sampling)
