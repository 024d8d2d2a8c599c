"""Keypoint correspondence: which model point each source keypoint (SMPL, DeepMimic) stands for.

A *landmark* is an anatomical point both sides share (``hip_l``, ``knee_l``, ...). The model's
side is its profile (:func:`model_profile`: the :class:`~musclerl.models.profiles.ModelProfile`
on its registry entry: landmark -> a body and a point in its frame, ``None`` = the body origin,
which is the joint centre in the MyoSuite models; its feet, trunk body and segments);
:data:`SOURCE_LANDMARKS` says which keypoint of each source skeleton a landmark is.

Landmarks that no body origin marks are derived from the model's geometry when the model is
prepared (:mod:`musclerl.retarget.keypoints.pipeline`):

* ``heel_l``/``toe_tip_l`` (and right): the back and front of the foot's sole, from its collision
  geoms — DeepMimic's heel and toe keypoints lie on the bottom of its foot box;
* ``trunk``: a point on the profile's ``trunk`` body straight above the hip midpoint at the height
  the source puts its trunk keypoint above its hips (the MyoSuite torso has no joints of its own in
  ``myolegs``, so this point only orients the pelvis + torso).

Side conventions: SMPL's and DeepMimic's ``left_*`` are the body's left, as the models' ``*_l``.

===============  ====================  =====================  ===================================
landmark         SMPL (AMASS)          DeepMimic humanoid3d   myolegs / myofullbody body
===============  ====================  =====================  ===================================
hip_l, hip_r     left_hip, right_hip   left_hip, right_hip    femur_l, femur_r (origin)
knee_l, knee_r   left_knee, ...        left_knee, ...         tibia_l, tibia_r (origin)
ankle_l, ankle_r left_ankle, ...       left_ankle, ...        talus_l, talus_r (origin)
toe_l, toe_r     left_foot, ...        —                      toes_l, toes_r (origin, MTP)
heel_l, heel_r   —                     left_heel, ...         sole back (calcn geoms)
toe_tip_l, _r    —                     left_toe, ...          sole front (toes geoms)
trunk            neck                  neck                   torso (derived point)
shoulder_l, _r   left_shoulder, ...    left_shoulder, ...     humerus_l, _r (myofullbody only)
elbow_l, _r      left_elbow, ...       left_elbow, ...        ulna_l, _r (myofullbody only)
wrist_l, _r      left_wrist, ...       left_wrist, ...        lunate_l, _r (myofullbody only)
===============  ====================  =====================  ===================================

``musclemimic-fullbody`` is built from the same MyoSuite body tree as ``myofullbody`` and has its
profile; the ``tiny`` test model maps hips/knees/ankles to its ``femur``/``tibia``/``foot`` bodies.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from musclerl.errors import InputError
from musclerl.models.profiles import SIDES, ModelProfile
from musclerl.models.registry import model_profiles

SIDE_WORD = {"l": "left", "r": "right"}

#: landmark -> source keypoint name, per source skeleton.
SOURCE_LANDMARKS: dict[str, dict[str, str]] = {
    "smpl": {
        **{f"{j}_{s}": f"{SIDE_WORD[s]}_{j}" for s in SIDES for j in ("hip", "knee", "ankle")},
        **{f"toe_{s}": f"{SIDE_WORD[s]}_foot" for s in SIDES},
        **{f"{j}_{s}": f"{SIDE_WORD[s]}_{j}" for s in SIDES for j in ("shoulder", "elbow", "wrist")},
        "trunk": "neck",
    },
    "deepmimic": {
        **{f"{j}_{s}": f"{SIDE_WORD[s]}_{j}" for s in SIDES for j in ("hip", "knee", "ankle", "heel")},
        **{f"toe_tip_{s}": f"{SIDE_WORD[s]}_toe" for s in SIDES},
        **{f"{j}_{s}": f"{SIDE_WORD[s]}_{j}" for s in SIDES for j in ("shoulder", "elbow", "wrist")},
        "trunk": "neck",
    },
}
#: Source keypoints whose speed and height decide foot contact, per side, heel first then toe.
#: The heel keypoint's flag goes to the model's heel sole point, the toe keypoint's to the
#: forefoot sole points (toe tip, lateral and medial edge).
CONTACT_KEYPOINTS: dict[str, dict[str, tuple[str, str]]] = {
    "smpl": {s: (f"{SIDE_WORD[s]}_ankle", f"{SIDE_WORD[s]}_foot") for s in SIDES},
    "deepmimic": {s: (f"{SIDE_WORD[s]}_heel", f"{SIDE_WORD[s]}_toe") for s in SIDES},
}
#: segment -> the source keypoint whose joint frame turns that segment, per source skeleton.
SOURCE_SEGMENTS: dict[str, dict[str, str]] = {
    "smpl": {
        "pelvis": "pelvis",
        "trunk": "spine3",
        **{f"thigh_{s}": f"{SIDE_WORD[s]}_hip" for s in SIDES},
        **{f"shank_{s}": f"{SIDE_WORD[s]}_knee" for s in SIDES},
    },
    "deepmimic": {
        "pelvis": "root",
        "trunk": "chest",
        **{f"thigh_{s}": f"{SIDE_WORD[s]}_hip" for s in SIDES},
        **{f"shank_{s}": f"{SIDE_WORD[s]}_knee" for s in SIDES},
    },
}
#: Weight of each segment's orientation target per source (per rad^2; a keypoint's is 1 per m^2):
#: at 0.1, 0.1 rad off costs what a keypoint 3 cm off costs, so keypoints lead and orientations
#: settle what they leave free (thigh twist, how a miss at a joint limit is spread over the
#: joints). DeepMimic's humanoid has 1-DOF knees about its own axes, which the model's knee
#: axis does not share: its thigh and shank orientations cannot both be met, and following them
#: moves the keypoints (docs/measurements.md, Retargeting), so DeepMimic clips are fitted by positions.
ORIENTATION_WEIGHTS = {"smpl": 0.1, "deepmimic": 0.0}
#: The arms' landmarks as a chain from the hip midpoint, ``(landmark, parent)`` in order;
#: ``hips``/``shoulders`` are the midpoints of the pairs. The keypoint pipeline places each on the
#: model's proportions (:func:`musclerl.retarget.keypoints.model.on_model_proportions`): the
#: source's direction from its parent at the model's distance. A model not scaled to the source
#: would otherwise lean its trunk to reach shoulders at the source's height (a myofullbody torso
#: 7 cm taller than DeepMimic's leans ~25 degrees forward, its centre of mass 6 cm ahead of the feet).
ARM_CHAIN: tuple[tuple[str, str], ...] = (
    ("shoulders", "hips"),
    *((f"shoulder_{s}", "shoulders") for s in SIDES),
    *((f"elbow_{s}", f"shoulder_{s}") for s in SIDES),
    *((f"wrist_{s}", f"elbow_{s}") for s in SIDES),
)
#: A rigid foot's toe tip from its heel, ``(landmark, parent)``, placed the same way where the
#: source has no toe joint between them (DeepMimic's foot is one box, 17.7 cm heel to toe; myolegs'
#: sole is 26 cm): at the source's length the model's toes would have to fold 8 cm back to reach
#: the target, so the IK drove the toe joint onto its bound on every frame (+30 deg in stance,
#: -30 deg in swing) and the clips trained a toe posture no person has.
FOOT_CHAIN: tuple[tuple[str, str], ...] = tuple((f"toe_tip_{s}", f"heel_{s}") for s in SIDES)
#: Midpoints the chain starts from or passes through: name -> the two landmarks.
MIDPOINTS = {"hips": ("hip_l", "hip_r"), "shoulders": ("shoulder_l", "shoulder_r")}
#: Relative weight of each landmark in the keypoint task (others 1).
LANDMARK_WEIGHTS = {"trunk": 0.3, **{f"toe_{s}": 0.5 for s in SIDES}}
#: Segment lengths for per-segment scaling: (landmark a, landmark b, bodies scaled by the ratio).
SEGMENTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    *((f"hip_{s}", f"knee_{s}", (f"femur_{s}", f"patella_{s}")) for s in SIDES),
    *((f"knee_{s}", f"ankle_{s}", (f"tibia_{s}",)) for s in SIDES),
    *((f"ankle_{s}", f"toe_{s}", (f"talus_{s}", f"calcn_{s}", f"toes_{s}", f"foot_{s}")) for s in SIDES),
    *((f"heel_{s}", f"toe_tip_{s}", (f"talus_{s}", f"calcn_{s}", f"toes_{s}", f"foot_{s}")) for s in SIDES),
    ("hip_l", "hip_r", ("pelvis",)),
    *((f"shoulder_{s}", f"elbow_{s}", (f"humerus_{s}",)) for s in SIDES),
    *((f"elbow_{s}", f"wrist_{s}", (f"ulna_{s}", f"radius_{s}")) for s in SIDES),
)


@dataclasses.dataclass(frozen=True)
class Correspondence:
    """Matched landmarks of one model and one source skeleton (all lists in the same order)."""

    model_name: str
    source_kind: str
    landmarks: tuple[str, ...]
    keypoints: tuple[str, ...]
    weights: np.ndarray  # (L,)

    def source_positions(self, names: tuple[str, ...], positions_m: np.ndarray) -> np.ndarray:
        """Source keypoints (T, L, 3) in landmark order from a (T, K, 3) array named ``names``."""
        idx = [names.index(k) for k in self.keypoints]
        return positions_m[:, idx]


def model_profile(model_name: str) -> ModelProfile:
    """The profile on ``model_name``'s registry entry (MJCF paths and models without one are
    refused in one line listing the models that have one)."""
    found = model_profiles()
    if model_name not in found:
        raise InputError(model_name, f"no keypoint correspondence for this model; known: {sorted(found)}")
    return found[model_name]


def source_kind(keypoint_names: tuple[str, ...]) -> str:
    """'smpl' or 'deepmimic' from the keypoint names of a motion."""
    if "left_foot" in keypoint_names and "spine3" in keypoint_names:
        return "smpl"
    if "left_heel" in keypoint_names and "left_toe" in keypoint_names:
        return "deepmimic"
    raise InputError("motion", "keypoints are neither SMPL's 24 joints nor DeepMimic's humanoid3d points")


def correspondence(
    model_name: str, kind: str, keypoint_names: tuple[str, ...], derived: tuple[str, ...]
) -> Correspondence:
    """Landmarks present on both sides: the model's table entries plus ``derived`` ones
    (sole points, trunk), and the source's keypoints."""
    model_side = set(model_profile(model_name).landmarks) | set(derived)
    pairs = [
        (lm, kp) for lm, kp in SOURCE_LANDMARKS[kind].items() if lm in model_side and kp in keypoint_names
    ]
    if len(pairs) < 6:
        raise InputError(model_name, f"only {len(pairs)} keypoints correspond to this model; need 6")
    landmarks = tuple(p[0] for p in pairs)
    weights = np.array([LANDMARK_WEIGHTS.get(lm, 1.0) for lm in landmarks])
    return Correspondence(model_name, kind, landmarks, tuple(p[1] for p in pairs), weights)


