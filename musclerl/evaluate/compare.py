"""Pair a rollout's recording with references, column by column, ready for metrics and plots.

A :class:`Series` is one column on the *reference's* timeline: the simulation is resampled onto
the reference sample times (``time_s``), and ``valid`` is the reference's own validity mask
(``joint_torque_column_valid``, per row and column, for torques: one leg's samples count
while the other leg is off the force plates). Times: simulation clip time
plus ``offset_s`` equals reference ``time_sec``.

Name matching: reference torque columns ``<coordinate>_moment`` / ``<coordinate>_force`` (and a
bare ``<coordinate>``) match the model coordinate ``<coordinate>``; activation and EMG columns
match muscle names. A per-column sign map multiplies reference columns whose convention differs
(e.g. ``{"knee_angle_r_moment": -1}`` for gait2354 exports).

Torques are compared in N·m/kg: simulation moments divided by the model's mass (or, on request, by
the subject's ``subject_weight_kg``), the reference's as stored (divided by the subject's mass).
The policy's moment is its *net* joint moment (muscles + joint springs/damping + joint-limit forces,
:mod:`musclerl.dynamics.joint_moments`), what inverse dynamics reports; kind ``torque_muscle`` is
the muscles' part alone, against the same reference, beside it.

Ground reactions (kind ``grf``, BW): per foot the vertical and anterior-posterior force of the
policy (``mj_contactForce`` per foot) against the reference's plates
(:func:`musclerl.evaluate.gait_events.reference_foot_grf`), where the reference measured that foot.

Gait cycles are cut per leg: a column of the left leg at left heel strikes, of the right leg (and
of neither) at right ones; the simulation at its own strikes, the reference at its own.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from musclerl.evaluate import metrics
from musclerl.evaluate.alignment import Cycles, normalise_cycles, resample
from musclerl.evaluate.gait_events import SIDES, FootGRF, GaitEvents, reference_foot_grf, sim_foot_grf
from musclerl.motion.reference import side_of
from musclerl.rl.rollout import Recording

TORQUE_SUFFIXES = ("_moment", "_force")
PELVIS_ANGLES = ("pelvis_tilt", "pelvis_list", "pelvis_rotation")


@dataclasses.dataclass(frozen=True)
class Series:
    """One compared column: ``sim``, ``ref``, ``valid`` all (T,) on ``time_s`` (T,)."""

    kind: str  # "torque" | "angle" | "activation" | "emg"
    name: str
    unit: str
    time_s: np.ndarray
    sim: np.ndarray
    ref: np.ndarray
    valid: np.ndarray


def coordinate_of(column: str) -> str:
    """The coordinate a torque column belongs to: ``column`` without a ``TORQUE_SUFFIXES`` ending."""
    for suffix in TORQUE_SUFFIXES:
        if column.endswith(suffix):
            return column[: -len(suffix)]
    return column


def torque_series(
    rec: Recording,
    ref,
    offset_s: float = 0.0,
    signs: dict[str, float] | None = None,
    sim_mass_kg: float | None = None,
    source: str = "net",
) -> list[Series]:
    """Torque columns (N·m/kg) shared by the recording and a :class:`ReferenceData`: the
    simulation's moments over ``sim_mass_kg`` (default: the model's mass). ``source`` "net"
    (kind ``torque``: muscles + passive + limits) or "muscle" (kind ``torque_muscle``)."""
    signs = signs or {}
    out = []
    sim_t = rec.time_s + offset_s
    moment_nm = rec.torque_nm if source == "net" else rec.muscle_torque_nm
    per_kg = moment_nm / (rec.model_mass_kg if sim_mass_kg is None else sim_mass_kg)
    kind = "torque" if source == "net" else "torque_muscle"
    for j, column in enumerate(ref.joint_torque_columns):
        coord = coordinate_of(column)
        if coord not in rec.coordinates:
            continue
        k = rec.coordinates.index(coord)
        sim = resample(sim_t, per_kg[:, k], ref.time_sec)
        valid = ref.joint_torque_column_valid[:, j]
        unit = "N/kg" if column.endswith("_force") else "N*m/kg"
        refcol = ref.joint_torque[:, j] * signs.get(column, 1.0)
        out.append(Series(kind, coord, unit, ref.time_sec, sim, refcol, valid))
    return out


def grf_series(rec: Recording, ref_grf: FootGRF, offset_s: float = 0.0) -> list[Series]:
    """Per foot vertical and anterior-posterior GRF (BW), the policy's (:func:`sim_foot_grf`)
    resampled onto the reference's: ``vertical_r``, ``vertical_l``, ``ap_r``, ``ap_l``; valid where
    the reference measured that foot."""
    sim = sim_foot_grf(rec, offset_s)
    measured = ref_grf.measured()
    out = []
    for what, sim_v, ref_v in (
        ("vertical", sim.vertical_bw, ref_grf.vertical_bw),
        ("ap", sim.ap_bw, ref_grf.ap_bw),
    ):
        for k, side in enumerate(SIDES):
            s = resample(sim.time_s, sim_v[:, k], ref_grf.time_s)
            out.append(Series("grf", f"{what}_{side}", "BW", ref_grf.time_s, s, ref_v[:, k], measured[:, k]))
    return out


def angle_series(
    rec: Recording, ref, offset_s: float = 0.0, signs: dict[str, float] | None = None
) -> list[Series]:
    """Joint-angle columns (degrees) shared by the recording and the reference."""
    signs = signs or {}
    out = []
    sim_t = rec.time_s + offset_s
    for j, column in enumerate(ref.joint_angle_columns):
        if column in rec.coordinates:
            sim_col = rec.angle[:, rec.coordinates.index(column)]
        elif column in PELVIS_ANGLES and rec.pelvis.shape[1] == 6:
            sim_col = rec.pelvis[:, PELVIS_ANGLES.index(column)]
        else:
            continue
        sim = resample(sim_t, sim_col, ref.time_sec)
        refcol = ref.joint_angle[:, j] * signs.get(column, 1.0)
        out.append(Series("angle", column, "deg", ref.time_sec, sim, refcol, np.isfinite(refcol)))
    return out


def clip_angle_series(rec: Recording, model, clip) -> list[Series]:
    """Joint angles (degrees) of the recording against the motion clip it tracked (a one-clip
    Trajectory of ``model``): the retargeted walk is the reference when no lab reference is
    given. Compared on the recording's frames; a looping clip is read modulo its period.

    Only the joints' own coordinates and the pelvis angles: the reference's root translation is
    where the clip walks, which the policy's world drift would turn into an angle-free error."""
    from musclerl.models.opensim_coordinates import qpos_to_coordinates, qpos_to_pelvis

    _, ref_angle = qpos_to_coordinates(model, clip.qpos, list(rec.coordinates))
    pelvis = qpos_to_pelvis(model, clip.qpos) if rec.pelvis.shape[1] == 6 else None
    clip_t = np.arange(clip.num_frames) / clip.rate_hz
    period_s = clip.num_frames / clip.rate_hz if bool(clip.clip_loop[0]) else None
    valid = np.ones(len(rec.time_s), dtype=bool) if period_s else rec.time_s <= clip_t[-1] + 1e-9
    columns = [(name, rec.angle[:, k], ref_angle[:, k]) for k, name in enumerate(rec.coordinates)]
    if pelvis is not None:
        columns += [(name, rec.pelvis[:, k], pelvis[:, k]) for k, name in enumerate(PELVIS_ANGLES)]
    out = []
    for name, sim, ref_col in columns:
        ref = np.interp(rec.time_s, clip_t, ref_col, period=period_s)
        out.append(Series("angle", name, "deg", rec.time_s, np.asarray(sim, float), ref, valid.copy()))
    return out


