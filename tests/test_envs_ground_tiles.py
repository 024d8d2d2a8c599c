"""Clips on different grounds in one dataset: each env stands on its own clip's ground.

A flat clip, a sloped clip and a stepped clip (tiny model, small generated terrains) load as one
dataset and build one env; the grounds are tiles of one heightfield and the clips are moved onto
them. Checked against each clip's own ground (not the tiled one): heights under the moved roots,
the root height observation at reset on cpu, and cpu against mjx for a few steps.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
from backend_samples import mjx_step_from

from musclerl.dynamics.screening import load_dataset
from musclerl.envs import EnvConfig, TrackingEnv
from musclerl.envs.motions import sine_gait
from musclerl.models.registry import load_model
from musclerl.motion.ground_tiles import TILE_MARGIN_M, tile_grounds
from musclerl.motion.trajectory import Terrain, Trajectory


def _slope() -> Terrain:
    """A 10 % ramp up along +x through 0 at x = 0 (below the floor before it); 5 cm cells."""
    xs = np.arange(-1.0, 3.0 + 1e-9, 0.05)
    h = xs * 0.1
    return Terrain(np.tile(h, (41, 1)), np.array([-1.0, -1.0]), 0.05)


def _steps() -> Terrain:
    """Two 4 cm steps up along +x at x = 0.3 and 0.6; 10 cm cells, an origin off the others' grid."""
    xs = -1.03 + np.arange(42) * 0.1
    h = 0.04 * (xs > 0.3) + 0.04 * (xs > 0.6)
    return Terrain(np.tile(h, (21, 1)), np.array([-1.03, -0.97]), 0.1)


def _on(clip: Trajectory, terrain: Terrain | None, name: str) -> Trajectory:
    """``clip`` raised at every frame by its ground's height under the root."""
    qpos = clip.qpos.copy()
    if terrain is not None:
        qpos[:, 2] += terrain.height_at(qpos[:, :2])
    return dataclasses.replace(clip, qpos=qpos, terrain=terrain, clip_names=(name,))


GROUNDS = {"flat": None, "slope": _slope(), "steps": _steps()}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("grounds")
    out = {}
    for k, (name, terrain) in enumerate(GROUNDS.items()):
        clip = _on(sine_gait("tiny", duration_s=1.0, rate_hz=50.0, phase_rad=k), terrain, name)
        clip.save(folder / f"{k}_{name}.npz")
        out[name] = (folder / f"{k}_{name}.npz", clip)
    return out


@pytest.fixture(scope="module")
def dataset(files):
    return load_dataset([str(p) for p, _ in files.values()], load_model("tiny"), "tiny")


def test_each_clip_lands_on_its_own_ground(files, dataset):
    traj = dataset.trajectory
    assert traj.clip_names == ("flat", "slope", "steps") and traj.terrain is not None
    offsets = dataset.ground_offset_m  # (C, 3)
    assert np.all(offsets[0] == 0.0)  # the flat clip stays on the floor plane, off the grid
    flat_y = files["flat"][1].qpos[:, 1]
    assert traj.terrain.origin_m[1] >= flat_y.max() + TILE_MARGIN_M - 1e-9
    assert traj.terrain.height_m.min() == 0.0  # nothing under the floor plane at z = 0
    assert offsets[1, 1] > 0 and offsets[2, 1] > offsets[1, 1]  # two tiles along +y
    assert offsets[1, 2] == pytest.approx(0.1) and offsets[2, 2] == 0.0  # the slope lifted out of the floor
    for c, (name, (_, clip)) in enumerate(files.items()):
        a, b = traj.clip_starts[c], traj.clip_starts[c] + clip.num_frames
        np.testing.assert_allclose(traj.qpos[a:b, :3], clip.qpos[:, :3] + offsets[c], atol=1e-12)
        np.testing.assert_array_equal(traj.qpos[a:b, 3:], clip.qpos[:, 3:])
        # around every root, within the tile's margin, the tiled ground is the clip's own ground
        rng = np.random.default_rng(c)
        near = clip.qpos[:, None, :2] + rng.uniform(-0.9, 0.9, (clip.num_frames, 8, 2)) * TILE_MARGIN_M
        own = np.zeros(near.shape[:2]) if GROUNDS[name] is None else GROUNDS[name].height_at(near)
        # the steps' 10 cm grid resampled on the 5 cm one: bilinear cells split in four stay exact
        tiled = traj.terrain.height_at(near + offsets[c, :2]) - offsets[c, 2]
        np.testing.assert_allclose(tiled, own, atol=1e-9, err_msg=name)


def test_one_ground_or_none_is_left_as_it_is(files):
    flat = files["flat"][1]
    slope = files["slope"][1]
    for trajs in ([flat, flat], [slope, slope]):
        tiled = tile_grounds(trajs)
        assert tiled.trajectories == trajs and np.all(tiled.offset_m == 0.0)
        assert tiled.terrain is trajs[0].terrain


def test_mirrored_clips_stand_on_their_mirrored_ground(files):
    data = load_dataset(
        {"clips": [str(files["steps"][0])], "mirror": True}, load_model("tiny"), "tiny", source="m"
    )
    steps = files["steps"][1]
    assert data.clip_names == ("steps", "steps:mirror") and data.num_clips == 2
    # the steps' grid is not symmetric about y = 0: its mirror is another ground, on a tile of its own
    assert np.all(data.ground_offset_m[0] == 0.0) and data.ground_offset_m[1, 1] > 0
    n = steps.num_frames
    mirrored_root = data.trajectory.qpos[n:, :2] - data.ground_offset_m[1, :2]
    np.testing.assert_allclose(mirrored_root[:, 1], -steps.qpos[:, 1], atol=1e-12)
    # steps along x reflected about the x-z plane are the same steps: heights under the roots match
    np.testing.assert_allclose(
        data.trajectory.terrain.height_at(data.trajectory.qpos[n:, :2]),
        GROUNDS["steps"].height_at(mirrored_root),
        atol=1e-9,
    )


