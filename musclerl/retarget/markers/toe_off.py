"""The trailing foot taken out of the floor at toe-off by a small IK of its own leg.

A marker set without toe markers (OpenCap's) leaves the toes where the rigid foot puts them: at
toe-off the heel is up, the ankle plantarflexed, and the toes reach up to 2-3 cm below the floor.
:func:`musclerl.retarget.markers.ground.bend_toes_off_floor` bends the toe joint out of the floor,
but myolegs' toe joint stops at 30 deg, and the body is lifted only for a *supporting* foot
(:func:`musclerl.retarget.markers.ground.support_lift_m`: lifting it for the trailing toes makes the
pelvis hop), so the trailing foot kept both its penetration and a toe joint pinned to its bound.

:func:`lift_trailing_feet` changes, on the frames where a foot that does not support the body
still reaches below the floor, the joints of that foot's leg alone (every independent hinge or
slide between the free root's body and the foot: on myolegs hip flexion, adduction and rotation,
knee, ankle, subtalar and toe; joints a joint equality drives, such as the knee's coupled
translations, follow their driver) by the least weighted amount that puts every collision geom of
the foot on or above the floor. The root, the other leg and the supporting foot do not move.

Per run of such frames (widened by :data:`RAMP_S` on either side while the foot stays
unsupported, so the change ramps in and out; a supporting frame is never changed) one bounded
least-squares problem is solved over all its frames at once:

    min  sum_tj w_j (q_tj - r_tj)^2  +  (tau^2 / h^2)^2 sum_tj w_j (c_{t-1,j} - 2 c_tj + c_{t+1,j})^2
         + PENALTY^2 sum_tg relu(floor(x_tg) + CLEARANCE_M - z_tg)^2

``q_tj``: leg joint j on frame t; ``r``: the marker fit's pose before the toe bend; ``c = q - r``
the correction (frames outside the run held as they are); ``h`` the frame period, ``tau`` =
:data:`SMOOTH_S` (the correction's acceleration: one shorter than ``tau`` is spread over its
neighbours instead of jumping); ``x_tg``, ``z_tg`` the lowest point of foot geom g. The floor
term is one-sided: a geom below the floor is pulled up, one above it is not pulled down. Solved by
Gauss-Newton on those lowest points (MuJoCo point Jacobians, ``mj_jac``), damped: each
linearisation's least-change step is taken in its direction for at most :data:`STEP_RAD` per joint,
so the correction follows the path of least change from the fit: one full step from a foot
several centimetres deep let near-equal levers (hip adduction, hip flexion) pick the answer on the
fit's last bits (docs/measurements.md).

``w_j`` (:func:`leg_weights`) is 1 per rad^2 for a joint the markers see and :data:`TOE_WEIGHT`
for a toe joint, which no OpenCap marker sees. Per millimetre of lift the joint with the best
lever for its weight moves most: on the OpenCap walks hip extension and knee flexion by a few
degrees, the ankle a little, and the toe joint comes back off its bound (its lever on the
forefoot's lowest point is a few centimetres). Every joint stays :data:`LIMIT_MARGIN_RAD` inside
its range (or where the marker fit put it, if that is closer to a bound), so the step never parks a
joint on a bound. Angles rad, positions world metres (Z up), frames at the clip's rate.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import scipy.optimize

from musclerl.ground.surface import GeomSurface, penetration_m
from musclerl.models.couplings import apply_couplings, couplings
from musclerl.models.geoms import collision_geoms
from musclerl.motion.trajectory import Terrain
from musclerl.retarget.ground.constraint import ground_planes

#: A penetrating geom is lifted to this height above the floor (m): clear of the report's
#: sampled penetration with room for the linearisation.
CLEARANCE_M = 0.5e-3
#: Frames whose foot reaches deeper than this below the floor are taken out of it (m).
TRIGGER_M = 1e-4
#: Weight per rad^2 of a toe joint's change relative to the joints the markers see (1).
TOE_WEIGHT = 0.1
#: Time scale of the smoothness term (s): corrections are spread over about this long.
SMOOTH_S = 0.03
#: The change ramps in and out over up to this long on each side of the penetrating frames (s).
RAMP_S = 0.05
#: No joint is moved closer than this to a bound of its range (rad or m).
LIMIT_MARGIN_RAD = np.radians(2.0)
#: Floor rows' square-root weight per metre: 1 mm below the floor weighs as 10 rad of change.
PENALTY = 1e4
#: Largest change of a joint in one linearisation (rad or m): a trust region, so that the
#: solution follows the path of least change from the fit instead of jumping on one linearisation
#: of a foot several centimetres in the floor (where near-equal levers make the jump's target
#: depend on the fit's last bits).
STEP_RAD = np.radians(2.0)
#: Linearisations of the floor rows per run, and active-set rounds per linearisation.
ITERATIONS = 40
ACTIVE_SET_ROUNDS = 20


@dataclasses.dataclass(frozen=True)
class LegChain:
    """One foot's leg: ``dofs`` (n,) its independent joint dofs, ``qpos_adr`` (n,) theirs in qpos,
    ``weights`` (n,), ``lo``/``hi`` (n,) their ranges, ``geoms`` the foot's collision geoms."""

    dofs: np.ndarray
    qpos_adr: np.ndarray
    weights: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    geoms: np.ndarray


