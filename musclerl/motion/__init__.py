"""Motion: file formats (TRC, MOT/STO, AMASS/SMPL, DeepMimic, reference NPZ) and the Trajectory type."""

from musclerl.motion.deepmimic import DEEPMIMIC_KEYPOINT_NAMES, read_deepmimic
from musclerl.motion.keypoints import Y_UP_TO_Z_UP, KeypointMotion, y_up_to_z_up, z_up_to_y_up
from musclerl.motion.reference import ReferenceData, read_reference, write_reference
from musclerl.motion.smpl import (
    SMPL_JOINT_NAMES,
    SMPL_NEUTRAL_OFFSETS_M,
    SMPL_PARENTS,
    SMPLX_NEUTRAL_OFFSETS_M,
    SmplMotion,
    read_amass,
    smpl_forward_kinematics,
    smpl_rest_offsets_from_model,
    write_amass_npz,
)
from musclerl.motion.storage import Table, read_storage, write_storage
from musclerl.motion.summary import summarize_motion_file
from musclerl.motion.trajectory import Terrain, Trajectory, concatenate, finite_difference_qvel
from musclerl.motion.trc import MarkerData, read_trc, write_trc

__all__ = [
    "DEEPMIMIC_KEYPOINT_NAMES",
    "KeypointMotion",
    "MarkerData",
    "ReferenceData",
    "SMPL_JOINT_NAMES",
    "SMPL_NEUTRAL_OFFSETS_M",
    "SMPL_PARENTS",
    "SMPLX_NEUTRAL_OFFSETS_M",
    "SmplMotion",
    "Table",
    "Terrain",
    "Trajectory",
    "Y_UP_TO_Z_UP",
    "concatenate",
    "finite_difference_qvel",
    "read_amass",
    "read_deepmimic",
    "read_reference",
    "read_storage",
    "read_trc",
    "smpl_forward_kinematics",
    "smpl_rest_offsets_from_model",
    "summarize_motion_file",
    "write_amass_npz",
    "write_reference",
    "write_storage",
    "write_trc",
    "y_up_to_z_up",
    "z_up_to_y_up",
]
