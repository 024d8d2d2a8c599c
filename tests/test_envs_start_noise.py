"""Initial-state noise (``sampling.qpos_noise`` / ``qvel_noise``, envs/initial_state.StartNoise):
within its amplitude on every independent coordinate, inside joint ranges, coupled coordinates
on their curves, and never on an evaluation start (a given clip and time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from musclerl.envs.config import EnvConfig, SamplingConfig
from musclerl.envs.initial_state import StartNoise
from musclerl.envs.tracking import TrackingEnv
from musclerl.models.couplings import couplings, equality_residual, independent_coordinates
from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[1]


def test_noise_on_myolegs_keeps_ranges_and_couplings():
    model = load_model("myolegs")
    walk = Trajectory.load(REPO / "assets" / "motions" / "walk_myolegs.npz")
    noise = StartNoise.of(model, SamplingConfig(qpos_noise=0.1, qvel_noise=0.5))
    assert StartNoise.of(model, SamplingConfig()) is None
    qpos, qvel = walk.qpos[:8], walk.qvel[:8]
    u = np.random.default_rng(0).random((noise.rows, 8))
    q, v = noise.apply(qpos, qvel, u, np)
    coords = independent_coordinates(model)
    adr = [model.joint(c).qposadr[0] for c in coords]
    dof = [model.joint(c).dofadr[0] for c in coords]
    moved = q[:, adr] - qpos[:, adr]
    assert 0.05 < np.abs(moved).max() <= 0.1 + 1e-12 and np.abs(v[:, dof] - qvel[:, dof]).max() <= 0.5 + 1e-12
    for c, a in zip(coords, adr, strict=True):
        j = model.joint(c).id
        if model.jnt_limited[j]:
            assert np.all(q[:, a] >= model.jnt_range[j, 0] - 1e-12) and np.all(
                q[:, a] <= model.jnt_range[j, 1] + 1e-12
            )
    assert np.abs(equality_residual(couplings(model), q)).max() < 1e-12
    np.testing.assert_array_equal(q[:, :7], qpos[:, :7])  # the root stays the reference's
    for c in couplings(model):  # the driven velocity follows its driver: dy/dt = p'(x) dx/dt
        np.testing.assert_allclose(v[:, c.y_dof], c.slope(q[:, c.x_qpos]) * v[:, c.x_dof], atol=1e-12)


def test_tiny_env_starts_noisy_but_evaluation_starts_exactly():
    walk = Trajectory.load(REPO / "assets" / "motions" / "walk_tiny.npz")
    cfg = EnvConfig.from_dict({"sampling": {"rsi": False, "qpos_noise": 0.05, "qvel_noise": 0.2}})
    env = TrackingEnv("tiny", walk, cfg, backend="cpu", num_envs=8)
    plain = TrackingEnv("tiny", walk, EnvConfig.from_dict({"sampling": {"rsi": False}}), num_envs=8)
    noisy = env.kinematics(env.reset(0)).qpos
    exact = plain.kinematics(plain.reset(0)).qpos  # rsi off: both at the clip's first frame
    diff = np.abs(noisy - exact)
    assert 0.02 < diff.max() <= 0.05 + 1e-9 and np.all(diff[:, :7] == 0)
    assert len({tuple(r) for r in np.round(noisy, 9)}) == 8  # each env its own draw
    at_start = env.kinematics(env.reset(0, clip=np.zeros(8, int), time_s=np.zeros(8))).qpos
    np.testing.assert_array_equal(at_start, exact)


def test_first_frame_frac_puts_that_share_of_starts_at_the_clips_first_frame():
    """``sampling.first_frame_frac``: RSI with that share of starts at t = 0 (how a clip tracked
    whole starts) and the rest spread over the clip as before; 0 draws exactly the old starts."""
    import pytest

    from musclerl.envs.initial_state import sample_starts
    from musclerl.errors import InputError

    rate_hz = 100.0
    ref = {"clip_lengths": np.array([200, 50]), "clip_loop": np.array([False, False]), "rate_hz": rate_hz}
    rng = np.random.default_rng(0)
    u_clip, u_frame = rng.random(20000), rng.random(20000)
    probs = np.array([0.5, 0.5])
    clip0, t0 = sample_starts(u_clip, u_frame, probs, ref, 0.02, SamplingConfig(), np)
    clip, t = sample_starts(u_clip, u_frame, probs, ref, 0.02, SamplingConfig(first_frame_frac=0.25), np)
    np.testing.assert_array_equal(clip, clip0)
    assert abs(np.mean(t == 0) - (0.25 + 0.75 * (0.5 / 199 + 0.5 / 48))) < 0.01  # open frames per clip
    later = t[(clip == 0) & (t > 0)]
    assert later.max() <= (200 - 1) / rate_hz - 0.02 and abs(np.mean(later) - np.mean(t0[clip0 == 0])) < 0.03
    same, ts = sample_starts(u_clip, u_frame, probs, ref, 0.02, SamplingConfig(first_frame_frac=0.0), np)
    np.testing.assert_array_equal(ts, t0)
    with pytest.raises(InputError, match="first_frame_frac"):
        EnvConfig.from_dict({"sampling": {"first_frame_frac": 1.0}})
