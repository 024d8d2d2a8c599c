"""Batched LM IK: synthetic truth (known smooth motion -> noisy markers -> recovered coordinates),
frame targets, missing markers, limits, equalities, tendon-jump repair and honest failure flags."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from test_retarget_kinematics import BALL_SLIDE_XML

from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.retarget.ik.constraints import (
    JointEqualities,
    JointLimits,
    Smoothness,
    TendonContinuity,
    muscle_tendon_ids,
    tendon_jumps,
    tendon_lengths,
)
from musclerl.retarget.ik.kinematics import KinematicTree
from musclerl.retarget.ik.solver import BLOCK_SWEEPS, IKProblem, solve_clip
from musclerl.retarget.ik.tasks import CoordinateTask, FrameTask, MarkerTask, OrientationTask, PostureTask
from musclerl.retarget.synthetic.clip import synthetic_clip


def _problem(model, clip, extra_tasks=(), extra_constraints=()):
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    markers = MarkerTask(tree, clip.marker_bodies, clip.local_points_m)
    return IKProblem(
        tree,
        [markers, PostureTask(model.qpos0, 1e-6), *extra_tasks],
        [JointLimits(model), JointEqualities(model), Smoothness(1e-4), *extra_constraints],
    )


def _check_truth(model, clip, result, max_rms_deg):
    limits, equalities = JointLimits(model), JointEqualities(model)
    err_deg = np.degrees(result.q[:, clip.coord_qadr] - clip.q[:, clip.coord_qadr])
    assert np.sqrt(np.mean(err_deg**2)) < max_rms_deg
    assert result.converged.all(), result.failed_frames
    assert not result.timed_out.any()
    assert limits.violation(result.q, skip_qadr=equalities.dep_qadr).max() == 0.0
    assert equalities.residual_max(result.q) <= 1e-6
    # 2 mm noise per axis -> about 3.5 mm RMS marker error at the true pose.
    assert np.nanmean(result.residual_m) < 0.005


@pytest.fixture(scope="module")
def tiny():
    """One tiny clip and problem shared by the tests (the compiled solver is reused)."""
    model = load_model("tiny")
    clip = synthetic_clip(model, n_frames=24, noise_m=0.002, seed=0)
    return model, clip, _problem(model, clip)


def test_synthetic_truth_tiny(tiny):
    model, clip, problem = tiny
    result = solve_clip(problem, {"markers": clip.markers_m}, model.qpos0, chunk_len=8)
    _check_truth(model, clip, result, max_rms_deg=1.0)
    assert result.compile_s > 0 and result.solve_s > 0


def test_synthetic_truth_myolegs_short():
    model = load_model("myolegs")
    clip = synthetic_clip(model, n_frames=16, noise_m=0.002, seed=1)
    result = solve_clip(_problem(model, clip), {"markers": clip.markers_m}, model.qpos0, chunk_len=8)
    _check_truth(model, clip, result, max_rms_deg=1.0)


@pytest.mark.slow
def test_synthetic_truth_myolegs_full_clip():
    model = load_model("myolegs")
    clip = synthetic_clip(model, n_frames=600, noise_m=0.002, seed=2)
    result = solve_clip(_problem(model, clip), {"markers": clip.markers_m}, model.qpos0)
    _check_truth(model, clip, result, max_rms_deg=1.0)


def test_clips_of_any_length_reuse_one_compiled_solver(tiny):
    """After the first solve, clips of other lengths, chain layouts and repair batches of any
    size run without a single XLA compile."""
    import jax

    model, clip, problem = tiny
    targets = {"markers": clip.markers_m}
    solve_clip(problem, targets, model.qpos0, chunk_len=8)
    compiles = []

    def listener(event, duration_s, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration_s)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        # 17 and 5 frames; 24 chains of one frame (more chains than one call holds).
        for n_frames, chunk_len in ((17, None), (5, None), (24, 1)):
            result = solve_clip(
                problem, {"markers": clip.markers_m[:n_frames]}, model.qpos0, chunk_len=chunk_len
            )
            assert result.compile_s == 0.0
            assert result.converged.all() and len(result.q) == n_frames
        for k in (3, 2 * problem.chain_batch * BLOCK_SWEEPS + 1):  # one call and several calls
            frames = np.arange(k) % len(clip.q)
            q, conv, _ = problem.resolve_frames(frames, targets, clip.q[frames], clip.q[frames], np.ones(k))
            assert q.shape == (k, model.nq) and conv.all()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == []


@pytest.mark.parametrize("source", ["myolegs", "ball_slide"])
def test_closed_form_linearization_matches_autodiff(source):
    """The closed-form tangent basis and Jacobians (markers, orientations, coordinates, posture,
    smoothness; a frame task through the jacfwd fallback) equal ``jax.jacfwd`` through the retraction, with
    joint equalities (myolegs) and free, ball, hinge and slide joints (ball_slide)."""
    import jax
    import jax.numpy as jnp

    from musclerl.retarget.ik.solver import default_constraints
    from musclerl.retarget.ik.term import Previous

    if source == "myolegs":  # the right leg: knee equalities, patella
        model = load_model("myolegs")
        tree = KinematicTree.from_model(model, keep_bodies=["toes_r", "patella_r"])
    else:
        model = mujoco.MjModel.from_xml_string(BALL_SLIDE_XML)
        tree = KinematicTree.from_model(model)
    rng = np.random.default_rng(7)
    bodies = [b for b in tree.body_names for _ in range(2)]
    hinge = next(j.name for j in tree.all_joints() if j.type == 3)
    frame_task = FrameTask(tree, tree.body_names[-1], weight=3.0, rot_weight=0.5)
    oriented = list(tree.body_names[-3:])
    problem = IKProblem(
        tree,
        [
            MarkerTask(tree, bodies, rng.normal(size=(len(bodies), 3)) * 0.05),
            PostureTask(model.qpos0, 1e-2),
            CoordinateTask({hinge: 0.1}, weight=2.0),
            frame_task,
            OrientationTask(tree, oriented, [0.5, 2.0, 1.0]),
        ],
        [*default_constraints(model), Smoothness(1e-2)],
    )

    def pose():
        q = model.qpos0.copy()
        mujoco.mj_integratePos(model, q, rng.normal(size=model.nv) * 0.3, 1.0)
        return q

    targets = rng.normal(size=(len(bodies), 3))
    targets[1] = np.nan
    quat = rng.normal(size=4)
    pose_target = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
    # Orientation targets up to ~2.5 rad away (the inverse SO(3) Jacobian far from identity); one NaN.
    quats = rng.normal(size=(len(oriented), 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[0] = np.nan
    frame = {"markers": targets, frame_task.name: pose_target, "orientations": quats}

    @jax.jit
    def closed_and_auto(q, q_prev, frame):
        q, prev, zero = problem.project(q), Previous(q_prev, 1.0), jnp.zeros(problem.n_vars)
        jac, rows = problem.linearize(q, frame, prev)
        auto_basis = jax.jacfwd(lambda dx: problem.retract(q, dx))(zero)
        auto_jac = jax.jacfwd(lambda dx: problem.residual(problem.retract(q, dx), frame, prev))(zero)
        return problem.tangent_basis(q), auto_basis, jac, auto_jac, rows, problem.residual(q, frame, prev)

    with jax.enable_x64(True):
        basis, auto_basis, jac, auto_jac, rows, auto_rows = closed_and_auto(pose(), pose(), frame)
    np.testing.assert_allclose(basis, auto_basis, atol=1e-12)
    np.testing.assert_allclose(rows, auto_rows, atol=1e-12)
    np.testing.assert_allclose(jac, auto_jac, atol=1e-9)
    assert np.abs(jac).max() > 0.1  # not trivially zero


def test_missing_markers_are_ignored(tiny):
    model, clip, problem = tiny
    markers = clip.markers_m.copy()
    markers[:, 0] = np.nan  # one marker never seen
    markers[5, 1:4] = np.nan  # and a gap in one frame
    result = solve_clip(problem, {"markers": markers}, model.qpos0, chunk_len=8)
    assert result.converged.all()
    assert np.all(np.isfinite(result.residual_m)) and result.residual_m.max() < 0.01
    err_deg = np.degrees(result.q[:, clip.coord_qadr] - clip.q[:, clip.coord_qadr])
    assert np.sqrt(np.mean(err_deg**2)) < 1.5


def test_iteration_limit_reports_not_converged(tiny):
    model, clip, problem = tiny
    result = solve_clip(
        problem, {"markers": clip.markers_m}, model.qpos0, cold_iters=1, max_iters=1, chunk_len=8
    )
    assert not result.converged.all()
    assert set(result.failed_frames) == set(np.flatnonzero(~result.converged))
    assert result.iterations.max() <= 1


def test_time_limit_marks_unreached_frames(tiny):
    model, clip, problem = tiny
    result = solve_clip(problem, {"markers": clip.markers_m}, model.qpos0, chunk_len=8, time_limit_s=0.0)
    # Only the cold-started first frame of each chunk was solved before the limit.
    reached = np.zeros(len(clip.q), bool)
    reached[::8] = True
    np.testing.assert_array_equal(result.timed_out, ~reached)
    assert not result.converged[~reached].any() and result.converged[reached].all()
    np.testing.assert_array_equal(result.q[1:8], np.repeat(result.q[:1], 7, axis=0))


def test_chain_heads_start_from_their_own_given_pose(tiny):
    """With ``starts``, each chain's cold-started first frame begins at its own row (a caller
    that moves a solved clip): one iteration leaves it at that pose, where one iteration from
    ``q0`` does not get there; a wrong shape is refused."""
    model, clip, problem = tiny
    heads = np.arange(0, len(clip.q), 8)

    def head_error_deg(**kwargs):
        result = solve_clip(
            problem,
            {"markers": clip.markers_m},
            model.qpos0,
            chunk_len=8,
            cold_iters=1,
            time_limit_s=0.0,
            **kwargs,
        )
        err = np.degrees(result.q[np.ix_(heads, clip.coord_qadr)] - clip.q[np.ix_(heads, clip.coord_qadr)])
        return float(np.sqrt(np.mean(err**2)))

    assert head_error_deg(starts=clip.q) < 1.0
    assert head_error_deg() > 5.0
    with pytest.raises(InputError, match="starts"):
        solve_clip(problem, {"markers": clip.markers_m}, model.qpos0, starts=clip.q[:-1])


def test_bad_targets_raise_input_error(tiny):
    model, clip, problem = tiny
    with pytest.raises(InputError, match="markers"):
        solve_clip(problem, {"markers": clip.markers_m[:, :-1]}, model.qpos0)
    with pytest.raises(InputError, match="missing targets"):
        solve_clip(problem, {}, model.qpos0)
    with pytest.raises(InputError, match="no task or constraint"):
        solve_clip(problem, {"markers": clip.markers_m, "typo": clip.markers_m}, model.qpos0)


def test_frame_and_coordinate_tasks_reach_their_targets():
    model = load_model("tiny")
    data = mujoco.MjData(model)
    clip = synthetic_clip(model, n_frames=6, noise_m=0.0, seed=3)
    poses = []
    for q in clip.q:  # true world pose of the right foot's toe site
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site("toe_r").xmat)
        poses.append(np.concatenate([data.site("toe_r").xpos, quat]))
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    foot = FrameTask(tree, "toe_r", weight=10.0)
    # No markers on the right leg (the frame task drives it) nor on the left foot (the
    # coordinate task alone sets its ankle).
    keep = [i for i, b in enumerate(clip.marker_bodies) if not b.endswith("_r") and b != "foot_l"]
    markers = MarkerTask(tree, [clip.marker_bodies[i] for i in keep], clip.local_points_m[keep])
    ankle = CoordinateTask({"ankle_angle_l": 0.1}, weight=1.0)
    problem = IKProblem(tree, [markers, foot, ankle], [JointLimits(model)])
    result = solve_clip(
        problem, {"markers": clip.markers_m[:, keep], foot.name: np.array(poses)}, model.qpos0, chunk_len=3
    )
    assert result.converged.all()
    right = [model.joint(n).qposadr[0] for n in ("hip_flexion_r", "knee_angle_r", "ankle_angle_r")]
    np.testing.assert_allclose(result.q[:, right], clip.q[:, right], atol=1e-4)
    np.testing.assert_allclose(result.q[:, model.joint("ankle_angle_l").qposadr[0]], 0.1, atol=1e-6)


def test_tendon_continuity_detects_and_repairs_a_flipped_frame(tiny):
    model, clip, problem = tiny
    targets = {"markers": clip.markers_m}
    result = solve_clip(problem, targets, model.qpos0, chunk_len=8)
    broken = result.q.copy()
    hip, knee = (model.joint(n).qposadr[0] for n in ("hip_flexion_r", "knee_angle_r"))
    broken[10, [hip, knee]] = -0.5, 0.3  # one frame on a wrong branch: the thigh swung back
    lengths = tendon_lengths(model, broken, muscle_tendon_ids(model))
    assert tendon_jumps(lengths, 0.1)[[10, 11]].all()
    guard = TendonContinuity(model, max_jump_frac=0.1)

    def resolve(frames, q_init, q_prev, prev_weight):
        return problem.resolve_frames(frames, targets, q_init, q_prev, prev_weight)

    repaired = guard.finalize(problem, targets, dataclasses.replace(result, q=broken), resolve)
    assert repaired.tendon_jumps_detected >= 2
    assert not repaired.tendon_jump.any()
    np.testing.assert_allclose(repaired.q[10, [hip, knee]], clip.q[10, [hip, knee]], atol=np.radians(3.0))


def test_tendon_continuity_in_solve_clip_keeps_clean_clip_clean(tiny):
    model, clip, _ = tiny
    problem = _problem(model, clip, extra_constraints=[TendonContinuity(model, 0.1)])
    result = solve_clip(problem, {"markers": clip.markers_m}, model.qpos0, chunk_len=8)
    assert result.tendon_jumps_detected == 0 and not result.tendon_jump.any()
    _check_truth(model, clip, result, max_rms_deg=1.0)


def test_joint_equalities_follow_mujoco_definition():
    model = load_model("myolegs")
    eq = JointEqualities(model)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(6)
    q = model.qpos0.copy()
    knee = [model.joint(n).qposadr[0] for n in ("knee_angle_r", "knee_angle_l")]
    q[knee] = rng.uniform(0.1, 2.0, size=2)
    q[eq.dep_qadr] = eq.dependent_values(q)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    joint_rows = data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    assert joint_rows.sum() == len(eq.dep_qadr)
    assert np.abs(data.efc_pos[joint_rows]).max() < 1e-12


def test_marker_frame_weights_match_fixed_weights(tiny):
    """Weights given with the targets (T, M, 4) give the rows of the same weights fixed at build."""
    import jax
    import jax.numpy as jnp

    model, clip, _ = tiny
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    weights = np.linspace(0.5, 2.0, len(clip.marker_bodies))
    fixed = MarkerTask(tree, clip.marker_bodies, clip.local_points_m, weights)
    per_frame = MarkerTask(tree, clip.marker_bodies, clip.local_points_m, frame_weights=True)
    assert per_frame.target_shape(tree) == (len(weights), 4)
    with jax.enable_x64(True):  # as the solver runs
        target = clip.markers_m[3].copy()
        target[1] = np.nan
        column = np.concatenate([target, weights[:, None]], axis=1)
        q = jnp.asarray(clip.q[3] + 0.01)
        dq_dx = jnp.eye(tree.nq, tree.nv)
        np.testing.assert_allclose(
            per_frame.residual(tree, q, jnp.asarray(column), None),
            fixed.residual(tree, q, jnp.asarray(target), None),
            atol=1e-12,
        )
        r_a, j_a = per_frame.residual_jacobian(tree, q, jnp.asarray(column), None, dq_dx)
        r_b, j_b = fixed.residual_jacobian(tree, q, jnp.asarray(target), None, dq_dx)
        np.testing.assert_allclose(r_a, r_b, atol=1e-12)
        np.testing.assert_allclose(j_a, j_b, atol=1e-12)
        points, w = per_frame.points_and_weights(column)
        assert float(w[1]) == 0.0 and np.allclose(np.asarray(w)[[0, 2]], weights[[0, 2]])


def test_marker_local_points_with_targets_match_fixed_points(tiny):
    """Local points given with the targets (T, M, 3 + 1 + 3) give the rows, point errors and
    cold-start alignment of the same points fixed at build."""
    import jax
    import jax.numpy as jnp

    model, clip, _ = tiny
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    weights = np.linspace(0.5, 2.0, len(clip.marker_bodies))
    fixed = MarkerTask(tree, clip.marker_bodies, clip.local_points_m, frame_weights=True)
    given = MarkerTask(tree, clip.marker_bodies, None, frame_weights=True)
    assert given.target_shape(tree) == (len(weights), 7)
    target = np.concatenate([clip.markers_m[:4], np.broadcast_to(weights[:, None], (4, len(weights), 1))], -1)
    target[2, 1] = np.nan
    local = np.broadcast_to(clip.local_points_m, (4,) + clip.local_points_m.shape)
    with_local = np.concatenate([target, local], axis=-1)
    with jax.enable_x64(True):  # as the solver runs
        q = jnp.asarray(clip.q[2] + 0.01)
        dq_dx = jnp.eye(tree.nq, tree.nv)
        r_a, j_a = given.residual_jacobian(tree, q, jnp.asarray(with_local[2]), None, dq_dx)
        r_b, j_b = fixed.residual_jacobian(tree, q, jnp.asarray(target[2]), None, dq_dx)
        np.testing.assert_allclose(r_a, r_b, atol=1e-12)
        np.testing.assert_allclose(j_a, j_b, atol=1e-12)
        np.testing.assert_allclose(given.residual(tree, q, jnp.asarray(with_local[2]), None), r_b, atol=1e-12)
        np.testing.assert_allclose(
            given.position_errors_m(tree, q, jnp.asarray(with_local[2])),
            fixed.position_errors_m(tree, q, jnp.asarray(target[2])),
            atol=1e-12,
        )
    starts = [
        IKProblem(tree, [task]).aligned_starts(model.qpos0 + 0.05, {"markers": frames})
        for task, frames in ((given, with_local), (fixed, target))
    ]
    np.testing.assert_allclose(starts[0], starts[1], atol=1e-12)
    assert not np.allclose(starts[0][0], model.qpos0 + 0.05)  # the root was moved


@pytest.mark.slow
def test_marker_frame_weight_zero_ignores_a_bad_marker(tiny):
    """A marker moved 20 cm off, weighted 0 through the targets, leaves the solution on the truth
    (about 30 s, mostly compiling a second tiny problem)."""
    model, clip, _ = tiny
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    markers = MarkerTask(tree, clip.marker_bodies, clip.local_points_m, frame_weights=True)
    problem = IKProblem(
        tree,
        [markers, PostureTask(model.qpos0, 1e-6)],
        [JointLimits(model), JointEqualities(model), Smoothness(1e-4)],
    )
    bad = clip.markers_m.copy()
    bad[:, 0] += [0.2, 0.0, 0.0]
    weights = np.ones(bad.shape[:2] + (1,))
    weights[:, 0] = 0.0
    result = solve_clip(
        problem, {"markers": np.concatenate([bad, weights], axis=-1)}, model.qpos0, chunk_len=8
    )
    err_deg = np.degrees(result.q[:, clip.coord_qadr] - clip.q[:, clip.coord_qadr])
    assert np.sqrt(np.mean(err_deg**2)) < 1.5
    assert result.converged.all()


def test_tendon_continuity_keeps_only_repairs_that_remove_jumps(tiny):
    """Two flipped frames; the repair of the second is sabotaged (it would jump further): the
    first run's repair is kept, the second run is left as solved and its jumps stay flagged."""
    model, clip, problem = tiny
    targets = {"markers": clip.markers_m}
    result = solve_clip(problem, targets, model.qpos0, chunk_len=8)
    broken = result.q.copy()
    hip, knee = (model.joint(n).qposadr[0] for n in ("hip_flexion_r", "knee_angle_r"))
    broken[10, [hip, knee]] = -0.5, 0.3
    broken[20, [hip, knee]] = -0.5, 0.3
    guard = TendonContinuity(model, max_jump_frac=0.1, rounds=1)

    def resolve(frames, q_init, q_prev, prev_weight):
        q, conv, iters = problem.resolve_frames(frames, targets, q_init, q_prev, prev_weight)
        worse = (frames >= 19) & (frames <= 21)
        q[worse, hip] = -1.0  # a "repair" that swings the thigh further back
        return q, conv, iters

    repaired = guard.finalize(problem, targets, dataclasses.replace(result, q=broken), resolve)
    np.testing.assert_allclose(repaired.q[10, [hip, knee]], clip.q[10, [hip, knee]], atol=np.radians(3.0))
    np.testing.assert_array_equal(repaired.q[19:22], broken[19:22])
    assert not repaired.tendon_jump[:15].any() and repaired.tendon_jump[[20, 21]].all()


def test_tendon_jumps_tell_coarse_fast_motion_from_path_jumps():
    """A smooth motion sampled at every 8th frame changes paths by more than 5 % per frame
    (the bare length rule flags them); the moment arms predict those changes, so no jump is
    found, while a frame put on a wrong branch of a 100 Hz clip still is."""
    model = load_model("tiny")
    qs = synthetic_clip(model, n_frames=200, noise_m=0.0, seed=0).q[::8]
    tendons = muscle_tendon_ids(model)
    assert tendon_jumps(tendon_lengths(model, qs, tendons), 0.05).sum() > 10
    guard = TendonContinuity(model, max_jump_frac=0.05)
    assert not guard.jumps(qs).any()
    hip, knee = (model.joint(n).qposadr[0] for n in ("hip_flexion_r", "knee_angle_r"))
    broken = synthetic_clip(model, n_frames=24, noise_m=0.0, seed=0).q  # 100 Hz
    assert not guard.jumps(broken).any()
    broken[10, [hip, knee]] = -0.5, 0.3
    assert np.flatnonzero(guard.jumps(broken)).tolist() == [10, 11]
