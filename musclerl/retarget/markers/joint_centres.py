"""Anatomical joint centres from static-trial landmarks, used to seat the skeleton in the markers.

Marker placement (OpenSim's MarkerPlacer, :func:`musclerl.retarget.markers.fit.place_markers`)
moves every marker to where the static trial saw it, relative to the bones of the fitted static
pose. Where the bones sit inside the marker cloud therefore comes from the *generic* marker
positions, which were written for another model: the gait2354 pelvis markers put myolegs' hip
centres centimetres from where gait2354 has them, and the thigh then swings about the wrong point
for the whole trial. Clinical gait analysis fixes the joint centres from the landmarks instead,
and so does :func:`joint_centre_markers`:

* hip (per side): Harrington et al. (2007, J Biomech 40:595) regression from the pelvis
  markers, in a pelvis frame at the mid-ASIS point (x anterior, y superior, z to the right, mm):
  ``x = -0.24 PD - 9.9``, ``y = -0.30 PW - 10.9``, ``z = +-(0.33 PW + 7.3)`` with ``PW`` the
  inter-ASIS and ``PD`` the mid-ASIS to mid-PSIS (or sacral marker) distance;
* knee (per side): the midpoint of the lateral and medial femoral epicondyle markers;
* ankle (per side): the midpoint of the lateral and medial malleolus markers.

The thigh and shank are scaled from these centres (:func:`centre_scale_factors`, per side:
hip-knee and knee-ankle distances over the model's joint-to-joint distances), replacing the
Scale setup's marker-pair factors for them: those compare the trial with generic markers written
for another model. Each centre then becomes a *fixed* virtual marker on the model (the hip at the
thigh body's position in the pelvis, the knee at the shank body's origin, the ankle at the talus
origin) with the landmark estimate as its static target, weighing
:data:`JOINT_CENTRE_WEIGHT_RATIO` times the heaviest real marker. In the static fit
(:func:`musclerl.retarget.markers.calibration.fit_static_pose`) the pelvis markers orient the pelvis,
the hip centres then only *translate* it (turning it onto them tilts the pelvis), and the knee
and ankle centres join the limb fit; only the real markers are then placed. Hips and knees are
used all four or not at all (a hip seated without its knee tilts the leg's static pose); the
ankles only with them. When a landmark or a body is missing, the static fit is OpenSim's, from
the markers alone. Segments scaled too short cannot reach the centres (the knee stops at its
extension limit) and marker placement then hides the shortfall in the distal markers: the feet
end up above the floor, each by its own amount.

Landmark names are matched case- and punctuation-insensitively (``R.ASIS``, ``RASI``, ``r_asis``,
``ASIS_R`` ...); see :data:`LANDMARK_NAMES`.
"""

from __future__ import annotations

import re

import mujoco
import numpy as np

from musclerl.models.markers import Marker

JOINT_CENTRE_WEIGHT_RATIO = 100.0
JOINT_CENTRE_PREFIX = "JC."

# Landmark -> accepted names with "{s}" for the side letter (r/l); compared after lower-casing and
# dropping everything but letters and digits.
LANDMARK_NAMES: dict[str, tuple[str, ...]] = {
    "asis": ("{s}asis", "{s}asi", "asis{s}", "asi{s}"),
    "psis": ("{s}psis", "{s}psi", "psis{s}", "psi{s}"),
    "hip": ("{s}hjc", "hjc{s}", "{s}hipjc", "{s}hipcentre", "{s}hipcenter"),
    "knee_lat": (
        "{s}kneelat",
        "{s}kneelateral",
        "{s}latknee",
        "{s}kne",
        "{s}lfe",
        "{s}lfc",
        "kneelat{s}",
        "{s}knee",
    ),
    "knee_med": (
        "{s}kneemed",
        "{s}kneemedial",
        "{s}medknee",
        "{s}knm",
        "{s}mfe",
        "{s}mfc",
        "kneemed{s}",
        "{s}mknee",
    ),
    "ankle_lat": (
        "{s}anklelat",
        "{s}anklelateral",
        "{s}latankle",
        "{s}ank",
        "{s}lmal",
        "{s}lm",
        "anklelat{s}",
        "{s}ankle",
    ),
    "ankle_med": (
        "{s}anklemed",
        "{s}anklemedial",
        "{s}medankle",
        "{s}anm",
        "{s}mmal",
        "{s}mm",
        "anklemed{s}",
        "{s}mankle",
    ),
}
#: Segments scaled from joint-centre distances: (proximal centre, distal centre, body of the
#: proximal joint, body of the distal joint, bodies scaled), "{s}" the side letter.
CENTRE_SEGMENTS = (
    ("hip", "knee", "femur_{s}", "tibia_{s}", ("femur_{s}", "patella_{s}")),
    ("knee", "ankle", "tibia_{s}", "talus_{s}", ("tibia_{s}", "talus_{s}")),
)
SACRUM_NAMES = ("vsacral", "sacral", "sacr", "sacrum", "sacrm")


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def landmark_names(names, landmark: str, side: str) -> list[str]:
    """The names among ``names`` that match ``landmark`` on ``side`` ('r' or 'l'), best first."""
    keys = {_key(n): n for n in names}
    return [keys[p.format(s=side)] for p in LANDMARK_NAMES[landmark] if p.format(s=side) in keys]


