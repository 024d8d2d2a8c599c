"""A training run in one folder: build the env, train, checkpoint, log, export.

Run folder layout::

    DIR/config.yaml       the resolved config (defaults + files + overrides)
    DIR/checkpoints/<n>/  orbax checkpoints of the whole carry and the per-clip run totals
                          (last ``checkpoint.keep``)
    DIR/policy/           exported policy (``musclerl.load_policy(DIR/policy)``)
    DIR/tb/               TensorBoard event files
    DIR/metrics.jsonl     one JSON line of scalars per logged update (per clip: ``clip/<name>/...``,
                          per tag: ``tag/<tag>/...``; see :mod:`musclerl.rl.clip_stats`)
    DIR/policy_best/      with ``validation:``, the policy of the best validation test so far
    DIR/summary.json      final metrics, timings, paths, per-clip and per-tag results of the run,
                          the best and last validation tests (:mod:`musclerl.rl.validation`)
    DIR/curves.png        training curves (and the validation curves)

Multi-host (mjx backend): set ``MUSCLERL_COORDINATOR=host:port``, ``MUSCLERL_NUM_PROCESSES`` and
``MUSCLERL_PROCESS_ID`` on every host (or ``MUSCLERL_DISTRIBUTED=1`` to let
``jax.distributed.initialize()`` read SLURM / Open MPI / Cloud TPU variables itself). All hosts run
the same command with the same ``--out`` on a shared file system; environments are split over
every device of every host, process 0 writes logs and the export.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml

from musclerl.errors import InputError
from musclerl.fileio import atomic_path
from musclerl.rl.config import TrainConfig, num_updates

TOY_MODEL = "toy"  # ``model: toy`` selects the pure-JAX toy task (musclerl.rl.toy_env), for smoke tests
#: TrainConfig fields that do not change what is trained (a resume may change them, and the length).
NOT_TRAINING = ("log", "checkpoint", "validation", "motion_help")


def maybe_init_distributed() -> None:
    """``jax.distributed.initialize`` from MUSCLERL_* environment variables (no-op when unset)."""
    import jax

    coordinator = os.environ.get("MUSCLERL_COORDINATOR")
    if coordinator:
        try:
            num, pid = int(os.environ["MUSCLERL_NUM_PROCESSES"]), int(os.environ["MUSCLERL_PROCESS_ID"])
        except (KeyError, ValueError) as err:
            raise InputError(
                "MUSCLERL_COORDINATOR", "also set MUSCLERL_NUM_PROCESSES and MUSCLERL_PROCESS_ID to integers"
            ) from err
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num, process_id=pid)
    elif os.environ.get("MUSCLERL_DISTRIBUTED") == "1":
        jax.distributed.initialize()


def build_env(cfg: TrainConfig):
    """The environment named by the config (``model``, ``motion``, ``env``, ``backend``)."""
    return build_env_and_tags(cfg)[0]


def build_env_and_tags(cfg: TrainConfig) -> tuple[Any, tuple[tuple[str, ...], ...] | None]:
    """:func:`build_env` and the dataset's tags per clip (None for the toy task)."""
    num_envs = cfg.ppo.num_envs
    if cfg.model == TOY_MODEL:
        from musclerl.rl.toy_env import HostToyEnv, ToyTrackingEnv

        toy = ToyTrackingEnv(num_envs=num_envs)
        return (toy if cfg.backend == "mjx" else HostToyEnv(toy)), None
    from musclerl.dynamics.screening import load_dataset
    from musclerl.envs import TrackingEnv
    from musclerl.models.registry import load_model
    from musclerl.motion.dataset import with_clip_weights

    model = load_model(cfg.model)
    motion = load_dataset(cfg.motion, model, cfg.model)
    if cfg.augment.time_scales:  # faster and slower copies of every clip (envs/time_scale.py)
        from musclerl.envs.time_scale import with_time_scales

        motion = with_time_scales(motion, model, cfg.augment.time_scales)
    env_cfg = with_clip_weights(cfg.env, motion)
    env = TrackingEnv(
        model=cfg.model,
        motion=motion.trajectory,
        config=env_cfg,
        backend=cfg.backend,
        num_envs=num_envs,
        threads=cfg.threads,
    )
    return env, motion.tags


