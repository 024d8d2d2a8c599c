"""Deterministic policy rollout on the MuJoCo C backend, recording what evaluation compares.

One episode of ``TrackingEnv(backend="cpu", num_envs=1)`` from a given clip time, actions from
``act(obs) -> excitations``. After every control step the env's ``MjData`` is copied and
``mj_forward`` run on it, so every recorded quantity belongs to the same state (positions,
velocities, activations). Frame 0 is the reset state (zero excitation). The episode ends at the
first ``done``; the frame after it is not recorded (the env has already reset that copy), so
``early_termination`` says whether it was a failure and ``truncated`` whether that last step was
survived up to a time limit or the clip's end.

Recorded per frame (T frames, K coordinates, N muscles, F feet, S sites):

=====================  ===========  ==========================================================
field                  shape        meaning
=====================  ===========  ==========================================================
``time_s``             (T,)         clip time, s
``angle``              (T, K)       independent model coordinates: degrees (hinge), m (slide)
``pelvis``             (T, 6)       pelvis tilt/list/rotation (deg), tx/ty/tz (m, OpenSim ground)
``torque_nm``          (T, K)       net joint moment on each coordinate: muscle + passive + limit
                                    (:mod:`musclerl.dynamics.joint_moments`), N·m (N for slides),
                                    the mean over the physics steps that led to the frame (as
                                    ``grf_n``; the first frame: its own state's)
``muscle_torque_nm``   (T, K)       its muscle (actuator) part; ``passive_torque_nm`` the joint
                                    springs and damping; ``limit_torque_nm`` the joint-limit
                                    constraint forces; each projected on the coordinates the same
                                    way (couplings by virtual work)
``coordinate_range``   (K, 2)       each coordinate's joint range (deg / m); NaN where unlimited
``excitation``         (T, N)       excitations of the last physics step that led here
``activation``         (T, N)       muscle activation state
``force_n``            (T, N)       muscle tension, N (positive pulls)
``grf_n``              (T, F, 3)    contact force of the ground on each foot's subtree, world, N:
                                    the mean over the physics steps of the control step that led
                                    to the frame (the impulse over the interval, as a force plate
                                    integrates; one read per control step samples a 500 Hz
                                    contact force at 50 Hz and misses impact peaks)
``site_err_m``         (T, S)       |sim site - reference site|, world frame
``mpjpe_m``            (T,)         mean site error (global)
``mpjpe_local_m``      (T,)         mean site error after removing each root's position
``qpos``               (T, nq)      the MuJoCo state's positions (the feet's contact with the
                                    floor, as the plausibility check reads a clip's)
=====================  ===========  ==========================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import mujoco
import numpy as np

from musclerl.dynamics.joint_moments import joint_moments
from musclerl.models.couplings import coupling_matrix, independent_coordinates
from musclerl.models.introspect import total_mass_kg
from musclerl.models.opensim_coordinates import qpos_to_coordinates, qpos_to_pelvis


@dataclasses.dataclass(frozen=True)
class Recording:
    """One rollout (see the module docstring for every field)."""

    time_s: np.ndarray
    coordinates: tuple[str, ...]
    angle: np.ndarray
    pelvis: np.ndarray
    torque_nm: np.ndarray
    muscles: tuple[str, ...]
    excitation: np.ndarray
    activation: np.ndarray
    force_n: np.ndarray
    feet: tuple[str, ...]
    grf_n: np.ndarray
    site_names: tuple[str, ...]
    site_err_m: np.ndarray
    mpjpe_m: np.ndarray
    mpjpe_local_m: np.ndarray
    early_termination: bool
    model_mass_kg: float
    control_dt_s: float
    # the env ended the episode by truncation (time limit or clip end) on the last step taken: that
    # step was survived, but its state is not recorded (the env auto-reset it)
    truncated: bool = False
    # the termination rules that ended it early (musclerl.envs.termination.TERMINATION_RULES, "+"
    # joined: "site_deviation", "tilt+nonfoot_contact"); "" when it was not ended early
    end_reason: str = ""
    muscle_torque_nm: np.ndarray | None = None
    passive_torque_nm: np.ndarray | None = None
    limit_torque_nm: np.ndarray | None = None
    coordinate_range: np.ndarray | None = None
    qpos: np.ndarray | None = None

    @property
    def torque_nm_per_kg(self) -> np.ndarray:
        """``torque_nm`` divided by the model mass (N*m/kg), same shape."""
        return self.torque_nm / self.model_mass_kg

    @property
    def muscle_torque_nm_per_kg(self) -> np.ndarray:
        """``muscle_torque_nm`` divided by the model mass (N*m/kg), same shape."""
        return self.muscle_torque_nm / self.model_mass_kg

    @property
    def body_weight_n(self) -> float:
        """Model weight in N: mass times 9.81 m/s^2 (the models' gravity), the unit of GRF in BW."""
        return self.model_mass_kg * 9.81

    @property
    def num_frames(self) -> int:
        return int(self.time_s.shape[0])

    @property
    def speed_mps(self) -> float:
        """Mean walking speed, m/s: the pelvis' horizontal displacement from the first to the last
        recorded frame over that time (OpenSim ground: x forward, z right). NaN without a pelvis
        body or a span of time."""
        span_s = float(self.time_s[-1] - self.time_s[0]) if self.num_frames else 0.0
        if self.pelvis.shape[1] < 6 or span_s <= 0:
            return float("nan")
        shift = self.pelvis[-1, [3, 5]] - self.pelvis[0, [3, 5]]
        return float(np.hypot(*shift)) / span_s


def foot_owner(model: mujoco.MjModel, foot_bodies: np.ndarray) -> np.ndarray:
    """(nbody,) index into ``foot_bodies`` of each body's nearest listed ancestor (itself included), or -1."""
    owner = np.full(model.nbody, -1)
    index = {int(b): k for k, b in enumerate(foot_bodies)}
    for b in range(1, model.nbody):  # parents precede children in MuJoCo's body order
        owner[b] = index.get(b, owner[model.body_parentid[b]])
    return owner


def foot_forces(model: mujoco.MjModel, data: mujoco.MjData, owner: np.ndarray, num_feet: int) -> np.ndarray:
    """World-frame force (F, 3) of the ground (static bodies) on each foot, N.

    ``mj_contactForce`` gives the force in the contact frame (rows of ``contact.frame`` are its
    axes, the normal first, pointing from geom1 to geom2); it is the force geom1 exerts on geom2.
    """
    out = np.zeros((num_feet, 3))
    f6 = np.zeros(6)
    for i in range(data.ncon):
        c = data.contact[i]
        b1, b2 = int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])
        ground1, ground2 = model.body_rootid[b1] == 0, model.body_rootid[b2] == 0
        if ground1 == ground2:
            continue
        foot, sign = (owner[b2], 1.0) if ground1 else (owner[b1], -1.0)
        if foot < 0:
            continue
        mujoco.mj_contactForce(model, data, i, f6)
        out[foot] += sign * (c.frame.reshape(3, 3).T @ f6[:3])
    return out