def activation_series(rec: Recording, table, offset_s: float = 0.0) -> list[Series]:
    """Muscle activations against a static-optimisation table (``Table``: time + muscle columns)."""
    out = []
    sim_t = rec.time_s + offset_s
    for j, column in enumerate(table.columns):
        if column not in rec.muscles:
            continue
        sim = resample(sim_t, rec.activation[:, rec.muscles.index(column)], table.time_s)
        refcol = np.asarray(table.data[:, j], dtype=float)
        out.append(
            Series(
                "activation", column, "0-1", np.asarray(table.time_s, float), sim, refcol, np.isfinite(refcol)
            )
        )
    return out


def emg_series(
    rec: Recording,
    time_s: np.ndarray,
    envelopes: np.ndarray,
    channels: list[str],
    mapping: dict[str, list[str]],
    offset_s: float = 0.0,
) -> list[Series]:
    """Normalised EMG envelopes (T_emg, C) against the mean activation of each channel's muscles.

    The envelope is resampled onto the simulation's frames (it is smooth; the raw EMG rate would
    only cost time); ``valid`` is where the EMG covers the frame.
    """
    out = []
    sim_t = rec.time_s + offset_s
    for c, channel in enumerate(channels):
        muscles = [m for m in mapping.get(channel, []) if m in rec.muscles]
        if not muscles:
            continue
        sim = rec.activation[:, [rec.muscles.index(m) for m in muscles]].mean(axis=1)
        ref = resample(time_s, envelopes[:, c], sim_t)
        label = f"{channel} ({'+'.join(muscles)})"
        out.append(Series("emg", label, "0-1", sim_t, sim, ref, np.isfinite(ref)))
    return out


