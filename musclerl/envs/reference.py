"""Per-frame reference arrays from a Trajectory, computed once with MuJoCo C kinematics.

:class:`Reference` holds, for all T frames of a (multi-clip) dataset, everything the rewards,
terminations and goal observations compare against, so neither backend runs reference
kinematics while stepping. ``lookup`` reads it at a clip time with numpy or jax.numpy.

Frames and units: positions in metres in the world frame (Z up); ``site_xmat`` rotates site
frame to world; ``site_vel_mps`` is the world-frame linear velocity of each site origin (as
``mj_objectVelocity`` gives it, flg_local=0); ``qvel`` is MuJoCo's (free root: world linear,
body angular).

The Trajectory is first resampled to the control rate (``motion.trajectory.resample``), so a
lookup at any control time hits a frame instead of jumping between coarse ones. Reference muscle
lengths and speeds (actuator length, ``actuator_moment @ qvel``) are kept for the
``reference_pd`` action space.

Looping clips repeat; each repetition is shifted in the ground plane by the clip's root
displacement over one period (``cycle_shift_m``), so a walking cycle keeps walking forward.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco
import numpy as np

from musclerl.dynamics.static_optimisation import moment_arms
from musclerl.envs.start_activation import reference_activations
from musclerl.envs.world import World
from musclerl.errors import InputError
from musclerl.models.couplings import coupling_matrix, independent_coordinates
from musclerl.motion.trajectory import Trajectory, resample


@dataclasses.dataclass(frozen=True)
class Reference:
    """Reference arrays; T frames, S tracked sites, C clips. Plain numpy (``as_arrays`` for jax)."""

    rate_hz: float
    qpos: np.ndarray  # (T, nq)
    qvel: np.ndarray  # (T, nv)
    site_pos_m: np.ndarray  # (T, S, 3) world
    site_xmat: np.ndarray  # (T, S, 3, 3) site-to-world rotations
    site_vel_mps: np.ndarray  # (T, S, 3) world linear velocity
    foot_pos_m: np.ndarray  # (T, F, 3) world origins of the foot bodies (World.foot_body_ids)
    com_m: np.ndarray  # (T, 3) whole-body centre of mass, world
    muscle_length_m: np.ndarray  # (T, nu) actuator length
    muscle_velocity_mps: np.ndarray  # (T, nu) actuator velocity
    muscle_jacobian: np.ndarray  # (T, nu, K) d(actuator length)/d(independent coordinate), m/rad
    activation: np.ndarray  # (T, na) start activations (static optimisation, or zeros)
    clip_starts: np.ndarray  # (C,) first frame
    clip_lengths: np.ndarray  # (C,) frames
    clip_loop: np.ndarray  # (C,) bool
    cycle_shift_m: np.ndarray  # (C, 3) xy root displacement per period of a looping clip (z = 0)
    site_names: tuple[str, ...]
    clip_names: tuple[str, ...]
    coordinate_names: tuple[str, ...]  # the K independent coordinates of muscle_jacobian
    limit_qpos_adr: np.ndarray  # (L,) int qpos address of each independent coordinate with a range
    limit_low: np.ndarray  # (L,) its lower bound (rad, or m for slide joints)
    limit_high: np.ndarray  # (L,) its upper bound

    @property
    def num_clips(self) -> int:
        return len(self.clip_starts)

    @property
    def num_frames(self) -> int:
        return int(self.qpos.shape[0])

    @property
    def clip_duration_s(self) -> np.ndarray:
        """(C,) time of each clip's last frame, seconds from its first."""
        return (self.clip_lengths - 1) / self.rate_hz

    def as_arrays(self, xp: Any) -> dict[str, Any]:
        """The numeric fields as ``xp`` arrays (numpy or jax.numpy), for ``lookup``."""
        out = {
            f.name: xp.asarray(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), np.ndarray)
        }
        out["rate_hz"] = self.rate_hz
        return out


