"""Gait events and per-foot ground reactions, from a reference's GRF or a rollout's contacts.

One detector, :func:`gait_events`, finds heel strikes and toe-offs in a vertical force with
hysteresis: a foot is loaded once the force rises above ``on`` and unloaded once it falls below
``off`` (``off <= on``); force and thresholds share one unit (N, or body weights: BW). Every heel
strike of the evaluation comes from it: the reference's plates, the policy's feet, and boolean
contact flags (force 1 / 0 with on = off = 0.5).

Per-foot ground reactions (:class:`FootGRF`) are vertical and anterior-posterior forces in BW,
(T, 2) arrays with columns right, left, in the reference's lab frame whose x axis is the walking
direction (OpenSim's ground: X forward, Y up; MuJoCo's world: X forward, Z up). They are read from
every layout of ``computed_grf_columns`` we meet (:func:`reference_foot_grf`):

=================  ======================================  ========================================
layout             vertical / anterior-posterior columns   foot
=================  ======================================  ========================================
Boo (Gait120)      ``ground_force_r_vy`` / ``_r_vx``        in the name (``_r_``, ``_l_``)
plates             ``ground_force_vy``, ``1_ground_force_   each loaded run of a plate goes to the
                   vy``, ``2_...`` / ``..._vx``             foot whose hip is more flexed at its onset
                                                            (the leading foot lands)
musclerl           ``calcn_r_force_z`` / ``..._force_x``    the body in the name (MuJoCo world, Z up)
=================  ======================================  ========================================

A rollout's per-foot force (:func:`sim_foot_grf`) is ``Recording.grf_n``: ``mj_contactForce``
summed over the contacts between the ground and each foot's subtree, rotated to world.

A reference with no force (a motion clip, a lab trial without plates) still has feet: its events
come from their positions about the pelvis (:func:`kinematic_events`, Zeni et al.'s rule), and the
policy's are then timed by the same rule on its own poses, so the two are compared like for like.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from musclerl.geometry.arrays import runs

SIDES = ("r", "l")
ON_BW = 0.05  # a foot is loaded above 5 % body weight (about 35 N for 70 kg) ...
OFF_BW = 0.03  # ... and unloaded below 3 %: hysteresis against contact chatter
MIN_SWING_S = 0.1  # a lift-off shorter than this is chatter, not a swing
MIN_STANCE_S = 0.05  # a load shorter than this is a touch, not a stance
#: kinematic events: a foot's fore-aft swing about the pelvis under this is no step
ZENI_MIN_EXCURSION_M = 0.05
ZENI_MIN_STEP_S = 0.3  # kinematic events: one foot's heel strikes at least this far apart

_BOO = re.compile(r"^ground_force_([rl])_v([xyz])$")
_PLATE = re.compile(r"^(?:(\d+)_)?ground_force_v([xyz])$")
_OURS = re.compile(r"^(.+)_force_([xyz])$")


@dataclasses.dataclass(frozen=True)
class GaitEvents:
    """Events of one foot: ``heel_strikes_s`` (H,), ``toe_offs_s`` (O,) and ``stance`` (T,) bool on
    the force's own samples (loaded by the hysteresis rule, short phases removed)."""

    heel_strikes_s: np.ndarray
    toe_offs_s: np.ndarray
    stance: np.ndarray


