"""Marker clusters relabelled between the static trial and a trial are detected whatever their size
(musclerl.retarget.markers.clusters), mirrored labellings included; a correctly labelled or
merely noisy cluster is not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from musclerl.models.markers import Marker, MarkerSet
from musclerl.motion.trc import MarkerData
from musclerl.retarget.markers.clusters import cluster_label_checks, cluster_warning

# a thigh plate of four markers (body frame, m) and three on the shank: not symmetric
THIGH = {
    "T1": (0.05, 0.02, -0.10),
    "T2": (0.06, -0.03, -0.14),
    "T3": (0.045, 0.03, -0.2),
    "T4": (0.07, -0.01, -0.23),
}
SHANK = {"S1": (0.04, 0.01, -0.08), "S2": (0.05, -0.02, -0.15), "S3": (0.035, 0.025, -0.21)}


def _set() -> MarkerSet:
    markers = [Marker(n, "femur_l", np.array(p)) for n, p in THIGH.items()]
    markers += [Marker(n, "tibia_l", np.array(p)) for n, p in SHANK.items()]
    return MarkerSet(tuple(markers), "test")


def _trial(labels: dict[str, str] | None = None, noise_m: float = 0.0, frames: int = 40) -> MarkerData:
    """Both segments moving rigidly; ``labels``: trial label -> the marker whose path it carries."""
    rng = np.random.default_rng(0)
    local = {**THIGH, **SHANK}
    names = tuple(local)
    positions = np.zeros((frames, len(names), 3))
    for t in range(frames):
        for body in (THIGH, SHANK):
            rot = Rotation.from_rotvec(rng.normal(0, 0.4, 3)).as_matrix()
            origin = rng.normal(0, 0.3, 3) + [0, 0, 1]
            for name, p in body.items():
                positions[t, names.index(name)] = rot @ np.array(p) + origin
    carried = {n: (labels or {}).get(n, n) for n in names}
    positions = positions[:, [names.index(carried[n]) for n in names]]
    positions += rng.normal(0, noise_m, positions.shape)
    return MarkerData(names, positions, np.arange(frames) / 100.0, 100.0, "m", "trial")


def test_correct_labels_and_marker_noise_are_not_reported():
    assert cluster_label_checks(_set(), _trial()) == []
    assert cluster_label_checks(_set(), _trial(noise_m=0.003)) == []


def test_two_swapped_labels_in_a_four_marker_plate_are_named():
    findings = cluster_label_checks(_set(), _trial({"T2": "T4", "T4": "T2"}, noise_m=0.002))
    assert [f["body"] for f in findings] == ["femur_l"]
    assert findings[0]["relabel"] == {"T2": "T4", "T4": "T2"}
    assert findings[0]["rms_relabelled_m"] < 0.005 < findings[0]["rms_as_labelled_m"]
    line = cluster_warning(findings)
    assert line.startswith("marker labels disagree with the static trial's: femur_l: T2 is T4, T4 is T2 (")


def test_a_three_marker_cluster_relabelled_in_a_cycle_is_named():
    findings = cluster_label_checks(_set(), _trial({"S1": "S2", "S2": "S3", "S3": "S1"}))
    assert [f["body"] for f in findings] == ["tibia_l"]
    assert findings[0]["relabel"] == {"S1": "S2", "S2": "S3", "S3": "S1"}


def test_a_cluster_mirrored_top_to_bottom_is_named():
    """OpenCap walking1's left thigh: the plate's labels mirrored (1<->3, 2<->4) between static
    trial and walk, every distance between labels plausible."""
    labels = {"T1": "T3", "T3": "T1", "T2": "T4", "T4": "T2"}
    findings = cluster_label_checks(_set(), _trial(labels, noise_m=0.002))
    assert [f["body"] for f in findings] == ["femur_l"] and findings[0]["relabel"] == labels


@pytest.mark.parametrize("size", [5, 8])
def test_large_clusters_are_checked_too(size):
    rng = np.random.default_rng(size)
    local = {f"M{k}": rng.normal(0, 0.06, 3) for k in range(size)}
    marker_set = MarkerSet(tuple(Marker(n, "pelvis", p) for n, p in local.items()), "test")
    names = tuple(local)
    rot = Rotation.from_rotvec([0.1, 0.4, -0.2]).as_matrix()
    frame = np.array([rot @ local[n] for n in names]) + [0, 0, 1]
    swapped = frame[[names.index(n) for n in ("M1", "M0", *names[2:])]]
    trial = MarkerData(names, np.repeat(swapped[None], 3, axis=0), np.arange(3) / 100.0, 100.0, "m", "t")
    assert cluster_label_checks(marker_set, trial)[0]["relabel"] == {"M0": "M1", "M1": "M0"}
