"""Support geometry from a motion: stance contacts say where the ground is, free space where it is not.

Evidence, all world metres with Z up:

* **Support patches.** Each stance run of each foot gives sole points lying on the ground
  (foot points minus their height above the sole). A patch fits a plane through them,
  ``z = height + slope . (xy - centre)``; a ridge term keeps the slope at zero in directions the
  points do not span (heel and toe alone fix only the slope along the foot).
* **Free space.** Wherever any foot or body point passes, there is no ground above it: the lowest
  point seen over each cell is a ceiling for the ground in that cell.

The heightfield (:class:`musclerl.motion.Terrain`) is filled cell by cell from the patches: the
nearest patch whose plane lies under the ceiling decides the level, and other patches that agree
with it (within ``agree_m``) are blended in by inverse squared distance. Patches on one slope or one
floor agree and blend into a smooth surface; patches on two sides of a step disagree, so the
level switches halfway between them — or where free space pushes the edge — and the step stays
sharp instead of becoming a ramp.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.stats
from scipy.ndimage import distance_transform_edt
from scipy.spatial import cKDTree

from musclerl.ground.contact import foot_flags, stance_phases
from musclerl.motion.trajectory import Terrain

#: the fewest frames of a stance run that make a support patch, at any rate
MIN_PATCH_FRAMES = 3


@dataclasses.dataclass(frozen=True)
class SupportPatch:
    """Ground under one stance phase of one foot.

    ``samples_m`` (N, 3) are the ground points; the plane is
    ``z = height_m + slope @ (xy - centre_m)`` with ``slope`` = (dz/dx, dz/dy).
    """

    foot: int
    frames: tuple[int, int]
    samples_m: np.ndarray
    centre_m: np.ndarray
    height_m: float
    slope: np.ndarray
    heading: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2))  # (2,) unit or zero

    @property
    def slope_deg(self) -> float:
        """The plane's tilt from horizontal, degrees."""
        return float(np.degrees(np.arctan(np.linalg.norm(self.slope))))

    def predict_m(self, xy_m: np.ndarray, max_extrapolation_m: float) -> np.ndarray:
        """Plane height at ``xy_m`` (..., 2); the lever arm is clipped to ``max_extrapolation_m``."""
        offset = np.asarray(xy_m, dtype=float) - self.centre_m
        norm = np.linalg.norm(offset, axis=-1, keepdims=True)
        scale = np.minimum(1.0, max_extrapolation_m / np.maximum(norm, 1e-12))
        return self.height_m + (offset * scale) @ self.slope


@dataclasses.dataclass(frozen=True)
class TerrainParams:
    """How the heightfield is built (metres)."""

    cell_m: float = 0.05
    margin_m: float = 0.5
    agree_m: float = 0.015  # planes closer than agree_m + agree_per_m * distance are one surface
    agree_per_m: float = 0.08
    ceiling_tol_m: float = 0.01
    max_extrapolation_m: float = 0.5
    coverage_m: float = 0.3  # cells this close to evidence are solved; the rest copy the nearest
    lateral_scale: float = 0.3  # weight of distances across the walking direction
    slope_ridge: float = 1e-3  # ridge weight on slope (m^2 of lever arm)
    # Stance runs shorter than this give no patch (at least 3 frames): at 60 Hz and up, the last
    # frames of a toe-off cut by the clip's start are otherwise long enough to pass for a footprint
    # (DeepMimic's walk resampled to 60 Hz: a 4-frame toe 2 cm up put the ground 2.1 cm high).
    min_stance_s: float = 0.08

    def min_stance_frames(self, rate_hz: float) -> int:
        """Frames a stance run needs to give a patch at ``rate_hz``."""
        return max(MIN_PATCH_FRAMES, int(round(self.min_stance_s * rate_hz)))


