"""``musclerl bench env``: environment steps/s against raw MuJoCo stepping (and thread scaling).

The environment is either a training config's (``--config CFG [key=value ...]``: its model,
dataset, ``env`` section and ``ppo.num_envs``, built as training builds it — e.g. the demo's
``joint_reference_pd`` with the PD law inverted before every physics step), or, without a
config, ``--model`` on ``--motion`` (default a synthetic sine gait) with the default env config
(excitation actions). ``--num-envs`` and ``--threads`` override the config's. With more than
one thread the same env is also built on one thread and stepped in turn with it, for
``thread_speedup`` (:mod:`musclerl.bench.env_steps` says what every number is).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", help="training config(s): the env training runs")
    parser.add_argument("--model", default=None, help="registry name or MJCF path (default myolegs)")
    parser.add_argument("--motion", default=None, help="Trajectory .npz (default: a synthetic sine gait)")
    parser.add_argument(
        "--backend", default=None, choices=["cpu", "mjx"], help="default: the config's, or cpu"
    )
    parser.add_argument("--num-envs", type=int, default=None, help="default: ppo.num_envs, or 64")
    parser.add_argument("--threads", type=int, default=None, help="default: the config's threads, or 2")
    parser.add_argument(
        "--substeps", type=int, default=None, help="physics steps per control step (config default 5)"
    )
    parser.add_argument("--steps", type=int, default=100, help="timed control steps")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of --config")


def _config(args: argparse.Namespace):
    """The training config the env is built from: ``--config`` (and overrides) or the flags."""
    import dataclasses

    from musclerl.errors import InputError
    from musclerl.rl.config import load_config

    if args.config is not None:
        if args.model is not None or args.motion is not None or args.substeps is not None:
            raise InputError("bench env", "--model, --motion and --substeps are the config's: use key=value")
        cfg = load_config(args.config, args.overrides)
    else:
        if args.overrides:
            raise InputError("bench env", "key=value overrides need --config")
        substeps = [] if args.substeps is None else [f"env.substeps={args.substeps}"]
        cfg = load_config(
            None, [f"model={args.model or 'myolegs'}", "ppo.num_envs=64", "threads=2", *substeps]
        )
    if args.backend is not None:
        cfg = dataclasses.replace(cfg, backend=args.backend)
    if args.num_envs is not None:
        cfg = dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, num_envs=args.num_envs))
    if args.threads is not None:
        cfg = dataclasses.replace(cfg, threads=args.threads)
    return cfg


def build(cfg, motion: str | None, threads: int):
    """The env of ``cfg`` on ``threads`` threads: on the config's dataset as training builds it,
    or (``motion`` given, or no config) on that Trajectory / a synthetic sine gait."""
    import dataclasses

    from musclerl.envs import TrackingEnv
    from musclerl.envs.motions import sine_dataset
    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.runner import build_env

    if motion is False:
        return build_env(dataclasses.replace(cfg, threads=threads))
    dataset = Trajectory.load(motion) if motion else sine_dataset(cfg.model, num_clips=3, duration_s=4.0)
    return TrackingEnv(
        cfg.model,
        dataset,
        cfg.env,
        backend=cfg.backend,
        num_envs=cfg.ppo.num_envs,
        threads=threads,
    )


def run(args: argparse.Namespace) -> int:
    from musclerl.bench import print_result
    from musclerl.bench.env_steps import bench_cpu, bench_mjx
    from musclerl.errors import InputError
    from musclerl.jax_setup import inline_cpu_dispatch

    inline_cpu_dispatch()  # before anything computes with JAX (musclerl.jax_setup)

    for name in ("num_envs", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise InputError("bench env", "--num-envs, --threads and --steps must be >= 1")
    if args.steps < 1:
        raise InputError("bench env", "--num-envs, --threads and --steps must be >= 1")
    cfg = _config(args)
    motion = False if args.config is not None else args.motion
    threads = cfg.threads
    env = build(cfg, motion, threads)
    if cfg.backend == "cpu":
        single = build(cfg, motion, 1) if threads > 1 else None
        result = bench_cpu(env, args.steps, single)
    else:
        result = bench_mjx(env, args.steps)
    result = {"model": cfg.model, "config": ",".join(args.config or []) or None, **result}
    print_result(result, args.json, key_width=28)
    return 0
