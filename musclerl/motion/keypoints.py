"""Keypoint motion (joint positions over time) and the Y-up to Z-up frame change the readers share.

:class:`KeypointMotion` is what both the AMASS/SMPL reader and the DeepMimic reader produce, so
retargeting treats a SMPL clip and a DeepMimic clip alike: named 3-D points per frame in MuJoCo's
world frame (metres, Z up, X forward where the source has a forward direction).

Frames
------
OpenSim labs and DeepMimic use a Y-up frame with X forward (direction of walking) and Z to the
subject's right. MuJoCo is Z-up. We rotate by +90 degrees about X::

    (x, y, z)_mujoco = (x, -z, y)_yup        i.e.  p_mujoco = Y_UP_TO_Z_UP @ p_yup

This is a proper rotation (det +1), keeps X forward (walking along lab +x stays +x), sends lab
"up" (+y) to +z and the subject's right (+z in the lab) to -y, so the left side is +y as in MuJoCo
models.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from musclerl.errors import InputError

#: Rotation taking Y-up (OpenSim lab, DeepMimic, SMPL body frame) vectors to MuJoCo's Z-up world.
Y_UP_TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def y_up_to_z_up(points: np.ndarray) -> np.ndarray:
    """Rotate points (..., 3) from a Y-up frame to MuJoCo's Z-up frame (see module docstring)."""
    return np.asarray(points, dtype=float) @ Y_UP_TO_Z_UP.T


def z_up_to_y_up(points: np.ndarray) -> np.ndarray:
    """Inverse of :func:`y_up_to_z_up`: (x, y, z)_yup = (x, z, -y)_mujoco."""
    return np.asarray(points, dtype=float) @ Y_UP_TO_Z_UP


@dataclasses.dataclass(frozen=True)
class KeypointMotion:
    """Named 3-D points over time, MuJoCo world frame (metres, Z up).

    ``positions_m`` is (T, K, 3); ``names`` has K entries; ``parents[k]`` is the index of the
    point ``k`` hangs from in the source skeleton (-1 for the root; empty when unknown), useful
    for drawing and for bone-length checks. ``loop`` marks cyclic clips (the last frame leads back
    to the first). ``rotations`` (T, K, 3, 3), when the source has them (SMPL, DeepMimic), is the
    world orientation (local -> world) of the frame each keypoint's joint turns, i.e. of the
    segment hanging from it, in the source skeleton's own body axes (NaN where unknown): the
    retargeting uses them as orientation targets, up to a fixed per-segment offset.

    ``first_frame`` is the file's index (0-based) of frame 0 here, when the reader left frames
    out (a BVH file's rest pose) or the motion was trimmed (:mod:`musclerl.motion.trim`); frame
    ``t`` is the file's frame ``first_frame + t``, at the file's time ``(first_frame + t) /
    rate_hz``. ``notes``: one line per thing the reader did to the file's frames (reports list
    them); ``problems``: one line per reason the motion is unfit to retarget as it is (e.g. a
    BVH rest skeleton with bent knees, :mod:`musclerl.motion.source_checks`).
    """

    names: tuple[str, ...]
    positions_m: np.ndarray  # (T, K, 3)
    rate_hz: float
    loop: bool = False
    source: str = ""
    parents: tuple[int, ...] = ()
    rotations: np.ndarray | None = None  # (T, K, 3, 3)
    first_frame: int = 0
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def __post_init__(self):
        src = self.source or "keypoint motion"
        pos = self.positions_m
        if pos.ndim != 3 or pos.shape[1:] != (len(self.names), 3) or pos.shape[0] < 1:
            raise InputError(src, f"positions_m must be (T, {len(self.names)}, 3), got {pos.shape}")
        if not (np.isfinite(self.rate_hz) and self.rate_hz > 0):
            raise InputError(src, f"rate must be > 0 Hz, got {self.rate_hz}")
        if self.parents and len(self.parents) != len(self.names):
            raise InputError(src, "parents must have one entry per keypoint")
        if self.rotations is not None and self.rotations.shape != pos.shape + (3,):
            raise InputError(src, f"rotations must be {pos.shape + (3,)}, got {self.rotations.shape}")

    @property
    def num_frames(self) -> int:
        return int(self.positions_m.shape[0])

    @property
    def duration_s(self) -> float:
        """Time from the first to the last frame."""
        return (self.num_frames - 1) / self.rate_hz

    @property
    def time_s(self) -> np.ndarray:
        """Frame times (T,), starting at 0."""
        return np.arange(self.num_frames) / self.rate_hz

    def frames(self, start: int, stop: int, note: str | None = None) -> KeypointMotion:
        """Frames ``start:stop`` of this motion (``first_frame`` moved along), ``note`` added."""
        return dataclasses.replace(
            self,
            positions_m=self.positions_m[start:stop],
            rotations=None if self.rotations is None else self.rotations[start:stop],
            first_frame=self.first_frame + start,
            notes=self.notes + ((note,) if note else ()),
        )

    def keypoint(self, name: str) -> np.ndarray:
        """Positions (T, 3) of one keypoint."""
        if name not in self.names:
            raise InputError(
                self.source or "keypoint motion", f"no keypoint '{name}' (have {', '.join(self.names)})"
            )
        return self.positions_m[:, self.names.index(name)]
