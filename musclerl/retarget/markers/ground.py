"""Stance, treadmill belt and floor of a marker trial: the root translation, toes and trailing leg.

Marker IK (:mod:`musclerl.retarget.markers.pipeline`) fits the markers wherever the lab put
them: on a treadmill the subject walks in place while the stance feet ride the belt backwards,
and the lab's z = 0 need not be the surface the feet stand on. :func:`ground_clip` turns such a
clip into one a simulator can imitate, touching the free root's translation, the toe joints where
they reach into the floor, and the leg of a non-supporting foot still in it (the supporting
leg's joints, and so most of the marker fit, are unchanged):

1. **Sole points** (:func:`musclerl.retarget.ground.soles.model_soles`), heel, toe tip and the two
   edges of each foot, follow the IK poses.
2. **Belt.** A stance foot is low and moves with the ground under it: still overground, at the
   belt's velocity on a treadmill. The belt velocity is first the velocity most heel and toe points
   share over the frames they are low (within ``height_on_m`` of their own support level,
   :func:`musclerl.ground.contact.height_above_local_level_m`), then the median over the stance
   frames found relative to it, repeated until it settles
   (:func:`musclerl.ground.belt.belt_velocity_mps`). A trial is a treadmill trial when that speed is
   at least :data:`TREADMILL_MIN_SPEED_MPS`, runs backwards (against the feet's heel-to-toe
   direction) and the root stays behind it (net root speed under half the belt's: the subject
   walks in place) — or when forced, optionally with the belt speed.
   The belt's displacement ``-v (t - t0)`` is then added to the root, so the Trajectory walks
   overground with still stance feet.
3. **Stance** flags from :func:`musclerl.ground.contact.detect_contacts` on the corrected soles,
   its speed thresholds raised with the root's speed over the ground (a run's rolling forefoot).
4. **Floor.** One plane through the settled stance samples of all support patches
   (:func:`musclerl.retarget.ground.terrain.support_patches`, so heel strikes and heel rises do not
   count): a lab floor or treadmill is a plane, and it is **flat unless the stance feet show a slope
   beyond their noise** (:func:`musclerl.retarget.ground.terrain.slope_p_value`): one stance run of
   one foot is one observation (its mean settled height at its mean position; the frames within a
   run are not independent), the heights are regressed on position with a per-foot offset (a foot's
   markers may sit a few millimetres higher than the other's), and the slope is kept only when an
   F-test against the flat model rejects it at :data:`SLOPE_TEST_ALPHA` *and* the fitted slope is at
   least :data:`LEVEL_SLOPE_DEG` *and* the stances lean with it
   (:func:`musclerl.retarget.ground.terrain.stances_tilt_with`). Too few runs to test (fewer than
   the parameters plus one) is flat. Stances that lie on no single floor that way
   (:func:`musclerl.retarget.ground.terrain.one_floor`: a box and the floor, a step) give one level
   surface per group of them (:func:`level_heights_m`), the lowest at z = 0, their edges bounded
   by the swing soles (``floor.kind`` "steps"; OpenCap's drop jump off a 0.3 m box).
   The clip is shifted vertically so that the plane, through the :data:`FLOOR_PERCENTILE` of the
   samples, is z = 0 at the samples' centre; toe joints are bent out of the floor
   (:func:`bend_toes_off_floor`), then the body is lifted frame by frame by whatever collision geom
   of a *supporting* foot, or outside the feet, still reaches below it (the root only;
   :func:`support_lift_m`: the trailing foot's toes do not lift the stance foot off the floor).
5. **Trailing foot.** A foot that does not support but still reaches below the floor (the
   trailing foot at toe-off, its toes at their bound) is taken out of it by the least change of
   its own leg's joints, smooth over time (:func:`musclerl.retarget.markers.toe_off.lift_trailing_feet`);
   the root, the other leg and the supporting foot stay as they are. The soles and their stance
   flags are then taken again from the final poses (the stance flags, the slip and the soles
   saved with the clip describe the motion as written).

Steps 1-4 touch only the root translation and the toe joints; step 5 the unsupported leg.
World frame: metres, Z up, as the IK's.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.geometry.free_root import free_root_qposadr
from musclerl.ground.belt import belt_velocity_mps
from musclerl.ground.contact import ContactParams, body_speed_mps, detect_contacts, dilate_flags
from musclerl.ground.surface import GeomSurface, penetration_m
from musclerl.models.geoms import collision_geoms
from musclerl.models.registry import model_profiles
from musclerl.motion.trajectory import Terrain
from musclerl.retarget import correspondence as corr
from musclerl.retarget.ground.soles import SOLE_POINTS, model_soles, point_positions_m
from musclerl.retarget.ground.terrain import (
    LEVEL_SLOPE_DEG,
    ONE_FLOOR_TOL_M,
    SLOPE_TEST_ALPHA,
    TerrainParams,
    one_floor,
    plane_of_patches,
    recover_terrain,
    support_patches,
)
from musclerl.retarget.markers.toe_off import lift_trailing_feet

#: Below this belt speed (m/s) an automatically examined trial is overground: stance feet of an
#: overground walk are still to a few cm/s, a treadmill belt runs at walking speed.
TREADMILL_MIN_SPEED_MPS = 0.2
#: The floor passes this percentile of the settled stance samples' heights above the fitted plane:
#: low enough that a stance foot a little below the others (noise, the other side's foot placed a
#: few mm lower) does not sink into it and lift the whole body, high enough to ignore outliers.
FLOOR_PERCENTILE = 5.0


@dataclasses.dataclass(frozen=True)
class GroundOptions:
    """``treadmill``: None detects it, True forces a treadmill, False overground;
    ``belt_speed_mps``: the belt's speed when known (its direction is still estimated)."""

    treadmill: bool | None = None
    belt_speed_mps: float | None = None
    contact: ContactParams = ContactParams()
    terrain: TerrainParams = TerrainParams()


