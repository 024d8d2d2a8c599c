"""DeepMimic ``humanoid3d`` motion clips (JSON ``.txt``): joint positions over time.

A clip is JSON ``{"Loop": "wrap" | "none", "Frames": [[...44 numbers...], ...]}``. Each frame:
duration (s, the time to the next frame; 0 on the last), root position (3, metres), root rotation
(w, x, y, z) in the world, then in each joint's parent frame: chest, neck, right hip (quaternions),
right knee (1 angle, radians), right ankle, right shoulder (quaternions), right elbow (1), left hip
(quaternion), left knee (1), left ankle, left shoulder (quaternions), left elbow (1).
Revolute joints (knees, elbows) turn about their local Z axis (DeepMimic's convention; knee
flexion is negative and swings the shank backwards).

DeepMimic's world is Y-up with the character facing +X and its right side at +Z; joint
positions are rotated into MuJoCo's Z-up world by ``(x, y, z)_mujoco = (x, -z, y)`` (see
:mod:`musclerl.motion.keypoints`), so a walk along DeepMimic's +X stays along +X.

Skeleton offsets (metres, parent joint frame, Y up) are those of DeepMimic's character file
``data/characters/humanoid3d.txt`` (xbpeng/DeepMimic, MIT licence), ``AttachX/Y/Z`` of each joint.
Three extra points per side are derived from the same file's ``BodyDefs`` so feet and head have
direction: the head centre (neck + (0, 0.175, 0), the neck body's sphere centre), and the toe and
heel at the front and back of the bottom of the foot box (box centre (0.045, -0.0225, 0) from the
ankle, size 0.177 x 0.055 x 0.09: toe (0.1335, -0.05, 0), heel (-0.0435, -0.05, 0)).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import read_text
from musclerl.geometry.rotations import quat_wxyz_to_matrix
from musclerl.motion.keypoints import Y_UP_TO_Z_UP, KeypointMotion, y_up_to_z_up

FRAME_WIDTH = 44
#: No frame value reaches this: durations (s), root position (m), quaternion components, angles (rad).
MAX_ABS_VALUE = 1.0e3

# (name, parent, offset in the parent's frame (m, Y up), kind) in DeepMimic's joint order; kind is
# 'quat' (4 numbers in the frame), 'revolute' (1 angle about local Z) or 'fixed' (none).
_JOINTS: tuple[tuple[str, str | None, tuple[float, float, float], str], ...] = (
    ("root", None, (0.0, 0.0, 0.0), "root"),
    ("chest", "root", (0.0, 0.236151, 0.0), "quat"),
    ("neck", "chest", (0.0, 0.223894, 0.0), "quat"),
    ("right_hip", "root", (0.0, 0.0, 0.084887), "quat"),
    ("right_knee", "right_hip", (0.0, -0.421546, 0.0), "revolute"),
    ("right_ankle", "right_knee", (0.0, -0.409870, 0.0), "quat"),
    ("right_shoulder", "chest", (-0.02405, 0.24350, 0.18311), "quat"),
    ("right_elbow", "right_shoulder", (0.0, -0.274788, 0.0), "revolute"),
    ("right_wrist", "right_elbow", (0.0, -0.258947, 0.0), "fixed"),
    ("left_hip", "root", (0.0, 0.0, -0.084887), "quat"),
    ("left_knee", "left_hip", (0.0, -0.421546, 0.0), "revolute"),
    ("left_ankle", "left_knee", (0.0, -0.409870, 0.0), "quat"),
    ("left_shoulder", "chest", (-0.02405, 0.24350, -0.18311), "quat"),
    ("left_elbow", "left_shoulder", (0.0, -0.274788, 0.0), "revolute"),
    ("left_wrist", "left_elbow", (0.0, -0.258947, 0.0), "fixed"),
    ("head", "neck", (0.0, 0.175, 0.0), "fixed"),
    ("right_toe", "right_ankle", (0.1335, -0.05, 0.0), "fixed"),
    ("right_heel", "right_ankle", (-0.0435, -0.05, 0.0), "fixed"),
    ("left_toe", "left_ankle", (0.1335, -0.05, 0.0), "fixed"),
    ("left_heel", "left_ankle", (-0.0435, -0.05, 0.0), "fixed"),
)
DEEPMIMIC_KEYPOINT_NAMES: tuple[str, ...] = tuple(j[0] for j in _JOINTS)
DEEPMIMIC_PARENTS: tuple[int, ...] = tuple(
    -1 if parent is None else DEEPMIMIC_KEYPOINT_NAMES.index(parent) for _, parent, _, _ in _JOINTS
)


def _rot_z(angle: np.ndarray) -> np.ndarray:
    """Rotations (T, 3, 3) about Z by ``angle`` (T,) radians."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.zeros((len(angle), 3, 3))
    out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1], out[:, 2, 2] = c, -s, s, c, 1.0
    return out