def _crossing_s(t: np.ndarray, f: np.ndarray, i: int, level: float) -> float:
    """Time between samples i-1 and i where the force crosses ``level`` (linear interpolation)."""
    df = f[i] - f[i - 1]
    frac = 0.5 if df == 0 else float(np.clip((level - f[i - 1]) / df, 0.0, 1.0))
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def gait_events(
    time_s: np.ndarray,
    vertical_force: np.ndarray,
    on: float,
    off: float | None = None,
    min_swing_s: float = MIN_SWING_S,
    min_stance_s: float = MIN_STANCE_S,
    settle_s: float = 0.0,
) -> GaitEvents:
    """Heel strikes and toe-offs of one foot from its vertical force (T,) on ``time_s`` (T,).

    Loaded from the sample the force exceeds ``on`` until it falls below ``off`` (default ``on``).
    A heel strike is the interpolated time the force rises through ``on``, a toe-off the time it
    falls through ``off``. A swing shorter than ``min_swing_s`` is merged into the stances around it,
    a stance shorter than ``min_stance_s`` is dropped. A stance already under way at the first
    sample has no heel strike, nor has a first stance that starts within ``settle_s`` of it (a
    rollout's first frames settling onto the floor are not a step); one still under way at the
    last sample has no toe-off. NaN force is unloaded.
    """
    t = np.asarray(time_s, dtype=float)
    f = np.nan_to_num(np.asarray(vertical_force, dtype=float), nan=-np.inf)
    off = on if off is None else off
    if off > on:
        raise ValueError(f"off threshold {off} above on threshold {on}")
    loaded = np.zeros(len(t), dtype=bool)
    state = False
    for i, v in enumerate(f):
        state = v > on or (state and v >= off)
        loaded[i] = state
    merged: list[list[int]] = []
    stances = [(a, b) for a, b, value in runs(loaded) if value]  # b: the first unloaded sample
    for a, b in stances:  # a lift-off shorter than min_swing_s is chatter: join the two stances
        if merged and merged[-1][1] < len(t) and t[a] - t[merged[-1][1] - 1] < min_swing_s:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    stance = np.zeros(len(t), dtype=bool)
    strikes, toe_offs = [], []
    for a, b in merged:
        if t[min(b, len(t)) - 1] - t[a] < min_stance_s and 0 < a and b < len(t):
            continue
        stance[a:b] = True
        if a > 0 and (stance[:a].any() or t[a] - t[0] >= settle_s):
            strikes.append(_crossing_s(t, np.where(np.isfinite(f), f, 0.0), a, on))
        if b < len(t):
            toe_offs.append(_crossing_s(t, np.where(np.isfinite(f), f, 0.0), b, off))
    return GaitEvents(np.asarray(strikes), np.asarray(toe_offs), stance)


def contact_events(time_s: np.ndarray, contact: np.ndarray, min_swing_s: float = MIN_SWING_S) -> GaitEvents:
    """:func:`gait_events` of boolean contact flags (T,): heel strikes are their rising edges."""
    return gait_events(time_s, np.asarray(contact, dtype=float), 0.5, 0.5, min_swing_s, 0.0)


@dataclasses.dataclass(frozen=True)
class KinematicGait:
    """What :func:`kinematic_gait` reads from a pose sequence: ``events`` per side, each side's
    heel path ``heel_xy`` (T, 2, world), the walking ``direction`` (T, 2, unit) and ``time_s`` (T,)."""

    events: dict[str, GaitEvents]
    heel_xy: dict[str, np.ndarray]
    direction: np.ndarray
    time_s: np.ndarray


def kinematic_events(
    model, qpos: np.ndarray, time_s: np.ndarray, feet: tuple[str, ...]
) -> dict[str, GaitEvents]:
    """Per side, :func:`kinematic_gait`'s events alone."""
    return kinematic_gait(model, qpos, time_s, feet).events


