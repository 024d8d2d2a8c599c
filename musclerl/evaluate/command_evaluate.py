"""``musclerl evaluate``: roll a policy out and compare with ID/SO/EMG references.

Writes into ``--out`` (atomically, the whole folder): ``metrics.json``, ``metrics.csv``,
``report.md``, ``recording.npz`` (every recorded array, see :mod:`musclerl.evaluate.rollout`)
and ``plots/*.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from musclerl.errors import InputError

OVERVIEW_PAGE = 20  # columns per overview PNG (5 rows of 4)

#: Reference conventions that differ from Rajagopal/myolegs: gait2354/gait2392 measure knee
#: flexion negative, so their knee angles and moments are negated.
SIGN_PRESETS: dict[str, dict[str, float]] = {
    "gait2354": {
        "knee_angle_r": -1.0,
        "knee_angle_l": -1.0,
        "knee_angle_r_moment": -1.0,
        "knee_angle_l_moment": -1.0,
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", help="exported policy folder (run/policy)")
    parser.add_argument("--motion", required=True, help="Trajectory .npz to track")
    parser.add_argument("--reference", help="reference NPZ (joint_angle / joint_torque schema)")
    parser.add_argument("--activations", help="static-optimisation activations .sto")
    parser.add_argument("--emg", help="EMG .csv or .sto")
    parser.add_argument("--emg-map", help="YAML channel -> muscle map")
    parser.add_argument(
        "--emg-processed",
        action="store_true",
        help="the EMG is already an envelope: skip band-pass/rectify/low-pass",
    )
    parser.add_argument("--clip", type=int, default=0, help="clip of the motion to evaluate")
    parser.add_argument("--max-steps", type=int, help="stop after this many control steps")
    parser.add_argument(
        "--all-clips",
        action="store_true",
        help="tracking metrics (success rate, site error, MPJPE) over one episode per clip; "
        "torque/activation comparisons still use --clip",
    )
    parser.add_argument(
        "--time-offset-s", type=float, default=0.0, help="reference time = simulation clip time + this offset"
    )
    parser.add_argument("--max-lag-s", type=float, default=0.1, help="window for the best-lag search")
    parser.add_argument(
        "--heel-strikes",
        help="reference heel-strike times (s), comma separated "
        "(default: from the reference's right-foot GRF)",
    )
    parser.add_argument(
        "--ref-sign",
        action="append",
        default=[],
        metavar="COLUMN=SIGN",
        help="multiply a reference column by -1 to match the model's convention; repeatable; the preset "
        "'gait2354' flips the knee angles and moments of gait2354/gait2392 exports",
    )
    parser.add_argument("--out", required=True, help="output folder")


def _signs(items: list[str]) -> dict[str, float]:
    """``COLUMN=+1|-1`` items (repeatable) and presets such as ``gait2354`` (:data:`SIGN_PRESETS`)."""
    out = {}
    for item in items:
        if item in SIGN_PRESETS:
            out.update(SIGN_PRESETS[item])
            continue
        name, _, value = item.partition("=")
        if value not in ("1", "+1", "-1") or not name:
            raise InputError(
                "--ref-sign", f"expected COLUMN=+1, COLUMN=-1 or one of {sorted(SIGN_PRESETS)}, got {item!r}"
            )
        out[name] = float(value)
    return out


def _strikes(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    try:
        return np.sort(np.array([float(v) for v in text.split(",") if v.strip()]))
    except ValueError as err:
        raise InputError("--heel-strikes", f"expected comma-separated seconds, got {text!r}") from err


def run(args: argparse.Namespace) -> int:
    from musclerl.envs.tracking import TrackingEnv
    from musclerl.evaluate import compare, plots, report
    from musclerl.evaluate.rollout import rollout
    from musclerl.fileio import atomic_path, check_outputs
    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.export import check_motion, load_policy

    if bool(args.emg) != bool(args.emg_map):
        raise InputError("--emg/--emg-map", "give the EMG file and its channel map together")
    inputs = [args.policy, args.motion, args.reference, args.activations, args.emg, args.emg_map]
    check_outputs(folders={"--out": args.out}, inputs=inputs)
    signs = _signs(args.ref_sign)
    given_strikes = _strikes(args.heel_strikes)
    # read every input before the (slow) rollout so bad files fail fast
    ref = act_table = emg = emg_map = None
    if args.reference:
        from musclerl.motion.reference import read_reference

        ref = read_reference(args.reference)
    if args.activations:
        from musclerl.motion.storage import read_storage

        act_table = read_storage(args.activations)
    if args.emg:
        from musclerl.evaluate.emg import read_emg, read_emg_map

        emg = read_emg(args.emg)
        emg_map = read_emg_map(args.emg_map, emg.channels)
    traj = Trajectory.load(args.motion)
    policy = load_policy(args.policy)
    train_cfg = policy.config.get("train_config", {})
    check_motion(policy, traj, args.motion)
    if not 0 <= args.clip < traj.num_clips:
        raise InputError("--clip", f"motion has {traj.num_clips} clips, got {args.clip}")
    env = TrackingEnv(
        train_cfg.get("model", traj.model_name), traj, train_cfg.get("env", {}), backend="cpu", num_envs=1
    )
    if env.observation_size != policy.obs_size or env.action_size != policy.action_size:
        raise InputError(
            args.policy,
            f"policy expects obs {policy.obs_size}/actions {policy.action_size} but "
            f"the environment has {env.observation_size}/{env.action_size} (other model/config?)",
        )

    def act(obs: np.ndarray) -> np.ndarray:
        return policy.act(obs, deterministic=True)

    rec = rollout(env, act, clip=args.clip, max_steps=args.max_steps, progress=True)
    notes: list[str] = []
    recordings = [rec]
    if args.all_clips:
        others = [c for c in range(traj.num_clips) if c != args.clip]
        recordings += [rollout(env, act, clip=c, max_steps=args.max_steps) for c in others]
    tracking = compare.tracking_summary(recordings)
    groups: dict[str, list[compare.Series]] = {}
    if ref is not None:
        groups["torque"] = compare.torque_series(rec, ref, args.time_offset_s, signs)
        groups["angle"] = compare.angle_series(rec, ref, args.time_offset_s, signs)
        if not groups["torque"]:
            notes.append("no reference torque column matches a model coordinate")
    if act_table is not None:
        groups["activation"] = compare.activation_series(rec, act_table, args.time_offset_s)
    if emg is not None:
        from musclerl.evaluate.metrics import emg_envelope, normalise_envelope

        env_raw = emg.data if args.emg_processed else emg_envelope(emg.data, emg.rate_hz)
        scale = np.array([emg_map.reference.get(c, np.nan) for c in emg.channels])
        peak = np.nanmax(env_raw, axis=0)
        envelope = normalise_envelope(env_raw, np.where(np.isfinite(scale), scale, peak))
        groups["emg"] = compare.emg_series(
            rec, emg.time_s, envelope, list(emg.channels), emg_map.muscles, args.time_offset_s
        )
    # gait cycles: reference strikes (given or from its GRF) and simulation strikes (its contacts)
    ref_strikes = given_strikes
    if ref_strikes is None and ref is not None:
        ref_strikes = compare.reference_heel_strikes(ref)
    sim_strikes = compare.sim_heel_strikes(rec, offset_s=args.time_offset_s)
    cycles: dict[str, list[compare.CycleComparison]] = {}
    if ref_strikes is not None and len(ref_strikes) >= 2 and len(sim_strikes) >= 2:
        cycles = {k: compare.cycle_comparisons(v, sim_strikes, ref_strikes) for k, v in groups.items()}
    else:
        notes.append(
            f"gait cycles not used: {0 if ref_strikes is None else len(ref_strikes)} reference and "
            f"{len(sim_strikes)} simulation right heel strikes (need >= 2 each); plots are against time"
        )
    column_metrics = []
    cycle_metrics = {}
    for kind, series in groups.items():
        column_metrics += compare.series_metrics(series, args.max_lag_s)
        for c in cycles.get(kind, []):
            cycle_metrics[f"{kind}:{c.series.name}"] = c.metrics()
    table = report.rows(column_metrics, cycle_metrics)
    out = Path(args.out)
    with atomic_path(out) as tmp:
        (tmp / "plots").mkdir(parents=True)
        made: dict[str, list[Path]] = {"tracking": [plots.plot_tracking(rec, tmp / "plots" / "tracking.png")]}
        for kind, series in groups.items():
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
        _save_recording(tmp / "recording.npz", rec)
        inputs = {
            "policy": args.policy,
            "motion": args.motion,
            "reference": args.reference,
            "activations": args.activations,
            "emg": args.emg,
            "emg_map": args.emg_map,
            "time_offset_s": args.time_offset_s,
            "ref_heel_strikes_s": None if ref_strikes is None else [float(v) for v in ref_strikes],
            "sim_heel_strikes_s": [float(v) for v in sim_strikes],
        }
        report.write_outputs(tmp, table, tracking, inputs, notes, made)
    print(f"wrote {out}/report.md: {rec.num_frames} frames, early termination: {rec.early_termination}")
    for kind, s in report.summarise(table).items():
        print(
            f"  {kind}: {s['columns_with_data']} columns, mean r {s['mean_r']:.3f}, "
            f"mean RMSE {s['mean_rmse']:.3g}"
        )
    return 0


def _save_recording(path: Path, rec) -> None:
    import dataclasses

    arrays = {}
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        arrays[f.name] = np.asarray(value) if not isinstance(value, tuple) else np.array(value, dtype=str)
    arrays["torque_nm_per_kg"] = rec.torque_nm_per_kg
    np.savez_compressed(path, **arrays)