def fit_patch(samples_m: np.ndarray, foot: int, frames: tuple[int, int], ridge: float) -> SupportPatch:
    """Least-squares plane through ground points ``samples_m`` (N, 3) with a ridge on the slope."""
    samples = np.asarray(samples_m, dtype=float)
    centre = samples[:, :2].mean(axis=0)
    d = samples[:, :2] - centre
    a = np.column_stack([np.ones(len(samples)), d])
    reg = np.diag([0.0, ridge * len(samples), ridge * len(samples)])
    coef = np.linalg.solve(a.T @ a + reg + 1e-12 * np.eye(3), a.T @ samples[:, 2])
    return SupportPatch(
        foot=foot,
        frames=frames,
        samples_m=samples,
        centre_m=centre,
        height_m=float(coef[0]),
        slope=coef[1:].copy(),
    )


def support_patches(
    points_m: np.ndarray,
    flags: np.ndarray,
    foot_of_point: np.ndarray,
    sole_offset_m: np.ndarray | float = 0.0,
    ridge: float = 1e-3,
    settle_m: float = 0.01,
    min_frames: int = 3,
) -> list[SupportPatch]:
    """One :class:`SupportPatch` per stance run of each foot.

    ``points_m`` (T, P, 3) foot points; ``flags`` (T, P) stance per point; ``foot_of_point`` (P,)
    foot index per point; ``sole_offset_m`` (P,) or scalar: each point's height above the ground
    when planted. Only points flagged in stance contribute samples, and of those only the frames
    where the point has settled (:func:`settled_mask`: the densest ``settle_m`` band of its
    heights in the phase); stance runs shorter than ``min_frames`` give no patch.
    """
    pts = np.asarray(points_m, dtype=float)
    flags = np.asarray(flags, dtype=bool)
    offset = np.broadcast_to(np.asarray(sole_offset_m, dtype=float), (pts.shape[1],))
    feet = foot_flags(flags, foot_of_point)
    foot_of_point = np.asarray(foot_of_point, dtype=int)
    patches = []
    for f in range(feet.shape[1]):
        cols = np.flatnonzero(foot_of_point == f)
        for start, end in stance_phases(feet[:, f]):
            if end - start < min_frames:
                continue  # a touch too short to tell ground from a passing toe (e.g. at a clip's end)
            sel = flags[start:end][:, cols]
            ground = pts[start:end][:, cols].copy()
            ground[..., 2] -= offset[cols]
            sel &= settled_mask(ground[..., 2], sel, settle_m)
            samples = ground[sel]
            if len(samples):
                patches.append(fit_patch(samples, f, (start, end), ridge))
    return with_headings(sorted(patches, key=lambda p: p.frames[0]))


def settled_mask(heights_m: np.ndarray, flags: np.ndarray, settle_m: float) -> np.ndarray:
    """(T, P) bool: the frames of each point inside the densest ``settle_m``-wide band of its
    flagged heights ``heights_m`` (T, P) (ties: the lowest band).

    A planted point spends most of the stance at one height. A heel driven into the floor for a
    frame or two at a hard strike (common in motion capture and in DeepMimic's run) and a heel
    rising before toe-off lie outside that band, so neither sinks nor lifts the recovered ground.
    Measured on the DeepMimic clips' keypoint-pass soles with heels sunk 2-6 cm over the first 40 %
    of each stance: the walk's ground stays within 2.2 cm (taking the lowest 1 cm band instead:
    4-12 cm too low); the run's short stances (3-5 heel frames at 30 Hz) still follow the sink.
    """
    z = np.asarray(heights_m, dtype=float)
    out = np.zeros(z.shape, dtype=bool)
    for p in range(z.shape[1]):
        frames = np.flatnonzero(flags[:, p])
        if not len(frames):
            continue
        values = np.sort(z[frames, p])
        counts = np.searchsorted(values, values + settle_m, side="right") - np.arange(len(values))
        low = values[int(np.argmax(counts))]  # the first (lowest) of the densest bands
        out[frames, p] = (z[frames, p] >= low) & (z[frames, p] <= low + settle_m)
    return out


