"""Reference-state initialisation (RSI) and clip sampling, with optional adaptive weights.

An episode starts at a clip drawn with probability proportional to its weight (times, with
adaptive sampling, ``floor + failure rate`` of the clip), at a frame drawn uniformly among those
that leave at least one control step of reference (or the first frame without RSI; with
``sampling.first_frame_frac``, that share of the starts at the first frame). The
simulated state is set to the reference qpos/qvel of that frame; activations start at zero.
With ``sampling.qpos_noise`` / ``qvel_noise`` > 0 (:class:`StartNoise`) every independent joint
coordinate's position and velocity get uniform noise in +-that (positions kept in the joint's
range; the coordinates joint equalities drive follow their independent coordinate), so the
policy learns to recover from states off the reference.

Functions take uniform random numbers so numpy (cpu) and jax (mjx) share the same math.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco
import numpy as np

from musclerl.envs.config import SamplingConfig
from musclerl.errors import InputError
from musclerl.models.couplings import couplings, independent_coordinates, polynomial, polynomial_slope


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
    u_clip: Any,
    u_frame: Any,
    probs: Any,
    ref: dict[str, Any],
    control_dt_s: float,
    cfg: SamplingConfig,
    xp: Any,
) -> tuple[Any, Any]:
    """Clip (N,) int32 and start time (N,) s, from uniforms ``u_clip``, ``u_frame`` (N,) in [0, 1).

    ``cfg.rsi`` off: every start at the first frame. ``cfg.first_frame_frac``: the share of RSI
    starts put at the clip's first frame (``u_frame`` below it; the rest spread uniformly, as
    without it). A clip tracked whole starts there, from rest
    activations at the clip's full speed; uniform RSI puts one start in a clip's length there."""
    cdf = xp.cumsum(probs)
    clip = xp.minimum(xp.searchsorted(cdf, u_clip * cdf[-1], side="right"), probs.shape[0] - 1).astype(
        xp.int32
    )
    length = ref["clip_lengths"][clip]
    last_s = (length - 1) / ref["rate_hz"]
    # non-looping: the start must leave one control step before the last frame
    n_open = xp.floor((last_s - control_dt_s) * ref["rate_hz"] + 1e-6).astype(xp.int32) + 1
    n_start = xp.where(ref["clip_loop"][clip], length, xp.maximum(n_open, 1))
    if cfg.first_frame_frac > 0:
        u_spread = (u_frame - cfg.first_frame_frac) / (1.0 - cfg.first_frame_frac)
        u_frame = xp.where(u_frame < cfg.first_frame_frac, 0.0, u_spread)
    frame = xp.minimum(xp.floor(u_frame * n_start).astype(xp.int32), n_start - 1)
    if not cfg.rsi:
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


@dataclasses.dataclass(frozen=True)
class StartNoise:
    """Initial-state noise on the K independent joint coordinates of a model (module docstring).

    ``select_qpos`` (K, nq) / ``select_dof`` (K, nv) pick the coordinates; the couplings
    (dependent joint y of independent x) are stacked as arrays of their qpos/dof addresses."""

    qpos_noise: float
    qvel_noise: float
    select_qpos: np.ndarray  # (K, nq) one-hot
    select_dof: np.ndarray  # (K, nv) one-hot
    low: np.ndarray  # (K,) joint range (-inf/inf when unlimited)
    high: np.ndarray
    y_qpos: np.ndarray  # (E,) one row per coupling between two joints
    x_qpos: np.ndarray
    y_select_qpos: np.ndarray  # (E, nq) one-hot of y
    y_select_dof: np.ndarray  # (E, nv)
    x_dof: np.ndarray
    coef: np.ndarray  # (E, 5)
    x0: np.ndarray  # (E,)
    y0: np.ndarray

    @classmethod
    def of(cls, model: mujoco.MjModel, cfg: SamplingConfig) -> StartNoise | None:
        """The noise ``cfg`` asks for on ``model``; None when both amplitudes are 0."""
        if cfg.qpos_noise <= 0 and cfg.qvel_noise <= 0:
            return None
        joints = [model.joint(name) for name in independent_coordinates(model)]
        eye_q, eye_v = np.eye(model.nq), np.eye(model.nv)
        limited = np.array([bool(model.jnt_limited[j.id]) for j in joints], dtype=bool)
        ranges = np.array([model.jnt_range[j.id] for j in joints], dtype=float).reshape(-1, 2)
        coups = couplings(model)
        return cls(
            qpos_noise=float(cfg.qpos_noise),
            qvel_noise=float(cfg.qvel_noise),
            select_qpos=eye_q[[int(j.qposadr[0]) for j in joints]],
            select_dof=eye_v[[int(j.dofadr[0]) for j in joints]],
            low=np.where(limited, ranges[:, 0], -np.inf),
            high=np.where(limited, ranges[:, 1], np.inf),
            y_qpos=np.array([c.y_qpos for c in coups], dtype=int),
            x_qpos=np.array([c.x_qpos for c in coups], dtype=int),
            y_select_qpos=eye_q[[c.y_qpos for c in coups]].reshape(-1, model.nq),
            y_select_dof=eye_v[[c.y_dof for c in coups]].reshape(-1, model.nv),
            x_dof=np.array([c.x_dof for c in coups], dtype=int),
            coef=np.array([c.coef for c in coups], dtype=float).reshape(-1, 5),
            x0=np.array([c.x0 for c in coups], dtype=float),
            y0=np.array([c.y0 for c in coups], dtype=float),
        )

    @property
    def rows(self) -> int:
        """Uniforms (rows, N) one start draws: a position and a velocity per coordinate."""
        return 2 * self.select_qpos.shape[0]

    def apply(self, qpos: Any, qvel: Any, u: Any, xp: Any) -> tuple[Any, Any]:
        """qpos (n, nq), qvel (n, nv) with the noise of uniforms ``u`` (rows, n) in [0, 1)."""
        k = self.select_qpos.shape[0]
        coord = qpos @ self.select_qpos.T  # (n, K)
        noisy = xp.clip(coord + self.qpos_noise * (2 * u[:k].T - 1), self.low, self.high)
        qpos = qpos + (noisy - coord) @ self.select_qpos
        qvel = qvel + self.qvel_noise * (2 * u[k:].T - 1) @ self.select_dof
        if self.y_qpos.size:  # driven coordinates follow: y = y0 + p(x - x0), dy/dt = p'(x - x0) dx/dt
            dx = qpos[:, self.x_qpos] - self.x0
            y = self.y0 + polynomial(self.coef, dx, xp)
            y_dot = polynomial_slope(self.coef, dx, xp) * qvel[:, self.x_dof]
            qpos = qpos + (y - qpos[:, self.y_qpos]) @ self.y_select_qpos
            qvel = qvel + (y_dot - qvel @ self.y_select_dof.T) @ self.y_select_dof
        return qpos, qvel
