"""Per-segment model scaling on a ``mujoco.MjSpec``, as OpenSim's Scale tool does.

Scale factors are per body, three numbers along the body's own axes (OpenSim's ``BodyScale``).
Scaling a body ``b`` by ``s = (sx, sy, sz)`` multiplies, component-wise in ``b``'s frame:

* the positions of ``b``'s child bodies (their joint centres), the positions of ``b``'s joints,
  sites (muscle path points and markers) and geoms, and its centre of mass;
* geom sizes (radii by the mean of the two cross-section factors, lengths by the axis factor,
  ellipsoid/box half-sizes per axis, mesh vertices through the mesh ``scale``);
* the travel of slide joints driven by joint-equality polynomials (the knee's coupled
  translations), by the *parent* body's factor along the slide axis — OpenSim scales a custom
  joint's translation functions with its parent body;
* mass: by the volume ratio ``sx*sy*sz``, or — with ``mass_kg`` given — all masses by one common
  factor so the model weighs ``mass_kg`` (OpenSim's ``preserve_mass_distribution``);
* inertia: exactly, as the inertia of the mass distribution stretched by ``diag(s)``;
* muscle ``lengthrange``: by the ratio of the muscle's tendon length at ``qpos0`` after/before,
  which scales optimal fibre length and tendon slack length like OpenSim does.

:func:`measure_scale_factors` computes factors from marker-pair distances (Scale-tool
``Measurement``): the mean over pairs of *experimental distance / model distance* (model in its
default pose ``qpos0``) applies to the measurement's bodies on its axes.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.rotations import matrix_to_quat_wxyz, quat_wxyz_to_matrix
from musclerl.models.opensim_setup import Measurement
from musclerl.models.registry import compile_spec


def _local_factors(quat: np.ndarray, body_factors: np.ndarray) -> np.ndarray:
    """Scale factors (3,) seen along the axes of a frame with orientation ``quat`` in the body.

    Exact for axis-aligned frames; otherwise each local axis takes the squared-cosine-weighted
    mean of the body factors.
    """
    rot = quat_wxyz_to_matrix(quat)
    return (rot**2).T @ body_factors


def _scaled_inertia(
    mass: float, inertia: np.ndarray, iquat: np.ndarray, factors: np.ndarray, mass_ratio: float
) -> tuple[np.ndarray, np.ndarray]:
    """Principal inertia (3,) and its quat after stretching the body by ``factors``.

    With ``I`` the inertia about the COM in the body frame, the second moment of the mass is
    ``S = tr(I)/2 * Id - I``; stretching gives ``S' = mass_ratio * D S D`` and
    ``I' = tr(S') Id - S'``.
    """
    if mass <= 0:
        return inertia, iquat
    rot = quat_wxyz_to_matrix(iquat)
    full = rot @ np.diag(inertia) @ rot.T
    second = 0.5 * np.trace(full) * np.eye(3) - full
    d = np.diag(factors)
    second = mass_ratio * d @ second @ d
    scaled = np.trace(second) * np.eye(3) - second
    values, vectors = np.linalg.eigh(scaled)
    if np.linalg.det(vectors) < 0:
        vectors[:, 0] *= -1
    return np.maximum(values, 1e-12), matrix_to_quat_wxyz(vectors)


def _scale_geom(spec: mujoco.MjSpec, geom, s: np.ndarray, shared_meshes: set[str]) -> None:
    geom.pos = np.asarray(geom.pos) * s
    if np.all(np.isfinite(geom.fromto)) and geom.type in (
        mujoco.mjtGeom.mjGEOM_CAPSULE,
        mujoco.mjtGeom.mjGEOM_CYLINDER,
        mujoco.mjtGeom.mjGEOM_BOX,
        mujoco.mjtGeom.mjGEOM_ELLIPSOID,
    ):
        ends = np.asarray(geom.fromto).reshape(2, 3) * s
        axis = ends[1] - ends[0]
        axis = axis / max(np.linalg.norm(axis), 1e-12)
        cross = float(np.mean(np.sqrt(np.maximum((1 - axis**2) @ (s**2) / 2, 0))))
        geom.fromto = ends.reshape(6)
        size = np.array(geom.size)
        size[0] *= cross
        geom.size = size
        return
    local = _local_factors(geom.quat, s)
    size = np.array(geom.size)
    kind = geom.type
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        size[0] *= float(np.mean(local))
    elif kind in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
        size[0] *= float(np.mean(local[:2]))
        size[1] *= float(local[2])
    elif kind in (mujoco.mjtGeom.mjGEOM_ELLIPSOID, mujoco.mjtGeom.mjGEOM_BOX):
        size *= local
    elif kind == mujoco.mjtGeom.mjGEOM_MESH:
        mesh = spec.mesh(geom.meshname)
        if geom.meshname in shared_meshes:
            copy = spec.add_mesh(
                name=f"{geom.meshname}__{geom.name or id(geom)}",
                file=mesh.file,
                scale=np.asarray(mesh.scale) * local,
            )
            geom.meshname = copy.name
        else:
            mesh.scale = np.asarray(mesh.scale) * local
        return
    geom.size = size


def _tendon_lengths(model: mujoco.MjModel) -> np.ndarray:
    data = mujoco.MjData(model)
    mujoco.mj_fwdPosition(model, data)
    return np.array(data.ten_length)


def scale_spec(
    spec: mujoco.MjSpec, factors: dict[str, np.ndarray], mass_kg: float | None = None, source: str = "model"
) -> dict[str, np.ndarray]:
    """Scale ``spec`` in place, per body; ``factors`` maps body name -> (3,) or scalar factor.

    Bodies not named keep factor 1. Returns the factors used, each (3,). Raises
    :class:`InputError` for unknown bodies or non-positive factors.
    """
    per_body: dict[str, np.ndarray] = {}
    for name, value in factors.items():
        s = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
        if spec.body(name) is None:
            raise InputError(source, f"cannot scale body {name!r}: the model has no such body")
        if not np.all(np.isfinite(s)) or np.any(s <= 0):
            raise InputError(source, f"scale factors of body {name!r} must be positive, got {s}")
        per_body[name] = s
    before = compile_spec(spec, source)
    tendon_before = _tendon_lengths(before)

    def factor(body) -> np.ndarray:
        return per_body.get(body.name, np.ones(3))

    mesh_users: dict[str, int] = {}
    for geom in spec.geoms:
        if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            mesh_users[geom.meshname] = mesh_users.get(geom.meshname, 0) + 1
    shared = {name for name, count in mesh_users.items() if count > 1}

    volume_ratio = {}
    for body in spec.bodies[1:]:
        s = factor(body)
        parent = body.parent
        s_parent = factor(parent) if parent is not None and parent.name != "world" else np.ones(3)
        body.pos = np.asarray(body.pos) * s_parent
        compiled = before.body(body.name)
        volume_ratio[body.name] = float(np.prod(s))
        inertia, iquat = _scaled_inertia(
            float(compiled.mass[0]), np.array(compiled.inertia), np.array(compiled.iquat), s, 1.0
        )
        body.mass = float(compiled.mass[0])
        body.ipos = np.array(compiled.ipos) * s
        body.iquat = iquat
        body.inertia = inertia
        body.fullinertia = np.array([np.nan, 0, 0, 0, 0, 0])  # the diagonal form above replaces it
        body.explicitinertial = True
        for joint in body.joints:
            joint.pos = np.asarray(joint.pos) * s
        for site in body.sites:
            site.pos = np.asarray(site.pos) * s
        for geom in body.geoms:
            _scale_geom(spec, geom, s, shared)
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    _scale_coupled_slides(spec, before, per_body)
    _scale_masses(spec, before, volume_ratio, mass_kg)

    after = compile_spec(spec, source)
    ratio = _tendon_lengths(after) / np.maximum(tendon_before, 1e-9)
    for actuator in spec.actuators:
        if actuator.trntype == mujoco.mjtTrn.mjTRN_TENDON and np.all(np.asarray(actuator.lengthrange) > 0):
            actuator.lengthrange = np.asarray(actuator.lengthrange) * ratio[after.tendon(actuator.target).id]
    return {name: per_body.get(name, np.ones(3)) for name in per_body}


def _scale_coupled_slides(
    spec: mujoco.MjSpec, before: mujoco.MjModel, per_body: dict[str, np.ndarray]
) -> None:
    """Scale slide joints (range, ref, equality polynomial) by the parent factor along their axis."""
    slide_factor: dict[str, float] = {}
    for body in spec.bodies[1:]:
        parent = body.parent
        if parent is None or parent.name not in per_body:
            continue
        rot = quat_wxyz_to_matrix(body.quat)
        for joint in body.joints:
            if joint.type != mujoco.mjtJoint.mjJNT_SLIDE:
                continue
            axis = rot @ np.asarray(joint.axis, dtype=float)
            axis = axis / max(np.linalg.norm(axis), 1e-12)
            k = float(np.linalg.norm(per_body[parent.name] * axis))
            slide_factor[joint.name] = k
            joint.range = np.asarray(joint.range) * k
            joint.ref = joint.ref * k
    for equality in spec.equalities:
        if equality.type == mujoco.mjtEq.mjEQ_JOINT and equality.name1 in slide_factor:
            data = np.array(equality.data)
            data[:5] *= slide_factor[equality.name1]
            equality.data = data


def _scale_masses(
    spec: mujoco.MjSpec, before: mujoco.MjModel, volume_ratio: dict[str, float], mass_kg: float | None
) -> None:
    """Masses by volume ratio, or uniformly to ``mass_kg``; inertias follow the mass change."""
    masses = {b.name: float(b.mass) for b in spec.bodies[1:]}
    if mass_kg is not None:
        total = sum(masses.values())
        if not mass_kg > 0 or total <= 0:
            raise InputError("mass", f"subject mass must be positive, got {mass_kg}")
        ratios = {name: mass_kg / total for name in masses}
    else:
        ratios = volume_ratio
    for body in spec.bodies[1:]:
        body.mass = masses[body.name] * ratios[body.name]
        body.inertia = np.asarray(body.inertia) * ratios[body.name]


def marker_pair_distance_m(positions_m: dict[str, np.ndarray], a: str, b: str) -> float:
    """Distance between two named points (3,) in metres."""
    return float(np.linalg.norm(np.asarray(positions_m[a]) - np.asarray(positions_m[b])))


#: Segment scale factors a person can have against a generic adult model (a toddler to a giant,
#: with margin); outside, the static trial's units or marker names are wrong.
MIN_SCALE = 0.2
MAX_SCALE = 5.0


def measure_scale_factors(
    model: mujoco.MjModel,
    measured_m: dict[str, np.ndarray],
    measurements: tuple[Measurement, ...],
    source: str = "static trial",
) -> dict[str, np.ndarray]:
    """OpenSim Scale-tool factors: body -> (3,) from marker pairs.

    ``model`` carries the markers as sites (named as the markers) and is evaluated at ``qpos0``;
    ``measured_m`` maps marker name -> (3,) experimental position (metres, any common frame).
    Pairs with a marker missing from either side are skipped; a measurement with no usable pair,
    or a factor outside [:data:`MIN_SCALE`, :data:`MAX_SCALE`], raises :class:`InputError`.
    """
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    model_pos = {}
    for name in {n for m in measurements for pair in m.marker_pairs for n in pair}:
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
        if site >= 0:
            model_pos[name] = np.array(data.site_xpos[site])
    out: dict[str, np.ndarray] = {}
    for measurement in measurements:
        ratios = []
        for a, b in measurement.marker_pairs:
            usable = all(
                n in model_pos and n in measured_m and np.all(np.isfinite(measured_m[n])) for n in (a, b)
            )
            if usable:
                model_d = marker_pair_distance_m(model_pos, a, b)
                if model_d > 1e-6:
                    ratios.append(marker_pair_distance_m(measured_m, a, b) / model_d)
        if not ratios:
            raise InputError(
                source, f"measurement {measurement.name!r}: no marker pair present in both model and trial"
            )
        ratio = float(np.mean(ratios))
        if not MIN_SCALE <= ratio <= MAX_SCALE:
            raise InputError(
                source,
                f"measurement {measurement.name!r}: the trial's marker pairs are {ratio:.3g} x the model's "
                f"(a subject is {MIN_SCALE:g}-{MAX_SCALE:g} x a generic model): wrong Units or marker names",
            )
        for body in measurement.bodies:
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) < 0:
                continue
            s = np.ones(3)
            s[list(measurement.axes)] = ratio
            out[body] = s
    return out


def segment_factors(frames: dict, model: mujoco.MjModel) -> dict[str, np.ndarray]:
    """Per-body factors (3,) that give ``model``'s segments the lengths of an OpenSim model's.

    ``frames``: :func:`musclerl.models.osim_frames.read_body_frames` of the OpenSim model (the
    subject's scaled model, at its default pose). A body with exactly one child that both models
    have (femur -> tibia, tibia -> talus, talus -> calcn, calcn -> toes) takes the ratio of the
    distances from its origin to that child's, OpenSim over MJCF at ``qpos0`` (the knee's coupled
    translations included), on all three axes; a child without children of its own (a patella)
    does not count beside one that has; a leaf body (the toes) takes its parent's factor; a body
    with several such children (the pelvis: two hips) is left out. Raises
    :class:`InputError` when no body can be measured or a factor is outside
    [:data:`MIN_SCALE`, :data:`MAX_SCALE`] (other units, or another model's frames)."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    parents = np.asarray(model.body_parentid)
    out: dict[str, np.ndarray] = {}
    for body in range(1, model.nbody):
        name = model.body(body).name
        shared = [
            c
            for c in np.flatnonzero(parents == body)
            if model.body(int(c)).name in frames and frames[model.body(int(c)).name].parent == name
        ]
        chain = [c for c in shared if np.any(parents == c)] or shared  # the patella is a leaf
        if len(chain) != 1 or name not in frames:
            continue
        child_id = int(chain[0])
        child = frames[model.body(child_id).name]
        subject_m = float(np.linalg.norm(child.in_parent_m - child.rotation @ child.in_child_m))
        model_m = float(np.linalg.norm(data.xpos[child_id] - data.xpos[body]))
        if model_m < 1e-6 or subject_m < 1e-6:
            continue
        ratio = subject_m / model_m
        if not MIN_SCALE <= ratio <= MAX_SCALE:
            raise InputError(
                "subject model", f"segment {name!r} is {ratio:.3g} x the model's: not the same kind of model"
            )
        out[name] = np.full(3, ratio)
    for body in range(1, model.nbody):
        name, parent = model.body(body).name, model.body(int(parents[body])).name
        leaf = not np.any(parents == body)
        if leaf and name not in out and name in frames and parent in out and frames[name].parent == parent:
            out[name] = out[parent].copy()
    if not out:
        raise InputError("subject model", "no segment shared with the model to measure")
    return out
