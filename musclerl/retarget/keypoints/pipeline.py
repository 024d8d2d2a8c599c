"""Keypoint motion (SMPL / AMASS, DeepMimic) -> scaled model -> ground-aware IK -> Trajectory.

Steps of :func:`retarget_keypoints`:

1. **Model.** :func:`~musclerl.retarget.keypoints.model.prepare_model` scales the model per
   segment to the source skeleton and adds a site per landmark (``kp_<landmark>``) and per sole
   point (``sole_<heel|toe_tip>_<l|r>``, from the feet's collision geoms).
2. **Keypoint IK.** The targets are the source's keypoints, the arms' put on the model's
   proportions (:func:`~musclerl.retarget.keypoints.model.on_model_proportions`: the source's
   segment directions at the model's lengths, so an unscaled model's trunk does not lean to
   reach the source's shoulders). The whole clip is fitted to them in one batched JAX solve
   (:func:`musclerl.retarget.ik.solver.solve_clip`, weighted least squares, Levenberg-Marquardt,
   warm-start chains): joint limits held, the model's joint equalities exact, smoothness, and
   tendon continuity (muscle-path jumps between frames detected and re-solved).
   **Orientations.** Where the source gives joint rotations (SMPL/AMASS) and the source's
   weight (:data:`~musclerl.retarget.correspondence.ORIENTATION_WEIGHTS`) is not 0, the
   pelvis, trunk, thighs and shanks also get orientation targets
   (:class:`~musclerl.retarget.ik.tasks.OrientationTask`), their fixed offsets from the source's
   joint frames calibrated on the positions-only solve (:mod:`musclerl.retarget.keypoints.orientations`),
   and the clip is solved again with them; every later pass keeps them.
3. **Contact and terrain.** Stance flags come from the source's foot keypoints
   (:mod:`~musclerl.ground.contact`); the support surface from the model's sole points in
   stance and the swing feet's free space (:mod:`~musclerl.retarget.ground.terrain`) — one
   plane when every stance stands on one (:func:`~musclerl.retarget.ground.terrain.one_floor`:
   a lab's floor, level unless the stances show a slope beyond their noise, as the marker
   pipeline's floor), else a heightfield through them (steps, stairs, uneven ground).
4. **Ground passes.** The IK is repeated with the sole points pinned to their stance anchors on
   the terrain and held above it in swing
   (:class:`~musclerl.retarget.ground.constraint.SoleContact`, the terrain given as a plane per
   frame and sole point), and lifted where a foot's collision geoms still dip in
   (:mod:`~musclerl.ground.surface`); a pass is repeated while any of them penetrates.
   Steps 2 and 4 share one clip solver (:func:`keypoint_clip_ik`, a
   :class:`~musclerl.retarget.ik.clip.ClipIK` as the marker pipeline's): the
   anchors and planes are its targets (all NaN in step 2), and so are the keypoint sites' local
   points (the toes and trunk are placed per motion). Scale factors are rounded
   (:data:`~musclerl.retarget.keypoints.model.SCALE_DECIMALS`), so the motions of one skeleton
   (AMASS without body shapes, DeepMimic) give one scaled model: with ``solvers`` (a folder run
   keeps it per worker) they share one compiled solver, and a new process loads it from JAX's
   persistent compilation cache.
5. **Measured** with MuJoCo C on the final ``qpos``: keypoint errors, limit violations, equality
   residual, penetration of every collision geom, stance skating.

World frame: metres, Z up; the source's ground is wherever its feet stand.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.ground.contact import ContactParams, dilate_flags
from musclerl.ground.surface import (
    GeomSurface,
    GroundContact,
    GroundParams,
    penetration_m,
    site_positions_m,
    skating_mps,
)
from musclerl.models.couplings import couplings, equality_residual
from musclerl.motion.keypoints import KeypointMotion
from musclerl.motion.trajectory import Terrain, Trajectory
from musclerl.retarget import correspondence as corr
from musclerl.retarget.ground.constraint import SoleContact, ground_planes
from musclerl.retarget.ground.soles import SOLE_POINTS
from musclerl.retarget.ground.terrain import (
    MIN_PATCH_FRAMES,
    TerrainParams,
    one_floor,
    recover_terrain,
    support_patches,
    terrain_summary,
)
from musclerl.retarget.ik.clip import ClipIK, cached, site_bodies, site_tree, start_pose
from musclerl.retarget.ik.tasks import MarkerTask, OrientationTask, PostureTask
from musclerl.retarget.keypoints import orientations as orient
from musclerl.retarget.keypoints.model import (
    PreparedModel,
    contact_flags,
    on_model_proportions,
    prepare_model,
    site_ids,
    site_name,
    wraps_in_place,
)

#: Weight of the pull of every coordinate towards the model's rest pose (per rad^2 or m^2; a
#: keypoint's weight is 1 per m^2): it holds still the coordinates no keypoint sees (wrists,
#: fingers, toes), which otherwise wander with the warm starts and make muscle paths jump.
POSTURE_WEIGHT = 1e-4


@dataclasses.dataclass(frozen=True)
class PipelineParams:
    """Settings of :func:`retarget_keypoints` (weights are relative to a keypoint's 1)."""

    scale: bool = True
    ground: bool = True
    ground_weight: float = 1000.0
    ground_passes: int = 4
    blend_s: float = 0.1  # swing frames this close to a stance phase are eased onto its anchor
    max_iterations: int = 50  # LM iterations per warm-started frame
    tolerance: float = 1e-4  # a frame has converged when an LM step lowers the cost by less (relative)
    # Per segment orientation target; None: the source's (correspondence.ORIENTATION_WEIGHTS).
    orientation_weight: float | None = None
    contact: ContactParams = ContactParams()
    terrain: TerrainParams = TerrainParams()
    ground_params: GroundParams = GroundParams()


@dataclasses.dataclass(frozen=True)
class RetargetResult:
    """Output of :func:`retarget_keypoints`: the Trajectory (with terrain and contacts), the
    prepared model, per-frame keypoint errors (T, L) in metres, and the quality numbers."""

    trajectory: Trajectory
    prepared: PreparedModel
    keypoint_error_m: np.ndarray
    converged: np.ndarray  # (T,) bool
    metrics: dict


def keypoint_clip_ik(
    prepared: PreparedModel,
    kp_sites: list[str],
    kp_weights: np.ndarray,
    params: PipelineParams,
    segment_bodies: tuple[str, ...] = (),
) -> ClipIK:
    """The clip solver of a keypoint motion (:class:`~musclerl.retarget.ik.clip.ClipIK`).

    Tasks: the keypoint sites (``MarkerTask``, the correspondence weights ``kp_weights`` (L,);
    the sites' local points come with the targets, so motions whose sites differ, e.g. the
    calibrated toes and trunk, share the problem); a weak rest-pose pull
    (:data:`POSTURE_WEIGHT`); segment orientations (``OrientationTask``, targets (T, B, 4), all
    NaN in the positions-only pass) when ``segment_bodies`` are given. Besides the constraints
    every clip holds: :class:`~musclerl.retarget.ground.constraint.SoleContact` (targets (T, P,
    6): anchors and ground planes, NaN where a rule does not bind). One problem for all passes,
    and for every motion of the same :func:`clip_key`.
    """
    model = prepared.model
    kp_ids = site_ids(model, kp_sites)
    tree = site_tree(model, [*kp_ids, *site_ids(model, prepared.sole_sites)], segment_bodies)
    tasks = [
        MarkerTask(
            tree, site_bodies(model, kp_ids), None, np.asarray(kp_weights, dtype=float), name="keypoints"
        ),
        PostureTask(model.qpos0, weight=POSTURE_WEIGHT),
    ]
    if segment_bodies:
        weights = np.full(len(segment_bodies), params.orientation_weight)
        tasks.append(OrientationTask(tree, segment_bodies, weights, name="orientations"))
    sole = SoleContact(model, tree, prepared.sole_sites, weight=params.ground_weight)
    return ClipIK(model, tree, tasks, [sole], max_iters=params.max_iterations, tol=params.tolerance)


def clip_key(
    prepared: PreparedModel,
    kp_sites: list[str],
    kp_weights: np.ndarray,
    params: PipelineParams,
    segment_bodies: tuple[str, ...] = (),
) -> tuple:
    """What a :func:`keypoint_clip_ik` depends on besides the keypoint sites' placement: the
    model and its (rounded) scale factors, which fix the scaled tree, its constraints and sole
    sites, the keypoint sites and weights, the oriented bodies, and the settings. Equal keys: one
    solver serves both."""
    return (
        prepared.name,
        tuple(sorted(prepared.scale_factors.items())),
        tuple(kp_sites),
        np.asarray(kp_weights, dtype=float).tobytes(),
        params,
        tuple(segment_bodies),
    )


def _foot_penetration(prepared: PreparedModel, q: np.ndarray, terrain: Terrain) -> np.ndarray:
    """Deepest penetration (T, 2) of each foot's collision geoms, metres."""
    model = prepared.model
    surface = GeomSurface.of(model, prepared.foot_geoms)
    depth = penetration_m(model, q, terrain, surface)
    foot_of_geom = np.array([_foot_of_body(prepared, int(model.geom_bodyid[g])) for g in prepared.foot_geoms])
    return np.stack([depth[:, foot_of_geom == f].max(axis=1, initial=0.0) for f in range(2)], axis=1)


def _foot_of_body(prepared: PreparedModel, body: int) -> int:
    name = prepared.model.body(body).name
    return 0 if name.endswith("_l") else 1


def retarget_keypoints(
    motion: KeypointMotion,
    model_name: str = "myolegs",
    params: PipelineParams | None = None,
    solvers: dict | None = None,
) -> RetargetResult:
    """Retarget ``motion`` onto ``model_name``; see the module docstring for the steps.

    ``solvers``: a dict the caller keeps across motions; the clip solver of each
    :func:`clip_key` is kept in it (:func:`musclerl.retarget.ik.clip.cached`) and reused (no new
    compile) by later motions of that key.
    """
    params = params or PipelineParams()
    prepared, match = prepare_model(model_name, motion, scale=params.scale, contact=params.contact)
    model = prepared.model
    kp_sites = [site_name(lm) for lm in match.landmarks]
    sites = kp_sites + list(prepared.sole_sites)
    kp_targets = on_model_proportions(  # (T, L, 3); a scaled foot is the source's length already
        model,
        match.landmarks,
        match.source_positions(motion.names, motion.positions_m),
        rigid_feet=not params.scale,
    )
    q0 = start_pose(model, kp_sites, kp_targets)
    segs = orient.segments(model, model_name, motion, match.source_kind)
    weight = params.orientation_weight
    if weight is None:
        weight = corr.ORIENTATION_WEIGHTS[match.source_kind]
        params = dataclasses.replace(params, orientation_weight=weight)
    bodies = segs.bodies if weight > 0 else ()
    key = clip_key(prepared, kp_sites, match.weights, params, bodies)
    ik = cached(
        {} if solvers is None else solvers,
        key,
        lambda: keypoint_clip_ik(prepared, kp_sites, match.weights, params, bodies),
    )
    ik.reset_stats()
    kp_local = np.broadcast_to(model.site_pos[site_ids(model, kp_sites)], kp_targets.shape)  # (T, L, 3)
    n_frames, n_sole = len(kp_targets), len(prepared.sole_sites)

    def solve(ground: np.ndarray | None, orientations: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """qpos (T, nq) and converged (T,) with sole targets ``ground`` (T, P, 6): anchors and
        ground planes (None: the keypoint passes, no ground), and segment ``orientations`` (T, B,
        4) quaternions (None: positions only, the pass that calibrates them)."""
        targets = {
            "keypoints": np.concatenate([kp_targets, kp_local], axis=-1),
            "ground": np.full((n_frames, n_sole, 6), np.nan) if ground is None else ground,
        }
        if bodies:
            targets["orientations"] = (
                np.full((n_frames, len(bodies), 4), np.nan) if orientations is None else orientations
            )
        result = ik.solve(targets, q0)
        return result.q, result.converged

    q, converged = solve(None, None)
    orientations = None
    if bodies:
        source_rot = motion.rotations[:, segs.keypoints]
        orientations = _orientation_targets(model, q, kp_targets, kp_sites, source_rot, bodies)
        q, converged = solve(None, orientations)
    sole_ids = site_ids(model, prepared.sole_sites)
    sole1 = site_positions_m(model, q, sole_ids)

    flags = contact_flags(motion, match.source_kind, params.contact)
    terrain = None
    if params.ground and flags.any():
        # Terrain evidence from heel and toe tip only: on the foot's long axis, they do not move
        # when an unconstrained foot rolls (the edge points do).
        axis = np.flatnonzero(np.isin(np.tile(np.arange(len(SOLE_POINTS)), 2), [0, 1]))

        def patches_of(min_frames: int) -> list:
            return support_patches(
                sole1[:, axis],
                flags[:, axis],
                prepared.sole_foot[axis],
                0.0,
                params.terrain.slope_ridge,
                min_frames=min_frames,
            )

        # A run's stances can all be shorter than min_stance_s (a jog's heel and toe are still
        # together for a few frames at most): then its shorter stances show the ground.
        patches = patches_of(params.terrain.min_stance_frames(motion.rate_hz)) or patches_of(MIN_PATCH_FRAMES)
        if not patches:
            raise InputError(
                motion.source or "motion",
                f"no foot is still on the ground for {MIN_PATCH_FRAMES} frames anywhere, so the ground "
                "cannot be recovered; --no-ground retargets it without one",
            )
        margin = dilate_flags(flags, int(round(0.1 * motion.rate_hz)), loop=wraps_in_place(motion))
        free = sole1[~margin]
        floor = one_floor(patches, params.terrain, (0, n_frames))
        extent = sole1[..., :2].reshape(-1, 2)
        if floor is not None:  # a lab's floor, not the stances' own heights and tilts
            terrain = recover_terrain([floor], None, params.terrain, extent_xy_m=extent)
        else:
            terrain = recover_terrain(patches, free, params.terrain, extent_xy_m=extent)
        ground = GroundContact.from_motion(sole1, flags, terrain, params.ground_params)
        targets = ground.sole_targets(sole1)
        targets = _ease_into_anchors(targets, sole1, flags, int(round(params.blend_s * motion.rate_hz)))
        tol = params.ground_params.penetration_tol_m
        for k in range(params.ground_passes):
            # The ground under each sole point where the last solve put it (its stance anchor
            # when anchored): a plane per frame and point, tangent to the terrain there.
            planes = ground_planes(
                terrain, np.where(np.isnan(targets), site_positions_m(model, q, sole_ids), targets)
            )
            q, converged = solve(np.concatenate([targets, planes], axis=-1), orientations)
            if k == params.ground_passes - 1:
                break
            depth = _foot_penetration(prepared, q, terrain)  # (T, 2)
            if not np.any(depth > tol):
                break
            # Active set: lift every sole target of a penetrating foot by its depth.
            lift = np.where(depth > tol, depth + 0.5 * tol, 0.0)[:, prepared.sole_foot]  # (T, P)
            base = np.where(np.isnan(targets), site_positions_m(model, q, sole_ids), targets)
            base[..., 2] += lift
            targets = np.where(lift[..., None] > 0, base, targets)
    metrics = measure(prepared, q, motion.rate_hz, kp_targets, kp_sites, flags, terrain, converged)
    metrics.update(ik.stats)
    metrics["orientation_segments"] = list(segs.names) if bodies else []
    site_all = site_positions_m(
        model, q, np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in sites])
    )
    traj = Trajectory.from_qpos(
        model,
        q,
        motion.rate_hz,
        model_name,
        site_names=tuple(sites),
        site_pos_m=site_all,
        contact_names=prepared.sole_sites,
        contact=flags,
        terrain=terrain,
        clip_names=(_clip_name(motion),),
        clip_loop=np.array([motion.loop]),
    )
    error = np.linalg.norm(site_all[:, : len(kp_sites)] - kp_targets, axis=-1)
    return RetargetResult(traj, prepared, error, converged, metrics)


