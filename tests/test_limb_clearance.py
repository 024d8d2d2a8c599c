"""``dynamics.limb_clearance``: the hips abducted just enough for the model's legs to clear."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from musclerl.dynamics.limb_clearance import CLEAR_M, clear_limbs
from musclerl.dynamics.plausibility import body_overlap_m
from musclerl.models.registry import load_model


@pytest.fixture(scope="module")
def myolegs():
    return load_model("myolegs")


def _overlaps(model, qpos):
    data = mujoco.MjData(model)
    out = []
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out.append(body_overlap_m(model, data))
    return np.array(out)


def test_crossed_thighs_are_opened_just_enough_and_clear_frames_are_kept(myolegs):
    """A second of standing whose middle fifth turns both thighs in by 4 deg (myolegs' legs then
    4 cm through each other): those frames come out clear to soft contact's depth, by a
    few degrees of abduction that open and close smoothly; the frames far from them keep their
    pose, and a pose that clears is unchanged."""
    rate_hz, n = 100.0, 100
    q = np.tile(myolegs.qpos0, (n, 1))
    adrs = [myolegs.joint(f"hip_adduction_{s}").qposadr[0] for s in ("r", "l")]
    q[40:60, adrs] = np.radians(4.0)
    before = _overlaps(myolegs, q)
    assert before[40:60].min() > 0.01 and before[:30].max() <= CLEAR_M
    cleared, summary = clear_limbs(myolegs, q, rate_hz)
    after = _overlaps(myolegs, cleared)
    assert after.max() <= CLEAR_M + 1e-4
    taken = np.degrees(q[:, adrs[0]] - cleared[:, adrs[0]])
    np.testing.assert_allclose(taken, np.degrees(q[:, adrs[1]] - cleared[:, adrs[1]]))  # both hips alike
    assert 0.5 < summary["abduction_max_deg"] <= 4.0 and summary["frames"] == 20
    assert summary["overlap_max_m"] == pytest.approx(before.max())
    assert np.all(taken >= -1e-9) and np.abs(taken[:20]).max() < 0.05 and np.abs(taken[-20:]).max() < 0.05
    assert np.abs(np.diff(taken)).max() < 2.0  # no step of more than 2 deg between frames at 100 Hz
    other = np.ones(myolegs.nq, bool)
    other[adrs] = False
    np.testing.assert_array_equal(cleared[:, other], q[:, other])
    same, summary = clear_limbs(myolegs, q[:30], rate_hz)
    np.testing.assert_array_equal(same, q[:30])
    assert summary["frames"] == 0
