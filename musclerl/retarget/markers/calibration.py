"""The subject model of a marker trial: marker set registered, model scaled, markers placed.

:func:`calibrate` does OpenSim's Scale tool on an MJCF model (step 1 of
:mod:`musclerl.retarget.markers.pipeline`): the marker set's offsets mapped from its own model's
body frames (:mod:`musclerl.models.osim_frames`), per-segment scale factors from the static trial
(the Scale setup's marker pairs; without one, one uniform factor; thigh and shank from the joint
centres, :mod:`musclerl.retarget.markers.joint_centres`), the static pose fitted
(:func:`fit_static_pose`; placeholder markers left out and subtalar/toes held at default,
:mod:`musclerl.retarget.markers.registration`), then every non-fixed marker moved to where the
static trial saw it (OpenSim's marker placer). The result, :class:`CalibratedModel`, carries the
compiled model, the placed markers, the per-marker registration report and the IK problems
built on it (compiled once, reused across passes and trials).
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.free_root import free_root
from musclerl.models.markers import Marker, MarkerSet, add_markers
from musclerl.models.opensim_setup import IKSetup, ScaleSetup
from musclerl.models.osim_frames import map_to_model, markers_in_ground
from musclerl.models.registry import compile_spec, load_spec
from musclerl.models.scaling import measure_scale_factors, scale_spec
from musclerl.motion.trc import MarkerData
from musclerl.retarget.ik.clip import ClipIK, cached, site_bodies, site_tree
from musclerl.retarget.ik.problem import align_root
from musclerl.retarget.ik.tasks import CoordinateTask, MarkerTask
from musclerl.retarget.markers.fit import PoseFit, place_markers, root_rigid_sites
from musclerl.retarget.markers.joint_centres import (
    JOINT_CENTRE_PREFIX,
    JOINT_CENTRE_WEIGHT_RATIO,
    centre_scale_factors,
    joint_centre_markers,
)
from musclerl.retarget.markers.registration import (
    DEFAULT_PLACEMENT_WEIGHT,
    default_placement_coordinates,
    placeholder_markers,
    registration_report,
    trunk_markers,
)


@dataclasses.dataclass(frozen=True)
class CalibratedModel:
    """The subject model: compiled ``model`` with marker sites, its ``spec``, placed markers."""

    model: mujoco.MjModel
    spec: mujoco.MjSpec
    marker_set: MarkerSet
    scale_factors: dict[str, np.ndarray]
    static_rms_m: float | None
    missing_body: dict[str, str]
    model_name: str = "myolegs"
    mass_kg: float | None = None
    markers_scaled: bool = True  # False once placed: locations are in the scaled body frames
    # Markers on the trunk, welded to the pelvis here (registration.trunk_markers): trial-IK
    # weights times pipeline.RIGID_SEGMENT_WEIGHT.
    rigid: tuple[str, ...] = ()
    # Per marker: how far mapping and placement moved it, and why (registration.registration_report).
    registration: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)
    # IK problems built on ``model`` (see :meth:`clip_ik`), reused across passes and trials.
    problems: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def clip_ik(self, names: list[str], coordinates: dict) -> ClipIK:
        """The :func:`marker_clip_ik` of markers ``names`` and coordinate tasks ``coordinates`` on
        this subject, built on first use and then reused (its solver compiles once)."""
        key = (tuple(names), tuple(sorted(coordinates.items())))
        return cached(self.problems, key, lambda: marker_clip_ik(self.model, names, coordinates))

    def to_dict(self) -> dict:
        """JSON-ready description from which :func:`subject_spec` rebuilds the subject model."""
        return {
            "model": self.model_name,
            "scale_factors": {k: [float(x) for x in v] for k, v in self.scale_factors.items()},
            "mass_kg": self.mass_kg,
            "markers_scaled": self.markers_scaled,
            "markers": {
                m.name: {"body": m.body, "location_m": [float(x) for x in m.location_m], "fixed": m.fixed}
                for m in self.marker_set.markers
            },
        }


def subject_spec(calibration: dict, source: str = "calibration") -> mujoco.MjSpec:
    """Rebuild the subject model (scaled, markers as sites) from :meth:`CalibratedModel.to_dict`."""
    try:
        markers = MarkerSet(
            tuple(
                Marker(name, m["body"], np.asarray(m["location_m"], dtype=float), bool(m["fixed"]))
                for name, m in calibration["markers"].items()
            ),
            source,
        )
        factors = {k: np.asarray(v, dtype=float) for k, v in calibration["scale_factors"].items()}
        spec, _, _ = build_subject(
            calibration["model"],
            markers,
            factors,
            calibration["mass_kg"],
            scale_markers=bool(calibration["markers_scaled"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(source, f"not a subject calibration ({type(err).__name__}: {err})") from err
    return spec


def time_window(data: MarkerData, start_s: float | None, end_s: float | None) -> MarkerData:
    """Frames with ``start_s <= time <= end_s`` (1e-6 s slack); InputError if none remain."""
    keep = np.ones(data.num_frames, dtype=bool)
    if start_s is not None:
        keep &= data.time_s >= start_s - 1e-6
    if end_s is not None:
        keep &= data.time_s <= end_s + 1e-6
    if keep.sum() < 1:
        raise InputError(
            data.source,
            f"no frames between {start_s} and {end_s} s "
            f"(file covers {data.time_s[0]:.3f}-{data.time_s[-1]:.3f} s)",
        )
    return dataclasses.replace(data, positions_m=data.positions_m[keep], time_s=data.time_s[keep])


def mean_positions(data: MarkerData) -> dict[str, np.ndarray]:
    """Mean position (3,) of each marker over the frames it is present in (all-NaN markers left out)."""
    out = {}
    for i, name in enumerate(data.names):
        column = data.positions_m[:, i]
        ok = ~np.isnan(column[:, 0])
        if ok.any():
            out[name] = column[ok].mean(axis=0)
    return out


def coordinate_targets(setup: IKSetup | None) -> dict[str, tuple[float | None, float]]:
    if setup is None:
        return {}
    return {
        c.name: (None if c.value_deg is None else np.deg2rad(c.value_deg), c.weight)
        for c in setup.coordinate_targets
    }


def marker_weights(names: list[str], setup: IKSetup | None) -> np.ndarray:
    if setup is None or not setup.marker_weights:
        return np.ones(len(names))
    return np.array([setup.marker_weights.get(n, 0.0) for n in names])


def build_subject(
    model_name: str,
    marker_set: MarkerSet,
    factors: dict[str, np.ndarray],
    mass_kg: float | None,
    scale_markers: bool = True,
) -> tuple[mujoco.MjSpec, mujoco.MjModel, dict[str, str]]:
    """Model with marker sites, scaled by ``factors``. Generic markers scale with their body
    (``scale_markers``); placed markers are already in the scaled body frames and are added after."""
    spec = load_spec(model_name)
    if scale_markers:
        added = add_markers(spec, marker_set)
    if factors or mass_kg is not None:
        scale_spec(spec, factors, mass_kg=mass_kg, source=model_name)
    if not scale_markers:
        added = add_markers(spec, marker_set)
    if not added.added:
        raise InputError(marker_set.source, f"none of the markers' bodies exist in model {model_name!r}")
    return spec, compile_spec(spec, model_name), added.missing_body


def uniform_factor(
    model: mujoco.MjModel, measured: dict[str, np.ndarray], source: str = "static trial"
) -> dict[str, np.ndarray]:
    """One factor for all bodies: mean pairwise marker distance, trial / model at qpos0."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    names = [n for n in measured if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, n) >= 0]
    if len(names) < 2:
        raise InputError(source, "fewer than 2 markers shared with the marker set and model: cannot scale")
    sim = np.array([data.site(n).xpos for n in names])
    exp = np.array([measured[n] for n in names])
    pairs = np.triu_indices(len(names), 1)
    d_sim = np.linalg.norm(sim[:, None] - sim[None], axis=-1)[pairs]
    d_exp = np.linalg.norm(exp[:, None] - exp[None], axis=-1)[pairs]
    factor = float(d_exp.sum() / d_sim.sum())
    return {model.body(b).name: np.full(3, factor) for b in range(1, model.nbody)}


