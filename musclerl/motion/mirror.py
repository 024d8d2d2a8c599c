"""Left/right mirroring of motions through the model's sagittal symmetry.

Frames: the mirror plane of the world is its x–z plane (world y -> -y: motions walk along x, y is
lateral). The model's own lateral axis ``b`` is read from the model: the axis of the root body's
frame along which the ``*_r`` and ``*_l`` bodies differ most at ``qpos0`` (myolegs, whose root
faces -y at identity: its x axis). ``M_w`` and ``M_b`` are the reflections that negate those axes.

A pose mirrors as

- free root: position ``M_w p``; orientation ``R' = M_w R M_b`` (a proper rotation: two
  reflections); linear velocity (world) ``M_w v``; angular velocity (root frame, a pseudovector)
  ``-M_b w``;
- scalar joints: ``<name>_r`` and ``<name>_l`` swap values, times a sign ``s``; a joint without a
  side keeps its place with its own sign. ``s`` follows from the joint axes at ``qpos0`` (root at
  identity, so root frame = world): a rotation by ``q`` about axis ``a`` mirrors to a rotation by
  ``q`` about ``-M_b a``, a translation along ``a`` to one along ``M_b a``; ``s`` is the sign that
  maps the partner's axis onto that (Rajagopal/myolegs mirror their left axes, so most bilateral
  pairs swap with ``s = +1``, and lateral bending/rotation of a midline joint flips).

Muscles (actuators) pair by the same ``_r``/``_l`` names (:attr:`MirrorMap.actuator_perm`: the
muscle lengths of a mirrored pose are the original's, swapped); a Trajectory's named sites and
contacts swap by name. A model whose joint pairs are not mirror images (axes more than 1e-3 off)
is an InputError.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.free_root import free_joints, free_root
from musclerl.geometry.rotations import matrix_to_quat_wxyz, quat_wxyz_to_matrix
from musclerl.motion.trajectory import Trajectory

SIDES = (("_r", "_l"), ("_l", "_r"))
WORLD_LATERAL_AXIS = 1  # world y
AXIS_TOLERANCE = 1e-3


def partner(name: str) -> str:
    """``x_r`` <-> ``x_l``; a name without a side suffix is its own partner."""
    for a, b in SIDES:
        if name.endswith(a):
            return name[: -len(a)] + b
    return name


def _permutation(names: list[str], what: str, source: str) -> np.ndarray:
    index = {n: k for k, n in enumerate(names)}
    perm = np.arange(len(names))
    for k, n in enumerate(names):
        other = partner(n)
        if other not in index:
            raise InputError(source, f"{what} '{n}' has no mirror partner '{other}'")
        perm[k] = index[other]
    return perm


@dataclasses.dataclass(frozen=True)
class MirrorMap:
    """Index maps of a model's mirror image: ``qpos'[:, k] = sign[k] * qpos[:, perm[k]]`` for the
    scalar joints (the free root is handled separately), and the same for dofs; the actuator
    (muscle) permutation; the root frame's lateral axis."""

    root_qpos: int  # address of the free joint's 7 qpos
    root_dof: int  # address of its 6 dofs
    qpos_perm: np.ndarray  # (nq,)
    qpos_sign: np.ndarray  # (nq,)
    dof_perm: np.ndarray  # (nv,)
    dof_sign: np.ndarray  # (nv,)
    actuator_perm: np.ndarray  # (nu,)
    body_lateral_axis: int  # axis of the root frame that is lateral at qpos0

    def reflection(self, axis: int) -> np.ndarray:
        m = np.eye(3)
        m[axis, axis] = -1.0
        return m


