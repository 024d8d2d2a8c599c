"""``musclerl bench train``: env-steps/s of full PPO training versus env-only stepping.

Both are measured in the same process on the same environment batch after a warm-up (compile),
interleaved (one update, one env-only rollout, ...) so both see the same machine load: ``train``
runs whole updates (rollout with the policy + PPO epochs); ``env only`` steps the same envs the
same number of times with fixed excitations around 0.5 (what an untrained policy sends).
``ratio = train / env_only`` is the fraction of raw environment throughput that training keeps.
"""

from __future__ import annotations

import argparse
import json
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", default="cpu", choices=["cpu", "mjx"])
    parser.add_argument("--config", default=None, help="YAML config (default configs/demo.yaml)")
    parser.add_argument("--updates", type=int, default=3, help="timed PPO updates (after one warm-up)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides")


def measure(cfg: dict, updates: int) -> dict:
    """Time ``updates`` training updates and as many env-only rollouts; returns the numbers."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from musclerl.rl.ppo import data_mesh
    from musclerl.rl.runner import build_env, make_trainer

    env = build_env(cfg)
    _, init, update_step, _ = make_trainer(cfg, env, updates + 1, data_mesh())
    ppo = cfg.ppo
    steps = ppo.num_envs * ppo.rollout_steps

    t0 = time.perf_counter()
    carry = init(jax.random.PRNGKey(cfg.seed))
    carry, metrics = update_step(carry)  # warm-up: compiles everything
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - t0

    # Env-only excitations like an untrained policy's (physics cost depends on the motion: a model
    # collapsing on the floor has more contacts), i.e. 0.5 +- 0.1 per muscle, fixed per env.
    gen = np.random.default_rng(0)
    excitation = np.clip(0.5 + 0.1 * gen.standard_normal((ppo.num_envs, env.action_size)), 0, 1)
    excitation = excitation.astype(np.float32)
    if cfg.backend == "mjx":

        def scan_rollout(state):
            def body(s, _):
                return env.step(s, jnp.asarray(excitation)), None

            return jax.lax.scan(body, state, None, length=ppo.rollout_steps)[0]

        rollout = jax.jit(scan_rollout)
        carry = carry._replace(env_state=jax.block_until_ready(rollout(carry.env_state)))  # compile
    else:

        def rollout(state):
            for _ in range(ppo.rollout_steps):
                state = env.step(state, excitation)
            return state

    # Interleaved, so both see the same machine load; the env-only rollouts continue the training
    # envs' state (the cpu backend's physics lives in the env), and training continues from there.
    train_s = env_s = 0.0
    for _ in range(updates):
        t0 = time.perf_counter()
        carry, metrics = update_step(carry)
        jax.block_until_ready(metrics)
        train_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        state = rollout(carry.env_state)
        jax.block_until_ready(state.obs)
        env_s += time.perf_counter() - t0
        carry = carry._replace(env_state=state)

    train_rate = updates * steps / train_s
    env_rate = updates * steps / env_s
    return {
        "backend": cfg.backend,
        "model": cfg.model,
        "num_envs": ppo.num_envs,
        "rollout_steps": ppo.rollout_steps,
        "updates": updates,
        "devices": jax.device_count(),
        "compile_s": compile_s,
        "train_env_steps_per_s": train_rate,
        "env_only_steps_per_s": env_rate,
        "ratio": train_rate / env_rate,
    }


def run(args: argparse.Namespace) -> int:
    from musclerl.errors import InputError
    from musclerl.jax_setup import inline_cpu_dispatch
    from musclerl.rl.config import CONFIG_DIR, load_config

    inline_cpu_dispatch()  # before anything computes with JAX (musclerl.jax_setup)

    if args.updates < 1:
        raise InputError("--updates", "must be >= 1")
    cfg = load_config(args.config or CONFIG_DIR / "demo.yaml", [f"backend={args.backend}", *args.overrides])
    result = measure(cfg, args.updates)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['model']} on {result['backend']}, "
            f"{result['num_envs']} envs x {result['rollout_steps']} "
            f"steps per update, {result['updates']} updates (compile {result['compile_s']:.1f} s)"
        )
        print(f"  training  {result['train_env_steps_per_s']:10,.0f} env-steps/s")
        print(f"  env only  {result['env_only_steps_per_s']:10,.0f} env-steps/s")
        print(f"  ratio     {result['ratio']:10.2f}")
    return 0
