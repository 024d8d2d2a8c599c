"""TrackingEnv on the cpu backend (tiny model): API, rewards by hand, termination vs truncation,
RSI coverage, NaN resets, terrain, config errors."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from musclerl.envs import EnvConfig, TrackingEnv
from musclerl.envs.motions import sine_dataset, sine_gait
from musclerl.envs.reference import LIMIT_FIELDS, lookup
from musclerl.envs.rewards import REWARD_TERMS, reward_terms, term_names, tracking_errors
from musclerl.errors import InputError
from musclerl.motion.trajectory import Terrain


@pytest.fixture(scope="module")
def dataset():
    return sine_dataset("tiny", num_clips=3, duration_s=2.0, rate_hz=50.0)


@pytest.fixture(scope="module")
def env(dataset):
    return TrackingEnv("tiny", dataset, EnvConfig(), backend="cpu", num_envs=8, threads=1)


def test_reset_and_step_shapes(env):
    state = env.reset(0)
    n = env.num_envs
    assert state.obs.shape == (n, env.observation_size)
    assert env.action_size == env.model.nu == 6
    assert sum(env.obs_pieces.values()) == env.observation_size
    state = env.step(state, np.full((n, env.action_size), 2.0))  # out of range: clipped
    assert np.all(state.info["last_action"] == 1.0)
    for key in [f"reward/{t}" for t in REWARD_TERMS] + ["site_err_m", "nan_reset"]:
        assert state.metrics[key].shape == (n,)
    np.testing.assert_allclose(
        sum(state.metrics[f"reward/{t}"] for t in REWARD_TERMS), state.reward, rtol=1e-12
    )
    assert np.all(np.isfinite(state.obs)) and np.all(np.isfinite(state.reward))
    assert np.all(state.info["steps"][~state.done] == 1)


def test_reset_at_reference_reproduces_reference_sites(env, dataset):
    clip, t = np.array([0, 1, 2, 2, 0, 1, 2, 0]), np.array([0.0, 0.2, 0.4, 1.98, 1.0, 1.5, 0.0, 0.5])
    state = env.reset(1, clip=clip, time_s=t)
    kin = env.kinematics(state)
    target = lookup(env.reference.as_arrays(np), clip, t, np)
    np.testing.assert_allclose(kin.qpos, target["qpos"], atol=1e-12)
    np.testing.assert_allclose(kin.site_pos_m, target["site_pos_m"], atol=1e-9)
    np.testing.assert_allclose(
        kin.site_vel_mps, target["site_vel_mps"], atol=1e-9
    )  # cvel formula = mj_objectVelocity
    errors = tracking_errors(kin, target, kin.ctrl, np)
    assert np.all(errors["site_err_m"] < 1e-9) and np.all(errors["site_ori"] < 1e-12)


def _hand_terms(model, site_ids, foot_ids, qpos, qvel, ref_qpos, ref_qvel, act, action, last, cfg, acc):
    """Reward terms of one env from MuJoCo C directly (mj_objectVelocity, quaternion angles)."""

    def sites(q, v):
        d = mujoco.MjData(model)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(model, d)
        feet = d.xpos[foot_ids].copy()
        pos = d.site_xpos[site_ids].copy()
        quat = np.zeros((len(site_ids), 4))
        vel = np.zeros((len(site_ids), 3))
        for i, s in enumerate(site_ids):
            mujoco.mju_mat2Quat(quat[i], d.site_xmat[s])
            v6 = np.zeros(6)
            mujoco.mj_objectVelocity(model, d, mujoco.mjtObj.mjOBJ_SITE, int(s), v6, 0)
            vel[i] = v6[3:]
        return pos, quat, vel, feet - feet.mean(axis=0)

    pos, quat, vel, feet = sites(qpos, qvel)
    rpos, rquat, rvel, rfeet = sites(ref_qpos, ref_qvel)
    root_angle = 2 * np.arccos(min(abs(float(np.dot(qpos[3:7], ref_qpos[3:7]))), 1.0))
    angle = np.array(
        [2 * np.arccos(min(abs(float(np.dot(a, b))), 1.0)) for a, b in zip(quat, rquat, strict=True)]
    )
    mse = {
        "joint_pos": np.mean((qpos[7:] - ref_qpos[7:]) ** 2),
        "joint_vel": np.mean((qvel[6:] - ref_qvel[6:]) ** 2),
        "root_pos": np.mean((qpos[:3] - ref_qpos[:3]) ** 2),
        "root_vel": np.mean((qvel[:6] - ref_qvel[:6]) ** 2),
        "root_ori": root_angle**2,
        "site_pos": np.mean(((pos - qpos[:3]) - (rpos - ref_qpos[:3])) ** 2),
        "site_ori": np.mean(angle**2),
        "site_vel": np.mean((vel - rvel) ** 2),
        "feet_rel": np.mean((feet - rfeet) ** 2),
        "com_acc": np.mean((acc / 9.81) ** 2),
    }
    out = {t: cfg.reward.weights[t] * np.exp(-cfg.reward.scales[t] * mse[t]) for t in term_names("tracking")}
    out["activation_energy"] = -cfg.reward.activation_energy * np.mean(act**2)
    out["action_rate"] = -cfg.reward.action_rate * np.mean((action - last) ** 2)
    depth = []
    for j in range(1, model.njnt):  # every hinge after the free root is limited and independent
        low, high = model.jnt_range[j]
        a = model.jnt_qposadr[j]
        if min(ref_qpos[a] - low, high - ref_qpos[a]) > 0.1:
            depth.append(np.clip(1 - min(qpos[a] - low, high - qpos[a]) / 0.1, 0, 1) ** 2)
    out["joint_limit"] = -cfg.reward.weight("joint_limit") * max(depth, default=0.0)
    return out, float(np.mean(np.linalg.norm(pos - rpos, axis=1)))


def test_reward_terms_match_hand_computation(env):
    state = env.reset(2, clip=np.zeros(8, int), time_s=np.full(8, 0.5))
    rng = np.random.default_rng(3)
    qpos = env.kinematics(state).qpos.copy()
    qvel = env.kinematics(state).qvel.copy()
    qpos[:, :3] += rng.normal(0, 0.03, (8, 3))
    qpos[:, 7:] += rng.normal(0, 0.1, (8, 6))
    quat = qpos[:, 3:7] + rng.normal(0, 0.05, (8, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qvel += rng.normal(0, 0.3, qvel.shape)
    act = rng.uniform(0, 1, (8, 6))
    fixed = env.with_physics(state, qpos, qvel, act)
    kin = env.kinematics(fixed)
    target = lookup(env.reference.as_arrays(np), fixed.info["clip"], fixed.info["time_s"], np)
    action, last = rng.uniform(0, 1, (8, 6)), rng.uniform(0, 1, (8, 6))
    acc = rng.normal(0.0, 3.0, (8, 3))  # the centre of mass's acceleration error, m/s^2
    errors = tracking_errors(kin.replace(ctrl=action, com_acc_err_mps2=acc), target, last, np)
    reward = env.config.reward
    cfg = dataclasses.replace(
        env.config,
        reward=dataclasses.replace(
            reward, weights={**reward.weights, "com_acc": 0.1, "root_ori": 0.1, "feet_rel": 0.1}
        ),
    )
    terms = reward_terms(errors, cfg.reward, np)
    for i in range(8):
        hand, site_err = _hand_terms(
            env.model,
            env.world.site_ids,
            env.world.foot_body_ids,
            qpos[i],
            qvel[i],
            target["qpos"][i],
            target["qvel"][i],
            act[i],
            action[i],
            last[i],
            cfg,
            acc[i],
        )
        for term, value in hand.items():
            assert terms[f"reward/{term}"][i] == pytest.approx(value, rel=1e-6, abs=1e-9), term
        assert errors["site_err_m"][i] == pytest.approx(site_err, rel=1e-9)
    assert set(hand) == set(REWARD_TERMS)  # every registered term is checked by hand
    for term in term_names("tracking"):  # the state is really off the reference in every term
        assert np.all(terms[f"reward/{term}"] < (1 - 1e-4) * cfg.reward.weights[term]), term
    # penalties are bounded by their weights
    assert np.all(terms["reward/activation_energy"] >= -env.config.reward.activation_energy)
    assert np.all(terms["reward/action_rate"] >= -env.config.reward.action_rate)


def test_truncation_at_horizon_is_not_termination(dataset):
    cfg = EnvConfig.from_dict(
        {"horizon": 3, "termination": {"site_deviation_m": 10.0, "root_height_min_m": 0.0}}
    )
    env = TrackingEnv("tiny", dataset, cfg, num_envs=4)
    state = env.reset(0, clip=np.array([2, 2, 2, 2]), time_s=np.zeros(4))  # looping clip: no clip end
    for _ in range(2):
        state = env.step(state, np.full((4, 6), 0.1))
        assert not state.done.any()
    state = env.step(state, np.full((4, 6), 0.1))
    assert state.truncated.all() and not state.terminated.any() and state.done.all()
    assert np.all(state.info["steps"] == 0)  # auto-reset happened
    assert not np.allclose(state.info["terminal_obs"], state.obs)  # obs before vs after the reset


def test_truncation_at_end_of_non_looping_clip(dataset):
    cfg = EnvConfig.from_dict({"termination": {"site_deviation_m": 10.0, "root_height_min_m": 0.0}})
    env = TrackingEnv("tiny", dataset, cfg, num_envs=2)
    last_s = (env.reference.clip_lengths[0] - 1) / env.reference.rate_hz
    start = last_s - 1.5 * env.control_dt_s  # exactly one more step fits into clip 0
    state = env.reset(0, clip=np.array([0, 2]), time_s=np.array([start, last_s]))
    state = env.step(state, np.full((2, 6), 0.1))
    assert state.truncated[0] and not state.terminated[0]
    assert not state.done[1]  # clip 2 loops: its end does not truncate


def test_termination_on_site_deviation_and_root_height(env):
    state = env.reset(0, clip=np.zeros(8, int), time_s=np.full(8, 0.3))
    kin = env.kinematics(state)
    qpos = kin.qpos.copy()
    qpos[0, 0] += 1.0  # 1 m off the reference: site deviation
    qpos[1, 2] = 0.2  # root below the height band
    state = env.with_physics(state, qpos, kin.qvel, kin.act)
    state = env.step(state, np.zeros((8, 6)))
    assert state.terminated[0] and state.terminated[1]
    assert not state.truncated[0] and not state.truncated[1]
    assert state.metrics["site_err_m"][0] > env.config.termination.site_deviation_m
    assert not state.terminated[2:].any()


def test_rsi_covers_all_clips_and_valid_frames(dataset):
    env = TrackingEnv("tiny", dataset, EnvConfig(), num_envs=300)
    state = env.reset(5)
    clips = state.info["clip"]
    assert set(np.unique(clips)) == {0, 1, 2}
    ref = env.reference
    for c in range(3):
        times = state.info["time_s"][clips == c]
        last_s = (ref.clip_lengths[c] - 1) / ref.rate_hz
        assert times.min() >= 0
        limit = last_s if ref.clip_loop[c] else last_s - env.control_dt_s + 1e-9
        assert times.max() <= limit + 1.0 / ref.rate_hz
        assert len(np.unique(times)) > 10  # random times, not a fixed start
    frames = state.info["frame"]
    np.testing.assert_allclose(env.kinematics(state).qpos[:, 3:], ref.qpos[frames, 3:], atol=1e-12)
    # auto-resets also sample: done envs after a forced failure land on several clips
    qpos = env.kinematics(state).qpos.copy()
    qpos[:, 2] = 0.1
    state = env.with_physics(state, qpos, env.kinematics(state).qvel, env.kinematics(state).act)
    state = env.step(state, np.zeros((300, 6)))
    assert state.done.all() and set(np.unique(state.info["clip"])) == {0, 1, 2}


def test_clip_weights_and_adaptive_sampling(dataset):
    env = TrackingEnv(
        "tiny", dataset, EnvConfig.from_dict({"sampling": {"clip_weights": [0, 1, 0]}}), num_envs=50
    )
    assert np.all(env.reset(0).info["clip"] == 1)
    cfg = EnvConfig.from_dict({"sampling": {"adaptive": True, "adaptive_ema": 1.0, "adaptive_floor": 0.01}})
    env = TrackingEnv("tiny", dataset, cfg, num_envs=200)
    state = env.reset(0, clip=np.repeat([0, 1], 100), time_s=np.full(200, 0.2))
    kin = env.kinematics(state)
    qpos = kin.qpos.copy()
    qpos[:100, 2] = 0.1  # every episode of clip 0 fails
    state = env.step(env.with_physics(state, qpos, kin.qvel, kin.act), np.zeros((200, 6)))
    assert state.info["clip_fail_rate"][0] == pytest.approx(1.0)
    assert state.info["clip_fail_rate"][1] == pytest.approx(0.0)
    # the 100 resets now favour the failing clip (weights 1.01 : 0.01 : 0.01)
    assert np.mean(state.info["clip"][:100] == 0) > 0.9


def test_nan_state_resets_only_that_env(env):
    state = env.reset(0, clip=np.zeros(8, int), time_s=np.full(8, 0.3))
    kin = env.kinematics(state)
    qvel = kin.qvel.copy()
    qvel[5, 8] = 1e6  # exploding
    state = env.with_physics(state, kin.qpos, qvel, kin.act)
    # a state that diverges inside the step: MuJoCo C warns and resets that MjData to qpos0
    # (with_physics cannot set it: mj_forward would already reset it), so write the batch row
    env._physics.qvel[3, 7] = np.nan
    state = env.step(state, np.full((8, 6), 0.2))
    expected = np.zeros(8)
    expected[[3, 5]] = 1
    np.testing.assert_array_equal(state.metrics["nan_reset"], expected)
    assert state.terminated[3] and state.terminated[5] and state.reward[3] == 0
    assert np.all(np.isfinite(state.obs)) and np.all(np.isfinite(state.info["terminal_obs"]))
    assert np.all(np.isfinite(env.kinematics(state).qvel))
    others = [0, 1, 2, 4, 6, 7]
    assert not state.done[others].any() and np.all(state.info["steps"][others] == 1)


def test_terrain_goes_into_the_world():
    base = sine_gait("tiny", duration_s=1.0)
    h = np.zeros((6, 8))
    h[:, 4:] = 0.05  # a 5 cm step along +x
    traj = dataclasses.replace(base, terrain=Terrain(h, np.array([-1.0, -1.0]), 0.5))
    env = TrackingEnv("tiny", traj, EnvConfig(), num_envs=2)
    assert env.model.nhfield == 1
    hid = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_GEOM, "terrain")
    assert env.model.geom_type[hid] == mujoco.mjtGeom.mjGEOM_HFIELD
    # a ray straight down at x = 1.2 (on the step) hits the heightfield at 5 cm
    d = mujoco.MjData(env.model)
    mujoco.mj_forward(env.model, d)
    geomid = np.zeros(1, dtype=np.int32)
    dist = mujoco.mj_ray(env.model, d, np.array([1.2, 0.0, 1.0]), np.array([0, 0, -1.0]), None, 1, -1, geomid)
    assert geomid[0] == hid and 1.0 - dist == pytest.approx(0.05, abs=2e-3)
    state = env.reset(0, clip=np.zeros(2, int), time_s=np.zeros(2))
    kin = env.kinematics(state)
    qpos = kin.qpos.copy()
    qpos[1, 0] = 1.2
    state = env.with_physics(state, qpos, kin.qvel, kin.act)
    heights = state.obs[:, 0]  # root_height piece: above the ground under the root
    assert heights[0] - heights[1] == pytest.approx(0.05, abs=1e-9)


def test_a_level_terrain_is_the_floor_itself():
    """A level terrain (the marker pipeline's lab floor) adds no heightfield: one would lie in the
    floor plane, and every foot contact would be counted twice (a stiffer ground)."""
    base = sine_gait("tiny", duration_s=1.0)
    traj = dataclasses.replace(base, terrain=Terrain(np.full((6, 8), 0.02), np.array([-1.0, -1.0]), 0.5))
    env = TrackingEnv("tiny", traj, EnvConfig(), num_envs=2)
    assert env.model.nhfield == 0
    planes = np.flatnonzero(env.model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)
    assert len(planes) >= 1 and np.allclose(env.model.geom_pos[planes, 2], 0.02)
    d = mujoco.MjData(env.model)
    d.qpos[:] = traj.qpos[0]
    d.qpos[2] -= 0.01  # feet pressed 1 cm into the floor: each touching foot geom meets one ground
    mujoco.mj_forward(env.model, d)
    pairs = [tuple(sorted(map(int, d.contact.geom[i]))) for i in range(d.ncon)]
    assert d.ncon > 0 and all(bool(set(p) & set(planes.tolist())) for p in pairs)


def test_config_errors_are_input_errors(dataset):
    with pytest.raises(InputError, match="unknown config key 'horizn'"):
        EnvConfig.from_dict({"horizn": 3})
    with pytest.raises(InputError, match="unknown reward term"):
        EnvConfig.from_dict({"reward": {"weights": {"site_posn": 1.0}}})
    with pytest.raises(InputError, match="clip_weights"):
        TrackingEnv("tiny", dataset, EnvConfig.from_dict({"sampling": {"clip_weights": [1, 2]}}))
    with pytest.raises(InputError, match="tracked site"):
        TrackingEnv("tiny", dataset, EnvConfig.from_dict({"sites": ["no_such_site"]}))
    with pytest.raises(InputError, match="a motion"):
        TrackingEnv("tiny", config=EnvConfig())
    cfg = EnvConfig.from_dict({"obs": {"goal": False, "muscle_force": False}, "substeps": 2})
    env = TrackingEnv("tiny", motion=dataset, config=cfg)  # the Trajectory is the ``motion``
    assert "goal" not in env.obs_pieces and env.control_dt_s == pytest.approx(0.004)
    assert env.reset(0).obs.shape == (1, env.observation_size)


def test_named_sites_with_offsets_match_mujoco(dataset):
    cfg = EnvConfig.from_dict(
        {"sites": ["toe_r", "heel_l", "torso_top"], "foot_bodies": ["foot_r", "foot_l"]}
    )
    env = TrackingEnv("tiny", dataset, cfg, num_envs=3)
    state = env.reset(0, clip=np.array([0, 1, 2]), time_s=np.array([0.1, 0.7, 1.3]))
    kin = env.kinematics(state)
    for i in range(3):
        d = env.physics_data(i)
        ids = env.world.site_ids
        np.testing.assert_allclose(kin.site_pos_m[i], d.site_xpos[ids], atol=1e-12)
        np.testing.assert_allclose(kin.site_xmat[i].reshape(3, 9), d.site_xmat[ids], atol=1e-12)
    assert env.reference.site_names == ("toe_r", "heel_l", "torso_top")


def test_world_drops_what_the_env_never_reads_and_simulates_the_same():
    """Sensors and unused sites go (MuJoCo computes them every physics step); the tendons' path
    sites and the tracked sites stay, and the simulation is the registry model's to the bit."""
    from musclerl.envs.world import build_world
    from musclerl.models.registry import compile_spec, load_spec

    full = compile_spec(load_spec("myolegs"), "myolegs")
    world = build_world("myolegs", [], [], None)
    model = world.model
    assert full.nsensor > 0 and model.nsensor == 0
    assert model.nsite < full.nsite
    names = {model.site(i).name for i in range(model.nsite)}
    path_sites = {
        full.site(int(full.wrap_objid[w])).name
        for w in range(full.nwrap)
        if full.wrap_type[w] == mujoco.mjtWrap.mjWRAP_SITE
    }
    assert path_sites <= names and set(world.site_names) <= names
    np.testing.assert_array_equal(model.actuator_lengthrange, full.actuator_lengthrange)

    rng = np.random.default_rng(0)
    datas = [mujoco.MjData(m) for m in (full, model)]
    for d, m in zip(datas, (full, model), strict=True):
        if m.nkey:
            mujoco.mj_resetDataKeyframe(m, d, 0)
    for _ in range(60):
        ctrl = rng.uniform(0.0, 0.4, full.nu)
        for d, m in zip(datas, (full, model), strict=True):
            d.ctrl[:] = ctrl
            mujoco.mj_step(m, d)
    for field in ("qpos", "qvel", "act", "actuator_length", "actuator_force"):
        np.testing.assert_array_equal(getattr(datas[0], field), getattr(datas[1], field), err_msg=field)


def test_lookup_of_some_fields_equals_the_full_lookup(env):
    ref = env.reference.as_arrays(np)
    clip, t = np.array([0, 1, 2, 0]), np.array([0.0, 0.7, 3.1, 5.3])  # past the end: loops shift
    full = lookup(ref, clip, t, np)
    some = lookup(ref, clip, t, np, ("site_pos_m", "qpos"))
    assert set(some) == {"site_pos_m", "qpos", *LIMIT_FIELDS}  # the ranges come with every read
    for name, value in some.items():
        np.testing.assert_array_equal(value, full[name])


def test_joint_limit_penalty_on_fixed_states(env):
    """tiny's knees range over [0, 2.2] rad: a knee on its 0 bound where the reference bends it costs
    the whole term, halfway into the margin a quarter, and nothing where the reference itself sits
    on the bound (or with the weight at its default 0); on one bound where the reference sits on
    the other, the whole term."""
    from musclerl.envs.rewards import LIMIT_MARGIN_RAD, joint_limit_error

    state = env.reset(4, clip=np.zeros(8, int), time_s=np.full(8, 0.5))
    kin = env.kinematics(state)
    target = lookup(env.reference.as_arrays(np), state.info["clip"], state.info["time_s"], np)
    knee = int(env.model.jnt_qposadr[env.model.joint("knee_angle_r").id])
    assert knee in target["limit_qpos_adr"] and len(target["limit_qpos_adr"]) == 6
    qpos, ref = kin.qpos.copy(), {**target, "qpos": target["qpos"].copy()}
    ref["qpos"][:, 7:] = 0.5 * (target["limit_low"] + target["limit_high"])  # every joint mid-range
    qpos[:, 7:] = ref["qpos"][:, 7:]
    qpos[0, knee] = 0.0  # on the bound
    qpos[1, knee] = 0.5 * LIMIT_MARGIN_RAD  # halfway into the margin
    qpos[2, knee] = -0.02  # pushed past it (MuJoCo's soft limit)
    qpos[3, knee] = 0.0
    ref["qpos"][3, knee] = 0.01  # the reference is there too: no cost
    k = list(target["limit_qpos_adr"]).index(knee)
    qpos[4, knee] = 0.0  # on the lower bound where the reference sits on the upper one: each bound
    ref["qpos"][4, knee] = target["limit_high"][k] - 0.01  # is watched on its own
    qpos[5, knee] = target["limit_high"][k]  # and the reverse
    ref["qpos"][5, knee] = 0.01
    error = joint_limit_error(kin.replace(qpos=qpos), ref, kin.ctrl, np)
    np.testing.assert_allclose(error, [1.0, 0.25, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0], atol=1e-12)
    terms = reward_terms(tracking_errors(kin.replace(qpos=qpos), ref, kin.ctrl, np), env.config.reward, np)
    np.testing.assert_array_equal(terms["reward/joint_limit"], 0.0)
    weighted = EnvConfig.from_dict({"reward": {"weights": {"joint_limit": 0.3}}}).reward
    terms = reward_terms(tracking_errors(kin.replace(qpos=qpos), ref, kin.ctrl, np), weighted, np)
    np.testing.assert_allclose(terms["reward/joint_limit"][:4], [-0.3, -0.075, -0.3, 0.0], atol=1e-12)


def test_joint_limit_penalty_watches_only_the_named_coordinates(dataset):
    """``reward.limit_joints`` picks the coordinates the term watches (the knees: a locked knee is
    the pathology; toes and subtalar reach their bounds in a sound walk); a name the model lacks is
    refused naming the setting."""
    from musclerl.errors import InputError

    knees = ["knee_angle_r", "knee_angle_l"]
    cfg = EnvConfig.from_dict({"reward": {"weights": {"joint_limit": 0.3}, "limit_joints": knees}})
    env = TrackingEnv("tiny", dataset, cfg, backend="cpu", num_envs=2, threads=1)
    adr = sorted(int(env.model.jnt_qposadr[env.model.joint(k).id]) for k in knees)
    assert sorted(env.reference.limit_qpos_adr.tolist()) == adr
    bad = EnvConfig.from_dict({"reward": {"limit_joints": ["knee_angle_x"]}})
    with pytest.raises(InputError, match="reward.limit_joints.*knee_angle_x"):
        TrackingEnv("tiny", dataset, bad, backend="cpu", num_envs=2, threads=1)


def test_com_acc_is_the_second_difference_of_the_offset_from_the_reference(dataset):
    """``com_acc`` sees the centre of mass's acceleration minus the reference's, as the second
    difference of their offset over the last three control steps; a fresh episode starts with
    no error of its own (its offset held)."""
    cfg = EnvConfig.from_dict({"reward": {"weights": {"com_acc": 1.0}}})
    env = TrackingEnv("tiny", dataset, cfg, backend="cpu", num_envs=4, threads=1)
    ref = env.reference.as_arrays(np)
    state = env.reset(0, clip=np.zeros(4, int), time_s=np.array([0.2, 0.4, 0.6, 0.8]))
    offsets = []
    for k in range(3):
        kin = env.kinematics(state)
        offsets.append(kin.com_m - lookup(ref, state.info["clip"], state.info["time_s"], np)["com_m"])
        state = env.step(state, np.full((4, env.action_size), 0.2 + 0.2 * k))
        assert not state.done.any()
    kin = env.kinematics(state)
    offset = kin.com_m - lookup(ref, state.info["clip"], state.info["time_s"], np)["com_m"]
    acc = (offset - 2 * offsets[2] + offsets[1]) / env.control_dt_s**2
    expected = np.exp(-10.0 * np.mean((acc / 9.81) ** 2, axis=1))
    np.testing.assert_allclose(state.metrics["reward/com_acc"], expected, rtol=1e-9)
    assert np.all(expected < 0.999)  # the excitations moved the body off the reference's course
    np.testing.assert_allclose(state.info["com_offset_m"], np.concatenate([offset, offsets[2]], axis=1))


@pytest.mark.parametrize("space", ["excitation", "muscle_length_pd"])
def test_physics_step_hook_sees_every_step_and_changes_nothing(dataset, space):
    """A hook before every physics step (how a rollout measures forces over a control step) is
    called ``substeps`` times per env step with that step's excitations set, and the simulation
    is the one without it to the bit, whether the excitations are held (excitation space) or
    recomputed before each physics step (a PD space)."""
    cfg = EnvConfig(substeps=4, action=dataclasses.replace(EnvConfig().action, space=space))
    envs = [TrackingEnv("tiny", dataset, cfg, backend="cpu", num_envs=3, threads=1) for _ in range(2)]
    seen = []
    envs[1].call_before_physics_steps(lambda: seen.append(envs[1].physics_data(0).ctrl.copy()))
    states = [e.reset(0) for e in envs]
    rng = np.random.default_rng(1)
    for _ in range(5):
        action = rng.uniform(-1.0, 1.0, (3, envs[0].action_size))
        states = [e.step(s, action) for e, s in zip(envs, states, strict=True)]
        np.testing.assert_array_equal(envs[0].physics_data(0).ctrl, seen[-1])  # the last step's
    assert len(seen) == 5 * 4
    for a, b in zip(*(s.obs for s in states), strict=True):
        np.testing.assert_array_equal(a, b)
    for i in range(3):
        np.testing.assert_array_equal(envs[0].physics_data(i).qpos, envs[1].physics_data(i).qpos)
    envs[1].call_before_physics_steps(None)
    envs[1].step(states[1], action)
    assert len(seen) == 5 * 4
