"""The simulated world: model + tracked sites + the motion's terrain, compiled once per env.

``build_world`` edits the model's ``MjSpec``:

- tracked sites: the config's ``sites`` if given, else one site ``track_<body>`` at the origin of
  every body that has a joint (the root included);
- terrain: a Trajectory that carries a heightfield gets it as an ``hfield`` geom covering the same
  grid, and the model's floor planes are lowered to the lowest terrain point (outside the grid);
  a level one (within ``LEVEL_SPAN_M``, the marker pipeline's lab floor) is the floor itself: the
  planes are put at its height and no heightfield is added, whose surface would coincide with
  them (every foot contact counted twice, a stiffer ground, and the two flickering in a video);
  a dataset whose clips stand on different grounds brings them as tiles of one heightfield, each
  clip moved onto its own tile (``musclerl.motion.ground_tiles``), so one model serves every env;
- foot bodies for the contact observation: the config's, else the bodies with collision geoms
  whose origin lies within 0.15 m of the lowest such body in the model's default pose; the
  collision geoms of every other moving body end an episode when they reach the ground;
- what the environment never reads is dropped: sensors, and sites that are neither tracked nor
  on a tendon's path nor referenced by an actuator or equality constraint. MuJoCo computes every
  site's pose and every sensor at every physics step (a touch sensor adds an acceleration pass),
  and the dynamics do not depend on them, so the simulation is unchanged, only cheaper.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.free_root import free_root
from musclerl.models.geoms import body_collision_geoms
from musclerl.models.registry import compile_spec, load_spec
from musclerl.motion.trajectory import Terrain

TRACK_SITE_PREFIX = "track_"
FOOT_SEARCH_BAND_M = 0.15
LEVEL_SPAN_M = 1e-3  # a terrain whose heights span no more than this is a level floor (a plane)


@dataclasses.dataclass(frozen=True)
class World:
    """Compiled model and the ids the environment reads every step."""

    model: mujoco.MjModel
    site_ids: np.ndarray  # (S,) tracked site ids
    site_names: tuple[str, ...]
    site_body_root: np.ndarray  # (S,) id of the root body of each site's body (for cvel/subtree_com)
    site_body: np.ndarray  # (S,) body id of each tracked site
    foot_body_ids: np.ndarray  # (F,)
    foot_rest_height_m: np.ndarray  # (F,) foot body origin height above the floor, default pose
    nonfoot_geom_ids: np.ndarray  # (G,) collision geoms of moving non-foot bodies (fall detection)
    muscle_ids: np.ndarray  # (nu,) actuators (all of them: actions are excitations of every actuator)
    peak_force_n: np.ndarray  # (nu,) peak isometric force, for the normalised force observation
    root_qpos_adr: int  # qpos address of the free root joint
    root_body: int
    terrain: Terrain | None


def build_world(
    model_name: str,
    sites: list[str],
    foot_bodies: list[str],
    terrain: Terrain | None,
    integrator: str = "model",
    timestep_s: float = 0.0,
) -> World:
    """Compile ``model_name`` for tracking: tracked sites, foot bodies, optional terrain heightfield.

    ``sites`` empty: one site ``track_<body>`` is added at the origin of every body with a joint.
    ``foot_bodies`` empty: the colliding bodies lowest in the default pose. ``integrator``:
    ``"model"`` keeps the model's own, else ``"euler"`` or ``"implicitfast"``; ``timestep_s`` > 0
    replaces the model's physics timestep. A model without a
    free root joint, with ball joints or without actuators raises :class:`InputError`.
    """
    spec = load_spec(model_name)
    model0 = compile_spec(spec, model_name)
    if free_root(model0) != 0:
        raise InputError(model_name, "tracking needs a model whose first joint is a free root joint")
    if np.any(model0.jnt_type == mujoco.mjtJoint.mjJNT_BALL):
        raise InputError(model_name, "ball joints are not supported by the tracking env yet")
    if model0.nu == 0:
        raise InputError(model_name, "model has no actuators (muscles) to drive")

    site_names = list(sites)
    if not site_names:
        jointed = sorted(set(int(b) for b in model0.jnt_bodyid))
        for b in jointed:
            name = TRACK_SITE_PREFIX + model0.body(b).name.replace(" ", "_")
            spec.body(model0.body(b).name).add_site(name=name, pos=[0, 0, 0], group=5)
            site_names.append(name)
    _drop_unread(spec, model0, set(site_names))
    if terrain is not None:
        _add_terrain(spec, terrain)
    if integrator != "model":
        spec.option.integrator = {
            "euler": mujoco.mjtIntegrator.mjINT_EULER,
            "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
        }[integrator]
    if timestep_s > 0:
        spec.option.timestep = timestep_s
    model = compile_spec(spec, model_name)

    site_ids = []
    for name in site_names:
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
        if sid < 0:
            raise InputError(model_name, f"tracked site '{name}' is not in the model")
        site_ids.append(sid)
    site_ids_arr = np.asarray(site_ids, dtype=int)
    site_body = model.site_bodyid[site_ids_arr].astype(int)

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    foot_ids = _foot_bodies(model, data, foot_bodies, model_name)
    floor_z = 0.0 if terrain is None else float(terrain.height_at(data.xpos[foot_ids, :2]).mean())
    rest = data.xpos[foot_ids, 2] - floor_z

    moving = body_collision_geoms(model)
    nonfoot = moving[~np.isin(model.geom_bodyid[moving], foot_ids)]

    peak = model.actuator_gainprm[:, 2].copy()
    peak = np.where(peak > 0, peak, np.maximum(-model.actuator_forcerange[:, 0], 1.0))
    return World(
        model=model,
        site_ids=site_ids_arr,
        site_names=tuple(site_names),
        site_body_root=model.body_rootid[site_body].astype(int),
        site_body=site_body,
        foot_body_ids=foot_ids,
        foot_rest_height_m=rest,
        nonfoot_geom_ids=nonfoot.astype(int),
        muscle_ids=np.arange(model.nu),
        peak_force_n=peak,
        root_qpos_adr=int(model.jnt_qposadr[0]),
        root_body=int(model.jnt_bodyid[0]),
        terrain=terrain,
    )


def _foot_bodies(model: mujoco.MjModel, data: mujoco.MjData, names: list[str], source: str) -> np.ndarray:
    if names:
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in names]
        missing = [n for n, i in zip(names, ids, strict=False) if i < 0]
        if missing:
            raise InputError(source, f"foot bodies {missing} are not in the model")
        return np.asarray(ids, dtype=int)
    colliding = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    bodies = sorted(set(int(b) for b in model.geom_bodyid[colliding]) - {0})
    if not bodies:
        raise InputError(source, "no body with collision geoms: set foot_bodies in the env config")
    z = data.xpos[bodies, 2]
    return np.asarray(
        [b for b, h in zip(bodies, z, strict=False) if h <= z.min() + FOOT_SEARCH_BAND_M], dtype=int
    )


def _drop_unread(spec: mujoco.MjSpec, model: mujoco.MjModel, keep: set[str]) -> None:
    """Delete ``spec``'s sensors and the named sites of ``model`` that the physics does not need:
    kept are ``keep`` (tracked sites), tendon path sites and side sites, actuator transmission
    sites and sites of equality constraints."""
    needed = set(keep)
    site = mujoco.mjtObj.mjOBJ_SITE
    for w in range(model.nwrap):
        kind = int(model.wrap_type[w])
        if kind == int(mujoco.mjtWrap.mjWRAP_SITE):
            needed.add(model.site(int(model.wrap_objid[w])).name)
        elif kind in (int(mujoco.mjtWrap.mjWRAP_SPHERE), int(mujoco.mjtWrap.mjWRAP_CYLINDER)):
            if model.wrap_prm[w] >= 0:  # the side site
                needed.add(model.site(int(model.wrap_prm[w])).name)
    for a in range(model.nu):
        if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_SITE):
            needed.update(model.site(int(i)).name for i in model.actuator_trnid[a] if i >= 0)
    for e in range(model.neq):
        if int(model.eq_objtype[e]) == int(site):
            needed.update(model.site(int(i)).name for i in (model.eq_obj1id[e], model.eq_obj2id[e]))
    for element in list(spec.sensors):
        spec.delete(element)
    for element in list(spec.sites):
        if element.name and element.name not in needed:
            spec.delete(element)


def _add_terrain(spec: mujoco.MjSpec, terrain: Terrain) -> None:
    """Heightfield geom over the terrain grid; floor planes moved down to its lowest point (to
    its height, and no heightfield, when it is level)."""
    h = np.asarray(terrain.height_m, dtype=float)
    low, high = float(h.min()), float(h.max())
    level = high - low <= LEVEL_SPAN_M
    for geom in spec.worldbody.geoms:
        if geom.type == mujoco.mjtGeom.mjGEOM_PLANE:
            geom.pos = [geom.pos[0], geom.pos[1], 0.5 * (low + high) if level else low]
    if level:
        return
    elevation = max(high - low, 1e-4)
    rows, cols = h.shape
    size_x, size_y = terrain.size_m
    # MuJoCo's hfield: row r at y = -ry + 2 ry r/(nrow-1), column c at x likewise; values in [0, 1]
    # times the elevation, on top of the geom's z.
    spec.add_hfield(
        name="terrain",
        size=[size_x / 2, size_y / 2, elevation, 0.1],
        nrow=rows,
        ncol=cols,
        userdata=((h - low) / elevation).astype(np.float32).ravel().tolist(),
    )
    spec.worldbody.add_geom(
        name="terrain",
        type=mujoco.mjtGeom.mjGEOM_HFIELD,
        hfieldname="terrain",
        pos=[terrain.origin_m[0] + size_x / 2, terrain.origin_m[1] + size_y / 2, low],
        contype=1,
        conaffinity=1,
        condim=3,
        rgba=[0.45, 0.5, 0.45, 1],
    )
