"""Retargeting quality report (JSON-ready dict) and its PNG, shared by the marker and SMPL pipelines.

Fields (T frames, all lengths in metres, world frame Z up):

``frames``, ``fps``
    frames solved and solver throughput (frames / solve seconds).
``marker_rms_m``, ``marker_max_m``
    per-frame RMS and max of target (marker or keypoint) errors, each as ``{"mean", "worst_frame"}``
    (mean over frames, and the worst frame); per-target RMS under ``marker_rms_by_name_m``.
    Missing targets (NaN) are left out of their frame.
``failed_frames``
    frames the solver did not report as converged (count; indices in ``failed_frame_indices``).
``joint_limit_violation_frac``
    fraction of (frame, limited independent joint) pairs outside the joint range by more than
    1e-6. Joints driven by joint equalities (the knee's coupled translations) follow their
    polynomial; how far those leave their declared ranges is ``coupled_joint_range_excess_max``.
``limit_bound_frac``
    per independent limited joint, the fraction of frames it sits on its range's bound (within
    :data:`LIMIT_BOUND_TOLERANCE`; the solvers clip onto the bound, so a joint there is held by
    its limit: the targets pull it further); joints never on a bound are left out.
``limit_bound_frames``
    the runs of consecutive frames in which some limit binds: ``{"frames": [first, last],
    "joints": [...], "marker_rms_worst_m": ...}``, worst run first. A frame whose error is large
    and lies in a run has that error from the model's range (question the listed joints' limits,
    or the source); ``marker_rms_m`` gains ``worst_frame_unbound``, the worst frame outside them.
``marker_rms_by_segment_m``, ``sides``, ``side_warning``
    per body and per leg, and one line when one leg is clearly worse (:mod:`musclerl.retarget.sides`;
    markers by side only when ``target_bodies`` names each target's body).
``equality_residual_max``
    largest absolute equality-constraint residual (MuJoCo ``efc_pos`` of equality rows).
``penetration_frac``, ``penetration_max_m``
    fraction of frames where a collidable body geom reaches more than 1 mm below the ground
    (the terrain heightfield when given, else the plane z = 0), and the deepest reach; measured
    on the same surface samples the ground constraint holds (:meth:`GeomSurface.depth_m`).
``skating_mps``
    mean horizontal speed of foot geoms over the frames they are in stance (stance from speed and
    height, :func:`musclerl.ground.contact.detect_contacts`); ``null`` when no stance is found
    (e.g. a treadmill clip measured before its belt is undone; marker trials are measured after,
    see :mod:`musclerl.retarget.markers.ground` and its ``treadmill`` and ``floor`` keys);
    ``stance_frac`` says how much stance there was.
``tendon_jump_frac``
    fraction of frames where some muscle path length changed by more than 5 % of its length since
    the previous frame, and by more than 1 % beyond what the path's moment arms predict for the
    pose change (:func:`musclerl.retarget.ik.constraints.tendon_jumps`): a path jumping across a
    wrap, or a frame on a wrong branch; not fast motion sampled coarsely.
``terrain``
    :func:`musclerl.retarget.ground.terrain.terrain_summary`, or ``{"kind": "flat", "height_m": 0}``.
``gait``
    ``speed_mps``: horizontal path length of the root over the clip's duration (the path sampled
    at :data:`GAIT_PATH_HZ`, so marker jitter does not lengthen it); ``touchdowns``: per foot of
    the plausibility check, the stance phases that begin inside the clip (stance runs shorter
    than :data:`MIN_PHASE_S` ignored, gaps shorter than that bridged); ``strides``: complete gait
    cycles, touchdown to touchdown of one foot, mean over the feet (null without feet).
``plausibility``
    could a body of the model's mass do this on the ground: stance-foot slip, external force,
    centre of pressure, root acceleration, ``passed`` and ``failures``
    (:meth:`musclerl.dynamics.plausibility.Plausibility.as_dict`).
"""

from __future__ import annotations

import json
import os

import mujoco
import numpy as np

from musclerl.dynamics.plausibility import leg_feet, plausibility
from musclerl.errors import InputError
from musclerl.fileio import atomic_path
from musclerl.ground.contact import detect_contacts, remove_short_phases
from musclerl.ground.surface import GeomSurface
from musclerl.models.couplings import couplings
from musclerl.models.geoms import collision_geoms, foot_geoms
from musclerl.motion.trajectory import Terrain
from musclerl.retarget.ground.terrain import terrain_summary
from musclerl.retarget.ik.constraints import muscle_tendon_ids, predicted_tendon_changes, tendon_jumps
from musclerl.retarget.sides import side_summary