def with_headings(patches: list[SupportPatch], min_travel_m: float = 0.1) -> list[SupportPatch]:
    """Set each patch's ``heading``: the walking direction from the previous to the next patch
    (in time). Zero where the body does not travel (standing), which keeps distances isotropic."""
    out = []
    for i, patch in enumerate(patches):
        a = patches[max(i - 1, 0)].centre_m
        b = patches[min(i + 1, len(patches) - 1)].centre_m
        d = b - a
        norm = float(np.linalg.norm(d))
        heading = d / norm if norm > min_travel_m else np.zeros(2)
        out.append(dataclasses.replace(patch, heading=heading))
    return out


def _grid(xy_m: np.ndarray, params: TerrainParams) -> tuple[np.ndarray, int, int]:
    lo = np.floor((xy_m.min(axis=0) - params.margin_m) / params.cell_m) * params.cell_m
    hi = xy_m.max(axis=0) + params.margin_m
    cols = int(np.ceil((hi[0] - lo[0]) / params.cell_m)) + 1
    rows = int(np.ceil((hi[1] - lo[1]) / params.cell_m)) + 1
    return lo, rows, cols


def free_space_ceiling(
    points_m: np.ndarray, origin_m: np.ndarray, cell_m: float, shape: tuple[int, int]
) -> np.ndarray:
    """Lowest point height seen over each cell (R, C); +inf where nothing passed.

    ``points_m`` (..., 3) are bottom points of feet and bodies at any time. A point counts for the
    cells whose centre is within half a cell of it (the four around it).
    """
    pts = np.asarray(points_m, dtype=float).reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    rows, cols = shape
    ceiling = np.full(shape, np.inf)
    g = (pts[:, :2] - origin_m) / cell_m
    for dc in (0, 1):
        for dr in (0, 1):
            c = np.floor(g[:, 0]).astype(int) + dc
            r = np.floor(g[:, 1]).astype(int) + dr
            ok = (c >= 0) & (c < cols) & (r >= 0) & (r < rows)
            np.minimum.at(ceiling, (r[ok], c[ok]), pts[ok, 2])
    return ceiling


def _patch_distance(xy: np.ndarray, patch: SupportPatch, lateral_scale: float) -> np.ndarray:
    """Distance (N,) from points ``xy`` (N, 2) to the nearest sample of ``patch``.

    Across the walking direction distances count ``lateral_scale`` times: a tread, a landing or a
    slope extends sideways, so a footprint speaks for the ground beside it more than for the
    ground ahead of it.
    """
    samples = patch.samples_m[:, :2]
    if len(samples) > 64:
        samples = samples[np.linspace(0, len(samples) - 1, 64).astype(int)]
    d = xy[:, None, :] - samples[None]
    along = d @ patch.heading
    lateral = np.sqrt(np.maximum(np.sum(d * d, axis=-1) - along**2, 0.0))
    scale = lateral_scale if np.any(patch.heading) else 1.0
    return np.min(np.hypot(along, scale * lateral), axis=1)


def heights_from_patches(
    xy_m: np.ndarray, patches: list[SupportPatch], ceiling_m: np.ndarray, params: TerrainParams
) -> np.ndarray:
    """Ground height (N,) at points ``xy_m`` (N, 2) from patches, under ceilings ``ceiling_m`` (N,)."""
    xy = np.asarray(xy_m, dtype=float)
    dist = np.stack([_patch_distance(xy, p, params.lateral_scale) for p in patches], axis=1)  # (N, K)
    pred = np.stack([p.predict_m(xy, params.max_extrapolation_m) for p in patches], axis=1)
    valid = pred <= ceiling_m[:, None] + params.ceiling_tol_m
    none_valid = ~valid.any(axis=1)
    # Where every patch sits above the ceiling, the ceiling itself is the best bound.
    masked = np.where(valid, dist, np.inf)
    nearest = np.argmin(masked, axis=1)
    rows = np.arange(len(xy))
    level = pred[rows, nearest]
    d0 = dist[rows, nearest]
    tol = params.agree_m + params.agree_per_m * dist
    agree = valid & (np.abs(pred - level[:, None]) <= tol) & (dist <= d0[:, None] + 0.5)
    w = np.where(agree, 1.0 / (dist + 0.02) ** 2, 0.0)
    blended = (w * pred).sum(axis=1) / np.maximum(w.sum(axis=1), 1e-12)
    fallback = np.minimum(ceiling_m, pred.min(axis=1))
    return np.where(none_valid, fallback, blended)