def test_root_height_above_its_own_ground_at_reset_on_cpu(files, dataset):
    env = TrackingEnv("tiny", dataset.trajectory, EnvConfig(), backend="cpu", num_envs=6)
    assert env.model.nhfield == 1
    clip = np.array([0, 1, 2, 0, 1, 2])
    time_s = np.array([0.0, 0.0, 0.0, 0.5, 0.6, 0.7])
    state = env.reset(0, clip=clip, time_s=time_s)
    height_obs = np.asarray(state.obs)[:, 0]  # the root_height piece
    names = list(files)
    for i in range(6):
        own = files[names[clip[i]]][1]
        frame = int(round(time_s[i] * own.rate_hz))
        terrain = GROUNDS[names[clip[i]]]
        under = 0.0 if terrain is None else float(terrain.height_at(own.qpos[frame, :2]))
        assert height_obs[i] == pytest.approx(own.qpos[frame, 2] - under, abs=1e-6), names[clip[i]]
    # the physics sees the same ground: a ray down from above each root hits the heightfield there
    data = env.physics_data(0)
    mujoco.mj_forward(env.model, data)
    hid = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_GEOM, "terrain")
    kin = env.kinematics(state)
    for i in (1, 2):
        own = files[names[clip[i]]][1]
        start = np.array([kin.qpos[i, 0] + 0.8, kin.qpos[i, 1], 2.0])  # ahead of the root, on the ramp/steps
        geom = np.zeros(1, dtype=np.int32)
        dist = mujoco.mj_ray(env.model, data, start, np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
        under = (
            GROUNDS[names[clip[i]]].height_at(own.qpos[0, :2] + [0.8, 0.0]) + dataset.ground_offset_m[i, 2]
        )
        assert geom[0] == hid and 2.0 - dist == pytest.approx(float(under), abs=5e-3)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cpu_and_mjx_agree_on_tiled_grounds(dataset):
    pytest.importorskip("jax")
    cfg = EnvConfig.from_dict({"integrator": "euler", "substeps": 2})
    cpu = TrackingEnv("tiny", dataset.trajectory, cfg, backend="cpu", num_envs=3)
    mjx = TrackingEnv("tiny", dataset.trajectory, cfg, backend="mjx", num_envs=3)
    state = cpu.reset(0, clip=np.array([0, 1, 2]), time_s=np.array([0.1, 0.2, 0.3]))
    ground = [_columns(cpu, "root_height"), _columns(cpu, "foot_contact")]

    from_shared = mjx_step_from(mjx)

    rng = np.random.default_rng(0)
    for _ in range(3):
        kin = cpu.kinematics(state)
        action = rng.uniform(0.0, 0.6, (3, cpu.action_size)).astype(np.float32)
        last = state.info["last_ctrl"].astype(np.float32)  # the action-rate penalty compares with it
        start, stepped = from_shared(
            state.info["clip"], state.info["time_s"], kin.qpos, kin.qvel, kin.act, last, action
        )
        for cols in ground:  # the same ground under every env on both backends
            np.testing.assert_allclose(np.asarray(start.obs)[:, cols], state.obs[:, cols], atol=1e-5)
        state = cpu.step(state, action)
        assert not state.done.any()
        next_qpos = np.asarray(mjx.kinematics(stepped).qpos)
        np.testing.assert_allclose(next_qpos, cpu.kinematics(state).qpos, atol=1e-4)
        for key in ("root_height_m", "site_err_m", "reward/total"):
            np.testing.assert_allclose(np.asarray(stepped.metrics[key]), state.metrics[key], atol=1e-3)


def _columns(env: TrackingEnv, piece: str) -> np.ndarray:
    """Column indices of observation piece ``piece``."""
    first = 0
    for name, size in env.obs_pieces.items():
        if name == piece:
            return np.arange(first, first + size)
        first += size
    raise KeyError(piece)


def test_a_rollout_on_a_tile_reports_what_the_clip_alone_reports(files, dataset):
    """The evaluation's rollout of the moved slope clip on its tile and of the slope clip in a
    world of its own: the same site errors and angles, so the move shows in no result. Not to
    rounding: the two heightfields hold the same surface scaled differently (another elevation
    range), and MuJoCo's prism contacts move with that, so the bounds are what evaluation
    resolves (a millimetre of site error, half a degree)."""
    from musclerl.rl.rollout import rollout

    tiled = TrackingEnv("tiny", dataset.trajectory, EnvConfig(), num_envs=1)
    alone = TrackingEnv("tiny", files["slope"][1], EnvConfig(), num_envs=1)

    def act(obs):
        return np.full((1, tiled.action_size), 0.2)

    a = rollout(tiled, act, clip=1, max_steps=10)
    b = rollout(alone, act, clip=0, max_steps=10)
    assert len(a.time_s) == len(b.time_s) == 11
    for field in ("mpjpe_m", "mpjpe_local_m", "site_err_m"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), atol=1e-3, err_msg=field)
    np.testing.assert_allclose(a.angle, b.angle, atol=0.5)
    assert a.mpjpe_m[-1] > 0.01  # the compared errors are not all zero
