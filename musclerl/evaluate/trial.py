"""One evaluation trial: roll a policy out on a motion and compare it with its references.

:func:`evaluate_trial` is what ``musclerl evaluate`` does for one motion/reference pair; the
folder mode (:mod:`musclerl.evaluate.folder`) calls it once per file, in worker processes.
It writes into ``out`` (atomically, the whole folder): ``metrics.json``, ``metrics.csv``,
``report.md``, ``recording.npz`` (every recorded array, see :mod:`musclerl.rl.rollout`) and
``plots/*.png``, and returns a :class:`TrialResult` for tables across trials.

Without a motion, the reference's own ``joint_angle`` is tracked
(:mod:`musclerl.evaluate.reference_motion`); its clip time 0 is the reference's first sample, so
the comparison's time offset starts at ``time_sec[0]``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from musclerl.errors import InputError

OVERVIEW_PAGE = 20  # columns per overview PNG (5 rows of 4)
CYCLE_POINTS = 101  # 0..100 % of a gait cycle (or of the trial)


@dataclasses.dataclass(frozen=True)
class TrialInputs:
    """The files of one trial; ``motion`` or ``reference`` (or both) is given."""

    motion: Path | None = None
    reference: Path | None = None
    activations: Path | None = None
    emg: Path | None = None
    emg_map: Path | None = None
    emg_processed: bool = False
    label: str | None = None  # the trial's name (default: the reference's, else the motion's stem)

    @property
    def name(self) -> str:
        return self.label or Path(self.reference or self.motion).stem


@dataclasses.dataclass(frozen=True)
class TrialOptions:
    """How to evaluate: clip and length, timing, lag window, heel strikes and reference signs
    (``signs`` empty: none given; with reference kinematics the knee flips are then detected)."""

    clip: int = 0
    max_steps: int | None = None
    all_clips: bool = False
    time_offset_s: float = 0.0
    max_lag_s: float = 0.3  # metrics.DEFAULT_MAX_LAG_S
    heel_strikes_s: tuple[float, ...] | None = None
    signs: dict[str, float] = dataclasses.field(default_factory=dict)
    treadmill: bool = False  # reference kinematics: add the belt's motion (walk overground)
    column_plots: bool = True  # overview pages and one PNG per compared column (else tracking.png only)
    sim_torque_mass: str = "model"  # policy torques per kg of "model" mass or of "subject_weight_kg"
    # the policy's gait cycles cut at its "own" heel strikes (as published figures are) or at the
    # "reference"'s (the rollout runs on the reference's clock: the same strides, time-locked)
    sim_cycles: str = "own"


@dataclasses.dataclass(frozen=True)
class TrialResult:
    """What tables across trials need from one trial.

    ``columns``: the rows of ``metrics.csv``; ``torque_cycles``: per torque coordinate the
    simulation and reference means over the trial's gait cycles, each (101,) (over the whole
    compared span when no torque column has gait cycles, see ``cycle_basis``).
    """

    name: str
    subject: str
    tracking: dict
    columns: list[dict]
    torque_cycles: dict[str, tuple[np.ndarray, np.ndarray]]
    cycle_basis: str  # "gait cycle" | "trial"
    notes: list[str]
    gait: dict = dataclasses.field(default_factory=dict)  # headline.gait_summary: events, peaks, knee
    # per headline column ("kind:column", headline.headline_keys) with gait cycles on both sides:
    # the policy's and the reference's cycle means, each (101,)
    cycle_means: dict[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)


def load_inputs(inputs: TrialInputs):
    """Read every reference input (bad files fail before the slow rollout): ref, activations,
    (EMG, its map)."""
    ref = act_table = emg = emg_map = None
    if inputs.reference:
        from musclerl.motion.reference import read_reference

        ref = read_reference(inputs.reference)
    if inputs.activations:
        from musclerl.motion.storage import read_storage

        act_table = read_storage(inputs.activations)
    if inputs.emg:
        from musclerl.evaluate.emg import read_emg, read_emg_map

        emg = read_emg(inputs.emg)
        emg_map = read_emg_map(inputs.emg_map, emg.channels)
    return ref, act_table, emg, emg_map


def _motion_angles(env, clip, rec) -> dict[str, np.ndarray]:
    """The tracked clip's coordinates on the recording's frames, by name (T,) in the recording's
    units (deg for hinges; clip time from 0, wrapped when the clip loops)."""
    from musclerl.models.opensim_coordinates import qpos_to_coordinates

    time_s = np.arange(clip.num_frames) / clip.rate_hz
    period = clip.num_frames / clip.rate_hz if bool(clip.clip_loop[0]) else None
    names, values = qpos_to_coordinates(env.model, clip.qpos, list(rec.coordinates))
    return {name: np.interp(rec.time_s, time_s, values[:, k], period=period) for k, name in enumerate(names)}


def _reference_poses(env, clip: int, until_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The tracked clip's poses (T, nq) at the environment reference's rate from clip time 0 to
    its end, or to ``until_s`` for a looping clip (laps carried on by its travel per lap), and
    their clip times (T,)."""
    from musclerl.envs.reference import lookup

    reference = env.reference
    end_s = float(reference.clip_duration_s[clip])
    if bool(reference.clip_loop[clip]):
        end_s = max(end_s, until_s)
    time_s = np.arange(0.0, end_s + 0.5 / reference.rate_hz, 1.0 / reference.rate_hz)
    clips = np.full(len(time_s), clip)
    return time_s, lookup(reference.as_arrays(np), clips, time_s, np, ("qpos",))["qpos"]