#: A floor fitted through stance samples and tilted less than this is taken as level (marker and
#: keypoint noise tilt a fitted plane; the marker pipeline's floor rule, docs/retargeting.md).
LEVEL_SLOPE_DEG = 2.0
SLOPE_TEST_ALPHA = 0.01
#: Stance runs whose mean heights all lie within this of one plane stand on one floor: a stair's
#: rise (15-20 cm) or a curb (10 cm) is far beyond it; the foot keypoints of a lab walk put their
#: stances 1-2 cm about a plane (CMU's BVH walks on myolegs: at most 1.6 cm).
ONE_FLOOR_TOL_M = 0.03


def slope_p_value(patches: list[SupportPatch]) -> float:
    """F-test p-value of a sloped floor against a flat one from stance runs ``patches``: one run is
    one observation (its mean height at its mean position; frames within a run are not
    independent), heights regressed on position with a per-foot offset (one foot's points may sit a
    few millimetres higher); 1.0 when there are too few runs to test (fewer than the parameters + 1).

    The slope counts the position directions the runs span beyond the feet's offset: on a straight
    walk with each foot on its own line the sideways position *is* the foot, so one direction is
    tested (counting two found no design of full rank and called an 8 deg ramp flat)."""
    centres = np.array([p.samples_m[:, :2].mean(axis=0) for p in patches])
    heights = np.array([p.samples_m[:, 2].mean() for p in patches])
    feet = np.array([p.foot for p in patches])
    flat = [np.ones(len(patches))] + [(feet == f).astype(float) for f in np.unique(feet)[1:]]
    reduced = np.column_stack(flat)
    full = np.column_stack([*flat, centres - centres.mean(axis=0)])
    tested = np.linalg.matrix_rank(full) - np.linalg.matrix_rank(reduced)
    dof = len(patches) - np.linalg.matrix_rank(full)
    if tested < 1 or dof < 1:
        return 1.0
    rss_full = float(np.sum((heights - full @ np.linalg.lstsq(full, heights, rcond=None)[0]) ** 2))
    rss_flat = float(np.sum((heights - reduced @ np.linalg.lstsq(reduced, heights, rcond=None)[0]) ** 2))
    if rss_full <= 1e-18:
        return 0.0 if rss_flat > 1e-12 else 1.0
    statistic = ((rss_flat - rss_full) / tested) / (rss_full / dof)
    return float(scipy.stats.f.sf(statistic, tested, dof))


def is_sloped(plane: SupportPatch, p_value: float) -> bool:
    """A fitted floor ``plane`` is kept sloped only when the slope test rejects a flat floor at
    :data:`SLOPE_TEST_ALPHA` *and* it tilts at least :data:`LEVEL_SLOPE_DEG`."""
    return p_value < SLOPE_TEST_ALPHA and plane.slope_deg >= LEVEL_SLOPE_DEG


def plane_of_patches(
    patches: list[SupportPatch], ridge: float, frames: tuple[int, int]
) -> tuple[SupportPatch, float]:
    """The plane through the samples of all ``patches`` (as one patch spanning ``frames``) and the
    slope test's p-value (:func:`slope_p_value`)."""
    samples = np.concatenate([p.samples_m for p in patches])
    return fit_patch(samples, -1, frames, ridge), slope_p_value(patches)


