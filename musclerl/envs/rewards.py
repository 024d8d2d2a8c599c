"""DeepMimic-style tracking reward: ``sum_i w_i exp(-k_i e_i)`` minus bounded penalties ``w_j e_j``.

Every term is one row of :data:`REWARD_TERMS`: its kind, its error function and its default
weight (and scale). A ``tracking`` term pays ``w exp(-k e)`` with ``e`` a mean squared error
between the simulated state and the reference at the same clip time; a ``penalty`` costs
``-w e`` with ``e`` in [0, 1], so it lies in [-w, 0]. Adding a term is one function and one row;
config validation, the metric names and the total follow the table. The terms:

- ``joint_pos``: joint positions (all but the free root), rad (or m for slide joints)
- ``joint_vel``: joint velocities (all but the free root)
- ``root_pos``: root position, world frame, m
- ``root_vel``: root linear (world) and angular (root frame) velocity, the free joint's qvel
- ``root_ori``: angle between simulated and reference root (pelvis) orientations, rad. The
  pelvis is the root, so no joint term sees its tilt, list or rotation, and ``site_ori`` averages
  it with twelve other sites; on models whose trunk is rigid on the pelvis (myolegs) a policy
  balances by pitching it (three times a person's tilt range), which this term prices. Off
  (weight 0) by default
- ``site_pos``: site positions relative to the root position, m (root-relative: drift is
  ``root_pos``'s to punish, so one stumble does not zero every later step's site reward)
- ``site_ori``: angle between simulated and reference site orientations, rad
- ``site_vel``: site linear velocities, world frame, m/s
- ``feet_rel``: the foot bodies' positions about their own centroid (world frame, m): where
  the feet are relative to each other, i.e. step length and width, wherever the body has
  drifted. A policy that steps in time with a walk but short of it (the generalist: 11-14 %)
  keeps its root-relative sites within a few centimetres, which ``site_pos`` prices lightly,
  and falls behind in the world. Off (weight 0) by default
- ``activation_energy``: ``mean(act^2)``, act in [0, 1]
- ``action_rate``: ``mean((e_t - e_{t-1})^2)`` of the excitations e in [0, 1] the action
  commanded (so in [0, 1] in every action space)
- ``com_acc``: the whole-body centre of mass's acceleration minus the reference's, in units of g
  (``Kinematics.com_acc_err_mps2 / 9.81``): times the body weight, the error of the net ground
  reaction force, vertical and horizontal. The joint and site terms see a hard landing only
  through the pose; this term sees the impact itself. Off (weight 0) by default
- ``joint_limit``: how far the joint coordinate nearest its range bound has gone into the last
  :data:`LIMIT_MARGIN_RAD` before it, squared, in [0, 1] — where the reference stays clear of that
  bound (each bound on its own: a reference on one bound does not excuse the other). A policy
  that locks a knee on its limit lets the limit constraint carry the body (a torque no muscle
  makes, and a stance no person walks with); off (weight 0) by default

Each term appears once; ``metrics['reward/<term>']`` is its weighted contribution and the reward
is their sum, in table order. ``mse`` is the mean of squared components over the term's
coordinates. Weights and scales are set in :class:`RewardConfig` (``reward.weights``,
``reward.scales``; the two original penalties keep their own keys ``reward.activation_energy``
and ``reward.action_rate``).

This module imports no other env module at run time, so :mod:`musclerl.envs.config` can build
its defaults and checks from the table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from musclerl.dynamics.plausibility import GRAVITY_MPS2
from musclerl.geometry import arrays as geo

if TYPE_CHECKING:
    from musclerl.envs.state import Kinematics

#: ``error(kin, target, last_ctrl, xp) -> (N,)``: ``kin`` the state after the step, ``target`` the
#: reference at the new clip time (``reference.lookup``'s dict, with the model's joint ranges
#: ``limit_qpos_adr``, ``limit_low``, ``limit_high`` (L,)), ``last_ctrl`` (N, nu) the
#: excitations of the previous control step, ``xp`` numpy or jax.numpy.
ErrorFn = Callable[["Kinematics", dict[str, Any], Any, Any], Any]
KINDS = ("tracking", "penalty")


@dataclasses.dataclass(frozen=True)
class RewardTerm:
    """One reward term: ``tracking`` pays ``weight * exp(-scale * error)``, ``penalty`` costs
    ``-weight * error``. ``weight`` and ``scale`` are the defaults :class:`RewardConfig` starts from."""

    kind: str
    error: ErrorFn
    weight: float
    scale: float = 0.0  # tracking terms only (units: 1 / the error's)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"reward term kind must be one of {KINDS}, got '{self.kind}'")


def _mse(diff: Any, xp: Any) -> Any:
    """Mean over every component but the first axis (N,); 0 for an empty term."""
    n = diff.shape[0]
    flat = diff.reshape(n, -1)
    if flat.shape[1] == 0:
        return xp.zeros(n, dtype=diff.dtype)
    return xp.mean(flat * flat, axis=-1)


def _site_rel(kin: Kinematics, target: dict[str, Any]) -> tuple[Any, Any]:
    """Simulated and reference site positions relative to their roots (N, S, 3)."""
    return kin.site_pos_m - kin.qpos[:, None, :3], target["site_pos_m"] - target["qpos"][:, None, :3]


def joint_pos_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.qpos[:, 7:] - target["qpos"][:, 7:], xp)


def joint_vel_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.qvel[:, 6:] - target["qvel"][:, 6:], xp)


def root_pos_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.qpos[:, :3] - target["qpos"][:, :3], xp)


def root_vel_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.qvel[:, :6] - target["qvel"][:, :6], xp)


def root_ori_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    rot, ref_rot = geo.quat_to_mat(kin.qpos[:, 3:7], xp), geo.quat_to_mat(target["qpos"][:, 3:7], xp)
    return geo.rotation_angle(xp.swapaxes(rot, -1, -2) @ ref_rot, xp) ** 2


def site_pos_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    site_rel, site_rel_ref = _site_rel(kin, target)
    return _mse(site_rel - site_rel_ref, xp)


def site_ori_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    rel_rot = xp.swapaxes(kin.site_xmat, -1, -2) @ target["site_xmat"]
    return xp.mean(geo.rotation_angle(rel_rot, xp) ** 2, axis=-1)


def site_vel_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.site_vel_mps - target["site_vel_mps"], xp)


def feet_rel_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    sim, ref = kin.foot_pos_m, target["foot_pos_m"]  # (N, F, 3)
    return _mse((sim - sim.mean(axis=1, keepdims=True)) - (ref - ref.mean(axis=1, keepdims=True)), xp)


def com_acc_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    if kin.com_acc_err_mps2 is None:  # kinematics of one state (a reset): no acceleration yet
        return xp.zeros(kin.qpos.shape[0], dtype=kin.qpos.dtype)
    return _mse(kin.com_acc_err_mps2 / GRAVITY_MPS2, xp)


def activation_energy_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.act, xp)


def action_rate_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    return _mse(kin.ctrl - last_ctrl, xp)


#: Width of the band before a joint's range bound that ``joint_limit`` penalises (about 6 deg):
#: MuJoCo's limit constraint acts at the bound, so the band is the approach to it.
LIMIT_MARGIN_RAD = 0.1


def _bound_depths(qpos: Any, target: dict[str, Any], xp: Any) -> tuple[Any, Any]:
    """How far each limited coordinate of ``qpos`` (N, nq) has gone into the last
    :data:`LIMIT_MARGIN_RAD` before its lower and its upper bound: two (N, L) arrays in [0, 1]."""
    q = qpos[:, target["limit_qpos_adr"]]
    low = xp.clip(1.0 - (q - target["limit_low"]) / LIMIT_MARGIN_RAD, 0.0, 1.0)
    high = xp.clip(1.0 - (target["limit_high"] - q) / LIMIT_MARGIN_RAD, 0.0, 1.0)
    return low, high


def joint_limit_error(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> Any:
    # each bound on its own: a coordinate on one bound where the reference keeps clear of that bound
    # (the reference may sit on the other one: the bundled walk's toes on +30 deg, a policy's on -30)
    low, high = _bound_depths(kin.qpos, target, xp)
    ref_low, ref_high = _bound_depths(target["qpos"], target, xp)
    depth = xp.maximum(xp.where(ref_low > 0.0, 0.0, low), xp.where(ref_high > 0.0, 0.0, high))
    if depth.shape[1] == 0:
        return xp.zeros(depth.shape[0], dtype=depth.dtype)
    return xp.max(depth * depth, axis=-1)


#: name -> term, in the order they are reported and summed. The default scales put a tracking
#: term at exp(-1) for the error of a visibly wrong pose (see :class:`RewardConfig`).
REWARD_TERMS: dict[str, RewardTerm] = {
    "joint_pos": RewardTerm("tracking", joint_pos_error, 0.15, 10.0),
    "joint_vel": RewardTerm("tracking", joint_vel_error, 0.05, 0.1),
    "root_pos": RewardTerm("tracking", root_pos_error, 0.15, 10.0),
    "root_vel": RewardTerm("tracking", root_vel_error, 0.1, 1.0),
    # scale 20: exp(-1) at 13 deg of pelvis orientation error
    "root_ori": RewardTerm("tracking", root_ori_error, 0.0, 20.0),
    "site_pos": RewardTerm("tracking", site_pos_error, 0.3, 500.0),
    "site_ori": RewardTerm("tracking", site_ori_error, 0.1, 5.0),
    "site_vel": RewardTerm("tracking", site_vel_error, 0.15, 2.0),
    # scale 200: exp(-1) at 7 cm RMS per component of the feet about their centroid
    "feet_rel": RewardTerm("tracking", feet_rel_error, 0.0, 200.0),
    # scale 10: exp(-1) at 0.32 g RMS over the three components (0.32 body weights of force)
    "com_acc": RewardTerm("tracking", com_acc_error, 0.0, 10.0),
    "activation_energy": RewardTerm("penalty", activation_energy_error, 0.02),
    "action_rate": RewardTerm("penalty", action_rate_error, 0.02),
    "joint_limit": RewardTerm("penalty", joint_limit_error, 0.0),
}
#: Penalties whose weight is a field of :class:`RewardConfig` (``reward.activation_energy``), as
#: configs have always set them; every other term's weight is an entry of ``reward.weights``.
WEIGHT_FIELDS = ("activation_energy", "action_rate")


def term_names(kind: str | None = None) -> tuple[str, ...]:
    """Registered term names of ``kind`` (``tracking``, ``penalty``; None: all), in table order."""
    return tuple(name for name, term in REWARD_TERMS.items() if kind in (None, term.kind))


@dataclasses.dataclass
class RewardConfig:
    """Weights ``w`` and scales ``k`` of the terms of :data:`REWARD_TERMS` (defaults: the table's).

    Units of k: 1/rad^2 (joint_pos, root_ori, site_ori), s^2/rad^2 (joint_vel), 1/m^2 (root_pos,
    site_pos, feet_rel), s^2/m^2 (root_vel, site_vel); ``mse`` is the mean over components (x, y,
    z count separately).
    The defaults put a term at exp(-1) for the error of a visibly wrong pose: 0.32 rad RMS of
    joint angle, 0.32 m of root drift, 4.5 cm per component of root-relative site position,
    0.7 m/s per component of site velocity; sharper scales leave no gradient while the policy
    is still far off, softer ones pay for standing still. Standing still while the reference
    walks earns under half a perfect step (``tests/test_envs_learning.py``). Penalties are
    ``-w * mean(x^2)`` over muscles with x in [0, 1] (activation, change of excitation between
    control steps) and ``-w * e`` for ``joint_limit`` (e in [0, 1]), so each lies in [-w, 0].
    ``weights`` holds every term's weight but those of :data:`WEIGHT_FIELDS`, which are fields of
    their own.
    """

    weights: dict[str, float] = dataclasses.field(
        default_factory=lambda: {n: t.weight for n, t in REWARD_TERMS.items() if n not in WEIGHT_FIELDS}
    )
    scales: dict[str, float] = dataclasses.field(
        default_factory=lambda: {n: t.scale for n, t in REWARD_TERMS.items() if t.kind == "tracking"}
    )
    activation_energy: float = REWARD_TERMS["activation_energy"].weight
    action_rate: float = REWARD_TERMS["action_rate"].weight
    #: Coordinates ``joint_limit`` watches (empty: every independent coordinate with a range). The
    #: pathology it is for is a locked knee; myolegs' toes (+-30 deg, a person's toe-off bends them
    #: 40-50 deg) and subtalar reach their bounds in a sound walk, and held the term at -0.12 of a
    #: 0.54 step reward on CMU walks where the knees were clear (docs/measurements.md).
    limit_joints: list[str] = dataclasses.field(default_factory=list)

    def weight(self, term: str) -> float:
        """The weight of ``term`` (0 for a term missing from ``weights``)."""
        if term in WEIGHT_FIELDS:
            return float(getattr(self, term))
        return float(self.weights.get(term, 0.0))

    def scale(self, term: str) -> float:
        """The scale of tracking ``term`` (the table's default when missing from ``scales``)."""
        return float(self.scales.get(term, REWARD_TERMS[term].scale))

    def problems(self) -> list[str]:
        """What is wrong with these settings against the table (empty: nothing)."""
        settable = [n for n in REWARD_TERMS if n not in WEIGHT_FIELDS]
        tracking = term_names("tracking")
        out = [
            f"reward.weights: '{key}' is set as reward.{key}"
            if key in WEIGHT_FIELDS
            else f"unknown reward term '{key}'; terms are {settable}"
            for key in self.weights
            if key not in settable
        ]
        out += [
            f"unknown reward term '{key}' in scales; tracking terms are {list(tracking)}"
            for key in self.scales
            if key not in tracking
        ]
        out += [f"reward scale for '{key}' must be >= 0" for key, value in self.scales.items() if value < 0]
        if any(self.weight(n) < 0 for n in term_names("penalty")):
            out.append("penalty weights must be >= 0")
        if not all(isinstance(name, str) for name in self.limit_joints):
            out.append("reward.limit_joints: a list of joint (coordinate) names")
        return out


def tracking_errors(kin: Kinematics, target: dict[str, Any], last_ctrl: Any, xp: Any) -> dict[str, Any]:
    """The error (N,) of every term of :data:`REWARD_TERMS`, keyed by name, and distances in m
    (N,): ``site_err_m`` (mean world-frame site distance), ``site_err_local_m`` (mean root-relative
    distance: MPJPE), ``site_err_local_max_m`` (its largest site), ``root_drift_m`` (root
    ground-plane distance). ``last_ctrl`` (N, nu): the previous control step's excitations."""
    site_rel, site_rel_ref = _site_rel(kin, target)
    site_dist = xp.linalg.norm(kin.site_pos_m - target["site_pos_m"], axis=-1)
    local_dist = xp.linalg.norm(site_rel - site_rel_ref, axis=-1)
    drift = kin.qpos[:, :2] - target["qpos"][:, :2]
    out = {name: term.error(kin, target, last_ctrl, xp) for name, term in REWARD_TERMS.items()}
    out.update(
        site_err_m=xp.mean(site_dist, axis=-1),
        site_err_local_m=xp.mean(local_dist, axis=-1),
        site_err_local_max_m=xp.max(local_dist, axis=-1),
        root_drift_m=xp.sqrt(xp.sum(drift * drift, axis=-1)),
    )
    return out


def reward_terms(errors: dict[str, Any], cfg: RewardConfig, xp: Any) -> dict[str, Any]:
    """Weighted contribution (N,) of every term, keyed ``reward/<term>``, plus ``reward/total``
    (their sum in table order); ``errors`` as :func:`tracking_errors` returns them."""
    out = {}
    for name, term in REWARD_TERMS.items():
        if term.kind == "tracking":
            out[f"reward/{name}"] = cfg.weight(name) * xp.exp(-cfg.scale(name) * errors[name])
        else:
            out[f"reward/{name}"] = -cfg.weight(name) * errors[name]
    names = list(REWARD_TERMS)
    total = out[f"reward/{names[0]}"]
    for name in names[1:]:
        total = total + out[f"reward/{name}"]
    out["reward/total"] = total
    return out
