"""Checkpointer round trips: every leaf back with its dtype, zero-size leaves included (an
``mjx.Data`` has empty fields on models without the feature, which orbax cannot write),
and the per-clip run totals a resumed run continues from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from musclerl.errors import InputError
from musclerl.rl.checkpoint import Checkpointer


def test_round_trip_keeps_every_leaf_including_empty_ones(tmp_path):
    rng = np.random.default_rng(0)
    carry = {
        "params": {"w": rng.normal(size=(3, 4)).astype(np.float32), "b": np.zeros(4, np.float32)},
        "env": {"history": np.zeros((8, 0), np.float32), "qpos": rng.normal(size=(8, 5))},
        "step": np.asarray(7, np.int32),
    }
    ckpt = Checkpointer(tmp_path / "ckpt", keep=2)
    ckpt.save(3, carry, {"update": 3})
    like = {
        "params": {"w": np.ones((3, 4), np.float32), "b": np.ones(4, np.float32)},
        "env": {"history": np.zeros((8, 0), np.float32), "qpos": np.ones((8, 5))},
        "step": np.asarray(0, np.int32),
    }
    restored, meta = ckpt.restore(like)
    assert meta == {"update": 3}
    for path in (("params", "w"), ("params", "b"), ("env", "history"), ("env", "qpos")):
        got, want = restored[path[0]][path[1]], carry[path[0]][path[1]]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert int(restored["step"]) == 7
    ckpt.close()


def test_a_checkpoint_of_another_structure_is_a_one_line_error(tmp_path):
    ckpt = Checkpointer(tmp_path / "ckpt", keep=1)
    ckpt.save(1, {"a": np.ones(3)}, {})
    with pytest.raises(InputError, match="does not match"):
        ckpt.restore({"a": np.ones(3), "b": np.ones(2)})
    ckpt.close()


def test_a_checkpoint_with_other_shapes_is_a_one_line_error(tmp_path):
    ckpt = Checkpointer(tmp_path / "ckpt", keep=1)
    ckpt.save(1, {"w": np.ones((3, 4))}, {})
    with pytest.raises(InputError, match="does not match"):
        ckpt.restore({"w": np.ones((3, 5))})
    ckpt.close()


def test_checkpoints_of_the_earlier_nested_format_still_restore(tmp_path):
    """Runs checkpointed before the flat format (the carry saved as its nested tree) resume."""
    import orbax.checkpoint as ocp

    carry = {"train": {"w": np.arange(6.0).reshape(2, 3)}, "step": np.asarray(4, np.int32)}
    manager = ocp.CheckpointManager(
        (tmp_path / "ckpt").resolve(), options=ocp.CheckpointManagerOptions(create=True)
    )
    manager.save(
        5,
        args=ocp.args.Composite(carry=ocp.args.StandardSave(carry), meta=ocp.args.JsonSave({"u": 5})),
        force=True,
    )
    manager.wait_until_finished()
    manager.close()
    ckpt = Checkpointer(tmp_path / "ckpt", keep=1)
    restored, meta = ckpt.restore({"train": {"w": np.zeros((2, 3))}, "step": np.asarray(0, np.int32)})
    np.testing.assert_array_equal(restored["train"]["w"], carry["train"]["w"])
    assert int(restored["step"]) == 4 and meta == {"u": 5}
    assert set(ckpt.read_tree()["train"]) == {"w"}
    ckpt.close()


def test_resumed_run_keeps_the_per_clip_totals(tmp_path):
    """A run killed after its first checkpoint and resumed reports the same per-clip totals in
    summary.json as the same run uninterrupted (cpu checkpoints restart the episodes in both)."""
    from musclerl.envs.motions import sine_gait
    from musclerl.rl.config import load_config
    from musclerl.rl.runner import train

    for k in range(2):
        clip = sine_gait("tiny", duration_s=1.0, rate_hz=50.0, phase_rad=k, name=f"s{k}")
        clip.save(tmp_path / f"s{k}.npz")
    (tmp_path / "set.csv").write_text(f"path,tags\n{tmp_path}/s0.npz,flat\n{tmp_path}/s1.npz,flat;fast\n")
    cfg = load_config(
        None,
        [
            "model=tiny",
            "backend=cpu",
            f"motion={tmp_path / 'set.csv'}",
            "ppo.num_envs=4",
            "ppo.rollout_steps=16",
            "ppo.total_env_steps=128",
            "checkpoint.every_updates=1",
            "threads=1",
            "network.policy_hidden=[16]",
            "network.value_hidden=[16]",
            "log.progress=false",
        ],
    )
    whole = train(cfg, tmp_path / "whole", quiet=True)
    train(cfg, tmp_path / "cut", quiet=True, stop_after_updates=1)
    resumed = train(cfg, tmp_path / "cut", quiet=True, resume=True)
    assert resumed["resumed_from_update"] == 1 and resumed["env_steps"] == whole["env_steps"] == 128
    totals = resumed["clip_results"]["tags"]["all"]
    assert totals["steps"] == 128  # every step of the run, the ones before the interruption included
    assert resumed["clip_results"] == whole["clip_results"]
    saved = json.loads((tmp_path / "cut" / "summary.json").read_text())
    assert saved["clip_results"] == whole["clip_results"]