def fit_static_pose(
    model: mujoco.MjModel,
    names: list[str],
    targets_m: np.ndarray,
    weights: np.ndarray,
    coordinates: dict[str, tuple[float | None, float]],
) -> tuple[np.ndarray, float]:
    """Static pose: the root from root-rigid markers, then the limbs with the root held. -> (qpos, rms).

    Joint-centre targets (names starting with ``JOINT_CENTRE_PREFIX``, see
    :mod:`musclerl.retarget.markers.joint_centres`) on the root's bodies only translate the root after
    its markers have oriented it; those on the limbs join the limb fit."""
    root = root_rigid_sites(model, names)
    free_joint = free_root(model)
    qpos = align_root(model, model.qpos0, names, targets_m)
    if free_joint is not None and root.any() and (weights * root).sum() > 0:
        root_dofs = tuple(range(int(model.jnt_dofadr[free_joint]), int(model.jnt_dofadr[free_joint]) + 6))
        others = tuple(d for d in range(model.nv) if d not in root_dofs)
        centre = np.array([n.startswith(JOINT_CENTRE_PREFIX) for n in names], dtype=bool)
        pelvis = PoseFit(model, names, weights * root * ~centre, coordinates, locked_dofs=others)
        qpos = pelvis.solve(targets_m, qpos).qpos
        if (centre & root).any():  # onto the hip centres: shift the pelvis, keep its markers' tilt
            shift = PoseFit(model, names, weights * root, coordinates, locked_dofs=others + root_dofs[3:])
            qpos = shift.solve(targets_m, qpos).qpos
        limbs = PoseFit(model, names, weights * ~root, coordinates, locked_dofs=root_dofs)
        qpos = limbs.solve(targets_m, qpos).qpos
    else:
        qpos = PoseFit(model, names, weights, coordinates).solve(targets_m, qpos).qpos
    errors = np.linalg.norm(PoseFit(model, names, weights).site_positions(qpos) - targets_m, axis=1)
    ok = weights > 0
    return qpos, float(np.sqrt(np.mean(errors[ok] ** 2))) if ok.any() else float("nan")


