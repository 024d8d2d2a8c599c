"""Action spaces: how a policy's action becomes the excitations (``ctrl``) of every muscle.

An action space is one small subclass of :class:`ActionSpace`, registered by its ``name`` in
:data:`ACTION_SPACES` (``action.space`` in the config picks it; :func:`make_action_space` builds
it). It has bounds (``low``, ``high``), a ``neutral`` action (what an untrained policy's mean
starts at) and ``controller(action, target, length, velocity, xp)``, which returns the function
``ctrl(length, velocity)`` the physics calls before each physics step (PD spaces) or the constant
excitations for the whole control step (the excitation space). A PD space only says where its
target lengths lie (:meth:`PdSpace.targets`). The environment, the exported policy and
evaluation use the same object, so a policy is evaluated in the space it was trained in.

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

jax and MJX load on first use (building a PD space), so :mod:`musclerl.envs.config`, which reads
the registry and :class:`ActionConfig` from here, stays cheap to import.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from musclerl.errors import InputError

if TYPE_CHECKING:
    import mujoco


@dataclasses.dataclass
class ActionConfig:
    """How the policy's action becomes muscle excitations (the ``action`` section of the env config).

    ``space``: a name of :data:`ACTION_SPACES`: ``excitation`` (action = excitation in [0, 1]),
    ``muscle_length_pd`` (action in [-1, 1] = target length across each muscle's length range),
    ``reference_pd`` (action in [-1, 1] = offset of the target length from the reference's muscle
    length at the next clip time, by up to ``offset_fraction`` of the length range),
    ``joint_reference_pd`` (action in [-1, 1] per independent joint coordinate = offset of the
    reference pose by up to ``joint_offset_rad``, turned into target muscle lengths through the
    reference's muscle Jacobian: 14 coordinated actions instead of 80 on myolegs). The PD spaces
    command a force ``kp (L* - L) - kd (V - V*)`` clipped to [-F_max, 0] and invert it to an
    excitation with MuJoCo's muscle gain and bias, at every physics step (``per_physics_step``) or
    once per control step. ``feedforward`` (spaces that follow the reference): the PD force is
    added to the force of the reference's static-optimisation activations (computed muscle
    control), see the module docstring.
    """

    space: str = "excitation"
    neutral_excitation: float = 0.07  # excitation space: what the untrained policy commands
    kp: float = 30.0  # PD stiffness, peak isometric forces per metre of length error
    kd_ratio: float = 0.1  # kd = kd_ratio * kp, seconds
    offset_fraction: float = 0.25  # reference_pd: |action| = 1 moves L* by this fraction of the range
    joint_offset_rad: float = 0.3  # joint_reference_pd: |action| = 1 offsets a coordinate by this
    per_physics_step: bool = True
    feedforward: bool = False  # PD spaces: e = a_ref + F_pd / gain, a_ref the reference's static optimisation


@functools.cache
def _mjx_support() -> Any:
    """MJX's muscle curves (``mujoco.mjx._src.support``), imported on first use."""
    with contextlib.redirect_stdout(io.StringIO()):  # MJX prints "Failed to import warp" to stdout
        from mujoco.mjx._src import support
    return support


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
    import jax

    support = _mjx_support()
    gain = jax.vmap(support.muscle_gain, in_axes=(1, 1, 0, 0, 0), out_axes=1)(
        length, velocity, params.lengthrange_m, params.acc0, params.gainprm
    )
    bias = jax.vmap(support.muscle_bias, in_axes=(1, 0, 0, 0), out_axes=1)(
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
    import jax.numpy as jnp

    peak = jnp.asarray(params.peak_force_n)
    force = kp * peak * (target_length - length) - kd * peak * (velocity - target_velocity)
    gain, bias = muscle_gain_bias(params, length, velocity)
    gain = jnp.minimum(gain, -1.0)  # gain is negative (pulling); keep away from 0 at extreme lengths
    if feedforward is not None:
        return jnp.clip(feedforward + force / gain, 0.0, 1.0)
    force = jnp.clip(force, -peak, 0.0)
    return jnp.clip((force - bias) / gain, 0.0, 1.0)


#: What an action's last axis can index: every muscle (A = nu) or the independent coordinates (A = K).
AXES = ("muscles", "coordinates")


class ActionSpace:
    """Base of the action spaces: bounds and neutral action (A,), ``size`` A, and the controller.

    A subclass sets ``name`` (its key in :data:`ACTION_SPACES`), ``axis`` (what the action's last
    axis indexes: ``"muscles"``, A = nu, or ``"coordinates"``, A = K independent joint
    coordinates; mirrored batches permute it accordingly), ``follows_reference`` (whether it
    moves about the reference, so ``action.feedforward`` applies) and ``is_pd``, and overrides
    :meth:`bounds` and :meth:`controller`.
    """

    name: ClassVar[str]
    axis: ClassVar[str] = "muscles"
    follows_reference: ClassVar[bool] = False
    is_pd: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.axis not in AXES:
            raise TypeError(f"{cls.__name__}.axis must be one of {AXES}, got '{cls.axis}'")

    def __init__(self, config: ActionConfig, params: MuscleParams, num_coordinates: int = 0):
        self.config = config
        self.params = params
        nu = params.peak_force_n.shape[0]
        self.size = num_coordinates if self.axis == "coordinates" else nu
        self.per_physics_step = self.is_pd and config.per_physics_step
        self.feedforward = self.is_pd and config.feedforward
        self.low, self.high, self.neutral = self.bounds()

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``low``, ``high`` and ``neutral`` (A,)."""
        raise NotImplementedError

    def controller(self, action: Any, target: dict[str, Any], length: Any, velocity: Any, xp: Any) -> Any:
        """Excitations (N, nu) for the whole control step, or ``ctrl(length, velocity) -> (N, nu)``
        to call before every physics step; ``action`` (N, A), ``target`` the reference at the next
        clip time (``lookup``'s dict), ``length``/``velocity`` (N, nu) the muscles' state at the
        start of the control step."""
        raise NotImplementedError


class ExcitationSpace(ActionSpace):
    """The action is the excitation itself, in [0, 1]; an untrained policy commands
    ``neutral_excitation``."""

    name = "excitation"

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nu = self.size
        return np.zeros(nu), np.ones(nu), np.full(nu, float(self.config.neutral_excitation))

    def controller(self, action: Any, target: dict[str, Any], length: Any, velocity: Any, xp: Any) -> Any:
        return xp.clip(action, self.low, self.high)


class PdSpace(ActionSpace):
    """Actions in [-1, 1] (neutral 0) that set target muscle lengths and speeds; the PD law of the
    module docstring turns them into excitations. Subclasses define :meth:`targets`."""

    is_pd = True

    def __init__(self, config: ActionConfig, params: MuscleParams, num_coordinates: int = 0):
        import jax

        super().__init__(config, params, num_coordinates)
        kp, kd = float(config.kp), float(config.kd_ratio * config.kp)
        self._pd_jax = jax.jit(
            lambda lt, vt, length, vel, ff: pd_excitation(params, kp, kd, lt, vt, length, vel, ff)
        )

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return -np.ones(self.size), np.ones(self.size), np.zeros(self.size)

    def targets(self, action: Any, target: dict[str, Any], xp: Any) -> tuple[Any, Any]:
        """Target muscle lengths and speeds (N, nu) for ``action`` (N, A) and the reference
        ``target`` at the next clip time (``lookup``'s dict)."""
        raise NotImplementedError

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
        """See :meth:`ActionSpace.controller`; with ``feedforward``, ``target["activation"]``
        (N, na = nu) is the reference's activations."""
        action = xp.clip(action, self.low, self.high)
        lt, vt = self.targets(action, target, xp)
        ff = target["activation"] if self.feedforward else None
        if self.per_physics_step:
            if xp is np:  # moved to jax once per control step, not at each physics step's call
                import jax

                lt, vt, ff = jax.device_put((lt, vt, ff))
            return lambda length_now, velocity_now: self.pd(lt, vt, length_now, velocity_now, xp, ff)
        return self.pd(lt, vt, length, velocity, xp, ff)


class MuscleLengthPd(PdSpace):
    """L* = lo + (a + 1)/2 (hi - lo) over each muscle's length range [lo, hi], target speed 0."""

    name = "muscle_length_pd"

    def targets(self, action: Any, target: dict[str, Any], xp: Any) -> tuple[Any, Any]:
        lo, hi = self.params.lengthrange_m[:, 0], self.params.lengthrange_m[:, 1]
        return lo + (action + 1.0) * 0.5 * (hi - lo), xp.zeros_like(action)


class ReferencePd(PdSpace):
    """L* = the reference's muscle length + a * offset_fraction * (hi - lo), speed the reference's."""

    name = "reference_pd"
    follows_reference = True

    def targets(self, action: Any, target: dict[str, Any], xp: Any) -> tuple[Any, Any]:
        lo, hi = self.params.lengthrange_m[:, 0], self.params.lengthrange_m[:, 1]
        offset = action * self.config.offset_fraction * (hi - lo)
        return target["muscle_length_m"] + offset, target["muscle_velocity_mps"]


class JointReferencePd(PdSpace):
    """L* = the reference's muscle length + J (a * joint_offset_rad), J (nu, K) the reference's
    muscle Jacobian over the K independent coordinates (``target["muscle_jacobian"]`` (N, nu, K))."""

    name = "joint_reference_pd"
    axis = "coordinates"
    follows_reference = True

    def targets(self, action: Any, target: dict[str, Any], xp: Any) -> tuple[Any, Any]:
        offset_rad = action * self.config.joint_offset_rad  # (N, K)
        shift = xp.einsum("nmk,nk->nm", target["muscle_jacobian"], offset_rad)
        return target["muscle_length_m"] + shift, target["muscle_velocity_mps"]


#: name (``action.space``) -> its class; a new space is one subclass and one entry here.
ACTION_SPACES: dict[str, type[ActionSpace]] = {
    cls.name: cls for cls in (ExcitationSpace, MuscleLengthPd, ReferencePd, JointReferencePd)
}


def make_action_space(config: ActionConfig, params: MuscleParams, num_coordinates: int = 0) -> ActionSpace:
    """The space ``config.space`` names, for muscles ``params`` and ``num_coordinates`` K
    independent joint coordinates (what ``axis = "coordinates"`` spaces act on)."""
    if config.space not in ACTION_SPACES:
        raise InputError(
            "action.space", f"unknown action space '{config.space}'; choose one of {list(ACTION_SPACES)}"
        )
    return ACTION_SPACES[config.space](config, params, num_coordinates)
