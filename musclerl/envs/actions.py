"""Action spaces: how a policy's action becomes the excitations (``ctrl``) of every muscle.

An action space is a small object with bounds (``low``, ``high``), a ``neutral`` action (what an
untrained policy's mean starts at) and ``controller(action, target, xp)``, which returns the
function ``ctrl(length, velocity)`` the physics calls before each physics step (PD spaces) or the
constant excitations for the whole control step (the excitation space). The environment, the
exported policy and evaluation use the same object, so a policy is evaluated in the space it was
trained in.

=====================  ===========  ==========================================================
space                  action       controls
=====================  ===========  ==========================================================
``excitation``         [0, 1]^nu    the excitations themselves
``muscle_length_pd``   [-1, 1]^nu   target length L* = lo + (a + 1)/2 (hi - lo) over the
                                    muscle's length range [lo, hi] (KINESIS), target speed 0
``reference_pd``       [-1, 1]^nu   L* = reference muscle length at the next clip time +
                                    a * offset_fraction * (hi - lo), target speed = the
                                    reference's muscle speed: a = 0 drives the reference pattern
``joint_reference_pd``  [-1, 1]^K   L* = reference muscle length + J (a * joint_offset_rad),
                                    J (nu, K) the reference's muscle Jacobian over the K
                                    independent coordinates: the policy moves joints (as in
                                    MASS), every muscle crossing them follows coherently
=====================  ===========  ==========================================================

PD spaces: the force ``F = kp (L* - L) - kd (V - V*)`` with ``kp`` in peak isometric forces per
metre and ``kd = kd_ratio * kp``, clipped to [-F_max, 0] (muscles only pull; MuJoCo's sign), is
inverted to an excitation with MuJoCo's own muscle model: ``F = gain(L, V) e + bias(L)``, so
``e = (F - bias) / gain`` clipped to [0, 1]. With ``feedforward`` (reference spaces), the PD force
is added to what the reference's static-optimisation activations ``a_ref`` produce at the
current length and speed, as OpenSim's Computed Muscle Control adds feedback to static
optimisation: ``e = a_ref + F / gain`` clipped to [0, 1] (the PD term may then also relax a
muscle below ``a_ref``), so a zero action carries the reference's joint moments from the start.
``gain``/``bias`` are MJX's jax versions of ``mju_muscleGain``/``mju_muscleBias`` (the same
curves; tests compare them with MuJoCo C), run jitted on both backends. Lengths in m (actuator
length), speeds in m/s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from musclerl.envs.config import ActionConfig

with contextlib.redirect_stdout(io.StringIO()):  # MJX prints "Failed to import warp" to stdout
    from mujoco.mjx._src import support as _mjx_support


@dataclasses.dataclass(frozen=True)
class MuscleParams:
    """What PD inversion needs per muscle (nu,): MuJoCo's gain/bias parameters and ranges."""

    lengthrange_m: np.ndarray  # (nu, 2)
    acc0: np.ndarray  # (nu,)
    gainprm: np.ndarray  # (nu, 9)
    biasprm: np.ndarray  # (nu, 9)
    peak_force_n: np.ndarray  # (nu,)

    @classmethod
    def from_model(cls, model: mujoco.MjModel, peak_force_n: np.ndarray) -> MuscleParams:
        return cls(
            lengthrange_m=np.asarray(model.actuator_lengthrange, dtype=float).copy(),
            acc0=np.asarray(model.actuator_acc0, dtype=float).copy(),
            gainprm=np.asarray(model.actuator_gainprm[:, :9], dtype=float).copy(),
            biasprm=np.asarray(model.actuator_biasprm[:, :9], dtype=float).copy(),
            peak_force_n=np.asarray(peak_force_n, dtype=float).copy(),
        )


def muscle_gain_bias(params: MuscleParams, length: Any, velocity: Any) -> tuple[Any, Any]:
    """MuJoCo's muscle (gain, bias) (N, nu) at actuator lengths/velocities (N, nu), as jax arrays."""
    gain = jax.vmap(_mjx_support.muscle_gain, in_axes=(1, 1, 0, 0, 0), out_axes=1)(
        length, velocity, params.lengthrange_m, params.acc0, params.gainprm
    )
    bias = jax.vmap(_mjx_support.muscle_bias, in_axes=(1, 0, 0, 0), out_axes=1)(
        length, params.lengthrange_m, params.acc0, params.biasprm
    )
    return gain, bias


