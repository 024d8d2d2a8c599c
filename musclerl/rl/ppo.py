"""PPO (Schulman et al. 2017) in the shape of PureJaxRL's ``make_train``.

Read top to bottom: :class:`Transition` (one env step of a rollout), :func:`gae` (advantages with
time-limit truncation), :func:`scale_rewards` (rewards over the running std of the discounted return),
:func:`ppo_loss` (clipped policy loss, value loss — clipped only on request —, entropy bonus, and
with mirrored batches the mirror loss of :func:`symmetry_loss`),
:func:`clip_actor_critic` and :func:`adapt_learning_rate` (gradient norms clipped apart; the
step size adapted after each update to the KL it made, :func:`update_kl`),
:func:`make_learner` (minibatch epochs over one rollout: the part shared by both backends) and
:func:`make_train` (the whole update — rollout with ``lax.scan`` over a jittable environment plus
learning — as one pure function for the ``mjx`` backend). The ``cpu`` backend drives the same
learner from :mod:`musclerl.rl.cpu_loop`.

Shapes: T rollout steps, N environments, D observation size, A action size (muscles).

Truncation versus termination: the value target of a step bootstraps from the value of the state
the environment reached, ``V(terminal_obs)`` — the observation *before* the auto-reset — unless
the episode truly terminated (then it bootstraps from 0). The GAE trace is cut at every episode
end, truncated or terminated.

Data parallelism: all arrays with an environment axis carry a sharding constraint that splits that
axis over the ``"data"`` axis of a device mesh (every JAX device, over every host after
``jax.distributed.initialize``); parameters are replicated. XLA then computes each device's part
of the rollout and of every minibatch gradient and all-reduces the gradient sums, so the result is
the one-device result for the same total batch (up to floating-point summation order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from musclerl.errors import InputError
from musclerl.rl import networks
from musclerl.rl import normalization as norm
from musclerl.rl.clip_stats import clip_sums

if TYPE_CHECKING:
    from musclerl.rl.config import OptimizerConfig, PpoConfig, TrainConfig


class Transition(NamedTuple):
    """One rollout step for N envs (leading axes (T, N) once stacked by the scan)."""

    obs: jax.Array  # (N, D) observation normalised with the statistics used to act
    action: jax.Array  # (N, A) pre-squash Gaussian sample u
    log_prob: jax.Array  # (N,) log pi_old(u | obs)
    value: jax.Array  # (N,) V_old(obs)
    reward: jax.Array  # (N,) reward * reward_scale
    done: jax.Array  # (N,) episode ended here (terminated or truncated)
    terminated: jax.Array  # (N,) true termination: no bootstrap
    next_value: jax.Array  # (N,) V_old(next obs before any reset), used for bootstrapping


@flax.struct.dataclass
class TrainState:
    """Everything the learner updates; a checkpoint stores it whole."""

    params: Any
    opt_state: Any
    obs_stats: norm.RunningStats
    rng: jax.Array
    update: jax.Array  # () int32: updates done so far
    learning_rate: jax.Array  # () float32: the step size now (adapted to the target KL, or scheduled)
    return_stats: norm.RunningStats  # (1,) running variance of the discounted return (reward scaling)
    discounted_return: jax.Array  # (N,) each env's running discounted return, for return_stats


# ------------------------------------------------------------------------------------------ math
def gae(traj: Transition, gamma: float, lam: float) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation over a (T, N) rollout -> (advantages, returns), (T, N).

    ``delta_t = r_t + gamma * (1 - terminated_t) * next_value_t - value_t`` and
    ``A_t = delta_t + gamma * lam * (1 - done_t) * A_{t+1}``.
    """
    not_term = 1.0 - traj.terminated.astype(jnp.float32)
    not_done = 1.0 - traj.done.astype(jnp.float32)
    deltas = traj.reward + gamma * not_term * traj.next_value - traj.value

    def backward(adv_next, xs):
        delta, keep = xs
        adv = delta + gamma * lam * keep * adv_next
        return adv, adv

    _, adv = jax.lax.scan(backward, jnp.zeros_like(deltas[0]), (deltas, not_done), reverse=True)
    return adv, adv + traj.value