def held_at_default(model: mujoco.MjModel) -> dict[str, tuple[float | None, float]]:
    """Every hinge and slide joint held at its default (``coordinate_targets``' form), for a static
    pose that is the marker set's own model at its default pose: OpenSim's coordinate defaults of
    the limbs are zero, as the MJCF models' are, so the two models stand alike."""
    moving = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    names = [model.joint(j).name for j in range(model.njnt) if model.jnt_type[j] in moving]
    return {name: (None, DEFAULT_PLACEMENT_WEIGHT) for name in names}


def default_pose_static(marker_set: MarkerSet) -> MarkerData | None:
    """A one-frame static trial made from the marker set's own OpenSim model at its default pose
    (:func:`~musclerl.models.osim_frames.markers_in_ground`), or None for a stand-alone marker
    set. A model shipped scaled to its subject with hand-placed markers (AddBiomechanics,
    OpenCap) then calibrates as from a static trial: its segment lengths and markers as they are."""
    if not marker_set.frames:
        return None
    located = markers_in_ground(
        marker_set.frames, {m.name: (m.body, m.location_m) for m in marker_set.markers}
    )
    if not located:
        return None
    names = tuple(located)
    return MarkerData(
        names=names,
        positions_m=np.array([[located[n] for n in names]]),
        time_s=np.zeros(1),
        rate_hz=1.0,
        units_in="m",
        source=f"{marker_set.source} (its default pose)",
    )