def series_metrics(
    series: list[Series], max_lag_s: float = metrics.DEFAULT_MAX_LAG_S
) -> list[metrics.ColumnMetrics]:
    """:func:`metrics.column_metrics` of every series (rate from its median sample interval)."""
    out = []
    for s in series:
        rate = 1.0 / float(np.median(np.diff(s.time_s))) if len(s.time_s) > 1 else 1.0
        out.append(
            metrics.column_metrics(f"{s.kind}:{s.name}", s.sim, s.ref, rate, s.valid, max_lag_s, s.unit)
        )
    return out


@dataclasses.dataclass(frozen=True)
class CycleComparison:
    """Gait-cycle view of one series: simulation and reference cycles (K, 101)."""

    series: Series
    sim: Cycles
    ref: Cycles

    def metrics(self) -> dict[str, float]:
        """r and RMSE of the two cycle means (101,) (no r for a flat reference mean, as on time)."""
        a, b = self.sim.mean()[:, 0], self.ref.mean()[:, 0]
        ok = metrics.r_applicable(metrics.reference_range(a, b), self.series.unit)
        return {
            "cycle_r": metrics.pearson_r(a, b) if ok else float("nan"),
            "cycle_rmse": metrics.rmse(a, b),
            "sim_cycles": self.sim.count,
            "ref_cycles": self.ref.count,
        }


def sim_events(rec: Recording, offset_s: float = 0.0) -> dict[str, GaitEvents]:
    """Per side, heel strikes and toe-offs (reference time) of the policy's feet from their
    vertical contact force (:func:`musclerl.evaluate.gait_events.gait_events`, BW thresholds)."""
    grf = sim_foot_grf(rec, offset_s)
    return {side: grf.events(side) for side in SIDES}


def reference_events(ref) -> dict[str, GaitEvents] | None:
    """Per side, heel strikes and toe-offs from the reference's own GRF in any layout we read
    (:func:`musclerl.evaluate.gait_events.reference_foot_grf`); None without GRF."""
    grf = reference_foot_grf(ref)
    return None if grf is None else {side: grf.events(side) for side in SIDES}


def reference_heel_strikes(ref, side: str = "r") -> np.ndarray:
    """Heel strikes (H,) of one side from the reference's GRF; empty without GRF."""
    events = reference_events(ref)
    return np.zeros(0) if events is None else events[side].heel_strikes_s