@dataclasses.dataclass(frozen=True)
class GroundedClip:
    """A clip on its floor. ``qpos`` (T, nq) root-corrected; ``sole_names`` (P,), ``sole_m``
    (T, P, 3) and stance ``flags`` (T, P) of the sole points; ``terrain`` the floor; ``report``
    the JSON-ready keys (see :meth:`report`)."""

    qpos: np.ndarray
    sole_names: tuple[str, ...]
    sole_m: np.ndarray
    flags: np.ndarray
    terrain: Terrain | None
    treadmill: bool
    treadmill_forced: bool
    belt_velocity_mps: np.ndarray  # (2,) horizontal, world frame, as applied; zero overground
    estimated_belt_mps: np.ndarray  # (2,) the stance feet's ground velocity, as estimated
    floor_shift_m: float  # constant vertical shift putting the floor at z = 0
    floor_slope_deg: float  # of the plane fitted through the stance samples (kept only if sloped)
    floor_flat: bool  # True unless the slope test rejects a flat floor (module docstring)
    floor_kind: str  # "level", "sloped" (one plane), "steps" (stances on several levels)
    floor_slope_p: float  # the slope test's p-value
    lift_m: np.ndarray  # (T,) extra per-frame lift against penetration
    toe_bend_rad: np.ndarray  # (T,) largest toe-joint bend that lifted the toes out of the floor
    leg_change_rad: np.ndarray  # (T,) largest leg-joint change taking a trailing foot out of it
    stance_speed_mps: float | None  # mean horizontal speed of stance sole points after correction

    def report(self) -> dict:
        """``treadmill``: detected/forced, belt velocity and speed; ``floor``: shift, slope, lift,
        stance fraction and stance-foot speed (keys documented in docs/retargeting.md)."""
        return {
            "treadmill": {
                "detected": bool(self.treadmill),
                "forced": bool(self.treadmill_forced),
                "belt_velocity_mps": [float(v) for v in self.belt_velocity_mps],
                "belt_speed_mps": float(np.linalg.norm(self.belt_velocity_mps)),
                "estimated_velocity_mps": [float(v) for v in self.estimated_belt_mps],
            },
            "floor": {
                "source": "stance" if self.terrain is not None else "none: no stance found",
                "shift_m": float(self.floor_shift_m),
                "flat": bool(self.floor_flat),
                "kind": self.floor_kind,
                "slope_deg": float(self.floor_slope_deg),
                "slope_p_value": float(self.floor_slope_p),
                "slope_test": f"F-test of per-stance mean heights with a per-foot offset, sloped if "
                f"p < {SLOPE_TEST_ALPHA} and slope >= {LEVEL_SLOPE_DEG} deg; p = 1 (flat) with too few "
                "stance runs to test (under 5 with both feet)",
                "lift_max_m": float(self.lift_m.max(initial=0.0)),
                "lift_frac": float(np.mean(self.lift_m > 0)) if len(self.lift_m) else 0.0,
                "toe_bend_max_deg": float(np.degrees(self.toe_bend_rad.max(initial=0.0))),
                "toe_bend_frac": float(np.mean(self.toe_bend_rad > 0)) if len(self.toe_bend_rad) else 0.0,
                "trailing_leg_change_max_deg": float(np.degrees(self.leg_change_rad.max(initial=0.0))),
                "trailing_leg_frac": float(np.mean(self.leg_change_rad > 0))
                if len(self.leg_change_rad)
                else 0.0,
                "stance_frac": float(self.flags.mean()) if self.flags.size else 0.0,
                "stance_speed_mps": self.stance_speed_mps,
            },
        }


