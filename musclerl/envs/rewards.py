"""DeepMimic-style tracking reward: ``sum_i w_i exp(-k_i mse_i)`` minus bounded penalties.

Terms (errors between the simulated state and the reference at the same clip time):

- ``joint_pos``: joint positions (all but the free root), rad (or m for slide joints)
- ``joint_vel``: joint velocities (all but the free root)
- ``root_pos``: root position, world frame, m
- ``root_vel``: root linear (world) and angular (root frame) velocity, the free joint's qvel
- ``site_pos``: site positions relative to the root position, m (root-relative: drift is
  ``root_pos``'s to punish, so one stumble does not zero every later step's site reward)
- ``site_ori``: angle between simulated and reference site orientations, rad
- ``site_vel``: site linear velocities, world frame, m/s
- ``activation_energy``: ``-w mean(act^2)``, act in [0, 1] so in [-w, 0]
- ``action_rate``: ``-w mean((e_t - e_{t-1})^2)`` of the excitations e in [0, 1] the action
  commanded (so in [-w, 0] in every action space)

Each term appears once; ``metrics['reward/<term>']`` is its weighted contribution and the reward
is their sum. ``mse`` is the mean of squared components over the term's coordinates.
"""

from __future__ import annotations

from typing import Any

from musclerl.envs.config import PENALTY_TERMS, TRACKING_TERMS, EnvConfig
from musclerl.envs.state import Kinematics
from musclerl.geometry import arrays as geo


def tracking_errors(kin: Kinematics, target: dict[str, Any], xp: Any) -> dict[str, Any]:
    """Mean squared error (N,) of each tracking term, and distances in m (N,): ``site_err_m`` (mean
    world-frame site distance), ``site_err_local_m`` (mean root-relative distance: MPJPE),
    ``site_err_local_max_m`` (its largest site), ``root_drift_m`` (root ground-plane distance)."""
    site_rel = kin.site_pos_m - kin.qpos[:, None, :3]
    site_rel_ref = target["site_pos_m"] - target["qpos"][:, None, :3]
    rel_rot = xp.swapaxes(kin.site_xmat, -1, -2) @ target["site_xmat"]
    site_dist = xp.linalg.norm(kin.site_pos_m - target["site_pos_m"], axis=-1)
    local_dist = xp.linalg.norm(site_rel - site_rel_ref, axis=-1)
    drift = kin.qpos[:, :2] - target["qpos"][:, :2]
    return {
        "joint_pos": _mse(kin.qpos[:, 7:] - target["qpos"][:, 7:], xp),
        "joint_vel": _mse(kin.qvel[:, 6:] - target["qvel"][:, 6:], xp),
        "root_pos": _mse(kin.qpos[:, :3] - target["qpos"][:, :3], xp),
        "root_vel": _mse(kin.qvel[:, :6] - target["qvel"][:, :6], xp),
        "site_pos": _mse(site_rel - site_rel_ref, xp),
        "site_ori": xp.mean(geo.rotation_angle(rel_rot, xp) ** 2, axis=-1),
        "site_vel": _mse(kin.site_vel_mps - target["site_vel_mps"], xp),
        "site_err_m": xp.mean(site_dist, axis=-1),
        "site_err_local_m": xp.mean(local_dist, axis=-1),
        "site_err_local_max_m": xp.max(local_dist, axis=-1),
        "root_drift_m": xp.sqrt(xp.sum(drift * drift, axis=-1)),
    }


def reward_terms(
    errors: dict[str, Any], act: Any, ctrl: Any, last_ctrl: Any, cfg: EnvConfig, xp: Any
) -> dict[str, Any]:
    """Weighted contribution (N,) of every term, keyed ``reward/<term>``, plus ``reward/total``.

    ``act`` (N, na) activations, ``ctrl`` and ``last_ctrl`` (N, nu) excitations of this and the
    previous control step."""
    out = {}
    for term in TRACKING_TERMS:
        out[f"reward/{term}"] = cfg.weight(term) * xp.exp(-cfg.scale(term) * errors[term])
    out["reward/activation_energy"] = -cfg.reward.activation_energy * _mse(act, xp)
    out["reward/action_rate"] = -cfg.reward.action_rate * _mse(ctrl - last_ctrl, xp)
    total = out[f"reward/{TRACKING_TERMS[0]}"]
    for term in (*TRACKING_TERMS[1:], *PENALTY_TERMS):
        total = total + out[f"reward/{term}"]
    out["reward/total"] = total
    return out


def _mse(diff: Any, xp: Any) -> Any:
    n = diff.shape[0]
    flat = diff.reshape(n, -1)
    if flat.shape[1] == 0:
        return xp.zeros(n, dtype=diff.dtype)
    return xp.mean(flat * flat, axis=-1)
