"""Gait events on every GRF layout, flat columns without r, net joint moments and per-foot GRF."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from musclerl.dynamics.joint_moments import joint_moments, limit_qfrc
from musclerl.evaluate import gait_events, metrics
from musclerl.models.couplings import coupling_matrix, independent_coordinates
from musclerl.models.registry import load_model
from musclerl.motion.reference import ReferenceData

REPO = Path(__file__).resolve().parents[1]
STRIDE_S = 1.1
RATE_HZ = 100.0


def _walk_grf(duration_s: float = 3.5):
    """A synthetic two-foot vertical GRF (T, 2) in BW: stance 60 % of a 1.1 s stride, the left foot
    half a stride later; and the true heel strikes per foot."""
    t = np.arange(0.0, duration_s, 1.0 / RATE_HZ)
    out = np.zeros((len(t), 2))
    strikes = {}
    for k, phase_s in enumerate((0.2, 0.2 + STRIDE_S / 2)):
        u = ((t - phase_s) % STRIDE_S) / (0.6 * STRIDE_S)
        out[:, k] = np.where(u < 1.0, 1.1 * np.sin(np.pi * np.clip(u, 0, 1)) ** 0.7, 0.0)
        strikes["rl"[k]] = phase_s + STRIDE_S * np.arange(0, 4)
    hips = np.stack([25 * np.cos(2 * np.pi * (t - p) / STRIDE_S) for p in (0.2, 0.2 + STRIDE_S / 2)], 1)
    return t, out, strikes, hips


def _reference(t, columns, grf, hips) -> ReferenceData:
    T = len(t)
    return ReferenceData(
        subject="S1",
        trial="Trial01",
        step_label="",
        time_sec=t,
        joint_angle=hips,
        joint_angle_columns=("hip_flexion_r", "hip_flexion_l"),
        joint_torque=np.zeros((T, 0)),
        joint_torque_columns=(),
        joint_torque_column_valid=np.ones((T, 0), bool),
        subject_weight_kg=70.0,
        subject_body_weight_n=70.0 * 9.80665,
        computed_grf=grf,
        computed_grf_columns=tuple(columns),
        computed_grf_valid=np.ones(T, bool),
    )


def _layouts(fz: np.ndarray) -> dict[str, tuple[list[str], np.ndarray]]:
    """The same two feet's vertical force in each layout we read (plus a distracting AP column)."""
    r, l = fz[:, 0], fz[:, 1]
    zero = np.zeros_like(r)
    return {
        "boo": (
            ["ground_force_r_vx", "ground_force_r_vy", "ground_force_l_vx", "ground_force_l_vy"],
            np.stack([0.1 * r, r, 0.1 * l, l], 1),
        ),
        # plates: each foot lands on either plate; stance runs are assigned by hip flexion
        "plates": (
            ["ground_force_vx", "ground_force_vy", "1_ground_force_vx", "1_ground_force_vy"],
            np.stack([zero, r, zero, l], 1),
        ),
        "plates_swapped": (["1_ground_force_vy", "ground_force_vy"], np.stack([r, l], 1)),
        # one plate under one foot's path (the other foot lands beside it)
        "single_plate": (["ground_force_vy"], r[:, None]),
        "single_plate_1": (["1_ground_force_vy"], l[:, None]),
        "musclerl": (
            ["calcn_r_force_x", "calcn_r_force_z", "calcn_l_force_x", "calcn_l_force_z"],
            np.stack([zero, r, zero, l], 1),
        ),
    }


@pytest.mark.parametrize(
    "layout", ["boo", "plates", "plates_swapped", "single_plate", "single_plate_1", "musclerl"]
)
def test_heel_strikes_on_every_grf_layout(layout):
    t, fz, strikes, hips = _walk_grf()
    columns, grf = _layouts(fz)[layout]
    foot = gait_events.reference_foot_grf(_reference(t, columns, grf, hips))
    assert foot is not None
    sides = {"single_plate": "r", "single_plate_1": "l"}.get(layout, "rl")
    for side in sides:
        ev = foot.events(side)
        # the stride's strikes inside the data (the first may precede it), to a sample
        want = [s for s in strikes[side] if 0.0 < s < t[-1] - 0.05]
        np.testing.assert_allclose(ev.heel_strikes_s, want, atol=1.5 / RATE_HZ)
        assert len(ev.heel_strikes_s) >= 2
        # the force itself arrives at that foot
        np.testing.assert_allclose(
            foot.vertical_bw[:, "rl".index(side)], fz[:, "rl".index(side)], atol=gait_events.OFF_BW
        )
    for side in set("rl") - set(sides):  # the foot beside the single plate has no events
        assert len(foot.events(side).heel_strikes_s) == 0