def level_heights_m(patches: list) -> list[float]:
    """The height of the level each stance run of ``patches`` stands on: runs whose settled heights
    lie within :data:`~musclerl.retarget.ground.terrain.ONE_FLOOR_TOL_M` of the next lower one share
    a level (both feet on the floor after a drop jump: 1.6 cm apart, one foot's markers a little
    higher), which passes the :data:`FLOOR_PERCENTILE` of their samples, as a floor does."""
    own = np.array([np.median(p.samples_m[:, 2]) for p in patches])
    order = np.argsort(own)
    group = np.zeros(len(patches), dtype=int)
    for before, after in zip(order[:-1], order[1:], strict=True):
        group[after] = group[before] + int(own[after] - own[before] > ONE_FLOOR_TOL_M)
    out = np.zeros(len(patches))
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        samples = np.concatenate([patches[i].samples_m[:, 2] for i in members])
        out[members] = np.percentile(samples, FLOOR_PERCENTILE)
    return [float(h) for h in out]


def looks_like_treadmill(belt_mps: np.ndarray, root_mps: np.ndarray, forward: np.ndarray) -> bool:
    """Whether stance feet moving at ``belt_mps`` (2,) make a treadmill trial: at least
    :data:`TREADMILL_MIN_SPEED_MPS`, backwards against the feet's unit heel-to-toe direction
    ``forward`` (2,), with the root's net horizontal velocity ``root_mps`` (2,) under half the
    belt's speed (the subject walks in place; feet sliding under a travelling body are not a belt)."""
    speed = float(np.linalg.norm(belt_mps))
    return bool(
        speed >= TREADMILL_MIN_SPEED_MPS
        and float(belt_mps @ forward) < -0.5 * speed
        and float(np.linalg.norm(root_mps)) < 0.5 * speed
    )


