"""What a reference trial says about its feet: which one supports the body, and the subject's size.

Two inputs of :func:`musclerl.dynamics.foot_placement.plant_feet` for a reference's own kinematics
(:func:`musclerl.evaluate.reference_motion.reference_trajectory`):

* **support** (:func:`reference_support`): each foot's share of the vertical ground reaction in the
  reference's own GRF (every layout :func:`musclerl.evaluate.gait_events.reference_foot_grf` reads:
  Boo's ``ground_force_[rl]_vy``, plates ``ground_force_vy`` / ``1_ground_force_vy``, musclerl's),
  and the stance flags of its gait-event detector. Where a foot's force is not measured (off the
  plates) and the plates carry less than :data:`CARRIED_BW`, or with no GRF at all, the feet's
  motion on the model decides
  (:func:`musclerl.dynamics.foot_placement.kinematic_support`);
* **leg-length ratio** (:func:`leg_length_ratio`): the model's leg length over the subject's. The
  Boo layout carries neither the subject's height nor leg length, so the ratio is measured on the
  same posture: in support, the model's pelvis origin stands ``pelvis_ty - h_support`` above the
  floor (``h_support``: its supporting contact point, the angles as measured), the subject's stood
  ``pelvis_ty - floor_y`` above its lab floor; the ratio is the median of the first over the median
  of the second. The lab floor is the centre of pressure's height (``*_py`` columns, median over
  loaded samples) where the GRF has it, else y = 0 (OpenSim's ground).

Shapes: T kinematics frames (the reference's ``time_sec``), F feet in the order of
:class:`~musclerl.dynamics.foot_placement.FootTrack` ``.feet`` (``right``, ``left``).
"""

from __future__ import annotations

import numpy as np

from musclerl.dynamics.foot_placement import FootTrack, kinematic_support
from musclerl.evaluate.gait_events import ON_BW, SIDES, reference_foot_grf
from musclerl.motion.reference import ReferenceData

FOOT_SIDES = {"right": "r", "left": "l"}
#: A leg-length ratio outside this range is not a size difference but a wrong floor or pelvis height.
RATIO_RANGE = (0.6, 1.6)
#: Where a foot's force is not measured, the plates still decide when they carry this much (BW):
#: nothing of the body's weight is missing, so the unmeasured foot carries none of it.
CARRIED_BW = 0.8
#: Frames where the feet carry at least this share of the support measure the pelvis height.
FULL_SUPPORT = 0.9


def reference_support(
    ref: ReferenceData, track: FootTrack, rate_hz: float
) -> tuple[np.ndarray, np.ndarray, str]:
    """(support shares (T, F), stance flags (T, F) bool, a note saying where they came from)."""
    kin = kinematic_support(track, rate_hz)
    kin_stance = kin >= 0.5
    grf = reference_foot_grf(ref)
    if grf is None or any(f not in FOOT_SIDES for f in track.feet):
        return kin, kin_stance, "support from the feet's motion on the model (no GRF)"
    order = [SIDES.index(FOOT_SIDES[f]) for f in track.feet]
    vertical = np.nan_to_num(grf.vertical_bw[:, order], nan=0.0).clip(min=0.0)
    total = vertical.sum(axis=1, keepdims=True)
    measured = grf.measured()[:, order].all(axis=1) | (total[:, 0] >= CARRIED_BW)
    share = np.where(total > ON_BW, vertical / np.maximum(total, 1e-12), 0.0)
    support = np.where(measured[:, None], share, kin)
    events = np.column_stack([grf.events(FOOT_SIDES[f]).stance for f in track.feet])
    stance = np.where(measured[:, None], events, kin_stance)
    unmeasured = int((~measured).sum())
    note = f"support from the reference's GRF ({grf.layout} layout)"
    if unmeasured:
        note += f"; from the feet's motion on the model in {unmeasured} frames without a measured foot"
    return support, stance, note


def floor_height_m(ref: ReferenceData) -> tuple[float, str]:
    """The lab floor's height (OpenSim y, m): the median centre-of-pressure height over loaded
    samples (``*_py`` beside a ``*_vy`` above :data:`ON_BW`), else 0; and how it was found."""
    cols = list(ref.computed_grf_columns)
    valid = np.asarray(ref.computed_grf_valid, dtype=bool)
    heights = []
    for j, c in enumerate(cols):
        if c.endswith("_py") and c.replace("_py", "_vy") in cols:
            vy = np.asarray(ref.computed_grf[:, cols.index(c.replace("_py", "_vy"))], dtype=float)
            loaded = valid & np.isfinite(vy) & (vy > ON_BW)
            heights.append(np.asarray(ref.computed_grf[loaded, j], dtype=float))
    values = np.concatenate(heights) if heights else np.zeros(0)
    values = values[np.isfinite(values)]
    if values.size:
        return float(np.median(values)), "the centre of pressure's height"
    return 0.0, "OpenSim's ground (y = 0; the GRF has no centre of pressure)"


def leg_length_ratio(ref: ReferenceData, track: FootTrack, support: np.ndarray) -> tuple[float, str]:
    """(the model's leg length over the subject's, a note), measured as the module docstring says
    on ``track`` (the reference's angles and unscaled pelvis translation on the model). 1 when the
    reference has no ``pelvis_ty``, no frame in full support, or the ratio falls outside
    :data:`RATIO_RANGE`."""
    columns = list(ref.joint_angle_columns)
    if "pelvis_ty" not in columns:
        return 1.0, "pelvis translations not scaled: no pelvis_ty"
    pelvis_y = np.asarray(ref.joint_angle[:, columns.index("pelvis_ty")], dtype=float)
    total = support.sum(axis=1)
    full = total >= FULL_SUPPORT
    if not full.any():
        return 1.0, "pelvis translations not scaled: no frame in full support"
    floor_m, floor_source = floor_height_m(ref)
    support_z = (support * track.height_m).sum(axis=1)[full] / total[full]
    model_m = float(np.median(pelvis_y[full] - support_z))
    subject_m = float(np.median(pelvis_y[full] - floor_m))
    ratio = model_m / subject_m if subject_m > 0 else float("nan")
    if not RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]:
        return 1.0, (
            f"pelvis translations not scaled: the pelvis height ratio {ratio:.3g} (model {model_m:.3f} m, "
            f"subject {subject_m:.3f} m above the floor at {floor_source}) is no leg-length ratio"
        )
    return ratio, (
        f"pelvis translations scaled by the leg-length ratio {ratio:.3f}: pelvis height in support "
        f"{model_m:.3f} m on the model, {subject_m:.3f} m on the subject (floor: {floor_source})"
    )