def evaluate_trial(
    policy, inputs: TrialInputs, options: TrialOptions, out: Path, progress: bool = False
) -> TrialResult:
    """Roll ``policy`` (a loaded :class:`musclerl.rl.export.Policy`) out and write ``out``."""
    from musclerl.envs.tracking import TrackingEnv
    from musclerl.evaluate import compare, report
    from musclerl.evaluate.reference_motion import policy_model, reference_signs, reference_trajectory
    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.rollout import rollout

    if inputs.motion is None and inputs.reference is None:
        raise InputError("evaluate", "give --motion, --reference or both")
    ref, act_table, emg, emg_map = load_inputs(inputs)
    notes: list[str] = []
    signs = dict(options.signs)
    offset_s = options.time_offset_s
    if inputs.motion is not None:
        traj = Trajectory.load(inputs.motion)
        from musclerl.rl.export import check_motion

        check_motion(policy, traj, inputs.motion)
    else:
        model, model_name = policy_model(policy)
        signs, sign_notes = reference_signs(ref, options.signs)
        notes += sign_notes
        traj, kin_notes = reference_trajectory(
            model, model_name, ref, signs, inputs.reference, treadmill=options.treadmill
        )
        notes += kin_notes
        offset_s += float(ref.time_sec[0])
    if not 0 <= options.clip < traj.num_clips:
        raise InputError("--clip", f"motion has {traj.num_clips} clips, got {options.clip}")
    train_cfg = policy.train_config
    env = TrackingEnv(train_cfg.model, traj, train_cfg.env, backend="cpu", num_envs=1)
    if env.observation_size != policy.obs_size or env.action_size != policy.action_size:
        raise InputError(
            policy.path,
            f"policy expects obs {policy.obs_size}/actions {policy.action_size} but "
            f"the environment has {env.observation_size}/{env.action_size} (other model/config?)",
        )

    def act(obs: np.ndarray) -> np.ndarray:
        return policy.act(obs, deterministic=True)

    rec = rollout(env, act, clip=options.clip, max_steps=options.max_steps, progress=progress)
    recordings = [rec]
    if options.all_clips:
        others = [c for c in range(traj.num_clips) if c != options.clip]
        recordings += [rollout(env, act, clip=c, max_steps=options.max_steps) for c in others]
    tracking = compare.tracking_summary(recordings)
    clip = traj.clip(options.clip)
    tracking["trial_duration_s"] = (clip.num_frames - 1) / clip.rate_hz
    # the pace the policy kept beside the clip's over the same span (rl.validation's computation,
    # the same numbers `bench learn` prints)
    from musclerl.rl.validation import reference_speed_mps

    tracking["speed_mps"] = rec.speed_mps
    tracking["reference_speed_mps"] = reference_speed_mps(env, options.clip, rec.time_s)
    # ran to the end: no early termination, and the episode ended where the environment ends it
    # (its last control step of the clip as resampled; a trial 1.19 s long ends at 1.16 s at 50 Hz)
    # rather than at --max-steps
    from musclerl.rl.rollout import episode_steps

    full = len(rec.time_s) - 1 >= episode_steps(env, options.clip, 0.0)
    tracking["tracked_to_end"] = bool(not rec.early_termination and (rec.truncated or full))
    tracking["end_reason"] = rec.end_reason  # the termination rules that ended it early, if any
    groups: dict[str, list[compare.Series]] = {}
    ref_grf = None
    if ref is not None:
        from musclerl.evaluate.gait_events import reference_foot_grf

        mass = ref.subject_weight_kg if options.sim_torque_mass == "subject" else None
        groups["torque"] = compare.torque_series(rec, ref, offset_s, signs, mass)
        groups["torque_muscle"] = compare.torque_series(rec, ref, offset_s, signs, mass, source="muscle")
        notes.append(
            "policy torques: net joint moments (muscles + joint springs/damping + joint-limit forces; "
            "'torque_muscle' the muscles alone) divided by "
            + (
                f"the subject's weight {ref.subject_weight_kg:.1f} kg"
                if mass
                else f"the model's mass {rec.model_mass_kg:.1f} kg"
            )
            + f"; reference torques as stored (divided by subject_weight_kg {ref.subject_weight_kg:.1f} kg)"
        )
        groups["angle"] = compare.angle_series(rec, ref, offset_s, signs)
        if not groups["torque"]:
            notes.append("no reference torque column matches a model coordinate")
        ref_grf = reference_foot_grf(ref)
        if ref_grf is not None:
            groups["grf"] = compare.grf_series(rec, ref_grf, offset_s)
            notes += [f"reference GRF ({ref_grf.layout} layout): {n}" for n in ref_grf.notes]
    if ref is None:  # a motion clip alone: its own joint angles are the reference kinematics
        groups["angle"] = compare.clip_angle_series(rec, env.model, clip)
        notes.append("reference angles: the motion clip's own joint angles (no lab reference given)")
    if act_table is not None:
        groups["activation"] = compare.activation_series(rec, act_table, offset_s)
    if emg is not None:
        from musclerl.evaluate.metrics import emg_envelope, normalise_envelope

        env_raw = emg.data if inputs.emg_processed else emg_envelope(emg.data, emg.rate_hz)
        scale = np.array([emg_map.reference.get(c, np.nan) for c in emg.channels])
        peak = np.nanmax(env_raw, axis=0)
        envelope = normalise_envelope(env_raw, np.where(np.isfinite(scale), scale, peak))
        groups["emg"] = compare.emg_series(
            rec, emg.time_s, envelope, list(emg.channels), emg_map.muscles, offset_s
        )
    # gait cycles per leg: the reference's strikes (given, from its GRF, else the policy's contacts)
    # and the policy's (its feet's contact force)
    from musclerl.evaluate import headline
    from musclerl.evaluate.gait_events import SIDES, sim_foot_grf

    sim_grf = sim_foot_grf(rec, offset_s)
    sim_events = {side: sim_grf.events(side) for side in SIDES}
    # the feet's events about the pelvis (Zeni's rule), the policy's and the tracked clip's
    from musclerl.evaluate.gait_events import kinematic_gait, spatiotemporal

    clip_time_s, clip_qpos = _reference_poses(env, options.clip, float(rec.time_s[-1]))
    ref_gait = kinematic_gait(env.model, clip_qpos, clip_time_s + offset_s, rec.feet)
    sim_gait = kinematic_gait(env.model, rec.qpos, rec.time_s + offset_s, rec.feet)
    ref_kinematic, sim_kinematic = ref_gait.events, sim_gait.events
    timed_events = sim_events  # the policy's events the reference's are timed against
    if ref_grf is not None:
        ref_events = {side: ref_grf.events(side) for side in SIDES}
    else:  # no plates: both sides' events from the feet's positions about the pelvis, one rule
        ref_events, timed_events = ref_kinematic, sim_kinematic
        notes.append(
            "the reference has no GRF: its gait events and the policy's (for timing and cycles) are "
            "the feet's positions about the pelvis (Zeni et al. 2008); the policy's peaks and stance "
            "from its contact forces"
        )
    sim_strikes = {side: timed_events[side].heel_strikes_s for side in SIDES}
    if options.heel_strikes_s is not None:
        given = np.asarray(options.heel_strikes_s, dtype=float)
        ref_strikes = {side: given for side in SIDES}
        notes.append("reference gait cycles cut at the given --heel-strikes (both legs)")
    else:
        ref_strikes = {side: ref_events[side].heel_strikes_s for side in SIDES}
    if options.sim_cycles == "reference":
        sim_strikes = ref_strikes
        notes.append("the policy's gait cycles cut at the reference's heel strikes (--sim-cycles reference)")
    counts = {side: (len(sim_strikes[side]), len(ref_strikes[side])) for side in SIDES}
    cycles = {k: compare.cycle_comparisons(v, sim_strikes, ref_strikes) for k, v in groups.items()}
    short = [side for side, (a, b) in counts.items() if min(a, b) < 2]
    if short:
        notes.append(
            "no gait cycle on the "
            + " and ".join({"r": "right", "l": "left"}[s] for s in short)
            + " leg: "
            + ", ".join(
                f"{s}: {counts[s][0]} policy and {counts[s][1]} reference heel strikes" for s in short
            )
            + " (a cycle needs two of each); those columns have time-domain figures only"
        )
    motion_deg = _motion_angles(env, clip, rec)
    knees = {side: motion_deg[f"knee_angle_{side}"] for side in SIDES if f"knee_angle_{side}" in motion_deg}
    gait = headline.gait_summary(rec, sim_grf, sim_events, ref_grf, ref_events, knees, timed_events)
    gait.update(headline.bounds_beyond_motion(rec, motion_deg))
    sim_delay = headline.touchdown_delays_ms(sim_events, sim_kinematic)
    ref_delay = headline.touchdown_delays_ms(ref_events, ref_kinematic) if ref_grf is not None else {}
    for side in SIDES:
        gait[f"touchdown_delay_sim_ms_{side}"] = sim_delay[side]
        gait[f"touchdown_delay_ref_ms_{side}"] = ref_delay.get(side, float("nan"))
    # steps over the span the policy walked, its own and the clip's
    until_s = float(rec.time_s[-1]) + offset_s
    steps = {"sim": spatiotemporal(sim_gait), "ref": spatiotemporal(ref_gait, until_s)}
    for who, figures in steps.items():
        gait[f"step_length_{who}_m"] = figures["step_length_m"]
        gait[f"cadence_{who}_spm"] = figures["cadence_spm"]
    column_metrics = []
    cycle_metrics = {}
    for kind, series in groups.items():
        column_metrics += compare.series_metrics(series, options.max_lag_s)
        for c in cycles.get(kind, []):
            cycle_metrics[f"{kind}:{c.series.name}"] = c.metrics()
    table = report.rows(column_metrics, cycle_metrics)
    inputs_doc = {
        "policy": str(policy.path),
        "motion": None if inputs.motion is None else str(inputs.motion),
        "reference": None if inputs.reference is None else str(inputs.reference),
        "activations": None if inputs.activations is None else str(inputs.activations),
        "emg": None if inputs.emg is None else str(inputs.emg),
        "emg_map": None if inputs.emg_map is None else str(inputs.emg_map),
        "time_offset_s": offset_s,
        "ref_heel_strikes_s": {side: [float(v) for v in ref_strikes[side]] for side in SIDES},
        "sim_heel_strikes_s": {side: [float(v) for v in sim_strikes[side]] for side in SIDES},
        "ref_grf_layout": None if ref_grf is None else ref_grf.layout,
    }
    _write(out, rec, groups, cycles, table, tracking, inputs_doc, notes, options.column_plots, gait)
    torque_cycles, basis = _torque_cycles(groups.get("torque", []), cycles.get("torque"))
    keys = set(headline.headline_keys())
    return TrialResult(
        name=inputs.name,
        subject=ref.subject if ref is not None and ref.subject else inputs.name,
        tracking=tracking,
        columns=table,
        torque_cycles=torque_cycles,
        cycle_basis=basis,
        notes=notes,
        gait=gait,
        cycle_means={
            f"{kind}:{c.series.name}": (c.sim.mean()[:, 0], c.ref.mean()[:, 0])
            for kind, comparisons in cycles.items()
            for c in comparisons
            if f"{kind}:{c.series.name}" in keys and c.sim.count and c.ref.count
        },
    )


