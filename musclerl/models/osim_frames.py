"""Body frames of an OpenSim model, read from its joints, and marker offsets mapped onto an MJCF model.

A marker set is written in the body frames of the OpenSim model it came with (LaiArnold 2017,
gait2392, Hamner, Rajagopal ...). Those frames are not the MJCF model's: gait2354's hip sits 1.5 cm
from Rajagopal's and its tibia hangs from the femur by the knee's translation functions, and
myolegs' torso is a welded chain whose origin is 3 cm above OpenSim's lumbar joint.
:func:`read_body_frames` reads, per body, the joint that connects it to its parent, at the
coordinates' default values: where the joint sits in the parent and in the child
(``location_in_parent`` / ``location`` in OpenSim 3, the joint's parent and child
``PhysicalOffsetFrame`` in OpenSim 4; body-fixed X-Y-Z orientation angles) and the joint's own
transform (a CustomJoint's SpatialTransform functions evaluated at the defaults).

:func:`map_to_model` expresses each marker in the MJCF body of the same name, with the body's
OpenSim parent identified in both models (same frame):

* orientation: the offset is turned by the difference of the body's orientation in that parent
  between the two models (``R_mjcf^T R_osim``, both at the default pose);
* position: relative to the body's origin, which OpenSim's models and the MJCF models converted
  from them put at the proximal joint centre (the femoral head, the knee, the ankle): a marker
  keeps its place on its bone, whatever the models say of the bone's place in the parent (the
  hip 1.5 cm apart). A child-side joint offset is a modelled joint centre, not a frame shift:
  LaiArnold's walker knee sits 8 mm behind the tibia origin, and anchoring the tibia's markers
  there put the OpenCap ankles 1.3 deg further from the expert's IK (docs/retarget_accuracy.md).
  A body welded to its parent in the MJCF model has no joint of its own and goes through the
  default pose instead (where the OpenSim model puts the marker in the parent, seen from the
  MJCF body): myolegs' torso.

The pelvis (parent: the ground) and bodies the file gives no frame for keep their offsets.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation

from musclerl.errors import InputError
from musclerl.geometry.rotations import axis_angle_to_matrix
from musclerl.motion.keypoints import Y_UP_TO_Z_UP


@dataclasses.dataclass(frozen=True)
class BodyFrame:
    """A body's joint to its parent at the default pose, ``x_parent = rotation (x_child -
    in_child_m) + in_parent_m``: ``in_child_m`` (3,) the joint in this body's frame, ``in_parent_m``
    (3,) where it sits in the parent (the parent offset plus the joint's own translation),
    ``rotation`` (3, 3) this body's axes in the parent's."""

    parent: str
    in_parent_m: np.ndarray
    in_child_m: np.ndarray
    rotation: np.ndarray


def _vector(element: ET.Element | None, tag: str, source: str = "model") -> np.ndarray:
    """``<tag>`` of ``element`` as 3 finite numbers (zeros when absent); InputError otherwise."""
    text = None if element is None else element.findtext(tag)
    if text is None:
        return np.zeros(3)
    try:
        values = np.array([float(v) for v in text.split()], dtype=float)
    except ValueError:
        values = np.zeros(0)
    if values.shape != (3,) or not np.all(np.isfinite(values)):
        name = element.get("name", element.tag)
        raise InputError(source, f"{name!r} <{tag}> {text.strip()!r} is not 3 finite numbers")
    return values


def _euler(angles_rad: np.ndarray) -> np.ndarray:
    return Rotation.from_euler("XYZ", angles_rad).as_matrix()


def _body_of(path: str) -> str:
    parts = [p for p in path.strip().split("/") if p]
    return parts[-1] if parts else ""


def _function_value(function: ET.Element, x: float) -> float:
    """An OpenSim ``Function`` element evaluated at ``x`` (Constant, LinearFunction,
    PolynomialFunction (highest power first), SimmSpline / NaturalCubicSpline / GCVSpline as a
    natural cubic spline through its knots, MultiplierFunction); 0 for anything else."""
    tag = function.tag
    if tag == "Constant":
        return float(function.findtext("value") or 0.0)
    if tag in ("LinearFunction", "PolynomialFunction"):
        coefficients = [float(v) for v in (function.findtext("coefficients") or "").split()]
        return float(np.polyval(coefficients, x)) if coefficients else 0.0
    if tag in ("SimmSpline", "NaturalCubicSpline", "GCVSpline"):
        knots_x = np.array([float(v) for v in (function.findtext("x") or "").split()])
        knots_y = np.array([float(v) for v in (function.findtext("y") or "").split()])
        if len(knots_x) < 2 or len(knots_x) != len(knots_y):
            return float(knots_y[0]) if len(knots_y) else 0.0
        return float(CubicSpline(knots_x, knots_y, bc_type="natural")(x))
    if tag == "MultiplierFunction":
        inner = function.find("function")
        inner = next(iter(inner), None) if inner is not None else None
        scale = float(function.findtext("scale") or 1.0)
        return scale * _function_value(inner, x) if inner is not None else 0.0
    return 0.0


def _axis_value(axis: ET.Element, defaults: dict[str, float]) -> float:
    names = (axis.findtext("coordinates") or "").split()
    x = defaults.get(names[0], 0.0) if names else 0.0
    function = next((c for c in axis if c.tag not in ("coordinates", "axis")), None)
    if function is not None and function.tag == "function":  # OpenSim 3 wraps it
        function = next(iter(function), None)
    if function is None:
        return x if names else 0.0
    return _function_value(function, x)


def _joint_transform(
    joint: ET.Element, defaults: dict[str, float], source: str
) -> tuple[np.ndarray, np.ndarray]:
    """A joint's own transform at the coordinates' default values: child joint frame in the
    parent joint frame, (R (3, 3), t (3,)). A CustomJoint's SpatialTransform: rotations 1-3
    about their axes in order, translations along theirs in the parent frame (the knee's
    translation functions carry the tibia 0.4 m down the femur in gait2354); a PinJoint turns
    about z, a SliderJoint moves along x; others (Weld, Ball, ...) are the identity at zero."""
    rotation, translation = np.eye(3), np.zeros(3)
    transform = joint.find("SpatialTransform")
    if transform is not None:
        for axis in transform.iter("TransformAxis"):
            direction = _vector(axis, "axis", source)
            norm = float(np.linalg.norm(direction))
            if norm < 1e-12:
                continue
            value = _axis_value(axis, defaults)
            if axis.get("name", "").startswith("rotation"):
                rotation = rotation @ axis_angle_to_matrix(direction / norm * value)
            else:
                translation = translation + direction / norm * value
        return rotation, translation
    coordinates = [c.get("name", "") for c in joint.iter("Coordinate")]
    value = defaults.get(coordinates[0], 0.0) if coordinates else 0.0
    if joint.tag == "PinJoint":
        rotation = axis_angle_to_matrix([0.0, 0.0, value])
    elif joint.tag == "SliderJoint":
        translation = np.array([value, 0.0, 0.0])
    return rotation, translation


def _frame(
    parent: str, p_t: np.ndarray, p_o: np.ndarray, c_t: np.ndarray, c_o: np.ndarray, joint, defaults, source
) -> BodyFrame:
    """x_parent = E(p_o) (R_j E(c_o)^T (x_child - c_t) + t_j) + p_t, as a :class:`BodyFrame`."""
    r_j, t_j = _joint_transform(joint, defaults, source)
    rotation = _euler(p_o) @ r_j @ _euler(c_o).T
    return BodyFrame(parent, p_t + _euler(p_o) @ t_j, c_t, rotation)


def _coordinate_defaults(root: ET.Element) -> dict[str, float]:
    out = {}
    for coordinate in root.iter("Coordinate"):
        try:
            out[coordinate.get("name", "")] = float(coordinate.findtext("default_value") or 0.0)
        except ValueError:
            out[coordinate.get("name", "")] = 0.0
    return out


def _opensim4_joints(root: ET.Element, source: str, defaults: dict[str, float]) -> dict[str, BodyFrame]:
    out = {}
    for joint_set in root.iter("JointSet"):
        for joint in joint_set.iter():
            parent_ref, child_ref = (
                joint.findtext("socket_parent_frame"),
                joint.findtext("socket_child_frame"),
            )
            if parent_ref is None or child_ref is None:
                continue
            frames = {}
            for frame in joint.iter("PhysicalOffsetFrame"):
                frames[frame.get("name", "")] = (
                    _body_of(frame.findtext("socket_parent") or ""),
                    _vector(frame, "translation", source),
                    _vector(frame, "orientation", source),
                )
            none = (None, np.zeros(3), np.zeros(3))
            p_body, p_t, p_o = frames.get(parent_ref.strip(), none)
            c_body, c_t, c_o = frames.get(child_ref.strip(), none)
            p_body = p_body or _body_of(parent_ref)
            c_body = c_body or _body_of(child_ref)
            if c_body and p_body:
                out[c_body] = _frame(p_body, p_t, p_o, c_t, c_o, joint, defaults, source)
    return out


def _opensim3_joints(root: ET.Element, source: str, defaults: dict[str, float]) -> dict[str, BodyFrame]:
    out = {}
    for body in root.iter("Body"):
        holder = body.find("Joint")
        joint = next(iter(holder), None) if holder is not None else None
        if joint is None or joint.findtext("parent_body") is None:
            continue
        out[body.get("name", "")] = _frame(
            joint.findtext("parent_body").strip(),
            _vector(joint, "location_in_parent", source),
            _vector(joint, "orientation_in_parent", source),
            _vector(joint, "location", source),
            _vector(joint, "orientation", source),
            joint,
            defaults,
            source,
        )
    return out


def read_body_frames(
    root: ET.Element, source: str = "model", values: dict[str, float] | None = None
) -> dict[str, BodyFrame]:
    """Child body name -> :class:`BodyFrame`, from an OpenSim 4 ``JointSet`` or OpenSim 3
    ``Body/Joint`` entries; empty for a stand-alone MarkerSet file. InputError (naming
    ``source``) for a location, orientation or axis that is not 3 finite numbers.

    ``values``: coordinate name -> value (rad or m) replacing the default, for a pose other
    than the default one (:func:`ground_poses`)."""
    defaults = {**_coordinate_defaults(root), **(values or {})}
    return _opensim4_joints(root, source, defaults) or _opensim3_joints(root, source, defaults)


def translational_coordinates(root: ET.Element) -> set[str]:
    """Coordinates that drive only translation axes of their joint (``pelvis_tx``; a knee angle
    that also moves the tibia through translation functions drives a rotation and is not one)."""
    moves: dict[str, set[str]] = {}
    for axis in root.iter("TransformAxis"):
        kind = "rotation" if axis.get("name", "").startswith("rotation") else "translation"
        for name in (axis.findtext("coordinates") or "").split():
            moves.setdefault(name, set()).add(kind)
    for joint in root.iter("SliderJoint"):
        for coordinate in joint.iter("Coordinate"):
            moves.setdefault(coordinate.get("name", ""), set()).add("translation")
    return {name for name, kinds in moves.items() if kinds == {"translation"}}


def ground_poses(frames: dict[str, BodyFrame]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Body name -> (R (3, 3), p (3,)): each body's axes and origin in OpenSim's ground frame
    (Y up), composed along the chain of :class:`BodyFrame` from the ground."""
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {"ground": (np.eye(3), np.zeros(3))}

    def pose(body: str, depth: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
        if body in poses:
            return poses[body]
        frame = frames.get(body)
        if frame is None or depth > len(frames):
            return None
        parent = pose(frame.parent, depth + 1)
        if parent is None:
            return None
        r_parent, p_parent = parent
        poses[body] = (
            r_parent @ frame.rotation,
            r_parent @ (frame.in_parent_m - frame.rotation @ frame.in_child_m) + p_parent,
        )
        return poses[body]

    for body in frames:
        pose(body)
    poses.pop("ground")
    return poses


def markers_in_ground(frames: dict[str, BodyFrame], locations_m: dict[str, tuple[str, np.ndarray]]) -> dict:
    """Marker name -> position (3,) in MuJoCo's Z-up world at the OpenSim model's default pose,
    for markers ``name -> (body, location in the OpenSim body)`` whose body has a frame; others
    are left out. Of a model scaled to its subject, these are the markers of that subject
    standing in the default pose: what a static trial would have recorded."""
    poses = ground_poses(frames)
    out = {}
    for name, (body, location) in locations_m.items():
        if body in poses:
            rotation, origin = poses[body]
            out[name] = Y_UP_TO_Z_UP @ (rotation @ np.asarray(location, dtype=float) + origin)
    return out


def _model_pose_in(
    model: mujoco.MjModel, data: mujoco.MjData, body: int, parent: int
) -> tuple[np.ndarray, np.ndarray]:
    """(R (3, 3), p (3,)) of ``body`` in ``parent``'s frame in ``data``'s pose."""
    r_parent = data.xmat[parent].reshape(3, 3)
    rotation = r_parent.T @ data.xmat[body].reshape(3, 3)
    return rotation, r_parent.T @ (data.xpos[body] - data.xpos[parent])


def _has_rotational_joint(model: mujoco.MjModel, body: int) -> bool:
    rotational = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_BALL))
    adr, num = int(model.body_jntadr[body]), int(model.body_jntnum[body])
    return any(int(model.jnt_type[j]) in rotational for j in range(adr, adr + num))