def make_trainer(cfg: TrainConfig, env, total_updates: int, mesh):
    """``(learner, init(rng) -> carry, update_step(carry) -> (carry, metrics), after_checkpoint)``.

    ``after_checkpoint(carry, update) -> carry`` runs after every checkpoint save (and on resume):
    the identity on mjx, whose checkpoints hold the whole env state; a restart of the episodes on
    cpu, whose physics lives in MuJoCo's thread pool (see :mod:`musclerl.rl.cpu_loop`).
    """
    import jax

    mirror = _mirror(cfg, env)
    if cfg.backend == "mjx":
        from musclerl.rl.ppo import make_train

        learner, init, update_step, _ = make_train(cfg, env, total_updates, mesh, mirror)
        # on accelerators the old carry's buffers are reused for the new one (XLA CPU cannot donate)
        donate = () if jax.default_backend() == "cpu" else (0,)
        step = jax.jit(update_step, donate_argnums=donate)
        return learner, jax.jit(init), step, lambda carry, update: carry
    from musclerl.rl.cpu_loop import CpuTrainer

    trainer = CpuTrainer(cfg, env, total_updates, mesh, mirror)
    return trainer.learner, trainer.init, trainer.update_step, trainer.restart_envs


def _mirror(cfg: TrainConfig, env):
    """The env's left/right mirror when ``ppo.mirror_augment`` asks for it (else None)."""
    if not cfg.ppo.mirror_augment:
        return None
    if cfg.model == TOY_MODEL:
        raise InputError(
            "ppo.mirror_augment", "the toy task has no mirror: set ppo.mirror_augment=false for model=toy"
        )
    from musclerl.envs.symmetry import env_mirror

    return env_mirror(env, f"ppo.mirror_augment (model '{cfg.model}')")


_COMPILED: dict[str, tuple] = {}


def _compiled(cfg: TrainConfig, total_updates: int) -> tuple:
    """Env and jitted trainer functions, reused by later runs of the same config in this process
    (a resumed run, tests) so XLA compiles once."""
    from musclerl.rl.ppo import data_mesh

    key = json.dumps(dataclasses.asdict(_training_part(cfg)), sort_keys=True)
    key += f"|{total_updates}|{data_mesh().size}"
    if key not in _COMPILED:
        env, tags = build_env_and_tags(cfg)
        _COMPILED.clear()  # keep one: envs hold MuJoCo batches and compiled programs
        _COMPILED[key] = (env, *make_trainer(cfg, env, total_updates, data_mesh()), tags)
    return _COMPILED[key]


def _to_device(carry, backend: str):
    """Restored numpy carry -> jax arrays for the learner (and for the env state on mjx)."""
    import jax
    import jax.numpy as jnp

    from musclerl.rl.ppo import Carry

    env_state = None if backend == "cpu" else jax.tree_util.tree_map(jnp.asarray, carry.env_state)
    return Carry(
        jax.tree_util.tree_map(jnp.asarray, carry.train),
        env_state,
        jax.tree_util.tree_map(jnp.asarray, carry.episodes),
    )


def _checkpointed(carry, backend: str):
    """What a checkpoint stores: the whole carry on mjx; without the env state on cpu."""
    return carry._replace(env_state=None) if backend == "cpu" else carry


def _with_warmup(cfg: TrainConfig, updates: int) -> TrainConfig:
    """``cfg`` with ``ppo.critic_warmup_updates`` resolved to ``updates``."""
    return dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, critic_warmup_updates=updates))