def leg_weights(model: mujoco.MjModel, foot: tuple[int, ...], joints: list[int]) -> np.ndarray:
    """Weights (n,) of ``joints``: :data:`TOE_WEIGHT` on a foot body beyond the first (the toes:
    :mod:`musclerl.models.profiles`), 1 elsewhere."""
    return np.array([TOE_WEIGHT if int(model.jnt_bodyid[j]) in foot[1:] else 1.0 for j in joints])


def leg_chain(model: mujoco.MjModel, foot: tuple[int, ...]) -> LegChain:
    """The leg of ``foot`` (body ids, heel's first): the independent hinge and slide joints on the
    foot's bodies and their ancestors up to (not including) the body of the free root."""
    dependent = {c.y_dof for c in couplings(model)}
    bodies: list[int] = list(foot)
    body = int(model.body_parentid[foot[0]])
    while body > 0:
        if any(
            model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
            for j in range(model.body_jntadr[body], model.body_jntadr[body] + model.body_jntnum[body])
        ):
            break
        bodies.append(body)
        body = int(model.body_parentid[body])
    scalar = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    joints = [
        j
        for j in range(model.njnt)
        if int(model.jnt_bodyid[j]) in bodies
        and int(model.jnt_type[j]) in scalar
        and int(model.jnt_dofadr[j]) not in dependent
    ]
    lo = np.array([model.jnt_range[j, 0] if model.jnt_limited[j] else -np.inf for j in joints])
    hi = np.array([model.jnt_range[j, 1] if model.jnt_limited[j] else np.inf for j in joints])
    return LegChain(
        dofs=np.array([model.jnt_dofadr[j] for j in joints], dtype=int),
        qpos_adr=np.array([model.jnt_qposadr[j] for j in joints], dtype=int),
        weights=leg_weights(model, foot, joints),
        lo=lo,
        hi=hi,
        geoms=collision_geoms(model, list(foot)),
    )


