"""Motion: file formats (TRC, MOT/STO, AMASS/SMPL, DeepMimic, reference NPZ) and the Trajectory type.

The names below are imported from their modules on first use (PEP 562), so importing one light
module of this package (``musclerl.motion.trim``, the command line's option parsers) does not load
mujoco or scipy."""

from __future__ import annotations

import importlib

#: exported name -> the module of this package that defines it
_EXPORTS = {
    "DEEPMIMIC_KEYPOINT_NAMES": "deepmimic",
    "KeypointMotion": "keypoints",
    "MarkerData": "trc",
    "ReferenceData": "reference",
    "SMPLX_NEUTRAL_OFFSETS_M": "smpl",
    "SMPL_JOINT_NAMES": "smpl",
    "SMPL_NEUTRAL_OFFSETS_M": "smpl",
    "SMPL_PARENTS": "smpl",
    "SmplMotion": "smpl",
    "Table": "storage",
    "Terrain": "trajectory",
    "Trajectory": "trajectory",
    "Y_UP_TO_Z_UP": "keypoints",
    "concatenate": "trajectory",
    "finite_difference_qvel": "trajectory",
    "read_amass": "smpl",
    "read_deepmimic": "deepmimic",
    "read_reference": "reference",
    "read_storage": "storage",
    "read_trc": "trc",
    "smpl_forward_kinematics": "smpl",
    "smpl_rest_offsets_from_model": "smpl",
    "summarize_motion_file": "summary",
    "write_amass_npz": "smpl",
    "write_reference": "reference",
    "write_storage": "storage",
    "write_trc": "trc",
    "y_up_to_z_up": "keypoints",
    "z_up_to_y_up": "keypoints",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