def _training_part(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with the fields in :data:`NOT_TRAINING` at their defaults."""
    blank = TrainConfig()
    return dataclasses.replace(cfg, **{name: getattr(blank, name) for name in NOT_TRAINING})


def _comparable(cfg: TrainConfig) -> TrainConfig:
    """The parts of a config a resume must not change (everything but the run length, logging,
    checkpointing and validation); the rest at their defaults."""
    cfg = _training_part(cfg)
    return dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, total_env_steps=0))


def train(
    cfg: TrainConfig,
    out_dir: str | os.PathLike,
    resume: bool = False,
    stop_after_updates: int | None = None,
    quiet: bool = False,
    init_from: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Train per ``cfg`` into ``out_dir``; returns the summary dict (also in ``summary.json``).

    ``stop_after_updates`` ends the loop early, like a kill (no extra checkpoint, no export): used
    to interrupt runs deterministically in tests. ``init_from``: a run or policy folder whose actor
    and observation statistics start this run (:mod:`musclerl.rl.init_from`; not with ``resume``).
    """
    import jax

    from musclerl.rl.checkpoint import Checkpointer
    from musclerl.rl.clip_stats import ClipLog
    from musclerl.rl.config import check_motion_files
    from musclerl.rl.export import export_policy
    from musclerl.rl.init_from import critic_warmup_updates
    from musclerl.rl.ppo import data_mesh
    from musclerl.rl.run_log import RunLogger
    from musclerl.rl.validation import Validator

    maybe_init_distributed()
    check_motion_files(cfg)
    if cfg.backend == "cpu" and jax.process_count() > 1:
        raise InputError("backend", "multi-host training needs the mjx backend (cpu physics is per host)")
    out_dir = Path(out_dir)
    is_main = jax.process_index() == 0
    total_updates = num_updates(cfg)
    steps_per_update = cfg.ppo.num_envs * cfg.ppo.rollout_steps
    mesh = data_mesh()
    if cfg.ppo.num_envs % mesh.size:
        raise InputError(
            "ppo.num_envs", f"{cfg.ppo.num_envs} environments do not split over {mesh.size} devices"
        )

    ckpt_dir = out_dir / "checkpoints"
    if not resume and ckpt_dir.is_dir() and any(p.name.isdigit() for p in ckpt_dir.iterdir()):
        raise InputError(
            out_dir, "already holds checkpoints; pass --resume to continue or choose another --out"
        )
    t0 = time.perf_counter()
    start = 0
    initial = None
    if init_from is not None and not resume:  # read before compiling: a bad source fails fast
        from musclerl.rl.init_from import check_network, read_initial_weights

        initial = read_initial_weights(init_from)
        check_network(initial, cfg.network.symmetric)
    saved = None
    if resume:  # fail fast on a mismatching config, before compiling anything
        checkpointer = Checkpointer(ckpt_dir, cfg.checkpoint.keep)
        meta = checkpointer.read_meta()
        # a checkpoint of an older version lacks the keys added since: they held their defaults
        saved = TrainConfig.from_dict(meta["config"], f"{ckpt_dir}: config of update {meta['update']}")
        saved = _with_warmup(saved, saved.ppo.critic_warmup_updates or 0)  # older runs: none
    cfg = _with_warmup(
        cfg,
        critic_warmup_updates(
            cfg.ppo.critic_warmup_updates, initial, None if saved is None else saved.ppo.critic_warmup_updates
        ),
    )
    if saved is not None:
        if _comparable(saved) != _comparable(cfg):
            raise InputError(
                ckpt_dir,
                "the checkpoint was written with a different config (only ppo.total_env_steps, "
                "log and checkpoint settings may change on --resume)",
            )
        start = int(meta["update"])
    env, learner, init, update_step, after_checkpoint, tags = _compiled(cfg, total_updates)
    validator = None
    if cfg.validation.motion is not None and is_main:
        from musclerl.motion.dataset import dataset_sources

        validator = Validator(cfg, tuple(str(c.path) for c in dataset_sources(cfg.motion)[0]))
    clip_log = ClipLog(env.reference.clip_names, tags) if tags is not None else None
    carry = init(jax.random.PRNGKey(cfg.seed))
    if initial is not None:
        from musclerl.rl.init_from import initial_train_state

        carry = carry._replace(train=initial_train_state(carry.train, learner, initial))
    if not resume:  # created only now, so bad input (env config, motion) leaves no run folder
        checkpointer = Checkpointer(ckpt_dir, cfg.checkpoint.keep)
    else:
        restored, saved_meta = checkpointer.restore(_checkpointed(carry, cfg.backend), start)
        carry = after_checkpoint(_to_device(restored, cfg.backend), start)
        if clip_log is not None and saved_meta.get("clip_totals") is not None:
            clip_log.restore_totals(saved_meta["clip_totals"], str(ckpt_dir / str(start)))
    if is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(out_dir / "config.yaml") as tmp:
            tmp.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    logger = (
        RunLogger(
            out_dir,
            total_updates,
            steps_per_update,
            start_update=start,
            progress=cfg.log.progress and not quiet and is_main,
        )
        if is_main
        else None
    )
    setup_s = time.perf_counter() - t0
    last = min(total_updates, stop_after_updates) if stop_after_updates else total_updates

    val_s = 0.0

    def validate(train_state, update: int) -> dict[str, float]:
        """The validation test of ``train_state`` after ``update`` when it is due (else nothing);
        exports the policy of the best test so far."""
        nonlocal val_s
        if validator is None or not validator.due(update, total_updates):
            return {}
        t = time.perf_counter()
        row = validator.run(
            train_state,
            env.observation_size,
            learner.bounds,
            update,
            update * steps_per_update,
            learner.network.mirror,
        )
        if validator.improved():
            export_policy(
                out_dir / "policy_best",
                cfg,
                train_state,
                env.observation_size,
                learner.bounds,
                extra={
                    "model": cfg.model,
                    "motion": cfg.motion,
                    "updates": update,
                    "env_steps": update * steps_per_update,
                    "validation": validator.best,
                },
                network_mirror=learner.network.mirror,
            )
        val_s += time.perf_counter() - t
        return row

    if validator is not None and resume:
        validator.restore(logger.history)
    elif validator is not None and start == 0 and validator.due(0, total_updates):
        logger.log(0, validate(carry.train, 0))
    train_t0 = time.perf_counter()
    metrics = None
    for update in range(start + 1, last + 1):
        carry, metrics = update_step(carry)
        sums = metrics.pop("clip_sums", None)
        if clip_log is not None and sums is not None:
            clip_log.add(jax.device_get(sums))
        val_row = validate(carry.train, update)
        if logger is not None and (update % cfg.log.every_updates == 0 or update == last or val_row):
            per_clip = clip_log.interval_metrics() if clip_log is not None else {}
            logger.log(update, {**jax.device_get(metrics), **per_clip, **val_row})
        if update % cfg.checkpoint.every_updates == 0 or update == total_updates:
            checkpointer.save(
                update,
                _checkpointed(carry, cfg.backend),
                {
                    "config": cfg.to_dict(),
                    "update": update,
                    "env_steps": update * steps_per_update,
                    "clip_totals": None if clip_log is None else clip_log.totals(),
                },
            )
            carry = after_checkpoint(carry, update)
    train_s = time.perf_counter() - train_t0 - val_s
    checkpointer.close()
    summary: dict[str, Any] = {
        "updates": last,
        "total_updates": total_updates,
        "env_steps": last * steps_per_update,
        "resumed_from_update": start,
        "init_from": None if initial is None else str(initial.source),
        "setup_s": setup_s,
        "train_s": train_s,
        "validation_s": val_s,
        "env_steps_per_s": (last - start) * steps_per_update / max(train_s, 1e-9),
        "devices": jax.device_count(),
        "backend": cfg.backend,
        "model": cfg.model,
        "paths": {
            "run": str(out_dir),
            "checkpoints": str(ckpt_dir),
            "policy": str(out_dir / "policy"),
            "tensorboard": str(out_dir / "tb"),
            "summary": str(out_dir / "summary.json"),
            "curves": str(out_dir / "curves.png"),
        },
    }
    if stop_after_updates is not None and last < total_updates:
        return summary
    if is_main:
        export_policy(
            out_dir / "policy",
            cfg,
            carry.train,
            env.observation_size,
            learner.bounds,
            extra={
                "model": cfg.model,
                "motion": cfg.motion,
                "updates": last,
                "env_steps": last * steps_per_update,
            },
            network_mirror=learner.network.mirror,
        )
        if clip_log is not None:
            summary["clip_results"] = clip_log.summary()
        if validator is not None:
            summary["validation"] = validator.summary()
            summary["paths"]["policy_best"] = str(out_dir / "policy_best")
        summary = logger.close(summary)
    return summary