def kinematic_gait(model, qpos: np.ndarray, time_s: np.ndarray, feet: tuple[str, ...]) -> KinematicGait:
    """Per side (:data:`SIDES`), gait events of the poses ``qpos`` (T, nq; free root first) at
    ``time_s`` (T,, evenly spaced) by Zeni et al.'s coordinate rule (Gait & Posture 2008, the rule
    OpenCap uses): a heel strike where the heel is farthest ahead of the pelvis along the walking
    direction, a toe-off where the toe is farthest behind it; stance from a strike to the next
    toe-off. ``feet`` are the model's foot bodies (``Recording.feet``), heel then toe per side
    (``calcn_r``, ``toes_r``, ...: a side's first and last body). The walking direction is the
    pelvis' horizontal velocity averaged over a second (a turn turns it); a swing of the foot about
    the pelvis under :data:`ZENI_MIN_EXCURSION_M` is no step (standing), and one foot's strikes
    are at least :data:`ZENI_MIN_STEP_S` apart. Peaks are placed between samples by a parabola.
    The heel paths and direction come with the events for :func:`spatiotemporal`.

    Why not height: a walking foot's lowest point clears the floor by 1-3 cm in mid-swing (toe
    clearance), so no height threshold separates swing from stance on retargeted clips. A
    reference without force plates and the policy tracking it get their events from this one
    rule, so their timing errors compare like for like."""
    import mujoco
    from scipy.ndimage import uniform_filter1d
    from scipy.signal import find_peaks

    time_s = np.asarray(time_s, dtype=float)
    qpos = np.asarray(qpos, dtype=float)
    n = len(time_s)
    rate_hz = (n - 1) / float(time_s[-1] - time_s[0]) if n > 1 else 1.0
    bodies = {side: [f for f in feet if _side_of_body(f) == side] for side in SIDES}
    body = mujoco.mjtObj.mjOBJ_BODY
    ids = {side: [mujoco.mj_name2id(model, body, f) for f in b] for side, b in bodies.items()}
    data = mujoco.MjData(model)
    xy = np.zeros((n, model.nbody, 2))
    for t in range(n):
        data.qpos[:] = qpos[t]
        mujoco.mj_kinematics(model, data)
        xy[t] = data.xpos[:, :2]
    pelvis = qpos[:, :2]
    velocity = np.gradient(pelvis, axis=0) * rate_hz if n > 1 else np.zeros_like(pelvis)
    heading = uniform_filter1d(velocity, size=max(1, int(round(rate_hz))), axis=0, mode="nearest")
    overall = pelvis[-1] - pelvis[0]
    fallback = overall / np.linalg.norm(overall) if np.linalg.norm(overall) > 1e-6 else np.array([1.0, 0.0])
    speed = np.linalg.norm(heading, axis=1, keepdims=True)
    direction = np.where(speed > 0.1, heading / np.maximum(speed, 1e-9), fallback)
    distance = max(1, int(ZENI_MIN_STEP_S * rate_hz))

    def extrema(signal: np.ndarray) -> np.ndarray:
        peaks, _ = find_peaks(signal, prominence=ZENI_MIN_EXCURSION_M, distance=distance)
        out = []
        for i in peaks:  # the parabola through the peak and its neighbours
            y0, y1, y2 = signal[i - 1], signal[i], signal[i + 1]
            curve = y0 - 2.0 * y1 + y2
            shift = 0.5 * (y0 - y2) / curve if curve < 0 else 0.0
            out.append(time_s[i] + float(np.clip(shift, -0.5, 0.5)) / rate_hz)
        return np.asarray(out)

    out, heels = {}, {}
    for side in SIDES:
        if not ids[side] or min(ids[side]) < 0:
            out[side] = GaitEvents(np.zeros(0), np.zeros(0), np.zeros(n, dtype=bool))
            continue
        heel = np.einsum("ti,ti->t", xy[:, ids[side][0]] - pelvis, direction)
        toe = np.einsum("ti,ti->t", xy[:, ids[side][-1]] - pelvis, direction)
        strikes, toe_offs = extrema(heel), extrema(-toe)
        stance = np.zeros(n, dtype=bool)
        starts = [time_s[0]] if len(toe_offs) and (not len(strikes) or toe_offs[0] < strikes[0]) else []
        for start in [*starts, *strikes]:
            later = toe_offs[toe_offs > start]
            end = later[0] if len(later) else time_s[-1] + 1.0
            stance |= (time_s >= start) & (time_s < end)
        out[side] = GaitEvents(strikes, toe_offs, stance)
        heels[side] = xy[:, ids[side][0]]
    return KinematicGait(out, heels, direction, time_s)