def pd_excitation(
    params: MuscleParams,
    kp: float,
    kd: float,
    target_length: Any,
    target_velocity: Any,
    length: Any,
    velocity: Any,
    feedforward: Any = None,
) -> Any:
    """Excitation (N, nu) in [0, 1] that makes each muscle produce the PD force (jax); with
    ``feedforward`` activations (N, nu), the PD force on top of theirs (module docstring)."""
    peak = jnp.asarray(params.peak_force_n)
    force = kp * peak * (target_length - length) - kd * peak * (velocity - target_velocity)
    gain, bias = muscle_gain_bias(params, length, velocity)
    gain = jnp.minimum(gain, -1.0)  # gain is negative (pulling); keep away from 0 at extreme lengths
    if feedforward is not None:
        return jnp.clip(feedforward + force / gain, 0.0, 1.0)
    force = jnp.clip(force, -peak, 0.0)
    return jnp.clip((force - bias) / gain, 0.0, 1.0)


class ActionSpace:
    """One of the spaces above for a model's ``nu`` muscles (see the module docstring)."""

    def __init__(self, config: ActionConfig, params: MuscleParams, num_coordinates: int = 0):
        self.config = config
        self.name = config.space
        self.params = params
        nu = params.peak_force_n.shape[0]
        self.size = num_coordinates if config.space == "joint_reference_pd" else nu
        self.is_pd = config.space != "excitation"
        self.per_physics_step = self.is_pd and config.per_physics_step
        if self.is_pd:
            self.low, self.high = -np.ones(self.size), np.ones(self.size)
            self.neutral = np.zeros(self.size)
        else:
            self.low, self.high = np.zeros(nu), np.ones(nu)
            self.neutral = np.full(nu, float(config.neutral_excitation))
        kp, kd = float(config.kp), float(config.kd_ratio * config.kp)
        self.feedforward = self.is_pd and config.feedforward
        self._pd_jax = jax.jit(
            lambda lt, vt, length, vel, ff: pd_excitation(params, kp, kd, lt, vt, length, vel, ff)
        )

    def targets(self, action: Any, target: dict[str, Any], xp: Any) -> tuple[Any, Any]:
        """Target muscle lengths and speeds (N, nu) for ``action`` (N, A) and the reference
        ``target`` at the next clip time (``lookup``'s dict)."""
        lo, hi = self.params.lengthrange_m[:, 0], self.params.lengthrange_m[:, 1]
        if self.name == "muscle_length_pd":
            return lo + (action + 1.0) * 0.5 * (hi - lo), xp.zeros_like(action)
        if self.name == "joint_reference_pd":
            offset_rad = action * self.config.joint_offset_rad  # (N, K)
            shift = xp.einsum("nmk,nk->nm", target["muscle_jacobian"], offset_rad)
            return target["muscle_length_m"] + shift, target["muscle_velocity_mps"]
        offset = action * self.config.offset_fraction * (hi - lo)
        return target["muscle_length_m"] + offset, target["muscle_velocity_mps"]

    def pd(
        self,
        target_length: Any,
        target_velocity: Any,
        length: Any,
        velocity: Any,
        xp: Any,
        feedforward: Any = None,
    ) -> Any:
        """PD excitations (N, nu) as ``xp`` arrays (numpy in, numpy out on the cpu backend);
        ``feedforward`` (N, nu) activations or None."""
        out = self._pd_jax(target_length, target_velocity, length, velocity, feedforward)
        return np.asarray(out) if xp is np else out

    def controller(self, action: Any, target: dict[str, Any], length: Any, velocity: Any, xp: Any) -> Any:
        """Excitations (N, nu) for the whole control step, or, for ``per_physics_step`` PD spaces,
        ``ctrl(length, velocity) -> (N, nu)`` to call before every physics step. ``length`` and
        ``velocity`` (N, nu) are the muscles' state at the start of the control step; with
        ``feedforward``, ``target["activation"]`` (N, na = nu) is the reference's activations."""
        action = xp.clip(action, self.low, self.high)
        if not self.is_pd:
            return action
        lt, vt = self.targets(action, target, xp)
        ff = target["activation"] if self.feedforward else None
        if self.per_physics_step:
            if xp is np:  # moved to jax once per control step, not at each physics step's call
                lt, vt, ff = jax.device_put((lt, vt, ff))
            return lambda length_now, velocity_now: self.pd(lt, vt, length_now, velocity_now, xp, ff)
        return self.pd(lt, vt, length, velocity, xp, ff)
