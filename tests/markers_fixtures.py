"""Generated marker cases on the ``tiny`` model, shared by the marker tests.

``TINY_MARKERS``: body -> marker locations (body frame, metres), three per segment off the
sagittal plane so every segment's pose is identifiable.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from musclerl.models.markers import Marker, MarkerSet, add_markers
from musclerl.models.registry import compile_spec, load_spec
from musclerl.models.scaling import scale_spec
from musclerl.motion.trc import MarkerData, write_trc

TINY_MARKERS = {
    "pelvis": [(0.08, 0.1, 0.05), (0.08, -0.1, 0.05), (-0.08, 0.0, 0.08)],
    "femur_r": [(0.06, -0.03, -0.15), (0.0, -0.07, -0.25), (-0.05, -0.04, -0.38)],
    "tibia_r": [(0.05, -0.03, -0.1), (0.0, -0.06, -0.25), (-0.04, -0.04, -0.4)],
    "foot_r": [(-0.04, -0.02, -0.03), (0.14, -0.04, -0.04), (0.12, 0.03, -0.03)],
    "femur_l": [(0.06, 0.03, -0.15), (0.0, 0.07, -0.25), (-0.05, 0.04, -0.38)],
    "tibia_l": [(0.05, 0.03, -0.1), (0.0, 0.06, -0.25), (-0.04, 0.04, -0.4)],
    "foot_l": [(-0.04, 0.02, -0.03), (0.14, 0.04, -0.04), (0.12, -0.03, -0.03)],
}
TRUE_SCALE = {"femur_r": 1.1, "femur_l": 1.1, "tibia_r": 1.05, "tibia_l": 1.05, "foot_r": 1.0, "foot_l": 1.0}


def tiny_marker_set(offset_m: float = 0.0, seed: int = 0) -> MarkerSet:
    """The tiny marker set; ``offset_m`` > 0 displaces every marker randomly (a generic placement)."""
    rng = np.random.default_rng(seed)
    markers = []
    for body, locations in TINY_MARKERS.items():
        for k, loc in enumerate(locations):
            noise = rng.normal(size=3)
            noise *= offset_m / max(np.linalg.norm(noise), 1e-9)
            markers.append(Marker(f"{body}.{k}", body, np.array(loc) + noise, False))
    return MarkerSet(tuple(markers), "generated")


def marker_set_xml(marker_set: MarkerSet, opensim4: bool = False) -> str:
    """An OpenSim MarkerSet document (OpenSim 3 ``<body>`` or OpenSim 4 socket) for ``marker_set``."""
    rows = []
    for m in marker_set.markers:
        where = (
            f"<socket_parent_frame>/bodyset/{m.body}</socket_parent_frame>"
            if opensim4
            else f"<body> {m.body} </body>"
        )
        loc = " ".join(f"{v:.9f}" for v in m.location_m)
        rows.append(
            f'<Marker name="{m.name}">{where}<location> {loc} </location>'
            f"<fixed> {'true' if m.fixed else 'false'} </fixed></Marker>"
        )
    return (
        '<?xml version="1.0"?>\n<OpenSimDocument Version="40000"><MarkerSet name="set"><objects>'
        + "".join(rows)
        + "</objects></MarkerSet></OpenSimDocument>\n"
    )


def subject_model() -> mujoco.MjModel:
    """The 'true' subject: tiny scaled by TRUE_SCALE with the true marker set."""
    spec = load_spec("tiny")
    add_markers(spec, tiny_marker_set())
    scale_spec(spec, {k: np.full(3, v) for k, v in TRUE_SCALE.items()})
    return compile_spec(spec)


def gait_qpos(model: mujoco.MjModel, frames: int, rate_hz: float) -> np.ndarray:
    """A smooth walking-like motion (T, nq): root moving forward, hips/knees/ankles oscillating."""
    t = np.arange(frames) / rate_hz
    qpos = np.tile(model.qpos0, (frames, 1))
    qpos[:, 0] = 0.8 * t
    qpos[:, 2] = 0.95 + 0.02 * np.sin(4 * np.pi * t)
    yaw = 0.1 * np.sin(2 * np.pi * t)
    qpos[:, 3], qpos[:, 6] = np.cos(yaw / 2), np.sin(yaw / 2)
    phase = 2 * np.pi * t
    for side, shift in (("r", 0.0), ("l", np.pi)):
        values = {
            f"hip_flexion_{side}": 0.4 * np.sin(phase + shift) + 0.1,
            f"knee_angle_{side}": 0.6 + 0.5 * np.sin(phase + shift + 1.0),
            f"ankle_angle_{side}": 0.2 * np.sin(phase + shift - 0.5),
        }
        for name, value in values.items():
            qpos[:, model.jnt_qposadr[model.joint(name).id]] = value
    return qpos


def site_trajectories(model: mujoco.MjModel, qpos: np.ndarray, names: list[str]) -> np.ndarray:
    data = mujoco.MjData(model)
    out = np.zeros((len(qpos), len(names), 3))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[t] = [data.site(n).xpos for n in names]
    return out


def write_case(folder: Path, frames: int = 60, rate_hz: float = 60.0) -> dict[str, Path]:
    """Static + walk .trc of the true subject, a generic marker set (2 cm off) and a Scale setup."""
    folder.mkdir(parents=True, exist_ok=True)
    model = subject_model()
    names = [m.name for m in tiny_marker_set().markers]
    static_q = np.tile(model.qpos0, (20, 1))
    static_q[:, 2] = 0.95
    paths = {
        "static": folder / "static.trc",
        "walk": folder / "walk.trc",
        "markers": folder / "markers.xml",
        "scale": folder / "scale.xml",
    }
    for key, qpos in (("static", static_q), ("walk", gait_qpos(model, frames, rate_hz))):
        positions = site_trajectories(model, qpos, names)
        write_trc(
            paths[key],
            MarkerData(tuple(names), positions, np.arange(len(qpos)) / rate_hz, rate_hz, "mm", z_up=True),
        )
    paths["markers"].write_text(marker_set_xml(tiny_marker_set(offset_m=0.02)))
    measurements = []
    for seg, a, b in (("thigh", "femur", "tibia"), ("shank", "tibia", "foot")):
        pairs = "".join(f"<MarkerPair><markers> {a}_{s}.0 {b}_{s}.0 </markers></MarkerPair>" for s in "rl")
        bodies = "".join(f'<BodyScale name="{a}_{s}"><axes> X Y Z </axes></BodyScale>' for s in "rl")
        measurements.append(
            f'<Measurement name="{seg}"><apply>true</apply><MarkerPairSet><objects>{pairs}'
            f"</objects></MarkerPairSet><BodyScaleSet><objects>{bodies}</objects>"
            "</BodyScaleSet></Measurement>"
        )
    paths["scale"].write_text(
        '<?xml version="1.0"?><OpenSimDocument><ScaleTool name="s"><ModelScaler><apply>true</apply>'
        f"<MeasurementSet><objects>{''.join(measurements)}</objects></MeasurementSet>"
        "<preserve_mass_distribution>false</preserve_mass_distribution></ModelScaler></ScaleTool>"
        "</OpenSimDocument>\n"
    )
    return paths