def spatiotemporal(gait: KinematicGait, until_s: float = np.inf) -> dict[str, float]:
    """Step length and cadence of a :func:`kinematic_gait`, from its heel strikes up to
    ``until_s``: ``step_length_m``, the mean distance
    along the walking direction from where the other heel struck to where this one strikes, for
    each strike that follows the other foot's (so two steps make a stride); ``cadence_spm``,
    steps per minute over those steps; ``steps`` their number (NaN figures without two
    alternating strikes). A policy slower than the walk it tracks takes shorter steps or fewer:
    these say which."""
    events, heels, direction, time_s = gait.events, gait.heel_xy, gait.direction, gait.time_s
    strikes = sorted(
        (t, side) for side in SIDES for t in events[side].heel_strikes_s if t <= until_s and side in heels
    )

    def landed(t: float, side: str) -> np.ndarray:  # where that heel was at that strike
        return np.array([np.interp(t, time_s, heels[side][:, i]) for i in (0, 1)])

    lengths, durations = [], []
    for (t0, side0), (t1, side1) in zip(strikes, strikes[1:], strict=False):
        if side0 == side1:
            continue
        ahead = landed(t1, side1) - landed(t0, side0)
        heading = np.array([np.interp(t1, time_s, direction[:, i]) for i in (0, 1)])
        lengths.append(float(ahead @ heading / max(np.linalg.norm(heading), 1e-9)))
        durations.append(t1 - t0)
    nan = float("nan")
    return {
        "step_length_m": float(np.mean(lengths)) if lengths else nan,
        "cadence_spm": 60.0 / float(np.mean(durations)) if durations else nan,
        "steps": len(lengths),
    }


@dataclasses.dataclass(frozen=True)
class FootGRF:
    """Ground reaction per foot on ``time_s`` (T,): ``vertical_bw``, ``ap_bw`` (T, 2), columns
    right, left (:data:`SIDES`), in body weights; NaN on rows without GRF. ``valid`` (T, 2) marks
    where a foot's force is measured: with plates not named by foot, only where that leg's torque
    columns are valid (the foot is in swing or fully on a plate, Gait120's rule), so a foot landing
    beside the plates reads 0 for its events but is not compared. ``layout`` names the columns'
    layout ("boo", "plates", "musclerl", "simulation") and ``notes`` what was assumed."""

    time_s: np.ndarray
    vertical_bw: np.ndarray
    ap_bw: np.ndarray
    layout: str
    notes: tuple[str, ...] = ()
    valid: np.ndarray | None = None  # (T, 2) bool: where the foot's force is measured (None: finite)
    settle_s: float = 0.0  # a first load within this of the start is no heel strike (a rollout's reset)

    def measured(self) -> np.ndarray:
        """(T, 2) bool: samples whose force is known for that foot (a foot off the plates is not)."""
        finite = np.isfinite(self.vertical_bw)
        return finite if self.valid is None else finite & self.valid

    def events(self, side: str, on_bw: float = ON_BW, off_bw: float = OFF_BW) -> GaitEvents:
        """:func:`gait_events` of one foot's vertical force."""
        k = SIDES.index(side)
        return gait_events(self.time_s, self.vertical_bw[:, k], on_bw, off_bw, settle_s=self.settle_s)


def _side_of_body(name: str) -> str | None:
    for side in SIDES:
        if name.endswith(f"_{side}") or name.startswith(f"{side}_") or f"_{side}_" in name:
            return side
    return None


