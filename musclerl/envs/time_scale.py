"""Time-scaling augmentation: faster and slower copies of every training clip.

A clip played ``s`` times as fast is ``q_s(t) = q(s t)``: the same poses along the same path,
reached in ``1/s`` of the time. It is made on the model's manifold at the dataset's own rate:
the frames are read as if recorded at ``s`` times the rate and resampled back
(:func:`musclerl.motion.trajectory.resample`: free and ball joints along the shortest arc, i.e.
quaternions slerped, scalar joints linearly), every joint-equality-driven coordinate is then set
from its independent coordinate again (:func:`musclerl.models.couplings.apply_couplings`, so the
knee's coupled translations stay on their curves), and the velocities are recomputed from the new
positions by central differences on the manifold (``mj_differentiatePos``; a looping clip across
its seam, shifted by the unchanged root travel per cycle), which scales them by ``s``.

``augment.time_scales: [0.8, 0.9, 1.1, 1.2]`` in a training config appends one copy of every
clip per factor, named ``<clip>@<s>x``, with the clip's weight, tags, source file and ground
(:func:`with_time_scales`); the validation set is never augmented.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.models.couplings import apply_couplings
from musclerl.motion.dataset import Dataset
from musclerl.motion.trajectory import Trajectory, concatenate, finite_difference_qvel, looping_qvel, resample

#: Factors outside this range are not a change of walking speed but another motion.
MIN_SCALE, MAX_SCALE = 0.5, 2.0


def check_scales(scales, source: str = "augment.time_scales") -> tuple[float, ...]:
    """The factors as floats; an :class:`InputError` for anything but numbers in
    [:data:`MIN_SCALE`, :data:`MAX_SCALE`] other than 1, without repeats."""
    if not isinstance(scales, (list, tuple)) or not all(
        isinstance(s, (int, float)) and not isinstance(s, bool) for s in scales
    ):
        raise InputError(source, f"must be a list of speed factors, got {scales!r}")
    out = tuple(float(s) for s in scales)
    bad = [s for s in out if not (MIN_SCALE <= s <= MAX_SCALE) or s == 1.0]
    if bad or len(set(out)) != len(out):
        raise InputError(
            source,
            f"factors must be distinct numbers in [{MIN_SCALE}, {MAX_SCALE}] other than 1, got {scales!r}",
        )
    return out


def time_scaled(clip: Trajectory, model: mujoco.MjModel, scale: float) -> Trajectory:
    """The one-clip ``clip`` played ``scale`` times as fast, at its own rate (module docstring).

    Frames: about ``n / scale`` of them (a clip that does not loop keeps its first and last pose);
    sites and contacts are dropped (they belong to the old frames), terrain kept."""
    if clip.num_clips != 1:
        raise InputError(clip.clip_names[0], "time_scaled takes one clip; use with_time_scales for a dataset")
    rate_hz = float(clip.rate_hz)
    loop = bool(clip.clip_loop[0])
    fast = dataclasses.replace(
        clip, rate_hz=rate_hz * scale, qvel=clip.qvel * scale, site_names=(), site_pos_m=None
    )
    fast = dataclasses.replace(fast, contact_names=(), contact=None)
    out = resample(fast, model, rate_hz)
    qpos = apply_couplings(model, out.qpos)
    if loop:  # the root's travel per cycle is that of the source
        cycle_xy_m = clip.qpos[-1, :2] - clip.qpos[0, :2] + clip.qvel[-1, :2] / rate_hz
        qvel = looping_qvel(model, qpos, rate_hz, cycle_xy_m)
    else:
        qvel = finite_difference_qvel(model, qpos, rate_hz)
    return dataclasses.replace(out, qpos=qpos, qvel=qvel, rate_hz=rate_hz, clip_names=clip.clip_names)


def with_time_scales(dataset: Dataset, model: mujoco.MjModel, scales) -> Dataset:
    """``dataset`` with a copy of every clip per factor in ``scales`` appended (module docstring)."""
    scales = check_scales(scales)
    if not scales:
        return dataset
    traj = dataset.trajectory
    clips = [traj.clip(c) for c in range(traj.num_clips)]
    copies = []
    for s in scales:
        for clip in clips:
            fast = time_scaled(clip, model, s)
            copies.append(dataclasses.replace(fast, clip_names=(f"{clip.clip_names[0]}@{s:g}x",)))
    packed = concatenate(clips + copies)
    k = len(scales) + 1
    return Dataset(
        trajectory=dataclasses.replace(packed, terrain=traj.terrain),
        weights=np.tile(dataset.weights, k),
        tags=tuple(dataset.tags) * k,
        sources=tuple(dataset.sources) * k,
        mirrored=np.tile(dataset.mirrored, k),
        ground_offset_m=np.tile(dataset.ground_offset_m, (k, 1)),
    )