def scale_rewards(
    stats: norm.RunningStats, discounted: jax.Array, traj: Transition, gamma: float
) -> tuple[norm.RunningStats, jax.Array, jax.Array]:
    """Reward scaling by the running standard deviation of the discounted return (as gymnasium's
    ``NormalizeReward``): ``G_t = gamma G_{t-1} (1 - done_{t-1}) + r_t`` per env over the (T, N)
    rollout, its variance merged into ``stats``; returns (stats, G at the rollout's end (N,),
    std) so that ``r / std`` has returns of about unit scale whatever the reward's size."""

    def step(g, xs):
        reward, done = xs
        g = gamma * g + reward
        return g * (1.0 - done.astype(jnp.float32)), g

    last, returns = jax.lax.scan(step, discounted, (traj.reward, traj.done))
    stats = norm.update(stats, returns[..., None])
    return stats, last, jnp.maximum(stats.std[0], 1e-2)


class Batch(NamedTuple):
    """Flattened training samples (B = T*N)."""

    obs: jax.Array  # (B, D)
    action: jax.Array  # (B, A)
    log_prob: jax.Array  # (B,)
    value: jax.Array  # (B,)
    advantage: jax.Array  # (B,)
    target: jax.Array  # (B,) value target (returns)
    original: jax.Array  # (B,) 1 for collected samples, 0 for their mirrored copies
    # (B, D) the normalised observation of each sample's mirror image, for the mirror loss ((B, 0): off)
    mirror_obs: jax.Array


def symmetry_loss(dist, mirror_dist, mirror_action: Callable) -> jax.Array:
    """Mirror loss (Mittal et al. 2024): ``mean((mu(g_o o) - g_a mu(o))^2 / sigma^2)`` over samples
    and actions, ``dist`` the policy at the observations o (B, D), ``mirror_dist`` at their mirror
    images g_o o; the target ``g_a mu(o)`` and the std sigma (of the mirrored policy's independent
    noise) carry no gradient. In stds so that its size does not depend on the action's units:
    1 means the mirrored mean is one std away, a KL of A/2 between the two action distributions.

    Why: a mirrored copy's PPO ratio is ``pi(g_a u | g_o o) / pi_old(u | o)``, the right importance
    weight for a sample of the mirrored old policy. On an asymmetric policy it is ~0 (the shipped
    walker: log-ratio median -41) and the copy's gradient with it: the augmentation then teaches
    nothing. The loss keeps the policy near the symmetry the augmentation needs."""
    target = jax.lax.stop_gradient(mirror_action(dist.mean))
    std = jax.lax.stop_gradient(jnp.exp(mirror_dist.log_std))
    return jnp.mean(jnp.square((mirror_dist.mean - target) / std))


def ppo_loss(
    params, apply_fn: Callable, batch: Batch, ppo_cfg: PpoConfig, mirror_action: Callable | None = None
):
    """Clipped surrogate + (clipped) value loss - entropy bonus (+ ``ppo_cfg.symmetry_coef`` times
    :func:`symmetry_loss` when ``mirror_action``, the action mirror g_a, is given). Returns (loss,
    aux metrics)."""
    dist, value = apply_fn(params, batch.obs)
    log_prob = dist.log_prob(batch.action)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    adv = batch.advantage
    if ppo_cfg.normalize_advantages:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    eps = ppo_cfg.clip_eps
    policy_loss = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - eps, 1 + eps) * adv))
    value_err = jnp.square(value - batch.target)
    if ppo_cfg.clip_value:
        vclip = ppo_cfg.value_clip
        clipped = batch.value + jnp.clip(value - batch.value, -vclip, vclip)
        value_err = jnp.maximum(value_err, jnp.square(clipped - batch.target))
    value_loss = 0.5 * jnp.mean(value_err)
    entropy = dist.entropy()
    loss = policy_loss + ppo_cfg.vf_coef * value_loss - ppo_cfg.ent_coef * entropy
    aux = {
        "loss/policy": policy_loss,
        "loss/value": value_loss,
        "loss/entropy": entropy,
        # over the collected samples only: a mirrored copy's ratio starts away from 1 by how far
        # the policy is from symmetric, which is not a step the learning rate took
        "loss/approx_kl": jnp.sum(((ratio - 1.0) - log_ratio) * batch.original)
        / jnp.maximum(jnp.sum(batch.original), 1.0),
        "loss/clip_frac": jnp.mean((jnp.abs(ratio - 1.0) > eps).astype(jnp.float32)),
        "policy/std": dist.mean_std(),
        # how near the collected samples' mirrored copies are to the policy: log pi(g_a u | g_o o)
        # - log pi_old(u | o) on the copies (0 without a mirror); below about -1 they teach little
        "loss/mirror_log_ratio": jnp.sum(log_ratio * (1.0 - batch.original))
        / jnp.maximum(jnp.sum(1.0 - batch.original), 1.0),
    }
    if mirror_action is not None and ppo_cfg.symmetry_coef > 0:
        mirror_dist, _ = apply_fn(params, batch.mirror_obs)
        sym = symmetry_loss(dist, mirror_dist, mirror_action)
        loss = loss + ppo_cfg.symmetry_coef * sym
        aux["loss/symmetry"] = sym
    return loss, aux