def _assign_plates(time_s, plates: dict[str, np.ndarray], hip_flexion: dict[str, np.ndarray] | None):
    """Per plate (vertical BW (T,)) the foot of each loaded run: the one whose hip is more flexed at
    the run's onset (for a run under way at the first sample: less flexed at its end). Returns per
    plate a (T,) array of side indices (-1 unloaded)."""
    out = {}
    for name, fy in plates.items():
        ev = gait_events(time_s, fy, ON_BW, OFF_BW)
        owner = np.full(len(time_s), -1)
        for a, b, value in runs(ev.stance):
            if not value:
                continue
            if hip_flexion is None:
                side = 0 if not name else 1  # no kinematics: the first plate right, the others left
            elif a > 0:  # at heel strike the landing leg's hip is the more flexed
                side = 0 if hip_flexion["r"][a] >= hip_flexion["l"][a] else 1
            else:  # a stance under way at the first sample: at toe-off the leaving leg is behind
                i = min(b, len(time_s) - 1)
                side = 0 if hip_flexion["r"][i] <= hip_flexion["l"][i] else 1
            owner[a:b] = side
        out[name] = owner
    return out


def reference_foot_grf(ref) -> FootGRF | None:
    """Per-foot vertical and anterior-posterior GRF (BW) of a :class:`ReferenceData`, or None when
    its ``computed_grf`` holds no vertical force column (or none valid).

    Rows outside ``computed_grf_valid`` are NaN. Plates not named by foot are assigned per loaded
    run by hip flexion (``hip_flexion_r``/``_l`` in ``joint_angle``; without them the first plate is
    taken as the right foot's), which the notes say.
    """
    cols = list(ref.computed_grf_columns)
    data = np.where(np.asarray(ref.computed_grf_valid, bool)[:, None], ref.computed_grf, np.nan)
    T = len(ref.time_sec)
    vertical, ap = np.zeros((T, 2)), np.zeros((T, 2))
    found = np.zeros(2, dtype=bool)
    boo = {(m[1], m[2]): j for j, c in enumerate(cols) if (m := _BOO.match(c))}
    plates = {(m[1] or "", m[2]): j for j, c in enumerate(cols) if (m := _PLATE.match(c))}
    ours = {
        (m[1], m[2]): j
        for j, c in enumerate(cols)
        if (m := _OURS.match(c)) and not c.startswith(("ground_", "1_", "2_", "3_"))
    }
    notes: list[str] = []

    def add_by_side(entries, vertical_axis: str) -> None:
        """Sum columns ``(side, axis, j)`` into each foot's vertical and anterior-posterior force."""
        for side, axis, j in entries:
            k = SIDES.index(side)
            if axis == vertical_axis:
                vertical[:, k] += np.nan_to_num(data[:, j])
                found[k] = True
            elif axis == "x":
                ap[:, k] += np.nan_to_num(data[:, j])

    if any(k[1] == "y" for k in boo):
        layout = "boo"
        add_by_side([(side, axis, j) for (side, axis), j in boo.items()], "y")
    elif any(k[1] == "y" for k in plates):
        layout = "plates"
        names = sorted({p for p, axis in plates if axis == "y"})
        vy = {p: np.nan_to_num(data[:, plates[(p, "y")]]) for p in names}
        angles = list(ref.joint_angle_columns)
        hips = None
        if {"hip_flexion_r", "hip_flexion_l"} <= set(angles):
            hips = {s: ref.joint_angle[:, angles.index(f"hip_flexion_{s}")] for s in SIDES}
            notes.append("plates assigned to feet per stance: the foot whose hip is more flexed at its onset")
        else:
            notes.append("plates assigned to feet without hip angles: the first plate right, the others left")
        owners = _assign_plates(ref.time_sec, vy, hips)
        for p in names:
            vx = np.nan_to_num(data[:, plates[(p, "x")]]) if (p, "x") in plates else np.zeros(T)
            for k in range(2):
                mine = owners[p] == k
                vertical[mine, k] += vy[p][mine]
                ap[mine, k] += vx[mine]
        found[:] = True
    elif any(k[1] == "z" and _side_of_body(k[0]) for k in ours):
        layout = "musclerl"
        sided = [(_side_of_body(body), axis, j) for (body, axis), j in ours.items()]
        add_by_side([entry for entry in sided if entry[0] is not None], "z")
    else:
        return None
    bad = ~np.asarray(ref.computed_grf_valid, bool)
    if bad.all() or not found.any():
        return None
    vertical[bad] = np.nan
    ap[bad] = np.nan
    vertical[:, ~found] = np.nan
    ap[:, ~found] = np.nan
    valid = np.ones((T, 2), dtype=bool)
    if layout == "plates":
        torque_cols = list(ref.joint_torque_columns)
        for k, side in enumerate(SIDES):
            leg = [j for j, c in enumerate(torque_cols) if _side_of_body(c.rsplit("_", 1)[0]) == side]
            if leg:
                valid[:, k] = np.asarray(ref.joint_torque_column_valid)[:, leg].all(axis=1)
    return FootGRF(np.asarray(ref.time_sec, float), vertical, ap, layout, tuple(notes), valid)


