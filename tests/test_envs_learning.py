"""The pieces that make tracking learnable, each on a fixed state: PD inversion, termination,
reward calibration, resampling, the action spaces and the exported policy's bounds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest

from musclerl.envs import EnvConfig, TrackingEnv
from musclerl.envs.actions import MuscleParams, make_action_space, muscle_gain_bias
from musclerl.envs.config import ActionConfig
from musclerl.envs.reference import lookup
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import resample
from musclerl.retarget.keypoints.finish import on_flat_floor

BUNDLED_WALK = Path(__file__).resolve().parents[1] / "assets" / "motions" / "walk_myolegs.npz"


@pytest.fixture(scope="module")
def myolegs_env():
    cfg = EnvConfig.from_dict({"sampling": {"rsi": False}})
    return TrackingEnv("myolegs", BUNDLED_WALK, cfg, backend="cpu", num_envs=1)


def _state_at(env: TrackingEnv, time_s: float):
    """Env state set exactly to the reference at ``time_s`` (positions, velocities)."""
    state = env.reset(0, clip=np.array([0]), time_s=np.array([time_s]))
    ref = lookup(env.reference.as_arrays(np), np.array([0]), np.array([time_s]), np)
    return state, ref


def _moving_myolegs(seed: int):
    """myolegs with the right knee bent and random joint velocities: (model, data after
    mj_forward, peak isometric forces (nu,), MuscleParams)."""
    model = load_model("myolegs")
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    data.qpos[model.joint("knee_angle_r").qposadr[0]] = -0.6
    data.qvel[:] = np.random.default_rng(seed).normal(0, 0.5, model.nv)
    mujoco.mj_forward(model, data)
    peak = model.actuator_gainprm[:, 2]
    return model, data, peak, MuscleParams.from_model(model, peak)


def test_muscle_gain_bias_match_mujoco_and_pd_force_is_produced():
    model, data, peak, params = _moving_myolegs(seed=0)
    length, velocity = data.actuator_length[None].copy(), data.actuator_velocity[None].copy()
    gain, bias = (np.asarray(x)[0] for x in muscle_gain_bias(params, length, velocity))
    for i in range(model.nu):
        lr, acc0 = model.actuator_lengthrange[i], model.actuator_acc0[i]
        assert gain[i] == pytest.approx(
            mujoco.mju_muscleGain(length[0, i], velocity[0, i], lr, acc0, model.actuator_gainprm[i, :9]),
            rel=1e-4,
            abs=1e-3,  # jax float32 against MuJoCo's float64, on forces of hundreds of N
        )
        assert bias[i] == pytest.approx(
            mujoco.mju_muscleBias(length[0, i], lr, acc0, model.actuator_biasprm[i, :9]), rel=1e-4, abs=1e-3
        )
    # muscle_length_pd: the excitation, held as the activation, produces the commanded PD force
    space = make_action_space(ActionConfig(space="muscle_length_pd", kp=30.0, kd_ratio=0.1), params)
    action = np.random.default_rng(1).uniform(-1, 1, (1, model.nu))
    target_len, target_vel = space.targets(action, {}, np)
    excitation = space.pd(target_len, target_vel, length, velocity, np)
    commanded = np.clip(30 * peak * (target_len - length) - 3 * peak * velocity, -peak, 0.0)[0]
    data.act[:] = excitation[0]
    mujoco.mj_forward(model, data)
    inside = (excitation[0] > 1e-6) & (excitation[0] < 1 - 1e-6)
    assert inside.sum() > 10  # the test exercises the unsaturated case on many muscles
    np.testing.assert_allclose(data.actuator_force[inside], commanded[inside], rtol=1e-4, atol=1e-3)
    # unexcited ones: asked for less pull than the passive force gives, they are left passive
    low = excitation[0] <= 1e-6
    np.testing.assert_allclose(data.actuator_force[low], bias[low], atol=1e-3)
    assert np.all(bias[low] <= commanded[low] + 1e-3)


def test_feedforward_adds_the_pd_force_to_the_reference_activations_force():
    """Computed muscle control: at zero PD error the excitation is the reference's activation;
    otherwise the muscle force is the feedforward activation's force plus the PD force."""
    model, data, peak, params = _moving_myolegs(seed=2)
    space = make_action_space(
        ActionConfig(space="reference_pd", kp=30.0, kd_ratio=0.1, feedforward=True), params
    )
    length, velocity = data.actuator_length[None].copy(), data.actuator_velocity[None].copy()
    a_ref = np.random.default_rng(3).uniform(0.1, 0.6, (1, model.nu))
    np.testing.assert_allclose(space.pd(length, velocity, length, velocity, np, a_ref), a_ref, atol=1e-6)
    target = length + np.random.default_rng(4).normal(0, 0.002, length.shape)  # a few mm
    excitation = space.pd(target, velocity, length, velocity, np, a_ref)
    data.act[:] = a_ref[0]
    mujoco.mj_forward(model, data)
    reference_force = data.actuator_force.copy()
    data.act[:] = excitation[0]
    mujoco.mj_forward(model, data)
    inside = (excitation[0] > 1e-6) & (excitation[0] < 1 - 1e-6)
    assert inside.sum() > 60
    commanded = reference_force + (30 * peak * (target - length))[0]
    np.testing.assert_allclose(data.actuator_force[inside], commanded[inside], rtol=1e-4, atol=1e-2)
    with pytest.raises(Exception, match="feedforward needs a reference space"):
        EnvConfig.from_dict({"action": {"space": "excitation", "feedforward": True}})