# ------------------------------------------------------------------------------------------ optimiser
def make_schedule(opt_cfg: OptimizerConfig, total_steps: int) -> optax.Schedule:
    """Learning-rate schedule over ``total_steps`` optimiser steps (with optional linear warm-up)."""
    lr = opt_cfg.learning_rate
    warmup = opt_cfg.warmup_updates
    decay_steps = max(total_steps - warmup, 1)
    final = lr * opt_cfg.final_fraction
    kind = opt_cfg.schedule
    if kind == "constant":
        main = optax.constant_schedule(lr)
    elif kind == "linear":
        main = optax.linear_schedule(lr, final, decay_steps)
    else:
        main = optax.cosine_decay_schedule(lr, decay_steps, alpha=final / lr)
    if warmup <= 0:
        return main
    return optax.join_schedules([optax.linear_schedule(0.0, lr, warmup), main], [warmup])


def make_optimizer(cfg: TrainConfig, total_steps: int) -> tuple[optax.GradientTransformation, Callable]:
    """The optimiser's direction (adam / adamw / muon at unit step size) and the lr schedule.

    The step size is applied by the learner (:func:`apply_step`), so that it can follow the
    schedule or adapt to the target KL; gradients are clipped before, actor and critic apart
    (:func:`clip_actor_critic`).
    """
    opt_cfg = cfg.optimizer
    schedule = make_schedule(opt_cfg, total_steps)
    name = opt_cfg.name
    if name == "adam":
        opt = optax.adam(1.0, eps=opt_cfg.eps)
    elif name == "adamw":
        opt = optax.adamw(1.0, eps=opt_cfg.eps, weight_decay=opt_cfg.weight_decay)
    else:
        from optax.contrib import muon

        opt = muon(1.0, weight_decay=opt_cfg.weight_decay)
    return opt, schedule


def clip_actor_critic(grads: Any, actor_max: float, critic_max: float) -> tuple[Any, jax.Array, jax.Array]:
    """Clip the actor's (policy MLP + log std) and the critic's gradients each by its own global
    norm, so a large value-loss gradient cannot shrink the policy's step. Returns (grads, actor
    norm, critic norm) with the norms before clipping."""
    inner = grads["params"]
    actor = {k: v for k, v in inner.items() if k != "value"}
    critic = inner["value"]

    def clip(tree, max_norm):
        norm_ = optax.global_norm(tree)
        scale = jnp.minimum(1.0, max_norm / (norm_ + 1e-6)) if max_norm > 0 else 1.0
        return jax.tree_util.tree_map(lambda g: g * scale, tree), norm_

    actor, actor_norm = clip(actor, actor_max)
    critic, critic_norm = clip(critic, critic_max)
    return {**grads, "params": {**actor, "value": critic}}, actor_norm, critic_norm


def scale_actor_critic(updates: Any, actor_step: jax.Array, critic_step: jax.Array) -> Any:
    """The optimiser's unit-step ``updates`` times ``actor_step`` on the actor (policy MLP + noise)
    and ``critic_step`` on the critic (the ``value`` subtree), as :func:`clip_actor_critic` splits them."""
    inner = updates["params"]
    scaled = {
        k: jax.tree_util.tree_map(lambda u: actor_step * u, v) for k, v in inner.items() if k != "value"
    }
    critic = jax.tree_util.tree_map(lambda u: critic_step * u, inner["value"])
    return {**updates, "params": {**scaled, "value": critic}}


