"""Configuration of the tracking environment: one dataclass tree, loadable from a YAML dict.

Every piece (observation parts, reward terms and their weights/scales, termination thresholds,
episode length, control rate, clip sampling, backend options) has a default, so ``EnvConfig()``
is a working configuration and a YAML file only lists what it changes. Two sections live beside
the tables they configure, so that adding a term or a space is one entry there:
:class:`~musclerl.envs.rewards.RewardConfig` (defaults from ``REWARD_TERMS``) and
:class:`~musclerl.envs.actions.ActionConfig` (``space`` a name of ``ACTION_SPACES``)::

    substeps: 5            # physics steps per control step (control rate = 1 / (substeps * timestep))
    horizon: 1000          # control steps before truncation
    obs: {muscle_force: false, goal_frames: 3, goal_stride: 5}
    reward:
      weights: {site_pos: 0.4}
      scales: {site_pos: 40.0}
    termination: {site_deviation_m: 0.25}
    sampling: {adaptive: true}

Unknown keys and values of the wrong type raise :class:`InputError` (a typo must not silently fall
back to a default); the loader (:func:`musclerl.typed_config.from_mapping`) is the training
config's too.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from musclerl.envs.actions import ACTION_SPACES, ActionConfig
from musclerl.envs.rewards import RewardConfig
from musclerl.errors import InputError
from musclerl.typed_config import flat_items, from_mapping


@dataclasses.dataclass
class ObsConfig:
    """Which observation pieces are on, in the order they are concatenated (see observations.py)."""

    root_height: bool = True
    root_orientation: bool = True
    joint_pos: bool = True
    joint_vel: bool = True
    muscle_length: bool = True
    muscle_velocity: bool = True
    muscle_force: bool = True
    muscle_activation: bool = True
    foot_contact: bool = True
    site_pos: bool = True  # current tracked sites relative to the root, heading frame
    site_error: bool = True  # reference - current site positions (next frame), heading frame
    reference_next: bool = True  # next reference frame: joint positions and root velocity (heading)
    goal: bool = True
    phase: bool = True
    goal_frames: int = 2  # k: how many future reference frames the goal shows
    goal_stride: int = 5  # reference frames between two goal frames
    contact_height_m: float = 0.03  # foot counts as in contact below its rest height + this


@dataclasses.dataclass
class TerminationConfig:
    """Early termination (a failure); truncation is set by ``horizon`` and clip ends.

    Falls: root height above the ground outside [min, max], the root tilted more than
    ``max_tilt_deg`` from the reference root's tilt, or a non-foot collision geom (trunk, pelvis,
    thighs, shanks) within ``nonfoot_contact_m`` of the ground. Deviation, measured as the reward
    measures it: the largest root-relative site error above ``site_deviation_m`` (0 = off), and
    the root farther than ``root_deviation_m`` from the reference root in the ground plane (drift;
    0 = off). ``deviation_curriculum_s`` > 0 loosens both deviation thresholds by a factor
    ``deviation_curriculum_factor`` at the start of an episode and tightens them linearly to their
    values over that many seconds of episode time.
    """

    site_deviation_m: float = 0.25
    root_deviation_m: float = 0.5
    deviation_curriculum_s: float = 0.0
    deviation_curriculum_factor: float = 2.0
    root_height_min_m: float = 0.5
    root_height_max_m: float = 2.5
    max_tilt_deg: float = 50.0
    nonfoot_contact_m: float = 0.02
    max_qvel: float = 1.0e3  # any |qvel| above this counts as an exploding state (reset, counted)


@dataclasses.dataclass
class SamplingConfig:
    """Reference-state initialisation: which clip and time an episode starts at."""

    rsi: bool = True  # random time in the clip; False: start at the clip's first frame
    # with rsi, the share of starts at the clip's first frame (how a clip tracked whole starts)
    first_frame_frac: float = 0.0
    clip_weights: list[float] | None = None  # per clip, default uniform
    adaptive: bool = False  # favour clips whose episodes end by termination
    adaptive_ema: float = 0.05  # update rate of the per-clip failure rate
    adaptive_floor: float = 0.1  # probability mass kept for clips that never fail
    # initial-state noise: uniform in +-this on each independent joint coordinate's position
    # (rad, m for slides; coupled coordinates follow) and velocity (rad/s, m/s) at episode start
    qpos_noise: float = 0.0
    qvel_noise: float = 0.0


@dataclasses.dataclass
class MjxConfig:
    impl: str = "jax"  # mjx.put_model impl: "jax" or "warp" (MuJoCo Warp: pip install -e ".[gpu]")
    # Warp's buffers: contacts and constraints per env; 0 sizes them from the reference frames
    # (twice the most MuJoCo C finds on any frame); an env that overflows them is reported and reset
    nconmax: int = 0
    njmax: int = 0


@dataclasses.dataclass
class EnvConfig:
    """Everything a :class:`~musclerl.envs.TrackingEnv` needs besides model and motions."""

    substeps: int = 5
    control_hz: float = 0.0  # > 0: control rate in Hz, sets substeps = round(1 / (control_hz * timestep))
    horizon: int = 1000
    # "model" keeps the MJCF's integrator; "euler" / "implicitfast" override it. MJX's implicitfast
    # leaves out the muscle force-velocity derivative that MuJoCo C's includes, so on models with
    # muscles the two backends only step identically with "euler" (myolegs uses Euler already).
    integrator: str = "model"
    timestep_s: float = 0.0  # > 0: physics timestep replacing the model's (control_hz then sets substeps)
    sites: list[str] = dataclasses.field(default_factory=list)  # tracked sites; [] = one per jointed body
    foot_bodies: list[str] = dataclasses.field(
        default_factory=list
    )  # [] = lowest bodies with collision geoms
    obs: ObsConfig = dataclasses.field(default_factory=ObsConfig)
    reward: RewardConfig = dataclasses.field(default_factory=RewardConfig)
    termination: TerminationConfig = dataclasses.field(default_factory=TerminationConfig)
    sampling: SamplingConfig = dataclasses.field(default_factory=SamplingConfig)
    action: ActionConfig = dataclasses.field(default_factory=ActionConfig)
    initial_activation: str = (
        "zero"  # "zero", or "static": static optimisation of the reference (see start_activation.py)
    )
    mjx: MjxConfig = dataclasses.field(default_factory=MjxConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, source: str = "env config") -> EnvConfig:
        """Build from a (YAML) dict; missing keys keep their defaults, unknown keys raise."""
        config = from_mapping(cls, data or {}, source)
        config.validate(source)
        return config

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self, source: str = "env config") -> None:
        def need(cond: bool, problem: str) -> None:
            if not cond:
                raise InputError(source, problem)

        need(self.substeps >= 1, f"substeps must be >= 1, got {self.substeps}")
        need(self.horizon >= 1, f"horizon must be >= 1, got {self.horizon}")
        need(
            self.obs.goal_frames >= 0 and self.obs.goal_stride >= 1,
            "obs.goal_frames must be >= 0 and obs.goal_stride >= 1",
        )
        reward_problems = self.reward.problems()
        need(not reward_problems, reward_problems[0] if reward_problems else "")
        t = self.termination
        need(
            t.site_deviation_m >= 0 and t.root_deviation_m >= 0 and t.root_height_min_m < t.root_height_max_m,
            "termination needs site/root_deviation_m >= 0 and root_height_min_m < root_height_max_m",
        )
        need(
            t.deviation_curriculum_s >= 0 and t.deviation_curriculum_factor >= 1,
            "termination.deviation_curriculum_s must be >= 0 and deviation_curriculum_factor >= 1",
        )
        a = self.action
        need(
            a.space in ACTION_SPACES,
            f"action.space must be one of {list(ACTION_SPACES)}, got '{a.space}'",
        )
        need(0 <= a.neutral_excitation <= 1, "action.neutral_excitation must be in [0, 1]")
        followers = [name for name, space in ACTION_SPACES.items() if space.follows_reference]
        need(
            not a.feedforward or ACTION_SPACES[a.space].follows_reference,
            f"action.feedforward needs a reference space ({' or '.join(followers)}), not '{a.space}'",
        )
        need(
            a.kp > 0 and a.kd_ratio >= 0 and a.offset_fraction > 0 and a.joint_offset_rad > 0,
            "action.kp, offset_fraction > 0, kd_ratio >= 0",
        )
        need(
            math.isfinite(self.control_hz) and self.control_hz >= 0,
            f"control_hz must be a finite rate >= 0 (0: use substeps), got {self.control_hz}",
        )
        floats = dataclasses.asdict(self)
        bad = sorted(k for k, v in flat_items(floats) if isinstance(v, float) and not math.isfinite(v))
        need(not bad, f"settings must be finite numbers: {', '.join(bad[:3])}")
        need(
            self.initial_activation in ("static", "zero"),
            f"initial_activation must be 'static' or 'zero', got '{self.initial_activation}'",
        )
        need(
            0 < self.sampling.adaptive_ema <= 1 and 0 <= self.sampling.adaptive_floor <= 1,
            "sampling.adaptive_ema must be in (0, 1] and adaptive_floor in [0, 1]",
        )
        need(
            self.sampling.qpos_noise >= 0 and self.sampling.qvel_noise >= 0,
            "sampling.qpos_noise and sampling.qvel_noise must be >= 0",
        )
        need(
            0 <= self.sampling.first_frame_frac < 1,
            f"sampling.first_frame_frac must be in [0, 1), got {self.sampling.first_frame_frac!r}",
        )
        need(
            self.integrator in ("model", "euler", "implicitfast"),
            f"integrator must be 'model', 'euler' or 'implicitfast', got '{self.integrator}'",
        )
        need(self.timestep_s >= 0, f"timestep_s must be >= 0, got {self.timestep_s}")
        need(self.mjx.impl in ("jax", "warp"), f"mjx.impl must be 'jax' or 'warp', got '{self.mjx.impl}'")
        need(
            self.mjx.nconmax >= 0 and self.mjx.njmax >= 0,
            "mjx.nconmax and mjx.njmax must be >= 0 (0: from the model)",
        )

    def weight(self, term: str) -> float:
        return self.reward.weight(term)

    def scale(self, term: str) -> float:
        return self.reward.scale(term)