def one_floor(
    patches: list[SupportPatch], params: TerrainParams, frames: tuple[int, int]
) -> SupportPatch | None:
    """The floor under ``patches`` when they all stand on one plane (every run's mean height within
    :data:`ONE_FLOOR_TOL_M` of the plane through them), level unless :func:`is_sloped` and the
    stances lean with it (:func:`stances_tilt_with`), a level floor only where the stances lie
    within that tolerance of it too; None when they do not (steps, stairs, a ramp that bends, a box
    and the floor: :func:`recover_terrain` builds that ground).

    Why: a walk in a lab has one floor, but the heightfield recovered from its stances follows every
    stance's own height and tilt (foot keypoints placed by a skeleton other than the model's): CMU's
    level walks came out as 2-4 deg ramps with 3-10 cm of bumps, which a policy then walks on."""
    if not patches:
        return None
    plane, p_value = plane_of_patches(patches, params.slope_ridge, frames)
    centres = np.array([p.samples_m[:, :2].mean(axis=0) for p in patches])
    heights = np.array([p.samples_m[:, 2].mean() for p in patches])
    if np.abs(heights - plane.predict_m(centres, np.inf)).max() > ONE_FLOOR_TOL_M:
        return None
    if is_sloped(plane, p_value) and stances_tilt_with(plane, patches):
        return plane
    level = dataclasses.replace(plane, slope=np.zeros(2))
    if (
        plane.slope_deg >= LEVEL_SLOPE_DEG
        and np.abs(heights - level.predict_m(centres, np.inf)).max() > ONE_FLOOR_TOL_M
    ):
        return None  # a steep plane through stances that are level each: a box, a step (a drop jump)
    return level


def stances_tilt_with(plane: SupportPatch, patches: list[SupportPatch], share: float = 0.5) -> bool:
    """Whether the stances ``patches`` lean with the ``plane`` through them: the median of their
    own slopes along the plane's steepest direction is at least ``share`` of the plane's. Feet on
    a ramp tilt with it; feet on a box and then on the floor are level each, while the plane
    through both levels is steep (OpenCap's drop jump: 17.5 deg through stances of 0.1-5 deg)."""
    steepest = float(np.linalg.norm(plane.slope))
    if steepest < 1e-9:
        return True
    along = np.array([p.slope @ plane.slope / steepest for p in patches])
    return bool(np.median(along) >= share * steepest)


def recover_terrain(
    patches: list[SupportPatch],
    free_points_m: np.ndarray | None = None,
    params: TerrainParams | None = None,
    extent_xy_m: np.ndarray | None = None,
) -> Terrain:
    """Heightfield covering the patches (and ``extent_xy_m`` (N, 2) if given) plus a margin.

    ``free_points_m`` (..., 3): bottom points of feet and bodies over the whole motion (may include
    the stance samples themselves; they agree with the ground).
    """
    params = params or TerrainParams()
    if not patches:
        raise ValueError("no stance contact found: cannot recover the ground")
    xy_all = np.concatenate([p.samples_m[:, :2] for p in patches])
    if extent_xy_m is not None:
        xy_all = np.concatenate([xy_all, np.asarray(extent_xy_m, dtype=float).reshape(-1, 2)])
    origin, rows, cols = _grid(xy_all, params)
    cx, cy = np.meshgrid(
        origin[0] + params.cell_m * np.arange(cols), origin[1] + params.cell_m * np.arange(rows)
    )
    centres = np.column_stack([cx.ravel(), cy.ravel()])
    if free_points_m is None:
        ceiling = np.full((rows, cols), np.inf)
    else:
        ceiling = free_space_ceiling(free_points_m, origin, params.cell_m, (rows, cols))
    near = _near_samples(centres, xy_all, params.coverage_m).reshape(rows, cols)
    heights = np.zeros((rows, cols))
    heights[near] = heights_from_patches(centres[near.ravel()], patches, ceiling[near], params)
    # Outside the covered band, continue the nearest covered cell (no plane extrapolated far away).
    _, (ri, ci) = distance_transform_edt(~near, return_indices=True)
    heights = heights[ri, ci]
    return Terrain(height_m=heights, origin_m=origin, cell_m=params.cell_m)