def test_no_grf_column_gives_none():
    t, fz, _, hips = _walk_grf()
    assert gait_events.reference_foot_grf(_reference(t, ["pelvis_force_x"], fz[:, :1], hips)) is None


def test_hysteresis_ignores_chatter():
    t = np.arange(0, 2, 0.01)
    f = np.where((t > 0.5) & (t < 1.2), 0.9, 0.0)
    f[(t > 0.8) & (t < 0.83)] = 0.04  # dips under "on" but stays over "off": no new strike
    f[(t > 1.5) & (t < 1.52)] = 0.06  # a touch: loaded twice for 20 ms, dropped
    ev = gait_events.gait_events(t, f, gait_events.ON_BW, gait_events.OFF_BW)
    np.testing.assert_allclose(ev.heel_strikes_s, [0.5], atol=0.011)
    np.testing.assert_allclose(ev.toe_offs_s, [1.2], atol=0.011)
    # a rollout's first frames settling onto the floor are no step; a reference's early strike is
    early = np.where(t > 0.03, 0.9, 0.0)
    assert len(gait_events.gait_events(t, early, gait_events.ON_BW, settle_s=0.1).heel_strikes_s) == 0
    assert len(gait_events.gait_events(t, early, gait_events.ON_BW).heel_strikes_s) == 1
    # without hysteresis the dip would be a toe-off and a second strike
    plain = gait_events.gait_events(t, f, gait_events.ON_BW, gait_events.ON_BW, min_swing_s=0.0)
    assert len(plain.heel_strikes_s) == 2


def test_locked_column_gets_no_r():
    t = np.linspace(0, 1, 101)
    locked = 1e-5 * np.sin(2 * np.pi * t)  # a locked subtalar: range 2e-5 deg
    sim = np.cos(2 * np.pi * t)
    m = metrics.column_metrics("angle:subtalar_angle_r", sim, locked, 100.0, unit="deg")
    assert not m.r_applicable and np.isnan(m.r) and np.isnan(m.r_at_lag) and np.isnan(m.nrmse)
    assert np.isfinite(m.rmse)
    # the same shape over a real range is compared
    m = metrics.column_metrics("angle:knee_angle_r", sim, 30 * np.cos(2 * np.pi * t), 100.0, unit="deg")
    assert m.r_applicable and m.r == pytest.approx(1.0)
    # a lag at the edge of the window is flagged
    m = metrics.column_metrics("x", sim, np.roll(sim, -20), 100.0, max_lag_s=0.1, unit="deg")
    assert m.lag_at_bound


def test_net_moment_is_muscle_plus_passive_plus_limit():
    """A hand-built myolegs state in the air: knee bent past its extension limit, muscles active,
    joints moving. The net moment is the three sources, and (no contact) equals the projection of
    actuator + passive + all constraint forces: the knee's coupling equalities project to zero."""
    model = load_model("myolegs")
    d = mujoco.MjData(model)
    coords = independent_coordinates(model)
    d.qpos[2] += 1.0  # lift the root: no ground contact
    knee = model.joint("knee_angle_r")
    d.qpos[knee.qposadr[0]] = np.radians(-6.0)  # past the lower bound (0 deg: full extension)
    from musclerl.models.couplings import apply_couplings

    d.qpos[:] = apply_couplings(model, d.qpos[None])[0]
    d.qvel[6:] = 0.3
    d.act[:] = 0.2
    mujoco.mj_forward(model, d)
    assert d.ncon == 0
    P = coupling_matrix(model, d.qpos, coords)
    m = joint_moments(model, d, P)
    k = coords.index("knee_angle_r")
    assert m.limit[k] > 1.0  # the limit pushes the knee back into flexion (its positive direction)
    others = [i for i, c in enumerate(coords) if c != "knee_angle_r"]
    np.testing.assert_allclose(m.limit[others], 0.0, atol=1e-9)
    np.testing.assert_allclose(m.net, m.muscle + m.passive + m.limit)
    np.testing.assert_allclose(m.passive, P @ d.qfrc_passive)
    independent = P @ (d.qfrc_actuator + d.qfrc_passive + d.qfrc_constraint)
    np.testing.assert_allclose(m.net, independent, rtol=1e-6, atol=1e-6 * np.abs(independent).max())
    assert np.abs(m.passive).max() > 0  # damping of the moving joints
    np.testing.assert_allclose(P @ limit_qfrc(model, d), m.limit)