def adapt_learning_rate(lr: jax.Array, kl: jax.Array, ppo_cfg: PpoConfig) -> jax.Array:
    """KL-adaptive step size: divide by 1.5 when the KL the last update made (:func:`update_kl`)
    exceeds twice ``target_kl``, multiply by 1.5 below half of it; within [``lr_min``,
    ``lr_max``]. ``target_kl`` 0 keeps ``lr``.

    Once per update, not per minibatch as rsl_rl does: a minibatch's KL is measured from the
    rollout's policy, so it starts near 0 in every update and the per-minibatch rule raised the step
    at the start of each update whatever the last one did. Measured on the generalist recipe, from
    a step logged at its floor 3e-5: the update made a KL of 0.108 where 3e-5 held through the
    update makes 0.023 (docs/measurements.md, the learner check)."""
    target = ppo_cfg.target_kl
    if target <= 0:
        return lr
    lr = jnp.where(kl > 2.0 * target, lr / 1.5, jnp.where(kl < 0.5 * target, lr * 1.5, lr))
    return jnp.clip(lr, ppo_cfg.lr_min, ppo_cfg.lr_max)


def update_kl(params, apply_fn: Callable, batch: Batch) -> jax.Array:
    """Approximate KL(pi_old || pi_new), ``mean((r - 1) - log r)`` over the collected samples of
    ``batch`` (B,) (mirrored copies excluded) at ``params``: what one whole update moved the policy."""
    dist, _ = apply_fn(params, batch.obs)
    log_ratio = dist.log_prob(batch.action) - batch.log_prob
    kl = (jnp.exp(log_ratio) - 1.0) - log_ratio
    return jnp.sum(kl * batch.original) / jnp.maximum(jnp.sum(batch.original), 1.0)


# ------------------------------------------------------------------------------------------ sharding
def data_mesh() -> Mesh:
    """A 1-D mesh named ``"data"`` over every JAX device (all hosts)."""
    return Mesh(np.asarray(jax.devices()), ("data",))


def shard_envs(tree: Any, mesh: Mesh | None, axis: int = 0) -> Any:
    """Constrain array leaves to be split over devices along ``axis`` (inside jit)."""
    if mesh is None or mesh.size == 1:
        return tree
    spec = PartitionSpec(*([None] * axis), "data")

    def constrain(x):
        if isinstance(x, jax.Array) and x.ndim > axis and x.shape[axis] % mesh.size == 0:
            return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
        return x

    return jax.tree_util.tree_map(constrain, tree)


