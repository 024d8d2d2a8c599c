"""``--init-from``: a new run starts from a trained run's or exported policy's actor and
observation statistics (critic from a run's checkpoint, fresh for a policy folder)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from musclerl import load_policy
from musclerl.cli import main
from musclerl.errors import InputError
from musclerl.rl import networks
from musclerl.rl.config import load_config, num_updates
from musclerl.rl.init_from import initial_train_state, read_initial_weights
from musclerl.rl.runner import _compiled, train

TOY = [
    "model=toy",
    "ppo.mirror_augment=false",  # the demo config's mirror needs a tracking env
    "backend=mjx",
    "ppo.num_envs=8",
    "ppo.rollout_steps=16",
    "ppo.total_env_steps=256",
    "ppo.num_minibatches=2",
    "ppo.update_epochs=2",
    "network.policy_hidden=[16]",
    "network.value_hidden=[16]",
    "checkpoint.every_updates=2",
    "log.progress=false",
]


@pytest.fixture(scope="module")
def source_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("src") / "run"
    train(load_config(None, TOY), run, quiet=True)
    return run


def _actor(params):
    return {k: v for k, v in params["params"].items() if k != "value"}


def _start_state(cfg, init):
    """The new run's train state before its first update: fresh (another seed), then ``init``."""
    env, learner, make_carry, *_ = _compiled(cfg, num_updates(cfg))
    fresh = make_carry(jax.random.PRNGKey(cfg.seed + 1)).train
    return env, learner, fresh, initial_train_state(fresh, learner, init)


def test_policy_folder_gives_actor_and_statistics_fresh_critic(source_run):
    cfg = load_config(None, TOY)
    policy = load_policy(source_run / "policy")
    _, learner, fresh, state = _start_state(cfg, read_initial_weights(source_run / "policy"))
    for a, b in zip(
        jax.tree_util.tree_leaves(_actor(state.params)),
        jax.tree_util.tree_leaves(_actor(policy.params)),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a), b)
    for a, b in zip(
        jax.tree_util.tree_leaves(state.params["params"]["value"]),
        jax.tree_util.tree_leaves(fresh.params["params"]["value"]),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_allclose(np.asarray(state.obs_stats.mean), policy.obs_mean)
    np.testing.assert_allclose(np.asarray(state.obs_stats.std), policy.obs_std, rtol=1e-5)
    # the learner acts as the exported policy does (same normalisation, same mean action)
    obs = np.random.default_rng(0).normal(size=(4, policy.obs_size)).astype(np.float32)
    dist, _ = learner.network.apply(state.params, learner.normalize(state, obs))
    mine = networks.squash(dist.mean, cfg.network.squash, learner.bounds)
    np.testing.assert_allclose(np.asarray(mine), policy.act(obs), atol=1e-6)
    assert int(state.update) == 0  # a new run, not a resume


def test_run_folder_gives_its_checkpointed_critic(source_run):
    cfg = load_config(None, TOY)
    init = read_initial_weights(source_run)
    assert init.critic and init.source == source_run
    _, _, fresh, state = _start_state(cfg, init)
    policy = load_policy(source_run / "policy")  # exported from the same last update
    for a, b in zip(
        jax.tree_util.tree_leaves(state.params), jax.tree_util.tree_leaves(policy.params), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), b)
    assert not np.array_equal(
        np.asarray(state.params["params"]["value"]["Dense_0"]["kernel"]),
        np.asarray(fresh.params["params"]["value"]["Dense_0"]["kernel"]),
    )


def test_train_init_from_runs_and_records_it(source_run, tmp_path):
    cfg = load_config(None, TOY)
    summary = train(cfg, tmp_path / "tuned", quiet=True, init_from=source_run / "policy")
    assert summary["init_from"] == str(source_run / "policy") and summary["updates"] == 2