def _ground_force_on_subtree(model, d, foot: int) -> np.ndarray:
    """World force (3,) of static bodies on the subtree of body ``foot``, from mj_contactForce."""

    def under(b: int) -> bool:
        while b > 0:
            if b == foot:
                return True
            b = int(model.body_parentid[b])
        return False

    total, f6 = np.zeros(3), np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        b1, b2 = int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])
        if model.body_rootid[b1] == 0 and under(b2):  # force of geom1 (ground) on geom2 (foot)
            mujoco.mj_contactForce(model, d, i, f6)
            total += c.frame.reshape(3, 3).T @ f6[:3]
        elif model.body_rootid[b2] == 0 and under(b1):
            mujoco.mj_contactForce(model, d, i, f6)
            total -= c.frame.reshape(3, 3).T @ f6[:3]
    return total


def test_rollout_grf_is_contact_force_per_foot():
    """A short rollout: each recorded foot force is mj_contactForce summed over the ground's contacts
    with that foot's subtree, rotated to world, and averaged over the physics steps of the control
    step that led to the frame -- recomputed here by replaying each control step with mj_step from
    a copy of the env's state (the replay lands on the env's next state to the bit)."""
    import copy

    from musclerl.envs.tracking import TrackingEnv
    from musclerl.rl.rollout import rollout

    env = TrackingEnv("tiny", REPO / "assets" / "motions" / "walk_tiny.npz", {}, backend="cpu", num_envs=1)
    states = []

    def act(obs):
        states.append(copy.copy(env.physics_data(0)))  # the state the last frame recorded
        return np.full((1, env.action_size), 0.3)

    rec = rollout(env, act, max_steps=20)
    model = env.model
    feet = [int(b) for b in env.world.foot_body_ids]
    coords = list(rec.coordinates)
    assert rec.grf_n.shape[1:] == (len(feet), 3) and len(states) >= rec.num_frames - 1

    def ground_forces(d):
        mujoco.mj_forward(model, d)
        return np.stack([_ground_force_on_subtree(model, d, f) for f in feet])

    start = ground_forces(copy.copy(states[0]))  # the first frame: its own state's
    np.testing.assert_allclose(rec.grf_n[0], start, atol=1e-6 * rec.body_weight_n)
    loaded = moved = 0
    for i in range(1, rec.num_frames):
        d = copy.copy(states[i - 1])
        d.ctrl[:] = states[i].ctrl  # the excitation space holds them over the control step
        per_step, net = [], []
        for _ in range(env.config.substeps):
            per_step.append(ground_forces(d))
            net.append(joint_moments(model, d, coupling_matrix(model, d.qpos, coords)).net)
            mujoco.mj_step(model, d)
        np.testing.assert_array_equal(d.qpos, states[i].qpos)
        np.testing.assert_allclose(rec.torque_nm[i], np.mean(net, axis=0), rtol=1e-9, atol=1e-9)
        want = np.mean(per_step, axis=0)
        np.testing.assert_allclose(rec.grf_n[i], want, atol=1e-6 * rec.body_weight_n)
        loaded += want[:, 2].sum() > 0.2 * rec.body_weight_n
        moved += np.abs(want - ground_forces(copy.copy(states[i]))).max() > 0.01 * rec.body_weight_n
    assert loaded >= rec.num_frames // 2  # it stands on its feet: the check compared real forces
    assert moved > 0  # where the force changes within a control step, the frame's own would differ
    assert env.config.substeps > 1  # a mean over several physics steps was checked