def ground_clip(
    model: mujoco.MjModel,
    model_key: str,
    qpos: np.ndarray,
    rate_hz: float,
    options: GroundOptions | None = None,
) -> GroundedClip:
    """The clip ``qpos`` (T, nq) of ``model`` (registered as ``model_key``, whose profile names its feet)
    corrected for a treadmill belt and placed on its floor (module docstring)."""
    from musclerl.dynamics.ground_support import model_feet

    options = options or GroundOptions()
    root = free_root_qposadr(model)
    if root is None:
        raise ValueError("the model has no free root joint to place")
    names, foot, points = model_soles(model, model_key)
    q = np.array(qpos, dtype=float, copy=True)
    sole = point_positions_m(model, q, points)
    t_s = np.arange(len(q)) / rate_hz
    along_axis = np.isin(np.tile(np.arange(len(SOLE_POINTS)), len(corr.SIDES)), [0, 1])  # heel, toe tip
    belt = (
        belt_velocity_mps(sole[:, along_axis], rate_hz, options.contact, root_xy_m=q[:, root : root + 2])
        if len(q) >= 3
        else np.zeros(2)
    )
    estimated = belt.copy()
    speed = float(np.linalg.norm(belt))
    if options.treadmill is None:
        root_mps = (q[-1, root : root + 2] - q[0, root : root + 2]) / max(t_s[-1], 1e-9)
        treadmill = looks_like_treadmill(belt, root_mps, _walking_direction(sole, foot))
    else:
        treadmill = bool(options.treadmill)
    if treadmill and options.belt_speed_mps is not None:
        direction = belt / speed if speed > 1e-6 else -_walking_direction(sole, foot)
        belt = direction * float(options.belt_speed_mps)
    if not treadmill:
        belt = np.zeros(2)
    shift_xy = -belt[None, :] * t_s[:, None]  # (T, 2): the belt's travel, undone
    q[:, root : root + 2] += shift_xy
    sole[..., :2] += shift_xy[:, None, :]

    # the body's speed over the (belt-corrected) ground raises a run's stance thresholds
    body = body_speed_mps(q[:, root : root + 2], rate_hz, options.contact.body_speed_window_s)
    flags = (
        detect_contacts(sole, rate_hz, params=options.contact, body_speed=body)
        if len(q) >= 3
        else np.zeros(sole.shape[:2], bool)
    )
    terrain, shift_z, slope_deg, p_value, kind = None, 0.0, 0.0, 1.0, "level"
    lift = np.zeros(len(q))
    toe_bend_rad = np.zeros(len(q))
    leg_change = np.zeros(len(q))
    patches = support_patches(
        sole[:, along_axis],
        flags[:, along_axis],
        foot[along_axis],
        0.0,
        options.terrain.slope_ridge,
        min_frames=options.terrain.min_stance_frames(rate_hz),
    )
    if patches:
        plane, p_value = plane_of_patches(patches, options.terrain.slope_ridge, (0, len(q)))
        slope_deg = plane.slope_deg
        floor = one_floor(patches, options.terrain, (0, len(q)))
        extent = sole[..., :2].reshape(-1, 2)
        if floor is not None:
            kind = "sloped" if np.any(floor.slope != 0) else "level"
            residual_m = plane.samples_m[:, 2] - plane.predict_m(plane.samples_m[:, :2], np.inf)
            shift_z = -(plane.height_m + float(np.percentile(residual_m, FLOOR_PERCENTILE)))
            floor = dataclasses.replace(floor, samples_m=floor.samples_m + [0.0, 0.0, shift_z], height_m=0.0)
            terrain = recover_terrain([floor], None, options.terrain, extent_xy_m=extent)
        else:  # stances on several levels (a box and the floor), each level, the lowest at z = 0
            kind = "steps"
            heights = level_heights_m(patches)
            shift_z = -min(heights)
            up = np.array([0.0, 0.0, shift_z])
            levels = [
                dataclasses.replace(p, samples_m=p.samples_m + up, height_m=h + shift_z, slope=np.zeros(2))
                for p, h in zip(patches, heights, strict=True)
            ]
            swing = ~dilate_flags(flags, int(round(0.1 * rate_hz)))  # the soles' free space
            terrain = recover_terrain(levels, sole[swing] + up, options.terrain, extent_xy_m=extent)
        q[:, root + 2] += shift_z
        sole[..., 2] += shift_z
        fitted = q.copy()  # the marker fit's poses: the trailing leg's reference
        q, toe_bend_rad = bend_toes_off_floor(model, model_key, q, terrain)
        lift, supporting = support_lift_m(model, q, terrain)
        q[:, root + 2] += lift
        q, leg_change = lift_trailing_feet(model, q, fitted, terrain, model_feet(model), supporting, rate_hz)
        sole = point_positions_m(model, q, points)  # the soles, stance and slip of the final poses
        if len(q) >= 3:
            flags = detect_contacts(sole, rate_hz, params=options.contact, body_speed=body)
    step = np.linalg.norm(np.diff(sole[..., :2], axis=0), axis=-1) * rate_hz  # (T-1, P)
    both = flags[1:] & flags[:-1]
    return GroundedClip(
        qpos=q,
        sole_names=names,
        sole_m=sole,
        flags=flags,
        terrain=terrain,
        treadmill=treadmill,
        treadmill_forced=options.treadmill is not None,
        belt_velocity_mps=belt,
        estimated_belt_mps=estimated,
        floor_shift_m=shift_z,
        floor_slope_deg=slope_deg,
        floor_flat=kind == "level",
        floor_kind=kind,
        floor_slope_p=p_value,
        lift_m=lift,
        toe_bend_rad=toe_bend_rad,
        leg_change_rad=leg_change,
        stance_speed_mps=float(step[both].mean()) if both.any() else None,
    )


