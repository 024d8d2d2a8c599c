"""Biovision Hierarchy (BVH) motion files: a joint tree with Euler-angle channels per frame.

Format
------
``HIERARCHY`` then one ``ROOT`` joint whose ``{ }`` block nests ``JOINT`` and ``End Site``
blocks. Each joint has an ``OFFSET x y z`` (its position in the parent's frame at rest) and a
``CHANNELS n name...`` line; an End Site has only an OFFSET (a point, no channels). Channel
names are ``X/Y/Zposition`` and ``X/Y/Zrotation`` in any order and number (usually 6 at the root
and 3 elsewhere; 6 on a joint are read too). ``MOTION`` follows, with ``Frames: N``, ``Frame
Time: dt`` (seconds) and N lines of as many numbers as the hierarchy has channels, in joint order.

Forward kinematics
------------------
A joint's rotation channels, in the order listed, are intrinsic rotations in degrees:
``Zrotation Xrotation Yrotation`` = ``a b c`` gives ``R_local = Rz(a) Rx(b) Ry(c)``, which maps
vectors in the joint's frame to its parent's. Its position channels, when it has any, give its
position in the parent's frame in place of the matching OFFSET components (the root's are its
world position). Then, parents first::

    R_world[j] = R_world[parent] @ R_local[j]
    p[j]       = p[parent] + R_world[parent] @ t_local[j]        (t_local: OFFSET or channels)

At zero angles every joint frame is the world frame, so the rest skeleton is the offsets.

Frames and units
----------------
BVH is Y-up; positions are rotated into MuJoCo's Z-up world with
:func:`~musclerl.motion.keypoints.y_up_to_z_up` (a proper rotation: left stays left). The file
has no unit. ``units="auto"`` measures the skeleton's legs, the thigh plus shank bone lengths
(``|OFFSET|`` of knee and of ankle, mean of both sides), and takes the one unit of
:data:`UNIT_SCALES` that puts it in :data:`HUMAN_LEG_M` (0.55-1.15 m: adults measure about
0.7-1.0 m). The candidates are at least 2.2x apart and the range spans less, so at most one
fits. None fitting (a child, a giant, an odd unit) is refused, naming the length found; pass
``units`` (a name of :data:`UNIT_SCALES` or metres per file unit) to override. CMU's files are
in 1/0.45 inch (``cmu``, 0.056444 m, CMU's FAQ); most exporters write cm, some m or inches.

Keypoints
---------
Joints are mapped onto the SMPL keypoint names the retargeting knows
(:data:`musclerl.retarget.correspondence.SOURCE_LANDMARKS` ``"smpl"``), so a BVH clip is
retargeted as an AMASS one: names lose any ``prefix:`` (Mixamo's ``mixamorig:``), case, and
``_ -.``, then a side (``Left``/``Right``/``L``/``R`` before or after) and a part of
:data:`PART_KEYPOINTS` are recognised: CMU/Mixamo ``LeftUpLeg, LeftLeg, LeftFoot,
LeftToeBase, LeftArm, LeftForeArm, LeftHand``, Unity ``LeftUpperLeg, LeftLowerLeg``,
``L_Hip, L_Knee, L_Ankle, L_Toe`` and the like. When several joints of a side take one name
(CMU's clavicle ``LeftShoulder`` above its ``LeftArm``), the one furthest from the root keeps
it. ``pelvis`` is the joint both hips hang from, ``neck`` the joint named Neck nearest the
root (``head`` likewise), ``spine3`` the joint the neck hangs from; a leg without a toe joint
takes its foot's End Site as ``left_foot``/``right_foot`` (the toe). Every other joint keeps
its file name and an End Site is ``<joint>_end``. The legs, pelvis, neck and spine are
required; a skeleton missing any is refused with the list.

Rest frames and rest skeleton
-----------------------------
Frames the file opens with in its rest pose (CMU's files: a T-pose frame; the DAZ conversion:
that frame and a 4-frame blend out of it) are found by the jump to the next frame and dropped
(:func:`~musclerl.motion.source_checks.leading_rest_frames`); the motion's ``notes`` say so
and its ``first_frame`` is the file's index of the first frame kept (``keep_rest`` keeps them).
A rest skeleton whose knee and ankle OFFSETs are out of line (bent knees at rest: the DAZ
conversion, 7.7°) puts the motion in a crouch and is listed in the motion's ``problems``
(:func:`~musclerl.motion.source_checks.bent_rest_legs`).

Rotations
---------
:attr:`~musclerl.motion.keypoints.KeypointMotion.rotations` holds every joint's world
orientation (its frame -> MuJoCo world, ``Y_UP_TO_Z_UP @ R_world``); an End Site takes its
joint's. They are the BVH skeleton's joint frames (world-aligned at rest), not the model's body
frames: the retargeting calibrates the constant offset per segment
(:mod:`musclerl.retarget.keypoints.orientations`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import read_text
from musclerl.geometry.rotations import intrinsic_euler_to_matrix
from musclerl.motion.keypoints import Y_UP_TO_Z_UP, KeypointMotion, y_up_to_z_up
from musclerl.motion.source_checks import bent_rest_legs, leading_rest_frames, rest_knee_bend_deg

#: Metres per file unit of the units ``units="auto"`` chooses from.
UNIT_SCALES: dict[str, float] = {
    "m": 1.0,
    "cm": 0.01,
    "mm": 0.001,
    "inch": 0.0254,
    "cmu": 0.0254 / 0.45,  # CMU Graphics Lab: 1/0.45 inch
}
#: Thigh + shank bone length (m) a human skeleton's legs have in ``units="auto"``.
HUMAN_LEG_M = (0.55, 1.15)
CHANNEL_NAMES = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
#: Body part words (names normalised, side removed) -> SMPL keypoint name without side.
PART_KEYPOINTS: dict[str, str] = {
    **dict.fromkeys(("upleg", "upperleg", "thigh", "femur", "hip"), "hip"),
    **dict.fromkeys(("leg", "lowerleg", "knee", "shin", "calf", "shank", "tibia"), "knee"),
    **dict.fromkeys(("foot", "ankle"), "ankle"),
    **dict.fromkeys(("toebase", "toe", "toes", "ball"), "foot"),
    **dict.fromkeys(("arm", "upperarm", "shoulder", "humerus"), "shoulder"),
    **dict.fromkeys(("forearm", "lowerarm", "elbow"), "elbow"),
    **dict.fromkeys(("hand", "wrist"), "wrist"),
}
_SIDES = {"left": "left", "right": "right", "l": "left", "r": "right"}
LEG_KEYPOINTS = tuple(f"{s}_{p}" for s in ("left", "right") for p in ("hip", "knee", "ankle", "foot"))
REQUIRED_KEYPOINTS = ("pelvis", *LEG_KEYPOINTS, "spine3", "neck")


@dataclasses.dataclass(frozen=True)
class BvhJoint:
    """One node of the hierarchy: ``offset`` (3,) in file units in the parent's frame (Y up),
    ``channels`` its channel names in file order (empty for an End Site), ``parent`` the index
    of its parent (-1 for the root)."""

    name: str
    parent: int
    offset: np.ndarray
    channels: tuple[str, ...]
    end_site: bool = False


def read_bvh(path: str | os.PathLike, units: str | float = "auto", keep_rest: bool = False) -> KeypointMotion:
    """Read a BVH file: keypoints (T, K, 3) in metres in MuJoCo's Z-up world, with the joints'
    world rotations (T, K, 3, 3) (see the module docstring for units, names and frames).

    Leading rest-pose frames are dropped unless ``keep_rest`` (module docstring, "Rest frames"):
    the motion's ``first_frame`` is then the file's first frame kept and ``notes`` says what was
    dropped; a rest skeleton with bent knees is listed in ``problems``."""
    path = Path(path)
    joints, frames, frame_time = parse_bvh(path)
    scale = unit_scale(path, joints, units)
    positions, rotations = bvh_forward_kinematics(joints, frames)
    names = keypoint_names(path, joints)
    motion = KeypointMotion(
        names=names,
        positions_m=y_up_to_z_up(positions * scale),
        rate_hz=1.0 / frame_time,
        loop=False,
        source=str(path),
        parents=tuple(j.parent for j in joints),
        rotations=Y_UP_TO_Z_UP @ rotations,
    )
    if not keep_rest:
        rest = leading_rest_frames(motion.positions_m, names, motion.rate_hz, motion.parents)
        if rest.count:
            motion = motion.frames(rest.count, motion.num_frames, rest.note())
    problem = bent_rest_legs(rest_knee_bends_deg(path, joints), motion.positions_m, names)
    return dataclasses.replace(motion, problems=(problem,)) if problem else motion


def rest_knee_bends_deg(path: Path, joints: list[BvhJoint]) -> dict[str, float]:
    """``{"left": deg, "right": deg}``: each leg's knee bend in the rest skeleton, the angle between
    the knee's and the ankle's OFFSET (:func:`~musclerl.motion.source_checks.rest_knee_bend_deg`)."""
    index = keypoint_joints(path, joints)
    return {
        side: rest_knee_bend_deg(joints[index[f"{side}_knee"]].offset, joints[index[f"{side}_ankle"]].offset)
        for side in ("left", "right")
    }


def parse_bvh(path: Path) -> tuple[list[BvhJoint], np.ndarray, float]:
    """The hierarchy (parents before children), the frames (T, C) and the frame time (s)."""
    text = read_text(path, "BVH file")
    split = re.search(r"^\s*MOTION\s*$", text, flags=re.MULTILINE)
    if not text.lstrip().startswith("HIERARCHY") or split is None:
        raise InputError(path, "not a BVH file: expected HIERARCHY ... MOTION sections")
    joints = _parse_hierarchy(path, text[: split.start()].split()[1:])
    width = sum(len(j.channels) for j in joints)
    frames, frame_time = _parse_motion(path, text[split.end() :].splitlines(), width)
    return joints, frames, frame_time


def _parse_hierarchy(path: Path, tokens: list[str]) -> list[BvhJoint]:
    joints: list[dict] = []
    stack: list[int] = []  # open blocks
    pending: int | None = None  # a joint named, its block not yet open
    i = 0

    def take(count: int, what: str) -> list[str]:
        nonlocal i
        if i + count > len(tokens):
            raise InputError(path, f"HIERARCHY ends inside {what}")
        i += count
        return tokens[i - count : i]

    while i < len(tokens):
        word = take(1, "a block")[0]
        if word in ("ROOT", "JOINT", "End"):
            if word == "ROOT" and joints:
                raise InputError(path, "more than one ROOT (one skeleton per file is read)")
            if word != "ROOT" and not stack:
                raise InputError(path, f"{word} outside the ROOT block")
            name = take(1, word)[0]
            if word == "End":
                if name != "Site":
                    raise InputError(path, f"'End {name}' (expected 'End Site')")
                name = f"{joints[stack[-1]]['name']}_end"
            parent = stack[-1] if stack else -1
            joints.append(dict(name=name, parent=parent, offset=None, channels=(), end_site=word == "End"))
            pending = len(joints) - 1
        elif word == "{":
            if pending is None:
                raise InputError(path, "'{' without a ROOT, JOINT or End Site before it")
            stack.append(pending)
            pending = None
        elif word == "}":
            if not stack:
                raise InputError(path, "unbalanced '}' in HIERARCHY")
            stack.pop()
        elif word in ("OFFSET", "CHANNELS"):
            if not stack:
                raise InputError(path, f"{word} outside a joint block")
            joint = joints[stack[-1]]
            if word == "OFFSET":
                joint["offset"] = _numbers(path, take(3, "an OFFSET"), f"OFFSET of {joint['name']}")
                continue
            count = take(1, "CHANNELS")[0]
            if not count.isdigit() or joint["end_site"]:
                raise InputError(path, f"bad CHANNELS line for {joint['name']}")
            listed = _listed_channels(tokens, i)
            if int(count) != listed:
                raise InputError(
                    path, f"joint {joint['name']}: CHANNELS {count}, but {listed} channel names follow it"
                )
            if int(count) > 6:
                raise InputError(path, f"joint {joint['name']}: CHANNELS {count} (at most 6)")
            channels = tuple(take(int(count), "CHANNELS"))
            unknown = [c for c in channels if c not in CHANNEL_NAMES]
            if unknown or len(set(channels)) != len(channels):
                raise InputError(
                    path,
                    f"joint {joint['name']}: unknown or repeated channel(s) {', '.join(unknown or channels)} "
                    f"(expected {', '.join(CHANNEL_NAMES)})",
                )
            joint["channels"] = channels
        else:
            raise InputError(path, f"unknown word '{word[:40]}' in HIERARCHY")
    if stack or pending is not None or not joints:
        raise InputError(path, "HIERARCHY is incomplete (unclosed '{' or no ROOT)")
    missing = [j["name"] for j in joints if j["offset"] is None]
    if missing:
        raise InputError(path, f"no OFFSET for {', '.join(missing[:5])}")
    return [BvhJoint(**j) for j in joints]


#: words that end a CHANNELS line's list of names (the next statement of the HIERARCHY)
_HIERARCHY_WORDS = frozenset(("ROOT", "JOINT", "End", "{", "}", "OFFSET", "CHANNELS", "MOTION"))


def _listed_channels(tokens: list[str], start: int) -> int:
    """How many words after a CHANNELS count (``tokens[start:]``) stand where channel names do: up
    to the next statement, so a count that disagrees with its list is told apart from a bad name."""
    end = start
    while end < len(tokens) and tokens[end] not in _HIERARCHY_WORDS:
        end += 1
    return end - start


def _numbers(path: Path, words: list[str], what: str) -> np.ndarray:
    try:
        values = np.array([float(w) for w in words])
    except ValueError:
        raise InputError(path, f"{what}: non-numeric value in {' '.join(words)[:60]}") from None
    if not np.all(np.isfinite(values)):
        raise InputError(path, f"{what} contains NaN or inf")
    return values


def _parse_motion(path: Path, lines: list[str], width: int) -> tuple[np.ndarray, float]:
    lines = [ln for ln in lines if ln.strip()]
    header = [ln.split(":", 1) for ln in lines[:2]]
    if len(header) < 2 or [h[0].strip() for h in header] != ["Frames", "Frame Time"]:
        raise InputError(path, "MOTION must start with 'Frames: N' and 'Frame Time: seconds'")
    try:
        count, frame_time = int(header[0][1]), float(header[1][1])
    except ValueError:
        raise InputError(path, "MOTION: Frames must be an integer and Frame Time a number") from None
    if count < 1 or not (np.isfinite(frame_time) and frame_time > 0):
        raise InputError(path, f"MOTION: Frames {count} and Frame Time {frame_time} must be > 0")
    rows = [ln.split() for ln in lines[2:]]
    if len(rows) != count:
        raise InputError(path, f"MOTION says {count} frames, the file has {len(rows)} (truncated?)")
    for f, row in enumerate(rows):
        if len(row) != width:
            raise InputError(path, f"frame {f} has {len(row)} values, the HIERARCHY has {width} channels")
    try:
        frames = np.array(rows, dtype=float).reshape(count, width)
    except ValueError:
        raise InputError(path, "MOTION contains non-numeric values") from None
    if not np.all(np.isfinite(frames)):
        f, c = np.argwhere(~np.isfinite(frames))[0]
        raise InputError(path, f"frame {f}, value {c}: NaN or inf")
    return frames, frame_time


def bvh_forward_kinematics(joints: list[BvhJoint], frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Joint positions (T, J, 3) in file units and world rotations (T, J, 3, 3) (joint frame ->
    world), both in the file's Y-up world, from frames (T, C) (module docstring's equations)."""
    frames = np.asarray(frames, dtype=float)
    n = len(frames)
    pos = np.zeros((n, len(joints), 3))
    rot = np.zeros((n, len(joints), 3, 3))
    col = 0
    for j, joint in enumerate(joints):
        values = frames[:, col : col + len(joint.channels)]
        col += len(joint.channels)
        local_t = np.broadcast_to(joint.offset, (n, 3)).copy()
        axes = ""
        angles = []
        for k, channel in enumerate(joint.channels):
            if channel.endswith("position"):
                local_t[:, "XYZ".index(channel[0])] = values[:, k]
            else:
                axes += channel[0]
                angles.append(values[:, k])
        local_r = (
            intrinsic_euler_to_matrix(np.stack(angles, axis=-1), axes, degrees=True)
            if axes
            else np.broadcast_to(np.eye(3), (n, 3, 3))
        )
        if joint.parent < 0:
            pos[:, j], rot[:, j] = local_t, local_r
        else:
            parent_r = rot[:, joint.parent]
            pos[:, j] = pos[:, joint.parent] + np.einsum("tij,tj->ti", parent_r, local_t)
            rot[:, j] = parent_r @ local_r
    assert col == frames.shape[1], (col, frames.shape)
    return pos, rot