def _floor_rows(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    q: np.ndarray,
    chain: LegChain,
    surface: GeomSurface,
    terrain: Terrain,
) -> tuple[np.ndarray, np.ndarray]:
    """Height above the floor (G,) of each foot geom's lowest point at pose ``q`` (nq,), and its
    gradient (G, n) over the leg's dofs (dependent joints through their couplings' chain rule)."""
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    low = surface.lowest_points(data, terrain)
    plane = ground_planes(terrain, low)  # (G, 3): z = c0 + c1 x + c2 y
    height = low[:, 2] - (plane[:, 0] + plane[:, 1] * low[:, 0] + plane[:, 2] * low[:, 1])
    grad = np.zeros((len(low), model.nv))
    jacp = np.zeros((3, model.nv))
    for g, point in enumerate(low):
        mujoco.mj_jac(model, data, jacp, None, point, int(model.geom_bodyid[chain.geoms[g]]))
        grad[g] = jacp[2] - plane[g, 1] * jacp[0] - plane[g, 2] * jacp[1]
    for c in couplings(model):
        if c.x_dof >= 0:
            grad[:, c.x_dof] += c.slope(q[c.x_qpos]) * grad[:, c.y_dof]
    return height, grad[:, chain.dofs]


def _solve_run(
    model: mujoco.MjModel,
    q: np.ndarray,
    ref: np.ndarray,
    frames: np.ndarray,
    chain: LegChain,
    surface: GeomSurface,
    terrain: Terrain,
    rate_hz: float,
) -> None:
    """Solve the module docstring's problem over ``frames`` (consecutive) of ``q`` (T, nq), in
    place, from the marker fit's poses ``ref`` (T, nq). Gauss-Newton: the floor rows are
    linearised at the current poses; at each linearisation the penalised problem (a convex
    piecewise quadratic) is solved by active sets, the rows predicted below the floor, until that
    set stops changing; the joint bounds go to a bounded least-squares solve (BVLS)."""
    data = mujoco.MjData(model)
    n, k = len(chain.dofs), len(frames)
    adr = chain.qpos_adr
    first, last = int(frames[0]), int(frames[-1])
    r = ref[np.ix_(frames, adr)]  # (k, n)
    lo = np.minimum(chain.lo + LIMIT_MARGIN_RAD, r)
    hi = np.maximum(chain.hi - LIMIT_MARGIN_RAD, r)
    sqrt_w = np.sqrt(chain.weights)
    smooth = (SMOOTH_S * rate_hz) ** 2  # tau^2 / h^2
    # Quadratic cost |A x - b|^2 in the frames' joint values x (k * n): change, then smoothness.
    rows, rhs = [np.kron(np.eye(k), np.diag(sqrt_w))], [(r * sqrt_w).reshape(-1)]
    held = q[:, adr] - ref[:, adr]  # corrections of the frames outside the run (the toe bend)
    for t in range(max(first - 1, 1), min(last + 1, len(q) - 2) + 1):
        row, known = np.zeros((n, k * n)), np.zeros(n)
        for offset, coef in ((-1, 1.0), (0, -2.0), (1, 1.0)):
            if first <= t + offset <= last:
                i = t + offset - first
                row[:, i * n : (i + 1) * n] += coef * smooth * np.diag(sqrt_w)
                known -= coef * smooth * sqrt_w * ref[t + offset, adr]
            else:
                known += coef * smooth * sqrt_w * held[t + offset]
        rows.append(row)
        rhs.append(-known)
    A, b = np.vstack(rows), np.concatenate(rhs)
    x = r.reshape(-1).copy()
    for _ in range(ITERATIONS):
        heights, jac = _linear_floor(model, data, _pose(model, q, frames, adr, x), chain, surface, terrain)
        if heights.min() >= -TRIGGER_M / 10:
            break
        # |A (x + dx) - b|^2 + PENALTY^2 |relu(-(h + J dx))|^2: a row below the floor pulls up,
        # one above it does not pull down (so a geom lifted by its neighbour is left higher).
        active = heights < 0
        step = np.zeros_like(x)
        for _ in range(ACTIVE_SET_ROUNDS):
            system = np.vstack([A, PENALTY * jac[active]])
            target = np.concatenate([b - A @ x, -PENALTY * heights[active]])
            step = scipy.optimize.lsq_linear(
                system, target, bounds=(lo.reshape(-1) - x, hi.reshape(-1) - x), method="bvls"
            ).x
            now = heights + jac @ step < 0
            if np.array_equal(now, active):
                break
            active = now
        # damped: the least-change step's direction, at most STEP_RAD in any joint (bounds are
        # convex, so the shortened step stays inside them)
        damping = min(1.0, STEP_RAD / max(float(np.abs(step).max()), 1e-12))
        x = np.clip(x + damping * step, lo.reshape(-1), hi.reshape(-1))
    q[frames] = _pose(model, q, frames, adr, x)


