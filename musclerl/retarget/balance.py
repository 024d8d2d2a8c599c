"""Dynamic balance for a retargeted motion: move the centre of mass so that the feet can carry it.

Retargeting keeps the feet and the segment directions of the source, not its dynamics. On a
different body (e.g. the DeepMimic humanoid's walk on myolegs, whose trunk is rigid on the
pelvis) the centre of pressure that inverse dynamics needs can leave the feet for tenths of a
second around each heel strike (:mod:`musclerl.dynamics.plausibility`): no body can follow that
motion, and a tracking policy learns to drift instead. :func:`balance_trajectory` corrects the
horizontal path of the centre of mass, keeping the feet where they are, in a few rounds of:

1. **check**: per loaded frame the centre of pressure ``p`` and the support's point ``s`` nearest
   to it (``s = p`` inside the support), from :func:`~musclerl.dynamics.plausibility.plausibility`;
2. **plan**: the centre-of-mass shift ``d`` (T, 2) minimising, per clip,

   ``sum_loaded |d - k d'' - e|^2 + reg_shift |d|^2 + reg_accel |k d''|^2``

   where ``k = m (c_z - ground) / F_z`` (s^2) is the inverted pendulum's relation between the
   centre of pressure and the centre of mass (``p = c - k c''`` for an unchanged vertical motion
   and angular momentum), ``e`` the wanted move of the centre of pressure (to ``s``, then
   ``margin_m`` further into the support; 0 where it is inside), and ``d''`` second differences at
   the clip's rate (periodic for a looping clip, so the shift loops too); in frames without a
   supporting foot (a run's flight) nothing can push the centre of mass sideways, so there
   ``k d''`` is held near 0 (``FREE_ACCEL_WEIGHT``);
3. **IK** (:class:`~musclerl.retarget.ik.clip.ClipIK`): the centre of mass to ``c + d``
   horizontally at its height (:class:`~musclerl.retarget.ik.tasks.ComTask`; a pelvis moved
   with the feet held would otherwise rise or sink, and the vertical force with it), each
   stance foot's heel and toe tip held where they are (the sole points of
   :func:`~musclerl.retarget.ground.soles.model_soles`; its outer and inner points loosely, so
   the foot may roll about its long axis: a retargeted stance often has the subtalar on its
   bound, and a foot held whole then leaves the legs no sideways freedom, and the IK jumps to
   a pitched pelvis for a few frames), a swing foot loosely on its path, the pelvis'
   orientation held firmly (it carries myolegs' rigid trunk: turning it is otherwise the
   cheapest way to move the centre of mass, and the clips came out with the pelvis pitching by
   up to 8 deg between two frames) and every independent coordinate kept near its value (the
   legs' loosely, the rest of the body firmly: swinging arms or trunk to move the centre of
   mass would change the angular momentum the step assumes unchanged), with what every
   retarget holds (:class:`~musclerl.retarget.ik.clip.ClipIK`: joint limits, couplings,
   smoothness, muscle paths without jumps). Every chain of the solve starts from its own frame
   of the clip.

The pendulum relation leaves out the change of angular momentum the new pose brings; the next
round's inverse dynamics measures it, so the rounds converge on the full dynamics. It stops when
no loaded frame has its centre of pressure more than ``cop_outside_m`` off the feet (stricter than
the check, which allows a tenth of the frames), or after ``max_rounds``. Positions in metres,
world frame, Z up.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.dynamics.plausibility import (
    Plausibility,
    PlausibilitySeries,
    Thresholds,
    leg_feet,
    plausibility,
)
from musclerl.models.couplings import independent_coordinates
from musclerl.motion.trajectory import Trajectory, finite_difference_qvel, looping_qvel

FOOT_WEIGHT = 1.0e5  # per m^2: a stance heel or toe tip moved by 1 mm costs as much as the COM 10 mm off
SOLE_SIDE_FRAC = 1.0e-2  # of FOOT_WEIGHT for a stance sole's outer and inner points: the foot may roll
SWING_FRAC = 1.0e-2  # of FOOT_WEIGHT for every sole point of a swing foot: it follows its path to ~cm
STANCE_PAD_S = 0.025  # a foot is held as in stance from this long before touch-down to after lift-off
COM_WEIGHT = 1.0e3  # per m^2
ROOT_ORIENTATION_WEIGHT = 100.0  # per rad^2: 1 deg of pelvis turn costs as much as the COM 1 cm off
LEG_COORDINATE_WEIGHT = 0.1  # per rad^2: leg joints change only as much as the centre of mass needs
UPPER_COORDINATE_WEIGHT = 100.0  # per rad^2: the rest (trunk, arms, head) keeps its motion
MARGIN_M = 0.02  # the centre of pressure is planned this far inside the support
REG_SHIFT = 1.0e-3  # per m^2, against shifting frames whose centre of pressure is fine
REG_ACCEL = 1.0e-2  # per m^2 of k d'': keeps the shift smooth where no frame asks for it
FREE_ACCEL_WEIGHT = 1.0e2  # per m^2 of k d'' in frames without support (flight): no horizontal push
# a non-looping clip's ends keep the source's centre of mass, the shift ramping in over this long:
# the check's inverse dynamics there rests on an extrapolation, and a shift asked at frame 0 was
# bought by dropping the pelvis 4-6 cm (CMU 07_06, OpenCap walkingTI1), where a test from t = 0 starts
EDGE_S = 0.1
EDGE_WEIGHT = 1.0e2  # per m^2 of shift at a clip's first and last frame, falling linearly to 0 at EDGE_S


@dataclasses.dataclass(frozen=True)
class BalanceResult:
    """The corrected ``trajectory``, the check ``before`` and ``after``, and per round the fraction
    of loaded frames with the centre of pressure outside (``outside_frac``), the largest distance
    outside (``outside_max_m``) and the largest horizontal centre-of-mass shift (``shift_max_m``)."""

    trajectory: Trajectory
    before: Plausibility
    after: Plausibility
    rounds: list[dict]


def second_difference(n: int, rate_hz: float, loop: bool) -> np.ndarray:
    """(n, n) matrix of second differences at ``rate_hz`` (1/s^2): periodic when ``loop``, else
    one-sided at both ends (each end frame gets its neighbour's stencil, exact on quadratics as
    the check's extension of a clip's ends is). Zero end rows would leave the end frames' shift
    free of any acceleration cost: the plan then kinks the clip's first and last frames by
    centimetres, which the check reads as a vertical force near 0.2 BW there."""
    d2 = np.zeros((n, n))
    for t in range(n):
        if loop:
            centre = t
        elif n >= 3:
            centre = min(max(t, 1), n - 2)
        else:
            continue
        d2[t, (centre - 1) % n] += 1.0
        d2[t, centre] -= 2.0
        d2[t, (centre + 1) % n] += 1.0
    return d2 * rate_hz**2


def plan_com_shift(
    check: Plausibility,
    mass_kg: float,
    rate_hz: float,
    loop: bool,
    margin_m: float = MARGIN_M,
    reg_shift: float = REG_SHIFT,
    reg_accel: float = REG_ACCEL,
    edge_s: float = EDGE_S,
) -> np.ndarray:
    """Horizontal centre-of-mass shift (T, 2) of one clip's frames (see the module docstring); a
    clip that does not loop keeps its ends (``edge_s``, :data:`EDGE_WEIGHT`)."""
    s = check.series
    n = len(s.com_m)
    gravity = check.body_weight_n / mass_kg
    loaded = np.isfinite(s.cop_outside_m) & np.all(np.isfinite(s.cop_support_m), axis=1)
    fz = np.maximum(s.force_n[:, 2], 1e-3 * check.body_weight_n)
    height = np.where(np.isfinite(s.cop_m[:, 2]), s.com_m[:, 2] - s.cop_m[:, 2], 0.0)
    k = np.where(loaded, mass_kg * height / fz, height / gravity)  # s^2
    want = np.zeros((n, 2))
    out = loaded & (s.cop_outside_m > 0)
    inward = s.cop_support_m[out] - s.cop_m[out, :2]
    unit = inward / np.maximum(np.linalg.norm(inward, axis=1, keepdims=True), 1e-12)
    want[out] = inward + margin_m * unit
    d2 = second_difference(n, rate_hz, loop)
    pendulum = np.eye(n) - k[:, None] * d2  # d -> the centre of pressure's move
    w = loaded.astype(float)
    accel_w = np.where(loaded, reg_accel, FREE_ACCEL_WEIGHT)  # unsupported: nothing can push the COM
    edge = np.zeros(n)
    if not loop and edge_s > 0:
        t_s = np.arange(n) / rate_hz
        edge = EDGE_WEIGHT * np.clip(1.0 - np.minimum(t_s, t_s[-1] - t_s) / edge_s, 0.0, 1.0)
    lhs = (
        pendulum.T @ (w[:, None] * pendulum)
        + np.diag(reg_shift + edge)
        + (k[:, None] * d2).T @ (accel_w[:, None] * (k[:, None] * d2))
    )
    return np.linalg.solve(lhs, pendulum.T @ (w[:, None] * want))


def _body_poses(model: mujoco.MjModel, qpos: np.ndarray, bodies: np.ndarray) -> tuple[np.ndarray, ...]:
    """World positions (T, B, 3), quaternions (T, B, 4) of ``bodies`` and the centre of mass (T, 3)."""
    data = mujoco.MjData(model)
    pos = np.zeros((len(qpos), len(bodies), 3))
    quat = np.zeros((len(qpos), len(bodies), 4))
    com = np.zeros((len(qpos), 3))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        pos[t], quat[t], com[t] = data.xpos[bodies], data.xquat[bodies], data.subtree_com[0]
    return pos, quat, com


class _Solver:
    """The IK of step 3 for one model, built (and compiled) once for every round and clip.
    ``key``: the registered model whose profile names the feet (the sole points)."""

    def __init__(self, model: mujoco.MjModel, key: str):
        from musclerl.retarget.ground.soles import model_soles
        from musclerl.retarget.ik.clip import ClipIK
        from musclerl.retarget.ik.kinematics import KinematicTree
        from musclerl.retarget.ik.tasks import ComTask, CoordinateTask, FrameTask, MarkerTask

        self.model = model
        legs, geoms, _ = leg_feet(model)
        feet = np.unique(model.geom_bodyid[geoms])
        sole_names, foot, self.sole_points = model_soles(model, key)
        side_word = {0: "left", 1: "right"}  # model_soles' foot index
        self.sole_leg = np.array([legs.index(side_word[int(f)]) for f in foot])
        self.sole_main = np.array([n.startswith(("sole_heel", "sole_toe_tip")) for n in sole_names])
        tree = KinematicTree.from_model(model)
        root = model.body(int(model.jnt_bodyid[0])).name
        bodies = set()  # bodies from the root down to each foot
        for b in feet:
            while b > 0:
                bodies.add(int(b))
                b = int(model.body_parentid[b])
        coordinates = independent_coordinates(model)
        self.groups = {
            "legs": [c for c in coordinates if int(model.joint(c).bodyid[0]) in bodies],
            "upper_body": [c for c in coordinates if int(model.joint(c).bodyid[0]) not in bodies],
        }
        weights = {"legs": LEG_COORDINATE_WEIGHT, "upper_body": UPPER_COORDINATE_WEIGHT}
        sole_bodies = [model.body(int(b)).name for b, _ in self.sole_points]
        local = np.array([p for _, p in self.sole_points])
        tasks = [
            ComTask(tree, COM_WEIGHT),
            MarkerTask(
                tree, sole_bodies, local, np.full(len(local), FOOT_WEIGHT), name="soles", frame_weights=True
            ),
            FrameTask(tree, root, pos_mask=(0, 0, 0), rot_weight=ROOT_ORIENTATION_WEIGHT, name="root"),
        ]
        tasks += [
            CoordinateTask(dict.fromkeys(names, 0.0), weights[group], name=group)
            for group, names in self.groups.items()
            if names
        ]
        self.ik = ClipIK(model, tree, tasks, max_iters=50)
        self.root_body = int(model.jnt_bodyid[0])

    def sole_targets(self, source: np.ndarray, stance: np.ndarray) -> np.ndarray:
        """The sole points' targets (T, P, 4) of one clip: where they are in ``source`` (T, nq)
        (the clip before the first round: no drift over rounds), and a weight multiplier, firm on
        the heel and toe of the legs in ``stance`` (T, legs) (the check's order), loose on the
        others. The same for every round: computed once per clip."""
        from musclerl.retarget.ground.soles import point_positions_m

        points = point_positions_m(self.model, source, self.sole_points)  # (T, P, 3)
        held = stance[:, self.sole_leg]  # (T, P)
        frac = np.where(held, np.where(self.sole_main, 1.0, SOLE_SIDE_FRAC), SWING_FRAC)
        return np.concatenate([points, frac[..., None]], axis=2)

    def solve(self, qpos: np.ndarray, com_target: np.ndarray, soles: np.ndarray) -> np.ndarray:
        """qpos (T, nq) moved so that its centre of mass is at ``com_target`` (T, 3), with the
        sole points on ``soles`` (:meth:`sole_targets`)."""
        _, root_quat, _ = _body_poses(self.model, qpos, np.array([self.root_body]))
        targets = {
            "com": com_target,
            "soles": soles,
            "root": np.concatenate([np.full((len(qpos), 3), np.nan), root_quat[:, 0]], axis=1),
        }
        for group, names in self.groups.items():
            if names:
                targets[group] = qpos[:, [int(self.model.joint(c).qposadr[0]) for c in names]]
        return self.ik.solve(targets, qpos[0], starts=qpos).q


def _frames(series: PlausibilitySeries, start: int, end: int) -> PlausibilitySeries:
    """``series`` of the frames ``start:end``."""
    cut = {
        f.name: getattr(series, f.name)[start:end]
        for f in dataclasses.fields(series)
        if getattr(series, f.name) is not None
    }
    return dataclasses.replace(series, **cut)


def held_stance(check: Plausibility, rate_hz: float) -> np.ndarray:
    """(T, legs) the check's stance flags widened by ``STANCE_PAD_S`` at both ends (a foot
    about to land or just lifting is held as in stance: the pass does not move footprints)."""
    from musclerl.ground.contact import dilate_flags

    return dilate_flags(check.series.stance, int(round(STANCE_PAD_S * rate_hz)))


def _score(check: Plausibility) -> tuple[int, float, float]:
    """(failures of the check other than the centre of pressure's, fraction of loaded frames
    with the centre of pressure off the feet, largest distance): lower is better; a clip without
    loaded frames has no centre-of-pressure figures (0). A round that buys the centre of pressure
    with a new failure (a slipping foot, a floor that pulls) is no better."""
    outside = check.cop["outside_frac"] or 0.0
    cop_failed = int(outside > check.thresholds.max_cop_outside_frac)
    return (len(check.failures) - cop_failed, outside, check.cop["outside_max_m"] or 0.0)


def balance_trajectory(
    traj: Trajectory,
    model: mujoco.MjModel,
    *,
    max_rounds: int = 6,
    thresholds: Thresholds | None = None,
    margin_m: float = MARGIN_M,
) -> BalanceResult:
    """``traj`` (on ``model``, free root first) with its centre of mass moved until the centre of
    pressure stays on the feet (see the module docstring); clips are planned apart. Feet,
    terrain, clips and rate are unchanged; ``qvel`` is recomputed (wrapped for looping clips).
    The best round is returned (fewest frames off the feet, then the smallest distance): the
    input itself when no round improves on it, and the rounds stop once one is worse than the
    best, so a motion the pass cannot help (e.g. a run whose flight is not ballistic) comes back
    unchanged rather than worse (``rounds`` shows what was tried)."""
    th = thresholds or Thresholds()
    traj.check_model(model, traj.model_name)
    mass_kg = float(mujoco.mj_getTotalmass(model))
    solver = _Solver(model, traj.model_name)
    starts, ends = np.asarray(traj.clip_starts, dtype=int), np.asarray(traj.clip_ends, dtype=int)
    loops = np.asarray(traj.clip_loop, dtype=bool)

    def per_clip(whole: Plausibility) -> list[Plausibility]:
        """``whole`` with its series cut to each clip's frames (clips are differentiated apart,
        so the frames read as checked alone); its summary numbers stay the whole motion's."""
        return [
            dataclasses.replace(whole, series=_frames(whole.series, s, e))
            for s, e in zip(starts, ends, strict=True)
        ]

    def check_all(qpos: np.ndarray) -> Plausibility:
        return plausibility(
            model,
            qpos,
            traj.rate_hz,
            terrain=traj.terrain,
            clip_starts=starts,
            clip_loop=loops,
            thresholds=th,
        )

    qpos = np.array(traj.qpos, dtype=float)
    before = check_all(qpos)
    clip_checks = per_clip(before)
    soles = [  # the input's stance and sole points: footprints stay
        solver.sole_targets(traj.qpos[s:e], held_stance(c, traj.rate_hz))
        for c, s, e in zip(clip_checks, starts, ends, strict=True)
    ]
    rounds: list[dict] = []
    current = before
    best, best_qpos = before, qpos
    for _ in range(max_rounds):
        if not current.cop["outside_frac"]:  # no loaded frame, or none more than cop_outside_m off
            break
        new = qpos.copy()
        shift_max = 0.0
        clip_checks = per_clip(current)
        for clip_check, clip_soles, s, e, lp in zip(clip_checks, soles, starts, ends, loops, strict=True):
            shift = plan_com_shift(clip_check, mass_kg, traj.rate_hz, bool(lp), margin_m)
            _, _, com = _body_poses(model, qpos[s:e], np.zeros(0, dtype=int))
            target = com + np.concatenate([shift, np.zeros((e - s, 1))], axis=1)  # same heights
            new[s:e] = solver.solve(qpos[s:e], target, clip_soles)
            shift_max = max(shift_max, float(np.abs(shift).max()))
        qpos = new
        current = check_all(qpos)
        rounds.append(
            {
                "outside_frac": current.cop["outside_frac"],
                "outside_max_m": current.cop["outside_max_m"],
                "shift_max_m": shift_max,
            }
        )
        if _score(current) < _score(best):
            best, best_qpos = current, qpos
        elif _score(current)[:2] > _score(best)[:2]:  # diverging (e.g. no support to move): stop
            break
    current, qpos = best, best_qpos
    qvel = np.zeros((len(qpos), model.nv))
    for s, e, lp in zip(starts, ends, loops, strict=True):
        if lp:
            cycle_xy = traj.qpos[e - 1, :2] - traj.qpos[s, :2] + traj.qvel[e - 1, :2] / traj.rate_hz
            qvel[s:e] = looping_qvel(model, qpos[s:e], traj.rate_hz, cycle_xy)
        else:
            qvel[s:e] = finite_difference_qvel(model, qpos[s:e], traj.rate_hz)
    out = dataclasses.replace(traj, qpos=qpos, qvel=qvel, site_pos_m=None, site_names=())
    return BalanceResult(out, before, current, rounds)