def test_published_figures_computed_like_the_published_ones():
    """The kinematics figure is the mean over the left hip, knee, ankle angle and vertical GRF of r
    between the across-trial mean cycles; a trial without cycles does not enter it."""
    from musclerl.evaluate.published import KINEMATICS_L, PUBLISHED, published_rows
    from musclerl.evaluate.trial import TrialResult

    x = np.linspace(0, 2 * np.pi, 101)
    rng = np.random.default_rng(0)

    def trial(name, with_cycles):
        means = {
            k: (np.sin(x + 0.3 * i) + 0.1 * rng.standard_normal(101), np.sin(x))
            for i, k in enumerate(KINEMATICS_L)
        }
        columns = [
            {
                "kind": k.partition(":")[0],
                "column": k.partition(":")[2],
                "r": 0.5,
                "cycle_r": 0.9 if with_cycles else np.nan,
            }
            for k in KINEMATICS_L
        ]
        return TrialResult(name, "S1", {}, columns, {}, "trial", [], {}, means if with_cycles else {})

    results = [trial("a", True), trial("b", True), trial("c", False)]
    rows = {(r["figure"], r["against"]): r for r in published_rows(results)}
    fig = next(f for f in PUBLISHED if f.label == "kinematics r" and f.value == 0.94)
    row = rows[(fig.label, fig.against)]
    want = []
    for k in KINEMATICS_L:
        sim = np.mean([r.cycle_means[k][0] for r in results[:2]], axis=0)
        want.append(np.corrcoef(sim, np.sin(x))[0, 1])
    assert row["pooled_cycle_r"] == pytest.approx(np.mean(want)) and row["pooled_trials"] == 2
    assert row["trial_cycle_r"] == pytest.approx(0.9) and row["trial_cycle_n"] == 2
    assert row["trial_time_r"] == pytest.approx(0.5) and row["trial_time_n"] == 3
    assert {f.value for f in PUBLISHED} >= {0.94, 0.71, 0.92, 0.46, 0.49, 0.77}


def test_gait_cycles_of_a_real_boo_trial(shared_data, tmp_path):
    """The 2.5 s fixture trial in Boo's two-plate names: per foot the heel strikes of the raw plates
    (found on the 600 Hz file) to a kinematics frame, so a gait cycle per foot."""
    import sys

    if not (shared_data / "opensim_gait10dof18musc").is_dir():
        pytest.skip("../shared/data/opensim_gait10dof18musc absent")
    sys.path.insert(0, str(REPO / "tests"))
    from boo_fixtures import write_long_trial

    from musclerl.evaluate import compare
    from musclerl.motion.reference import read_reference
    from musclerl.motion.storage import read_storage

    ref = read_reference(write_long_trial(tmp_path, data=shared_data))
    assert "ground_force_r_vy" in ref.computed_grf_columns
    grf = read_storage(shared_data / "opensim_gait2354" / "subject01_walk1_grf.mot")
    weight_n = 72.6 * 9.80665
    for side, plate in (("r", "ground_force_vy"), ("l", "1_ground_force_vy")):
        raw = gait_events.gait_events(grf.time_s, grf.column(plate), 0.05 * weight_n, 0.03 * weight_n)
        want = raw.heel_strikes_s[raw.heel_strikes_s <= ref.time_sec[-1]]
        found = compare.reference_heel_strikes(ref, side)
        np.testing.assert_allclose(found, want, atol=1.0 / 60)
        assert len(found) >= 2


def test_each_column_is_cut_at_its_own_legs_strikes():
    """A left column is cut at the left strikes, an EMG channel at its muscles' leg's."""
    from musclerl.evaluate import compare

    t = np.linspace(0, 4, 401)
    strikes = {"r": np.array([0.0, 1.0, 2.0, 3.0]), "l": np.array([0.5, 1.5, 2.5, 3.5])}
    sig = np.sin(2 * np.pi * (t - 0.5))  # phase-locked to the left strikes
    series = [
        compare.Series("angle", "knee_angle_l", "deg", t, 30 * sig, 30 * sig, np.ones_like(t, bool)),
        compare.Series("emg", "TA (tibant_l)", "0-1", t, sig, sig, np.ones_like(t, bool)),
    ]
    for c in compare.cycle_comparisons(series, strikes, strikes):
        assert c.sim.count == 3
        np.testing.assert_allclose(c.sim.bounds_s[:, 0], strikes["l"][:-1])
    assert compare.leg_of("SOL (soleus_r+gasmed_l)") is None and compare.leg_of("hip_flexion_r") == "r"