def coordinate_range(model: mujoco.MjModel, coords: list[str]) -> np.ndarray:
    """(K, 2) joint range of each coordinate: degrees for hinges, metres for slides; NaN unlimited."""
    out = np.full((len(coords), 2), np.nan)
    hinge = int(mujoco.mjtJoint.mjJNT_HINGE)
    for k, name in enumerate(coords):
        j = model.joint(name).id
        if model.jnt_limited[j]:
            lo_hi = np.asarray(model.jnt_range[j], dtype=float)
            out[k] = np.degrees(lo_hi) if int(model.jnt_type[j]) == hinge else lo_hi
    return out


def termination_reason(metrics: dict) -> str:
    """The rules (``term/<rule>`` metrics of env 0) that ended an episode, "+" joined."""
    from musclerl.envs.termination import TERMINATION_RULES

    fired = [r for r in TERMINATION_RULES if float(np.asarray(metrics.get(f"term/{r}", [0.0]))[0]) > 0.5]
    return "+".join(fired)


def episode_steps(env, clip: int, start_time_s: float) -> int:
    """Control steps until the episode started at ``start_time_s`` of ``clip`` is truncated: the
    env's horizon, or the end of a clip that does not loop, whichever comes first."""
    steps = int(env.config.horizon)
    if not bool(env.reference.clip_loop[clip]):  # truncated once a step would pass the last frame
        remaining_s = float(env.reference.clip_duration_s[clip]) - start_time_s + 1e-6
        steps = min(steps, max(1, int(np.floor(remaining_s / env.control_dt_s))))
    return steps


