"""Clips on different grounds in one dataset: every ground a tile of one heightfield.

All environments of a run share one compiled model (``musclerl.envs.world``: one ``hfield``
geom), and every environment is its own simulation of it. So a dataset whose clips stand on
different grounds (flat, slopes, steps recovered by retargeting) gets one heightfield holding
each distinct ground as a tile, the tiles stacked along +y with a gap between them, and every
clip moved in the ground plane by its tile's offset (root x, y of every frame, and recorded
sites): an environment on clip c then walks on clip c's ground. Observations, rewards and
terminations need nothing else: they read heights through the one terrain
(``musclerl.envs.geometry.ground_height``) and positions relative to the root or to the (moved)
reference, never absolute x, y.

Layout, in the dataset's world frame (metres, z up):

- a tile covers its ground's grid and the ground-plane box its clips' roots pass through,
  widened by :data:`TILE_MARGIN_M`; inside it the heights are the ground's own
  (``Terrain.height_at``, which continues the edge heights outside the grid, as a single-terrain
  run sees them), 0 on the tile of the flat clips;
- all tiles share the columns (the union of their x ranges) and the cell (the finest of the
  grounds); the first ground stays where it is, the next ones start :data:`TILE_GAP_M` above the
  previous tile's top edge, with heights ramping linearly across the gap;
- offsets are whole cells from the grid's anchor, so a ground whose cell is the shared one, or a
  whole multiple of it, keeps its exact bilinear surface; another one is sampled bilinearly (as
  ``height_at`` reads it) at the shared cell.

Clips whose grounds are identical (same heights, origin and cell) share a tile; a dataset with a
single ground is returned unchanged. A looping clip that walks beyond its tile's x range meets
the heights at the grid's end columns (the model's floor plane lies at the lowest point).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from musclerl.motion.trajectory import Terrain, Trajectory

#: Ground-plane margin (m) around the box a clip's root passes through, inside its tile.
TILE_MARGIN_M = 1.0
#: Distance (m) between neighbouring tiles (a linear ramp between their edge rows).
TILE_GAP_M = 2.0


@dataclasses.dataclass(frozen=True)
class TiledGrounds:
    """The trajectories moved onto their tiles, the heightfield they share, and the moves."""

    trajectories: list[Trajectory]  # each with ``terrain`` = the shared heightfield (or as given)
    terrain: Terrain | None
    offset_m: np.ndarray  # (len(trajectories), 2) ground-plane move of each, m


def same_ground(a: Terrain | None, b: Terrain | None) -> bool:
    """Both flat (no terrain), or the same heightfield, origin and cell size."""
    if a is None or b is None:
        return a is b
    return (
        a.height_m.shape == b.height_m.shape
        and bool(np.array_equal(a.height_m, b.height_m))
        and bool(np.array_equal(a.origin_m, b.origin_m))
        and a.cell_m == b.cell_m
    )


def tile_grounds(trajs: list[Trajectory]) -> TiledGrounds:
    """Lay the distinct grounds of ``trajs`` out as tiles of one heightfield (module docstring);
    the root must be the first joint (x, y in ``qpos[:, 0:2]``), as the environments require."""
    grounds: list[Terrain | None] = []
    group = []
    for t in trajs:
        k = next((i for i, g in enumerate(grounds) if same_ground(g, t.terrain)), None)
        if k is None:
            grounds.append(t.terrain)
            k = len(grounds) - 1
        group.append(k)
    if len(grounds) == 1:
        return TiledGrounds(list(trajs), trajs[0].terrain, np.zeros((len(trajs), 2)))
    cell = min(g.cell_m for g in grounds if g is not None)
    lo, hi = [], []  # (2,) each: tile corners in the ground's own frame, on its grid
    for k, ground in enumerate(grounds):
        roots = np.concatenate([t.qpos[:, :2] for t, g in zip(trajs, group, strict=True) if g == k])
        box_lo, box_hi = roots.min(axis=0) - TILE_MARGIN_M, roots.max(axis=0) + TILE_MARGIN_M
        anchor = np.zeros(2)
        if ground is not None:
            anchor = np.asarray(ground.origin_m, dtype=float)
            box_lo = np.minimum(box_lo, anchor)
            box_hi = np.maximum(box_hi, anchor + np.asarray(ground.size_m))
        lo.append(anchor + np.floor((box_lo - anchor) / cell - 1e-9) * cell)
        hi.append(anchor + np.ceil((box_hi - anchor) / cell + 1e-9) * cell)
    gap_rows = max(1, math.ceil(TILE_GAP_M / cell))
    offsets = np.zeros((len(grounds), 2))
    first_row = [0]
    for k in range(1, len(grounds)):
        # x: the whole cells nearest to no move; y: the previous tile's top plus the gap
        offsets[k, 0] = lo[0][0] + np.round((lo[k][0] - lo[0][0]) / cell) * cell - lo[k][0]
        last_row = first_row[-1] + _cells(lo[k - 1][1], hi[k - 1][1], cell)
        first_row.append(last_row + gap_rows)
        offsets[k, 1] = lo[0][1] + first_row[k] * cell - lo[k][1]
    x0 = min(lo[k][0] + offsets[k, 0] for k in range(len(grounds)))
    x1 = max(hi[k][0] + offsets[k, 0] for k in range(len(grounds)))
    xs = x0 + np.arange(_cells(x0, x1, cell) + 1) * cell
    blocks = []
    for k, ground in enumerate(grounds):
        ys = lo[k][1] + np.arange(_cells(lo[k][1], hi[k][1], cell) + 1) * cell  # the ground's frame
        grid = np.stack(np.meshgrid(xs - offsets[k, 0], ys, indexing="xy"), axis=-1)
        tile = np.zeros(grid.shape[:2]) if ground is None else ground.height_at(grid)
        if blocks:
            ramp = np.linspace(0.0, 1.0, gap_rows + 1)[1:-1, None]
            blocks.append(blocks[-1][-1] * (1 - ramp) + tile[0] * ramp)
        blocks.append(tile)
    terrain = Terrain(np.concatenate(blocks), np.array([x0, lo[0][1]]), float(cell))
    moved = [_moved(t, offsets[g], terrain) for t, g in zip(trajs, group, strict=True)]
    return TiledGrounds(moved, terrain, offsets[np.asarray(group)])


def _cells(a: float, b: float, cell: float) -> int:
    """Whole cells from ``a`` to ``b`` (both on one grid of ``cell``)."""
    return int(round((b - a) / cell))


def _moved(traj: Trajectory, offset_m: np.ndarray, terrain: Terrain) -> Trajectory:
    """``traj`` moved by ``offset_m`` (2,) in the ground plane, standing on ``terrain``."""
    qpos = np.array(traj.qpos, dtype=float)
    qpos[:, :2] += offset_m
    sites = None
    if traj.site_pos_m is not None:
        sites = np.array(traj.site_pos_m, dtype=float)
        sites[..., :2] += offset_m
    return dataclasses.replace(traj, qpos=qpos, site_pos_m=sites, terrain=terrain)