def test_knee_at_its_limit_counts_stance_frames_and_spares_a_person_who_stands_straight():
    """Stance frames with the knee within 1 deg of a bound: all of them, and those where the
    tracked motion keeps the knee more than 5 deg from that bound (a person who stands on a
    straight knee is copied, not locked)."""
    from types import SimpleNamespace

    from musclerl.evaluate.headline import knee_at_limit_fraction

    knee_deg = np.array([0.2, 0.5, 0.9, 3.0, 20.0, 0.1, 40.0, 0.0])  # the policy's knee
    target_deg = np.array([2.0, 15.0, 18.0, 16.0, 20.0, 1.0, 40.0, 17.0])  # the motion's
    stance = np.array([1, 1, 1, 1, 1, 1, 0, 0], dtype=bool)
    rec = SimpleNamespace(
        coordinates=["hip_flexion_r", "knee_angle_r"],
        angle=np.c_[np.zeros(8), knee_deg],
        coordinate_range=np.array([[-30.0, 120.0], [0.0, 120.0]]),
    )
    # stance frames 0, 1, 2, 5 sit within 1 deg of 0: 4 of 6
    assert knee_at_limit_fraction(rec, stance, "r") == pytest.approx(4 / 6)
    # of those, frames 0 and 5 copy a motion at 2 and 1 deg: 2 of 6 are locked
    assert knee_at_limit_fraction(rec, stance, "r", target_deg=target_deg) == pytest.approx(2 / 6)
    assert np.isnan(knee_at_limit_fraction(rec, np.zeros(8, bool), "r"))
    assert np.isnan(knee_at_limit_fraction(rec, stance, "l"))


def test_joints_parked_on_a_bound_the_motion_does_not_reach():
    """Every coordinate with a range and a target: the share of all frames within 1 deg of either
    bound where the motion is more than 5 deg from it (the toes held on their -30 deg stop, the
    knee on 0 in swing); an unlimited or untracked coordinate has no figure."""
    from types import SimpleNamespace

    from musclerl.evaluate.headline import BOUND_KEY, bounds_beyond_motion

    toes_deg = np.array([-29.5, -30.0, -30.4, -12.0, -29.9, 0.0, -30.0, -30.0])  # policy
    toes_target = np.array([0.0, 0.0, -2.0, -10.0, -28.0, 0.0, 3.0, -26.0])  # motion (bends at toe-off)
    knee_deg = np.array([119.5, 60.0, 0.0, 0.3, 1.0, 30.0, 2.0, 50.0])
    knee_target = np.array([100.0, 60.0, 0.5, 10.0, 8.0, 30.0, 2.0, 50.0])
    rec = SimpleNamespace(
        time_s=np.arange(8) * 0.02,
        coordinates=["mtp_angle_r", "knee_angle_r", "pelvis_free", "hip_rotation_r"],
        angle=np.c_[toes_deg, knee_deg, np.zeros(8), np.zeros(8)],
        coordinate_range=np.array([[-30.0, 30.0], [0.0, 120.0], [np.nan, np.nan], [-40.0, 40.0]]),
    )
    got = bounds_beyond_motion(
        rec, {"mtp_angle_r": toes_target, "knee_angle_r": knee_target, "pelvis_free": np.zeros(8)}
    )
    # toes: frames 0, 1, 2, 6 on the stop with the motion clear of it (frame 4: the motion is at
    # -28, within 5 deg of the stop: copied, not parked; frame 7: -26 is 4 deg from it)
    assert got[BOUND_KEY + "mtp_angle_r"] == pytest.approx(4 / 8)
    # knee: frame 0 at the upper bound (motion 100), frames 3 and 4 at 0 (motion 10 and 8);
    # frame 2's motion stands at 0.5 deg (copied)
    assert got[BOUND_KEY + "knee_angle_r"] == pytest.approx(3 / 8)
    assert set(got) == {BOUND_KEY + "mtp_angle_r", BOUND_KEY + "knee_angle_r"}  # unlimited / untracked