def unit_scale(path: Path, joints: list[BvhJoint], units: str | float = "auto") -> float:
    """Metres per file unit: ``units`` (a :data:`UNIT_SCALES` name or a number), or for
    ``"auto"`` the one unit that gives the legs a human length (module docstring)."""
    if not isinstance(units, str):
        scale = float(units)
    elif units in UNIT_SCALES:
        scale = UNIT_SCALES[units]
    elif units != "auto":
        try:
            scale = float(units)
        except ValueError:
            raise InputError(
                path, f"unknown BVH units '{units}' (auto, {', '.join(UNIT_SCALES)} or metres per unit)"
            ) from None
    else:
        leg = leg_length(path, joints)
        fits = [name for name, s in UNIT_SCALES.items() if HUMAN_LEG_M[0] <= leg * s <= HUMAN_LEG_M[1]]
        if not fits:
            raise InputError(
                path,
                f"legs (thigh + shank) are {leg:.4g} file units long: no unit of {', '.join(UNIT_SCALES)} "
                f"makes that {HUMAN_LEG_M[0]}-{HUMAN_LEG_M[1]} m; give the units",
            )
        return UNIT_SCALES[fits[0]]
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(path, f"BVH units must be > 0 metres per unit, got {units}")
    return scale


def leg_length(path: Path, joints: list[BvhJoint]) -> float:
    """Thigh + shank bone length in file units, mean of both legs (from the OFFSETs)."""
    index = keypoint_joints(path, joints)
    lengths = [
        float(np.linalg.norm(joints[index[f"{side}_{p}"]].offset))
        for side in ("left", "right")
        for p in ("knee", "ankle")
    ]
    return 0.5 * sum(lengths)


