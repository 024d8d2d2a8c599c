"""The balance pass: a centre-of-mass IK task, the support geometry, the planned shift, and a clip
whose centre of pressure leaves the feet brought back onto them with the feet kept in place."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest

from musclerl.dynamics.plausibility import (
    PlausibilitySeries,
    leg_feet,
    nearest_support_point,
    trajectory_plausibility,
)
from musclerl.models.opensim_coordinates import qpos_to_pelvis
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory, looping_qvel
from musclerl.retarget.balance import balance_trajectory, held_stance, plan_com_shift, second_difference
from musclerl.retarget.ground.soles import model_soles, point_positions_m

MOTIONS = Path(__file__).resolve().parents[1] / "assets" / "motions"


def test_com_task_is_mujocos_centre_of_mass_and_its_jacobian():
    import jax
    import jax.numpy as jnp

    from musclerl.retarget.ik.kinematics import KinematicTree
    from musclerl.retarget.ik.tasks import ComTask

    model = load_model("myolegs")
    data = mujoco.MjData(model)
    rng = np.random.default_rng(3)
    data.qpos[:] = model.qpos0
    data.qpos[:3] = [0.3, -0.2, 0.9]
    quat = np.array([0.9, 0.1, -0.2, 0.3])
    data.qpos[3:7] = quat / np.linalg.norm(quat)
    data.qpos[7:] += 0.1 * rng.standard_normal(model.nq - 7)
    mujoco.mj_forward(model, data)
    with jax.enable_x64(True):
        tree = KinematicTree.from_model(model)
        task = ComTask(tree)
        q = jnp.asarray(data.qpos)
        np.testing.assert_allclose(task.com(tree, q), data.subtree_com[0], atol=1e-12)
        # the closed-form Jacobian against differences of the task's own residual on the tangent
        jac_mj = np.zeros((3, model.nv))
        mujoco.mj_jacSubtreeCom(model, data, jac_mj, 0)

        def com_at(v):
            qv = data.qpos.copy()
            mujoco.mj_integratePos(model, qv, v, 1.0)
            return np.asarray(task.com(tree, jnp.asarray(qv)))

        eye = 1e-6 * np.eye(model.nv)
        numeric = np.stack([(com_at(e) - com_at(-e)) / 2e-6 for e in eye], axis=1)
        np.testing.assert_allclose(numeric, jac_mj, atol=1e-8)
        target = jnp.array([0.0, 0.0, np.nan])  # height free: one zero row
        rows, jac = task.residual_jacobian(tree, q, target, None, jnp.eye(model.nq))
        np.testing.assert_allclose(rows, [data.subtree_com[0][0], data.subtree_com[0][1], 0.0], atol=1e-12)
        np.testing.assert_array_equal(np.asarray(jac[2]), 0.0)
        fd = jax.jacfwd(lambda x: task.residual(tree, x, target, None))(q)
        np.testing.assert_allclose(jac, fd, atol=1e-10)


def test_com_task_refuses_a_tree_without_every_mass():
    from musclerl.errors import InputError
    from musclerl.retarget.ik.kinematics import KinematicTree
    from musclerl.retarget.ik.tasks import ComTask

    model = load_model("myolegs")
    with pytest.raises(InputError, match="build it from all bodies"):
        ComTask(KinematicTree.from_model(model, ["femur_r"]))


def test_nearest_support_point():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    dist, point = nearest_support_point(square, np.array([0.5, 0.5]))
    assert dist == 0.0 and np.allclose(point, [0.5, 0.5])
    dist, point = nearest_support_point(square, np.array([1.5, 0.25]))
    assert dist == pytest.approx(0.5) and np.allclose(point, [1.0, 0.25])
    dist, point = nearest_support_point(square, np.array([-3.0, -4.0]))
    assert dist == pytest.approx(5.0) and np.allclose(point, [0.0, 0.0])
    line = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])  # collinear: the segment
    dist, point = nearest_support_point(line, np.array([1.0, 0.3]))
    assert dist == pytest.approx(0.3) and np.allclose(point, [1.0, 0.0])


def test_second_difference_is_exact_on_quadratics_and_periodic_on_loops():
    rate = 50.0
    t = np.arange(20) / rate
    open_d2 = second_difference(20, rate, loop=False)
    np.testing.assert_allclose(open_d2 @ (3.0 * t**2), 6.0)  # the ends too (one-sided)
    np.testing.assert_allclose(open_d2[0], open_d2[1])
    np.testing.assert_allclose(open_d2[-1], open_d2[-2])
    loop_d2 = second_difference(20, rate, loop=True)
    wave = np.sin(2 * np.pi * np.arange(20) / 20)
    np.testing.assert_allclose(loop_d2 @ wave, -(2 - 2 * np.cos(2 * np.pi / 20)) * rate**2 * wave, atol=1e-9)


def _check(n: int, outside: dict[int, float], k_s2: float = 0.09) -> SimpleNamespace:
    """A plausibility result of ``n`` loaded frames with the centre of mass at 1 m height and the
    centre of pressure under it, except ``outside`` frames: t -> lateral distance outside."""
    mass, g = 70.0, 9.81
    com = np.zeros((n, 3))
    com[:, 2] = 1.0
    force = np.zeros((n, 3))
    force[:, 2] = mass * 1.0 / k_s2  # k = m h / Fz
    cop = np.zeros((n, 3))
    support = np.zeros((n, 2))
    gap = np.zeros(n)
    for t, d in outside.items():
        cop[t, 1] = d
        gap[t] = d
    series = PlausibilitySeries(
        force_n=force,
        moment_nm=np.zeros((n, 3)),
        com_m=com,
        cop_m=cop,
        cop_outside_m=gap,
        cop_support_m=support,
        clearance_m=np.zeros((n, 2)),
        stance=np.ones((n, 2), bool),
        planted=np.ones((n, 2), bool),
        slip_mps=np.zeros((n, 2)),
        root_accel_mps2=np.zeros((n, 3)),
    )
    return SimpleNamespace(series=series, body_weight_n=mass * g)


def test_planned_shift_moves_the_pendulums_centre_of_pressure_into_the_support():
    rate, n, k = 30.0, 40, 0.09
    bad = {10: 0.15, 11: 0.2, 12: 0.1}  # centre of pressure 10-20 cm to the left of the feet
    shift = plan_com_shift(_check(n, bad, k), 70.0, rate, loop=True, margin_m=0.02)
    moved = shift - k * (second_difference(n, rate, True) @ shift)  # the pendulum's COP move
    for t, d in bad.items():
        assert moved[t, 1] == pytest.approx(-(d + 0.02), abs=0.01)  # onto the feet, 2 cm inside
    others = [t for t in range(n) if t not in bad]
    assert np.abs(moved[others, 1]).max() < 0.02  # the good frames keep their centre of pressure
    assert np.abs(shift[:, 0]).max() < 1e-9  # nothing asked for a sagittal move
    assert np.abs(shift).max() < 0.05  # a few cm of the centre of mass do it (through c'')


def test_a_clip_that_does_not_loop_keeps_its_ends():
    """A centre of pressure off the feet at a non-looping clip's first frames (where the check's
    inverse dynamics rests on an extrapolation) is not bought with a shift there: the first and
    last frames keep the source's centre of mass, the shift ramping in over ``EDGE_S``. Asked at
    frame 0, the pass dropped CMU 07_06's pelvis by 4 cm and started it at 2.2 m/s for a 1.2 m/s
    walk, where a test from t = 0 starts."""
    from musclerl.retarget.balance import EDGE_S

    rate, n, k = 100.0, 60, 0.09
    bad = {0: 0.15, 1: 0.15, 2: 0.12, 30: 0.15}
    free = plan_com_shift(_check(n, bad, k), 70.0, rate, loop=False, margin_m=0.02, edge_s=0.0)
    held = plan_com_shift(_check(n, bad, k), 70.0, rate, loop=False, margin_m=0.02)
    assert abs(free[0, 1]) > 0.03  # without the hold the plan moves the first frame by centimetres
    assert abs(held[0, 1]) < 0.2 * abs(free[0, 1]) and abs(held[-1]).max() < 1e-3
    assert int(EDGE_S * rate) < 30  # a frame inside the clip still gets its centre of pressure moved
    moved = held - k * (second_difference(n, rate, False) @ held)
    assert moved[30, 1] == pytest.approx(-(0.15 + 0.02), abs=0.02)


def test_balance_brings_a_swaying_clip_back_onto_its_feet():
    """The bundled walk with a fast sideways lurch of the whole body (feet included) added:
    the centre of pressure leaves the feet; after the pass it is back, the stance feet's heels and
    toes have not moved, and the legs did it: the pelvis (myolegs' rigid trunk) keeps its
    orientation, without the few-frame pitches an IK finds cheaper."""
    traj = Trajectory.load(MOTIONS / "walk_myolegs.npz")
    model = load_model("myolegs")
    t = np.arange(traj.num_frames) / traj.rate_hz
    lurch = 0.03 * np.exp(-0.5 * ((t - 0.6) / 0.06) ** 2)  # 3 cm in about 0.1 s: ~8 m/s^2
    qpos = traj.qpos.copy()
    qpos[:, 1] += lurch
    cycle = traj.qpos[-1, :2] - traj.qpos[0, :2] + traj.qvel[-1, :2] / traj.rate_hz
    swaying = dataclasses.replace(traj, qpos=qpos, qvel=looping_qvel(model, qpos, traj.rate_hz, cycle))
    assert not trajectory_plausibility(swaying, model).passed
    result = balance_trajectory(swaying, model)
    assert result.before.cop["outside_frac"] > 0.1
    assert result.after.passed, result.after.failures
    assert result.after.cop["outside_frac"] == 0.0  # every loaded frame within 5 cm of the feet
    assert 1 <= len(result.rounds) <= 6

    names, foot, points = model_soles(model, "myolegs")
    before = point_positions_m(model, qpos, points)
    after = point_positions_m(model, result.trajectory.qpos, points)
    moved = np.linalg.norm(after - before, axis=-1)  # (T, P)
    stance = held_stance(result.before, traj.rate_hz)  # (T, legs), legs as the check names them
    legs = leg_feet(model)[0]
    for p, name in enumerate(names):
        leg = legs.index("left" if foot[p] == 0 else "right")
        if name.startswith(("sole_heel", "sole_toe_tip")):
            assert moved[stance[:, leg], p].max() < 0.005, name  # stance heel and toe held to mm
        assert moved[:, p].max() < 0.03, name  # any sole point, swing included: on its path to cm
    tilt_list_before = qpos_to_pelvis(model, qpos)[:, :3]
    tilt_list_after = qpos_to_pelvis(model, result.trajectory.qpos)[:, :3]
    assert np.abs(tilt_list_after - tilt_list_before).max() < 2.0  # deg: the pelvis keeps its turn
    joints = np.abs(result.trajectory.qpos[:, 7:] - qpos[:, 7:]).max()
    assert np.rad2deg(joints) < 15.0  # the legs adapt; no joint swings far from the source


@pytest.mark.slow
def test_balance_never_returns_a_worse_clip(shared_data):
    """The DeepMimic run retargeted onto myolegs: its flight is not ballistic (the floor would
    pull), which no horizontal shift of the centre of mass can mend. The pass may not help, but
    what it returns is never worse than its input, and the input itself when no round helped."""
    from musclerl.retarget.keypoints.files import SmplOptions, retarget_file

    path = Path(shared_data) / "deepmimic" / "humanoid3d_run.txt"
    if not path.exists():
        pytest.skip("deepmimic run not present")
    result, _, _ = retarget_file(path, SmplOptions(model="myolegs", scale=False))
    model = result.prepared.model
    balanced = balance_trajectory(result.trajectory, model)
    before, after = balanced.before.cop, balanced.after.cop
    score = {k: (c["outside_frac"], c["outside_max_m"]) for k, c in (("before", before), ("after", after))}
    assert score["after"] <= score["before"]
    if after == before:
        np.testing.assert_array_equal(balanced.trajectory.qpos, result.trajectory.qpos)
