"""Early termination (failure) and truncation (time limit), kept apart.

- terminated: mean site deviation above ``site_deviation_m``, or the root height above the
  ground outside [``root_height_min_m``, ``root_height_max_m``], or a non-finite/exploding state.
- truncated: the episode reached ``horizon`` control steps, or a non-looping clip has no
  reference frame for the next control step. Never set where terminated is.
"""

from __future__ import annotations

from typing import Any

from musclerl.envs import geometry as geo
from musclerl.envs.config import EnvConfig
from musclerl.envs.state import Kinematics


def is_bad(kin: Kinematics, max_qvel: float, xp: Any) -> Any:
    """(N,) bool: NaN/inf anywhere in qpos, qvel, act, or any |qvel| above ``max_qvel``."""
    finite = (
        xp.all(xp.isfinite(kin.qpos), axis=-1)
        & xp.all(xp.isfinite(kin.qvel), axis=-1)
        & xp.all(xp.isfinite(kin.act), axis=-1)
        & xp.all(xp.isfinite(kin.site_pos_m), axis=(-1, -2))
    )
    return ~finite | xp.any(xp.abs(kin.qvel) > max_qvel, axis=-1)


def root_height_m(kin: Kinematics, terrain: dict[str, Any] | None, xp: Any) -> Any:
    """(N,) root z above the ground under it."""
    return kin.qpos[:, 2] - geo.ground_height(kin.qpos[:, :2], terrain, xp)


def terminated(site_err_m: Any, height_m: Any, bad: Any, cfg: EnvConfig) -> Any:
    """(N,) bool: site deviation (N,) in m too large, root height (N,) in m out of range, or ``bad``."""
    t = cfg.termination
    return (
        (site_err_m > t.site_deviation_m)
        | (height_m < t.root_height_min_m)
        | (height_m > t.root_height_max_m)
        | bad
    )


def truncated(
    steps: Any, clip: Any, time_s: Any, control_dt_s: float, ref: dict[str, Any], cfg: EnvConfig, xp: Any
) -> Any:
    """(N,) bool: horizon reached or the next step would run past a non-looping clip's last frame."""
    last_s = (ref["clip_lengths"][clip] - 1) / ref["rate_hz"]
    past_end = ~ref["clip_loop"][clip] & (time_s + control_dt_s > last_s + 1e-6)
    return (steps >= cfg.horizon) | past_end
