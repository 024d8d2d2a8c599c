"""Early termination (failure) and truncation (time limit), kept apart.

- terminated, a fall: the root height above the ground outside [``root_height_min_m``,
  ``root_height_max_m``]; the root's tilt (the angle between the world's up axis seen from the
  simulated root and seen from the reference root, so yaw does not count) above
  ``max_tilt_deg``; a collision geom of a non-foot body (trunk, pelvis, thighs, shanks) within
  ``nonfoot_contact_m`` of the ground;
- terminated, a deviation, measured as the reward measures it: the largest root-relative site
  error above ``site_deviation_m``, or the root's ground-plane distance from the reference root
  above ``root_deviation_m`` (both loosened early in an episode by the optional curriculum);
- terminated: a non-finite or exploding state;
- truncated: the episode reached ``horizon`` control steps, or a non-looping clip has no
  reference frame for the next control step. Never set where terminated is.
"""

from __future__ import annotations

from typing import Any

from musclerl.envs.config import EnvConfig
from musclerl.envs.state import Kinematics
from musclerl.geometry import arrays as geo
from musclerl.models.geoms import primitive_lowest_z

#: The reasons an episode terminates, reported as ``metrics["term/<rule>"]``.
TERMINATION_RULES = ("height", "tilt", "nonfoot_contact", "site_deviation", "root_deviation", "bad")


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


def tilt_rad(qpos: Any, ref_qpos: Any, xp: Any) -> Any:
    """(N,) angle between world up seen in the simulated root frame and in the reference's."""
    up_sim = geo.quat_to_mat(qpos[:, 3:7], xp)[:, 2, :]  # row 2 of R = world z in the body frame
    up_ref = geo.quat_to_mat(ref_qpos[:, 3:7], xp)[:, 2, :]
    return xp.arccos(xp.clip(xp.sum(up_sim * up_ref, axis=-1), -1.0, 1.0))


def nonfoot_clearance_m(kin: Kinematics, consts: dict[str, Any], xp: Any) -> Any:
    """(N,) lowest point of any non-foot collision geom above the ground under it (inf if none)."""
    g = consts["nonfoot_geoms"]
    if g["kind"].shape[0] == 0:
        return kin.qpos[:, 0] * 0.0 + 1e9
    low = primitive_lowest_z(g["kind"], g["size"], g["rbound"], kin.geom_pos_m, kin.geom_xmat, xp)
    ground = geo.ground_height(kin.geom_pos_m[..., :2], consts["terrain"], xp)
    return xp.min(low - ground, axis=-1)


def deviation_scale(steps: Any, control_dt_s: float, cfg: EnvConfig, xp: Any) -> Any:
    """(N,) factor >= 1 on the deviation thresholds: the curriculum's loosening at episode time."""
    t = cfg.termination
    if t.deviation_curriculum_s <= 0:
        return steps * 0.0 + 1.0
    progress = xp.clip(steps * control_dt_s / t.deviation_curriculum_s, 0.0, 1.0)
    return t.deviation_curriculum_factor + (1.0 - t.deviation_curriculum_factor) * progress


def terminated(
    errors: dict[str, Any],
    height_m: Any,
    tilt: Any,
    clearance_m: Any,
    scale: Any,
    bad: Any,
    cfg: EnvConfig,
    xp: Any,
) -> tuple[Any, dict[str, Any]]:
    """(N,) bool termination and the (N,) bool reason of each rule (``term/<rule>`` metrics).

    ``errors``: ``tracking_errors``'s dict (``site_err_local_max_m``, ``root_drift_m``), ``height_m``
    root height (N,), ``tilt`` (N,) rad, ``clearance_m`` (N,) of non-foot geoms, ``scale`` (N,)
    curriculum factor, ``bad`` (N,) non-finite state.
    """
    t = cfg.termination
    reasons = {
        "height": (height_m < t.root_height_min_m) | (height_m > t.root_height_max_m),
        "tilt": tilt > xp.deg2rad(t.max_tilt_deg),
        "nonfoot_contact": clearance_m < t.nonfoot_contact_m,
        "site_deviation": (errors["site_err_local_max_m"] > t.site_deviation_m * scale)
        & (t.site_deviation_m > 0),
        "root_deviation": (errors["root_drift_m"] > t.root_deviation_m * scale) & (t.root_deviation_m > 0),
        "bad": bad,
    }
    out = bad
    for value in reasons.values():
        out = out | value
    return out, reasons


def truncated(
    steps: Any, clip: Any, time_s: Any, control_dt_s: float, ref: dict[str, Any], cfg: EnvConfig, xp: Any
) -> Any:
    """(N,) bool: horizon reached or the next step would run past a non-looping clip's last frame."""
    last_s = (ref["clip_lengths"][clip] - 1) / ref["rate_hz"]
    past_end = ~ref["clip_loop"][clip] & (time_s + control_dt_s > last_s + 1e-6)
    return (steps >= cfg.horizon) | past_end
