"""The ground as a constraint on a retargeted clip, and its measurement with MuJoCo C.

Three rules, all against a :class:`musclerl.motion.Terrain` (world metres, Z up):

* **stance feet held still** — every sole point in stance is pinned to one anchor for its whole
  stance phase: the median of its unconstrained horizontal positions over the phase, at the
  ground height there. Pinned points cannot slide, so the foot does not skate;
* **no geom below the surface** — the lowest point of every collision geom stays at or above the
  ground under it;
* **swing feet above the surface** — a sole point in swing keeps ``swing_clearance_m`` above the
  ground.

:class:`GroundContact` turns the rules into per-frame position targets for sole sites (NaN where
a rule does not bind), which the IK pass adds at a high weight: anchors for stance points, and
for any point or geom found below the surface a target straight above it on the surface (an
active set grown pass by pass until nothing penetrates). :func:`penetration_m` and
:func:`skating_mps` measure the result on the final ``qpos`` with ``mj_kinematics``.

Geometry: :class:`GeomSurface` holds sample points on each collision geom's surface (analytic
shapes and mesh vertices) in the geom frame; the lowest sample per frame stands for the geom's
lowest point (to a millimetre with the default sampling).
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.ground.contact import stance_phases
from musclerl.motion.trajectory import Terrain


def _sphere_directions(n: int) -> np.ndarray:
    """Fibonacci-sphere unit vectors (n, 3)."""
    i = np.arange(n) + 0.5
    phi = np.arccos(1 - 2 * i / n)
    theta = np.pi * (1 + 5**0.5) * i
    return np.column_stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)])


def geom_surface_samples(model: mujoco.MjModel, geom: int, n: int = 400) -> np.ndarray:
    """Points (N, 3) on the surface of geom ``geom``, in the geom's frame (metres)."""
    gtype = int(model.geom_type[geom])
    size = np.array(model.geom_size[geom])
    dirs = _sphere_directions(n)
    g = mujoco.mjtGeom
    if gtype == g.mjGEOM_SPHERE:
        return dirs * size[0]
    if gtype == g.mjGEOM_ELLIPSOID:
        return dirs * size
    if gtype in (g.mjGEOM_CAPSULE, g.mjGEOM_CYLINDER):
        r, h = size[0], size[1]
        ring = np.linspace(0, 2 * np.pi, 24, endpoint=False)
        z = np.linspace(-h, h, max(n // 24, 2))
        side = np.stack(np.meshgrid(ring, z), axis=-1).reshape(-1, 2)
        pts = np.column_stack([r * np.cos(side[:, 0]), r * np.sin(side[:, 0]), side[:, 1]])
        if gtype == g.mjGEOM_CAPSULE:
            caps = dirs * r
            caps[:, 2] += np.where(caps[:, 2] >= 0, h, -h)
            return np.concatenate([pts, caps])
        disk = np.stack(np.meshgrid(np.linspace(0, r, 4), ring), axis=-1).reshape(-1, 2)
        ends = [
            np.column_stack(
                [disk[:, 0] * np.cos(disk[:, 1]), disk[:, 0] * np.sin(disk[:, 1]), np.full(len(disk), s * h)]
            )
            for s in (-1, 1)
        ]
        return np.concatenate([pts, *ends])
    if gtype == g.mjGEOM_BOX:
        k = max(int(np.sqrt(n / 6)), 2)
        u = np.linspace(-1, 1, k)
        a, b = (m.ravel() for m in np.meshgrid(u, u))
        faces = []
        for axis in range(3):
            for s in (-1.0, 1.0):
                f = np.zeros((len(a), 3))
                others = [i for i in range(3) if i != axis]
                f[:, axis], f[:, others[0]], f[:, others[1]] = s, a, b
                faces.append(f)
        return np.concatenate(faces) * size
    if gtype == g.mjGEOM_MESH:
        mesh = int(model.geom_dataid[geom])
        start, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        return np.array(model.mesh_vert[start : start + count], dtype=float)
    raise ValueError(f"geom {geom}: type {gtype} has no surface samples (plane/hfield/sdf)")


@dataclasses.dataclass(frozen=True)
class GeomSurface:
    """Surface samples of a set of geoms. ``local_m`` (N, 3) in geom frames; ``owner`` (N,) index
    into ``geom_ids`` (G,)."""

    geom_ids: np.ndarray
    local_m: np.ndarray
    owner: np.ndarray

    @classmethod
    def of(cls, model: mujoco.MjModel, geom_ids: np.ndarray, n: int = 400) -> GeomSurface:
        """About ``n`` surface samples per geom of ``geom_ids`` (G,) (see :func:`geom_surface_samples`)."""
        samples = [geom_surface_samples(model, int(g), n) for g in geom_ids]
        if not samples:
            return cls(np.zeros(0, int), np.zeros((0, 3)), np.zeros(0, int))
        owner = np.concatenate([np.full(len(s), i) for i, s in enumerate(samples)])
        local = np.concatenate(samples)
        return cls(np.asarray(geom_ids, dtype=int), local, owner.astype(int))

    def world_points(self, data: mujoco.MjData) -> np.ndarray:
        """Sample positions (N, 3) in the world for the pose in ``data`` (after mj_kinematics)."""
        pos = data.geom_xpos[self.geom_ids][self.owner]
        rot = data.geom_xmat[self.geom_ids].reshape(-1, 3, 3)[self.owner]
        return pos + np.einsum("nij,nj->ni", rot, self.local_m)

    def lowest_points(self, data: mujoco.MjData, terrain: Terrain | None = None) -> np.ndarray:
        """Per geom (G, 3): the sample deepest below ``terrain`` (or lowest in z without one)."""
        pts = self.world_points(data)
        height = pts[:, 2] - (terrain.height_at(pts[:, :2]) if terrain is not None else 0.0)
        out = np.zeros((len(self.geom_ids), 3))
        for i in range(len(self.geom_ids)):
            sel = np.flatnonzero(self.owner == i)
            out[i] = pts[sel[np.argmin(height[sel])]]
        return out

    def depth_m(self, data: mujoco.MjData, terrain: Terrain | None = None) -> np.ndarray:
        """Per geom (G,): how far its deepest sample lies below ``terrain`` (flat z = 0 without
        one), metres, 0 when above. The ground constraint, the marker pipeline's lift and the
        quality report all measure penetration with this."""
        low = self.lowest_points(data, terrain)
        ground = terrain.height_at(low[:, :2]) if terrain is not None else 0.0
        return np.maximum(ground - low[:, 2], 0.0)


@dataclasses.dataclass(frozen=True)
class GroundParams:
    """Tolerances of the ground constraint (metres)."""

    swing_clearance_m: float = 0.0
    penetration_tol_m: float = 0.001


@dataclasses.dataclass(frozen=True)
class GroundContact:
    """Ground rules for a clip of T frames and P sole points.

    ``anchors_m`` (T, P, 3): where each stance point must be (NaN in swing); ``flags`` (T, P)
    stance; ``terrain`` the support surface.
    """

    terrain: Terrain
    flags: np.ndarray
    anchors_m: np.ndarray
    params: GroundParams = GroundParams()

    @classmethod
    def from_motion(
        cls, sole_m: np.ndarray, flags: np.ndarray, terrain: Terrain, params: GroundParams | None = None
    ) -> GroundContact:
        """Anchors from sole point positions ``sole_m`` (T, P, 3) of an unconstrained pass."""
        flags = np.asarray(flags, dtype=bool)
        anchors = np.full(sole_m.shape, np.nan)
        for p in range(sole_m.shape[1]):
            for start, end in stance_phases(flags[:, p]):
                xy = np.median(sole_m[start:end, p, :2], axis=0)
                z = float(terrain.height_at(xy))
                anchors[start:end, p] = [xy[0], xy[1], z]
        return cls(terrain=terrain, flags=flags, anchors_m=anchors, params=params or GroundParams())

    def sole_targets(self, sole_m: np.ndarray) -> np.ndarray:
        """Targets (T, P, 3) for sole points now at ``sole_m`` (T, P, 3): the stance anchors, and
        for swing points below ground + clearance the point lifted onto that level; NaN else."""
        targets = self.anchors_m.copy()
        ground = self.terrain.height_at(sole_m[..., :2]) + self.params.swing_clearance_m
        low = ~self.flags & (sole_m[..., 2] < ground - self.params.penetration_tol_m)
        lifted = sole_m.copy()
        lifted[..., 2] = ground
        targets[low] = lifted[low]
        return targets


def penetration_m(
    model: mujoco.MjModel, qpos: np.ndarray, terrain: Terrain, surface: GeomSurface
) -> np.ndarray:
    """Depth (T, G) of each geom's lowest point below the terrain, metres (0 when above)."""
    data = mujoco.MjData(model)
    out = np.zeros((len(qpos), len(surface.geom_ids)))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[t] = surface.depth_m(data, terrain)
    return out


def site_positions_m(model: mujoco.MjModel, qpos: np.ndarray, site_ids: np.ndarray) -> np.ndarray:
    """World positions (T, S, 3) of sites over poses ``qpos`` (T, nq), by ``mj_kinematics``."""
    return _positions_m(model, qpos, site_ids, "site_xpos")


def geom_positions_m(model: mujoco.MjModel, qpos: np.ndarray, geom_ids: np.ndarray) -> np.ndarray:
    """World positions (T, G, 3) of geom centres over poses ``qpos`` (T, nq), by ``mj_kinematics``."""
    return _positions_m(model, qpos, geom_ids, "geom_xpos")


def _positions_m(model: mujoco.MjModel, qpos: np.ndarray, ids: np.ndarray, field: str) -> np.ndarray:
    data = mujoco.MjData(model)
    out = np.zeros((len(qpos), len(ids), 3))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[t] = getattr(data, field)[ids]
    return out


def skating_mps(sole_m: np.ndarray, flags: np.ndarray, rate_hz: float) -> np.ndarray:
    """Horizontal speed (T, P) of sole points ``sole_m`` (T, P, 3) while in stance (0 in swing).

    Speed between consecutive frames, counted where the point is in stance in both.
    """
    out = np.zeros(flags.shape)
    if len(sole_m) < 2:
        return out
    step = np.linalg.norm(np.diff(sole_m[..., :2], axis=0), axis=-1) * rate_hz
    both = flags[1:] & flags[:-1]
    out[1:] = np.where(both, step, 0.0)
    return out
