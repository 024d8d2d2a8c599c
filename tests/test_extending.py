"""The name-keyed extension points, each extended by a toy: a reward penalty (``REWARD_TERMS``), an
action space (``ACTION_SPACES``), a motion format (``READERS``) and a model profile (``REGISTRY``).

Every registration goes through ``monkeypatch`` and is undone at the end of its test (checked), so
the rest of the suite sees the shipped tables only."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from musclerl.cli import main
from musclerl.envs import EnvConfig, TrackingEnv
from musclerl.envs.actions import ACTION_SPACES, ActionSpace
from musclerl.envs.motions import sine_dataset
from musclerl.envs.rewards import REWARD_TERMS, RewardTerm
from musclerl.errors import InputError
from musclerl.models.profiles import SIDES, TINY, ModelProfile
from musclerl.models.registry import REGISTRY, RegisteredModel, compile_spec, load_spec
from musclerl.motion.keypoints import KeypointMotion
from musclerl.motion.readers import READERS, Reader, read_motion_file
from musclerl.motion.smpl import SMPL_JOINT_NAMES
from musclerl.retarget import correspondence as corr
from musclerl.retarget.ground.soles import rest_points


@pytest.fixture(scope="module")
def clips():
    return sine_dataset("tiny", num_clips=2, duration_s=1.0, rate_hz=50.0)


def _steps(env: TrackingEnv, actions: list[np.ndarray]):
    """Yield the state after each of ``actions`` (N, A) from a fixed reset in the first clip, one
    step at a time (the cpu backend's simulations are live: read a state's kinematics before the
    next step)."""
    state = env.reset(0, clip=np.zeros(env.num_envs, int), time_s=np.full(env.num_envs, 0.2))
    for action in actions:
        state = env.step(state, action)
        yield state


# ------------------------------------------------------------------ a reward penalty
def toy_effort_error(kin, target, last_ctrl, xp):
    """Mean activation (N,), in [0, 1]."""
    return xp.mean(kin.act, axis=-1)


def test_a_registered_penalty_is_reported_weighted_and_summed(monkeypatch, clips):
    monkeypatch.setitem(REWARD_TERMS, "toy_effort", RewardTerm("penalty", toy_effort_error, 0.1))
    assert EnvConfig().reward.weight("toy_effort") == 0.1  # the table's default weight
    weighted = TrackingEnv("tiny", clips, {"reward": {"weights": {"toy_effort": 0.3}}}, num_envs=4)
    unweighted = TrackingEnv("tiny", clips, {"reward": {"weights": {"toy_effort": 0.0}}}, num_envs=4)
    rng = np.random.default_rng(1)
    actions = [rng.uniform(0.2, 0.8, (4, weighted.action_size)) for _ in range(3)]
    for a, b in zip(_steps(weighted, actions), _steps(unweighted, actions), strict=True):
        kept = ~a.done  # rows that did not reset, so their kinematics are the step's
        assert kept.any()
        act = weighted.kinematics(a).act[kept]
        np.testing.assert_allclose(a.metrics["reward/toy_effort"][kept], -0.3 * act.mean(axis=-1), rtol=1e-12)
        assert np.all(a.metrics["reward/toy_effort"][kept] < 0)
        # the same physics with the term at weight 0: the totals differ by the term alone
        np.testing.assert_allclose(a.reward - b.reward, a.metrics["reward/toy_effort"], atol=1e-12)
        np.testing.assert_array_equal(b.metrics["reward/toy_effort"], 0.0)
    with pytest.raises(InputError, match="toy_effort"):  # weights are checked against the table
        EnvConfig.from_dict({"reward": {"scales": {"toy_effort": 1.0}}})
    monkeypatch.undo()
    assert "toy_effort" not in REWARD_TERMS and "toy_effort" not in EnvConfig().reward.weights
    with pytest.raises(InputError, match="unknown reward term 'toy_effort'"):
        EnvConfig.from_dict({"reward": {"weights": {"toy_effort": 0.3}}})


# ------------------------------------------------------------------ an action space
class HalfExcitation(ActionSpace):
    """Actions in [0, 1] command half of themselves as excitations."""

    name = "toy_half"

    def bounds(self):
        return np.zeros(self.size), np.ones(self.size), np.full(self.size, 0.5)

    def controller(self, action, target, length, velocity, xp):
        return 0.5 * xp.clip(action, self.low, self.high)


def test_a_registered_action_space_is_built_by_name_and_steps(monkeypatch, clips):
    monkeypatch.setitem(ACTION_SPACES, HalfExcitation.name, HalfExcitation)
    env = TrackingEnv("tiny", clips, {"action": {"space": "toy_half"}}, num_envs=3)
    assert isinstance(env.actions, HalfExcitation) and env.action_size == env.model.nu
    np.testing.assert_array_equal(env.reset(0).info["last_action"], 0.5)  # its neutral action
    action = np.tile(np.linspace(0.1, 0.9, env.action_size), (3, 1))
    (state,) = _steps(env, [action])
    kept = ~state.done
    assert kept.any() and np.all(np.isfinite(state.reward))
    np.testing.assert_allclose(env.kinematics(state).ctrl[kept], 0.5 * action[kept], rtol=1e-12)
    monkeypatch.undo()
    with pytest.raises(InputError, match="action.space must be one of"):
        EnvConfig.from_dict({"action": {"space": "toy_half"}})


# ------------------------------------------------------------------ a motion format
def read_toy_keypoints(path: Path) -> KeypointMotion:
    """``.kpt``: a line of keypoint names, a line with the rate in Hz, then one row of x y z per
    keypoint per frame (metres, Z up)."""
    lines = Path(path).read_text().splitlines()
    names = tuple(lines[0].split())
    values = np.loadtxt(lines[2:], ndmin=2).reshape(-1, len(names), 3)
    return KeypointMotion(names=names, positions_m=values, rate_hz=float(lines[1]), source=str(path))


def test_a_registered_motion_format_is_read_by_info(monkeypatch, tmp_path, capsys):
    path = tmp_path / "walk.kpt"
    frames = np.arange(4 * 2 * 3, dtype=float).reshape(4, 2, 3) / 10
    path.write_text("hip knee\n25\n" + "\n".join(" ".join(map(str, p)) for p in frames.reshape(-1, 3)))
    with pytest.raises(InputError, match=r"'\.kpt'; known: \.trc, "):  # one line, the known suffixes
        read_motion_file(path)
    monkeypatch.setitem(READERS, ".kpt", Reader("keypoints", read_toy_keypoints, "toy", "toy keypoints"))
    motion = read_motion_file(path, ("keypoints",))
    np.testing.assert_array_equal(motion.positions_m, frames)
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "toy" and info["frames"] == 4 and info["rate_hz"] == 25.0
    assert info["columns"] == ["hip", "knee"] and info["duration_s"] == pytest.approx(3 / 25)
    with pytest.raises(InputError, match=r"known: \.trc, \.c3d$"):  # a command asking for markers only
        read_motion_file(path, ("markers",))
    monkeypatch.undo()
    assert ".kpt" not in READERS
    assert main(["info", str(path)]) == 2  # neither a motion format nor a model any more


# ------------------------------------------------------------------ a model profile
def test_a_registered_model_profile_is_what_correspondence_finds(monkeypatch):
    toes = {f"toe_{s}": (f"foot_{s}", (0.10, 0.0, -0.03)) for s in SIDES}
    profile = ModelProfile(
        landmarks={**TINY.landmarks, **toes}, feet=TINY.feet, trunk="pelvis", segments=TINY.segments
    )
    toy = RegisteredModel(
        "toy-biped", "tiny with shorter toes", "Apache-2.0", REGISTRY["tiny"].build_spec, profile
    )
    with pytest.raises(InputError, match="no keypoint correspondence"):
        corr.model_profile("toy-biped")
    monkeypatch.setitem(REGISTRY, "toy-biped", toy)
    assert corr.model_profile("toy-biped") is profile
    model = compile_spec(load_spec("toy-biped"), "toy-biped")
    rest, tiny_rest = rest_points(model, "toy-biped"), rest_points(model, "tiny")
    np.testing.assert_array_equal(rest["ankle_l"], tiny_rest["ankle_l"])
    foot = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "foot_l")
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    # the toe point moved 3 cm back along the foot's own x axis
    np.testing.assert_allclose(
        rest["toe_l"] - tiny_rest["toe_l"], data.xmat[foot].reshape(3, 3) @ [-0.03, 0.0, 0.0], atol=1e-12
    )
    found = corr.correspondence("toy-biped", "smpl", SMPL_JOINT_NAMES, ("trunk",))
    legs = {f"{joint}_{s}" for joint in ("hip", "knee", "ankle", "toe") for s in SIDES}
    assert set(found.landmarks) == legs | {"trunk"}  # SMPL's keypoints that the profile places
    monkeypatch.undo()
    with pytest.raises(InputError, match="no keypoint correspondence"):
        corr.model_profile("toy-biped")