def test_mismatched_policy_is_one_line_error(source_run, tmp_path, capsys):
    out = tmp_path / "bad"
    args = ["train", "--out", str(out), "--quiet", *TOY, "network.policy_hidden=[8]"]
    assert main([*args, "--init-from", str(source_run / "policy")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "policy has obs" in err[0] and "this run has obs" in err[0]
    assert not out.exists()
    assert main(["train", "--out", str(out), "--init-from", str(tmp_path / "nothing"), *TOY]) == 2
    assert "not a policy folder" in capsys.readouterr().err
    with pytest.raises(InputError, match="not a policy folder"):
        read_initial_weights(tmp_path)


def test_a_symmetric_source_needs_a_symmetric_run(source_run, tmp_path, capsys):
    """The same weights with and without ``network.symmetric`` are two policies: a run that
    starts from a source trained the other way is refused in one line (the shipped generalist is
    symmetric; fine-tuning it without the flag started from another policy), from a policy folder
    and from the run's own checkpoints."""
    from musclerl.resources import assets_dir
    from musclerl.rl.init_from import check_network

    assert not read_initial_weights(source_run / "policy").symmetric
    assert not read_initial_weights(source_run).symmetric
    out = tmp_path / "sym"
    args = ["train", "--out", str(out), "--quiet", *TOY, "network.symmetric=true"]
    assert main([*args, "--init-from", str(source_run / "policy")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "network.symmetric=false" in err[0] and not out.exists()
    shipped = read_initial_weights(assets_dir() / "policies" / "myolegs_walk_general")
    assert shipped.symmetric
    with pytest.raises(InputError, match="add network.symmetric=true"):
        check_network(shipped, False)
    check_network(shipped, True)


def test_a_fine_tune_starts_its_step_at_the_floor_and_warms_a_new_critic(source_run, tmp_path):
    """The first update of a trained policy at ``optimizer.learning_rate`` undid it (a KL of 3-4
    on the shipped generalist): the KL-adaptive step of a fine-tune starts at ``ppo.lr_min``, and a
    critic that is new (a policy folder) is trained alone first; a run folder's critic is not."""
    from musclerl.rl.init_from import FRESH_CRITIC_WARMUP_UPDATES, critic_warmup_updates

    cfg = load_config(None, [*TOY, "ppo.target_kl=0.02", "ppo.lr_min=2e-5"])
    _, _, fresh, state = _start_state(cfg, read_initial_weights(source_run / "policy"))
    assert float(state.learning_rate) == pytest.approx(2e-5) != float(fresh.learning_rate)
    scheduled = load_config(None, [*TOY, "ppo.target_kl=0"])
    _, _, fresh, state = _start_state(scheduled, read_initial_weights(source_run))
    assert float(state.learning_rate) == float(fresh.learning_rate)  # a schedule is the user's
    policy, run = read_initial_weights(source_run / "policy"), read_initial_weights(source_run)
    assert critic_warmup_updates(None, policy) == FRESH_CRITIC_WARMUP_UPDATES > 0
    assert critic_warmup_updates(None, run) == 0 and critic_warmup_updates(None, None) == 0
    assert critic_warmup_updates(3, run) == 3 and critic_warmup_updates(None, None, saved=7) == 7
    # the resolved value is the run's: in its config, and a resume with the saved config agrees
    out = tmp_path / "tuned"
    warm = load_config(None, [*TOY, "ppo.total_env_steps=512"])
    train(warm, out, quiet=True, init_from=source_run / "policy", stop_after_updates=2)
    saved = load_config(out / "config.yaml")
    assert saved.ppo.critic_warmup_updates == FRESH_CRITIC_WARMUP_UPDATES
    summary = train(saved, out, resume=True, quiet=True)
    assert summary["updates"] == 4 and summary["resumed_from_update"] == 2
    with pytest.raises(InputError, match="different config"):
        train(load_config(out / "config.yaml", ["ppo.critic_warmup_updates=0"]), out, resume=True, quiet=True)
