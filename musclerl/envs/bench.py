"""``musclerl bench env``: environment steps/s against raw MuJoCo stepping, measured in one run.

cpu backend: our env (physics + observations + rewards + terminations + auto-resets, random
excitations) against a raw ``mujoco.batch.Batch`` of the same model, the same number of
simulations and threads, doing the same ``substeps`` mj_step per control step from the same
states (copied from the env before each step, untimed) with the same controls and nothing
else. Both are reported as control steps per second summed over envs: ``env_steps_per_s``,
``raw_steps_per_s``, ``ratio`` = env / raw; ``*_mj_steps_per_s`` multiply by ``substeps``.
``raw_loop_mj_steps_per_s`` is a plain Python loop of ``mujoco.mj_step`` on one MjData, for
reference.

mjx backend: ``jax.jit`` of ``lax.scan`` over ``env.step``; compile time and steps/s.
"""

from __future__ import annotations

import argparse
import sys
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="myolegs", help="registry name or MJCF path")
    parser.add_argument("--motion", default=None, help="Trajectory .npz (default: a synthetic sine gait)")
    parser.add_argument("--backend", default="cpu", choices=["cpu", "mjx"])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--substeps", type=int, default=None, help="physics steps per control step (config default 5)"
    )
    parser.add_argument("--steps", type=int, default=100, help="timed control steps")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from musclerl.benchmark import print_result
    from musclerl.envs.config import EnvConfig
    from musclerl.errors import InputError

    if args.num_envs < 1 or args.threads < 1 or args.steps < 1:
        raise InputError("bench env", "--num-envs, --threads and --steps must be >= 1")
    config = EnvConfig()
    if args.substeps is not None:
        config = EnvConfig.from_dict({"substeps": args.substeps})
    dataset = _dataset(args.model, args.motion)
    if args.backend == "cpu":
        result = bench_cpu(args.model, dataset, config, args.num_envs, args.threads, args.steps)
    else:
        result = bench_mjx(args.model, dataset, config, args.num_envs, args.steps)
    print_result(result, args.json, key_width=28)
    return 0


def _dataset(model: str, motion: str | None):
    from musclerl.envs.motions import sine_dataset
    from musclerl.motion.trajectory import Trajectory

    return Trajectory.load(motion) if motion else sine_dataset(model, num_clips=3, duration_s=4.0)


def bench_cpu(model: str, dataset, config, num_envs: int, threads: int, steps: int) -> dict:
    """Our env vs raw batched mj_step on the same compiled model; see the module docstring."""
    import mujoco
    import mujoco.batch
    import numpy as np
    from tqdm import tqdm

    from musclerl.envs.tracking import TrackingEnv

    env = TrackingEnv(model, dataset, config, backend="cpu", num_envs=num_envs, threads=threads)
    rng = np.random.default_rng(0)
    actions = rng.uniform(0.0, 0.5, size=(steps + 5, num_envs, env.action_size))
    substeps = config.substeps

    # raw: a plain (non-persistent) batch doing substeps x mj_step from the very states the env
    # starts each step from (state rows copied in, untimed), with the same controls
    raw = mujoco.batch.Batch(env.model, nsim=num_envs, nthread=threads)
    live = env._physics.batch.state  # the env's state rows (nsim, nstate), read only here
    raw_ctrl = raw.bind("ctrl")

    def run(n: int, state, bar: bool):
        t_env = t_raw = 0.0
        for k in tqdm(range(n), desc="env + raw steps", disable=not bar, file=sys.stderr, leave=False):
            rows = live.copy()
            start = time.perf_counter()
            state = env.step(state, actions[k])
            t_env += time.perf_counter() - start
            raw.state[:] = rows
            raw_ctrl[:] = actions[k]
            start = time.perf_counter()
            raw.step(nstep=substeps)
            t_raw += time.perf_counter() - start
        return t_env, t_raw, state

    state = env.reset(0)
    _, _, state = run(5, state, False)  # warm up
    t_env, t_raw, state = run(steps, state, True)
    env_sps, raw_sps = steps * num_envs / t_env, steps * num_envs / t_raw

    data = env.physics_data(0)
    loop_n = max(200, 20 * substeps)
    start = time.perf_counter()
    for k in range(loop_n):
        data.ctrl[:] = actions[k % len(actions), 0]
        mujoco.mj_step(env.model, data)
    loop_sps = loop_n / (time.perf_counter() - start)
    return {
        "backend": "cpu",
        "model": model,
        "num_envs": num_envs,
        "threads": threads,
        "substeps": substeps,
        "env_steps_per_s": env_sps,
        "raw_steps_per_s": raw_sps,
        "ratio": env_sps / raw_sps,
        "env_mj_steps_per_s": env_sps * substeps,
        "raw_mj_steps_per_s": raw_sps * substeps,
        "raw_loop_mj_steps_per_s": loop_sps,
        "obs_dim": env.observation_size,
        "nu": env.action_size,
    }


def bench_mjx(model: str, dataset, config, num_envs: int, steps: int) -> dict:
    """Compile time and steps/s of ``jit(scan(env.step))`` over ``steps`` control steps."""
    import jax
    import jax.numpy as jnp

    from musclerl.envs.tracking import TrackingEnv

    env = TrackingEnv(model, dataset, config, backend="mjx", num_envs=num_envs)

    def rollout(state, key):
        def body(s, k):
            a = jax.random.uniform(k, (num_envs, env.action_size), maxval=0.5)
            s = env.step(s, a)
            return s, s.reward

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    start = time.perf_counter()
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    jax.block_until_ready(state)
    reset_s = time.perf_counter() - start
    start = time.perf_counter()
    compiled = jax.jit(rollout).lower(state, jax.random.PRNGKey(1)).compile()
    compile_s = time.perf_counter() - start
    state, _ = compiled(state, jax.random.PRNGKey(1))
    jax.block_until_ready(state)
    start = time.perf_counter()
    state, rewards = compiled(state, jax.random.PRNGKey(2))
    jax.block_until_ready(rewards)
    elapsed = time.perf_counter() - start
    return {
        "backend": "mjx",
        "model": model,
        "num_envs": num_envs,
        "substeps": config.substeps,
        "device": str(jax.devices()[0]),
        "env_steps_per_s": steps * num_envs / elapsed,
        "compile_s": compile_s,
        "reset_compile_s": reset_s,
        "mean_reward": float(jnp.mean(rewards)),
        "obs_dim": env.observation_size,
        "nu": env.action_size,
    }
