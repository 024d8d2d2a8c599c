"""Physical plausibility of a motion: could a body of the model's mass do it, standing on the ground?

Five checks on a model-space motion (``qpos`` (T, nq) of a model whose first joint is a free
root); all positions are world metres, Z up, the ground is the terrain heightfield when given,
else the plane z = 0:

1. **stance-foot slip** — feet are the model's lowest collision geoms
   (:func:`musclerl.models.geoms.foot_geoms`), grouped into legs (left/right) by the child of
   their common ancestor body. A foot is in stance when its lowest point (of :class:`GeomSurface`
   samples) is within ``stance_height_m`` of the ground under it *and* it is the supporting side:
   within ``support_margin_m`` of the lowest foot. Slip is the horizontal speed (m/s) of the
   material point of the foot at its lowest point: that point of the foot body, placed by the
   previous and the next frame's poses, central difference; over *planted* frames (stance frames
   whose previous and next frames are stance too, so the difference spans no touch-down or
   lift-off): median and 90th percentile, per foot and pooled (a foot rolling over its sole
   without sliding reads ~0).
2. **external force** — coordinates low-pass filtered (``lowpass_hz``), ``qvel``/``qacc`` by
   central differences (:func:`musclerl.dynamics.inverse_dynamics.velocities`), then ``mj_inverse``
   with contacts and all other constraints off (:func:`~musclerl.dynamics.inverse_dynamics.id_model`).
   The free root's six residual generalised forces are the wrench the environment must supply:
   world force (N) and body-frame moment about the root joint's anchor (N·m), turned into a world
   moment. Vertical force is reported in body weights (BW = total mass × |gravity|): min, max,
   frames below ``min_vertical_force_bw`` (the floor pulling) and above ``max_vertical_force_bw``.
3. **centre of pressure** — where that wrench meets the ground plane (the mean ground height under
   the touching feet), in frames with vertical force above ``loaded_force_bw``: its distance to
   the support region, the convex hull of the foot surface samples within ``stance_height_m`` of
   the ground (0 inside; without any touching foot, the 3-D distance to the nearest foot's lowest
   point). Fraction of loaded frames more than ``cop_outside_m`` outside, and the largest distance.
4. **root acceleration** — world linear acceleration (m/s²) of the free root's origin from the
   filtered ``qacc``: vertical min/max, horizontal max.
5. **penetration** — frames (unfiltered poses) with a foot's lowest point more than
   ``max_penetration_m`` under the ground, and with two of the body's own collision geoms that far
   through each other (MuJoCo's contacts of the pose, the world's geoms left out): a pose the
   simulator cannot take. A clip solved on a scaled model and played on the registry's, whose
   feet are longer and hips narrower, put its toes 2-5 cm into the floor and its shins through
   each other.

Clips are differentiated separately. Looping clips wrap: frames before the first and after the
last continue the cycle, moved by the cycle's root displacement and heading change (horizontal
only: the root height is periodic); the last frame counts as a repeat of the first when its pose
(without the root) is much closer to the first frame than frames are to each other. Non-looping
clips are extended by a quadratic fit (on the manifold) to their first and last 0.15 s, so a
motion of constant acceleration (a free fall) is exact up to its ends.
"""

from __future__ import annotations

import dataclasses
import math
import os

import mujoco
import numpy as np

from musclerl.dynamics.clip_kinematics import LOWPASS_HZ, clip_kinematics
from musclerl.dynamics.inverse_dynamics import id_model
from musclerl.errors import InputError
from musclerl.geometry.free_root import free_root
from musclerl.ground.surface import GeomSurface
from musclerl.models.geoms import foot_geoms
from musclerl.motion.trajectory import Terrain, Trajectory

GRAVITY_MPS2 = 9.81
SURFACE_SAMPLES = 100  # surface samples per foot geom: lowest point to ~0.3 mm on 2 cm capsules

