"""``musclerl bench gpu``: the one prepared device check. Env steps/s, compile time and peak
device memory of myolegs and myofullbody at 1k/4k/8k environments on MJX-JAX and MJX-Warp, and a
short training run's steps/s with its ratio to env-only stepping; written as JSON and a Markdown
table.

Each measurement runs in its own process (``--worker``), so its peak device memory is its own
(``XLA_PYTHON_CLIENT_PREALLOCATE=false``: JAX allocates what it uses instead of 75 % of the card)
and a compile that hangs or runs out of memory costs that row only. Rows run in order of what
matters most (Warp, myolegs, training) until ``--budget-s`` (default 450 s, so the whole check ends
within 8 minutes) is spent; a row that would start too late is listed as skipped, one that runs
past its share is stopped and listed as timed out: no figure is ever estimated.

The envs are the training configs' (``configs/myolegs_walk_general_gpu.yaml``, 50 Hz control,
the PD action space; ``configs/fullbody_gpu.yaml``) on each model's bundled walk, stepped by
:func:`musclerl.bench.env_steps.bench_mjx` (``jit(scan(env.step))``: actions, physics substeps,
observations, rewards, terminations, resets). Training is
:func:`musclerl.bench.train.measure` (whole jitted updates against env-only rollouts, interleaved).

Without a GPU (JAX sees only its CPU) the same rows run at a few environments on the CPU, under a
note that says so: they check that the whole path works, they are not GPU figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: (model, config) pairs measured; configs are found in the package's configs folder.
MODELS = {"myolegs": "myolegs_walk_general_gpu.yaml", "myofullbody": "fullbody_gpu.yaml"}
GPU_ENVS = (1024, 4096, 8192)
CPU_ENVS = (8,)
TRAIN_ENVS_GPU, TRAIN_ENVS_CPU = 4096, 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="bench_gpu", help="folder for bench_gpu.json and bench_gpu.md")
    parser.add_argument("--budget-s", type=float, default=450.0, help="wall-clock budget for all rows")
    parser.add_argument("--steps", type=int, default=50, help="timed control steps per env row")
    parser.add_argument("--updates", type=int, default=2, help="timed PPO updates of the training row")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--num-envs", type=int, nargs="+", default=None, help="default 1024 4096 8192 (GPU)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # one row, in a child process


def plan(models: list[str], num_envs: tuple[int, ...], train_envs: int) -> list[dict]:
    """The rows in the order they run: Warp before MJX-JAX, myolegs before myofullbody, the
    training run after myolegs on Warp."""
    rows = []
    for impl in ("warp", "jax"):
        for model in models:
            rows += [{"kind": "env", "model": model, "impl": impl, "num_envs": n} for n in num_envs]
            if impl == "warp" and model == "myolegs":
                rows.append({"kind": "train", "model": model, "impl": impl, "num_envs": train_envs})
    return rows


def _config(row: dict, steps: int):
    """The row's training config: the model's GPU config, its bundled walk, the row's impl and
    env count (and for training a short rollout: ``steps`` per update)."""
    from musclerl.resources import assets_dir
    from musclerl.rl.config import CONFIG_DIR, load_config

    walk = assets_dir() / "motions" / f"walk_{row['model']}.npz"
    overrides = [
        f"motion={walk}",
        "backend=mjx",
        f"env.mjx.impl={row['impl']}",
        f"ppo.num_envs={row['num_envs']}",
        "validation.motion=null",
    ]
    if row["kind"] == "train":
        overrides += [f"ppo.rollout_steps={steps}", f"ppo.num_minibatches={min(8, row['num_envs'])}"]
    return load_config(CONFIG_DIR / MODELS[row["model"]], overrides)


def _peak_memory_bytes() -> int | None:
    import jax

    stats = jax.local_devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def measure_row(row: dict, steps: int, updates: int) -> dict:
    """One row, in this process: env stepping or a short training run."""
    import jax

    from musclerl.jax_setup import inline_cpu_dispatch

    if jax.default_backend() == "cpu":
        inline_cpu_dispatch()
    cfg = _config(row, steps)
    if row["kind"] == "env":
        from musclerl.bench.env_steps import bench_mjx
        from musclerl.rl.runner import build_env

        result = bench_mjx(build_env(cfg), steps)
    else:
        from musclerl.bench.train import measure

        result = measure(cfg, updates)
    return {**row, **result, "peak_device_bytes": _peak_memory_bytes()}


def _device() -> dict:
    import jax

    device = jax.devices()[0]
    return {"platform": device.platform, "device_kind": device.device_kind, "count": jax.device_count()}


def _run_rows(rows: list[dict], args: argparse.Namespace, steps: int) -> list[dict]:
    """Every row in a child process while the budget lasts."""
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    start, done = time.perf_counter(), []
    for i, row in enumerate(rows):
        left = args.budget_s - (time.perf_counter() - start)
        label = f"[{i + 1}/{len(rows)}] {row['kind']} {row['model']} {row['impl']} {row['num_envs']} envs"
        if left < 20:
            done.append({**row, "status": "skipped: time budget spent"})
            print(f"{label}: skipped (budget spent)", file=sys.stderr)
            continue
        spec = json.dumps({**row, "steps": steps, "updates": args.updates})
        cmd = [sys.executable, "-m", "musclerl.cli", "bench", "gpu", "--worker", spec]
        t0 = time.perf_counter()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=left, env=env)
        except subprocess.TimeoutExpired:
            done.append({**row, "status": f"timed out after {left:.0f} s"})
            print(f"{label}: timed out", file=sys.stderr)
            continue
        lines = [s for s in out.stdout.splitlines() if s.startswith("{")]
        if out.returncode != 0 or not lines:
            error = (out.stderr.strip().splitlines() or ["no output"])[-1][:300]
            done.append({**row, "status": f"failed: {error}"})
            print(f"{label}: failed: {error}", file=sys.stderr)
            continue
        result = {**json.loads(lines[-1]), "status": "ok", "wall_s": time.perf_counter() - t0}
        done.append(result)
        rate = result.get("env_steps_per_s") or result.get("train_env_steps_per_s")
        print(f"{label}: {rate:,.0f} env steps/s", file=sys.stderr)
    return done


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table (steps/s, ratio, compile s, peak memory)."""
    lines = [
        "| run | model | MJX impl | envs | env steps/s | training / env-only | compile s | peak memory |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        head = f"| {r['kind']} | {r['model']} | {r['impl']} | {r['num_envs']} |"
        if r.get("status") != "ok":
            lines.append(f"{head} {r['status']} | | | |")
            continue
        rate = r.get("env_steps_per_s") or r.get("train_env_steps_per_s")
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        mem = r.get("peak_device_bytes")
        mem_text = f"{mem / 2**30:.2f} GiB" if mem else "n/a (CPU)"
        lines.append(f"{head} {rate:,.0f} | {ratio} | {r['compile_s']:.1f} | {mem_text} |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from musclerl.errors import InputError

    if args.worker:  # child process: one row, one JSON line on stdout
        spec = json.loads(args.worker)
        print(json.dumps(measure_row(spec, spec.pop("steps"), spec.pop("updates"))))
        return 0
    if args.steps < 1 or args.updates < 1 or args.budget_s <= 0:
        raise InputError("bench gpu", "--steps and --updates must be >= 1 and --budget-s > 0")
    device = _device()
    on_gpu = device["platform"] == "gpu"
    note = (
        f"{device['count']} x {device['device_kind']}"
        if on_gpu
        else "no GPU: JAX sees only the CPU, so these rows ran on the CPU at a few environments; "
        "they check the path, they are not GPU figures"
    )
    print(f"musclerl bench gpu: {note}", file=sys.stderr)
    num_envs = tuple(args.num_envs) if args.num_envs else (GPU_ENVS if on_gpu else CPU_ENVS)
    steps = args.steps if on_gpu else min(args.steps, 10)
    rows = plan(args.models, num_envs, TRAIN_ENVS_GPU if on_gpu else TRAIN_ENVS_CPU)
    results = _run_rows(rows, args, steps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"device": device, "note": note, "budget_s": args.budget_s, "steps": steps, "rows": results}
    (out / "bench_gpu.json").write_text(json.dumps(report, indent=1))
    text = f"# musclerl bench gpu\n\n{note}\n\n{table(results)}\n"
    (out / "bench_gpu.md").write_text(text)
    print(text)
    return 0