def build_reference(
    world: World,
    traj: Trajectory,
    rate_hz: float | None = None,
    static_activation: bool = False,
    limit_joints: tuple[str, ...] = (),
) -> Reference:
    """Run MuJoCo kinematics on every frame of ``traj`` (resampled to ``rate_hz`` when given);
    ``static_activation``: also the start activations of :mod:`musclerl.envs.start_activation`;
    ``limit_joints``: the coordinates whose range bounds the ``limit_*`` fields give (empty: every
    independent coordinate with a range)."""
    model = world.model
    traj.check_model(model, traj.model_name)
    if rate_hz is not None and abs(traj.rate_hz - rate_hz) > 1e-6 * rate_hz:
        traj = resample(traj, model, rate_hz)
    data = mujoco.MjData(model)
    n, s = traj.num_frames, len(world.site_ids)
    site_pos = np.zeros((n, s, 3))
    site_xmat = np.zeros((n, s, 3, 3))
    site_vel = np.zeros((n, s, 3))
    feet = np.zeros((n, len(world.foot_body_ids), 3))
    com = np.zeros((n, 3))
    muscle_length = np.zeros((n, model.nu))
    muscle_velocity = np.zeros((n, model.nu))
    coords = independent_coordinates(model)
    jacobian = np.zeros((n, model.nu, len(coords)))
    vel6 = np.zeros(6)
    for t in range(n):
        data.qpos[:] = traj.qpos[t]
        data.qvel[:] = traj.qvel[t]
        mujoco.mj_fwdPosition(model, data)
        mujoco.mj_fwdVelocity(model, data)
        muscle_length[t] = data.actuator_length
        muscle_velocity[t] = data.actuator_velocity
        # dependent coordinates follow their independent one (couplings), as in the pose itself
        jacobian[t] = moment_arms(model, data) @ coupling_matrix(model, data.qpos, coords).T
        site_pos[t] = data.site_xpos[world.site_ids]
        feet[t] = data.xpos[world.foot_body_ids]
        com[t] = data.subtree_com[world.root_body]
        site_xmat[t] = data.site_xmat[world.site_ids].reshape(s, 3, 3)
        for i, sid in enumerate(world.site_ids):
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, int(sid), vel6, 0)
            site_vel[t, i] = vel6[3:]
    unknown = sorted(set(limit_joints) - set(coords))
    if unknown:
        problem = f"no coordinate {unknown} in {traj.model_name}; it has {list(coords)}"
        raise InputError("reward.limit_joints", problem)
    watched = [c for c in coords if not limit_joints or c in limit_joints]
    limited = [model.joint(c).id for c in watched if model.jnt_limited[model.joint(c).id]]
    starts = np.asarray(traj.clip_starts, dtype=int)
    lengths = np.asarray(traj.clip_ends, dtype=int) - starts
    adr = world.root_qpos_adr  # 0: build_world requires the free root to be the first joint
    shift = np.zeros((len(starts), 3))
    for c, (a, length) in enumerate(zip(starts, lengths, strict=False)):
        last = a + length - 1
        # one period = L frames: last-first displacement plus one frame of the last velocity
        shift[c, :2] = (
            traj.qpos[last, adr : adr + 2] - traj.qpos[a, adr : adr + 2] + traj.qvel[last, :2] / traj.rate_hz
        )
    return Reference(
        rate_hz=float(traj.rate_hz),
        qpos=np.asarray(traj.qpos, dtype=float),
        qvel=np.asarray(traj.qvel, dtype=float),
        site_pos_m=site_pos,
        com_m=com,
        site_xmat=site_xmat,
        site_vel_mps=site_vel,
        foot_pos_m=feet,
        muscle_length_m=muscle_length,
        muscle_velocity_mps=muscle_velocity,
        muscle_jacobian=jacobian,
        activation=(
            reference_activations(world, traj.qpos, traj.qvel, traj.rate_hz, starts, lengths, traj.clip_loop)
            if static_activation
            else np.zeros((n, model.na))
        ),
        clip_starts=starts,
        clip_lengths=lengths,
        clip_loop=np.asarray(traj.clip_loop, dtype=bool),
        cycle_shift_m=shift,
        site_names=world.site_names,
        clip_names=tuple(traj.clip_names),
        coordinate_names=tuple(coords),
        limit_qpos_adr=np.asarray(model.jnt_qposadr[limited], dtype=np.int32),
        limit_low=np.asarray(model.jnt_range[limited, 0], dtype=float),
        limit_high=np.asarray(model.jnt_range[limited, 1], dtype=float),
    )


LOOKUP_FIELDS = (
    "qpos",
    "qvel",
    "site_pos_m",
    "site_xmat",
    "site_vel_mps",
    "foot_pos_m",
    "com_m",
    "muscle_length_m",
    "muscle_velocity_mps",
    "muscle_jacobian",
    "activation",
)
#: The model's joint ranges, the same for every frame: ``lookup`` always returns them, unbatched.
LIMIT_FIELDS = ("limit_qpos_adr", "limit_low", "limit_high")


def frame_index(ref: dict[str, Any], clip: Any, time_s: Any, xp: Any) -> tuple[Any, Any]:
    """Global frame (N,) int and number of completed loop periods (N,) at clip time ``time_s`` (N,).

    Nearest frame; non-looping clips hold their last frame, looping clips wrap.
    """
    length = ref["clip_lengths"][clip]
    local = xp.floor(time_s * ref["rate_hz"] + 0.5).astype(xp.int32)
    loop = ref["clip_loop"][clip]
    cycles = xp.where(loop, local // length, 0)
    local = xp.where(loop, local % length, xp.minimum(local, length - 1))
    return ref["clip_starts"][clip] + local, cycles


def lookup(
    ref: dict[str, Any], clip: Any, time_s: Any, xp: Any, fields: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Reference at clip time ``time_s`` (N,) of clips ``clip`` (N,): batched arrays.

    Returns qpos (N, nq), qvel (N, nv), site_pos_m (N, S, 3), site_xmat (N, S, 3, 3),
    site_vel_mps (N, S, 3), com_m (N, 3), muscle_length_m and muscle_velocity_mps (N, nu), muscle_jacobian
    (N, nu, K), activation (N, na); positions of looping clips shifted by their completed periods.
    ``fields`` names the ones to gather (default all): a step reads the reference several times
    (next frame, goal frames), and each read needs only a few of them. The joint ranges of
    :data:`LIMIT_FIELDS` ((L,) each, unbatched) come with every read.
    """
    frame, cycles = frame_index(ref, clip, time_s, xp)
    shift = ref["cycle_shift_m"][clip] * cycles[:, None]  # (N, 3)
    out = {}
    for name in fields or LOOKUP_FIELDS:
        value = ref[name][frame]
        if name == "qpos":
            value = xp.concatenate([value[:, :3] + shift, value[:, 3:]], axis=1)
        elif name in ("site_pos_m", "foot_pos_m"):
            value = value + shift[:, None, :]
        elif name == "com_m":
            value = value + shift
        out[name] = value
    out.update({name: ref[name] for name in LIMIT_FIELDS})
    return out