def test_reference_pd_neutral_action_targets_the_reference(myolegs_env):
    env = TrackingEnv(
        "myolegs",
        BUNDLED_WALK,
        EnvConfig.from_dict({"action": {"space": "reference_pd"}}),
        backend="cpu",
        num_envs=1,
    )
    _, ref = _state_at(env, 0.3)
    target_len, target_vel = env.actions.targets(np.zeros((1, env.action_size)), ref, np)
    np.testing.assert_allclose(target_len, ref["muscle_length_m"])
    np.testing.assert_allclose(target_vel, ref["muscle_velocity_mps"])
    np.testing.assert_array_equal(env.actions.neutral, 0.0)
    assert np.all(env.actions.low == -1) and np.all(env.actions.high == 1)


def test_reward_is_maximal_at_the_reference_and_standing_still_earns_under_half(myolegs_env):
    env = myolegs_env
    cfg = env.config
    from musclerl.envs.rewards import reward_terms, tracking_errors

    period_s = env.reference.clip_duration_s[0] + env.control_dt_s
    times = np.arange(0.0, period_s, env.control_dt_s)
    still, moving = [], []
    standing_state, _ = _state_at(env, 0.0)
    standing = env.kinematics(standing_state)
    zeros = np.zeros((1, env.model.nu))
    for t in times:
        state, ref = _state_at(env, float(t))
        kin = env.kinematics(state)
        terms = reward_terms(tracking_errors(kin.replace(ctrl=zeros), ref, zeros, np), cfg.reward, np)
        for term in ("joint_pos", "root_pos", "site_pos", "site_ori"):
            assert terms[f"reward/{term}"][0] == pytest.approx(cfg.weight(term), abs=1e-6)
        moving.append(terms["reward/total"][0])
        # the first frame's pose, standing still (zero velocity) while the reference walks on
        still_kin = standing.replace(
            qvel=standing.qvel * 0, site_vel_mps=standing.site_vel_mps * 0, act=kin.act, ctrl=zeros
        )
        still_terms = reward_terms(tracking_errors(still_kin, ref, zeros, np), cfg.reward, np)
        still.append(still_terms["reward/total"][0])
    perfect = float(np.mean(moving))
    assert perfect > 0.97  # velocities are interpolated, so their terms are nearly, not exactly, 1
    assert np.mean(still) <= 0.5 * perfect


def test_termination_fires_on_falls_not_on_drift(myolegs_env):
    env = myolegs_env
    state, ref = _state_at(env, 0.2)
    qpos, qvel, act = ref["qpos"].copy(), ref["qvel"].copy(), np.zeros((1, env.model.na))

    def step_from(q):
        """One zero-excitation control step from pose ``q``; the termination reasons."""
        s = env.with_physics(state, q, qvel, act)
        s = env.step(s, np.tile(env.actions.neutral, (1, 1)))
        return {k[5:] for k, v in s.metrics.items() if k.startswith("term/") and v[0] > 0}

    assert step_from(qpos) == set()
    drifted = qpos.copy()
    drifted[0, :2] += 0.3  # 30 cm away but upright and in the right pose: the reward's root term pays
    assert step_from(drifted) == set()
    far = qpos.copy()
    far[0, :2] += 0.8
    assert step_from(far) == {"root_deviation"}
    lying = qpos.copy()
    lying[0, 2] = 0.25
    assert "height" in step_from(lying)
    tilted = qpos.copy()
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, np.array([np.cos(0.5), np.sin(0.5), 0.0, 0.0]), qpos[0, 3:7])  # 57 deg roll
    tilted[0, 3:7] = quat
    assert "tilt" in step_from(tilted)


def test_resample_keeps_a_looping_clip_and_its_period():
    from musclerl.motion.trajectory import Trajectory

    model = load_model("myolegs")
    traj = Trajectory.load(BUNDLED_WALK)
    period_s = traj.num_frames / traj.rate_hz
    fine = resample(traj, model, 3 * traj.rate_hz)
    assert fine.num_frames == 3 * traj.num_frames
    assert fine.num_frames / fine.rate_hz == pytest.approx(period_s)
    np.testing.assert_allclose(fine.qpos[::3], traj.qpos, atol=1e-9)  # the original frames are kept
    back = resample(fine, model, traj.rate_hz)
    np.testing.assert_allclose(back.qpos, traj.qpos, atol=1e-9)


def test_on_flat_floor_lowers_a_flat_recovered_ground():
    from musclerl.motion.trajectory import Terrain, Trajectory

    traj = Trajectory.load(BUNDLED_WALK)
    ground = Terrain(np.full((3, 3), 0.01) + np.array([0.0, 0.005, 0.0]), np.zeros(2), 0.5)
    qpos = traj.qpos.copy()
    qpos[:, 2] += 0.015
    raised = dataclasses.replace(traj, terrain=ground, qpos=qpos)
    flat = on_flat_floor(raised)
    assert flat.terrain is None
    np.testing.assert_allclose(flat.qpos[:, 2], traj.qpos[:, 2] + 0.015 - ground.height_m.mean())
    steep = Terrain(np.array([[0.0, 0.1], [0.0, 0.1]]), np.zeros(2), 0.5)
    kept = on_flat_floor(dataclasses.replace(traj, terrain=steep))
    assert kept.terrain is steep