# ------------------------------------------------------------------------------------------ learner
@dataclasses.dataclass(frozen=True)
class Learner:
    """The backend-independent parts: network, optimiser, acting and the PPO update."""

    cfg: TrainConfig
    network: networks.ActorCritic
    tx: optax.GradientTransformation
    schedule: Callable
    obs_size: int
    mesh: Mesh | None
    bounds: networks.ActionBounds
    mirror: Any = None  # envs.symmetry.EnvMirror: augment every batch with mirrored copies

    def init(self, rng: jax.Array) -> TrainState:
        rng, key = jax.random.split(rng)
        params = self.network.init(key, jnp.zeros((1, self.obs_size), jnp.float32))
        return TrainState(
            params=params,
            opt_state=self.tx.init(params),
            obs_stats=norm.RunningStats.create(self.obs_size),
            rng=rng,
            update=jnp.zeros((), jnp.int32),
            learning_rate=jnp.asarray(self.schedule(0), jnp.float32),
            return_stats=norm.RunningStats.create(1),
            discounted_return=jnp.zeros(self.cfg.ppo.num_envs, jnp.float32),
        )

    def normalize(self, state: TrainState, obs: jax.Array) -> jax.Array:
        ppo = self.cfg.ppo
        return norm.normalize(state.obs_stats, obs, ppo.obs_clip, ppo.normalize_obs)

    def act(self, state: TrainState, obs: jax.Array, key: jax.Array):
        """Sample for raw ``obs`` (N, D) -> (norm_obs, u, log_prob, value, action in the env's
        bounds)."""
        obs_n = self.normalize(state, obs)
        dist, value = self.network.apply(state.params, obs_n)
        u = dist.sample(key)
        action = networks.squash(u, self.cfg.network.squash, self.bounds)
        return obs_n, u, dist.log_prob(u), value, action

    def value(self, state: TrainState, obs: jax.Array) -> jax.Array:
        """V(obs) for raw observations (N, D) -> (N,)."""
        return self.network.apply(state.params, self.normalize(state, obs))[1]

    def _with_mirrored(self, state: TrainState, raw_obs: jax.Array, batch: Batch) -> tuple[jax.Array, Batch]:
        """(T, N, ...) raw observations and samples -> (T, 2N, ...): each sample and its left/right
        mirror (:mod:`musclerl.envs.symmetry`). The copy keeps the sample's advantage, value target
        and behaviour log-probability (the mirror maps are signed permutations, so the density of
        the mirrored action under the mirrored policy is the sample's own); the PPO ratio of the
        copy, pi(g_a u | g_o o) / pi_old(u | o), then also pulls the policy towards symmetry."""
        raw_mirror = self.mirror.observation.apply(raw_obs)
        mirror_obs = self.normalize(state, raw_mirror)
        copy = batch._replace(
            obs=mirror_obs,
            action=self.mirror.action.apply(batch.action),
            original=jnp.zeros_like(batch.original),
        )
        if self.cfg.ppo.symmetry_coef > 0:  # the mirror loss pairs each sample with its copy
            batch, copy = batch._replace(mirror_obs=mirror_obs), copy._replace(mirror_obs=batch.obs)
        both = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b], axis=1), batch, copy)
        return jnp.concatenate([raw_obs, raw_mirror], axis=1), both

    def learn(self, state: TrainState, traj: Transition, raw_obs: jax.Array):
        """PPO epochs over one (T, N) rollout, then fold the rollout's raw observations
        ``raw_obs`` (T, N, D) into the running statistics. Returns (state, metrics dict)."""
        ppo = self.cfg.ppo
        ret_stats, disc = state.return_stats, state.discounted_return
        if ppo.normalize_rewards:
            ret_stats, disc, reward_std = scale_rewards(ret_stats, disc, traj, ppo.gamma)
        else:
            reward_std = jnp.ones((), jnp.float32)
        traj = traj._replace(reward=traj.reward * ppo.reward_scale / reward_std)
        adv, target = gae(traj, ppo.gamma, ppo.gae_lambda)
        flat = Batch(
            obs=traj.obs,
            action=traj.action,
            log_prob=traj.log_prob,
            value=traj.value,
            advantage=adv,
            target=target,
            original=jnp.ones_like(adv),
            mirror_obs=jnp.zeros((*adv.shape, 0), traj.obs.dtype),
        )
        if self.mirror is not None:
            raw_obs, flat = self._with_mirrored(state, raw_obs, flat)
        flat = jax.tree_util.tree_map(lambda x: x.reshape((x.shape[0] * x.shape[1], *x.shape[2:])), flat)
        n_mb = ppo.num_minibatches
        size = flat.obs.shape[0] // n_mb
        grad_fn = jax.value_and_grad(ppo_loss, has_aux=True)
        mirror_action = self.mirror.action.apply if self.mirror is not None else None

        # critic warm-up (ppo.critic_warmup_updates): the actor holds still, the critic learns at
        # the optimiser's own rate, and the adaptive step waits for the actor's first update
        warming = state.update < (ppo.critic_warmup_updates or 0)
        critic_lr = jnp.float32(self.cfg.optimizer.learning_rate)

        def minibatch_step(carry, mb: Batch):
            params, opt_state, lr = carry
            mb = shard_envs(mb, self.mesh)
            (_, aux), grads = grad_fn(params, self.network.apply, mb, ppo, mirror_action)
            grads, aux["loss/grad_norm_actor"], aux["loss/grad_norm_critic"] = clip_actor_critic(
                grads, ppo.max_grad_norm, ppo.max_grad_norm_critic
            )
            updates, opt_state = self.tx.update(grads, opt_state, params)
            updates = scale_actor_critic(
                updates, jnp.where(warming, 0.0, lr), jnp.where(warming, critic_lr, lr)
            )
            params = optax.apply_updates(params, updates)
            return (params, opt_state, lr), aux

        def epoch(carry, key):
            perm = jax.random.permutation(key, flat.obs.shape[0])
            mbs = jax.tree_util.tree_map(lambda x: x[perm].reshape((n_mb, size, *x.shape[1:])), flat)
            return jax.lax.scan(minibatch_step, carry, mbs)

        rng, key = jax.random.split(state.rng)
        keys = jax.random.split(key, ppo.update_epochs)
        steps_before = state.update * ppo.update_epochs * n_mb
        lr0 = (
            state.learning_rate
            if ppo.target_kl > 0
            else jnp.asarray(self.schedule(steps_before), jnp.float32)
        )
        (params, opt_state, _), aux = jax.lax.scan(epoch, (state.params, state.opt_state, lr0), keys)
        metrics = jax.tree_util.tree_map(jnp.mean, aux)
        metrics["optim/learning_rate"] = lr0
        metrics["optim/update_kl"] = update_kl(params, self.network.apply, flat)
        lr = jnp.where(warming, lr0, adapt_learning_rate(lr0, metrics["optim/update_kl"], ppo))
        metrics["value/explained_variance"] = 1.0 - jnp.var(target - traj.value) / (jnp.var(target) + 1e-8)
        metrics["value/reward_std"] = reward_std
        stats = norm.update(state.obs_stats, raw_obs) if ppo.normalize_obs else state.obs_stats
        new = TrainState(
            params=params,
            opt_state=opt_state,
            obs_stats=stats,
            rng=rng,
            update=state.update + 1,
            learning_rate=lr,
            return_stats=ret_stats,
            discounted_return=disc,
        )
        return new, metrics