def _pose(
    model: mujoco.MjModel, q: np.ndarray, frames: np.ndarray, adr: np.ndarray, x: np.ndarray
) -> np.ndarray:
    """Poses ``q[frames]`` (k, nq) with the leg's joints ``adr`` (n,) set to ``x`` (k * n,)."""
    out = q[frames].copy()
    out[:, adr] = x.reshape(len(frames), len(adr))
    return apply_couplings(model, out)


def _linear_floor(model, data, poses, chain, surface, terrain):
    """Heights above ``CLEARANCE_M`` (k * G,) of the foot geoms' lowest points over ``poses``
    (k, nq) and their Jacobian (k * G, k * n), block diagonal over the frames."""
    n, g = len(chain.dofs), len(chain.geoms)
    heights, jac = np.zeros(len(poses) * g), np.zeros((len(poses) * g, len(poses) * n))
    for i, p in enumerate(poses):
        height, grad = _floor_rows(model, data, p, chain, surface, terrain)
        heights[i * g : (i + 1) * g] = height - CLEARANCE_M
        jac[i * g : (i + 1) * g, i * n : (i + 1) * n] = grad
    return heights, jac


def lift_trailing_feet(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    ref: np.ndarray,
    terrain: Terrain,
    feet: list[tuple[int, ...]],
    supporting: np.ndarray,
    rate_hz: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``qpos`` (T, nq) with each unsupported foot's leg moved out of ``terrain`` (module
    docstring), and per frame (T,) the largest change (rad) from ``qpos`` of a leg joint the
    markers see (weight 1: the toe's un-bending is left out).

    ``ref`` (T, nq): the marker fit's poses before the toe bend (the cost's reference); ``feet``:
    body-id groups, heel's body first (:func:`musclerl.dynamics.ground_support.model_feet`);
    ``supporting`` (T, F) bool: which foot bears load on each frame (those are left alone)."""
    from musclerl.dynamics.static_optimisation import single_threaded_blas

    q = np.array(qpos, dtype=float, copy=True)
    ramp = int(round(RAMP_S * rate_hz))
    seen: list[np.ndarray] = []
    with single_threaded_blas():  # many small least-squares solves (see that function)
        for f, foot in enumerate(feet):
            chain = leg_chain(model, foot)
            seen.append(chain.qpos_adr[chain.weights >= 1.0])
            if len(chain.geoms) == 0 or len(chain.dofs) == 0:
                continue
            surface = GeomSurface.of(model, chain.geoms)
            free = ~np.asarray(supporting[:, f], dtype=bool)
            depth = penetration_m(model, q, terrain, surface).max(axis=1)
            deep = free & (depth > TRIGGER_M)
            if not deep.any():
                continue
            window = np.zeros(len(q), dtype=bool)
            for t in np.flatnonzero(deep):
                window[max(t - ramp, 0) : t + ramp + 1] = True
            window &= free  # never into a supporting frame
            # ramps stop at a supporting frame: split the window into its runs of consecutive frames
            idx = np.flatnonzero(window)
            for run in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1):
                if deep[run].any():
                    _solve_run(model, q, ref, run, chain, surface, terrain, rate_hz)
    legs = np.concatenate(seen).astype(int) if seen else np.zeros(0, int)
    change = np.abs(q[:, legs] - np.asarray(qpos)[:, legs]).max(axis=1, initial=0.0)
    return q, change