def _orientation_targets(
    model: mujoco.MjModel,
    q: np.ndarray,
    kp_targets: np.ndarray,
    kp_sites: list[str],
    source_rot: np.ndarray,
    bodies: tuple[str, ...],
) -> np.ndarray:
    """Orientation targets (T, B, 4) for ``bodies`` from the source's segment rotations
    ``source_rot`` (T, B, 3, 3), their fixed offsets calibrated on the positions-only solve ``q``
    (T, nq) over its well-fitted frames: no joint on a limit, keypoint RMS at most the median
    (:mod:`musclerl.retarget.keypoints.orientations`)."""
    from musclerl.retarget.report import limits_bound

    err = np.linalg.norm(site_positions_m(model, q, site_ids(model, kp_sites)) - kp_targets, axis=-1)
    rms = np.sqrt(np.nanmean(err**2, axis=1))
    use = (rms <= np.nanmedian(rms)) & ~limits_bound(model, q)
    offsets = orient.calibrate_offsets(source_rot, orient.body_rotations(model, q, bodies), use)
    return orient.orientation_targets(source_rot, offsets)


def _clip_name(motion: KeypointMotion) -> str:
    from pathlib import Path

    return Path(motion.source).stem if motion.source else "clip0"


def _ease_into_anchors(
    targets: np.ndarray, reference: np.ndarray, flags: np.ndarray, frames: int
) -> np.ndarray:
    """Swing frames within ``frames`` of a stance phase get a target moved towards its anchor:
    the swing path shifted by the anchor's offset, fading out linearly away from the phase."""
    out = targets.copy()
    n = len(flags)
    for p in range(flags.shape[1]):
        col = flags[:, p]
        for t in range(n):
            if col[t] or not np.isnan(out[t, p, 0]):
                continue
            for direction in (1, -1):
                for d in range(1, frames + 1):
                    s = t + direction * d
                    if 0 <= s < n and col[s]:
                        offset = targets[s, p] - reference[s, p]
                        w = 1.0 - d / (frames + 1)
                        out[t, p] = reference[t, p] + w * offset
                        break
                if not np.isnan(out[t, p, 0]):
                    break
    return out