def make_learner(
    cfg: TrainConfig,
    obs_size: int,
    bounds: networks.ActionBounds,
    total_updates: int,
    mesh: Mesh | None = None,
    mirror: Any = None,
) -> Learner:
    """The learner for observations of ``obs_size`` and actions within ``bounds`` (whose neutral
    action the untrained policy's mean starts at); ``mirror`` (an ``envs.symmetry.EnvMirror``)
    adds the mirrored copy of every sample to each PPO batch."""
    ppo = cfg.ppo
    tx, schedule = make_optimizer(cfg, total_updates * ppo.update_epochs * ppo.num_minibatches)
    if cfg.network.symmetric and mirror is None:
        raise InputError("network.symmetric", "needs the mirrored batches: set ppo.mirror_augment=true")
    symmetric = networks.network_mirror(mirror) if cfg.network.symmetric else None
    return Learner(
        cfg=cfg,
        network=networks.make_network(cfg.network, bounds, symmetric),
        tx=tx,
        schedule=schedule,
        obs_size=obs_size,
        mesh=mesh,
        bounds=bounds,
        mirror=mirror,
    )


# ------------------------------------------------------------------------------------------ episodes
@flax.struct.dataclass
class EpisodeTracker:
    """Per-env running return/length and sums over the episodes that ended since the last read."""

    ret: jax.Array  # (N,) undiscounted return so far (unscaled reward)
    length: jax.Array  # (N,) steps so far
    sum_ret: jax.Array  # () sum of returns of finished episodes
    sum_len: jax.Array  # ()
    count: jax.Array  # () finished episodes
    terminated: jax.Array  # () how many of them terminated early

    @classmethod
    def create(cls, num_envs: int) -> EpisodeTracker:
        z = jnp.zeros((), jnp.float32)
        return cls(
            ret=jnp.zeros(num_envs, jnp.float32),
            length=jnp.zeros(num_envs, jnp.float32),
            sum_ret=z,
            sum_len=z,
            count=z,
            terminated=z,
        )

    def step(self, reward, done, terminated) -> EpisodeTracker:
        ret, length = self.ret + reward, self.length + 1.0
        d = done.astype(jnp.float32)
        return EpisodeTracker(
            ret=ret * (1 - d),
            length=length * (1 - d),
            sum_ret=self.sum_ret + jnp.sum(ret * d),
            sum_len=self.sum_len + jnp.sum(length * d),
            count=self.count + jnp.sum(d),
            terminated=self.terminated + jnp.sum(terminated.astype(jnp.float32) * d),
        )

    def read(self) -> tuple[dict[str, jax.Array], EpisodeTracker]:
        """Metrics of the finished episodes (NaN if none) and a tracker with the sums cleared."""
        c = self.count
        out = {
            "episode/return": jnp.where(c > 0, self.sum_ret / jnp.maximum(c, 1), jnp.nan),
            "episode/length": jnp.where(c > 0, self.sum_len / jnp.maximum(c, 1), jnp.nan),
            "episode/count": c,
            "episode/termination_rate": jnp.where(c > 0, self.terminated / jnp.maximum(c, 1), jnp.nan),
        }
        z = jnp.zeros((), jnp.float32)
        return out, self.replace(sum_ret=z, sum_len=z, count=z, terminated=z)


