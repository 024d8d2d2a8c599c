"""A training dataset loaded as the trainer loads it: every clip a ``motion:`` value names
(:func:`musclerl.motion.dataset.dataset_sources`) read, cut to its manifest window
(:func:`musclerl.motion.trim.trim_trajectory`), checked against the run's model, screened
by the physical-plausibility check under the dataset's policy
(:func:`musclerl.motion.dataset.plausibility_policy`, :func:`.plausibility.trajectory_plausibility`),
resampled to one rate, mirrored when asked, tiled onto one ground and packed into a
:class:`musclerl.motion.dataset.Dataset` (:mod:`musclerl.motion.dataset` says what each step means).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any

import mujoco
import numpy as np

from musclerl.dynamics.plausibility import trajectory_plausibility
from musclerl.errors import InputError
from musclerl.motion.dataset import Dataset, check_clip_lengths, dataset_sources, plausibility_policy
from musclerl.motion.ground_tiles import tile_grounds
from musclerl.motion.trajectory import Trajectory, concatenate, resample
from musclerl.motion.trim import trim_trajectory


def screen_clips(
    traj: Trajectory, model: mujoco.MjModel, policy: str, source: str | os.PathLike
) -> tuple[Trajectory | None, dict]:
    """``traj`` with the clips ``policy`` lets through (None when none is left) and each clip's
    verdict ``{"<source>: <clip>": {"passed", "failures", "action"}}``; one warning line (stderr)
    per failing clip; InputError for a failing clip under ``refuse``. A clip the check cannot
    judge (a model without a free root or feet) is kept, its verdict ``passed: None``."""
    if policy == "off":
        return traj, {}
    verdicts, kept = {}, []
    for c in range(traj.num_clips):
        clip, key = traj.clip(c), f"{source}: {traj.clip_names[c]}"
        try:
            check = trajectory_plausibility(clip, model)
        except InputError as err:
            verdicts[key] = {"passed": None, "failures": [f"not checked: {err.problem}"], "action": "kept"}
            kept.append(clip)
            continue
        action = "kept" if check.passed or policy == "keep" else "dropped"
        verdicts[key] = {"passed": check.passed, "failures": list(check.failures), "action": action}
        if not check.passed:
            reasons = "; ".join(check.failures)
            if policy == "refuse":
                raise InputError(
                    source,
                    f"clip '{traj.clip_names[c]}' fails the plausibility check ({reasons}); make it pass "
                    "(e.g. retarget with --balance) or set the dataset's plausibility to drop or keep",
                )
            warnings.warn(f"{key}: fails the plausibility check ({reasons}): {action}", stacklevel=3)
        if action == "kept":
            kept.append(clip)
    if not kept:
        return None, verdicts
    return (traj if len(kept) == traj.num_clips else concatenate(kept)), verdicts


def load_dataset(
    spec: Any,
    model: mujoco.MjModel,
    model_name: str,
    mirror: bool | None = None,
    source: str = "motion",
    plausibility: str | None = None,
) -> Dataset:
    """Read, screen, resample and pack every clip a ``motion:`` value names (``mirror`` and
    ``plausibility`` override the spec's when given). Every clip must belong to ``model``
    (InputError naming its file)."""
    sources, spec_mirror = dataset_sources(spec, source)
    mirror = spec_mirror if mirror is None else mirror
    policy = plausibility_policy(spec, source) if plausibility is None else plausibility
    trajs: list[Trajectory] = []
    weights, tags, files = [], [], []
    verdicts: dict = {}
    file_names: list[str] = []
    for src in sources:
        traj = trim_trajectory(Trajectory.load(src.path), src.trim, src.path)
        try:
            traj.check_model(model, src.path)
        except InputError as err:
            raise InputError(src.path, f"{err.problem}; the run's model is '{model_name}'") from err
        check_clip_lengths(traj, src.path)
        if src.name is not None:
            names = (src.name,) if traj.num_clips == 1 else tuple(f"{src.name}/{n}" for n in traj.clip_names)
            traj = dataclasses.replace(traj, clip_names=names)
        traj, verdict = screen_clips(traj, model, policy, src.path)
        verdicts.update(verdict)
        if traj is None:
            continue
        trajs.append(traj)
        file_names.append(str(src.path))
        weights += [src.weight] * traj.num_clips
        tags += [src.tags] * traj.num_clips
        files += [str(src.path)] * traj.num_clips
    if not trajs:
        raise InputError(source, f"every clip fails the plausibility check (plausibility: {policy})")
    rate_hz = max(t.rate_hz for t in trajs)
    trajs = [t if abs(t.rate_hz - rate_hz) <= 1e-9 * rate_hz else _at_rate(t, model, rate_hz) for t in trajs]
    flags = np.zeros(sum(t.num_clips for t in trajs), dtype=bool)
    if mirror:  # each file mirrored with its own ground (a mirrored terrain is another ground)
        from musclerl.motion.mirror import mirror_map, mirror_trajectory

        pairs = mirror_map(model)
        twins = [mirror_trajectory(t, pairs) for t in trajs]
        trajs += [
            dataclasses.replace(t, clip_names=tuple(f"{n}:mirror" for n in t.clip_names)) for t in twins
        ]
        file_names += [f"{n} (mirror)" for n in file_names]
        weights, tags, files = weights * 2, tags * 2, files * 2
        flags = np.concatenate([flags, np.ones_like(flags)])
    tiled = tile_grounds(trajs)
    packed = concatenate(tiled.trajectories, file_names)
    packed = dataclasses.replace(packed, model_name=model_name)
    offsets = np.concatenate(
        [np.repeat(off[None], t.num_clips, axis=0) for t, off in zip(trajs, tiled.offset_m, strict=True)]
    )
    w = np.asarray(weights, dtype=float)
    if not np.any(w > 0):
        raise InputError(source, "every clip has weight 0")
    return Dataset(packed, w, tuple(tags), tuple(files), flags, offsets, verdicts)


def _at_rate(traj: Trajectory, model: mujoco.MjModel, rate_hz: float) -> Trajectory:
    """``traj`` resampled to exactly ``rate_hz`` (one-clip results of ``resample`` carry the clip's
    own nearest rate; the packed dataset needs one rate, so that rate is set to the target)."""
    out = resample(traj, model, rate_hz)
    return dataclasses.replace(out, rate_hz=rate_hz)
