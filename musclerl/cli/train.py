"""``musclerl train`` / ``python train.py``: PPO on a tracking environment.

python train.py                                     # configs/demo.yaml
python train.py --config configs/myolegs_walk.yaml --out runs/walk ppo.num_envs=64
python train.py --out runs/walk --resume            # continue from the last checkpoint
python train.py --config configs/run.yaml --init-from runs/walk   # fine-tune a trained policy
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        action="append",
        help="YAML config (default configs/demo.yaml); repeat to overlay files left to right",
    )
    parser.add_argument("--out", help="run folder (default runs/<config>-<time>)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    parser.add_argument(
        "--init-from",
        metavar="RUN_OR_POLICY",
        help="start from a trained policy: a run folder (actor, critic and observation statistics of "
        "its last checkpoint) or an exported policy folder (actor and statistics; fresh critic)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides, e.g. ppo.num_envs=64")


def run(args: argparse.Namespace) -> int:
    from musclerl.errors import InputError
    from musclerl.fileio import check_outputs
    from musclerl.jax_setup import inline_cpu_dispatch
    from musclerl.rl.config import CONFIG_DIR, load_config

    inline_cpu_dispatch()  # before anything computes with JAX (musclerl.jax_setup)

    configs = args.config or [str(CONFIG_DIR / "demo.yaml")]
    cfg = load_config(configs, args.overrides)
    if args.out:
        out = Path(args.out)
    elif args.resume:
        raise InputError("--resume", "needs --out naming the run folder to continue")
    else:
        out = Path("runs") / f"{Path(configs[-1]).stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    # a resumed run folder is an input by design; a new one must not hold (and overwrite) a config
    check_outputs(folders={"--out": out}, inputs=[] if args.resume else configs)
    if args.resume and not (out / "checkpoints").is_dir():
        raise InputError(out, "no checkpoints folder to resume from")
    if args.resume and args.init_from:
        raise InputError("--init-from", "a resumed run continues from its own checkpoint; drop --init-from")

    from musclerl.rl.runner import train

    summary = train(cfg, out, resume=args.resume, quiet=args.quiet, init_from=args.init_from)
    paths = summary["paths"]
    final = summary.get("final_metrics", {})
    ret, length = final.get("episode/return"), final.get("episode/length")
    print(
        f"trained {summary['env_steps']:,} env steps in {summary['train_s']:.0f} s "
        f"(+{summary['setup_s']:.0f} s setup, {summary['env_steps_per_s']:,.0f} steps/s); "
        f"last episode return {ret if ret is None else round(ret, 3)}, "
        f"length {length if length is None else round(length, 1)}"
    )
    for name in ("checkpoints", "policy", "tensorboard", "summary", "curves"):
        print(f"  {name:12s} {paths[name]}")
    return 0