def balance_for_report(traj: Trajectory, model: mujoco.MjModel) -> tuple[Trajectory, dict]:
    """The retarget commands' ``--balance``: ``traj`` through :func:`balance_trajectory` on
    ``model`` (the model the Trajectory names), with the positions of its sites that are sites
    of ``model`` recomputed (others are kept as given: sole points ride on the feet, which the
    pass holds; a scaled subject's markers stay where the kinematic solve put them),
    and the report's ``balance`` entry: the rounds, the centre-of-pressure fraction off the feet
    before and after, whether the check passes after, and the largest root move (m)."""
    from musclerl.ground.surface import site_positions_m

    balanced = balance_trajectory(traj, model)
    out = balanced.trajectory
    positions = traj.site_pos_m
    if positions is not None:
        positions = np.array(positions, dtype=float, copy=True)
        ids = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, n) for n in traj.site_names])
        if np.any(ids >= 0):
            positions[:, ids >= 0] = site_positions_m(model, out.qpos, ids[ids >= 0])
    out = dataclasses.replace(out, site_pos_m=positions, site_names=traj.site_names)
    entry = {
        "rounds": balanced.rounds,
        "cop_outside_frac_before": balanced.before.cop["outside_frac"],
        "cop_outside_frac_after": balanced.after.cop["outside_frac"],
        "passed_before": balanced.before.passed,
        "passed_after": balanced.after.passed,
        "failures_after": list(balanced.after.failures),
        "root_shift_max_m": float(np.abs(out.qpos[:, :3] - traj.qpos[:, :3]).max()),
    }
    return out, entry