def leg_of(name: str) -> str | None:
    """ "r" / "l" of a compared column: its own name's side, or for an EMG series
    (``"SOL (soleus_r+gasmed_r)"``) the side of the muscles in brackets when they agree."""
    if "(" in name:
        sides = {side_of(m) for m in name[name.rindex("(") + 1 :].rstrip(")").split("+")}
        return sides.pop() if len(sides) == 1 else None
    return side_of(name)


def cycle_comparisons(
    series: list[Series],
    sim_strikes_s: dict[str, np.ndarray] | np.ndarray,
    ref_strikes_s: dict[str, np.ndarray] | np.ndarray,
    tolerance: float = 0.25,
) -> list[CycleComparison]:
    """Cycle-normalise each series: the simulation on its own strikes, the reference on its own,
    each column at its leg's strikes (``{"r": (H,), "l": (H,)}``; a column of no leg at the right
    one's; one array: the same strikes for every column).

    Reference samples outside ``valid`` are NaN before cutting, so they leave gaps, not values;
    policy cycles less than :data:`MIN_CYCLE_COVERAGE` simulated (the rollout ended) are dropped.
    """
    out = []
    for s in series:
        side = leg_of(s.name) or "r"
        sim_s = sim_strikes_s[side] if isinstance(sim_strikes_s, dict) else sim_strikes_s
        ref_s = ref_strikes_s[side] if isinstance(ref_strikes_s, dict) else ref_strikes_s
        ref_vals = np.where(s.valid, s.ref, np.nan)
        ref_cycles = normalise_cycles(s.time_s, ref_vals, ref_s, tolerance)
        sim_cycles = complete_cycles(normalise_cycles(s.time_s, s.sim, sim_s, tolerance))
        out.append(CycleComparison(s, sim_cycles, ref_cycles))
    return out


MIN_CYCLE_COVERAGE = 0.9  # a policy cycle with less of its 101 points simulated is not a cycle


def complete_cycles(cycles: Cycles, min_coverage: float = MIN_CYCLE_COVERAGE) -> Cycles:
    """The cycles with at least ``min_coverage`` of their points finite (a rollout that fell or
    ended inside a cycle leaves it unfinished); the others join ``dropped_s``."""
    covered = (
        np.isfinite(cycles.values).mean(axis=(1, 2)) >= min_coverage if cycles.count else np.zeros(0, bool)
    )
    dropped = np.concatenate([cycles.dropped_s.reshape(-1, 2), cycles.bounds_s[~covered].reshape(-1, 2)])
    return Cycles(cycles.values[covered], cycles.bounds_s[covered], dropped)


def tracking_summary(recordings: list[Recording]) -> dict[str, float]:
    """MuscleMimic/PHC-style tracking metrics over episodes (one :class:`Recording` each).

    success_rate: fraction without early termination; mean_site_error_m, mpjpe_global_m and
    mpjpe_root_relative_m: means over all recorded frames of all episodes.
    """
    err = np.concatenate([r.site_err_m.reshape(-1) for r in recordings])
    return {
        "episodes": len(recordings),
        "frames": int(sum(r.num_frames for r in recordings)),
        "duration_s": float(sum(r.time_s[-1] - r.time_s[0] for r in recordings)),
        "early_terminations": int(sum(r.early_termination for r in recordings)),
        "success_rate": metrics.success_rate(np.array([r.early_termination for r in recordings])),
        "mean_site_error_m": float(np.nanmean(err)) if err.size else float("nan"),
        "mpjpe_global_m": float(np.nanmean(np.concatenate([r.mpjpe_m for r in recordings]))),
        "mpjpe_root_relative_m": float(np.nanmean(np.concatenate([r.mpjpe_local_m for r in recordings]))),
        "model_mass_kg": recordings[0].model_mass_kg,
    }