def find_landmark(measured_m: dict[str, np.ndarray], landmark: str, side: str) -> np.ndarray | None:
    """Static position (3,) of ``landmark`` on ``side`` ('r' or 'l'), or None when absent/NaN."""
    for name in landmark_names(measured_m, landmark, side):
        if np.all(np.isfinite(measured_m[name])):
            return np.asarray(measured_m[name], dtype=float)
    return None


def _sacrum(measured_m: dict[str, np.ndarray]) -> np.ndarray | None:
    """Mid-PSIS (3,): both PSIS markers' midpoint, else a single sacral marker."""
    psis = [find_landmark(measured_m, "psis", s) for s in "rl"]
    if all(p is not None for p in psis):
        return 0.5 * (psis[0] + psis[1])
    keys = {_key(n): n for n in measured_m}
    for pattern in SACRUM_NAMES:
        name = keys.get(pattern)
        if name is not None and np.all(np.isfinite(measured_m[name])):
            return np.asarray(measured_m[name], dtype=float)
    return None


def harrington_hip_centres_m(
    asis_r: np.ndarray, asis_l: np.ndarray, mid_psis: np.ndarray, up: np.ndarray
) -> dict[str, np.ndarray]:
    """Hip centres {'r': (3,), 'l': (3,)} in the markers' frame (metres), Harrington et al. 2007.

    ``up`` (3,) is the world's vertical, used only to pick the superior side of the pelvis plane.
    """
    mid = 0.5 * (asis_r + asis_l)
    right = (asis_r - asis_l) / np.linalg.norm(asis_r - asis_l)
    anterior = mid - mid_psis
    anterior = anterior - right * (anterior @ right)
    anterior /= np.linalg.norm(anterior)
    superior = np.cross(right, anterior)
    if superior @ up < 0:  # markers mirrored (left-handed lab frame): keep superior pointing up
        superior = -superior
    width_mm = 1000.0 * np.linalg.norm(asis_r - asis_l)
    depth_mm = 1000.0 * np.linalg.norm(mid - mid_psis)
    out = {}
    for side, sign in (("r", 1.0), ("l", -1.0)):
        local_mm = np.array([-0.24 * depth_mm - 9.9, -0.30 * width_mm - 10.9, sign * (0.33 * width_mm + 7.3)])
        out[side] = mid + (local_mm[0] * anterior + local_mm[1] * superior + local_mm[2] * right) / 1000.0
    return out


def landmark_centres_m(
    measured_m: dict[str, np.ndarray], up: tuple[float, float, float] = (0.0, 0.0, 1.0)
) -> dict[str, dict[str, np.ndarray]]:
    """Joint centres from the landmarks: {'hip' | 'knee' | 'ankle': {'r' | 'l': (3,)}} (metres,
    the markers' frame); a centre whose landmarks are missing is left out. Knee and ankle are the
    midpoints of the epicondyle and malleolus markers; the hips are Harrington's."""
    out: dict[str, dict[str, np.ndarray]] = {"hip": {}, "knee": {}, "ankle": {}}
    asis = [find_landmark(measured_m, "asis", s) for s in "rl"]
    sacrum = _sacrum(measured_m)
    if asis[0] is not None and asis[1] is not None and sacrum is not None:
        out["hip"] = harrington_hip_centres_m(asis[0], asis[1], sacrum, np.asarray(up, dtype=float))
    measured_hips = {s: find_landmark(measured_m, "hip", s) for s in "rl"}
    if all(h is not None for h in measured_hips.values()):  # the lab's own hip centres
        out["hip"] = measured_hips
    for joint in ("knee", "ankle"):
        for side in "rl":
            lateral = find_landmark(measured_m, f"{joint}_lat", side)
            medial = find_landmark(measured_m, f"{joint}_med", side)
            if lateral is not None and medial is not None:
                out[joint][side] = 0.5 * (lateral + medial)
    return out


