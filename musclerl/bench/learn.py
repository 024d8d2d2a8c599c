"""``musclerl bench learn``: does a policy learn to imitate? Train on a fixed budget, then test.

The test is what a user looks at: the trained policy's **deterministic** rollout from each
clip's first frame (t = 0, no reference-state initialisation) on the MuJoCo C backend, for up to
``--seconds`` of simulated time with the episode horizon lifted to that length (a clip that does
not loop ends the test at its last frame), and per clip:

- ``tracked_s``: simulated seconds before the first termination (fall or deviation), or the
  whole test if none;
- ``tracked_frac``: ``tracked_s`` over the test's length (1 for a success);
- ``success``: no termination within the test;
- ``mpjpe_m``: mean root-relative site error over the tracked frames (the tracked sites minus
  the root position, simulated against reference: MPJPE as in motion imitation papers);
  ``site_err_world_m``: the same without removing the root (global drift included);
- ``speed_mps`` and ``reference_speed_mps``: the policy's and the reference's mean horizontal root
  speed over the tracked span (a test ended on a deviation by a policy slower than its reference
  is a pace it does not follow, not a fall);
- plus the training's wall time, env steps and the first/last logged episode lengths.

The clips are the training config's dataset (``motion:`` as a file, list, folder, glob or
manifest, mirroring included: :func:`musclerl.dynamics.screening.load_dataset`, as training loads it)
or ``--motion``'s (``--validation``: the config's ``validation:`` set); every clip is tested
unless ``--clip`` picks one (index or name). The result holds ``clips`` (name -> the numbers
above, and ``test_s``) and their means over the clips:
``tracked_s``, ``tracked_frac``, ``mpjpe_m``, ``site_err_world_m``, ``success_rate``; ``success``
is every clip's. Training reports the same for its ``validation:`` set every few updates
(the test itself lives in :mod:`musclerl.rl.validation`). ``--phases N`` also starts every clip
at k/N of its length (k = 1 .. N-1, besides t = 0) and reports those tests' means under ``phases``:
tracking from any phase, reproducibly.

``python -m musclerl.bench.learn`` is not needed: ``musclerl bench learn --config CFG
[key=value ...]`` does it all and prints one line per number (``--json``: one object).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from musclerl.rl.config import TrainConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", help="YAML config(s) (default configs/demo.yaml)")
    parser.add_argument("--out", default=None, help="run folder (default runs/bench-learn-<time>)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the deterministic test, s")
    parser.add_argument("--policy", default=None, help="skip training: test this policy (or run folder)")
    parser.add_argument(
        "--motion",
        default=None,
        help="test on this dataset: Trajectory file, folder, glob or manifest (default: the config's)",
    )
    parser.add_argument(
        "--validation",
        action="store_true",
        help="test on the config's validation set (validation.motion) instead of its training set",
    )
    parser.add_argument("--clip", default=None, help="test only this clip (index or name; default: all)")
    parser.add_argument(
        "--phases",
        type=int,
        default=1,
        help="also test each clip from this many start phases (k/N of its length; default 1: t = 0 only)",
    )
    parser.add_argument(
        "--video", default=None, help="also write an MP4 of the test (and a PNG frame strip beside it)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides")


def evaluation_env(policy, motion, seconds: float):
    """The cpu environment ``policy``'s training config describes, on ``motion`` (Trajectory or
    path), with its horizon lifted to the test's ``seconds``; returns (env, test length in steps)."""
    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.export import check_motion
    from musclerl.rl.validation import tracking_test_env

    if not isinstance(motion, Trajectory):
        source, motion = motion, Trajectory.load(motion)
        check_motion(policy, motion, source)
    return tracking_test_env(policy.train_config, motion, seconds)


def tracking_test(policy, motion, seconds: float = 10.0, clip: int = 0) -> dict[str, Any]:
    """Deterministic rollout of ``policy`` (a loaded export) from t = 0 of ``clip`` of ``motion``
    (Trajectory or path), in the environment its training config describes."""
    from musclerl.rl.validation import clip_test

    env, steps = evaluation_env(policy, motion, seconds)
    return clip_test(env, policy, steps, clip)


def dataset_test(
    policy, motion, seconds: float = 10.0, clip: str | None = None, phases: int = 1
) -> dict[str, Any]:
    """:func:`tracking_test` of every clip of ``motion`` (a Trajectory), or of ``clip`` (index or
    name) alone, in one environment: ``{"clips": {name: result}}`` plus the means over the clips
    (see the module docstring); ``phases`` > 1 adds the test from that many start phases
    (:func:`musclerl.rl.validation.clips_test`)."""
    from musclerl.rl.validation import clips_test

    env, steps = evaluation_env(policy, motion, seconds)
    names = env.reference.clip_names
    chosen = range(len(names)) if clip is None else [clip_index(names, clip)]
    return clips_test(env, policy, steps, chosen, phases)


def clip_index(names: tuple[str, ...], clip: str) -> int:
    """Index of ``clip`` (a clip name, or an index as text) among ``names``; InputError if none."""
    from musclerl.errors import InputError

    if clip in names:
        return names.index(clip)
    if clip.lstrip("-").isdigit() and 0 <= int(clip) < len(names):
        return int(clip)
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    raise InputError(
        "--clip", f"no clip {clip!r}: {len(names)} clips ({shown}), or an index 0..{len(names) - 1}"
    )


