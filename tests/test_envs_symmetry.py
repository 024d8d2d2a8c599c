"""The mirror of a tracking env's observations and actions (musclerl.envs.symmetry), and PPO's use
of it: the observation of a mirrored state on the mirrored clip is the mirrored observation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from musclerl.dynamics.screening import load_dataset
from musclerl.envs import TrackingEnv
from musclerl.envs.symmetry import EnvMirror, SignedPermutation, env_mirror
from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.motion.mirror import partner
from musclerl.resources import assets_dir
from musclerl.rl import networks, ppo
from musclerl.rl import normalization as norm
from musclerl.rl.config import load_config

WALK = assets_dir() / "motions" / "walk_myolegs.npz"
# myolegs' left and right bodies differ by ~0.2 mm at qpos0 (tests/test_motion_mirror.py)
OBS_TOLERANCE_AT_RESET = 2e-3
# after a few control steps the two simulations part by that asymmetry, amplified by the dynamics
# (joint speeds of a few rad/s differ by ~1 %)
OBS_TOLERANCE_AFTER_STEPS = 0.02


@pytest.fixture(scope="module", params=["joint_reference_pd", "excitation"])
def env_and_mirror(request):
    """Two envs: env 0 on the walk, env 1 on its mirror (clip 1)."""
    dataset = load_dataset(WALK, load_model("myolegs"), "myolegs", mirror=True)
    config = {"action": {"space": request.param}, "control_hz": 50, "timestep_s": 0.004}
    env = TrackingEnv("myolegs", dataset.trajectory, config, num_envs=2, threads=1)
    return env, env_mirror(env)


def test_mirrors_are_involutions(env_and_mirror):
    env, mirror = env_and_mirror
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(3, env.observation_size))
    action = rng.normal(size=(3, env.action_size))
    np.testing.assert_array_equal(mirror.observation.apply(mirror.observation.apply(obs)), obs)
    np.testing.assert_array_equal(mirror.action.apply(mirror.action.apply(action)), action)
    assert not np.array_equal(mirror.observation.apply(obs), obs)


@pytest.mark.parametrize("time_s", [0.0, 0.37, 0.81])
def test_mirrored_state_observes_the_mirrored_observation(env_and_mirror, time_s):
    env, mirror = env_and_mirror
    state = env.reset(0, clip=np.array([0, 1]), time_s=np.array([time_s, time_s]))
    obs = np.asarray(state.obs)
    np.testing.assert_allclose(mirror.observation.apply(obs[0]), obs[1], atol=OBS_TOLERANCE_AT_RESET)
    # mirrored actions keep the two simulations mirror images of each other
    rng = np.random.default_rng(1)
    for _ in range(5):
        space = env.actions
        action = space.neutral + 0.15 * (space.high - space.low) * rng.uniform(-1, 1, env.action_size)
        state = env.step(state, np.stack([action, mirror.action.apply(action)]))
        assert state.done[0] == state.done[1]
        obs = np.asarray(state.info["terminal_obs"])  # before any auto-reset
        np.testing.assert_allclose(
            mirror.observation.apply(obs[0]),
            obs[1],
            rtol=OBS_TOLERANCE_AFTER_STEPS,
            atol=OBS_TOLERANCE_AFTER_STEPS,
        )
        if state.done[0]:
            break


def test_actions_swap_sides_with_the_joint_signs(env_and_mirror):
    env, mirror = env_and_mirror
    if env.actions.name == "joint_reference_pd":
        names = list(env.reference.coordinate_names)
        k = names.index("hip_flexion_r")
        assert names[mirror.action.perm[k]] == "hip_flexion_l"
        assert mirror.action.sign[k] == 1.0  # the model mirrors its left axes: flexion is flexion
    else:  # muscles swap with their partners, unsigned
        names = [env.model.actuator(a).name for a in range(env.model.nu)]
        assert [names[p] for p in mirror.action.perm] == [partner(n) for n in names]
        np.testing.assert_array_equal(mirror.action.sign, 1.0)


def test_signed_permutation_blocks_and_names():
    names = ("pelvis", "femur_r", "femur_l")
    swap = SignedPermutation.of_names(names, "site", "test")
    np.testing.assert_array_equal(swap.perm, [0, 2, 1])
    both = SignedPermutation.concat([swap, SignedPermutation(np.array([0]), np.array([-1.0]))])
    np.testing.assert_array_equal(both.apply(np.array([1.0, 2.0, 3.0, 4.0])), [1.0, 3.0, 2.0, -4.0])
    with pytest.raises(InputError, match="no mirror partner 'knee_l'"):
        SignedPermutation.of_names(("knee_r",), "joint", "test")


def test_mirror_augment_needs_a_tracking_env():
    from musclerl.rl.runner import make_trainer

    cfg = load_config(None, ["model=toy", "ppo.mirror_augment=true"])
    with pytest.raises(InputError, match="ppo.mirror_augment=false"):
        make_trainer(cfg, None, 1, None)


def _learner_with_swap(cfg):
    """A learner on 3 observations and 2 actions whose mirror swaps obs 0 and 1 (obs 2 negates)
    and swaps the two actions."""
    mirror = EnvMirror(
        observation=SignedPermutation(np.array([1, 0, 2]), np.array([1.0, 1.0, -1.0])),
        action=SignedPermutation(np.array([1, 0]), np.ones(2)),
    )
    bounds = networks.ActionBounds(low=-np.ones(2), high=np.ones(2), neutral=np.zeros(2))
    return ppo.make_learner(cfg, 3, bounds, 10, None, mirror)


def test_ppo_batch_gets_the_mirrored_copy_of_every_sample():
    cfg = load_config(None, ["ppo.num_envs=4", "ppo.mirror_augment=true", "ppo.symmetry_coef=0.1"])
    learner = _learner_with_swap(cfg)
    state = learner.init(jnp.zeros(2, jnp.uint32))
    rng = np.random.default_rng(0)
    raw = jnp.asarray(rng.normal(size=(5, 4, 3)), jnp.float32)
    batch = ppo.Batch(
        obs=learner.normalize(state, raw),
        action=jnp.asarray(rng.normal(size=(5, 4, 2)), jnp.float32),
        log_prob=jnp.asarray(rng.normal(size=(5, 4)), jnp.float32),
        value=jnp.zeros((5, 4)),
        advantage=jnp.asarray(rng.normal(size=(5, 4)), jnp.float32),
        target=jnp.asarray(rng.normal(size=(5, 4)), jnp.float32),
        original=jnp.ones((5, 4)),
        mirror_obs=jnp.zeros((5, 4, 0)),
    )
    raw_both, both = learner._with_mirrored(state, raw, batch)
    assert both.obs.shape == (5, 8, 3) and raw_both.shape == (5, 8, 3)
    np.testing.assert_allclose(raw_both[:, 4:], np.stack([raw[..., 1], raw[..., 0], -raw[..., 2]], -1))
    np.testing.assert_allclose(both.action[:, 4:], batch.action[..., ::-1])
    for field in ("log_prob", "advantage", "target"):
        np.testing.assert_array_equal(getattr(both, field)[:, 4:], getattr(batch, field))
    np.testing.assert_array_equal(both.original[:, 4:], 0.0)
    # each sample knows its partner's observation (the mirror loss compares the two)
    np.testing.assert_array_equal(both.mirror_obs[:, :4], both.obs[:, 4:])
    np.testing.assert_array_equal(both.mirror_obs[:, 4:], both.obs[:, :4])
    # without the mirror loss no sample carries its partner's observation (no (T, 2N, D) copy)
    _, plain = _learner_with_swap(load_config(None, ["ppo.num_envs=4"]))._with_mirrored(state, raw, batch)
    assert plain.mirror_obs.shape == (5, 8, 0)
    # the statistics learn from both halves, so they are themselves symmetric
    stats = norm.update(state.obs_stats, raw_both)
    np.testing.assert_allclose(stats.mean[0], stats.mean[1], rtol=1e-5)
    np.testing.assert_allclose(stats.mean[2], 0.0, atol=1e-6)


def test_approx_kl_counts_the_collected_samples_only():
    cfg = load_config(None, [])
    mean = jnp.zeros((4, 1))
    apply_fn = lambda params, obs: (networks.Gaussian(mean, params["log_std"]), jnp.zeros(4))  # noqa: E731
    params = {"log_std": jnp.zeros(1)}
    u = jnp.zeros((4, 1))
    now = networks.gaussian_log_prob(u, mean, jnp.zeros(1))
    # collected samples: ratio 1 (KL 0); mirrored copies: ratio 3
    batch = ppo.Batch(
        obs=jnp.zeros((4, 1)),
        action=u,
        log_prob=now - jnp.log(jnp.array([1.0, 1.0, 3.0, 3.0])),
        value=jnp.zeros(4),
        advantage=jnp.ones(4),
        target=jnp.zeros(4),
        original=jnp.array([1.0, 1.0, 0.0, 0.0]),
        mirror_obs=jnp.zeros((4, 0)),
    )
    _, aux = ppo.ppo_loss(params, apply_fn, batch, cfg.ppo)
    assert float(aux["loss/approx_kl"]) == pytest.approx(0.0, abs=1e-6)
    assert float(aux["loss/clip_frac"]) == pytest.approx(0.5)
    assert float(aux["loss/mirror_log_ratio"]) == pytest.approx(np.log(3.0), rel=1e-5)


def test_symmetry_loss_by_hand():
    """mu(o) = W o on 2 actions that swap under the mirror, obs (x, y) -> (y, x): W = [[a, b], [c, d]]
    gives mu(g o) = (a y + b x, c y + d x) and g mu(o) = (c x + d y, a x + b y), so the per-action
    differences are (b - c) x + (a - d) y and (d - a) x + (c - b) y."""
    swap = SignedPermutation(np.array([1, 0]), np.ones(2))
    log_std = jnp.log(jnp.array([0.5, 0.5]))

    def dist(w, obs):
        return networks.Gaussian(obs @ w.T, log_std)

    obs = jnp.array([[1.0, 2.0], [-1.0, 0.5]])
    mirrored = swap.apply(obs)
    symmetric = jnp.array([[1.0, 0.3], [0.3, 1.0]])  # a = d, b = c
    assert float(ppo.symmetry_loss(dist(symmetric, obs), dist(symmetric, mirrored), swap.apply)) < 1e-12
    w = jnp.array([[1.0, 0.5], [0.1, 2.0]])
    diff = np.stack([0.4 * obs[:, 0] - 1.0 * obs[:, 1], 1.0 * obs[:, 0] - 0.4 * obs[:, 1]], -1)
    expected = np.mean((diff / 0.5) ** 2)
    got = ppo.symmetry_loss(dist(w, obs), dist(w, mirrored), swap.apply)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def _pushed_bias(params):
    """``params`` of a two-action policy with its output bias set to (0.5, -0.5): one leg pushed,
    the other held, an asymmetric policy."""
    inner = dict(params["params"])
    policy = dict(inner["policy"])
    last = max(policy, key=lambda k: int(k.split("_")[-1]))
    policy[last] = {**policy[last], "bias": jnp.array([0.5, -0.5])}
    return {"params": {**inner, "policy": policy}}


def test_symmetry_loss_makes_an_asymmetric_policy_symmetric():
    """A PPO update whose policy term is zero (all advantages 0) moves an asymmetric policy
    towards symmetry through the mirror loss alone, and leaves it where it is without it."""

    def asymmetry(coef: float) -> tuple[float, float]:
        cfg = load_config(
            None,
            [
                "ppo.num_envs=8",
                "ppo.mirror_augment=true",
                f"ppo.symmetry_coef={coef}",
                "ppo.target_kl=0",
                "ppo.ent_coef=0",
                "ppo.normalize_advantages=false",  # rounding noise in the zero advantages stays noise
                "optimizer.learning_rate=0.01",
            ],
        )
        learner = _learner_with_swap(cfg)
        state = learner.init(jax.random.PRNGKey(1))
        state = state.replace(params=_pushed_bias(state.params))
        rng = np.random.default_rng(0)
        raw = jnp.asarray(rng.normal(size=(16, 8, 3)), jnp.float32)

        def measure(s):
            obs = learner.normalize(s, raw.reshape(-1, 3))
            mirror_obs = learner.normalize(s, learner.mirror.observation.apply(raw.reshape(-1, 3)))
            d, _ = learner.network.apply(s.params, obs)
            dm, _ = learner.network.apply(s.params, mirror_obs)
            return float(ppo.symmetry_loss(d, dm, learner.mirror.action.apply))

        d, v = learner.network.apply(state.params, learner.normalize(state, raw))
        traj = ppo.Transition(
            obs=learner.normalize(state, raw),
            action=d.mean,
            log_prob=d.log_prob(d.mean),
            value=v,
            reward=jnp.zeros((16, 8)),
            done=jnp.zeros((16, 8), bool),
            terminated=jnp.zeros((16, 8), bool),
            next_value=v / cfg.ppo.gamma,  # every TD error 0: no advantage anywhere
        )
        before = measure(state)
        new, metrics = learner.learn(state, traj, raw)
        return before, measure(new.replace(obs_stats=state.obs_stats))

    before, after = asymmetry(1.0)
    assert before > 1.0 and after < 0.5 * before
    before_off, after_off = asymmetry(0.0)
    assert after_off == pytest.approx(before_off, rel=0.05)


def test_symmetry_coef_needs_mirrored_batches():
    with pytest.raises(InputError, match="ppo.symmetry_coef"):
        load_config(None, ["ppo.symmetry_coef=1.0"])


def _train_tiny_with_mirror(tmp_path, backend: str, overrides: list[str] | None = None):
    from musclerl import load_policy
    from musclerl.rl.runner import build_env, train

    cfg = load_config(
        ["configs/tiny.yaml"],
        [
            *(overrides or []),
            f"backend={backend}",
            "ppo.mirror_augment=true",
            "ppo.num_envs=8",
            "ppo.rollout_steps=16",
            "ppo.total_env_steps=256",
            "network.policy_hidden=[16]",
            "network.value_hidden=[16]",
            "log.progress=false",
            "env.integrator=euler",
        ],
    )
    train(cfg, tmp_path / backend, quiet=True)
    policy = load_policy(tmp_path / backend / "policy")
    return policy, env_mirror(build_env(cfg))


def _assert_symmetric_statistics(policy, mirror):
    # every observation entered the statistics with its mirror image, so they are symmetric
    # (the phase and height are their own mirrors; lateral components have zero mean)
    mean, std = np.asarray(policy.obs_mean), np.asarray(policy.obs_std)
    np.testing.assert_allclose(mirror.observation.apply(mean), mean, atol=1e-4 * (1 + np.abs(mean).max()))
    np.testing.assert_allclose(std[mirror.observation.perm], std, rtol=1e-3)


def test_mirror_augmented_training_on_the_cpu_backend(tmp_path):
    policy, mirror = _train_tiny_with_mirror(tmp_path, "cpu")
    _assert_symmetric_statistics(policy, mirror)


@pytest.mark.slow
def test_mirror_augmented_training_on_the_mjx_backend(tmp_path):
    policy, mirror = _train_tiny_with_mirror(tmp_path, "mjx")
    _assert_symmetric_statistics(policy, mirror)


def test_symmetric_network_makes_each_mirrored_copy_a_sample_of_the_policy():
    """``network.symmetric``: pi(g_a u | g_o o) = pi(u | o) and V(g_o o) = V(o) for any parameters
    (a pushed bias included), so a mirrored copy's ratio is the sample's own; the plain network
    with the same parameters is not symmetric."""
    rng = np.random.default_rng(0)
    raw = jnp.asarray(rng.normal(size=(64, 3)), jnp.float32)
    u = jnp.asarray(rng.normal(size=(64, 2)), jnp.float32)

    def log_probs(symmetric: bool):
        cfg = load_config(None, ["ppo.mirror_augment=true", f"network.symmetric={str(symmetric).lower()}"])
        learner = _learner_with_swap(cfg)
        state = learner.init(jax.random.PRNGKey(1))
        pushed = _pushed_bias(state.params)
        params = {"params": {**pushed["params"], "log_std": jnp.array([-1.0, -0.5])}}
        g_o, g_a = learner.mirror.observation.apply, learner.mirror.action.apply
        d, v = learner.network.apply(params, learner.normalize(state, raw))
        dm, vm = learner.network.apply(params, learner.normalize(state, g_o(raw)))
        return d.log_prob(u), dm.log_prob(g_a(u)), v, vm

    lp, lp_mirror, v, v_mirror = log_probs(True)
    np.testing.assert_allclose(lp_mirror, lp, atol=1e-5)
    np.testing.assert_allclose(v_mirror, v, atol=1e-5)
    lp, lp_mirror, _, _ = log_probs(False)
    assert np.abs(np.asarray(lp_mirror - lp)).mean() > 1.0


def test_symmetric_network_needs_mirrored_batches():
    cfg = load_config(None, ["network.symmetric=true"])
    bounds = networks.ActionBounds(low=-np.ones(2), high=np.ones(2), neutral=np.zeros(2))
    with pytest.raises(InputError, match="ppo.mirror_augment=true"):
        ppo.make_learner(cfg, 3, bounds, 10, None, None)


def test_symmetric_network_trains_exports_and_acts_mirrored(tmp_path):
    """tiny trained with the symmetric network: the exported policy, loaded back, acts as the
    mirror of itself, act(g_o o) = g_a act(o), to float rounding (1.5e-8 measured; the same run
    with the plain network: 6e-3 after its two updates, and growing as it learns)."""
    policy, mirror = _train_tiny_with_mirror(tmp_path, "cpu", ["network.symmetric=true"])
    assert policy.network.mirror is not None and "network_mirror" in policy.config
    rng = np.random.default_rng(0)
    obs = (policy.obs_mean + policy.obs_std * rng.normal(size=(32, policy.obs_size))).astype(np.float32)
    np.testing.assert_allclose(
        policy.act(mirror.observation.apply(obs)), mirror.action.apply(policy.act(obs)), atol=1e-5
    )