# ------------------------------------------------------------------------------------------ jax envs
class Carry(NamedTuple):
    """What one jitted update step threads through (all pytrees)."""

    train: TrainState
    env_state: Any
    episodes: EpisodeTracker


def make_train(cfg: TrainConfig, env, total_updates: int, mesh: Mesh | None = None, mirror: Any = None):
    """PPO on a jittable environment (``env.reset(rng)``, ``env.step(state, action)`` pure).

    Returns ``(learner, init, update_step, train)``:
    ``init(rng) -> Carry``; ``update_step(carry) -> (carry, metrics)`` does one rollout of
    ``ppo.rollout_steps`` steps for every env and one PPO update (jit it, or scan it);
    ``train(rng) -> (carry, metrics stacked over updates)`` runs ``total_updates`` updates as one
    ``lax.scan`` — the PureJaxRL form, used by tests and by the runner in chunks.
    """
    bounds = networks.ActionBounds.of(env)
    learner = make_learner(cfg, env.observation_size, bounds, total_updates, mesh, mirror)
    ppo = cfg.ppo

    def init(rng: jax.Array) -> Carry:
        rng, env_key = jax.random.split(rng)
        env_state = shard_envs(env.reset(env_key), mesh)
        return Carry(learner.init(rng), env_state, EpisodeTracker.create(ppo.num_envs))

    def env_step(carry: tuple, _):
        train, env_state, episodes = carry
        rng, key = jax.random.split(train.rng)
        train = train.replace(rng=rng)
        obs_n, u, log_prob, value, action = learner.act(train, env_state.obs, key)
        nxt = shard_envs(env.step(env_state, action), mesh)
        next_value = learner.value(train, nxt.info["terminal_obs"])
        tr = Transition(
            obs=obs_n,
            action=u,
            log_prob=log_prob,
            value=value,
            reward=nxt.reward,
            done=nxt.done,
            terminated=nxt.terminated,
            next_value=next_value,
        )
        episodes = episodes.step(nxt.reward, nxt.done, nxt.terminated)
        env_metrics = jax.tree_util.tree_map(jnp.mean, dict(nxt.metrics))
        # the clip each env was on during this step, for per-clip results (tracking envs)
        per_clip = (env_state.info["clip"], nxt.metrics["site_err_m"]) if "clip" in env_state.info else ()
        return (train, nxt, episodes), (tr, env_state.obs, env_metrics, per_clip)

    def update_step(carry: Carry) -> tuple[Carry, dict[str, jax.Array]]:
        (train, env_state, episodes), (traj, raw_obs, env_metrics, per_clip) = jax.lax.scan(
            env_step, tuple(carry), None, length=ppo.rollout_steps
        )
        traj = shard_envs(traj, mesh, axis=1)
        train, metrics = learner.learn(train, traj, raw_obs)
        ep_metrics, episodes = episodes.read()
        metrics.update(ep_metrics)
        metrics.update({f"env/{k}": jnp.mean(v) for k, v in env_metrics.items()})
        metrics["episode/truncation_frac"] = jnp.mean(traj.done & ~traj.terminated)
        if per_clip:
            num_clips = env_state.info["clip_fail_rate"].shape[0]
            clip, site_err_m = per_clip
            metrics["clip_sums"] = clip_sums(clip, traj.done, traj.terminated, site_err_m, num_clips, jnp)
        return Carry(train, env_state, episodes), metrics

    def train(rng: jax.Array):
        return jax.lax.scan(lambda c, _: update_step(c), init(rng), None, length=total_updates)

    return learner, init, update_step, train
