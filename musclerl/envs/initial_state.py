"""Reference-state initialisation (RSI) and clip sampling, with optional adaptive weights.

An episode starts at a clip drawn with probability proportional to its weight (times, with
adaptive sampling, ``floor + failure rate`` of the clip), at a frame drawn uniformly among those
that leave at least one control step of reference (or the first frame without RSI). The
simulated state is set to the reference qpos/qvel of that frame; activations start at zero.

Functions take uniform random numbers so numpy (cpu) and jax (mjx) share the same math.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from musclerl.envs.config import SamplingConfig
from musclerl.errors import InputError


def base_weights(num_clips: int, cfg: SamplingConfig, source: str = "env config") -> np.ndarray:
    """(C,) non-negative clip weights from the config (uniform by default)."""
    if cfg.clip_weights is None:
        return np.ones(num_clips)
    w = np.asarray(cfg.clip_weights, dtype=float)
    if w.shape != (num_clips,) or np.any(w < 0) or not np.any(w > 0) or not np.all(np.isfinite(w)):
        raise InputError(
            source, f"sampling.clip_weights needs {num_clips} non-negative weights, not all zero"
        )
    return w


def clip_probabilities(weights: Any, fail_rate: Any, cfg: SamplingConfig, xp: Any) -> Any:
    """(C,) sampling probabilities."""
    p = weights * (cfg.adaptive_floor + fail_rate) if cfg.adaptive else weights
    return p / xp.sum(p)


def sample_starts(
    u_clip: Any, u_frame: Any, probs: Any, ref: dict[str, Any], control_dt_s: float, rsi: bool, xp: Any
) -> tuple[Any, Any]:
    """Clip (N,) int32 and start time (N,) s, from uniforms ``u_clip``, ``u_frame`` (N,) in [0, 1)."""
    cdf = xp.cumsum(probs)
    clip = xp.minimum(xp.searchsorted(cdf, u_clip * cdf[-1], side="right"), probs.shape[0] - 1).astype(
        xp.int32
    )
    length = ref["clip_lengths"][clip]
    last_s = (length - 1) / ref["rate_hz"]
    # non-looping: the start must leave one control step before the last frame
    n_open = xp.floor((last_s - control_dt_s) * ref["rate_hz"] + 1e-6).astype(xp.int32) + 1
    n_start = xp.where(ref["clip_loop"][clip], length, xp.maximum(n_open, 1))
    frame = xp.minimum(xp.floor(u_frame * n_start).astype(xp.int32), n_start - 1)
    if not rsi:
        frame = frame * 0
    return clip, frame / ref["rate_hz"]


def update_fail_rate(fail_rate: Any, clip: Any, done: Any, terminated: Any, ema: float, xp: Any) -> Any:
    """Running per-clip rate (C,) of episodes that ended by termination rather than truncation."""
    num_clips = fail_rate.shape[0]
    onehot = clip[:, None] == xp.arange(num_clips)[None, :]
    n_end = xp.sum(onehot & done[:, None], axis=0)
    n_fail = xp.sum(onehot & terminated[:, None], axis=0)
    observed = n_fail / xp.maximum(n_end, 1)
    return xp.where(n_end > 0, (1 - ema) * fail_rate + ema * observed, fail_rate)
