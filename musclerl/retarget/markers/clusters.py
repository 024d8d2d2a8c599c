"""Marker clusters whose labels in a trial disagree with the static trial: detected and reported.

A lab that relabels a thigh or shank cluster between the static trial and a walk (two markers
swapped, or the cluster's labels mirrored front-to-back) leaves every marker present and every
distance between them plausible, so nothing fails: IK fits the wrong labels, the segment twists
on its joint limits, and the pooled marker RMS only grows. A segment's markers move rigidly with
it, so their trial positions are one rigid motion of where calibration placed them on the body
(the static trial's labels). Per body with at least :data:`MIN_MARKERS` markers, on up to
:data:`MAX_FRAMES` frames, the residual of the best rigid fit (:func:`rigid_fit_rms`, proper rotations:
a mirror image is no rigid motion) is compared under every relabelling of that body's markers:
the labels as the trial gives them are reported as disagreeing when another assignment fits
much better (:data:`MIN_GAIN_M` and :data:`MIN_RATIO`). Nothing here depends on how many markers
a cluster has or on the marker set's left/right symmetry.

Reported, not fixed: the report's ``cluster_labels`` lists each such body with the relabelling
that fits (trial label -> the static trial's label for that marker) and both residuals; the
retargeting warns in one line. Re-label the trial (or the static trial) and run again.
"""

from __future__ import annotations

import itertools

import numpy as np

from musclerl.models.markers import MarkerSet
from musclerl.motion.trc import MarkerData

MIN_MARKERS = 3
MAX_MARKERS = 8  # 40,320 relabellings, fitted at once; larger sets are left unchecked
MAX_FRAMES = 15
MIN_GAIN_M = 0.005  # the relabelled fit is this much better (median residual RMS) ...
MIN_RATIO = 2.0  # ... and at most half the residual as labelled


def rigid_fit_rms(body_m: np.ndarray, world_m: np.ndarray) -> np.ndarray:
    """RMS residual (m) of the best rigid motion (Kabsch, proper rotation) of each labelling
    ``body_m`` (P, K, 3) onto the points ``world_m`` (K, 3): (P,)."""
    src = body_m - body_m.mean(axis=1, keepdims=True)
    dst = world_m - world_m.mean(axis=0)
    u, sv, vt = np.linalg.svd(np.einsum("pki,kj->pij", src, dst))
    sign = np.sign(np.linalg.det(np.einsum("pij,pjk->pik", u, vt)))
    # sum of squared residuals = |src|^2 + |dst|^2 - 2 tr(R^T H), tr = s1 + s2 + sign s3
    trace = sv[:, 0] + sv[:, 1] + sign * sv[:, 2]
    sq = np.sum(src**2, axis=(1, 2)) + np.sum(dst**2) - 2.0 * trace
    return np.sqrt(np.maximum(sq, 0.0) / body_m.shape[1])


def cluster_label_checks(marker_set: MarkerSet, trial: MarkerData) -> list[dict]:
    """One entry per body whose trial labels disagree with the calibrated ``marker_set``
    (locations in the body frames, placed from the static trial): ``body``, ``relabel`` (trial
    label -> the static trial's label), ``rms_as_labelled_m``, ``rms_relabelled_m``."""
    index = {name: i for i, name in enumerate(trial.names)}
    bodies: dict[str, list] = {}
    for marker in marker_set.markers:
        if marker.name in index:
            bodies.setdefault(marker.body, []).append(marker)
    findings = []
    for body, markers in bodies.items():
        if not MIN_MARKERS <= len(markers) <= MAX_MARKERS:
            continue
        local = np.array([m.location_m for m in markers])
        seen = trial.positions_m[:, [index[m.name] for m in markers]]  # (T, K, 3)
        complete = np.flatnonzero(np.isfinite(seen).all(axis=(1, 2)))
        if len(complete) == 0:
            continue
        frames = seen[complete[np.linspace(0, len(complete) - 1, min(MAX_FRAMES, len(complete))).astype(int)]]
        perms = np.array(list(itertools.permutations(range(len(markers)))))  # identity first
        rms = np.median([rigid_fit_rms(local[perms], frame) for frame in frames], axis=0)  # (P,)
        as_labelled, k = float(rms[0]), int(np.argmin(rms))
        best, best_rms = tuple(perms[k]), float(rms[k])
        if k and as_labelled - best_rms >= MIN_GAIN_M and as_labelled >= MIN_RATIO * best_rms:
            relabel = {markers[k].name: markers[best[k]].name for k in range(len(markers)) if best[k] != k}
            findings.append(
                {
                    "body": body,
                    "relabel": relabel,
                    "rms_as_labelled_m": as_labelled,
                    "rms_relabelled_m": best_rms,
                }
            )
    return findings


def cluster_warning(findings: list[dict]) -> str | None:
    """One line for :func:`cluster_label_checks`' findings, or None."""
    if not findings:
        return None
    parts = [
        f"{f['body']}: {', '.join(f'{a} is {b}' for a, b in f['relabel'].items())} "
        f"({1e3 * f['rms_as_labelled_m']:.0f} mm rigid-fit residual as labelled, "
        f"{1e3 * f['rms_relabelled_m']:.0f} mm relabelled)"
        for f in findings
    ]
    return "marker labels disagree with the static trial's: " + "; ".join(parts)