def sim_foot_grf(rec, offset_s: float = 0.0) -> FootGRF:
    """Per-foot GRF (BW) of a rollout :class:`Recording`, on reference time (clip time +
    ``offset_s``): the world z (vertical) and x (anterior-posterior) of ``grf_n`` summed over each
    side's feet (names ending in ``_r`` / ``_l``), over the model's weight. A foot landing in the
    first ``MIN_SWING_S`` after the reset is settling, not striking (``settle_s``)."""
    vertical = np.full((rec.num_frames, 2), np.nan)
    ap = np.full((rec.num_frames, 2), np.nan)
    for k, side in enumerate(SIDES):
        feet = [i for i, f in enumerate(rec.feet) if _side_of_body(f) == side]
        if feet:
            vertical[:, k] = rec.grf_n[:, feet, 2].sum(axis=1) / rec.body_weight_n
            ap[:, k] = rec.grf_n[:, feet, 0].sum(axis=1) / rec.body_weight_n
    return FootGRF(rec.time_s + offset_s, vertical, ap, "simulation", settle_s=MIN_SWING_S)


def event_timing_errors_ms(sim_s: np.ndarray, ref_s: np.ndarray, window_s: float = 0.3) -> dict[str, float]:
    """Each reference event (s) paired with the nearest simulated one within ``window_s``:
    ``mean_error_ms`` (sim - ref, signed), ``mean_abs_error_ms`` and ``matched`` (pairs found)."""
    sim_s = np.asarray(sim_s, dtype=float)
    errs = []
    for r in np.asarray(ref_s, dtype=float):
        if sim_s.size:
            d = sim_s - r
            k = int(np.argmin(np.abs(d)))
            if abs(d[k]) <= window_s:
                errs.append(1e3 * d[k])
    e = np.asarray(errs)
    nan = float("nan")
    return {
        "mean_error_ms": float(e.mean()) if e.size else nan,
        "mean_abs_error_ms": float(np.abs(e).mean()) if e.size else nan,
        "matched": int(e.size),
    }


def stance_peaks_bw(grf: FootGRF, side: str, events: GaitEvents | None = None) -> float:
    """Mean over complete stances (heel strike to toe-off inside the data) of the peak vertical GRF
    (BW) of one foot; over every loaded sample when no stance is complete; NaN when never loaded."""
    k = SIDES.index(side)
    ev = events or grf.events(side)
    fz = grf.vertical_bw[:, k]
    peaks = []
    for a, b, value in runs(ev.stance):
        if value and a > 0 and b < len(fz):
            peaks.append(float(np.nanmax(fz[a:b])))
    if peaks:
        return float(np.mean(peaks))
    return (
        float(np.nanmax(fz[ev.stance]))
        if ev.stance.any() and np.isfinite(fz[ev.stance]).any()
        else float("nan")
    )
