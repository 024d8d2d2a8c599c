"""Motion file formats by suffix: the one table every command reads a motion file through.

:data:`READERS` maps a lower-case suffix to a :class:`Reader`: the ``kind`` of object its
``read(path)`` returns, the format's name and a label for messages. The kinds:

=============  =================================================  ==================
kind           ``read(path)`` returns                             suffixes
=============  =================================================  ==================
``markers``    :class:`~musclerl.motion.trc.MarkerData`           .trc, .c3d
``table``      :class:`~musclerl.motion.storage.Table`            .mot, .sto
``keypoints``  :class:`~musclerl.motion.keypoints.KeypointMotion` .txt, .json, .bvh
``npz``        a Trajectory, ReferenceData or SmplMotion, told    .npz
               by the file's keys (:func:`npz_kind`)
=============  =================================================  ==================

Each command asks for the kinds it handles (:func:`reader_for`): ``musclerl info`` and its plot
every kind, ``retarget smpl`` keypoints and AMASS ``.npz`` (:func:`read_keypoints`), ``retarget
markers`` markers. A new format is a reader returning one of these objects and one row here; a
suffix nobody registered is refused in one line naming the file and the suffixes known.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.errors import InputError
from musclerl.motion.bvh import bvh_details, read_bvh
from musclerl.motion.c3d import c3d_details, read_c3d_markers
from musclerl.motion.deepmimic import read_deepmimic
from musclerl.motion.keypoints import KeypointMotion
from musclerl.motion.reference import read_reference
from musclerl.motion.smpl import read_amass
from musclerl.motion.storage import read_storage
from musclerl.motion.trajectory import Trajectory
from musclerl.motion.trc import read_trc

KINDS = ("markers", "table", "keypoints", "npz")


@dataclasses.dataclass(frozen=True)
class Reader:
    """How one suffix reads: ``read(path)`` returns an object of ``kind`` (module docstring).

    ``name`` is the format as ``musclerl info`` reports it (``trc``, ``deepmimic``);
    ``in_folders``: a folder given to a command yields the files of this suffix (``.json`` does
    not: the reports written beside motions are JSON too). ``options``: the keyword options
    ``read`` takes beyond the path (e.g. a BVH file's ``units``), passed on by the commands that
    offer them; ``details(path)``: format-specific entries ``musclerl info`` adds (or None)."""

    kind: str
    read: Callable[..., Any]
    name: str
    label: str
    in_folders: bool = True
    options: tuple[str, ...] = ()
    details: Callable[[Path], dict] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"reader kind must be one of {KINDS}, got '{self.kind}'")


def npz_kind(path: str | os.PathLike) -> str:
    """``"reference"``, ``"trajectory"`` or ``"amass"``, from the keys of an ``.npz`` alone (its
    arrays are not read); an unreadable or unrecognised file raises :class:`InputError`."""
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
    except Exception as err:
        raise InputError(path, f"not a readable .npz file ({type(err).__name__})") from err
    if {"joint_angle", "joint_torque"} <= keys:
        return "reference"
    if "qpos" in keys:
        return "trajectory"
    if keys & {"poses", "root_orient", "pose_body", "mocap_framerate", "mocap_frame_rate"}:
        return "amass"
    raise InputError(
        path,
        "unrecognised .npz: not a Trajectory (qpos), reference (joint_angle, "
        "joint_torque) or AMASS/SMPL (poses / root_orient) file",
    )


#: The ``.npz`` kinds (:func:`npz_kind`) and their readers.
NPZ_READERS: dict[str, Callable[[Path], Any]] = {
    "reference": read_reference,
    "trajectory": Trajectory.load,
    "amass": read_amass,
}


def read_npz(path: Path) -> Any:
    """A reference, a Trajectory or an AMASS motion, whichever the ``.npz``'s keys say it is."""
    return NPZ_READERS[npz_kind(path)](path)


#: suffix (lower case, with the dot) -> its reader.
READERS: dict[str, Reader] = {
    ".trc": Reader("markers", read_trc, "trc", "marker trajectories"),
    ".c3d": Reader("markers", read_c3d_markers, "c3d", "C3D motion capture", details=c3d_details),
    ".mot": Reader("table", read_storage, "mot", "OpenSim motion"),
    ".sto": Reader("table", read_storage, "sto", "OpenSim storage"),
    ".npz": Reader("npz", read_npz, "npz", "Trajectory, reference or AMASS"),
    ".txt": Reader("keypoints", read_deepmimic, "deepmimic", "DeepMimic clip"),
    ".json": Reader("keypoints", read_deepmimic, "deepmimic", "DeepMimic clip", in_folders=False),
    ".bvh": Reader(
        "keypoints", read_bvh, "bvh", "BVH skeleton", options=("units", "keep_rest"), details=bvh_details
    ),
}


def suffixes(kinds: Sequence[str] | None = None, folders: bool = False) -> tuple[str, ...]:
    """The registered suffixes of ``kinds`` (None: all), in table order; with ``folders`` only
    those a folder yields."""
    return tuple(
        s for s, r in READERS.items() if (kinds is None or r.kind in kinds) and (r.in_folders or not folders)
    )


def reader_for(
    path: str | os.PathLike, kinds: Sequence[str] | None = None, what: str = "motion file"
) -> Reader:
    """The reader of ``path``'s suffix among ``kinds`` (None: any); :class:`InputError` naming the
    file and the suffixes known otherwise."""
    suffix = Path(path).suffix.lower()
    reader = READERS.get(suffix)
    if reader is None or (kinds is not None and reader.kind not in kinds):
        raise InputError(path, f"unsupported {what} type '{suffix}'; known: {', '.join(suffixes(kinds))}")
    return reader


def read_motion_file(
    path: str | os.PathLike, kinds: Sequence[str] | None = None, what: str = "motion file"
) -> Any:
    """``path`` read by its suffix's reader (one of ``kinds``; None: any kind)."""
    return reader_for(path, kinds, what).read(Path(path))


def read_keypoints(path: str | os.PathLike, y_up: bool = False, **options: Any) -> KeypointMotion:
    """Keypoints of a ``keypoints`` file or of an AMASS ``.npz`` (``y_up``: in SMPL's own Y-up
    frame, turned to Z up); ``options`` go to the reader when it takes them (``Reader.options``)
    and are ignored by the others (one command line reads several formats)."""
    reader = reader_for(path, ("keypoints", "npz"), "keypoint motion")
    if reader.kind == "npz":
        return read_amass(path, y_up=y_up).keypoints()
    return reader.read(Path(path), **{k: v for k, v in options.items() if k in reader.options})
