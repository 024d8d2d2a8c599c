"""AMASS / SMPL motion files (``.npz``): reader, writer, and a built-in neutral SMPL skeleton.

Layouts read by :func:`read_amass`:

=================  ==========================================================================
layout             keys
=================  ==========================================================================
SMPL-H (AMASS)     ``poses`` (T, 156) = root 3 + body 63 + hands 90; ``trans`` (T, 3);
                   ``mocap_framerate``; ``betas`` (16,); ``gender``
SMPL-X (AMASS)     ``root_orient`` (T, 3), ``pose_body`` (T, 63), ``trans`` (T, 3);
                   ``mocap_frame_rate``; ``betas``; ``gender`` (``poses`` (T, 165) also works)
SMPL               ``poses`` (T, 72) = root 3 + 23 body joints (incl. the two hand joints)
=================  ==========================================================================

Either rate key is accepted (``mocap_framerate`` or ``mocap_frame_rate``); axis-angle in radians.

Joint positions come from forward kinematics of a built-in neutral SMPL rest skeleton
(:data:`SMPL_NEUTRAL_OFFSETS_M`). SMPL rotates each joint about its rest position and adds
``trans`` to the pelvis *rest* position, so ``pelvis = trans + offsets[0]`` (not rotated) and
``joint_j = joint_parent + R_world_parent @ offsets[j]``. Hand, jaw and eye rotations of SMPL-H/X
do not move the 24 SMPL joints and are ignored (the SMPL hand joints 22/23 hang from the wrists).

Frames: AMASS stores motions in a Z-up world (its ``root_orient`` already includes the turn from
SMPL's Y-up body frame), which is MuJoCo's convention, so joint positions are returned as they
come. SMPL files from other sources that live in SMPL's Y-up frame can be read with ``y_up=True``:
joints, ``root_orient`` and ``trans`` are then rotated by
:data:`~musclerl.motion.keypoints.Y_UP_TO_Z_UP`.

Built-in skeletons: SMPL and SMPL-H clips use SMPL's neutral body (:data:`SMPL_NEUTRAL_OFFSETS_M`,
pelvis-to-ankle 0.87 m), SMPL-X clips SMPL-X's neutral body (:data:`SMPLX_NEUTRAL_OFFSETS_M`),
because ``trans`` is relative to the model's own pelvis rest position (0.128 m apart between the
two). Both have zero shape: the clip's betas are ignored, so bone lengths are those of an average
adult, and SMPL-H's gendered bodies differ by ~2 cm in pelvis position. With the user's own model file
(``model_path``: a model ``.npz`` read with NumPy, or a folder for the optional ``smplx``
package) the rest skeleton comes from the clip's betas instead.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, read_npz
from musclerl.geometry.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from musclerl.motion.keypoints import Y_UP_TO_Z_UP, KeypointMotion

SMPL_JOINT_NAMES: tuple[str, ...] = (
    "pelvis",
    "left_hip",
    "right_hip",
    "spine1",
    "left_knee",
    "right_knee",
    "spine2",
    "left_ankle",
    "right_ankle",
    "spine3",
    "left_foot",
    "right_foot",
    "neck",
    "left_collar",
    "right_collar",
    "head",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hand",
    "right_hand",
)
SMPL_PARENTS: tuple[int, ...] = (
    -1,
    0,
    0,
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    9,
    9,
    12,
    13,
    14,
    16,
    17,
    18,
    19,
    20,
    21,
)

#: Neutral SMPL rest skeleton, metres, in SMPL's body frame (Y up, facing +Z, the body's left at
#: +X). Row 0 is the pelvis rest position; row j > 0 is joint j minus its parent. These are the
#: joints of the SMPL neutral model with zero shape (J_regressor applied to v_template), as
#: published in the EDGE code (Stanford-TML/EDGE, vis.py, ``smpl_offsets``); the first 22 rows
#: agree to 1e-6 m with an independent copy of the same skeleton (SMPL_BONE_OFFSETS_22 in a
#: public pose-estimation repository) and with the SMPL-H neutral joints.
SMPL_NEUTRAL_OFFSETS_M = np.array(
    [
        [-0.00179506, -0.22333345, 0.02821913],
        [0.06951974, -0.09140623, -0.00681534],
        [-0.06767048, -0.09052168, -0.00431982],
        [-0.00253286, 0.10896323, -0.02669631],
        [0.03427655, -0.37519860, -0.00449580],
        [-0.03829005, -0.38256901, -0.00885003],
        [0.00548703, 0.13518043, 0.00109247],
        [-0.01359570, -0.39796036, -0.04369333],
        [0.01577377, -0.39841465, -0.04231180],
        [0.00145700, 0.05292223, 0.02542457],
        [0.02635814, -0.05579088, 0.11928840],
        [-0.02537175, -0.04814396, 0.12334795],
        [-0.00277839, 0.21387036, -0.04285703],
        [0.07884474, 0.12174930, -0.03408961],
        [-0.08175919, 0.11883283, -0.03861529],
        [0.00515184, 0.06496961, 0.05134897],
        [0.09097693, 0.03046890, -0.00886815],
        [-0.09601238, 0.03255117, -0.00914307],
        [0.25961225, -0.01277206, -0.02745644],
        [-0.25374196, -0.01332922, -0.02140098],
        [0.24923363, 0.00898603, -0.00117092],
        [-0.25529808, 0.00777229, -0.00555919],
        [0.08404218, -0.00816154, -0.01494537],
        [-0.08462193, -0.00611726, -0.01031508],
    ]
)

#: Neutral SMPL-X rest joints (zero shape), metres, SMPL body frame as above, used for SMPL-X clips
#: (SMPL-X's pelvis sits 0.128 m lower in the body frame than SMPL's, and its legs are longer).
#: Rows 0-21 are SMPL-X joints 0-21; rows 22/23 (SMPL's hand joints) are SMPL-X's left/right
#: middle-finger first knuckles (joints 28/43). Source: the SMPL-X rest-pose table ``_SKELETON_J``
#: vendored in a public Apache-2.0 standalone SMPL forward-kinematics port (HuggingFace,
#: "gear_sonic" SMPL path); its pelvis row matches the "# smplx" root offset
#: (0.00312326, -0.35140747, 0.01203655) used by an independent AMASS SMPL-X processing script.
SMPLX_NEUTRAL_REST_JOINTS_M = np.array(
    [
        [0.00312326, -0.35140747, 0.01203655],
        [0.06131265, -0.44417095, -0.01396464],
        [-0.06014422, -0.45531547, -0.00921382],
        [0.00036056, -0.24151686, -0.01558108],
        [0.11600811, -0.82292438, -0.02336070],
        [-0.10435417, -0.81769556, -0.02603770],
        [0.00980826, -0.10966361, -0.02152107],
        [0.07255466, -1.22598386, -0.05523665],
        [-0.08893736, -1.22842336, -0.04622997],
        [-0.00152215, -0.05742845, 0.00692583],
        [0.11981197, -1.28398120, 0.06297968],
        [-0.12774977, -1.28675175, 0.07281902],
        [-0.01368661, 0.10773861, -0.02468951],
        [0.04484200, 0.02751527, -0.00029465],
        [-0.04921708, 0.02691022, -0.00647407],
        [0.01109687, 0.26819041, -0.00395225],
        [0.16408104, 0.08524330, -0.01575559],
        [-0.15179482, 0.08043467, -0.01914260],
        [0.41820389, 0.01309278, -0.05821444],
        [-0.42294437, 0.04394219, -0.04560968],
        [0.67019063, 0.03631401, -0.06068652],
        [-0.67221183, 0.03940964, -0.06093487],
        [0.77958816, 0.02998634, -0.06466734],
        [-0.77958822, 0.02998770, -0.06466869],
    ]
)


def offsets_from_rest_joints(joints: np.ndarray) -> np.ndarray:
    """Rest joints (24, 3) -> offsets (24, 3): row 0 the pelvis, row j joint minus its parent."""
    joints = np.asarray(joints, dtype=float)
    offsets = joints - joints[np.maximum(SMPL_PARENTS, 0)]
    offsets[0] = joints[0]
    return offsets


SMPLX_NEUTRAL_OFFSETS_M = offsets_from_rest_joints(SMPLX_NEUTRAL_REST_JOINTS_M)

# Pose-vector widths -> (model type, number of body joints after the root).
_POSE_LAYOUTS = {72: ("smpl", 23), 156: ("smplh", 21), 165: ("smplx", 21), 66: ("smplh", 21)}
# Index of the joint standing in for SMPL's hand joints (22, 23) in smplx's SMPL-H / SMPL-X output
# (the middle finger's first knuckle).
_HAND_PROXY = {"smplh": (25, 40), "smplx": (28, 43)}


@dataclasses.dataclass(frozen=True)
class SmplMotion:
    """An SMPL-family clip with the 24 SMPL joint positions.

    ``joints_m`` (T, 24, 3): world positions, metres, Z up. ``root_orient`` (T, 3) and
    ``body_pose`` (T, J, 3) are axis-angle in radians (J = 23 for SMPL, 21 for SMPL-H/X),
    ``trans_m`` (T, 3) the SMPL translation (pelvis = trans + rest pelvis offset).
    """

    joints_m: np.ndarray  # (T, 24, 3)
    rate_hz: float
    root_orient: np.ndarray  # (T, 3)
    body_pose: np.ndarray  # (T, J, 3)
    trans_m: np.ndarray  # (T, 3)
    betas: np.ndarray  # (B,)
    gender: str
    source: str = ""
    model_type: str = "smplh"
    skeleton: str = "smpl-neutral"  # 'smpl-neutral', 'smplx-neutral' or the user's model path

    @property
    def num_frames(self) -> int:
        return int(self.joints_m.shape[0])

    @property
    def duration_s(self) -> float:
        return (self.num_frames - 1) / self.rate_hz

    def keypoints(self) -> KeypointMotion:
        """The 24 joints as a :class:`KeypointMotion` (names :data:`SMPL_JOINT_NAMES`)."""
        return KeypointMotion(
            names=SMPL_JOINT_NAMES,
            positions_m=self.joints_m,
            rate_hz=self.rate_hz,
            loop=False,
            source=self.source,
            parents=SMPL_PARENTS,
            rotations=smpl_world_rotations(self.root_orient, self.body_pose),
        )


def smpl_world_rotations(root_orient: np.ndarray, body_pose: np.ndarray) -> np.ndarray:
    """World rotations (T, 24, 3, 3) (joint frame -> world) of the 24 SMPL joints.

    ``root_orient`` (T, 3) and ``body_pose`` (T, J, 3) (J <= 23; missing joints keep their rest
    rotation) are axis-angle in radians; joint ``j``'s frame is its parent's turned by its own
    rotation, and turns the bones hanging from ``j``.
    """
    root_orient = np.asarray(root_orient, dtype=float).reshape(-1, 3)
    n = root_orient.shape[0]
    body_pose = np.asarray(body_pose, dtype=float).reshape(n, -1, 3)
    local = np.broadcast_to(np.eye(3), (n, 24, 3, 3)).copy()
    local[:, 0] = axis_angle_to_matrix(root_orient)
    n_body = min(body_pose.shape[1], 23)
    local[:, 1 : 1 + n_body] = axis_angle_to_matrix(body_pose[:, :n_body])
    world_rot = np.empty((n, 24, 3, 3))
    world_rot[:, 0] = local[:, 0]
    for j in range(1, 24):
        world_rot[:, j] = world_rot[:, SMPL_PARENTS[j]] @ local[:, j]
    return world_rot


def smpl_forward_kinematics(
    root_orient: np.ndarray,
    body_pose: np.ndarray,
    trans: np.ndarray,
    offsets: np.ndarray = SMPL_NEUTRAL_OFFSETS_M,
) -> np.ndarray:
    """Joint positions (T, 24, 3) of the SMPL skeleton.

    ``root_orient`` (T, 3) and ``body_pose`` (T, J, 3) as in :func:`smpl_world_rotations`;
    ``trans`` (T, 3) metres; ``offsets`` (24, 3) as in :data:`SMPL_NEUTRAL_OFFSETS_M`. Output is
    in the frame ``root_orient`` and ``trans`` are expressed in (Z-up world for AMASS).
    """
    world_rot = smpl_world_rotations(root_orient, body_pose)
    n = world_rot.shape[0]
    trans = np.asarray(trans, dtype=float).reshape(n, 3)
    offsets = np.asarray(offsets, dtype=float)
    joints = np.empty((n, 24, 3))
    joints[:, 0] = trans + offsets[0]
    for j in range(1, 24):
        p = SMPL_PARENTS[j]
        joints[:, j] = joints[:, p] + world_rot[:, p] @ offsets[j]
    return joints


def smpl_rest_offsets_from_model(
    model_path: str | os.PathLike, model_type: str, gender: str, betas: np.ndarray
) -> np.ndarray:
    """Rest skeleton offsets (24, 3) from the user's own SMPL / SMPL-H / SMPL-X model and a shape.

    ``model_path`` is either a model ``.npz`` (as AMASS ships SMPL-H, e.g. ``smplh/male/model.npz``,
    or ``SMPL_NEUTRAL.npz``): read with NumPy alone, joints = ``J_regressor @ (v_template +
    shapedirs @ betas)``, the model type told by its joint count (24, 52 or 55); or a folder /
    ``.pkl`` in the layout of the optional ``smplx`` package (``pip install 'musclerl[smpl]'``).
    The model files come from the SMPL websites under their licence. For SMPL-H/X the SMPL hand
    joints (22, 23) are stood in for by the middle fingers' first knuckles.
    """
    path = Path(model_path)
    if path.suffix.lower() == ".npz":
        joints = _rest_joints_npz(path, np.asarray(betas, dtype=float))
    else:
        joints = _rest_joints_smplx(path, model_type, gender, np.asarray(betas, dtype=float))
    kind = {24: "smpl", 52: "smplh", 55: "smplx"}.get(joints.shape[0])
    if kind is None:
        raise InputError(
            path, f"model has {joints.shape[0]} joints; expected 24 (SMPL), 52 (SMPL-H) or 55 (SMPL-X)"
        )
    if kind != "smpl":
        left, right = _HAND_PROXY[kind]
        joints = np.concatenate([joints[:22], joints[[left, right]]])
    return offsets_from_rest_joints(joints[:24])


def _rest_joints_npz(path: Path, betas: np.ndarray) -> np.ndarray:
    """All rest joints (J, 3) of a model ``.npz`` for shape ``betas``."""
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in ("v_template", "J_regressor", "shapedirs") if k not in z.files]
            if missing:
                raise InputError(path, f"not an SMPL-family model file: missing {', '.join(missing)}")
            template = np.asarray(z["v_template"], dtype=float)
            regressor = np.asarray(z["J_regressor"], dtype=float)
            shapedirs = np.asarray(z["shapedirs"], dtype=float)
    except InputError:
        raise
    except Exception as err:
        raise InputError(path, f"not a readable model .npz ({type(err).__name__})") from err
    n_vert = template.shape[0]
    if (
        template.shape != (n_vert, 3)
        or regressor.ndim != 2
        or regressor.shape[1] != n_vert
        or shapedirs.shape[:2] != (n_vert, 3)
    ):
        raise InputError(
            path,
            f"inconsistent model arrays: v_template {template.shape}, J_regressor "
            f"{regressor.shape}, shapedirs {shapedirs.shape}",
        )
    n_betas = min(shapedirs.shape[2], betas.size)
    shaped = template + shapedirs[:, :, :n_betas] @ betas[:n_betas]
    return regressor @ shaped


def _rest_joints_smplx(path: Path, model_type: str, gender: str, betas: np.ndarray) -> np.ndarray:
    """All rest joints of a model built by the optional ``smplx`` package (needs torch)."""
    try:
        import smplx
        import torch
    except ImportError as err:
        raise InputError(
            path,
            "SMPL model folder/.pkl given but the 'smplx' package is not installed "
            "(pip install 'musclerl[smpl]'), or pass a model .npz",
        ) from err
    gender = gender if gender in ("male", "female", "neutral") else "neutral"
    try:
        model = smplx.create(
            str(path), model_type=model_type, gender=gender, num_betas=betas.size, use_pca=False
        )
        n_betas = int(model.num_betas)
        with torch.no_grad():
            out = model(betas=torch.tensor(betas[None, :n_betas], dtype=torch.float32), return_verts=True)
        joints = out.joints[0].detach().cpu().numpy().astype(float)
    except Exception as err:  # smplx raises assorted errors for missing/mismatched files
        raise InputError(path, f"cannot build the {gender} {model_type} model: {err}") from err
    # smplx appends extra landmarks after the model's own joints; keep the model's joints only
    return joints[: {"smpl": 24, "smplh": 52, "smplx": 55}[model_type]]


def _scalar_str(value: np.ndarray) -> str:
    item = np.asarray(value).reshape(-1)[0] if np.asarray(value).size else ""
    return item.decode() if isinstance(item, bytes) else str(item)


def read_amass(
    path: str | os.PathLike, *, y_up: bool = False, model_path: str | os.PathLike | None = None
) -> SmplMotion:
    """Read an AMASS/SMPL ``.npz`` (see the module docstring) and compute the 24 joint positions.

    ``y_up``: the file is in SMPL's Y-up frame (not AMASS); rotate everything to Z-up.
    ``model_path``: the user's SMPL-family model (a ``.npz``, or a folder / ``.pkl`` for the optional
    ``smplx`` package) gives the skeleton for the file's betas (see
    :func:`smpl_rest_offsets_from_model`) instead of the built-in neutral one.
    """
    path = Path(path)
    data = read_npz(path)
    if "root_orient" in data and "pose_body" in data:
        root_orient = _array(data, "root_orient", path, width=3)
        body = _array(data, "pose_body", path)
        if body.shape[1] not in (63, 69):
            raise InputError(path, f"pose_body must be (T, 63) or (T, 69), got {body.shape}")
        surface = _scalar_str(data.get("surface_model_type", np.array("smplx"))).lower()
        model_type = "smpl" if body.shape[1] == 69 else ("smplh" if surface == "smplh" else "smplx")
    elif "poses" in data:
        poses = _array(data, "poses", path)
        if poses.shape[1] not in _POSE_LAYOUTS:
            raise InputError(
                path,
                f"poses has {poses.shape[1]} values per frame; expected 72 (SMPL), "
                "156 (SMPL-H) or 165 (SMPL-X)",
            )
        model_type, n_body = _POSE_LAYOUTS[poses.shape[1]]
        root_orient, body = poses[:, :3], poses[:, 3 : 3 + 3 * n_body]
    else:
        raise InputError(
            path,
            "no pose data: expected 'poses' or 'root_orient' + 'pose_body' "
            "(an AMASS shape.npz has only betas)",
        )
    n = root_orient.shape[0]
    if n < 1:
        raise InputError(path, "the motion has no frames")
    trans = _array(data, "trans", path, width=3) if "trans" in data else None
    if trans is None:
        raise InputError(path, "missing key 'trans' (root translation)")
    if trans.shape[0] != n:
        raise InputError(path, f"trans has {trans.shape[0]} frames but the poses have {n}")
    rate_key = next((k for k in ("mocap_framerate", "mocap_frame_rate") if k in data), None)
    if rate_key is None:
        raise InputError(path, "missing frame rate: neither 'mocap_framerate' nor 'mocap_frame_rate'")
    try:
        rate_hz = float(np.asarray(data[rate_key]).reshape(-1)[0])
    except (ValueError, TypeError, IndexError):
        raise InputError(path, f"'{rate_key}' is not a number") from None
    if not (np.isfinite(rate_hz) and rate_hz > 0):
        raise InputError(path, f"frame rate must be > 0, got {rate_hz}")
    betas = _array(data, "betas", path, ndim=1) if "betas" in data else np.zeros(10)
    gender = _scalar_str(data.get("gender", "neutral")) or "neutral"
    body_pose = body.reshape(n, -1, 3)

    if model_path is not None:
        offsets = smpl_rest_offsets_from_model(model_path, model_type, gender, betas)
        skeleton = str(model_path)
    elif model_type == "smplx":
        offsets, skeleton = SMPLX_NEUTRAL_OFFSETS_M, "smplx-neutral"
    else:
        offsets, skeleton = SMPL_NEUTRAL_OFFSETS_M, "smpl-neutral"
    if y_up:  # rotate the whole body about the origin: pelvis' = R pelvis, root' = R root
        root_orient = matrix_to_axis_angle(Y_UP_TO_Z_UP @ axis_angle_to_matrix(root_orient))
        trans = (trans + offsets[0]) @ Y_UP_TO_Z_UP.T - offsets[0]
    joints = smpl_forward_kinematics(root_orient, body_pose, trans, offsets)
    return SmplMotion(
        joints_m=joints,
        rate_hz=rate_hz,
        root_orient=root_orient,
        body_pose=body_pose,
        trans_m=trans,
        betas=betas,
        gender=gender,
        source=str(path),
        model_type=model_type,
        skeleton=skeleton,
    )


#: Magnitudes no AMASS file reaches: root translation (m, a capture volume is < 100 m across),
#: axis-angle components (rad; a rotation needs at most pi), shape coefficients (standard
#: deviations of the body-shape space; real bodies lie within a few).
MAX_ABS = {"trans": 1.0e3, "poses": 1.0e2, "root_orient": 1.0e2, "pose_body": 1.0e2, "betas": 1.0e2}


def _array(
    data: dict[str, np.ndarray], key: str, path: Path, width: int | None = None, ndim: int = 2
) -> np.ndarray:
    try:
        arr = np.asarray(data[key], dtype=float)
    except (TypeError, ValueError):
        raise InputError(path, f"'{key}' is not numeric") from None
    if ndim == 1:
        arr = arr.reshape(-1)
    elif arr.ndim != 2 or (width is not None and arr.shape[1] != width):
        want = f"(T, {width})" if width else "(T, N)"
        raise InputError(path, f"'{key}' must be {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(path, f"'{key}' contains NaN or inf")
    if arr.size and np.max(np.abs(arr)) > MAX_ABS.get(key, np.inf):
        raise InputError(
            path,
            f"'{key}' reaches {np.max(np.abs(arr)):.3g}, absurd (> {MAX_ABS[key]:g}): corrupt or wrong units",
        )
    return arr


def write_amass_npz(
    path: str | os.PathLike,
    *,
    root_orient: np.ndarray,
    body_pose: np.ndarray,
    trans_m: np.ndarray,
    rate_hz: float,
    betas: np.ndarray | None = None,
    gender: str = "neutral",
    layout: str = "smplh",
) -> None:
    """Write an AMASS-style ``.npz`` (atomically) that :func:`read_amass` reads back.

    ``root_orient`` (T, 3), ``body_pose`` (T, 21 or 23, 3) axis-angle radians, ``trans_m`` (T, 3).
    ``layout``: 'smplh' (``poses`` (T, 156), ``mocap_framerate``, as AMASS SMPL+H), 'smplx'
    (``root_orient``/``pose_body``/``trans``, ``mocap_frame_rate``, ``poses`` (T, 165)) or
    'smpl' (``poses`` (T, 72)). Hand/face rotations are written as zeros.
    """
    root_orient = np.asarray(root_orient, dtype=float).reshape(-1, 3)
    n = root_orient.shape[0]
    body = np.asarray(body_pose, dtype=float).reshape(n, -1, 3)
    want = 23 if layout == "smpl" else 21
    if body.shape[1] < want:
        body = np.concatenate([body, np.zeros((n, want - body.shape[1], 3))], axis=1)
    body = body[:, :want].reshape(n, -1)
    trans = np.asarray(trans_m, dtype=float).reshape(n, 3)
    betas = np.zeros(16) if betas is None else np.asarray(betas, dtype=float).reshape(-1)
    arrays: dict[str, np.ndarray] = {"trans": trans, "betas": betas, "gender": np.array(gender)}
    if layout == "smplh":
        arrays["poses"] = np.concatenate([root_orient, body, np.zeros((n, 90))], axis=1)
        arrays["mocap_framerate"] = np.array(float(rate_hz))
    elif layout == "smplx":
        arrays.update(
            root_orient=root_orient,
            pose_body=body,
            pose_hand=np.zeros((n, 90)),
            pose_jaw=np.zeros((n, 3)),
            pose_eye=np.zeros((n, 6)),
            poses=np.concatenate([root_orient, body, np.zeros((n, 99))], axis=1),
            mocap_frame_rate=np.array(float(rate_hz)),
            surface_model_type=np.array("smplx"),
        )
    elif layout == "smpl":
        arrays["poses"] = np.concatenate([root_orient, body], axis=1)
        arrays["mocap_framerate"] = np.array(float(rate_hz))
    else:
        raise ValueError(f"layout must be 'smplh', 'smplx' or 'smpl', got {layout!r}")
    with atomic_path(path) as tmp:
        np.savez(tmp, **arrays)
