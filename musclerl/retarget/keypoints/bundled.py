"""The bundled motions: a real motion-capture walk retargeted by our own pipeline, per model.

``assets/motions/walk_<model>.npz`` is the DeepMimic walk cycle (xbpeng/DeepMimic,
``data/motions/humanoid3d_walk.txt``, MIT licence; 39 frames at 30 Hz, one looping gait cycle of
1.27 s) retargeted with the keypoint IK of ``retarget smpl`` onto the registry model itself (not
scaled: the environment simulates that model; the arms' keypoints on its proportions,
:func:`~musclerl.retarget.keypoints.model.on_model_proportions`), without the ground pass
(``--keypoints-only``, which the bundled clips use). When the recovered ground is flat (its heights
span less than ``FLAT_SPAN_M``), the clip is lowered onto the model's own floor (z = 0) and stored
without a heightfield: a looping clip walks on, beyond any heightfield recovered from one cycle. A
looping clip is then low-passed (:func:`musclerl.retarget.keypoints.finish.smooth_loop`), and its
centre of mass moved until the centre of pressure stays on the feet
(:func:`musclerl.retarget.balance.balance_trajectory`), then low-passed again (the IK's
frame-to-frame noise); a balanced clip that still fails the check is not kept. Regenerate with::

    python -m musclerl.retarget.keypoints.bundled --model myolegs --keypoints-only \\
        --source ../shared/data/deepmimic/humanoid3d_walk.txt --out assets/motions/walk_myolegs.npz
"""

from __future__ import annotations

import argparse
from pathlib import Path

from musclerl.retarget.keypoints.finish import on_flat_floor, onto_floor, smooth_loop


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