def _near_samples(centres: np.ndarray, xy: np.ndarray, radius_m: float) -> np.ndarray:
    """(N,) bool: cell centres (N, 2) within ``radius_m`` of any point of ``xy`` (M, 2)."""
    return cKDTree(xy).query(centres, k=1, distance_upper_bound=radius_m)[0] < np.inf


def terrain_from_contacts(
    points_m: np.ndarray,
    flags: np.ndarray,
    foot_of_point: np.ndarray,
    sole_offset_m: np.ndarray | float = 0.0,
    free_points_m: np.ndarray | None = None,
    params: TerrainParams | None = None,
    rate_hz: float | None = None,
) -> Terrain:
    """Convenience: :func:`support_patches` then :func:`recover_terrain` (shapes as there);
    with ``rate_hz``, stance runs shorter than ``params.min_stance_s`` give no patch (else 3 frames)."""
    params = params or TerrainParams()
    min_frames = params.min_stance_frames(rate_hz) if rate_hz else 3
    patches = support_patches(
        points_m, flags, foot_of_point, sole_offset_m, params.slope_ridge, min_frames=min_frames
    )
    pts = np.asarray(points_m, dtype=float)
    offset = np.broadcast_to(np.asarray(sole_offset_m, dtype=float), (pts.shape[1],))
    soles = pts - np.stack([np.zeros_like(offset), np.zeros_like(offset), offset], axis=-1)
    free = (
        soles.reshape(-1, 3)
        if free_points_m is None
        else np.concatenate([soles.reshape(-1, 3), np.asarray(free_points_m, dtype=float).reshape(-1, 3)])
    )
    return recover_terrain(patches, free, params, extent_xy_m=pts[..., :2].reshape(-1, 2))


def terrain_summary(terrain: Terrain, step_m: float = 0.03) -> dict:
    """Plain numbers for reports: kind ('flat', 'sloped', 'steps'), height range, slope, step count.

    A step is a jump of more than ``step_m`` between neighbouring cells; ``max_slope_deg`` is the
    95th percentile of the slope away from steps.
    """
    h = terrain.height_m
    gy, gx = np.gradient(h, terrain.cell_m)
    jumps_x = np.abs(np.diff(h, axis=1)) > step_m
    jumps_y = np.abs(np.diff(h, axis=0)) > step_m
    smooth = ~(
        np.pad(jumps_x, ((0, 0), (0, 1)))
        | np.pad(jumps_x, ((0, 0), (1, 0)))
        | np.pad(jumps_y, ((0, 1), (0, 0)))
        | np.pad(jumps_y, ((1, 0), (0, 0)))
    )
    slope_deg = np.degrees(np.arctan(np.hypot(gx, gy)))[smooth]
    max_slope = float(np.percentile(slope_deg, 95)) if slope_deg.size else 0.0
    # Steps met walking along a row (a run of neighbouring jump cells is one step); median over rows.
    starts = np.diff(np.pad(jumps_x.astype(np.int8), ((0, 0), (1, 0))), axis=1) > 0
    steps = int(np.median(starts.sum(axis=1)))
    height_range = float(h.max() - h.min())
    if steps or jumps_y.any():
        kind = "steps"
    elif height_range > 0.01 and max_slope > 1.0:
        kind = "sloped"
    else:
        kind = "flat"
    return {
        "kind": kind,
        "height_min_m": float(h.min()),
        "height_max_m": float(h.max()),
        "max_slope_deg": max_slope,
        "steps_along_x": steps,
        "cell_m": float(terrain.cell_m),
        "shape": [int(s) for s in h.shape],
        "origin_m": [float(v) for v in terrain.origin_m],
    }