# Thresholds (defaults of :class:`Thresholds`), from gait biomechanics:
STANCE_HEIGHT_M = 0.025  # lowest point this close to the ground touches it (IK error, soft tissue, shoe)
SUPPORT_MARGIN_M = 0.01  # feet within 1 cm of the lowest foot share the support (double stance)
MAX_SLIP_MEDIAN_MPS = 0.1  # a planted foot does not slide (~0 in gait labs); allows IK noise, heel/toe roll
MIN_VERTICAL_FORCE_BW = -0.05  # the floor can only push; -0.05 BW is differentiation noise
MAX_VERTICAL_FORCE_BW = 2.5  # walking peaks ~1.2 BW, running ~2.5-3 BW: raise it for running
LOADED_FORCE_BW = 0.1  # below 0.1 BW (swing-like flight, noise) the centre of pressure is ill-defined
COP_OUTSIDE_M = 0.05  # 5 cm beyond the touching soles: more than IK error, a foot that is not there
MAX_COP_OUTSIDE_FRAC = 0.10  # brief excursions at heel strike / toe-off, not a tenth of the loaded time
MAX_ROOT_VERTICAL_ACCEL_MPS2 = 2.0 * GRAVITY_MPS2  # pelvis within +-2 g (walking ~+-0.5 g, running ~2 g)
# a foot 1 cm into the ground, or two limbs' collision geoms 1 cm through each other, is a pose the
# simulator cannot take: it pushes the body out (a reset there kicks it); allowed as long as the
# centre of pressure may leave the feet (brief toe dips at toe-off), not a tenth of the frames
MAX_PENETRATION_M = 0.01
MAX_PENETRATION_FRAC = 0.10


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Pass/fail limits and detection parameters (defaults: the module constants).

    ``lowpass_hz`` <= 0 (or at/above the Nyquist rate) differentiates the coordinates unfiltered.
    """

    stance_height_m: float = STANCE_HEIGHT_M
    support_margin_m: float = SUPPORT_MARGIN_M
    max_slip_median_mps: float = MAX_SLIP_MEDIAN_MPS
    min_vertical_force_bw: float = MIN_VERTICAL_FORCE_BW
    max_vertical_force_bw: float = MAX_VERTICAL_FORCE_BW
    loaded_force_bw: float = LOADED_FORCE_BW
    cop_outside_m: float = COP_OUTSIDE_M
    max_cop_outside_frac: float = MAX_COP_OUTSIDE_FRAC
    max_root_vertical_accel_mps2: float = MAX_ROOT_VERTICAL_ACCEL_MPS2
    max_penetration_m: float = MAX_PENETRATION_M
    max_penetration_frac: float = MAX_PENETRATION_FRAC
    lowpass_hz: float = LOWPASS_HZ


@dataclasses.dataclass(frozen=True)
class PlausibilitySeries:
    """Per-frame quantities; T frames, F feet. World frame, Z up, metres, N, N·m, m/s, m/s².

    ``force_n`` (T, 3) external force; ``moment_nm`` (T, 3) external moment about ``com_m``;
    ``com_m`` (T, 3) whole-body centre of mass (filtered pose); ``cop_m`` (T, 3) centre of pressure
    (NaN where not loaded); ``cop_outside_m`` (T,) its distance outside the support (NaN where not
    loaded); ``cop_support_m`` (T, 2) the support's point nearest to the centre of pressure (the
    centre of pressure itself inside; NaN where not loaded or no foot touches); ``clearance_m``
    (T, F) height of each foot's lowest point above the ground;
    ``stance`` (T, F) bool; ``planted`` (T, F) bool, stance with both neighbours in stance;
    ``slip_mps`` (T, F) horizontal speed of each foot's lowest point;
    ``root_accel_mps2`` (T, 3); ``body_overlap_m`` (T,) the deepest overlap of two of the body's
    own collision geoms (the model's contact pairs, the ground excluded; 0 without any).
    """

    force_n: np.ndarray
    moment_nm: np.ndarray
    com_m: np.ndarray
    cop_m: np.ndarray
    cop_outside_m: np.ndarray
    cop_support_m: np.ndarray
    clearance_m: np.ndarray
    stance: np.ndarray
    planted: np.ndarray
    slip_mps: np.ndarray
    root_accel_mps2: np.ndarray
    body_overlap_m: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class Plausibility:
    """The five checks' numbers (see the module docstring) and ``failures`` naming each failed one.

    ``stance_slip``: ``median_mps``, ``p90_mps``, ``stance_frames`` (planted foot-frames measured)
    and ``by_foot`` (the same per foot); ``vertical_force_bw``: ``min``, ``max``,
    ``pulling_frames``, ``above_max_frames``; ``cop``: ``loaded_frames``, ``outside_frac``,
    ``outside_max_m``; ``root_accel_mps2``: ``vertical_min``, ``vertical_max``, ``horizontal_max``;
    ``penetration``: ``feet_below_frac`` / ``feet_below_max_m`` (frames with the lowest foot
    point more than ``max_penetration_m`` under the ground, the deepest) and ``limbs_overlap_frac``
    / ``limbs_overlap_max_m`` (the same for the body's own geoms through each other). Missing
    numbers (no planted foot, no loaded frame) are ``None``.
    """

    frames: int
    body_weight_n: float
    stance_slip: dict
    vertical_force_bw: dict
    cop: dict
    root_accel_mps2: dict
    failures: tuple[str, ...]
    thresholds: Thresholds
    series: PlausibilitySeries = dataclasses.field(repr=False, compare=False)
    penetration: dict = dataclasses.field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict:
        """JSON-ready dict: ``passed``, ``failures``, the numbers above and ``thresholds``."""
        out = {"passed": self.passed, "failures": list(self.failures)}
        for field in dataclasses.fields(self):
            if field.name not in ("failures", "thresholds", "series"):
                out[field.name] = getattr(self, field.name)
        out["thresholds"] = dataclasses.asdict(self.thresholds)
        return out


def format_plausibility(info: dict) -> list[str]:
    """A few readable lines from :meth:`Plausibility.as_dict` (or ``{"skipped": reason}``)."""
    if "skipped" in info:
        return [f"plausibility: skipped ({info['skipped']})"]

    def num(x, fmt=".2f"):
        return "n/a" if x is None else format(x, fmt)

    slip, force = info["stance_slip"], info["vertical_force_bw"]
    cop, acc = info["cop"], info["root_accel_mps2"]
    lines = [
        f"plausibility: {'passed' if info['passed'] else 'FAILED'}",
        f"  stance-foot slip: median {num(slip['median_mps'])} m/s, p90 {num(slip['p90_mps'])} m/s "
        f"over {slip['stance_frames']} foot-frames",
        f"  vertical external force: {num(force['min'])} to {num(force['max'])} BW, "
        f"{force['pulling_frames']} frames pulling, {force['above_max_frames']} above max",
        f"  centre of pressure outside the feet: {num(cop['outside_frac'], '.0%')} of "
        f"{cop['loaded_frames']} loaded frames (max {num(cop['outside_max_m'], '.3f')} m)",
        f"  root acceleration: vertical {num(acc['vertical_min'], '.1f')} to "
        f"{num(acc['vertical_max'], '.1f')} m/s2, "
        f"horizontal max {num(acc['horizontal_max'], '.1f')} m/s2",
    ]
    pen = info.get("penetration")
    if pen:
        lines.append(
            f"  feet in the ground: {pen['feet_below_frac']:.0%} of frames (deepest "
            f"{pen['feet_below_max_m']:.3f} m); limbs through each other: {pen['limbs_overlap_frac']:.0%} "
            f"(deepest {pen['limbs_overlap_max_m']:.3f} m)"
        )
    lines += [f"  failed: {f}" for f in info["failures"]]
    return lines


# ----------------------------------------------------------------------------- feet


def leg_feet(model: mujoco.MjModel) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Foot names, foot geom ids (G,) and each geom's foot index (G,).

    Geoms of :func:`foot_geoms` are grouped by the child of their lowest common ancestor body (the
    femur of each leg below the pelvis); a group whose bodies end in ``_l``/``_r`` is
    ``left``/``right``, else it is named after that child body.
    """
    geoms = foot_geoms(model)
    if len(geoms) == 0:
        raise InputError("model", "has no collision geoms to stand on")

    def chain(body: int) -> list[int]:
        out = [body]
        while out[-1] != 0:
            out.append(int(model.body_parentid[out[-1]]))
        return out[::-1]  # world first

    chains = [chain(int(model.geom_bodyid[g])) for g in geoms]
    depth = 0
    while all(len(c) > depth + 1 for c in chains) and len({c[depth + 1] for c in chains}) == 1:
        depth += 1
    branch = [c[depth + 1] if len(c) > depth + 1 else c[depth] for c in chains]
    heads = list(dict.fromkeys(branch))
    names = []
    for head in heads:
        bodies = {
            model.body(int(model.geom_bodyid[g])).name
            for g, b in zip(geoms, branch, strict=True)
            if b == head
        }
        side = {"left" if n.endswith("_l") else "right" if n.endswith("_r") else None for n in bodies}
        names.append(side.pop() if len(side) == 1 and None not in side else model.body(head).name)
    return tuple(names), geoms, np.array([heads.index(b) for b in branch], dtype=int)


# ----------------------------------------------------------------------------- the root


def _free_root(model: mujoco.MjModel) -> int:
    if free_root(model) != 0:
        raise InputError(
            "model", "plausibility needs a free root joint first (its residual is the ground's wrench)"
        )
    return 0


# ----------------------------------------------------------------------------- support geometry


def nearest_support_point(points_xy: np.ndarray, p: np.ndarray) -> tuple[float, np.ndarray]:
    """Distance (m) from ``p`` (2,) to the convex hull of ``points_xy`` (N, 2) (0 inside) and the
    hull's point nearest to ``p`` (2,) (``p`` itself inside)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points_xy)
    except (QhullError, ValueError):  # fewer than 3 points, or all on a line: distance to the segment
        d = points_xy - points_xy[0]
        axis = d[np.argmax(np.linalg.norm(d, axis=1))]
        along = d @ axis / max(float(axis @ axis), 1e-18)
        edges = [(points_xy[np.argmin(along)], points_xy[np.argmax(along)])]
    else:
        if np.all(hull.equations[:, :2] @ p + hull.equations[:, 2] <= 1e-12):
            return 0.0, np.array(p, dtype=float)
        edges = [(points_xy[a], points_xy[b]) for a, b in hull.simplices]
    best, nearest = math.inf, np.array(p, dtype=float)
    for a, b in edges:
        ab = b - a
        s = np.clip((p - a) @ ab / max(float(ab @ ab), 1e-18), 0.0, 1.0)
        dist = float(np.linalg.norm(p - (a + s * ab)))
        if dist < best:
            best, nearest = dist, a + s * ab
    return best, nearest


# ----------------------------------------------------------------------------- the checks


def plausibility(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    rate_hz: float,
    *,
    terrain: Terrain | None = None,
    clip_starts: np.ndarray | None = None,
    clip_loop: np.ndarray | None = None,
    thresholds: Thresholds | None = None,
) -> Plausibility:
    """Check ``qpos`` (T, nq) at ``rate_hz`` on ``model`` (see the module docstring).

    ``clip_starts`` (C,) first frame of each clip (default: one clip), ``clip_loop`` (C,) bool.
    """
    th = thresholds or Thresholds()
    qpos = np.asarray(qpos, dtype=float)
    n = len(qpos)
    root = _free_root(model)
    starts = np.zeros(1, dtype=int) if clip_starts is None else np.asarray(clip_starts, dtype=int)
    loops = np.zeros(len(starts), dtype=bool) if clip_loop is None else np.asarray(clip_loop, dtype=bool)
    ends = np.append(starts[1:], n)
    parts = [
        clip_kinematics(model, qpos[s:e], rate_hz, bool(lp), th.lowpass_hz)
        for s, e, lp in zip(starts, ends, loops, strict=True)
    ]
    qpos_prev, qpos_next, qpos_f, qvel_f, qacc_f = (np.concatenate(p) for p in zip(*parts, strict=True))

    feet, geoms, foot_of_geom = leg_feet(model)
    surface = GeomSurface.of(model, geoms, SURFACE_SAMPLES)
    foot_of_sample = foot_of_geom[surface.owner]
    sample_body = model.geom_bodyid[geoms][surface.owner]
    weight = float(mujoco.mj_getTotalmass(model) * np.linalg.norm(model.opt.gravity))
    root_body, root_dof = int(model.jnt_bodyid[root]), int(model.jnt_dofadr[root])
    inverse = id_model(model)
    data = mujoco.MjData(model)
    nf = len(feet)
    foot_body = np.zeros((n, nf), dtype=int)
    local = np.zeros((n, nf, 3))  # each foot's lowest point in its body's frame
    clearance, slip = np.zeros((n, nf)), np.zeros((n, nf))
    lowest = np.zeros((n, nf, 3))
    stance = np.zeros((n, nf), dtype=bool)
    force, moment, com = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    cop, outside = np.full((n, 3), np.nan), np.full(n, np.nan)
    cop_support = np.full((n, 2), np.nan)
    overlap = np.zeros(n)
    for t in range(n):
        data.qpos[:] = qpos[t]  # the pose as given: feet, contact and slip
        mujoco.mj_kinematics(model, data)
        overlap[t] = body_overlap_m(model, data)
        pts = surface.world_points(data)
        ground = terrain.height_at(pts[:, :2]) if terrain is not None else np.zeros(len(pts))
        height = pts[:, 2] - ground
        for f in range(nf):
            sel = np.flatnonzero(foot_of_sample == f)
            k = sel[np.argmin(height[sel])]
            clearance[t, f], lowest[t, f] = height[k], pts[k]
            b = foot_body[t, f] = sample_body[k]
            local[t, f] = data.xmat[b].reshape(3, 3).T @ (pts[k] - data.xpos[b])
        moved = []
        for q in (qpos_prev[t], qpos_next[t]):  # the same material points one frame either side
            data.qpos[:] = q
            mujoco.mj_kinematics(model, data)
            rot = data.xmat[foot_body[t]].reshape(nf, 3, 3)
            moved.append(data.xpos[foot_body[t]] + np.einsum("fij,fj->fi", rot, local[t]))
        slip[t] = np.linalg.norm(moved[1][:, :2] - moved[0][:, :2], axis=1) * (rate_hz / 2.0)
        stance[t] = (clearance[t] <= th.stance_height_m) & (
            clearance[t] <= clearance[t].min() + th.support_margin_m
        )
        touching = height <= th.stance_height_m

        data.qpos[:], data.qvel[:], data.qacc[:] = qpos_f[t], qvel_f[t], qacc_f[t]  # filtered: dynamics
        mujoco.mj_inverse(inverse, data)
        residual = data.qfrc_inverse[root_dof : root_dof + 6]
        force[t] = residual[:3]
        anchor = data.xanchor[root].copy()
        moment_anchor = data.xmat[root_body].reshape(3, 3) @ residual[3:6]
        com[t] = data.subtree_com[root_body]
        moment[t] = moment_anchor - np.cross(com[t] - anchor, force[t])
        if force[t, 2] <= th.loaded_force_bw * weight:
            continue
        if touching.any():
            level = float(ground[touching].mean())
        else:
            level = float(terrain.height_at(com[t, :2])) if terrain is not None else 0.0
        rz = level - com[t, 2]  # wrench about the COM, moved to the point on the plane z = level
        fx, fy, fz = force[t]
        cop[t] = com[t] + [(rz * fx - moment[t, 1]) / fz, (moment[t, 0] + rz * fy) / fz, rz]
        if touching.any():
            outside[t], cop_support[t] = nearest_support_point(pts[touching, :2], cop[t, :2])
        else:
            outside[t] = float(np.min(np.linalg.norm(lowest[t] - cop[t], axis=1)))

    planted = stance.copy()
    for s, e, lp in zip(starts, ends, loops, strict=True):
        prev, after = np.roll(stance[s:e], 1, axis=0), np.roll(stance[s:e], -1, axis=0)
        if not lp:  # a non-looping clip's end frames have one neighbour only
            prev[0], after[-1] = stance[s], stance[e - 1]
        planted[s:e] &= prev & after
    accel = qacc_f[:, root_dof : root_dof + 3].copy()
    series = PlausibilitySeries(
        force, moment, com, cop, outside, cop_support, clearance, stance, planted, slip, accel, overlap
    )
    return _summarise(series, feet, weight, th)


def body_overlap_m(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """Deepest overlap (m, >= 0) of two collision geoms of the body in ``data``'s pose (after
    ``mj_kinematics``): the contacts MuJoCo would make, those with the world's geoms left out."""
    mujoco.mj_collision(model, data)
    deepest = 0.0
    for i in range(data.ncon):
        c = data.contact[i]
        if model.geom_bodyid[c.geom1] and model.geom_bodyid[c.geom2]:
            deepest = max(deepest, -float(c.dist))
    return deepest


def _penetration(s: PlausibilitySeries, th: Thresholds) -> dict:
    below = np.maximum(-s.clearance_m.min(axis=1), 0.0) if s.clearance_m.size else np.zeros(0)
    overlap = s.body_overlap_m if s.body_overlap_m is not None else np.zeros(len(below))
    n = max(len(below), 1)
    return {
        "feet_below_frac": float(np.sum(below > th.max_penetration_m) / n),
        "feet_below_max_m": float(below.max()) if below.size else 0.0,
        "limbs_overlap_frac": float(np.sum(overlap > th.max_penetration_m) / n),
        "limbs_overlap_max_m": float(overlap.max()) if overlap.size else 0.0,
    }


def _slip_stats(values: np.ndarray) -> dict:
    if not values.size:
        return {"stance_frames": 0, "median_mps": None, "p90_mps": None}
    median, p90 = np.percentile(values, [50, 90])
    return {"stance_frames": int(values.size), "median_mps": float(median), "p90_mps": float(p90)}


def _summarise(s: PlausibilitySeries, feet: tuple[str, ...], weight: float, th: Thresholds) -> Plausibility:
    fz = s.force_n[:, 2] / weight
    slip = _slip_stats(s.slip_mps[s.planted])
    slip["by_foot"] = {f: _slip_stats(s.slip_mps[s.planted[:, i], i]) for i, f in enumerate(feet)}
    force = {
        "min": float(fz.min()),
        "max": float(fz.max()),
        "pulling_frames": int(np.sum(fz < th.min_vertical_force_bw)),
        "above_max_frames": int(np.sum(fz > th.max_vertical_force_bw)),
    }
    loaded = np.isfinite(s.cop_outside_m)
    away = s.cop_outside_m[loaded]
    cop = {
        "loaded_frames": int(loaded.sum()),
        "outside_frac": float(np.mean(away > th.cop_outside_m)) if away.size else None,
        "outside_max_m": float(away.max()) if away.size else None,
    }
    acc = s.root_accel_mps2
    accel = {
        "vertical_min": float(acc[:, 2].min()),
        "vertical_max": float(acc[:, 2].max()),
        "horizontal_max": float(np.linalg.norm(acc[:, :2], axis=1).max()),
    }
    pen = _penetration(s, th)
    failures = []
    if slip["median_mps"] is not None and slip["median_mps"] > th.max_slip_median_mps:
        per_foot = ", ".join(
            f"{f} {v['median_mps']:.2f}" for f, v in slip["by_foot"].items() if v["median_mps"]
        )
        failures.append(
            f"stance-foot slip: median {slip['median_mps']:.2f} m/s > "
            f"{th.max_slip_median_mps:g} m/s ({per_foot})"
        )
    if force["pulling_frames"]:
        failures.append(
            f"floor pulling: vertical force below {th.min_vertical_force_bw:g} BW in "
            f"{force['pulling_frames']} frames (min {force['min']:.2f} BW)"
        )
    if force["above_max_frames"]:
        failures.append(
            f"vertical force above {th.max_vertical_force_bw:g} BW in "
            f"{force['above_max_frames']} frames (max {force['max']:.2f} BW)"
        )
    if cop["outside_frac"] is not None and cop["outside_frac"] > th.max_cop_outside_frac:
        failures.append(
            f"centre of pressure outside the feet: {cop['outside_frac']:.0%} of "
            f"{cop['loaded_frames']} loaded frames more than {th.cop_outside_m:g} m outside "
            f"> {th.max_cop_outside_frac:.0%} (max {cop['outside_max_m']:.2f} m)"
        )
    if max(-accel["vertical_min"], accel["vertical_max"]) > th.max_root_vertical_accel_mps2:
        failures.append(
            f"root vertical acceleration {accel['vertical_min']:.1f} to "
            f"{accel['vertical_max']:.1f} m/s2 outside +-{th.max_root_vertical_accel_mps2:.1f} m/s2"
        )
    for what, key in (("feet in the ground", "feet_below"), ("limbs through each other", "limbs_overlap")):
        if pen[f"{key}_frac"] > th.max_penetration_frac:
            failures.append(
                f"{what}: {pen[f'{key}_frac']:.0%} of {len(fz)} frames more than {th.max_penetration_m:g} m "
                f"> {th.max_penetration_frac:.0%} (deepest {pen[f'{key}_max_m']:.3f} m)"
            )
    return Plausibility(len(fz), weight, slip, force, cop, accel, tuple(failures), th, s, pen)


def trajectory_plausibility(
    traj: Trajectory,
    model: mujoco.MjModel | None = None,
    thresholds: Thresholds | None = None,
    source: str | os.PathLike | None = None,
) -> Plausibility:
    """:func:`plausibility` of a :class:`Trajectory` (its clips, loops and terrain) on its model
    (loaded from the registry by ``traj.model_name`` unless given); :class:`InputError` if the
    motion does not fit the model (naming ``source``, default the model name). A motion
    retargeted onto a scaled model (``retarget smpl`` scales segments) is best checked on that
    model: the registry's has other foot sizes."""
    if model is None:
        from musclerl.models.registry import load_model

        model = load_model(traj.model_name)
    traj.check_model(model, traj.model_name if source is None else source)
    return plausibility(
        model,
        traj.qpos,
        traj.rate_hz,
        terrain=traj.terrain,
        clip_starts=traj.clip_starts,
        clip_loop=traj.clip_loop,
        thresholds=thresholds,
    )