FEET = ("calcn_r", "toes_r", "calcn_l", "toes_l")


def test_kinematic_events_of_a_real_walk_agree_with_its_plates(shared_data, tmp_path):
    """Zeni's rule on the gait2354 person's walk (its joint angles played on myolegs, as
    ``evaluate --reference`` tracks it) against the same trial's two force plates: every heel
    strike and toe-off the plates see is found, within 50 ms (Zeni et al. report their rule within
    about two frames of 60 Hz plates on healthy walking; 50 ms is where an event would be
    mistaken for the neighbouring phase of the aims' 30 ms timing)."""
    import sys

    if not (shared_data / "opensim_gait10dof18musc").is_dir():
        pytest.skip("../shared/data/opensim_gait10dof18musc absent")
    sys.path.insert(0, str(REPO / "tests"))
    from boo_fixtures import write_long_trial

    from musclerl.evaluate.reference_motion import reference_signs, reference_trajectory
    from musclerl.motion.reference import read_reference

    path = write_long_trial(tmp_path, data=shared_data)
    ref = read_reference(path)
    model = load_model("myolegs")
    signs, _ = reference_signs(ref, {})
    clip = reference_trajectory(model, "myolegs", ref, signs, path)[0].clip(0)
    time_s = np.arange(clip.num_frames) / clip.rate_hz + float(ref.time_sec[0])
    kinematic = gait_events.kinematic_events(model, clip.qpos, time_s, FEET)
    plates = gait_events.reference_foot_grf(ref)
    matched = 0
    for side in gait_events.SIDES:
        for attr in ("heel_strikes_s", "toe_offs_s"):
            want = getattr(plates.events(side), attr)
            got = getattr(kinematic[side], attr)
            for t in want[(want > time_s[0] + 0.1) & (want < time_s[-1] - 0.1)]:
                assert np.min(np.abs(got - t)) <= 0.05, (side, attr, t, got)
                matched += 1
    assert matched >= 4
    # the person lands after the heel's farthest reach, within a few frames of it
    from musclerl.evaluate.headline import touchdown_delays_ms

    plate_events = {side: plates.events(side) for side in gait_events.SIDES}
    for side, delay_ms in touchdown_delays_ms(plate_events, kinematic).items():
        assert 0.0 < delay_ms < 60.0, (side, delay_ms)


def _looped_walk(rate_hz: float, cycles: int = 3) -> tuple[np.ndarray, np.ndarray, mujoco.MjModel]:
    """The bundled walk (one looping gait cycle) played ``cycles`` times, its root carried on by
    the cycle's travel, resampled to ``rate_hz`` (linear in every coordinate: the quaternion's
    error is far below what moves an event)."""
    from musclerl.motion.trajectory import Trajectory

    clip = Trajectory.load(REPO / "assets" / "motions" / "walk_myolegs.npz").clip(0)
    period_s = clip.num_frames / clip.rate_hz
    travel = clip.qpos[-1, :2] + (clip.qpos[-1, :2] - clip.qpos[-2, :2]) - clip.qpos[0, :2]
    parts = []
    for k in range(cycles):
        q = clip.qpos.copy()
        q[:, :2] += k * travel
        parts.append(q)
    qpos = np.concatenate(parts)
    src_s = np.arange(len(qpos)) / clip.rate_hz
    time_s = np.arange(0.0, cycles * period_s - 1.0 / clip.rate_hz, 1.0 / rate_hz)
    out = np.stack([np.interp(time_s, src_s, qpos[:, j]) for j in range(qpos.shape[1])], axis=1)
    out[:, 3:7] /= np.linalg.norm(out[:, 3:7], axis=1, keepdims=True)
    return time_s, out, load_model("myolegs")