def result_to_json(result: TrialResult) -> dict:
    """A :class:`TrialResult` as JSON-ready data (for ``--resume``: trials done are not redone)."""
    doc = dataclasses.asdict(result)
    for field in ("torque_cycles", "cycle_means"):
        doc[field] = {k: [v[0].tolist(), v[1].tolist()] for k, v in getattr(result, field).items()}
    return doc


def result_from_json(doc: dict) -> TrialResult:
    """The inverse of :func:`result_to_json`."""

    def arrays(field: str) -> dict:
        return {k: (np.asarray(v[0], float), np.asarray(v[1], float)) for k, v in doc.get(field, {}).items()}

    return TrialResult(
        **{**doc, "torque_cycles": arrays("torque_cycles"), "cycle_means": arrays("cycle_means")}
    )


def _torque_cycles(series, cycles) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    """Per torque column (sim mean (101,), ref mean (101,)): over gait cycles for the columns that
    have them (both sides), else (no column has) the compared span resampled onto 0..100 %."""
    out = {}
    with_cycles = [c for c in cycles or [] if c.sim.count and c.ref.count]
    if with_cycles:
        for c in with_cycles:
            out[c.series.name] = (c.sim.mean()[:, 0], c.ref.mean()[:, 0])
        return out, "gait cycle"
    grid = np.linspace(0.0, 1.0, CYCLE_POINTS)
    for s in series:
        span = np.flatnonzero(s.valid & np.isfinite(s.sim))
        if len(span) < 2:
            continue
        t = s.time_s[span[0] : span[-1] + 1]
        u = (t - t[0]) / max(t[-1] - t[0], 1e-12)
        sim = np.interp(grid, u, s.sim[span[0] : span[-1] + 1])
        ref = np.where(s.valid, s.ref, np.nan)[span[0] : span[-1] + 1]
        ok = np.isfinite(ref)
        out[s.name] = (sim, np.interp(grid, u[ok], ref[ok]))
    return out, "trial"


