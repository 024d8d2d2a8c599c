"""Trimming a motion by time or frame: what ``--start/--end`` (seconds) and ``--start-frame/--end-frame``
of ``musclerl retarget smpl`` and ``musclerl info``, and a dataset manifest's ``start_s``, ``end_s``,
``start_frame``, ``end_frame`` keep.

Both ends are inclusive, as OpenSim's ``time_range`` and a viewer's frame range are. Frames count
from 0 and times from the file's first frame (frame ``f`` is at ``f / rate_hz`` s), in the file's
own numbering: frames a reader dropped (a BVH file's rest pose, :mod:`musclerl.motion.bvh`) keep
their numbers, so a trim means the same frames whether or not a rest frame was found; a window
reaching into dropped frames starts at the first frame kept. A time is rounded to the nearest
frame. A Trajectory (the manifest's clips) counts from its own frame 0, each clip separately.

Refused with :class:`~musclerl.errors.InputError` naming the file: an end before its start, a
start or end beyond the last frame, a negative value, a time and a frame given for the same end,
and a window holding fewer than :data:`MIN_TRIM_FRAMES` frames.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import TYPE_CHECKING

import numpy as np

from musclerl.errors import InputError
from musclerl.motion.keypoints import KeypointMotion

if TYPE_CHECKING:  # the Trajectory module imports MuJoCo: the command line's parser stays light
    from musclerl.motion.trajectory import Trajectory

MIN_TRIM_FRAMES = 2  # a clip needs two frames for a velocity


@dataclasses.dataclass(frozen=True)
class Trim:
    """A window of a motion: each end by time (s) or by frame (0-based), None for the clip's end."""

    start_s: float | None = None
    end_s: float | None = None
    start_frame: int | None = None
    end_frame: int | None = None

    @property
    def active(self) -> bool:
        return any(v is not None for v in dataclasses.astuple(self))

    def describe(self) -> str:
        """The trim as the command line writes it (``--start 0.5 --end-frame 300``)."""
        names = {
            "start_s": "--start",
            "end_s": "--end",
            "start_frame": "--start-frame",
            "end_frame": "--end-frame",
        }
        return " ".join(f"{names[k]} {v:g}" for k, v in dataclasses.asdict(self).items() if v is not None)

    def window(self, first_frame: int, num_frames: int, rate_hz: float, source: str | os.PathLike) -> slice:
        """The frames to keep of a motion whose frame 0 is the file's frame ``first_frame`` and that has
        ``num_frames`` frames at ``rate_hz``: a slice of its own frames (module docstring's rules)."""
        last = first_frame + num_frames - 1  # the file's last frame
        ends = []
        for what, seconds, frame, default in (
            ("start", self.start_s, self.start_frame, 0),
            ("end", self.end_s, self.end_frame, last),
        ):
            if seconds is not None and frame is not None:
                raise InputError(source, f"give the {what} as a time or as a frame, not both")
            if seconds is not None:
                if not (math.isfinite(seconds) and seconds >= 0):
                    raise InputError(source, f"trim {what} {seconds} s must be a time >= 0")
                frame = int(np.floor(seconds * rate_hz + 0.5))
                label = f"{what} {seconds:g} s (frame {frame})"
            elif frame is not None:
                if frame < 0:
                    raise InputError(source, f"trim {what} frame {frame} must be >= 0")
                label = f"{what} frame {frame}"
            else:
                ends.append(default)
                continue
            if frame > last:
                raise InputError(
                    source,
                    f"trim {label} is beyond the clip: its last frame is {last} at {last / rate_hz:.3f} s",
                )
            ends.append(frame)
        start, end = max(ends[0], first_frame), ends[1]
        if ends[1] < ends[0]:
            raise InputError(source, f"trim end (frame {ends[1]}) is before its start (frame {ends[0]})")
        if end - start + 1 < MIN_TRIM_FRAMES:
            raise InputError(
                source,
                f"trim keeps {max(0, end - start + 1)} frame(s) (file frames {start}-{end}, the clip "
                f"starting at frame {first_frame}); at least {MIN_TRIM_FRAMES} are needed",
            )
        return slice(start - first_frame, end - first_frame + 1)


def trim_keypoints(motion: KeypointMotion, trim: Trim, source: str | os.PathLike) -> KeypointMotion:
    """A :class:`~musclerl.motion.keypoints.KeypointMotion` cut to ``trim`` (unchanged when it
    is inactive), the cut noted in its ``notes``."""
    if not trim.active:
        return motion
    window = trim.window(motion.first_frame, motion.num_frames, motion.rate_hz, source)
    first, last = motion.first_frame + window.start, motion.first_frame + window.stop - 1
    note = (
        f"trimmed to file frames {first}-{last} ({first / motion.rate_hz:.3f}-{last / motion.rate_hz:.3f} s)"
    )
    return motion.frames(window.start, window.stop, note)


def trim_trajectory(traj: Trajectory, trim: Trim, source: str | os.PathLike) -> Trajectory:
    """A :class:`~musclerl.motion.trajectory.Trajectory` with each clip cut to ``trim`` (clip frames
    counted from the clip's first frame); unchanged when ``trim`` is inactive."""
    from musclerl.motion.trajectory import concatenate

    if not trim.active:
        return traj
    clips = []
    for c in range(traj.num_clips):
        clip = traj.clip(c)
        window = trim.window(0, clip.num_frames, clip.rate_hz, f"{source}: clip {clip.clip_names[0]}")
        clips.append(
            dataclasses.replace(
                clip,
                qpos=clip.qpos[window],
                qvel=clip.qvel[window],
                site_pos_m=None if clip.site_pos_m is None else clip.site_pos_m[window],
                contact=None if clip.contact is None else clip.contact[window],
                clip_loop=np.zeros(1, dtype=bool) if window != slice(0, clip.num_frames) else clip.clip_loop,
            )
        )
    return clips[0] if len(clips) == 1 else concatenate(clips)
