"""Model profiles: what retargeting needs to know of a registered model's anatomy, by body name.

A :class:`ModelProfile` sits on the model's registry entry
(:attr:`musclerl.models.registry.RegisteredModel.profile`); retargeting
(:mod:`musclerl.retarget.correspondence`) reads it from there. A model without one (an MJCF path,
``musclemimic-bimanual``) is refused by ``retarget smpl`` ("no keypoint correspondence") and kept
in the lab frame by ``retarget markers`` (no floor pass).

A *landmark* is an anatomical point every source skeleton shares (``hip_l``, ``knee_l``, ...; the
sources' side of the table is in the correspondence module). In the MyoSuite models a body's
origin is its joint centre, so most landmarks are body origins; ``heel_*``, ``toe_tip_*`` and
``trunk`` are derived from the geometry when a model is prepared, from ``feet`` and ``trunk``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

SIDES = ("l", "r")

#: A point in a body's frame in metres, or None for the body's origin.
Point = tuple[float, float, float] | None


@dataclasses.dataclass(frozen=True)
class ModelProfile:
    """One model's anatomy for retargeting.

    ``landmarks``: landmark -> (body, point in its frame); ``feet``: side (``l``, ``r``) -> the
    bodies whose collision geoms make that sole, the heel's body first (a later body turning on
    one hinge is a toe, bent off the floor by the marker pipeline); ``trunk``: the body carrying
    the derived ``trunk`` landmark; ``segments``: segment (``pelvis``, ``thigh_l``, ...) -> the body
    rigidly attached to it, for the segment orientations a source gives (feet left out: a model
    foot turns about fewer axes than a source's 3-DOF ankle).
    """

    landmarks: Mapping[str, tuple[str, Point]]
    feet: Mapping[str, tuple[str, ...]]
    trunk: str
    segments: Mapping[str, str]


_LEG = {
    **{f"hip_{s}": (f"femur_{s}", None) for s in SIDES},
    **{f"knee_{s}": (f"tibia_{s}", None) for s in SIDES},
    **{f"ankle_{s}": (f"talus_{s}", None) for s in SIDES},
    **{f"toe_{s}": (f"toes_{s}", None) for s in SIDES},
}
_ARM = {
    **{f"shoulder_{s}": (f"humerus_{s}", None) for s in SIDES},
    **{f"elbow_{s}": (f"ulna_{s}", None) for s in SIDES},
    **{f"wrist_{s}": (f"lunate_{s}", None) for s in SIDES},
}
_MYO_FEET = {s: (f"calcn_{s}", f"toes_{s}") for s in SIDES}
_LEG_SEGMENTS = {
    "pelvis": "pelvis",
    "trunk": "torso",
    **{f"thigh_{s}": f"femur_{s}" for s in SIDES},
    **{f"shank_{s}": f"tibia_{s}" for s in SIDES},
}

#: MyoSuite's legs (``myolegs``).
MYOLEGS = ModelProfile(landmarks=_LEG, feet=_MYO_FEET, trunk="torso", segments=_LEG_SEGMENTS)
#: MyoSuite's full body, and MuscleMimic's built from the same body tree.
MYOFULLBODY = ModelProfile(landmarks={**_LEG, **_ARM}, feet=_MYO_FEET, trunk="torso", segments=_LEG_SEGMENTS)
#: The ``tiny`` test model: hips, knees, ankles on its femur/tibia/foot bodies, toes on the foot.
TINY = ModelProfile(
    landmarks={
        **{f"hip_{s}": (f"femur_{s}", None) for s in SIDES},
        **{f"knee_{s}": (f"tibia_{s}", None) for s in SIDES},
        **{f"ankle_{s}": (f"foot_{s}", None) for s in SIDES},
        **{f"toe_{s}": (f"foot_{s}", (0.13, 0.0, -0.03)) for s in SIDES},
    },
    feet={s: (f"foot_{s}",) for s in SIDES},
    trunk="pelvis",
    segments={
        "pelvis": "pelvis",
        **{f"thigh_{s}": f"femur_{s}" for s in SIDES},
        **{f"shank_{s}": f"tibia_{s}" for s in SIDES},
    },
)