def calibrate(
    model_name: str,
    marker_set: MarkerSet,
    static: MarkerData | None = None,
    scale_setup: ScaleSetup | None = None,
    ik_setup: IKSetup | None = None,
) -> CalibratedModel:
    """Subject model: markers added, scaled per segment and markers placed from ``static``; without
    one, from the marker set's own model at its default pose (:func:`default_pose_static`), and
    for a stand-alone marker set with no static trial, the generic model with the markers added."""
    from_model = static is None
    if from_model:
        static = default_pose_static(marker_set)
        scale_setup = None  # its time range and measurements are for a recorded trial
    if static is None:
        spec, model, missing = build_subject(model_name, marker_set, {}, None)
        return CalibratedModel(model, spec, marker_set, {}, None, missing, model_name)
    if scale_setup is not None and scale_setup.time_range_s is not None:
        static = time_window(static, *scale_setup.time_range_s)
    measured = mean_positions(static)
    original = marker_set
    _, generic, _ = build_subject(model_name, marker_set, {}, None)
    if marker_set.frames:  # the marker set's own model frames -> the model's body frames
        mapped = map_to_model(
            marker_set.frames, generic, {m.name: (m.body, m.location_m) for m in marker_set.markers}
        )
        marker_set = marker_set.with_locations(mapped)
        _, generic, _ = build_subject(model_name, marker_set, {}, None)
    if scale_setup is not None and scale_setup.measurements:
        factors = measure_scale_factors(generic, measured, scale_setup.measurements, static.source)
    else:
        factors = uniform_factor(generic, measured, static.source or "static trial")
    landmarks = bool(marker_set.frames)  # generic landmark midpoints are in the model's frames
    factors.update(centre_scale_factors(generic, measured, landmarks))  # thigh and shank from centres
    mass = scale_setup.mass_kg if scale_setup is not None and scale_setup.preserve_mass_distribution else None
    # seat the bones: hip, knee and ankle centres
    centres, centre_targets = joint_centre_markers(generic, measured, landmarks)
    with_centres = MarkerSet(marker_set.markers + centres, marker_set.source)
    spec, model, missing = build_subject(model_name, with_centres, factors, mass)
    names = [n for n in marker_set.names if n in measured and n not in missing]
    placement = (
        scale_setup.placement
        if scale_setup is not None and scale_setup.placement.marker_weights
        else ik_setup
    )
    placeholders = placeholder_markers(marker_set)
    rigid = trunk_markers(generic, marker_set)
    weights = marker_weights(names, placement) * ~np.isin(names, placeholders)
    targets = np.array([measured[n] for n in names])
    centre_names = [n for n in centre_targets if n not in missing]
    centre_weight = JOINT_CENTRE_WEIGHT_RATIO * max(float(weights.max(initial=0.0)), 1.0)
    coordinates = coordinate_targets(placement) or default_placement_coordinates(model)
    if from_model:  # the pose is known: every joint at its default, as the OpenSim model's stood
        coordinates = held_at_default(model)
    qpos, _ = fit_static_pose(
        model,
        names + centre_names,
        np.array([*targets, *(centre_targets[n] for n in centre_names)]).reshape(-1, 3),
        np.concatenate([weights, np.full(len(centre_names), centre_weight)]),
        coordinates,
    )
    placed = marker_set.with_locations(place_markers(model, qpos, marker_set, measured))
    spec, model, missing = build_subject(model_name, placed, factors, mass, scale_markers=False)
    _, rms = fit_static_pose(model, names, targets, weights, coordinates)
    registration = registration_report(
        original,
        marker_set,
        placed,
        factors,
        placeholders,
        rigid,
        dict(zip(names, weights, strict=True)),
        missing,
    )
    return CalibratedModel(
        model,
        spec,
        placed,
        factors,
        rms,
        missing,
        model_name,
        mass,
        False,
        registration=registration,
        rigid=rigid,
    )


def marker_clip_ik(model: mujoco.MjModel, names: list[str], coordinates: dict) -> ClipIK:
    """The clip solver of markers ``names`` (sites of ``model``) with the coordinate tasks
    ``coordinates`` (joint -> (value rad or m, None: the rest pose's; weight)) of joints in the
    markers' tree. The marker weights (M,) travel with the targets (``MarkerTask`` with
    ``frame_weights``, see :func:`marker_targets`), so re-weighted passes and other trials reuse
    the compiled problem."""
    site_ids = [model.site(n).id for n in names]
    tree = site_tree(model, site_ids)
    in_tree = {j.name for j in tree.all_joints()}
    bodies = site_bodies(model, site_ids)
    tasks = [MarkerTask(tree, bodies, np.array(model.site_pos[site_ids]), name="markers", frame_weights=True)]
    for name, (value, weight) in coordinates.items():
        if name in in_tree:
            default = float(model.qpos0[model.jnt_qposadr[model.joint(name).id]])
            tasks.append(
                CoordinateTask({name: default if value is None else value}, weight, name=f"coord {name}")
            )
    return ClipIK(model, tree, tasks)
