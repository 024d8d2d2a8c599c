"""Keypoint motion (SMPL / AMASS, DeepMimic) -> scaled model -> ground-aware IK -> Trajectory.

Steps of :func:`retarget_keypoints`:

1. **Model.** :func:`prepare_model` scales the model per segment to the source skeleton (median
   bone lengths of the clip against the model's, :data:`~musclerl.retarget.correspondence.SEGMENTS`,
   with :func:`musclerl.models.scaling.scale_spec`), then adds a site per landmark
   (``kp_<landmark>``) and per sole point (``sole_<heel|toe_tip>_<l|r>``, from the feet's
   collision geoms).
2. **Keypoint IK.** The whole clip is fitted to the landmarks in one batched JAX solve
   (:func:`musclerl.retarget.solver.solve_clip`, weighted least squares, Levenberg-Marquardt,
   warm-start chains): joint limits held, the model's joint equalities exact, smoothness, and
   tendon continuity (muscle-path jumps between frames detected and re-solved).
3. **Contact and terrain.** Stance flags come from the source's foot keypoints
   (:mod:`~musclerl.retarget.contact`); the support surface from the model's sole points in
   stance and the swing feet's free space (:mod:`~musclerl.retarget.terrain`).
4. **Ground passes.** The IK is repeated with the sole points pinned to their stance anchors on
   the terrain and held above it in swing
   (:class:`~musclerl.retarget.ground_constraint.SoleContact`, the terrain given as a plane per
   frame and sole point), and lifted where a foot's collision geoms still dip in
   (:mod:`~musclerl.retarget.ground`); a pass is repeated while any of them penetrates.
   Steps 2 and 4 share one :class:`~musclerl.retarget.solver.IKProblem` (:class:`ClipIK`): the
   anchors and planes are its targets (all NaN in step 2), and so are the keypoint sites' local
   points (the toes and trunk are placed per motion). Scale factors are rounded
   (:data:`SCALE_DECIMALS`), so the motions of one skeleton (AMASS without body shapes, DeepMimic)
   give one scaled model: with ``solvers`` (a folder run keeps it per worker) they share one
   compiled solver, and a new process loads it from JAX's persistent compilation cache.
5. **Measured** with MuJoCo C on the final ``qpos``: keypoint errors, limit violations, equality
   residual, penetration of every collision geom, stance skating.

World frame: metres, Z up; the source's ground is wherever its feet stand.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.models.couplings import couplings, equality_residual
from musclerl.models.geoms import collision_geoms
from musclerl.models.registry import compile_spec, load_spec
from musclerl.models.scaling import scale_spec
from musclerl.motion.keypoints import KeypointMotion
from musclerl.motion.trajectory import Terrain, Trajectory, finite_difference_qvel
from musclerl.retarget import correspondence as corr
from musclerl.retarget.constraints import TendonContinuity
from musclerl.retarget.contact import ContactParams, detect_contacts, dilate_flags
from musclerl.retarget.ground import (
    GeomSurface,
    GroundContact,
    GroundParams,
    penetration_m,
    site_positions_m,
    skating_mps,
)
from musclerl.retarget.ground_constraint import ground_planes
from musclerl.retarget.marker_fit import align_root
from musclerl.retarget.soles import SOLE_POINTS, rest_points, sole_points, sole_site_name
from musclerl.retarget.terrain import TerrainParams, recover_terrain, support_patches, terrain_summary

#: Weight of the pull of every coordinate towards the model's rest pose (per rad^2 or m^2; a
#: keypoint's weight is 1 per m^2): it holds still the coordinates no keypoint sees (wrists,
#: fingers, toes), which otherwise wander with the warm starts and make muscle paths jump.
POSTURE_WEIGHT = 1e-4
#: Scale factors are rounded to this many decimals (0.1 %: under a millimetre on a segment): the
#: clips of one skeleton (AMASS without body shapes, DeepMimic's humanoid), whose median bone
#: lengths differ only by noise, then give one scaled model, and share its compiled solver.
SCALE_DECIMALS = 3
#: Compiled problems a ``solvers`` dict of :func:`retarget_keypoints` keeps (least recently used
#: dropped first): a folder of clips with their own body shapes must not pile them up.
SOLVERS_KEPT = 4


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
    contact: ContactParams = ContactParams()
    terrain: TerrainParams = TerrainParams()
    ground_params: GroundParams = GroundParams()


@dataclasses.dataclass(frozen=True)
class PreparedModel:
    """A scaled model with landmark and sole sites. Sole points are ordered foot-major:
    (heel_l, toe_tip_l, heel_r, toe_tip_r); ``sole_foot`` (P,) is 0 for left, 1 for right."""

    name: str
    model: mujoco.MjModel
    scale_factors: dict[str, float]
    landmarks: tuple[str, ...]
    sole_sites: tuple[str, ...]
    sole_foot: np.ndarray
    foot_geoms: np.ndarray  # collision geoms of both feet
    collision: GeomSurface  # every collision geom of the body


def _median_length(a_m: np.ndarray, b_m: np.ndarray) -> float:
    """Median over frames of the distance between two point tracks (T, 3)."""
    return float(np.median(np.linalg.norm(a_m - b_m, axis=-1)))


def _trunk_ratio(rest: dict[str, np.ndarray], motion: KeypointMotion, src: dict[str, str]) -> float | None:
    """Source / model distance from the hip midpoint to the shoulder midpoint (None if unknown)."""
    needed = ("hip_l", "hip_r", "shoulder_l", "shoulder_r")
    if not all(k in rest and src.get(k) in motion.names for k in needed):
        return None

    def mid(a, b):
        return 0.5 * (a + b)

    source = _median_length(
        mid(motion.keypoint(src["hip_l"]), motion.keypoint(src["hip_r"])),
        mid(motion.keypoint(src["shoulder_l"]), motion.keypoint(src["shoulder_r"])),
    )
    model = float(
        np.linalg.norm(mid(rest["hip_l"], rest["hip_r"]) - mid(rest["shoulder_l"], rest["shoulder_r"]))
    )
    return source / max(model, 1e-6)


def _site_ids(model: mujoco.MjModel, names) -> np.ndarray:
    return np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in names], dtype=int)


def prepare_model(
    model_name: str, motion: KeypointMotion, scale: bool = True, contact: ContactParams | None = None
) -> tuple[PreparedModel, corr.Correspondence]:
    """Scale ``model_name`` to the skeleton of ``motion`` and add landmark and sole sites."""
    key = corr.table_key(model_name)
    kind = corr.source_kind(motion.names)
    corr.check_upright(kind, motion.names, motion.positions_m, motion.source)
    table = corr.MODEL_LANDMARKS[key]
    spec = load_spec(model_name)
    base = compile_spec(spec, model_name)
    factors: dict[str, float] = {}
    if scale:
        rest = rest_points(base, key)
        rest.update({lm: _world(base, b, p) for lm, (b, p) in sole_points(base, key, rest).items()})
        src = corr.SOURCE_LANDMARKS[kind]
        ratios: dict[str, list[float]] = {}
        for a, b, bodies in corr.SEGMENTS:
            if a in rest and b in rest and src.get(a) in motion.names and src.get(b) in motion.names:
                length = _median_length(motion.keypoint(src[a]), motion.keypoint(src[b]))
                ratio = length / max(float(np.linalg.norm(rest[a] - rest[b])), 1e-6)
                for body in bodies:
                    if mujoco.mj_name2id(base, mujoco.mjtObj.mjOBJ_BODY, body) >= 0:
                        ratios.setdefault(body, []).append(ratio)
        factors = {b: round(float(np.mean(r)), SCALE_DECIMALS) for b, r in ratios.items()}
        if not factors:
            raise InputError(model_name, "no segment of the model could be measured on the motion")
        # Bodies no segment covers (spine, head, shoulder girdle, hands) take the trunk's ratio,
        # hip midpoint to shoulder midpoint, when the model has shoulders; else the median.
        overall = round(
            _trunk_ratio(rest, motion, src) or float(np.median(list(factors.values()))), SCALE_DECIMALS
        )
        for i in range(1, base.nbody):
            factors.setdefault(base.body(i).name, overall)
        if not all(0.5 < f < 2.0 for f in factors.values()):
            raise InputError(motion.source or "motion", f"implausible segment scale factors {factors}")
        scale_spec(spec, factors, source=model_name)
    scaled = compile_spec(spec, model_name) if scale else base  # unscaled: the spec is unchanged
    rest = rest_points(scaled, key)
    soles = sole_points(scaled, key, rest)
    # The trunk point: above the hip midpoint at the source's trunk height.
    src = corr.SOURCE_LANDMARKS[kind]
    trunk_body = mujoco.mj_name2id(scaled, mujoco.mjtObj.mjOBJ_BODY, corr.TRUNK_BODY[key])
    sites: dict[str, tuple[int, np.ndarray]] = {}
    data = mujoco.MjData(scaled)
    mujoco.mj_kinematics(scaled, data)
    for lm, (body, local) in table.items():
        sites[lm] = (
            mujoco.mj_name2id(scaled, mujoco.mjtObj.mjOBJ_BODY, body),
            np.zeros(3) if local is None else np.asarray(local, dtype=float),
        )
    sites.update(soles)
    sites.update(_calibrated_toes(scaled, key, kind, motion, rest, contact))
    if trunk_body >= 0 and src["trunk"] in motion.names:
        mid_src = 0.5 * (motion.keypoint(src["hip_l"]) + motion.keypoint(src["hip_r"]))
        height = _median_length(motion.keypoint(src["trunk"]), mid_src)
        point = 0.5 * (rest["hip_l"] + rest["hip_r"]) + np.array([0.0, 0.0, height])
        sites["trunk"] = (trunk_body, data.xmat[trunk_body].reshape(3, 3).T @ (point - data.xpos[trunk_body]))
    for lm, (body, local) in sites.items():
        spec.body(scaled.body(body).name).add_site(name=_site_name(lm), pos=local, size=[0.01, 0, 0], group=5)
    model = compile_spec(spec, model_name)
    sole_names = tuple(sole_site_name(p, s) for s in corr.SIDES for p in SOLE_POINTS)
    foot_ids = [
        mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b)
        for bodies in corr.FOOT_BODIES[key].values()
        for b in bodies
    ]
    prepared = PreparedModel(
        name=model_name,
        model=model,
        scale_factors=factors,
        landmarks=tuple(sites),
        sole_sites=sole_names,
        sole_foot=np.repeat(np.arange(2), len(SOLE_POINTS)),
        foot_geoms=collision_geoms(model, [i for i in foot_ids if i >= 0]),
        collision=GeomSurface.of(model, collision_geoms(model)),
    )
    return prepared, corr.correspondence(model_name, kind, motion.names, tuple(sites))


def _calibrated_toes(
    model: mujoco.MjModel,
    key: str,
    kind: str,
    motion: KeypointMotion,
    rest: dict[str, np.ndarray],
    contact: ContactParams | None,
) -> dict[str, tuple[int, np.ndarray]]:
    """Toe landmarks placed from the motion's flat-foot stance, as a marker placer would.

    A skeleton's toe joint need not sit on the foot where the model's MTP joint does: SMPL's
    foot joint lies 25 degrees below the ankle-to-toe line's horizontal, myolegs' MTP 19 degrees.
    Matching origins would pitch the model's foot on every stance. So the model's ``toe_*``
    point is put, on the foot in its flat rest pose, at the length and downward angle the
    source's ankle-to-toe vector has in the frames where the whole foot is planted.
    """
    src = corr.SOURCE_LANDMARKS[kind]
    if kind != "smpl":
        return {}
    flags = source_contact_flags(motion, kind, contact or ContactParams())
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out = {}
    for f, side in enumerate(corr.SIDES):
        flat = flags[:, f, 0] & flags[:, f, 1]
        if flat.sum() < 3 or f"toe_{side}" not in rest:
            continue
        d = motion.keypoint(src[f"toe_{side}"])[flat] - motion.keypoint(src[f"ankle_{side}"])[flat]
        length = float(np.median(np.linalg.norm(d, axis=-1)))
        drop = float(np.median(np.arctan2(-d[:, 2], np.hypot(d[:, 0], d[:, 1]))))
        forward = rest[f"toe_{side}"] - rest[f"ankle_{side}"]
        forward[2] = 0.0
        forward /= np.linalg.norm(forward)
        down = np.array([0.0, 0.0, -1.0])
        point = rest[f"ankle_{side}"] + length * (np.cos(drop) * forward + np.sin(drop) * down)
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, corr.FOOT_BODIES[key][side][0])
        out[f"toe_{side}"] = (body, data.xmat[body].reshape(3, 3).T @ (point - data.xpos[body]))
    return out


def _world(model: mujoco.MjModel, body: int, local: np.ndarray) -> np.ndarray:
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return data.xpos[body] + data.xmat[body].reshape(3, 3) @ local


def _site_name(landmark: str) -> str:
    return f"sole_{landmark}" if landmark.startswith(SOLE_POINTS) else f"kp_{landmark}"


@dataclasses.dataclass(frozen=True)
class RetargetResult:
    """Output of :func:`retarget_keypoints`: the Trajectory (with terrain and contacts), the
    prepared model, per-frame keypoint errors (T, L) in metres, and the quality numbers."""

    trajectory: Trajectory
    prepared: PreparedModel
    keypoint_error_m: np.ndarray
    converged: np.ndarray  # (T,) bool
    metrics: dict


class ClipIK:
    """Every frame of the clip in one batched JAX solve (:func:`musclerl.retarget.solver.solve_clip`).

    Tasks: the keypoint sites (``MarkerTask``, the correspondence weights; the sites' local
    points come with the targets, so motions whose sites differ, e.g. the calibrated toes and
    trunk, share the problem). Constraints: joint limits, joint equalities, smoothness, tendon
    continuity (jumps detected and re-solved,
    :class:`~musclerl.retarget.constraints.TendonContinuity`), a weak rest-pose pull
    (:data:`POSTURE_WEIGHT`) and
    :class:`~musclerl.retarget.ground_constraint.SoleContact` (targets (T, P, 6): anchors and
    ground planes, NaN where a rule does not bind). One problem for all passes, and for every
    motion of the same :meth:`key`. ``stats`` sums ``compile_s``, ``solve_s`` and the tendon
    jumps detected over the solves since :meth:`reset_stats`, and keeps the frames still jumping
    after the last one (``tendon_jumps_left``).
    """

    def __init__(
        self, prepared: PreparedModel, kp_sites: list[str], kp_weights: np.ndarray, params: PipelineParams
    ):
        from musclerl.retarget.constraints import JointEqualities, JointLimits, Smoothness
        from musclerl.retarget.ground_constraint import SoleContact
        from musclerl.retarget.kinematics import KinematicTree
        from musclerl.retarget.solver import IKProblem
        from musclerl.retarget.tasks import MarkerTask, PostureTask

        model = prepared.model
        kp_ids = _site_ids(model, kp_sites)
        sole_ids = _site_ids(model, prepared.sole_sites)
        body_of = [model.body(int(model.site_bodyid[i])).name for i in kp_ids]
        keep = body_of + [model.body(int(model.site_bodyid[i])).name for i in sole_ids]
        tree = KinematicTree.from_model(model, keep_bodies=list(dict.fromkeys(keep)))
        tasks = [
            MarkerTask(tree, body_of, None, np.asarray(kp_weights, dtype=float), name="keypoints"),
            PostureTask(model.qpos0, weight=POSTURE_WEIGHT),
        ]
        constraints = [
            JointLimits(model),
            JointEqualities(model),
            Smoothness(),
            TendonContinuity(model),
            SoleContact(model, tree, prepared.sole_sites, weight=params.ground_weight),
        ]
        self.problem = IKProblem(tree, tasks, constraints)
        self.n_sole = len(prepared.sole_sites)
        self.params = params
        self.reset_stats()

    @staticmethod
    def key(
        prepared: PreparedModel, kp_sites: list[str], kp_weights: np.ndarray, params: PipelineParams
    ) -> tuple:
        """What a ClipIK depends on besides the keypoint sites' placement: the model and its
        (rounded) scale factors, which fix the scaled tree, its constraints and sole sites, the
        keypoint sites and weights, and the settings. Equal keys: one ClipIK serves both."""
        return (
            prepared.name,
            tuple(sorted(prepared.scale_factors.items())),
            tuple(kp_sites),
            np.asarray(kp_weights, dtype=float).tobytes(),
            params,
        )

    def reset_stats(self) -> None:
        self.stats = {"compile_s": 0.0, "solve_s": 0.0, "tendon_jumps_detected": 0, "tendon_jumps_left": 0}

    def solve(
        self, kp_targets: np.ndarray, kp_local_m: np.ndarray, ground: np.ndarray | None, q0: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """qpos (T, nq) and converged (T,) for keypoints (T, L, 3) on sites at ``kp_local_m``
        (L, 3) in their bodies, and sole targets ``ground`` (T, P, 6): anchors and ground planes
        (None: no ground, the keypoint pass)."""
        from musclerl.retarget.solver import solve_clip

        if ground is None:
            ground = np.full((len(kp_targets), self.n_sole, 6), np.nan)
        local = np.broadcast_to(kp_local_m, kp_targets.shape)
        result = solve_clip(
            self.problem,
            {"keypoints": np.concatenate([kp_targets, local], axis=-1), "ground": ground},
            q0,
            max_iters=self.params.max_iterations,
            tol=self.params.tolerance,
        )
        self.stats["compile_s"] += result.compile_s
        self.stats["solve_s"] += result.solve_s
        self.stats["tendon_jumps_detected"] += int(result.tendon_jumps_detected)
        self.stats["tendon_jumps_left"] = int(result.tendon_jump.sum())
        return result.q, result.converged


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

    ``solvers``: a dict the caller keeps across motions; the :class:`ClipIK` of each
    :meth:`ClipIK.key` is kept in it (the :data:`SOLVERS_KEPT` last used) and reused (no new
    compile) by later motions of that key.
    """
    params = params or PipelineParams()
    prepared, match = prepare_model(model_name, motion, scale=params.scale, contact=params.contact)
    model = prepared.model
    kp_sites = [_site_name(lm) for lm in match.landmarks]
    sites = kp_sites + list(prepared.sole_sites)
    kp_targets = match.source_positions(motion.names, motion.positions_m)  # (T, L, 3)
    q0 = align_root(model, np.array(model.qpos0), kp_sites, kp_targets[0])
    key = ClipIK.key(prepared, kp_sites, match.weights, params)
    solvers = {} if solvers is None else solvers
    ik = solvers.pop(key, None) or ClipIK(prepared, kp_sites, match.weights, params)
    solvers[key] = ik  # most recently used last
    while len(solvers) > SOLVERS_KEPT:
        solvers.pop(next(iter(solvers)))
    ik.reset_stats()
    kp_local = model.site_pos[_site_ids(model, kp_sites)]  # (L, 3)
    q, converged = ik.solve(kp_targets, kp_local, None, q0)
    sole_ids = _site_ids(model, prepared.sole_sites)
    sole1 = site_positions_m(model, q, sole_ids)

    flags = contact_flags(motion, match.source_kind, params.contact)
    terrain = None
    if params.ground and flags.any():
        # Terrain evidence from heel and toe tip only: on the foot's long axis, they do not move
        # when an unconstrained foot rolls (the edge points do).
        axis = np.flatnonzero(np.isin(np.tile(np.arange(len(SOLE_POINTS)), 2), [0, 1]))
        patches = support_patches(
            sole1[:, axis],
            flags[:, axis],
            prepared.sole_foot[axis],
            0.0,
            params.terrain.slope_ridge,
            min_frames=params.terrain.min_stance_frames(motion.rate_hz),
        )
        margin = dilate_flags(flags, int(round(0.1 * motion.rate_hz)), loop=wraps_in_place(motion))
        free = sole1[~margin]
        terrain = recover_terrain(patches, free, params.terrain, extent_xy_m=sole1[..., :2].reshape(-1, 2))
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
            q, converged = ik.solve(kp_targets, kp_local, np.concatenate([targets, planes], axis=-1), q0)
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
    site_all = site_positions_m(
        model, q, np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in sites])
    )
    traj = Trajectory(
        qpos=q,
        qvel=finite_difference_qvel(model, q, motion.rate_hz),
        rate_hz=motion.rate_hz,
        joint_names=tuple(model.joint(j).name for j in range(model.njnt)),
        model_name=model_name,
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


def source_contact_flags(motion: KeypointMotion, kind: str, params: ContactParams) -> np.ndarray:
    """Stance flags (T, 2, 2) of the source's heel and toe keypoints, [side, (heel, toe)]."""
    names = [kp for side in corr.SIDES for kp in corr.CONTACT_KEYPOINTS[kind][side]]
    pts = np.stack([motion.keypoint(nm) for nm in names], axis=1)
    flags = detect_contacts(pts, motion.rate_hz, loop=wraps_in_place(motion), params=params)
    return flags.reshape(len(flags), 2, 2)


def wraps_in_place(motion: KeypointMotion, tol_m: float = 0.05) -> bool:
    """A cyclic clip whose last frame leads back to its first without moving: time wraps.

    DeepMimic's cyclic walk and run cycle the pose but travel forward, so their last and first
    frames are a stride apart and must not be treated as neighbours.
    """
    if not motion.loop or motion.num_frames < 3:
        return False
    jump = np.linalg.norm(motion.positions_m[-1] - motion.positions_m[0], axis=-1).max()
    step = np.linalg.norm(np.diff(motion.positions_m, axis=0), axis=-1).max()
    return bool(jump <= max(step, tol_m))


def contact_flags(motion: KeypointMotion, kind: str, params: ContactParams) -> np.ndarray:
    """Stance flags (T, P) of the sole points (:data:`SOLE_POINTS` of the left foot, then right)."""
    src = source_contact_flags(motion, kind, params)
    which = [0] + [1] * (len(SOLE_POINTS) - 1)  # heel contact -> heel, toe contact -> forefoot points
    return np.concatenate([src[:, f, which] for f in range(2)], axis=1)


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
        sole_ids = _site_ids(model, prepared.sole_sites)
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