#: The trunk (hip midpoint -> ``trunk`` keypoint) must point within ~70 deg of +Z in most frames.
UPRIGHT_MIN_COS = 0.35


def check_upright(kind: str, names: tuple[str, ...], positions_m: np.ndarray, source: str) -> None:
    """Raise :class:`InputError` unless the source body stands along +Z (world metres, Z up).

    ``positions_m`` (T, K, 3) named ``names``. The median over frames of the unit trunk direction
    must have a Z component of at least :data:`UPRIGHT_MIN_COS`: a Y-up file read as Z-up (the
    usual mistake with SMPL files outside AMASS) lies on its side and is refused here rather than
    retargeted into a body lying on the floor. Clips that spend most frames lying or crawling are
    refused too. Frames with missing points are ignored.
    """
    src = SOURCE_LANDMARKS[kind]
    needed = [src[k] for k in ("hip_l", "hip_r", "trunk")]
    if not all(k in names for k in needed):
        return
    hip_l, hip_r, trunk = (np.asarray(positions_m)[:, names.index(k)] for k in needed)
    axis = trunk - 0.5 * (hip_l + hip_r)
    norm = np.linalg.norm(axis, axis=-1, keepdims=True)
    ok = np.all(np.isfinite(axis), axis=-1) & (norm[:, 0] > 1e-6)
    if not ok.any():
        return
    direction = np.median(axis[ok] / norm[ok], axis=0)
    if direction[2] < UPRIGHT_MIN_COS:
        along = "XYZ"[int(np.argmax(np.abs(direction)))]
        sign = "+" if direction[int(np.argmax(np.abs(direction)))] > 0 else "-"
        hint = " (an SMPL file in SMPL's own Y-up frame needs --y-up)" if along == "Y" else ""
        raise InputError(
            source or "motion",
            f"the body's trunk points along {sign}{along}, not up (+Z), "
            f"in most frames: is the file's up axis right?{hint}",
        )