def mirror_map(model: mujoco.MjModel, source: str = "model") -> MirrorMap:
    """The mirror map of ``model`` (see the module docstring); InputError if it is not symmetric."""
    if len(free_joints(model)) != 1:
        raise InputError(source, "mirroring needs exactly one free root joint")
    root = free_root(model)
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    mujoco.mj_kinematics(model, data)
    root_body = int(model.jnt_bodyid[root])
    bodies = [model.body(b).name for b in range(model.nbody)]
    pairs = [
        (b, bodies.index(partner(n)))
        for b, n in enumerate(bodies)
        if n.endswith("_r") and partner(n) in bodies
    ]
    if not pairs:
        raise InputError(source, "no body pair named *_r / *_l: cannot find the sagittal plane")
    R_root = data.xmat[root_body].reshape(3, 3)
    spread = np.array([R_root.T @ (data.xpos[r] - data.xpos[l]) for r, l in pairs])
    lateral = int(np.argmax(np.abs(spread).sum(axis=0)))
    M_b = np.eye(3)
    M_b[lateral, lateral] = -1.0
    # joint axes in the root frame at qpos0
    names = [model.joint(j).name for j in range(model.njnt)]
    qpos_perm, qpos_sign = np.arange(model.nq), np.ones(model.nq)
    dof_perm, dof_sign = np.arange(model.nv), np.ones(model.nv)
    scalar = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    for j in range(model.njnt):
        if j == root:
            continue
        if int(model.jnt_type[j]) not in scalar:
            raise InputError(
                source, f"joint '{names[j]}' is a ball joint: mirroring handles hinges and slides"
            )
        other = partner(names[j])
        if other not in names:
            raise InputError(source, f"joint '{names[j]}' has no mirror partner '{other}'")
        k = names.index(other)
        if int(model.jnt_type[k]) != int(model.jnt_type[j]):
            raise InputError(source, f"joints '{names[j]}' and '{other}' are of different types")
        a_j = R_root.T @ data.xaxis[j]
        a_k = R_root.T @ data.xaxis[k]
        hinge = int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
        image = -M_b @ a_k if hinge else M_b @ a_k  # the partner's motion, mirrored
        dot = float(a_j @ image)
        if abs(abs(dot) - 1.0) > AXIS_TOLERANCE:
            raise InputError(
                source, f"joints '{names[j]}' and '{other}' are not mirror images (axis dot {dot:.4f})"
            )
        sign = 1.0 if dot > 0 else -1.0
        qpos_perm[model.jnt_qposadr[j]] = model.jnt_qposadr[k]
        qpos_sign[model.jnt_qposadr[j]] = sign
        dof_perm[model.jnt_dofadr[j]] = model.jnt_dofadr[k]
        dof_sign[model.jnt_dofadr[j]] = sign
    actuators = [model.actuator(a).name for a in range(model.nu)]
    return MirrorMap(
        root_qpos=int(model.jnt_qposadr[root]),
        root_dof=int(model.jnt_dofadr[root]),
        qpos_perm=qpos_perm,
        qpos_sign=qpos_sign,
        dof_perm=dof_perm,
        dof_sign=dof_sign,
        actuator_perm=_permutation(actuators, "actuator", source),
        body_lateral_axis=lateral,
    )


def mirror_qpos_qvel(qpos: np.ndarray, qvel: np.ndarray, mm: MirrorMap) -> tuple[np.ndarray, np.ndarray]:
    """Mirrored copies of ``qpos`` (T, nq) and ``qvel`` (T, nv) (see the module docstring)."""
    q = qpos[:, mm.qpos_perm] * mm.qpos_sign
    v = qvel[:, mm.dof_perm] * mm.dof_sign
    M_w = mm.reflection(WORLD_LATERAL_AXIS)
    M_b = mm.reflection(mm.body_lateral_axis)
    a, d = mm.root_qpos, mm.root_dof
    q[:, a : a + 3] = qpos[:, a : a + 3] @ M_w
    R = M_w @ quat_wxyz_to_matrix(qpos[:, a + 3 : a + 7]) @ M_b
    q[:, a + 3 : a + 7] = matrix_to_quat_wxyz(R)
    v[:, d : d + 3] = qvel[:, d : d + 3] @ M_w
    v[:, d + 3 : d + 6] = -qvel[:, d + 3 : d + 6] @ M_b
    return q, v


def mirror_trajectory(traj: Trajectory, mm: MirrorMap) -> Trajectory:
    """The left/right mirror of every clip of ``traj``; sites (when named in the model's pairs)
    and contacts swap sides and reflect; terrain is reflected about the world x–z plane."""
    qpos, qvel = mirror_qpos_qvel(traj.qpos, traj.qvel, mm)
    M_w = mm.reflection(WORLD_LATERAL_AXIS)
    site_pos = None
    if traj.site_pos_m is not None:
        index = {n: k for k, n in enumerate(traj.site_names)}
        perm = [index.get(partner(n), k) for k, n in enumerate(traj.site_names)]
        site_pos = traj.site_pos_m[:, perm] @ M_w
    contact = None
    if traj.contact is not None:
        index = {n: k for k, n in enumerate(traj.contact_names)}
        contact = traj.contact[:, [index.get(partner(n), k) for k, n in enumerate(traj.contact_names)]]
    terrain = traj.terrain
    if terrain is not None:
        rows = terrain.height_m.shape[0]
        origin_y = -(terrain.origin_m[1] + (rows - 1) * terrain.cell_m)
        terrain = dataclasses.replace(
            terrain,
            height_m=terrain.height_m[::-1].copy(),
            origin_m=np.array([terrain.origin_m[0], origin_y]),
        )
    return dataclasses.replace(
        traj, qpos=qpos, qvel=qvel, site_pos_m=site_pos, contact=contact, terrain=terrain
    )
