"""The trailing foot's leg taken out of the floor at toe-off (musclerl.retarget.markers.toe_off).

Known truth: myolegs with the right foot flat on a floor at z = 0 and the left leg behind it,
hip extended, knee flexing and extending over 0.3 s, so that the rigid left toes sink up to 2 cm
into the floor; the toe joint bent to its -30 deg bound (what the toe bend does) still leaves
them 4 mm deep. The leg step must take every left-foot geom out of the floor, move nothing but the
left leg, keep every joint off its bounds, undo the toe's pinning, and ramp in and out smoothly.
"""

from __future__ import annotations

import numpy as np
import pytest

from musclerl.dynamics.ground_support import model_feet
from musclerl.ground.surface import GeomSurface, penetration_m
from musclerl.models.couplings import apply_couplings
from musclerl.models.geoms import collision_geoms
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Terrain
from musclerl.retarget.markers.ground import bend_toes_off_floor, support_lift_m
from musclerl.retarget.markers.toe_off import LIMIT_MARGIN_RAD, leg_chain, lift_trailing_feet

RATE_HZ = 100.0
FLOOR = Terrain(np.zeros((2, 2)), np.array([-5.0, -5.0]), 10.0)


def _adr(model, name: str) -> int:
    return int(model.jnt_qposadr[model.joint(name).id])


def _side(model, feet, side: str) -> int:
    """Index in ``feet`` (:func:`model_feet`) of the foot whose heel body is ``calcn_<side>``."""
    return [model.body(int(f[0])).name for f in feet].index(f"calcn_{side}")


def _foot(model, side: str) -> GeomSurface:
    return GeomSurface.of(
        model, collision_geoms(model, [model.body(f"calcn_{side}").id, model.body(f"toes_{side}").id])
    )


@pytest.fixture(scope="module")
def toe_off():
    """(model, marker-fit poses, poses after the toe bend) of the module docstring's clip."""
    import mujoco

    model = load_model("myolegs")
    t = np.arange(40) / RATE_HZ
    bump = np.sin(np.pi * np.clip((t - 0.05) / 0.3, 0.0, 1.0))  # 0, up to 1 over 0.05-0.35 s, 0
    q = np.tile(model.qpos0, (len(t), 1))
    q[:, _adr(model, "hip_flexion_l")] = np.radians(-12.0)
    q[:, _adr(model, "knee_angle_l")] = np.radians(40.0 - 8.0 * bump)
    q[:, _adr(model, "ankle_angle_l")] = np.radians(-15.0)
    q[:, _adr(model, "hip_flexion_r")] = np.radians(10.0)
    q = apply_couplings(model, q)
    data = mujoco.MjData(model)
    data.qpos[:] = q[0]
    mujoco.mj_kinematics(model, data)
    q[:, 2] -= _foot(model, "r").world_points(data)[:, 2].min()  # the right foot on z = 0
    bent, _ = bend_toes_off_floor(model, "myolegs", q, FLOOR)
    return model, q, bent


def test_the_clip_has_a_trailing_foot_in_the_floor_with_its_toes_at_their_bound(toe_off):
    model, fitted, bent = toe_off
    mtp = _adr(model, "mtp_angle_l")
    assert penetration_m(model, fitted, FLOOR, _foot(model, "l")).max() > 0.015
    assert penetration_m(model, bent, FLOOR, _foot(model, "l")).max() > 0.003
    assert np.isclose(bent[:, mtp], model.jnt_range[model.joint("mtp_angle_l").id, 0]).sum() >= 10
    _, supporting = support_lift_m(model, bent, FLOOR)
    feet = model_feet(model)
    right, left = _side(model, feet, "r"), _side(model, feet, "l")
    assert supporting[:, right].all() and not supporting[:, left].any()  # the left foot trails


def test_trailing_leg_leaves_the_floor_with_the_stance_foot_and_limits_untouched(toe_off):
    model, fitted, bent = toe_off
    feet = model_feet(model)
    _, supporting = support_lift_m(model, bent, FLOOR)
    out, change = lift_trailing_feet(model, bent, fitted, FLOOR, feet, supporting, RATE_HZ)
    # Out of the floor (the quality report's measure, all geoms).
    every = GeomSurface.of(model, collision_geoms(model))
    assert penetration_m(model, out, FLOOR, every).max() < 1e-4
    # Only the left leg's joints (and the knee's coupled ones) move: root, right leg, right foot stay.
    left = leg_chain(model, feet[_side(model, feet, "l")])
    coupled_left = [_adr(model, n) for n in ("knee_angle_translation2_l", "knee_angle_translation1_l")]
    coupled_left += [_adr(model, n) for n in ("knee_angle_rotation2_l", "knee_angle_rotation3_l")]
    coupled_left += [
        _adr(model, f"knee_angle_beta_{k}_l") for k in ("translation2", "translation1", "rotation1")
    ]
    others = np.setdiff1d(np.arange(model.nq), np.concatenate([left.qpos_adr, coupled_left]))
    np.testing.assert_array_equal(out[:, others], bent[:, others])
    # Within every range, and the leg joints never closer than the margin to a bound.
    for j in range(1, model.njnt):
        if model.jnt_limited[j]:
            lo, hi = model.jnt_range[j]
            assert np.all(out[:, model.jnt_qposadr[j]] >= lo - 1e-9)
            assert np.all(out[:, model.jnt_qposadr[j]] <= hi + 1e-9)
    moved = np.flatnonzero(change > 0)
    assert len(moved) > 0
    margin = np.minimum(out[:, left.qpos_adr] - left.lo, left.hi - out[:, left.qpos_adr])
    assert margin[moved].min() >= LIMIT_MARGIN_RAD - 1e-9
    # The toe is off its bound: the ankle, knee and hip took the rest.
    mtp = _adr(model, "mtp_angle_l")
    assert out[:, mtp].min() > model.jnt_range[model.joint("mtp_angle_l").id, 0] + np.radians(1.0)
    assert (
        np.degrees(np.abs(out - fitted)[:, [_adr(model, "knee_angle_l"), _adr(model, "hip_flexion_l")]]).max()
        > 0.5
    )
    # Smooth: the change ramps in and out, no frame-to-frame jump.
    correction = out[:, left.qpos_adr] - fitted[:, left.qpos_adr]
    assert np.degrees(np.abs(np.diff(correction, axis=0))).max() < 4.0
    assert change[0] == 0.0 and change[-1] == 0.0