def keypoint_names(path: Path, joints: list[BvhJoint]) -> tuple[str, ...]:
    """One unique name per joint: its keypoint (:func:`keypoint_joints`), else its file name."""
    named = {j: kp for kp, j in keypoint_joints(path, joints).items()}
    names: list[str] = []
    for j, joint in enumerate(joints):
        name = named.get(j, joint.name)
        if name in names or (j not in named and name in named.values()):
            name = f"{name}_{j}"
        names.append(name)
    return tuple(names)


def keypoint_joints(path: Path, joints: list[BvhJoint]) -> dict[str, int]:
    """SMPL keypoint name -> joint index (module docstring's rules); InputError listing the
    required keypoints the skeleton lacks."""
    depth = [0] * len(joints)
    for j, joint in enumerate(joints):
        depth[j] = depth[joint.parent] + 1 if joint.parent >= 0 else 0
    found: dict[str, int] = {}
    for j, joint in enumerate(joints):
        if joint.end_site:
            continue
        keypoint = _keypoint_of(joint.name)
        if keypoint is not None and (keypoint not in found or depth[j] > depth[found[keypoint]]):
            found[keypoint] = j
    for side in ("left", "right"):
        ankle, toe = found.get(f"{side}_ankle"), f"{side}_foot"
        if ankle is not None and toe not in found:
            ends = [j for j, joint in enumerate(joints) if joint.parent == ankle and joint.end_site]
            if len(ends) == 1:
                found[toe] = ends[0]
    for keypoint in ("neck", "head"):
        named = [
            j for j, joint in enumerate(joints) if _normalised(joint.name) == keypoint and not joint.end_site
        ]
        if named:
            found[keypoint] = min(named, key=lambda j: depth[j])
    if "left_hip" in found and "right_hip" in found:
        pelvis = _common_ancestor(joints, found["left_hip"], found["right_hip"])
        if pelvis is not None:
            found["pelvis"] = pelvis
    if "neck" in found and joints[found["neck"]].parent not in (-1, found.get("pelvis")):
        found["spine3"] = joints[found["neck"]].parent
    missing = [k for k in REQUIRED_KEYPOINTS if k not in found]
    if missing:
        have = ", ".join(j.name for j in joints if not j.end_site)
        raise InputError(path, f"skeleton lacks {', '.join(missing)} (joints: {have[:300]})")
    return found


