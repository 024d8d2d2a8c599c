"""Motion: file formats (TRC, MOT/STO, AMASS/SMPL, DeepMimic, reference NPZ) and the Trajectory type."""

from musclerl.motion.trajectory import Terrain, Trajectory, concatenate, finite_difference_qvel

__all__ = ["Terrain", "Trajectory", "concatenate", "finite_difference_qvel"]
