"""Clips on different grounds in one dataset: every terrain a tile of one heightfield.

All environments of a run share one compiled model (``musclerl.envs.world``: one ``hfield``
geom over a floor plane), and every environment is its own simulation of it. So a dataset whose
clips stand on different grounds (flat, slopes, steps recovered by retargeting) gets one
heightfield holding each distinct terrain as a tile, and every clip is moved by its tile's
offset (root x, y, z of every frame, and recorded sites): an environment on clip c then walks on
clip c's ground. Observations, rewards and terminations need nothing else: they read heights
through the one terrain (``musclerl.geometry.arrays.ground_height``) and positions relative to the
root or to the (moved) reference, never absolute x, y.

Layout, in the dataset's world frame (metres, z up):

- flat clips stay where they are, on the floor plane at z = 0 (plane contacts cost less than
  heightfield ones); the grid starts :data:`TILE_MARGIN_M` beyond their largest root y with a
  row of zeros, so the heights read under them (clamped to that row) are 0 too;
- a tile covers its terrain's grid and the ground-plane box its clips' roots pass through,
  widened by :data:`TILE_MARGIN_M`; inside it the heights are the terrain's own
  (``Terrain.height_at``, which continues the edge heights outside the grid, as a single-terrain
  run sees them); tiles follow one another along +y, :data:`TILE_GAP_M` apart, with heights
  ramping linearly across each gap; without flat clips the first terrain stays where it is;
- with flat clips, a tile reaching below 0 is lifted (its clips with it) so that no tile goes
  under the floor plane;
- all tiles share the columns (the union of their x ranges) and the cell (the finest of the
  terrains); offsets are whole cells from the grid's anchor, so a terrain whose cell is the
  shared one, or a whole multiple of it, keeps its exact bilinear surface; another one is
  sampled bilinearly (as ``height_at`` reads it) at the shared cell.

Clips whose grounds are identical (same heights, origin and cell) share a tile; a dataset with a
single ground is returned unchanged. A looping clip that walks beyond its tile's x range meets
the floor plane there while the height observations read the grid's end columns, as on a single
terrain.
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
    offset_m: np.ndarray  # (len(trajectories), 3) move of each (x, y, z), m


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
    the root must be the first joint (x, y, z in ``qpos[:, 0:3]``), as the environments require."""
    grounds: list[Terrain | None] = []
    group = []
    for t in trajs:
        k = next((i for i, g in enumerate(grounds) if same_ground(g, t.terrain)), None)
        if k is None:
            grounds.append(t.terrain)
            k = len(grounds) - 1
        group.append(k)
    if len(grounds) == 1:
        return TiledGrounds(list(trajs), trajs[0].terrain, np.zeros((len(trajs), 3)))
    group = np.asarray(group)
    tiles = [k for k, g in enumerate(grounds) if g is not None]
    cell = min(grounds[k].cell_m for k in tiles)
    lo, hi = {}, {}  # (2,) each: tile corners in the ground's own frame, on its grid
    for k in tiles:
        ground = grounds[k]
        roots = np.concatenate([trajs[i].qpos[:, :2] for i in np.flatnonzero(group == k)])
        anchor = np.asarray(ground.origin_m, dtype=float)
        box_lo = np.minimum(roots.min(axis=0) - TILE_MARGIN_M, anchor)
        box_hi = np.maximum(roots.max(axis=0) + TILE_MARGIN_M, anchor + np.asarray(ground.size_m))
        lo[k] = anchor + np.floor((box_lo - anchor) / cell - 1e-9) * cell
        hi[k] = anchor + np.ceil((box_hi - anchor) / cell + 1e-9) * cell
    gap_rows = max(1, math.ceil(TILE_GAP_M / cell))
    flat = [i for i in range(len(trajs)) if grounds[group[i]] is None]
    # row 0 of the grid: the first tile's own first row, or a row of zeros beyond the flat clips
    y0 = lo[tiles[0]][1]
    next_row = 0
    if flat:
        y0 = max(float(trajs[i].qpos[:, 1].max()) for i in flat) + TILE_MARGIN_M
        next_row = gap_rows
    offsets = np.zeros((len(grounds), 3))
    for k in tiles:  # x: the whole cells nearest to no move; y: above the previous tile and the gap
        offsets[k, 0] = lo[tiles[0]][0] + np.round((lo[k][0] - lo[tiles[0]][0]) / cell) * cell - lo[k][0]
        offsets[k, 1] = y0 + next_row * cell - lo[k][1]
        next_row += _cells(lo[k][1], hi[k][1], cell) + gap_rows
    x0 = min(lo[k][0] + offsets[k, 0] for k in tiles)
    x1 = max(hi[k][0] + offsets[k, 0] for k in tiles)
    xs = x0 + np.arange(_cells(x0, x1, cell) + 1) * cell
    blocks = [np.zeros((1, len(xs)))] if flat else []
    for k in tiles:
        ys = lo[k][1] + np.arange(_cells(lo[k][1], hi[k][1], cell) + 1) * cell  # the ground's frame
        tile = grounds[k].height_at(np.stack(np.meshgrid(xs - offsets[k, 0], ys, indexing="xy"), axis=-1))
        if flat:  # lifted to 0 or above: the floor plane under the flat clips lies at 0
            offsets[k, 2] = max(0.0, -float(tile.min()))
            tile = tile + offsets[k, 2]
        if blocks:
            ramp = np.linspace(0.0, 1.0, gap_rows + 1)[1:-1, None]
            blocks.append(blocks[-1][-1] * (1 - ramp) + tile[0] * ramp)
        blocks.append(tile)
    terrain = Terrain(np.concatenate(blocks), np.array([x0, y0]), float(cell))
    moved = [_moved(t, offsets[g], terrain) for t, g in zip(trajs, group, strict=True)]
    return TiledGrounds(moved, terrain, offsets[group])


def _cells(a: float, b: float, cell: float) -> int:
    """Whole cells from ``a`` to ``b`` (both on one grid of ``cell``)."""
    return int(round((b - a) / cell))


def _moved(traj: Trajectory, offset_m: np.ndarray, terrain: Terrain) -> Trajectory:
    """``traj`` moved by ``offset_m`` (3,), standing on ``terrain``."""
    qpos = np.array(traj.qpos, dtype=float)
    qpos[:, :3] += offset_m
    sites = None
    if traj.site_pos_m is not None:
        sites = np.array(traj.site_pos_m, dtype=float)
        sites += offset_m
    return dataclasses.replace(traj, qpos=qpos, site_pos_m=sites, terrain=terrain)