def _quaternion_columns() -> list[int]:
    """First column of each quaternion (root and 'quat' joints) in a frame's 44 values."""
    starts, col = [], 4  # duration, root position (3)
    for _, _, _, kind in _JOINTS:
        if kind in ("root", "quat"):
            starts.append(col)
        col += {"root": 4, "quat": 4, "revolute": 1}.get(kind, 0)
    return starts


def deepmimic_forward_kinematics(frames: np.ndarray) -> np.ndarray:
    """Keypoint positions (T, K, 3) in DeepMimic's Y-up world from frames (T, 44)."""
    return _forward_kinematics(frames)[0]


def _forward_kinematics(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keypoint positions (T, K, 3) and world rotations (T, K, 3, 3) (joint frame -> world) in
    DeepMimic's Y-up world from frames (T, 44); a fixed point takes its parent's rotation."""
    frames = np.asarray(frames, dtype=float)
    n = frames.shape[0]
    col = 1
    root_pos = frames[:, col : col + 3]
    col += 3
    world_rot: dict[str, np.ndarray] = {}
    pos: dict[str, np.ndarray] = {}
    for name, parent, offset, kind in _JOINTS:
        if kind == "root":
            local = quat_wxyz_to_matrix(frames[:, col : col + 4])
            col += 4
            world_rot[name], pos[name] = local, root_pos
            continue
        pos[name] = pos[parent] + world_rot[parent] @ np.asarray(offset)
        if kind == "quat":
            local = quat_wxyz_to_matrix(frames[:, col : col + 4])
            col += 4
        elif kind == "revolute":
            local = _rot_z(frames[:, col])
            col += 1
        else:
            local = np.broadcast_to(np.eye(3), (n, 3, 3))
        world_rot[name] = world_rot[parent] @ local
    assert col == FRAME_WIDTH, col
    names = DEEPMIMIC_KEYPOINT_NAMES
    return np.stack([pos[n] for n in names], axis=1), np.stack([world_rot[n] for n in names], axis=1)


def read_deepmimic(path: str | os.PathLike) -> KeypointMotion:
    """Read a DeepMimic humanoid3d clip; keypoints in MuJoCo's Z-up world (see module docstring)."""
    path = Path(path)
    text = read_text(path, "DeepMimic clip")
    try:
        clip = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(path, f"not valid JSON (line {err.lineno}: {err.msg})") from None
    except RecursionError:
        raise InputError(path, "not a DeepMimic clip: JSON nested too deeply") from None
    if not isinstance(clip, dict) or "Frames" not in clip:
        raise InputError(path, "not a DeepMimic clip: missing key 'Frames'")
    raw = clip["Frames"]
    if not isinstance(raw, list) or not raw:
        raise InputError(path, "'Frames' must be a non-empty list of frames")
    for i, frame in enumerate(raw):
        if not isinstance(frame, list) or len(frame) != FRAME_WIDTH:
            size = len(frame) if isinstance(frame, list) else type(frame).__name__
            raise InputError(path, f"frame {i} has {size} values, expected {FRAME_WIDTH} (humanoid3d)")
    try:
        frames = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise InputError(path, "'Frames' contains non-numeric values") from None
    if not np.all(np.isfinite(frames)):
        raise InputError(path, "'Frames' contains NaN or inf")
    if np.max(np.abs(frames)) > MAX_ABS_VALUE:
        f, k = np.unravel_index(np.argmax(np.abs(frames)), frames.shape)
        raise InputError(path, f"frame {f}, value {k}: {frames[f, k]:.3g} is absurd (> {MAX_ABS_VALUE:g})")
    for c in _quaternion_columns():
        norms = np.linalg.norm(frames[:, c : c + 4], axis=1)
        if np.any(norms < 1e-6):
            f = int(np.argmax(norms < 1e-6))
            raise InputError(path, f"frame {f}, values {c}-{c + 3}: a zero quaternion is not a rotation")
    loop_text = str(clip.get("Loop", "none")).lower()
    if loop_text not in ("wrap", "none", "clamp"):
        raise InputError(path, f"unknown Loop '{clip.get('Loop')}' (expected wrap, none or clamp)")
    durations = frames[:-1, 0] if len(frames) > 1 else frames[:, 0]
    if np.any(durations <= 0):
        raise InputError(path, "frame durations (first value of each frame) must be > 0")
    if np.ptp(durations) > 1e-3 * durations.mean():
        warnings.warn(
            f"{path}: frame durations vary ({durations.min():.4g}-{durations.max():.4g} s); using their mean",
            stacklevel=2,
        )
    rate_hz = float(1.0 / durations.mean())
    positions, rotations = _forward_kinematics(frames)
    return KeypointMotion(
        names=DEEPMIMIC_KEYPOINT_NAMES,
        positions_m=y_up_to_z_up(positions),
        rate_hz=rate_hz,
        loop=loop_text == "wrap",
        source=str(path),
        parents=DEEPMIMIC_PARENTS,
        rotations=Y_UP_TO_Z_UP @ rotations,
    )