def measure(
    prepared: PreparedModel,
    q: np.ndarray,
    rate_hz: float,
    kp_targets: np.ndarray,
    kp_sites: list[str],
    flags: np.ndarray,
    terrain: Terrain | None,
    converged: np.ndarray,
) -> dict:
    """Quality numbers on the final ``q`` (T, nq) with MuJoCo C (names as the report's)."""
    model = prepared.model
    ids = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in kp_sites])
    err = np.linalg.norm(site_positions_m(model, q, ids) - kp_targets, axis=-1)  # (T, L)
    rms = np.sqrt(np.mean(err**2, axis=1))
    limited = [
        (int(model.jnt_qposadr[j]), model.jnt_range[j])
        for j in range(model.njnt)
        if model.jnt_limited[j]
        and model.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    ]
    outside = np.zeros(len(q), dtype=bool)
    for adr, (lo, hi) in limited:
        outside |= (q[:, adr] < lo - 1e-9) | (q[:, adr] > hi + 1e-9)
    eq = equality_residual(couplings(model), q)
    out = {
        "frames": int(len(q)),
        "marker_rms_m": float(rms.mean()),
        "marker_rms_worst_m": float(rms.max()),
        "marker_max_m": float(err.max()),
        "failed_frames": int(np.count_nonzero(~converged)),
        "joint_limit_violation_frac": float(outside.mean()),
        "equality_residual_max": float(np.abs(eq).max()) if eq.size else 0.0,
        "stance_frac": float(flags.mean()),
    }
    if terrain is not None:
        depth = penetration_m(model, q, terrain, prepared.collision)
        sole_ids = site_ids(model, prepared.sole_sites)
        sole = site_positions_m(model, q, sole_ids)
        skate = skating_mps(sole, flags, rate_hz)
        both = flags[1:] & flags[:-1]
        out.update(
            {
                "penetration_frac": float(np.mean(depth.max(axis=1) > 0.005)),
                "penetration_max_m": float(depth.max()),
                "skating_mps": float(skate[1:][both].mean()) if both.any() else 0.0,
                "skating_max_mps": float(skate.max()),
                "terrain": terrain_summary(terrain),
            }
        )
    return out
