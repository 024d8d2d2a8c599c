"""A retargeted keypoint clip made ready for the model that imitates it: its level floor at z = 0
without a heightfield, the IK's frame-to-frame noise low-passed.

Used by the bundled walk (:mod:`musclerl.retarget.keypoints.bundled`) and by ``retarget smpl``'s
placement on the named model (:func:`musclerl.retarget.keypoints.files.retarget_file`). Positions
world metres, Z up; qpos (T, nq) with the free root first.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from musclerl.motion.trajectory import Trajectory, finite_difference_qvel, looping_qvel

FLAT_SPAN_M = 0.02  # recovered ground heights within 2 cm: a level floor (retargeting noise)
SMOOTH_CUTOFF_HZ = 6.0  # the usual low-pass of gait kinematics (Winter 2009): keeps the gait's harmonics


def smooth_loop(traj: Trajectory, model, cutoff_hz: float = SMOOTH_CUTOFF_HZ) -> Trajectory:
    """A looping one-clip ``traj`` low-passed at ``cutoff_hz`` (zero-lag Butterworth over three
    periods, the middle one kept) with velocities recomputed by wrapped central differences.

    The DeepMimic walk joins two half cycles with a jump at each seam (its root moves 0.7 cm
    down and 0.4 cm sideways in one frame), which retargeting turns into 30 m/s^2 root
    accelerations; a body can follow the smoothed clip (``musclerl info`` checks it).
    """
    from musclerl.dynamics.clip_kinematics import lowpass_qpos

    n = traj.num_frames
    shift = traj.qpos[-1, :2] - traj.qpos[0, :2] + traj.qvel[-1, :2] / traj.rate_hz
    tiled = np.concatenate([traj.qpos, traj.qpos, traj.qpos])
    for k in range(3):
        tiled[k * n : (k + 1) * n, :2] += (k - 1) * shift
    smooth = lowpass_qpos(model, tiled, traj.rate_hz, cutoff_hz)[n : 2 * n]
    qvel = looping_qvel(model, smooth, traj.rate_hz, shift)
    return dataclasses.replace(traj, qpos=smooth, qvel=qvel, site_pos_m=None, site_names=())


def smooth_clip(
    traj: Trajectory, model, cutoff_hz: float = SMOOTH_CUTOFF_HZ, qpos: np.ndarray | None = None
) -> Trajectory:
    """A one-clip ``traj`` low-passed at ``cutoff_hz``: a looping clip by :func:`smooth_loop`,
    another by a zero-lag Butterworth over the clip (the filter's own edge padding), velocities by
    central differences; either way its sites moved with the root (the keypoint sites a report
    names). ``qpos`` (T, nq): filter these positions instead of the clip's (the same frames,
    changed by a caller)."""
    from musclerl.dynamics.clip_kinematics import lowpass_qpos

    given = traj.qpos if qpos is None else qpos
    if bool(traj.clip_loop[0]):
        smoothed = smooth_loop(dataclasses.replace(traj, qpos=given), model, cutoff_hz)
        smooth, qvel = smoothed.qpos, smoothed.qvel
    else:
        smooth = lowpass_qpos(model, given, traj.rate_hz, cutoff_hz)
        qvel = finite_difference_qvel(model, smooth, traj.rate_hz)
    moved = smooth[:, :3] - traj.qpos[:, :3]
    sites = None if traj.site_pos_m is None else traj.site_pos_m + moved[:, None, :]
    return dataclasses.replace(traj, qpos=smooth, qvel=qvel, site_pos_m=sites)


def on_flat_floor(traj: Trajectory) -> Trajectory:
    """``traj`` lowered by its terrain's mean height onto z = 0, without the heightfield, when the
    terrain is flat within ``FLAT_SPAN_M``; unchanged otherwise."""
    if traj.terrain is None or np.ptp(traj.terrain.height_m) > FLAT_SPAN_M:
        return traj
    shift = float(np.mean(traj.terrain.height_m))
    qpos = traj.qpos.copy()
    qpos[:, 2] -= shift
    sites = None if traj.site_pos_m is None else traj.site_pos_m - np.array([0.0, 0.0, shift])
    return dataclasses.replace(traj, qpos=qpos, site_pos_m=sites, terrain=None)


def onto_floor(traj: Trajectory, model) -> Trajectory:
    """``traj`` (no terrain) moved vertically so that its lowest foot point over the clip is on
    the floor (z = 0): no frame penetrates, and the stance feet, the lowest, rest on it."""
    from musclerl.ground.floor import lowest_z_m
    from musclerl.models.geoms import foot_geoms

    qpos = traj.qpos.copy()
    qpos[:, 2] -= float(lowest_z_m(model, traj.qpos, foot_geoms(model)).min())
    return dataclasses.replace(traj, qpos=qpos, site_pos_m=None, site_names=(), terrain=None)
