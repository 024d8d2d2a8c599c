"""The bundled motions: a real motion-capture walk retargeted by our own pipeline, per model.

``assets/motions/walk_<model>.npz`` is the DeepMimic walk cycle (xbpeng/DeepMimic,
``data/motions/humanoid3d_walk.txt``, MIT licence; 39 frames at 30 Hz, one looping gait cycle of
1.27 s) retargeted with the keypoint IK of ``retarget smpl`` onto the registry model itself (not
scaled: the environment simulates that model; the arms' keypoints on its proportions,
:func:`~musclerl.retarget.keypoints.model.on_model_proportions`), without the ground pass
(``--keypoints-only``, which the bundled clips use). When the recovered ground is flat (its
heights span less than ``FLAT_SPAN_M``), the clip
is lowered onto the model's own floor (z = 0) and stored without a heightfield: a looping clip
walks on, beyond any heightfield recovered from one cycle. A looping clip is then low-passed
(:func:`smooth_loop`), and its centre of mass moved until the centre of pressure stays on the
feet (:func:`musclerl.retarget.balance.balance_trajectory`), then low-passed again (the IK's
frame-to-frame noise); a balanced clip that still fails the check is not kept. Regenerate with::

    python -m musclerl.retarget.keypoints.bundled --model myolegs --keypoints-only \\
        --source ../shared/data/deepmimic/humanoid3d_walk.txt --out assets/motions/walk_myolegs.npz
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

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
    from musclerl.dynamics.plausibility import lowpass_qpos

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
    central differences, its sites moved with the root. ``qpos`` (T, nq): filter these positions
    instead of the clip's (the same frames, changed by a caller)."""
    from musclerl.dynamics.plausibility import lowpass_qpos

    if bool(traj.clip_loop[0]):
        return smooth_loop(traj if qpos is None else dataclasses.replace(traj, qpos=qpos), model, cutoff_hz)
    smooth = lowpass_qpos(model, traj.qpos if qpos is None else qpos, traj.rate_hz, cutoff_hz)
    moved = smooth[:, :3] - traj.qpos[:, :3]
    sites = None if traj.site_pos_m is None else traj.site_pos_m + moved[:, None, :]
    qvel = finite_difference_qvel(model, smooth, traj.rate_hz)
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


def main(argv: list[str] | None = None) -> int:
    from musclerl.retarget.keypoints.files import SmplOptions, retarget_file

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="myolegs")
    parser.add_argument("--source", required=True, help="DeepMimic .txt or AMASS .npz")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--keypoints-only", action="store_true", help="keypoint IK only, then onto the floor (no ground pass)"
    )
    parser.add_argument(
        "--no-balance", action="store_true", help="keep the kinematic centre of mass (no balance pass)"
    )
    args = parser.parse_args(argv)
    # the environment simulates the registry model itself, so the clip must not be for a rescaled
    # one; keypoint IK without the ground pass, whose stance pinning jerks the pelvis sideways at
    # each heel strike of this clip (31 % of frames with the centre of pressure off the feet)
    options = SmplOptions(model=args.model, scale=False, ground=not args.keypoints_only)
    result, report, _ = retarget_file(Path(args.source), options)
    traj = on_flat_floor(result.trajectory)
    model = result.prepared.model
    if traj.num_clips == 1 and bool(traj.clip_loop[0]):
        traj = smooth_loop(traj, model)
    if traj.terrain is None:
        traj = onto_floor(traj, model)
    if not args.no_balance:
        from musclerl.dynamics.plausibility import format_plausibility, trajectory_plausibility
        from musclerl.retarget.balance import balance_trajectory

        balanced = balance_trajectory(traj, model)
        fixed = balanced.trajectory
        if fixed.num_clips == 1 and bool(fixed.clip_loop[0]):
            fixed = smooth_loop(fixed, model)
        if fixed.terrain is None:
            fixed = onto_floor(fixed, model)
        after = trajectory_plausibility(fixed, model)
        for label, check in (("before the balance pass", balanced.before), ("after it", after)):
            print(label, *format_plausibility(check.as_dict()), sep="\n")
        if after.passed:
            traj = fixed
        else:  # a motion the pass cannot fix: ship the kinematic clip, said so
            print("the balance pass did not make the clip pass: saving it without the pass")
    traj.save(args.out)
    print(
        f"{args.out}: {traj.num_frames} frames at {traj.rate_hz:.2f} Hz, terrain {traj.terrain is not None}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
