"""Body frames of an OpenSim model, read from its joints, and marker offsets mapped onto an MJCF model.

A marker set is written in the body frames of the OpenSim model it came with (LaiArnold 2017,
gait2392, Hamner, Rajagopal ...). Those frames are not the MJCF model's: LaiArnold's tibia origin
sits 4 mm from Rajagopal's, gait2354's ankle 3 cm lower, and myolegs' torso is a welded chain
whose origin is 3 cm above OpenSim's lumbar joint. :func:`read_body_frames` reads, per body, the
joint that connects it to its parent: where the joint sits in the parent and in the child
(``location_in_parent`` / ``location`` in OpenSim 3, the joint's parent and child
``PhysicalOffsetFrame`` translations in OpenSim 4) and the child's orientation in the parent at
the default pose (parent offset orientation times the inverse of the child's; body-fixed X-Y-Z
angles, OpenSim's convention). Coordinates are taken at zero: the joint's own transform (e.g. the
knee's translation functions) is left out, a few millimetres.

:func:`map_to_model` expresses each marker in the MJCF body of the same name:

* orientation: both models' bodies are put in the default pose with the pelvis (the root-most
  body both have) identified, and the marker's offset is turned by ``R_mjcf^T R_osim``;
* position: relative to the body's joint centre (the child-side joint location in OpenSim, the
  MJCF body's first joint position), which both models place on the same anatomical point (the
  femoral head for the thigh, the ankle for the talus). A body welded to its parent in the MJCF
  model has no joint to anchor to and is placed through the default pose instead (the world
  position of the marker in the OpenSim model's default pose, seen from the MJCF body).

Markers on bodies the file gives no frame for keep their offsets.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

ROOT_BODY = "pelvis"


@dataclasses.dataclass(frozen=True)
class BodyFrame:
    """A body's joint to its parent: ``in_parent_m`` (3,) the joint in the parent frame,
    ``in_child_m`` (3,) the joint in this body's frame, ``rotation`` (3, 3) this body's axes in
    the parent's at the default pose."""

    parent: str
    in_parent_m: np.ndarray
    in_child_m: np.ndarray
    rotation: np.ndarray
    moving: bool = True  # False for a WeldJoint: the body cannot move on its parent


def _vector(element: ET.Element | None, tag: str) -> np.ndarray:
    text = None if element is None else element.findtext(tag)
    try:
        values = np.array([float(v) for v in (text or "0 0 0").split()], dtype=float)
    except ValueError:
        return np.zeros(3)
    return values if values.shape == (3,) and np.all(np.isfinite(values)) else np.zeros(3)


def _euler(angles_rad: np.ndarray) -> np.ndarray:
    return Rotation.from_euler("XYZ", angles_rad).as_matrix()


def _body_of(path: str) -> str:
    parts = [p for p in path.strip().split("/") if p]
    return parts[-1] if parts else ""


def _opensim4_joints(root: ET.Element) -> dict[str, BodyFrame]:
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
                    _vector(frame, "translation"),
                    _vector(frame, "orientation"),
                )
            none = (None, np.zeros(3), np.zeros(3))
            p_body, p_t, p_o = frames.get(parent_ref.strip(), none)
            c_body, c_t, c_o = frames.get(child_ref.strip(), none)
            p_body = p_body or _body_of(parent_ref)
            c_body = c_body or _body_of(child_ref)
            if c_body and p_body:
                moving = joint.tag != "WeldJoint"
                out[c_body] = BodyFrame(p_body, p_t, c_t, _euler(p_o) @ _euler(c_o).T, moving)
    return out


def _opensim3_joints(root: ET.Element) -> dict[str, BodyFrame]:
    out = {}
    for body in root.iter("Body"):
        holder = body.find("Joint")
        joint = next(iter(holder), None) if holder is not None else None
        if joint is None or joint.findtext("parent_body") is None:
            continue
        out[body.get("name", "")] = BodyFrame(
            joint.findtext("parent_body").strip(),
            _vector(joint, "location_in_parent"),
            _vector(joint, "location"),
            _euler(_vector(joint, "orientation_in_parent")) @ _euler(_vector(joint, "orientation")).T,
            joint.tag != "WeldJoint",
        )
    return out


def read_body_frames(root: ET.Element) -> dict[str, BodyFrame]:
    """Child body name -> :class:`BodyFrame`, from an OpenSim 4 ``JointSet`` or OpenSim 3
    ``Body/Joint`` entries; empty for a stand-alone MarkerSet file."""
    return _opensim4_joints(root) or _opensim3_joints(root)


def _osim_pose(frames: dict[str, BodyFrame], body: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(R (3, 3), p (3,)) of ``body`` in :data:`ROOT_BODY`'s frame at the default pose, or None."""
    rotation, position = np.eye(3), np.zeros(3)
    while body != ROOT_BODY:
        frame = frames.get(body)
        if frame is None:
            return None
        # x_parent = rotation_c_in_p (x_child - in_child) + in_parent
        position = frame.rotation @ (position - frame.in_child_m) + frame.in_parent_m
        rotation = frame.rotation @ rotation
        body = frame.parent
    return rotation, position


def _model_pose(model: mujoco.MjModel, data: mujoco.MjData, body: int) -> tuple[np.ndarray, np.ndarray]:
    root = model.body(ROOT_BODY).id
    r_root = data.xmat[root].reshape(3, 3)
    rotation = r_root.T @ data.xmat[body].reshape(3, 3)
    return rotation, r_root.T @ (data.xpos[body] - data.xpos[root])


def _model_joint_in_body(model: mujoco.MjModel, body: int) -> np.ndarray | None:
    """Position (3,) of the body's first rotational joint in its frame; None when welded."""
    for j in range(model.body_jntadr[body], model.body_jntadr[body] + model.body_jntnum[body]):
        if model.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_BALL):
            return np.array(model.jnt_pos[j])
    return None


def welded_but_moving(frames: dict[str, BodyFrame], model: mujoco.MjModel, body_name: str) -> bool:
    """True when ``body_name`` moves on its parent in the OpenSim model (a joint with coordinates)
    but has no joint in the MJCF model: its markers follow a posture the model cannot take
    (myolegs' rigid trunk against LaiArnold's lumbar joint, in a trunk-sway walk)."""
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body_name)
    frame = frames.get(body_name)
    return body >= 0 and frame is not None and frame.moving and int(model.body_jntnum[body]) == 0


def map_to_model(
    frames: dict[str, BodyFrame], model: mujoco.MjModel, locations_m: dict[str, tuple[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Marker name -> location (3,) in the MJCF body, for markers ``name -> (body, location in the
    OpenSim body)`` whose body both models have (see the module docstring); others are left out."""
    if not frames or mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, ROOT_BODY) < 0:
        return {}
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out = {}
    for name, (body_name, location) in locations_m.items():
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body_name)
        osim = _osim_pose(frames, body_name)
        if body < 0 or osim is None:
            continue
        r_os, p_os = osim
        r_mj, p_mj = _model_pose(model, data, body)
        turn = r_mj.T @ r_os
        joint = _model_joint_in_body(model, body)
        if joint is None or body_name not in frames:  # welded: through the default pose
            out[name] = r_mj.T @ (r_os @ location + p_os - p_mj)
        else:
            out[name] = turn @ (np.asarray(location) - frames[body_name].in_child_m) + joint
    return out