def _write(
    out: Path, rec, groups, cycles, table, tracking, inputs_doc, notes, column_plots: bool, gait: dict
) -> None:
    from musclerl.evaluate import plots, report
    from musclerl.fileio import atomic_path

    with atomic_path(Path(out)) as tmp:
        (tmp / "plots").mkdir(parents=True)
        made: dict[str, list[Path]] = {"tracking": [plots.plot_tracking(rec, tmp / "plots" / "tracking.png")]}
        for kind, series in groups.items() if column_plots else ():
            cyc = cycles.get(kind)
            made[f"{kind}_grid"] = []
            pages = range(0, len(series), OVERVIEW_PAGE)
            for n, start in enumerate(pages):
                stop = start + OVERVIEW_PAGE
                suffix = f"_{n + 1}" if len(pages) > 1 else ""
                made[f"{kind}_grid"].append(
                    plots.plot_grid(
                        series[start:stop],
                        tmp / "plots" / f"{kind}_overview{suffix}.png",
                        f"{kind}: simulation vs reference" + (f" ({n + 1}/{len(pages)})" if suffix else ""),
                        cyc[start:stop] if cyc else None,
                    )
                )
            made[kind] = []
            by_name = {r["column"]: r for r in table if r["kind"] == kind}
            for i, s in enumerate(series):
                r = by_name.get(s.name, {})
                sub = f"r={r.get('r', float('nan')):.2f}  RMSE={r.get('rmse', float('nan')):.3g} {s.unit}"
                made[kind].append(
                    plots.plot_series(
                        s, tmp / "plots" / f"{kind}_{report._safe(s.name)}.png", cyc[i] if cyc else None, sub
                    )
                )
        save_recording(tmp / "recording.npz", rec)
        report.write_outputs(tmp, table, tracking, inputs_doc, notes, made, gait)


def save_recording(path: Path, rec) -> None:
    """Every field of a :class:`Recording` (tuples of names as string arrays) plus N·m/kg torques."""
    arrays = {}
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        arrays[f.name] = np.asarray(value) if not isinstance(value, tuple) else np.array(value, dtype=str)
    arrays["torque_nm_per_kg"] = rec.torque_nm_per_kg
    np.savez_compressed(path, **arrays)