PENETRATION_TOLERANCE_M = 1e-3
LIMIT_TOLERANCE = 1e-6
LIMIT_BOUND_TOLERANCE = 1e-4  # rad or m from a bound: the joint is on it
TENDON_JUMP_FRAC = 0.05
GAIT_PATH_HZ = 10.0  # the root path is sampled this often for its length (walking: 2 steps/s)
MIN_PHASE_S = 0.08  # stance or swing shorter than this is flicker at a touchdown, not a step


def _stats(per_frame: np.ndarray) -> dict:
    finite = per_frame[np.isfinite(per_frame)]
    if finite.size == 0:
        return {"mean": None, "worst_frame": None}
    return {"mean": float(finite.mean()), "worst_frame": float(finite.max())}


def limit_excess(model: mujoco.MjModel, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """How far each limited hinge/slide joint is past its range (T, J) (rad or m; negative:
    inside, by the distance to the nearer bound) for ``qpos`` (T, nq), which of them a joint
    equality drives (J,) bool, and their names."""
    limited = np.flatnonzero(
        model.jnt_limited
        & np.isin(model.jnt_type, [mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE])
    )
    dependent_adr = {c.y_qpos for c in couplings(model)}
    adr = model.jnt_qposadr[limited]
    lo, hi = model.jnt_range[limited, 0], model.jnt_range[limited, 1]
    values = np.asarray(qpos, dtype=float)[:, adr]
    coupled = np.isin(adr, list(dependent_adr))
    return np.maximum(lo - values, values - hi), coupled, [model.joint(int(j)).name for j in limited]


def limits_bound(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """(T,) bool: some independent limited joint sits on its bound (``limit_bound_frac``'s rule)."""
    excess, coupled, _ = limit_excess(model, qpos)
    return np.any(excess[:, ~coupled] > -LIMIT_BOUND_TOLERANCE, axis=1)


def quality_report(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    rate_hz: float,
    *,
    target_errors_m: np.ndarray | None = None,
    target_names: tuple[str, ...] = (),
    converged: np.ndarray | None = None,
    solve_seconds: float | None = None,
    terrain: Terrain | None = None,
    loop: bool = False,
    target_bodies: dict[str, str] | None = None,
) -> tuple[dict, dict]:
    """Report dict (JSON-ready) and per-frame series for the plot.

    ``qpos`` (T, nq); ``target_errors_m`` (T, M) distances model point -> target (NaN missing);
    ``converged`` (T,) bool; ``loop``: the clip is cyclic (its ends are neighbours for the
    plausibility check's derivatives); ``target_bodies``: target name -> the body it is on.
    """
    qpos = np.asarray(qpos, dtype=float)
    n = qpos.shape[0]
    data = mujoco.MjData(model)
    excess, coupled, names = limit_excess(model, qpos)
    violation = excess[:, ~coupled] > LIMIT_TOLERANCE
    bound = excess[:, ~coupled] > -LIMIT_BOUND_TOLERANCE  # (T, J) on (or past) a bound
    bound_names = [n for n, c in zip(names, coupled, strict=True) if not c]

    feet = foot_geoms(model)
    surface = GeomSurface.of(model, collision_geoms(model))
    tendon_len = np.zeros((n, model.ntendon))
    foot_points = np.zeros((n, len(feet), 3))
    depth = np.zeros(n)
    eq_residual = 0.0
    for t in range(n):
        data.qpos[:] = qpos[t]
        mujoco.mj_fwdPosition(model, data)
        tendon_len[t] = data.ten_length
        foot_points[t] = data.geom_xpos[feet]
        eq_rows = data.efc_type[: data.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        if eq_rows.any():
            eq_residual = max(eq_residual, float(np.max(np.abs(data.efc_pos[: data.nefc][eq_rows]))))
        if len(surface.geom_ids):
            depth[t] = float(surface.depth_m(data, terrain).max())

    skating = None
    stance_frac = None
    if len(feet) and n >= 3:
        flags = detect_contacts(foot_points, rate_hz)
        horizontal = np.linalg.norm(np.gradient(foot_points[..., :2], 1.0 / rate_hz, axis=0), axis=-1)
        stance_frac = float(flags.mean())
        skating = float(horizontal[flags].mean()) if flags.any() else None

    jump_frac = 0.0
    if n >= 2 and model.ntendon:
        muscles = muscle_tendon_ids(model)
        lengths = tendon_len[:, muscles]
        predicted = predicted_tendon_changes(model, qpos, lengths, muscles)
        jump_frac = float(tendon_jumps(lengths, TENDON_JUMP_FRAC, predicted).mean())

    report: dict = {"frames": int(n), "rate_hz": float(rate_hz)}
    report["fps"] = float(n / solve_seconds) if solve_seconds else None
    series: dict = {"time_s": np.arange(n) / rate_hz, "penetration_m": depth}
    if target_errors_m is not None:
        err = np.asarray(target_errors_m, dtype=float)
        present = np.isfinite(err)
        with np.errstate(invalid="ignore"):
            rms_frame = np.sqrt(np.nansum(err**2, axis=1) / np.maximum(present.sum(axis=1), 1))
            rms_frame[present.sum(axis=1) == 0] = np.nan
            max_frame = np.where(
                present.any(axis=1), np.nanmax(np.where(present, err, -np.inf), axis=1), np.nan
            )
        report["marker_rms_m"] = _stats(rms_frame)
        unbound = rms_frame[~bound.any(axis=1)]
        report["marker_rms_m"]["worst_frame_unbound"] = _stats(unbound)["worst_frame"]
        report["marker_max_m"] = _stats(max_frame)
        by_name = {}
        for i, name in enumerate(target_names):
            col = err[:, i][present[:, i]]
            by_name[name] = float(np.sqrt(np.mean(col**2))) if col.size else None
        report["marker_rms_by_name_m"] = by_name
        series["marker_rms_m"] = rms_frame
        series["marker_max_m"] = max_frame
    conv = np.ones(n, dtype=bool) if converged is None else np.asarray(converged, dtype=bool)
    report["failed_frames"] = int((~conv).sum())
    report["failed_frame_indices"] = [int(i) for i in np.flatnonzero(~conv)]
    report["joint_limit_violation_frac"] = float(violation.mean()) if violation.size else 0.0
    report.update(limit_bound_summary(bound, bound_names, series.get("marker_rms_m")))
    by_name = report.get("marker_rms_by_name_m", {})
    report.update(side_summary(by_name, target_bodies or {}, bound, bound_names, rate_hz))
    report["coupled_joint_range_excess_max"] = (
        float(max(0.0, excess[:, coupled].max())) if coupled.any() else 0.0
    )
    report["equality_residual_max"] = eq_residual
    report["penetration_frac"] = float((depth > PENETRATION_TOLERANCE_M).mean())
    report["penetration_max_m"] = float(depth.max()) if n else 0.0
    report["skating_mps"] = skating
    report["stance_frac"] = stance_frac
    report["tendon_jump_frac"] = jump_frac
    report["terrain"] = terrain_summary(terrain) if terrain is not None else {"kind": "flat", "height_m": 0.0}
    try:
        check = plausibility(model, qpos, rate_hz, terrain=terrain, clip_loop=np.array([loop]))
        report["plausibility"] = check.as_dict()
        report["gait"] = gait_summary(qpos, rate_hz, check.series.stance, leg_feet(model)[0])
    except InputError as err:  # no free root or no feet: nothing to stand on
        report["plausibility"] = {"skipped": str(err)}
        report["gait"] = gait_summary(qpos, rate_hz, None)
    return report, series


def gait_summary(
    qpos: np.ndarray, rate_hz: float, stance: np.ndarray | None, feet: tuple[str, ...] = ()
) -> dict:
    """``gait`` of the report (module docstring) from ``qpos`` (T, nq) with a free root first and
    the plausibility check's ``stance`` (T, F) of ``feet`` (None: no strides)."""
    n = len(qpos)
    step = max(1, int(round(rate_hz / GAIT_PATH_HZ)))
    samples = np.append(np.arange(0, n, step), n - 1)
    path_m = float(np.sum(np.linalg.norm(np.diff(qpos[samples, :2], axis=0), axis=1)))
    duration_s = (n - 1) / rate_hz
    out: dict = {"speed_mps": path_m / duration_s if duration_s > 0 else None, "path_m": path_m}
    if stance is None or not stance.size:
        return {**out, "touchdowns": {}, "strides": None}
    min_frames = max(1, int(round(MIN_PHASE_S * rate_hz)))
    touchdowns = {}
    for f, name in enumerate(feet or [str(i) for i in range(stance.shape[1])]):
        flags = remove_short_phases(stance[:, f : f + 1], min_frames)[:, 0]
        touchdowns[name] = int(np.sum(flags[1:] & ~flags[:-1]))
    strides = float(np.mean([max(0, k - 1) for k in touchdowns.values()]))
    return {**out, "touchdowns": touchdowns, "strides": strides}


def limit_bound_summary(
    bound: np.ndarray, joint_names: list[str], rms_frame_m: np.ndarray | None = None
) -> dict:
    """``limit_bound_frac`` and ``limit_bound_frames`` (see the module docstring) from ``bound``
    (T, J) bool, joint ``j`` on a bound in frame ``t``, and the per-frame marker RMS (T,)."""
    frac = bound.mean(axis=0) if len(bound) else np.zeros(len(joint_names))
    order = np.argsort(-frac, kind="stable")
    runs = []
    any_bound = np.concatenate([[False], bound.any(axis=1), [False]])
    starts = np.flatnonzero(~any_bound[:-1] & any_bound[1:])
    ends = np.flatnonzero(any_bound[:-1] & ~any_bound[1:])  # exclusive
    for a, b in zip(starts, ends, strict=True):
        joints = [joint_names[j] for j in np.flatnonzero(bound[a:b].any(axis=0))]
        worst = None
        if rms_frame_m is not None and np.isfinite(rms_frame_m[a:b]).any():
            worst = float(np.nanmax(rms_frame_m[a:b]))
        runs.append({"frames": [int(a), int(b - 1)], "joints": joints, "marker_rms_worst_m": worst})
    runs.sort(key=lambda r: -1.0 if r["marker_rms_worst_m"] is None else -r["marker_rms_worst_m"])
    return {
        "limit_bound_frac": {joint_names[j]: float(frac[j]) for j in order if frac[j] > 0},
        "limit_bound_frames": runs,
    }


def write_report(path: str | os.PathLike, report: dict) -> None:
    """Write ``report`` as indented JSON, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")


def plot_report(
    path: str | os.PathLike,
    report: dict,
    series: dict,
    coordinates_deg: dict[str, np.ndarray] | None = None,
    title: str = "",
) -> None:
    """PNG: per-frame marker RMS/max (mm), penetration (mm), per-marker RMS, chosen coordinates (deg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    t = series["time_s"]
    ax = axes[0, 0]
    if "marker_rms_m" in series:
        ax.plot(t, 1e3 * series["marker_rms_m"], label="RMS")
        ax.plot(t, 1e3 * series["marker_max_m"], label="max")
    ax.plot(t, 1e3 * series["penetration_m"], label="penetration")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("mm")
    ax.set_title("target error per frame")
    ax.legend()
    ax = axes[0, 1]
    by_name = {k: v for k, v in report.get("marker_rms_by_name_m", {}).items() if v is not None}
    if by_name:
        sides = {s: v.get("marker_rms_m") for s, v in report.get("sides", {}).items()}
        ax.barh(list(by_name), [1e3 * v for v in by_name.values()])
        ax.tick_params(axis="y", labelsize=6)
        if all(v is not None for v in sides.values()) and sides:
            legs = ", ".join(f"{s} leg {1e3 * v:.1f}" for s, v in sides.items())
            ax.set_title(f"per target ({legs} mm)", fontsize=9)
    ax.set_xlabel("RMS (mm)")
    if not ax.get_title():
        ax.set_title("per target")
    ax = axes[1, 0]
    for name, values in (coordinates_deg or {}).items():
        ax.plot(t[: len(values)], values, label=name)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("deg")
    ax.set_title("coordinates")
    if coordinates_deg:
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    ax.axis("off")
    keys = [
        "frames",
        "fps",
        "failed_frames",
        "joint_limit_violation_frac",
        "equality_residual_max",
        "penetration_frac",
        "penetration_max_m",
        "skating_mps",
        "tendon_jump_frac",
    ]
    lines = [f"{k}: {report.get(k)!r}"[:60] for k in keys]
    if "plausibility" in report:
        lines.append(f"plausibility passed: {report['plausibility']['passed']}")
    if "marker_rms_m" in report:
        lines.insert(1, f"marker_rms_m mean: {report['marker_rms_m']['mean']}"[:60])
    ax.text(0.0, 1.0, "\n".join(lines), va="top", family="monospace", fontsize=9)
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
