"""Validation during training: the deterministic test of held-out clips every few updates.

``validation:`` in a training config names a motion set exactly as ``motion:`` does (a file, a
folder, a glob, a list, a manifest, or ``{clips: ..., mirror: true}``:
:mod:`musclerl.motion.dataset`)::

    validation:
      motion: {clips: [walks/walking3.npz, walks/walkingTO4.npz], mirror: true}
      every_updates: 25    # test after every 25th update and after the last one
      seconds: 10.0        # each clip from t = 0 for up to this long (a clip that does not loop ends sooner)
      at_start: true       # also before the first update (the --init-from policy's baseline)

The test is ``musclerl bench learn``'s (:func:`clips_test`, which it runs): the current
policy's mean action (no sampling) from each clip's first frame, on its own one-env MuJoCo C
environment built from the run's ``env`` section, whatever the training backend. It reads the
training state and changes nothing in it: no random number, no environment and no optimiser
state of the training is touched, so a run trains the same with or without validation. A
validation clip may not come from a file the training set reads (an :class:`InputError` before
anything runs).

Logged per test (``metrics.jsonl`` and TensorBoard): ``val/success`` (the fraction of clips
tracked to the end), ``val/tracked_frac`` (mean fraction of each test tracked before the first
termination), ``val/mpjpe_m`` (mean root-relative site error over the tracked frames), and the
same per clip as ``val/<clip>/success``, ... . ``summary.json`` keeps the ``best`` and ``last``
tests under ``validation``; the best test's policy is exported to ``DIR/policy_best/``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.errors import InputError
from musclerl.rl.config import TrainConfig

METRICS = ("success", "tracked_frac", "mpjpe_m")


def check_disjoint(train_sources: tuple[str, ...], val_sources: tuple[str, ...]) -> None:
    """Refuse a validation set that shares a file with the training set (one line naming it)."""
    train = {Path(s).resolve() for s in train_sources}
    shared = sorted({str(s) for s in val_sources if Path(s).resolve() in train})
    if shared:
        raise InputError(
            shared[0],
            "is in both the training set (motion) and the validation set: never train on validation clips",
        )


def rank(result: dict[str, Any]) -> tuple[float, float, float]:
    """Order of validation results: more clips tracked to the end, then a larger tracked fraction,
    then a smaller MPJPE (none, when no frame was tracked, ranks last)."""
    mpjpe = result.get("val/mpjpe_m")
    mpjpe = math.inf if mpjpe is None or not math.isfinite(mpjpe) else mpjpe
    return (result["val/success"], result["val/tracked_frac"], -mpjpe)


def tracking_test_env(train_cfg: TrainConfig, motion, seconds: float):
    """The one-env cpu ``TrackingEnv`` of a training config (its model and ``env`` section) on the
    Trajectory ``motion``, horizon lifted to ``seconds``; returns (env, test length in steps)."""
    from musclerl.envs import TrackingEnv

    env_cfg = train_cfg.env
    # every test starts where it says: the training set's clip weights (one per training clip) do not apply
    env_cfg = dataclasses.replace(env_cfg, sampling=dataclasses.replace(env_cfg.sampling, clip_weights=None))
    env = TrackingEnv(train_cfg.model, motion, env_cfg, backend="cpu", num_envs=1)
    steps = int(round(seconds / env.control_dt_s))
    env.config = dataclasses.replace(env.config, horizon=steps + 1)  # the test decides its length
    return env, steps


def clip_test(env, policy, steps: int, clip: int, start_time_s: float = 0.0) -> dict[str, Any]:
    """The deterministic test of ``clip`` in ``env`` (horizon already lifted) from ``start_time_s``
    of the clip for up to ``steps`` (a clip that does not loop ends the test at its last frame)."""
    from musclerl.rl.rollout import episode_steps, rollout

    steps = min(steps, episode_steps(env, clip, start_time_s))
    rec = rollout(
        env,
        lambda obs: policy.act(obs, deterministic=True),
        clip=clip,
        start_time_s=start_time_s,
        max_steps=steps,
        step_forces=False,  # tracking only: the forces of the frames are not read here
    )
    # frame 0 is the reset state; a step the env ended by truncation was survived but not recorded
    survived = len(rec.time_s) - 1 + int(rec.truncated)
    local = rec.mpjpe_local_m[1:]
    world = rec.mpjpe_m[1:]
    return {
        "tracked_s": float(survived * env.control_dt_s),  # whole steps survived
        "test_s": float(steps * env.control_dt_s),
        "tracked_frac": float(survived / steps),
        "success": bool(not rec.early_termination and survived >= steps),
        "end_reason": rec.end_reason,
        "mpjpe_m": float(np.mean(local)) if len(local) else float("nan"),
        "site_err_world_m": float(np.mean(world)) if len(world) else float("nan"),
        "speed_mps": rec.speed_mps,
        "reference_speed_mps": reference_speed_mps(env, clip, rec.time_s),
    }


def reference_speed_mps(env, clip: int, time_s: np.ndarray) -> float:
    """The reference root's horizontal displacement from the first to the last of ``time_s`` (clip
    times, s) over that time, m/s: the pace :attr:`Recording.speed_mps` is to follow. A policy
    slower than its reference falls behind in the world while its pose tracks, and the test ends
    on a root or site deviation; the two speeds side by side tell that from a fall."""
    from musclerl.envs.reference import lookup

    span_s = float(time_s[-1] - time_s[0]) if len(time_s) else 0.0
    if span_s <= 0:
        return float("nan")
    ref = env.reference.as_arrays(np)
    ends = lookup(ref, np.array([clip, clip]), np.array([time_s[0], time_s[-1]]), np, ("qpos",))
    return float(np.hypot(*(ends["qpos"][1, :2] - ends["qpos"][0, :2]))) / span_s


def phase_starts_s(env, clip: int, phases: int) -> np.ndarray:
    """``phases`` start times (s) spread evenly over ``clip``: k / phases of its duration for
    k = 0 .. phases - 1 (the first is t = 0), so a test from every phase is reproducible."""
    duration_s = float(env.reference.clip_duration_s[clip])
    return np.arange(phases) * duration_s / phases


def _means(rows: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("tracked_s", "test_s", "tracked_frac", "success", "mpjpe_m", "site_err_world_m")
    return {key: float(np.mean([r[key] for r in rows])) for key in keys}


def clips_test(env, policy, steps: int, chosen, phases: int = 1) -> dict[str, Any]:
    """The deterministic test of the clips ``chosen`` (indices) of ``env`` (from :func:`tracking_test_env`)
    for up to ``steps`` control steps each: ``{"clips": {name: result}}`` and the means over them.
    ``policy`` is anything with ``act(obs, deterministic=True)`` (an export, or the in-memory
    policy of a running training: :class:`Validator`). With ``phases`` > 1 every clip is also
    tested from each of :func:`phase_starts_s`: its result gets ``phases`` (the mean over its
    starts, t = 0 included) and the whole test ``phases`` (the means over every clip and start,
    ``success`` the fraction of starts tracked to the end)."""
    names = env.reference.clip_names
    clips = {names[c]: clip_test(env, policy, steps, c) for c in chosen}
    rows = list(clips.values())

    def mean(key: str) -> float:
        return float(np.mean([r[key] for r in rows]))

    by_phase: list[dict[str, Any]] = []
    if phases > 1:
        for c in chosen:
            starts = [clips[names[c]]]  # t = 0, tested above
            starts += [clip_test(env, policy, steps, c, float(t)) for t in phase_starts_s(env, c, phases)[1:]]
            clips[names[c]]["phases"] = _means(starts)
            by_phase += starts
    summary = {"phases": {"starts_per_clip": phases, **_means(by_phase)}} if by_phase else {}
    return {
        **summary,
        "tracked_s": mean("tracked_s"),
        "test_s": mean("test_s"),
        "tracked_frac": mean("tracked_frac"),
        "success": all(r["success"] for r in rows),
        "success_rate": mean("success"),
        "mpjpe_m": mean("mpjpe_m"),
        "site_err_world_m": mean("site_err_world_m"),
        "clips": clips,
    }


class Validator:
    """The held-out clips of ``cfg.validation`` and their test (module docstring)."""

    def __init__(self, cfg: TrainConfig, train_sources: tuple[str, ...]):
        from musclerl.dynamics.screening import load_dataset
        from musclerl.models.registry import load_model

        spec = cfg.validation
        self.cfg = cfg
        self.every_updates = spec.every_updates
        self.at_start = spec.at_start
        dataset = load_dataset(spec.motion, load_model(cfg.model), cfg.model, source="validation.motion")
        check_disjoint(train_sources, dataset.sources)
        self.clip_names = dataset.clip_names
        self.env, self.steps = tracking_test_env(cfg, dataset.trajectory, spec.seconds)
        self.best: dict[str, Any] | None = None
        self.last: dict[str, Any] | None = None

    def due(self, update: int, last_update: int) -> bool:
        """Whether the test runs after ``update`` (0: before the first) of a run ending at ``last_update``."""
        if update == 0:
            return self.at_start
        return update % self.every_updates == 0 or update == last_update

    def run(
        self,
        train_state,
        obs_size: int,
        bounds,
        update: int,
        env_steps: int,
        network_mirror: tuple | None = None,
    ) -> dict[str, float]:
        """Test the policy of ``train_state`` (``network_mirror``: a symmetric network's mirror);
        returns the ``val/...`` scalars and keeps best/last."""
        from musclerl.rl.export import policy_of

        policy = policy_of(self.cfg, train_state, obs_size, bounds, "validation policy", network_mirror)
        result = clips_test(self.env, policy, self.steps, range(len(self.clip_names)))
        row = {
            "val/success": result["success_rate"],
            "val/tracked_frac": result["tracked_frac"],
            "val/mpjpe_m": result["mpjpe_m"],
        }
        for name, clip in result["clips"].items():
            row.update({f"val/{name}/{key}": float(clip[key]) for key in METRICS})
        record = {"update": update, "env_steps": env_steps, **row}
        self.last = record
        if self.best is None or rank(row) > rank(self.best):
            self.best = record
        return row

    def improved(self) -> bool:
        """Whether the last test is the best so far."""
        return self.best is self.last

    def restore(self, history: list[dict[str, Any]]) -> None:
        """Best and last tests from the logged rows of a resumed run (``metrics.jsonl``)."""
        for row in history:
            if row.get("val/success") is None:
                continue
            record = {k: v for k, v in row.items() if k in ("update", "env_steps") or k.startswith("val/")}
            self.last = record
            if self.best is None or rank(record) > rank(self.best):
                self.best = record

    def summary(self) -> dict[str, Any]:
        return {"clips": list(self.clip_names), "best": self.best, "last": self.last}
