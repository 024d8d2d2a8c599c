"""The scaled model a keypoint motion is retargeted onto, and the source's stance.

:func:`prepare_model` scales a registered model per segment to the source skeleton (median bone
lengths of the clip against the model's, :data:`~musclerl.retarget.correspondence.SEGMENTS`, with
:func:`musclerl.models.scaling.scale_spec`), then adds a site per landmark (``kp_<landmark>``) and
per sole point (``sole_<heel|toe_tip|lateral|medial>_<l|r>``, from the feet's collision geoms).
:func:`contact_flags` gives the stance of those sole points from the source's foot keypoints.
Used by :mod:`musclerl.retarget.keypoints.pipeline`. World frame: metres, Z up.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.ground.contact import ContactParams, body_speed_mps, detect_contacts
from musclerl.ground.surface import GeomSurface
from musclerl.models.geoms import collision_geoms
from musclerl.models.registry import compile_spec, load_spec
from musclerl.models.scaling import scale_spec
from musclerl.motion.keypoints import KeypointMotion
from musclerl.retarget import correspondence as corr
from musclerl.retarget.ground.soles import SOLE_POINTS, rest_points, sole_points, sole_site_name

#: Scale factors are rounded to this many decimals (0.1 %: under a millimetre on a segment): the
#: clips of one skeleton (AMASS without body shapes, DeepMimic's humanoid), whose median bone
#: lengths differ only by noise, then give one scaled model, and share its compiled solver.
SCALE_DECIMALS = 3


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


def site_ids(model: mujoco.MjModel, names) -> np.ndarray:
    return np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in names], dtype=int)


def prepare_model(
    model_name: str, motion: KeypointMotion, scale: bool = True, contact: ContactParams | None = None
) -> tuple[PreparedModel, corr.Correspondence]:
    """Scale ``model_name`` to the skeleton of ``motion`` and add landmark and sole sites."""
    profile = corr.model_profile(model_name)
    key = model_name
    kind = corr.source_kind(motion.names)
    corr.check_upright(kind, motion.names, motion.positions_m, motion.source)
    table = profile.landmarks
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
    trunk_body = mujoco.mj_name2id(scaled, mujoco.mjtObj.mjOBJ_BODY, profile.trunk)
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
        spec.body(scaled.body(body).name).add_site(name=site_name(lm), pos=local, size=[0.01, 0, 0], group=5)
    model = compile_spec(spec, model_name)
    sole_names = tuple(sole_site_name(p, s) for s in corr.SIDES for p in SOLE_POINTS)
    foot_ids = [
        mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b)
        for bodies in profile.feet.values()
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


def on_model_proportions(
    model: mujoco.MjModel, landmarks: tuple[str, ...], targets_m: np.ndarray, rigid_feet: bool = True
) -> np.ndarray:
    """Keypoint targets (T, L, 3) in ``landmarks`` order with the arms (and a rigid foot's toe tip)
    on ``model``'s proportions.

    Along :data:`~musclerl.retarget.correspondence.ARM_CHAIN` (from the hip midpoint to the
    shoulders' midpoint, each shoulder, elbow and wrist), each point is put at its parent's new
    place plus the source's unit direction from parent to point times the distance the model's
    ``kp_<landmark>`` sites have at ``qpos0``: segment directions are the source's, lengths the
    model's. The legs keep the source's positions (their feet stand on the source's ground), and
    so does everything when ``model`` has no arm landmarks, except the toe tip of a foot the
    source sees as one rigid piece (heel and toe tip, no toe joint: DeepMimic), which goes along
    the source's heel-to-toe line at the model's sole length
    (:data:`~musclerl.retarget.correspondence.FOOT_CHAIN`): the foot keeps the source's pitch, and
    the toe joint is left to the rest-pose pull and the floor. On a model scaled to the source the
    lengths already agree and the targets move by less than a millimetre (the feet by a few: the
    scaled sole is re-derived from the scaled geoms; pass ``rigid_feet=False`` there, the foot's
    scale factor being that very heel-to-toe ratio). NaN stays NaN.
    """
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    source, rest = {}, {}
    for i, lm in enumerate(landmarks):
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site_name(lm))
        if site >= 0:
            source[lm], rest[lm] = targets_m[:, i], data.site_xpos[site].copy()
    for mid, (a, b) in corr.MIDPOINTS.items():
        if a in source and b in source:
            source[mid], rest[mid] = 0.5 * (source[a] + source[b]), 0.5 * (rest[a] + rest[b])
    placed = dict(source)
    feet = [(p, h) for p, h in corr.FOOT_CHAIN if rigid_feet and f"toe_{p.rsplit('_', 1)[1]}" not in source]
    for point, parent in (*corr.ARM_CHAIN, *feet):
        if point not in source or parent not in source:
            continue
        direction = source[point] - source[parent]
        unit = direction / np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-9)
        placed[point] = placed[parent] + unit * np.linalg.norm(rest[point] - rest[parent])
    out = np.array(targets_m, dtype=float)
    for i, lm in enumerate(landmarks):
        if lm in placed:
            out[:, i] = placed[lm]
    return out


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
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, corr.model_profile(key).feet[side][0])
        out[f"toe_{side}"] = (body, data.xmat[body].reshape(3, 3).T @ (point - data.xpos[body]))
    return out


def _world(model: mujoco.MjModel, body: int, local: np.ndarray) -> np.ndarray:
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return data.xpos[body] + data.xmat[body].reshape(3, 3) @ local


def site_name(landmark: str) -> str:
    return f"sole_{landmark}" if landmark.startswith(SOLE_POINTS) else f"kp_{landmark}"


def source_contact_flags(motion: KeypointMotion, kind: str, params: ContactParams) -> np.ndarray:
    """Stance flags (T, 2, 2) of the source's heel and toe keypoints, [side, (heel, toe)]."""
    names = [kp for side in corr.SIDES for kp in corr.CONTACT_KEYPOINTS[kind][side]]
    pts = np.stack([motion.keypoint(nm) for nm in names], axis=1)
    loop = wraps_in_place(motion)
    root_xy = motion.keypoint(corr.SOURCE_SEGMENTS[kind]["pelvis"])[:, :2]
    body = body_speed_mps(root_xy, motion.rate_hz, params.body_speed_window_s, loop=loop)
    flags = detect_contacts(pts, motion.rate_hz, loop=loop, params=params, body_speed=body)
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
