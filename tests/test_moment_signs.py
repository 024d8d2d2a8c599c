"""Joint-moment signs, link by link, on both legs: a sign error on one side fails here.

The policy's knee moment is compared with a reference's inverse dynamics through three links:
the reference as written (``tests/boo_fixtures.py``) and read with its sign map
(:func:`musclerl.evaluate.reference_motion.reference_signs`), and the policy's net moment
projected on the coordinates (:mod:`musclerl.dynamics.joint_moments`). The first two are checked
against our own inverse dynamics (``mj_inverse`` of the same walk with its plates,
``musclerl reference``), the third by mirror symmetry: the same muscles active on both legs in a
mirrored pose give the same moment on both knees, vasti extending (negative: myolegs' knee flexion
is positive), hamstrings flexing.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from boo_fixtures import trial_arrays
from reference_samples import subject01_reference_args

from musclerl.cli import main
from musclerl.dynamics.joint_moments import joint_moments
from musclerl.evaluate.reference_motion import reference_signs
from musclerl.models.couplings import apply_couplings, coupling_matrix, independent_coordinates
from musclerl.models.registry import load_model
from musclerl.motion.reference import read_reference

SAGITTAL = ("hip_flexion", "knee_angle", "ankle_angle")


def test_reference_moments_agree_with_our_inverse_dynamics_on_both_legs(gait2354, tmp_path):
    """A Boo fixture trial's torques, signed by the reader into myolegs' conventions, correlate
    positively with mj_inverse of the same walk on myolegs, per leg and joint."""
    ours_path = tmp_path / "ours.npz"
    args = [*subject01_reference_args(gait2354), "--model", "myolegs", "--no-static-optimisation"]
    assert main([*args, "--out", str(ours_path)]) == 0
    ours = read_reference(ours_path)
    arrays, _, _ = trial_arrays("S901", 0, 72.6, None)
    np.savez(tmp_path / "trial.npz", **arrays)
    ref = read_reference(tmp_path / "trial.npz")
    signs, _ = reference_signs(ref, {})
    t_ours = ours.original_kinematics_time_sec
    t_ref = arrays["original_kinematics_time_sec"]
    for side in "rl":
        for joint in SAGITTAL:
            column = f"{joint}_{side}_moment"
            theirs = ref.joint_torque[:, ref.joint_torque_columns.index(column)] * signs.get(column, 1.0)
            mine = np.interp(t_ref, t_ours, ours.joint_torque[:, ours.joint_torque_columns.index(column)])
            r = np.corrcoef(theirs, mine)[0, 1]
            assert r > 0.8, f"{column}: r {r:.2f} between the signed reference and mj_inverse"


@pytest.mark.parametrize(
    ("muscles", "sign"),
    [(("vasmed", "vaslat", "vasint"), -1.0), (("bflh", "bfsh", "semimem", "semiten"), 1.0)],
)
def test_knee_moment_projection_is_mirror_symmetric(muscles, sign):
    model = load_model("myolegs")
    data = mujoco.MjData(model)
    coords = independent_coordinates(model)
    q = model.qpos0.copy()
    for side in "rl":
        for joint, angle_deg in (("hip_flexion", 20.0), ("knee_angle", 40.0), ("ankle_angle", 5.0)):
            q[model.jnt_qposadr[model.joint(f"{joint}_{side}").id]] = np.radians(angle_deg)
    data.qpos[:] = apply_couplings(model, q[None])[0]
    names = [model.actuator(i).name for i in range(model.nu)]
    active = [i for i, n in enumerate(names) if n.startswith(muscles)]
    assert len(active) == 2 * len(muscles)  # each muscle on both legs
    data.act[active] = 0.6
    mujoco.mj_forward(model, data)
    moment = joint_moments(model, data, coupling_matrix(model, data.qpos, coords)).muscle
    right, left = (moment[coords.index(f"knee_angle_{s}")] for s in "rl")
    assert np.sign(right) == np.sign(left) == sign
    assert right == pytest.approx(left, rel=1e-6)