def support_lift_m(
    model: mujoco.MjModel, qpos: np.ndarray, terrain: Terrain
) -> tuple[np.ndarray, np.ndarray]:
    """Per frame (T,), how far (m, >= 0) the body must rise so that no supporting foot and no
    geom outside the feet reaches below ``terrain``; and which foot of
    :func:`musclerl.dynamics.ground_support.model_feet` supports on each frame (T, F) bool.

    A foot supports when its soles are within a double support's height of the lowest soles
    (:func:`musclerl.dynamics.ground_support.supporting_shares` with ``soles``: judged by its
    collision geoms' centres, so a toe dipping at push-off does not decide). A foot that does
    not support is left out: lifting the whole body for the trailing foot's toes (still in the
    floor with the toe joint at its limit) would lift the stance foot off the floor with it, a
    hop of a few centimetres over a tenth of a second that no body makes (accelerations of the
    pelvis near 1 g, see docs/training_data.md); that foot's own leg takes it out of the floor
    (:func:`musclerl.retarget.markers.toe_off.lift_trailing_feet`).
    """
    from musclerl.dynamics.ground_support import model_feet, supporting_shares

    feet = model_feet(model)
    shares = supporting_shares(model, qpos, feet, soles=True)
    foot_bodies = [b for foot in feet for b in foot]
    rest = np.setdiff1d(collision_geoms(model), collision_geoms(model, foot_bodies))
    groups = [(collision_geoms(model, list(foot)), shares[:, f] > 0) for f, foot in enumerate(feet)]
    groups.append((rest, np.ones(len(qpos), dtype=bool)))
    lift = np.zeros(len(qpos))
    for geoms, counted in groups:
        if len(geoms) and counted.any():
            depth = penetration_m(model, qpos, terrain, GeomSurface.of(model, geoms)).max(axis=1)
            lift = np.maximum(lift, np.where(counted, np.maximum(depth, 0.0), 0.0))
    return lift, shares > 0


TOE_BEND_ITERATIONS = 30


