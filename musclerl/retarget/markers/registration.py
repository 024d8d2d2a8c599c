"""Marker registration bookkeeping: which generic markers may pose the static fit, and a report per
marker of how far registration moved it and why.

A marker set comes with generic offsets in its own model's body frames. Registration
(:func:`musclerl.retarget.markers.calibration.calibrate`) (1) maps them into the MJCF model's body
frames (:mod:`musclerl.models.osim_frames`), (2) scales them with their bodies, (3) fits the
static pose with the informative ones, and (4) moves every non-fixed marker to where the static
trial saw it (OpenSim's marker placer). :func:`registration_report` says for each marker what
(1) and (4) did to it, in millimetres, and which rule applied.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.models.markers import MarkerSet
from musclerl.retarget.markers.fit import root_rigid_sites
from musclerl.retarget.markers.joint_centres import landmark_names

PLACEHOLDER_TOLERANCE_M = 1e-3
#: Static-pose coordinate tasks when no setup gives any: OpenSim's example Scale setups hold the
#: subtalar and toe joints at their defaults (weight 1000), which three foot markers cannot resolve.
DEFAULT_PLACEMENT_COORDINATES = ("subtalar_angle", "mtp_angle")
DEFAULT_PLACEMENT_WEIGHT = 1000.0


def default_placement_coordinates(model: mujoco.MjModel) -> dict[str, tuple[float | None, float]]:
    """Joint -> (None: its default, weight) for the joints named in
    :data:`DEFAULT_PLACEMENT_COORDINATES` (any side suffix)."""
    joints = [model.joint(j).name for j in range(model.njnt)]
    return {
        j: (None, DEFAULT_PLACEMENT_WEIGHT) for j in joints if j.startswith(DEFAULT_PLACEMENT_COORDINATES)
    }


def placeholder_markers(marker_set: MarkerSet) -> list[str]:
    """Markers whose generic location says nothing: on one body, within
    :data:`PLACEHOLDER_TOLERANCE_M` of another marker (OpenCap's thigh and shank clusters all sit
    at one point per segment). They must not pull the static pose; placement puts them where the
    static trial saw them."""
    out = []
    for a in marker_set.markers:
        for b in marker_set.markers:
            if a is not b and a.body == b.body:
                if np.linalg.norm(a.location_m - b.location_m) < PLACEHOLDER_TOLERANCE_M:
                    out.append(a.name)
                    break
    return out


def trunk_markers(model: mujoco.MjModel, marker_set: MarkerSet) -> tuple[str, ...]:
    """Markers the model carries rigidly with its pelvis but on another body of the marker set
    (the trunk: myolegs welds it to the pelvis, every marker set's model moves it on a lumbar
    joint). The pelvis is the body of the marker set's ASIS markers; without them, none."""
    asis = landmark_names(marker_set.names, "asis", "r") + landmark_names(marker_set.names, "asis", "l")
    if not asis:
        return ()
    pelvis = marker_set[asis[0]].body
    sites = {model.site(i).name for i in range(model.nsite)}
    names = [m.name for m in marker_set.markers if m.name in sites and m.body != pelvis]
    rigid = root_rigid_sites(model, names) if names else np.zeros(0, dtype=bool)
    return tuple(n for n, r in zip(names, rigid, strict=True) if r)


def registration_report(
    original: MarkerSet,
    mapped: MarkerSet,
    placed: MarkerSet,
    factors: dict[str, np.ndarray],
    placeholders: list[str],
    rigid: tuple[str, ...],
    static_weights: dict[str, float],
    missing_body: dict[str, str],
) -> dict:
    """Per marker: ``placeholder`` and ``in_static`` (flags), ``mapped_mm`` (frame mapping shift),
    ``placed_mm`` (placement shift from the scaled generic offset), ``static_weight`` (its weight
    in the static fit) and ``why``.

    ``original`` is the marker set as read, ``mapped`` in the model's frames, ``placed`` after
    placement (scaled body frames); ``factors`` body -> (3,) scale factors.
    """
    out = {}
    for marker in original.markers:
        name = marker.name
        if name in missing_body:
            out[name] = {"why": f"skipped: the model has no body {missing_body[name]!r}"}
            continue
        generic = mapped[name].location_m
        scaled = generic * np.asarray(factors.get(marker.body, np.ones(3)))
        moved_mm = 1000.0 * float(np.linalg.norm(placed[name].location_m - scaled))
        if name not in static_weights:
            why = "kept (scaled generic offset): not in the static trial"
        elif marker.fixed:
            why = "kept (scaled generic offset): fixed in the marker set"
        elif name in placeholders:
            why = (
                "placed from the static trial; generic offset shared with another marker on its "
                "body (placeholder), not used to pose the static fit"
            )
        elif static_weights[name] == 0.0:
            why = "placed from the static trial; weight 0 in the placement setup, not posing the static fit"
        else:
            why = "placed from the static trial after posing the static fit with it"
        if name in rigid:
            why += (
                "; its body (the trunk) is welded to the pelvis in this model but moves on a joint "
                "in the subject: trial-IK weight down-weighted (pipeline.RIGID_SEGMENT_WEIGHT) unless an IK "
                "setup gives the weights"
            )
        out[name] = {
            "body": marker.body,
            "placeholder": name in placeholders,
            "in_static": name in static_weights,
            "mapped_mm": round(1000.0 * float(np.linalg.norm(generic - marker.location_m)), 2),
            "placed_mm": round(moved_mm, 2),
            "static_weight": float(static_weights.get(name, 0.0)),
            "why": why,
        }
    return out
