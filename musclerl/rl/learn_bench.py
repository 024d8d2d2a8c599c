"""``musclerl bench learn``: does a policy learn to imitate? Train on a fixed budget, then test.

The test is what a user looks at: the trained policy's **deterministic** rollout from the clip's
first frame (t = 0, no reference-state initialisation) on the MuJoCo C backend, for up to
``--seconds`` of simulated time with the episode horizon lifted to that length, and:

- ``tracked_s``: simulated seconds before the first termination (fall or deviation), or the
  whole test if none;
- ``success``: no termination within the test;
- ``mpjpe_m``: mean root-relative site error over the tracked frames (the tracked sites minus
  the root position, simulated against reference: MPJPE as in motion imitation papers);
  ``site_err_world_m``: the same without removing the root (global drift included);
- plus the training's wall time, env steps and the first/last logged episode lengths.

``python -m musclerl.rl.learn_bench`` is not needed: ``musclerl bench learn --config CFG
[key=value ...]`` does it all and prints one line per number (``--json``: one object).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", help="YAML config(s) (default configs/demo.yaml)")
    parser.add_argument("--out", default=None, help="run folder (default runs/bench-learn-<time>)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the deterministic test, s")
    parser.add_argument("--policy", default=None, help="skip training: test this policy (or run folder)")
    parser.add_argument("--motion", default=None, help="test on this Trajectory (default: the config's)")
    parser.add_argument(
        "--video", default=None, help="also write an MP4 of the test (and a PNG frame strip beside it)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides")


def evaluation_env(policy, motion, seconds: float):
    """The cpu environment ``policy``'s training config describes, on ``motion`` (Trajectory or
    path), with its horizon lifted to the test's ``seconds``; returns (env, test length in steps)."""
    from musclerl.envs import EnvConfig, TrackingEnv
    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.export import check_motion

    if not isinstance(motion, Trajectory):
        source, motion = motion, Trajectory.load(motion)
        check_motion(policy, motion, source)
    train_cfg = policy.config["train_config"]
    env_cfg = EnvConfig.from_dict(train_cfg.get("env", {}), source="policy config: env")
    env = TrackingEnv(train_cfg["model"], motion, env_cfg, backend="cpu", num_envs=1)
    steps = int(round(seconds / env.control_dt_s))
    env.config = dataclasses.replace(env.config, horizon=steps + 1)  # the test decides its length
    return env, steps


def tracking_test(policy, motion, seconds: float = 10.0, clip: int = 0) -> dict[str, Any]:
    """Deterministic rollout of ``policy`` (a loaded export) from t = 0 of ``clip`` of ``motion``
    (Trajectory or path), in the environment its training config describes."""
    from musclerl.evaluate.rollout import rollout

    env, steps = evaluation_env(policy, motion, seconds)
    rec = rollout(env, lambda obs: policy.act(obs, deterministic=True), clip=clip, max_steps=steps)
    tracked = rec.time_s[1:]  # frame 0 is the reset state
    local = rec.mpjpe_local_m[1:]
    world = rec.mpjpe_m[1:]
    return {
        "tracked_s": float(tracked[-1] - rec.time_s[0] + env.control_dt_s) if len(tracked) else 0.0,
        "test_s": float(steps * env.control_dt_s),
        "success": bool(not rec.early_termination and len(tracked) >= steps),
        "mpjpe_m": float(np.mean(local)) if len(local) else float("nan"),
        "site_err_world_m": float(np.mean(world)) if len(world) else float("nan"),
    }


def record_test(policy, motion, seconds: float, video: Path) -> dict[str, Any]:
    """The same deterministic test as :func:`tracking_test`, rendered with the reference as a
    ghost: ``video`` (MP4) and ``<video>.png`` (a strip of six frames)."""
    from musclerl.envs.video import record_rollout

    env, steps = evaluation_env(policy, motion, seconds)
    strip = video.with_suffix(".png")
    record_rollout(
        env, lambda obs: policy.act(obs, deterministic=True), video, num_steps=steps, clip=0, strip_path=strip
    )
    return {"video": str(video), "frame_strip": str(strip)}


def episode_lengths(run_dir: Path) -> tuple[float, float]:
    """Mean episode length (control steps) of the first and the last logged update."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    lengths = [r["episode/length"] for r in rows if r.get("episode/length") == r.get("episode/length")]
    return (float(lengths[0]), float(lengths[-1])) if lengths else (float("nan"), float("nan"))


def run(args: argparse.Namespace) -> int:
    from musclerl.benchmark import print_result
    from musclerl.fileio import check_outputs
    from musclerl.rl.config import CONFIG_DIR, load_config, resolve_path
    from musclerl.rl.export import load_policy

    result: dict[str, Any] = {}
    video = Path(args.video) if args.video else None
    check_outputs(
        {"--video": video, "--video (frame strip)": video and video.with_suffix(".png")},
        folders={"--out": args.out},
        inputs=[args.policy, args.motion, *(args.config or [])],
    )
    if args.video:  # fail before the training, not after it
        from musclerl.envs.video import Frames
        from musclerl.models.registry import load_model

        Frames(load_model("tiny"), 32, 24).close()
    if args.policy is None:
        from musclerl.rl.runner import train

        configs = args.config or [str(CONFIG_DIR / "demo.yaml")]
        cfg = load_config(configs, args.overrides)
        out = Path(args.out or Path("runs") / f"bench-learn-{time.strftime('%Y%m%d-%H%M%S')}")
        t0 = time.perf_counter()
        summary = train(cfg, out, quiet=True)
        result["wall_s"] = time.perf_counter() - t0
        result["env_steps"] = summary["env_steps"]
        first, last = episode_lengths(out)
        result["episode_length_first"] = first
        result["episode_length_last"] = last
        result["curves"] = str(out / "curves.png")
        policy_dir = out / "policy"
        motion = args.motion or resolve_path(cfg["motion"])
    else:
        policy_dir = Path(args.policy)
        policy = load_policy(policy_dir)
        motion = args.motion or resolve_path(policy.config["train_config"]["motion"])
    policy = load_policy(policy_dir)
    result.update(tracking_test(policy, motion, args.seconds))
    if args.video:
        result.update(record_test(policy, motion, args.seconds, Path(args.video)))
    print_result(result, args.json, 22)
    return 0