def bend_toes_off_floor(
    model: mujoco.MjModel, model_key: str, qpos: np.ndarray, terrain: Terrain
) -> tuple[np.ndarray, np.ndarray]:
    """``qpos`` (T, nq) with each toe joint bent, frame by frame, by the least angle (within its
    range) that takes the toes' collision geoms out of ``terrain``; and that angle (T,), the
    largest over the feet (rad, >= 0).

    Why: a marker set without toe markers (OpenCap's ``r_toe`` rides on the calcaneus) leaves the
    toe joint at its rest angle, so at toe-off the rigid toes sink through the floor (4 cm on the
    OpenCap walks) and lifting the whole body out of it makes the stance foot hop. A toe joint is
    the one hinge of a foot body beyond the first (the profile's ``feet``,
    :mod:`musclerl.models.profiles`); the bend goes whichever way lowers the penetration, found by
    bisection (depth falls monotonically as the toes lift).
    """
    q = np.array(qpos, dtype=float, copy=True)
    bend = np.zeros(len(q))
    profile = model_profiles().get(model_key)
    feet = profile.feet if profile is not None else {}
    for bodies in feet.values():
        for name in bodies[1:]:
            body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
            hinges = (
                [
                    j
                    for j in range(model.body_jntadr[body], model.body_jntadr[body] + model.body_jntnum[body])
                    if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
                ]
                if body >= 0
                else []
            )
            geoms = collision_geoms(model, [body]) if len(hinges) == 1 else []
            if len(geoms) == 0:
                continue
            surface = GeomSurface.of(model, geoms)
            adr = int(model.jnt_qposadr[hinges[0]])
            frames = np.flatnonzero(penetration_m(model, q, terrain, surface).max(axis=1) > 0)
            if len(frames) == 0:
                continue
            lo, hi = model.jnt_range[hinges[0]] if model.jnt_limited[hinges[0]] else (-np.pi / 2, np.pi / 2)
            trial = {}
            for sign in (1.0, -1.0):
                probe = q[frames].copy()
                probe[:, adr] = np.clip(probe[:, adr] + sign * np.radians(5.0), lo, hi)
                trial[sign] = penetration_m(model, probe, terrain, surface).max(axis=1).sum()
            sign = 1.0 if trial[1.0] <= trial[-1.0] else -1.0
            start = q[frames, adr]
            room = (hi - start) if sign > 0 else (start - lo)
            low, high = np.zeros(len(frames)), np.maximum(room, 0.0)
            for _ in range(TOE_BEND_ITERATIONS):
                mid = 0.5 * (low + high)
                probe = q[frames].copy()
                probe[:, adr] = start + sign * mid
                inside = penetration_m(model, probe, terrain, surface).max(axis=1) > 0
                low, high = np.where(inside, mid, low), np.where(inside, high, mid)
            q[frames, adr] = start + sign * high
            bend[frames] = np.maximum(bend[frames], high)
    return q, bend


def _walking_direction(sole_m: np.ndarray, foot: np.ndarray) -> np.ndarray:
    """Unit horizontal (2,) heel-to-toe direction of the feet, averaged over the clip."""
    heel = sole_m[:, [list(SOLE_POINTS).index("heel") + len(SOLE_POINTS) * f for f in np.unique(foot)]]
    toe = sole_m[:, [list(SOLE_POINTS).index("toe_tip") + len(SOLE_POINTS) * f for f in np.unique(foot)]]
    forward = (toe - heel)[..., :2].reshape(-1, 2).mean(axis=0)
    return forward / max(float(np.linalg.norm(forward)), 1e-9)


def ground_trial(
    model: mujoco.MjModel, model_name: str, qpos: np.ndarray, rate_hz: float, options: GroundOptions
) -> GroundedClip | str:
    """:func:`ground_clip` for a marker trial, or why it cannot run (a model without a free root,
    or whose feet no registered profile names: an MJCF path)."""
    if model_name not in model_profiles():
        return f"no sole points for model {model_name!r} (feet known for {sorted(model_profiles())})"
    if free_root_qposadr(model) is None:
        return "the model has no free root joint"
    return ground_clip(model, model_name, qpos, rate_hz, options)