def model_centre(
    model: mujoco.MjModel, data: mujoco.MjData, joint: str, side: str, fallback_body: str, landmarks: bool
) -> tuple[int, np.ndarray, np.ndarray] | None:
    """Where the model has the centre of ``joint`` ('hip', 'knee', 'ankle') on ``side``:
    (body id, position (3,) in that body, world position (3,) in ``data``'s pose), or None.

    Knee and ankle, with ``landmarks`` (the generic markers were mapped into the model's body
    frames, :mod:`musclerl.models.osim_frames`): the midpoint of the marker set's own lateral and
    medial generic markers when the model carries both as sites on one body — the same landmarks
    the static trial's centre is measured from, so target and model point are one anatomical
    point (seating the talus origin on the malleoli instead shortens the shank and tips the
    foot). Otherwise, and for the hip, the origin of ``fallback_body``.
    """
    sites = {_key(model.site(i).name): i for i in range(model.nsite)}
    if landmarks and joint in ("knee", "ankle"):
        found = []
        for part in ("lat", "med"):
            ids = [
                sites[p.format(s=side)]
                for p in LANDMARK_NAMES[f"{joint}_{part}"]
                if p.format(s=side) in sites
            ]
            found.append(ids[0] if ids else -1)
        if min(found) >= 0 and model.site_bodyid[found[0]] == model.site_bodyid[found[1]]:
            body = int(model.site_bodyid[found[0]])
            local = 0.5 * (model.site_pos[found[0]] + model.site_pos[found[1]])
            world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ local
            return body, np.array(local), np.array(world)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, fallback_body)
    if body < 0:
        return None
    return body, np.zeros(3), np.array(data.xpos[body])


def centre_scale_factors(
    model: mujoco.MjModel,
    measured_m: dict[str, np.ndarray],
    landmarks: bool = False,
    up: tuple[float, float, float] = (0.0, 0.0, 1.0),
) -> dict[str, np.ndarray]:
    """Thigh and shank factors body -> (3,) from joint-centre distances (:data:`CENTRE_SEGMENTS`).

    Per side, the ratio of the static trial's centre-to-centre distance (:func:`landmark_centres_m`)
    to the distance between the two joints' bodies in ``model`` (generic, unscaled) at ``qpos0``.
    Why: a marker-pair measurement compares the trial with *generic* marker positions written for
    another model, so it measures that model's segment, not this one's; the joint centres are
    where the bones are. Per side, because the static trial stands both feet on one floor: legs
    scaled to their mean put one foot above it and the other below. Segments of a side without
    both centres, or without the bodies, are left out.
    """
    centres = landmark_centres_m(measured_m, up)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out: dict[str, np.ndarray] = {}
    for proximal, distal, joint_a, joint_b, bodies in CENTRE_SEGMENTS:
        for side in "rl":
            a = model_centre(model, data, proximal, side, joint_a.format(s=side), landmarks)
            b = model_centre(model, data, distal, side, joint_b.format(s=side), landmarks)
            if a is None or b is None or side not in centres[proximal] or side not in centres[distal]:
                continue
            model_m = float(np.linalg.norm(a[2] - b[2]))
            if model_m < 1e-6:
                continue
            ratio = float(np.linalg.norm(centres[proximal][side] - centres[distal][side])) / model_m
            for name in bodies:
                if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name.format(s=side)) >= 0:
                    out[name.format(s=side)] = np.full(3, ratio)
    return out


def joint_centre_markers(
    model: mujoco.MjModel,
    measured_m: dict[str, np.ndarray],
    landmarks: bool = False,
    up: tuple[float, float, float] = (0.0, 0.0, 1.0),
) -> tuple[tuple[Marker, ...], dict[str, np.ndarray]]:
    """Virtual joint-centre markers for the static fit of ``model`` (the generic, unscaled model).

    ``measured_m`` maps marker name -> static position (3,), metres, world frame with ``up`` (Z-up
    for trials read by :func:`musclerl.motion.trc.read_trc`).
    Returns fixed :class:`Marker` s (locations in the generic body frames, so they scale with
    their bodies) and their targets: name -> (3,). Empty when no landmark set is complete.
    """
    markers: list[Marker] = []
    targets: dict[str, np.ndarray] = {}

    def body(name: str) -> int:
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)

    centres = landmark_centres_m(measured_m, up)
    for side, hip in centres["hip"].items():
        thigh = body(f"femur_{side}")
        if thigh < 0 or int(model.body_parentid[thigh]) <= 0:
            continue
        name = f"{JOINT_CENTRE_PREFIX}hip_{side}"
        pelvis = model.body(int(model.body_parentid[thigh])).name
        markers.append(Marker(name, pelvis, np.array(model.body_pos[thigh]), fixed=True))
        targets[name] = hip
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    for joint, fallback in (("knee", "tibia_{s}"), ("ankle", "talus_{s}")):
        for side, centre in centres[joint].items():
            point = model_centre(model, data, joint, side, fallback.format(s=side), landmarks)
            if point is None or (joint == "ankle" and len(markers) < 4):
                continue
            name = f"{JOINT_CENTRE_PREFIX}{joint}_{side}"
            markers.append(Marker(name, model.body(point[0]).name, point[1], fixed=True))
            targets[name] = centre
    if len(markers) < 4:  # all four or none: a hip seated without its knee tilts the leg's static pose
        return (), {}
    return tuple(markers), targets