def test_kinematic_events_do_not_depend_on_the_sampling_rate():
    """The policy is recorded at 50 Hz and a clip at its own rate: the same motion sampled at
    30 Hz (the bundled walk's) and 50 Hz gives the same events within a 50 Hz frame, so a policy
    that moved exactly like its reference would be timed at zero error. One heel strike and one
    toe-off per foot per cycle, a cycle apart."""
    slow_s, slow_q, model = _looped_walk(30.0)
    fast_s, fast_q, _ = _looped_walk(50.0)
    slow = gait_events.kinematic_events(model, slow_q, slow_s, FEET)
    fast = gait_events.kinematic_events(model, fast_q, fast_s, FEET)
    period_s = slow_s[-1] / 3
    for side in gait_events.SIDES:
        for attr in ("heel_strikes_s", "toe_offs_s"):
            a, b = getattr(slow[side], attr), getattr(fast[side], attr)
            assert len(a) == len(b) >= 2, (side, attr, a, b)
            np.testing.assert_allclose(a, b, atol=0.02)
            np.testing.assert_allclose(np.diff(a), period_s, atol=0.04)
        # stance runs from each heel strike to the toe-off after it
        ev = fast[side]
        strike = ev.heel_strikes_s[0]
        toe_off = ev.toe_offs_s[ev.toe_offs_s > strike][0]
        inside = (fast_s > strike + 0.03) & (fast_s < toe_off - 0.03)
        assert ev.stance[inside].all()


def test_standing_still_has_no_kinematic_events():
    """A body standing in one pose (feet under the pelvis, no fore-aft swing) takes no step."""
    _, qpos, model = _looped_walk(50.0)
    still = np.repeat(qpos[:1], 100, axis=0)
    still[:, :2] += np.linspace(0.0, 0.001, 100)[:, None]  # a sway of a millimetre
    events = gait_events.kinematic_events(model, still, np.arange(100) / 50.0, FEET)
    for side in gait_events.SIDES:
        assert len(events[side].heel_strikes_s) == 0 and len(events[side].toe_offs_s) == 0


def test_touchdown_delay_is_the_force_strike_after_the_kinematic_one():
    """Each force heel strike paired with the kinematic strike nearest it: a foot landing 40 ms
    after its farthest reach on the right and 120 ms on the left reads 40 and 120; an unpaired
    side (no force strike within 0.3 s) is NaN."""
    from musclerl.evaluate.headline import touchdown_delays_ms

    reach = np.array([0.5, 1.6, 2.7])
    none = np.zeros(0)

    def ev(strikes):
        return gait_events.GaitEvents(np.asarray(strikes), none, np.zeros(10, bool))

    force = {"r": ev(reach + 0.04), "l": ev(reach + 0.12)}
    kinematic = {"r": ev(reach), "l": ev(reach)}
    delays = touchdown_delays_ms(force, kinematic)
    assert delays["r"] == pytest.approx(40.0) and delays["l"] == pytest.approx(120.0)
    assert np.isnan(touchdown_delays_ms({"r": ev(reach + 0.5), "l": ev(none)}, kinematic)["l"])


def test_steps_of_a_walk_make_its_speed():
    """Step length and cadence of the looped bundled walk: two steps per gait cycle, so the
    cadence is 120 / period, and length times cadence is the pelvis' speed (within 5 %: step
    lengths are measured between heels at each strike, the speed over the laps). Cut at
    ``until_s``, only the steps before it count."""
    time_s, qpos, model = _looped_walk(50.0, cycles=4)
    period_s = time_s[-1] / 4
    gait = gait_events.kinematic_gait(model, qpos, time_s, FEET)
    steps = gait_events.spatiotemporal(gait)
    assert steps["steps"] >= 5
    assert steps["cadence_spm"] == pytest.approx(120.0 / period_s, rel=0.02)
    speed_mps = np.linalg.norm(qpos[-1, :2] - qpos[0, :2]) / (time_s[-1] - time_s[0])
    assert steps["step_length_m"] * steps["cadence_spm"] / 60.0 == pytest.approx(speed_mps, rel=0.05)
    early = gait_events.spatiotemporal(gait, until_s=1.5 * period_s)
    assert 1 <= early["steps"] < steps["steps"]