def bench_dataset(spec, model_name: str):
    """The Trajectory of a ``motion:`` value (file, list, folder, glob, manifest), packed as
    training packs it, every clip kept: the bench measures tracking of any set, so the training
    set's plausibility screen does not apply."""
    from musclerl.dynamics.screening import load_dataset
    from musclerl.models.registry import load_model

    return load_dataset(spec, load_model(model_name), model_name, plausibility="off").trajectory


def record_test(policy, motion, seconds: float, video: Path, clip: int = 0) -> dict[str, Any]:
    """The same deterministic test as :func:`tracking_test` of ``clip``, rendered with the
    reference as a ghost: ``video`` (MP4) and ``<video>.png`` (a strip of six frames)."""
    from musclerl.envs.video import record_rollout

    env, steps = evaluation_env(policy, motion, seconds)
    strip = video.with_suffix(".png")
    record_rollout(
        env,
        lambda obs: policy.act(obs, deterministic=True),
        video,
        num_steps=steps,
        clip=clip,
        strip_path=strip,
    )
    return {"video": str(video), "frame_strip": str(strip)}


def episode_lengths(run_dir: Path) -> tuple[float, float]:
    """Mean episode length (control steps) of the first and the last logged update."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    lengths = [r["episode/length"] for r in rows if r.get("episode/length") == r.get("episode/length")]
    return (float(lengths[0]), float(lengths[-1])) if lengths else (float("nan"), float("nan"))


def _test_set(args: argparse.Namespace, cfg: TrainConfig):
    """The ``motion:`` value tested: ``--motion``, the config's validation set (``--validation``)
    or its training set."""
    from musclerl.errors import InputError

    if args.motion is not None and args.validation:
        raise InputError("--validation", "tests the config's validation set: drop --motion")
    if args.validation:
        if cfg.validation.motion is None:
            raise InputError("--validation", "the config has no validation set (validation.motion)")
        return cfg.validation.motion
    return args.motion or cfg.motion


def run(args: argparse.Namespace) -> int:
    from musclerl.bench import print_result
    from musclerl.errors import InputError
    from musclerl.fileio import check_outputs
    from musclerl.jax_setup import inline_cpu_dispatch
    from musclerl.rl.config import CONFIG_DIR, load_config
    from musclerl.rl.export import load_policy

    inline_cpu_dispatch()  # before anything computes with JAX (musclerl.jax_setup)
    if args.phases < 1:
        raise InputError("--phases", f"must be at least 1 (t = 0 only), got {args.phases}")

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
        motion = bench_dataset(_test_set(args, cfg), cfg.model)  # bad input: before training
        if args.clip is not None:
            clip_index(motion.clip_names, args.clip)
        out = Path(args.out or Path("runs") / f"bench-learn-{time.strftime('%Y%m%d-%H%M%S')}")
        t0 = time.perf_counter()
        summary = train(cfg, out, quiet=True)
        result["wall_s"] = time.perf_counter() - t0
        result["env_steps"] = summary["env_steps"]
        first, last = episode_lengths(out)
        result["episode_length_first"] = first
        result["episode_length_last"] = last
        result["curves"] = str(out / "curves.png")
        policy = load_policy(out / "policy")
    else:
        policy = load_policy(Path(args.policy))
        train_cfg = policy.train_config
        try:
            motion = bench_dataset(_test_set(args, train_cfg), train_cfg.model)
        except InputError as err:  # the policy's config pairs its model with this motion
            problem = str(err)
            if args.motion is None:  # the policy's own sets, perhaps not made on this machine
                hint = train_cfg.motion_help.strip()
                make = f"make them ({hint}) or " if hint else ""
                problem += f"; {make}test it on another set with --motion"
            raise InputError(policy.path / "config.json", problem) from err
    result.update(dataset_test(policy, motion, args.seconds, args.clip, args.phases))
    if args.video:
        first_clip = clip_index(motion.clip_names, args.clip) if args.clip is not None else 0
        result.update(record_test(policy, motion, args.seconds, Path(args.video), first_clip))
    if args.json:
        print_result(result, True, 22)
        return 0
    clips = result.pop("clips")
    phases = result.pop("phases", None)
    print_result(result, False, 22)
    if phases is not None:
        print(
            f"from {phases['starts_per_clip']} start phases per clip: {phases['success']:.1%} of the tests "
            f"tracked to the end, {phases['tracked_frac']:.1%} tracked, MPJPE {phases['mpjpe_m']:.4f} m"
        )
    print(
        f"{'clip':32s} {'tracked_s':>9s} {'test_s':>7s} {'tracked':>7s} {'mpjpe_m':>8s} "
        f"{'m/s':>5s} {'ref':>5s} success ended by"
    )
    for name, r in clips.items():
        print(
            f"{name:32s} {r['tracked_s']:9.3f} {r['test_s']:7.3f} {r['tracked_frac']:7.1%} "
            f"{r['mpjpe_m']:8.4f} {r['speed_mps']:5.2f} {r['reference_speed_mps']:5.2f} "
            f"{r['success']!s:7s} {r.get('end_reason', '')}".rstrip()
        )
    return 0