def rollout(
    env,
    act: Callable[[np.ndarray], np.ndarray],
    clip: int = 0,
    start_time_s: float = 0.0,
    max_steps: int | None = None,
    seed: int = 0,
    progress: bool = False,
    step_forces: bool = True,
) -> Recording:
    """Roll ``act`` out in ``env`` (a cpu ``TrackingEnv`` with ``num_envs == 1``) and record it.

    ``act`` maps observations (1, D) to actions (1, A) of the env's action space (e.g.
    ``policy.act`` with ``deterministic=True``). Runs until the episode ends or ``max_steps`` control steps.
    ``step_forces``: the forces and joint moments of a frame are the mean over the physics steps
    that led to it (the module docstring); False reads them at the frame's own state only, for
    callers that read no force (about 4x cheaper on myolegs: one ``mj_forward`` per frame instead
    of one per physics step).
    """
    from musclerl.envs.reference import lookup

    model = env.model
    world = env.world
    coords = independent_coordinates(model)
    muscle_ids = np.asarray(world.muscle_ids, dtype=int)
    feet = tuple(model.body(int(b)).name for b in world.foot_body_ids)
    owner = foot_owner(model, np.asarray(world.foot_body_ids, dtype=int))
    ref_arrays = env.reference.as_arrays(np)
    adr = int(world.root_qpos_adr)
    rows: dict[str, list] = {
        k: [] for k in ("time", "qpos", "muscle", "passive", "limit", "exc", "act", "force", "grf")
    }
    rows |= {k: [] for k in ("err", "mpjpe", "local")}

    def forces(data: mujoco.MjData) -> tuple[np.ndarray, ...]:
        """Joint moments (muscle, passive, limit; each (K,)) and foot forces (F, 3) of ``data``,
        its acceleration stage computed."""
        moments = joint_moments(model, data, coupling_matrix(model, data.qpos, coords))
        return moments.muscle, moments.passive, moments.limit, foot_forces(model, data, owner, len(feet))

    interval: list[tuple[np.ndarray, ...]] = []  # forces of each physics step of the control step

    def before_physics_step() -> None:
        data = env.physics_data(0)  # the state this physics step starts from, its excitations set
        mujoco.mj_forward(model, data)  # the step's own constraint solve (same warm start)
        interval.append(forces(data))

    def record(data: mujoco.MjData, time_s: float) -> None:
        excitation = data.ctrl.copy()  # the last physics step's excitations, in every action space
        mujoco.mj_forward(model, data)
        target = lookup(ref_arrays, np.array([clip]), np.array([time_s]), np)
        sim_sites = data.site_xpos[world.site_ids]
        ref_sites = target["site_pos_m"][0]
        err = np.linalg.norm(sim_sites - ref_sites, axis=-1)
        local = np.linalg.norm(
            (sim_sites - data.qpos[adr : adr + 3]) - (ref_sites - target["qpos"][0, adr : adr + 3]), axis=-1
        )
        rows["time"].append(time_s)
        rows["qpos"].append(data.qpos.copy())
        # forces over the control step: the mean over its physics steps (a force plate's impulse
        # over the interval); at the start state, where no step led there, its own forces
        muscle, passive, limit, grf = (
            (np.mean(x, axis=0) for x in zip(*interval, strict=True)) if interval else forces(data)
        )
        interval.clear()
        rows["muscle"].append(muscle)
        rows["passive"].append(passive)
        rows["limit"].append(limit)
        rows["exc"].append(np.asarray(excitation, dtype=float)[muscle_ids])
        rows["act"].append(data.act[model.actuator_actadr[muscle_ids]].copy())
        rows["force"].append(-data.actuator_force[muscle_ids].copy())
        rows["grf"].append(grf)
        rows["err"].append(err)
        rows["mpjpe"].append(float(err.mean()) if err.size else np.nan)
        rows["local"].append(float(local.mean()) if local.size else np.nan)

    state = env.reset(seed, clip=np.array([clip]), time_s=np.array([start_time_s]))
    record(env.physics_data(0), float(start_time_s))
    limit = episode_steps(env, clip, start_time_s)
    if max_steps is not None:
        limit = min(limit, max_steps)
    early = truncated = False
    end_reason = ""
    steps = range(limit)
    if progress:
        from tqdm import tqdm

        steps = tqdm(steps, desc="rollout", unit="step", total=limit)
    time_s = float(start_time_s)
    env.call_before_physics_steps(before_physics_step if step_forces else None)
    try:
        for _ in steps:
            action = np.asarray(act(np.asarray(state.obs)), dtype=float).reshape(1, -1)
            state = env.step(state, action)
            time_s += env.control_dt_s
            if bool(np.asarray(state.done)[0]):
                early = bool(np.asarray(state.terminated)[0])
                truncated = not early
                if early:
                    end_reason = termination_reason(state.metrics)
                break
            record(env.physics_data(0), time_s)
    finally:
        env.call_before_physics_steps(None)
    qpos = np.asarray(rows["qpos"])
    _, angle = qpos_to_coordinates(model, qpos, coords)
    has_pelvis = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis") >= 0
    muscle, passive, limit = (np.asarray(rows[k]) for k in ("muscle", "passive", "limit"))
    return Recording(
        time_s=np.asarray(rows["time"]),
        coordinates=tuple(coords),
        angle=angle,
        pelvis=qpos_to_pelvis(model, qpos) if has_pelvis else np.zeros((len(qpos), 0)),
        torque_nm=muscle + passive + limit,
        muscle_torque_nm=muscle,
        passive_torque_nm=passive,
        limit_torque_nm=limit,
        coordinate_range=coordinate_range(model, coords),
        muscles=tuple(model.actuator(int(a)).name for a in muscle_ids),
        excitation=np.asarray(rows["exc"]),
        activation=np.asarray(rows["act"]),
        force_n=np.asarray(rows["force"]),
        feet=feet,
        grf_n=np.asarray(rows["grf"]),
        site_names=tuple(world.site_names),
        site_err_m=np.asarray(rows["err"]),
        mpjpe_m=np.asarray(rows["mpjpe"]),
        mpjpe_local_m=np.asarray(rows["local"]),
        qpos=qpos,
        early_termination=early,
        truncated=truncated,
        end_reason=end_reason,
        model_mass_kg=total_mass_kg(model),
        control_dt_s=float(env.control_dt_s),
    )