def _normalised(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rsplit(":", 1)[-1].rsplit("|", 1)[-1].lower())


def _keypoint_of(name: str) -> str | None:
    """``left_knee`` for ``LeftLeg``, ``L_Knee``, ``knee_l``, ...; None for other names."""
    norm = _normalised(name)
    for word in ("left", "right"):
        for part in (norm.removeprefix(word), norm.removesuffix(word)):
            if part != norm and part in PART_KEYPOINTS:
                return f"{word}_{PART_KEYPOINTS[part]}"
    for part, side in ((norm[1:], norm[:1]), (norm[:-1], norm[-1:])):
        if side in ("l", "r") and part in PART_KEYPOINTS:
            return f"{_SIDES[side]}_{PART_KEYPOINTS[part]}"
    return None


def _common_ancestor(joints: list[BvhJoint], a: int, b: int) -> int | None:
    above = set()
    while a >= 0:
        a = joints[a].parent
        above.add(a)
    while b >= 0:
        b = joints[b].parent
        if b in above:
            return b if b >= 0 else None
    return None


def bvh_details(path: str | os.PathLike) -> dict:
    """What ``musclerl info`` adds for a BVH file: its joint count, the metres per file unit
    ``units="auto"`` chose (:func:`unit_scale`) and the rest skeleton's knee bends (deg)."""
    path = Path(path)
    joints, _, _ = parse_bvh(path)
    bends = {side: round(deg, 2) for side, deg in rest_knee_bends_deg(path, joints).items()}
    return {"joints": len(joints), "metres_per_unit": unit_scale(path, joints), "rest_knee_bend_deg": bends}
