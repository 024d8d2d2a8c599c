"""PPO math: GAE with truncation bootstrapping, clipped losses, running statistics, squashing."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from musclerl.rl import networks, ppo
from musclerl.rl import normalization as norm
from musclerl.rl.config import PpoConfig, load_config


def _gae_reference(reward, value, next_value, done, terminated, gamma, lam):
    """Plain-python GAE over one env (T,) arrays, written from the definition."""
    T = len(reward)
    adv = np.zeros(T)
    running = 0.0
    for t in reversed(range(T)):
        bootstrap = 0.0 if terminated[t] else next_value[t]
        delta = reward[t] + gamma * bootstrap - value[t]
        running = delta + gamma * lam * (0.0 if done[t] else running)
        adv[t] = running
    return adv


def _traj(reward, value, next_value, done, terminated):
    col = lambda x, dt=jnp.float32: jnp.asarray(np.asarray(x)[:, None], dt)  # noqa: E731
    T = len(reward)
    return ppo.Transition(
        obs=jnp.zeros((T, 1, 1)),
        action=jnp.zeros((T, 1, 1)),
        log_prob=jnp.zeros((T, 1)),
        value=col(value),
        reward=col(reward),
        done=col(done, bool),
        terminated=col(terminated, bool),
        next_value=col(next_value),
    )


def test_gae_matches_definition_with_truncation_and_termination():
    rng = np.random.default_rng(0)
    T = 12
    reward, value, next_value = rng.normal(size=T), rng.normal(size=T), rng.normal(size=T)
    done = np.zeros(T, bool)
    terminated = np.zeros(T, bool)
    done[[3, 7]] = True
    terminated[7] = True  # step 3 is a time-limit truncation, step 7 a true termination
    adv, ret = ppo.gae(_traj(reward, value, next_value, done, terminated), 0.97, 0.9)
    expected = _gae_reference(reward, value, next_value, done, terminated, 0.97, 0.9)
    np.testing.assert_allclose(np.asarray(adv)[:, 0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ret)[:, 0], expected + value, rtol=1e-5, atol=1e-6)


def test_truncation_bootstraps_from_terminal_value_but_termination_does_not():
    # One step episodes: reward 1, V(s)=0. A truncated step's target is 1 + gamma * V(terminal_obs).
    traj = _traj([1.0, 1.0], [0.0, 0.0], [5.0, 5.0], [True, True], [False, True])
    adv, _ = ppo.gae(traj, 0.5, 0.95)
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [1.0 + 0.5 * 5.0, 1.0])


def test_clipped_policy_loss_and_value_loss_by_hand():
    cfg = load_config(None, ["ppo.normalize_advantages=false", "ppo.ent_coef=0.0", "ppo.clip_value=true"])
    mean = jnp.array([[0.0], [0.0]])
    apply_fn = lambda params, obs: (networks.Gaussian(mean, params["log_std"]), params["v"])  # noqa: E731
    params = {"log_std": jnp.zeros(1), "v": jnp.array([1.0, -1.0])}
    u = jnp.array([[0.0], [0.0]])
    logp_now = networks.gaussian_log_prob(u, mean, jnp.zeros(1))
    # old log-probs such that the ratios are 1.5 (clipped to 1.2) and 0.5 (clipped to 0.8)
    old = logp_now - jnp.log(jnp.array([1.5, 0.5]))
    batch = ppo.Batch(
        obs=jnp.zeros((2, 1)),
        action=u,
        log_prob=old,
        value=jnp.array([0.0, 0.0]),
        advantage=jnp.array([2.0, -1.0]),
        target=jnp.array([0.5, 0.0]),
        original=jnp.ones(2),
        mirror_obs=jnp.zeros((2, 0)),
    )
    loss, aux = ppo.ppo_loss(params, apply_fn, batch, cfg.ppo)
    # policy: -mean(min(1.5*2, 1.2*2), min(0.5*-1, 0.8*-1)) = -mean(2.4, -0.8) = -0.8
    np.testing.assert_allclose(aux["loss/policy"], -0.8, rtol=1e-5)
    # value: new values 1 and -1 move more than eps=0.2 from old 0 -> max(unclipped, clipped) errors
    v_err = [max((1 - 0.5) ** 2, (0.2 - 0.5) ** 2), max(1.0, 0.2**2)]
    np.testing.assert_allclose(aux["loss/value"], 0.5 * np.mean(v_err), rtol=1e-5)
    np.testing.assert_allclose(loss, -0.8 + 0.5 * 0.5 * np.mean(v_err), rtol=1e-5)
    np.testing.assert_allclose(aux["loss/clip_frac"], 1.0)


def test_gaussian_log_prob_and_entropy_match_scipy():
    from scipy import stats

    u, mean, log_std = np.array([0.3, -1.0]), np.array([0.1, 0.2]), np.array([-0.5, 0.4])
    expected = stats.norm(mean, np.exp(log_std)).logpdf(u).sum()
    np.testing.assert_allclose(networks.gaussian_log_prob(u, mean, log_std), expected, rtol=1e-5)
    np.testing.assert_allclose(
        networks.gaussian_entropy(log_std), stats.norm(mean, np.exp(log_std)).entropy().sum(), rtol=1e-5
    )


@pytest.mark.parametrize("kind", ["sigmoid", "clip"])
def test_squash_maps_into_the_bounds_and_unsquash_inverts_it(kind):
    bounds = networks.ActionBounds(np.array([-1.0]), np.array([1.0]), np.array([0.3]))
    u = jnp.linspace(-10, 10, 101)[:, None]
    a = np.asarray(networks.squash(u, kind, bounds))
    x = np.linspace(-10, 10, 101)[:, None]
    expected = -1.0 + 2.0 / (1.0 + np.exp(-x)) if kind == "sigmoid" else np.clip(x, -1.0, 1.0)
    np.testing.assert_allclose(a, expected, atol=1e-6)
    neutral_u = networks.unsquash(bounds.neutral, kind, bounds)
    np.testing.assert_allclose(
        np.asarray(networks.squash(jnp.asarray(neutral_u), kind, bounds)), 0.3, atol=1e-6
    )


def test_untrained_policy_commands_the_neutral_action():
    cfg = load_config(None, ["network.policy_hidden=[8]", "network.value_hidden=[8]"])
    bounds = networks.ActionBounds(np.zeros(3), np.ones(3), np.full(3, 0.07))
    net = networks.make_network(cfg.network, bounds)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 5)))
    dist, _ = net.apply(params, jax.random.normal(jax.random.PRNGKey(1), (4, 5)))
    action = np.asarray(networks.squash(dist.mean, "sigmoid", bounds))
    np.testing.assert_allclose(action, 0.07, atol=0.01)  # output layer starts at 0.01 scale


def test_lattice_density_entropy_and_samples_match_the_full_covariance_gaussian():
    from scipy import stats

    rng = np.random.default_rng(0)
    weight = jnp.asarray(rng.normal(0, 0.5, (6, 4)))
    dist = networks.Gaussian(
        mean=jnp.asarray(rng.normal(size=(3, 4))),
        log_std=jnp.asarray(rng.normal(-1, 0.1, 4)),
        weight=weight,
        latent_log_std=jnp.asarray(rng.normal(-0.5, 0.1, 6)),
    )
    w = np.asarray(weight) * np.exp(np.asarray(dist.latent_log_std))[:, None]
    cov = w.T @ w + np.diag(np.exp(2 * np.asarray(dist.log_std)))
    u = rng.normal(size=(3, 4))
    expected = [stats.multivariate_normal(np.asarray(dist.mean)[i], cov).logpdf(u[i]) for i in range(3)]
    np.testing.assert_allclose(np.asarray(dist.log_prob(jnp.asarray(u))), expected, rtol=1e-4)
    np.testing.assert_allclose(
        float(dist.entropy()), stats.multivariate_normal(np.zeros(4), cov).entropy(), rtol=1e-5
    )
    one = networks.Gaussian(jnp.zeros((20000, 4)), dist.log_std, weight, dist.latent_log_std)
    samples = np.asarray(one.sample(jax.random.PRNGKey(0)))
    np.testing.assert_allclose(np.cov(samples.T), cov, atol=0.03 * np.abs(cov).max())
    np.testing.assert_allclose(float(one.mean_std()), np.mean(np.sqrt(np.diag(cov))), rtol=1e-5)


def test_reward_scaling_divides_by_the_std_of_discounted_returns():
    gamma = 0.9
    reward = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])  # (T, N)
    done = np.array([[0, 0], [1, 0], [0, 0], [0, 0]], bool)
    traj = _traj(reward[:, 0], np.zeros(4), np.zeros(4), done[:, 0], np.zeros(4, bool))
    traj = traj._replace(reward=jnp.asarray(reward, jnp.float32), done=jnp.asarray(done))
    stats, last, std = ppo.scale_rewards(norm.RunningStats.create(1), jnp.zeros(2), traj, gamma)
    g0 = [1.0, 1.9, 1.0, 1.9]  # env 0: episode ends after step 1, so its return restarts
    g1 = [2.0, 3.8, 5.42, 6.878]
    np.testing.assert_allclose(float(std), np.std(g0 + g1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(last), [1.9, 6.878], rtol=1e-5)


def test_actor_and_critic_gradients_are_clipped_apart():
    grads = {
        "params": {
            "policy": {"w": jnp.full(4, 3.0)},
            "log_std": jnp.zeros(4),
            "value": {"w": jnp.full(4, 50.0)},
        }
    }
    clipped, actor_norm, critic_norm = ppo.clip_actor_critic(grads, 1.0, 10.0)
    np.testing.assert_allclose(float(actor_norm), 6.0, rtol=1e-6)
    np.testing.assert_allclose(float(critic_norm), 100.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(clipped["params"]["policy"]["w"]), 0.5, rtol=1e-5)  # norm 1
    np.testing.assert_allclose(np.asarray(clipped["params"]["value"]["w"]), 5.0, rtol=1e-5)  # norm 10


def test_learning_rate_follows_the_target_kl():
    cfg = PpoConfig(target_kl=0.01, lr_min=1e-5, lr_max=1e-3)
    lr = jnp.asarray(3e-4)
    assert float(ppo.adapt_learning_rate(lr, jnp.asarray(0.05), cfg)) == pytest.approx(2e-4)
    assert float(ppo.adapt_learning_rate(lr, jnp.asarray(0.001), cfg)) == pytest.approx(4.5e-4)
    assert float(ppo.adapt_learning_rate(lr, jnp.asarray(0.01), cfg)) == pytest.approx(3e-4)
    assert float(ppo.adapt_learning_rate(jnp.asarray(9e-4), jnp.asarray(0.0), cfg)) == pytest.approx(1e-3)
    assert float(
        ppo.adapt_learning_rate(lr, jnp.asarray(0.05), dataclasses.replace(cfg, target_kl=0.0))
    ) == pytest.approx(3e-4)


def test_running_stats_match_numpy_over_batches():
    rng = np.random.default_rng(1)
    chunks = [rng.normal(loc=3.0, scale=2.0, size=(n, 4)) for n in (7, 50, 1, 13)]
    stats = norm.RunningStats.create(4)
    for c in chunks:
        stats = norm.update(stats, jnp.asarray(c))
    allx = np.concatenate(chunks)
    np.testing.assert_allclose(stats.mean, allx.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats.var, allx.var(0), rtol=1e-4)
    z = norm.normalize(stats, jnp.asarray(allx), clip=5.0)
    np.testing.assert_allclose(np.asarray(z).mean(0), 0.0, atol=1e-4)
    assert float(jnp.max(jnp.abs(norm.normalize(stats, jnp.full((1, 4), 1e6), clip=5.0)))) == 5.0


def test_network_options_and_learnable_log_std():
    cfg = load_config(
        None,
        [
            "network.layer_norm=true",
            "network.activation=relu",
            "network.policy_hidden=[8,4]",
            "network.init_log_std=-0.7",
        ],
    )
    net = networks.make_network(cfg.network, networks.ActionBounds(np.zeros(3), np.ones(3), np.full(3, 0.5)))
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 5)))
    dist, value = net.apply(params, jnp.ones((2, 5)))
    assert dist.mean.shape == (2, 3) and value.shape == (2,)
    np.testing.assert_allclose(dist.log_std, -0.7)
    names = jax.tree_util.tree_map_with_path(lambda p, _: jax.tree_util.keystr(p), params)
    assert any("LayerNorm" in n for n in jax.tree_util.tree_leaves(names))
    # log_std's gradient of log N(1; mean, exp(log_std)^2) per action: -1 + (1 - mean)^2 exp(-2 log_std)
    grad = jax.grad(lambda p: net.apply(p, jnp.ones((1, 5)))[0].log_prob(jnp.ones((1, 3))).sum())(params)
    mean = np.asarray(net.apply(params, jnp.ones((1, 5)))[0].mean)[0]
    np.testing.assert_allclose(grad["params"]["log_std"], -1.0 + (1.0 - mean) ** 2 * np.exp(1.4), rtol=1e-4)


@pytest.mark.parametrize("name,schedule", [("adam", "linear"), ("adamw", "cosine"), ("muon", "constant")])
def test_optimizers_and_schedules(name, schedule):
    cfg = load_config(
        None,
        [
            f"optimizer.name={name}",
            f"optimizer.schedule={schedule}",
            "optimizer.warmup_updates=2",
            "optimizer.final_fraction=0.1",
        ],
    )
    tx, sched = ppo.make_optimizer(cfg, total_steps=10)  # the direction; the learner scales by sched
    assert float(sched(0)) == 0.0  # warm-up starts at zero
    np.testing.assert_allclose(float(sched(2)), 3e-4, rtol=1e-5)
    if schedule != "constant":
        np.testing.assert_allclose(float(sched(10)), 3e-5, rtol=1e-4)
    params = {"w": jnp.ones((4, 3)), "b": jnp.ones(3)}
    state = tx.init(params)
    updates, _ = tx.update({"w": jnp.full((4, 3), 100.0), "b": jnp.ones(3)}, state, params)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(updates))


def _one_update(lr: float, target_kl: float, warmup: int = 0, base_lr: float | None = None, done: int = 0):
    """One PPO update of a 3-obs, 2-action learner on a fixed random rollout, from step size ``lr``
    (``optimizer.learning_rate`` ``base_lr``, default ``lr``; ``warmup`` critic warm-up updates;
    ``done`` updates already made)."""
    cfg = load_config(
        None,
        [
            "ppo.num_envs=8",
            f"ppo.target_kl={target_kl}",
            "ppo.lr_min=1e-7",
            "ppo.lr_max=1.0",
            f"ppo.critic_warmup_updates={warmup}",
            f"optimizer.learning_rate={lr if base_lr is None else base_lr}",
            "optimizer.schedule=constant",
        ],
    )
    bounds = networks.ActionBounds(low=-np.ones(2), high=np.ones(2), neutral=np.zeros(2))
    learner = ppo.make_learner(cfg, 3, bounds, 10)
    state = learner.init(jax.random.PRNGKey(0)).replace(
        learning_rate=jnp.asarray(lr, jnp.float32), update=jnp.asarray(done, jnp.int32)
    )
    rng = np.random.default_rng(0)
    raw = jnp.asarray(rng.normal(size=(16, 8, 3)), jnp.float32)
    obs = learner.normalize(state, raw)
    dist, value = learner.network.apply(state.params, obs)
    u = dist.sample(jax.random.PRNGKey(1))
    traj = ppo.Transition(
        obs=obs,
        action=u,
        log_prob=dist.log_prob(u),
        value=value,
        reward=jnp.asarray(rng.normal(size=(16, 8)), jnp.float32),
        done=jnp.zeros((16, 8), bool),
        terminated=jnp.zeros((16, 8), bool),
        next_value=value,
    )
    new, metrics = learner.learn(state, traj, raw)
    return state, new, metrics


def test_step_size_is_held_through_an_update_and_adapted_after_it():
    """The KL-adaptive update takes every minibatch step at the step it started with (the same
    parameters as a constant schedule at that step), then sets the next step from the KL the
    whole update made: down after a large step, up after a tiny one."""
    _, adaptive, metrics = _one_update(1e-2, target_kl=0.01)
    _, constant, _ = _one_update(1e-2, target_kl=0.0)
    leaves = zip(
        jax.tree_util.tree_leaves(adaptive.params), jax.tree_util.tree_leaves(constant.params), strict=True
    )
    for a, c in leaves:
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-6, atol=1e-9)
    assert float(metrics["optim/update_kl"]) > 0.02  # a large step: over twice the target
    assert float(adaptive.learning_rate) == pytest.approx(1e-2 / 1.5)
    _, small, metrics = _one_update(1e-6, target_kl=0.01)
    assert float(metrics["optim/update_kl"]) < 0.005
    assert float(small.learning_rate) == pytest.approx(1.5e-6)


def test_critic_warmup_moves_the_critic_alone_at_the_optimisers_rate():
    """During ``ppo.critic_warmup_updates`` the actor (policy MLP and noise) keeps its parameters,
    the critic takes the steps an update at ``optimizer.learning_rate`` would, and the adaptive step
    is held; with the warm-up over, the same update moves the actor."""
    before, warm, metrics = _one_update(1e-5, target_kl=0.01, warmup=1, base_lr=1e-2)
    _, plain, _ = _one_update(1e-2, target_kl=0.01)
    actor = [k for k in before.params["params"] if k != "value"]
    assert actor
    for k in actor:
        for a, b in zip(
            jax.tree_util.tree_leaves(before.params["params"][k]),
            jax.tree_util.tree_leaves(warm.params["params"][k]),
            strict=True,
        ):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for a, b in zip(
        jax.tree_util.tree_leaves(warm.params["params"]["value"]),
        jax.tree_util.tree_leaves(plain.params["params"]["value"]),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-9)
    assert float(metrics["optim/update_kl"]) == 0.0
    assert float(warm.learning_rate) == pytest.approx(1e-5)  # not raised by the zero KL
    before, after, metrics = _one_update(1e-2, target_kl=0.01, warmup=1, done=1)  # warm-up over
    assert float(metrics["optim/update_kl"]) > 0
    assert not np.array_equal(
        np.asarray(jax.tree_util.tree_leaves(before.params["params"][actor[0]])[0]),
        np.asarray(jax.tree_util.tree_leaves(after.params["params"][actor[0]])[0]),
    )