def map_to_model(
    frames: dict[str, BodyFrame], model: mujoco.MjModel, locations_m: dict[str, tuple[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Marker name -> location (3,) in the MJCF body, for markers ``name -> (body, location in the
    OpenSim body)`` whose body and OpenSim parent both models have (module docstring); others
    (the pelvis, whose parent is the ground) are left out: their offsets stand."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out = {}
    for name, (body_name, location) in locations_m.items():
        frame = frames.get(body_name)
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body_name)
        parent = -1 if frame is None else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, frame.parent)
        if body < 0 or parent < 0:
            continue
        r_mj, p_mj = _model_pose_in(model, data, body, parent)
        location = np.asarray(location, dtype=float)
        if not _has_rotational_joint(
            model, body
        ):  # welded here: through the default pose, seen from the parent
            p_os = frame.in_parent_m - frame.rotation @ frame.in_child_m
            out[name] = r_mj.T @ (frame.rotation @ location + p_os - p_mj)
        else:  # anchored at the body's origin, turned by the orientation difference
            out[name] = r_mj.T @ frame.rotation @ location
    return out


def body_poses_along(
    root: ET.Element,
    columns: list[str],
    values: np.ndarray,
    in_degrees: bool,
    bodies: list[str],
    source: str = "model",
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Poses of ``bodies`` of the OpenSim model ``root`` along a coordinate table, in MuJoCo's
    world (Z up, :data:`musclerl.motion.keypoints.Y_UP_TO_Z_UP`): body -> (R (T, 3, 3), p (T, 3)).

    ``values`` (T, C) in the table's own convention (an IK ``.mot`` of this model: degrees when
    ``in_degrees``, except the translational coordinates, metres); columns the model does not
    have are ignored. InputError (naming ``source``) for a body the model lacks."""
    values = np.asarray(values, dtype=float)
    known = set(_coordinate_defaults(root))
    linear = translational_coordinates(root)
    used = [(k, c, in_degrees and c not in linear) for k, c in enumerate(columns) if c in known]
    rotations = np.zeros((len(bodies), values.shape[0], 3, 3))
    origins = np.zeros((len(bodies), values.shape[0], 3))
    for t in range(values.shape[0]):
        pose = {c: float(np.deg2rad(values[t, k]) if deg else values[t, k]) for k, c, deg in used}
        poses = ground_poses(read_body_frames(root, source, pose))
        for i, body in enumerate(bodies):
            if body not in poses:
                raise InputError(source, f"the model has no body {body!r} joined to the ground")
            rotations[i, t] = Y_UP_TO_Z_UP @ poses[body][0]
            origins[i, t] = Y_UP_TO_Z_UP @ poses[body][1]
    return {body: (rotations[i], origins[i]) for i, body in enumerate(bodies)}
