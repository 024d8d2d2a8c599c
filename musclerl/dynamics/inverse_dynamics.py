"""Inverse dynamics in MuJoCo with measured ground reaction forces (OpenSim ExternalLoads).

Pipeline (what OpenSim's ID tool does, on a MuJoCo model):

1. coordinates low-pass filtered (zero-phase Butterworth, default 6 Hz like OpenSim's setup);
2. ``qvel``/``qacc`` by central differences on the manifold (``mj_differentiatePos``);
3. ``mj_inverse`` with constraints (contacts, equalities, joint limits) and joint springs/dampers
   disabled, so
   ``qfrc_inverse = M(q) qacc + c(q, qvel)``;
4. each external load (force at its centre of pressure plus free moment, OpenSim ground frame
   converted to MuJoCo's world) is mapped to generalised forces with ``mj_applyFT`` on the body
   the ExternalLoads file names; ``tau = qfrc_inverse - J^T F_ext`` is what the joints must
   produce (a model other than the subject's takes the loads where they acted on the subject's
   bodies, :func:`loads_on_model_bodies`);
5. the dofs of coupled joints are projected onto their independent coordinate by virtual work
   (:func:`musclerl.models.couplings.coupling_matrix`), giving per-coordinate moments in N·m
   (translations in N), in the model's sign convention (positive along the joint axis).

The free root's six dofs carry the residual forces/moments (world linear, body angular), which
OpenSim calls pelvis residuals; they are reported, not hidden.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import read_text
from musclerl.geometry.free_root import free_joints
from musclerl.models.couplings import coupling_matrix
from musclerl.motion.keypoints import Y_UP_TO_Z_UP
from musclerl.motion.trajectory import finite_difference_qvel


@dataclasses.dataclass(frozen=True)
class ExternalForce:
    """One ``<ExternalForce>`` of an OpenSim ExternalLoads file."""

    name: str
    body: str
    force_identifier: str
    point_identifier: str
    torque_identifier: str
    force_expressed_in: str = "ground"
    point_expressed_in: str = "ground"


def read_external_loads(path: str | os.PathLike) -> tuple[list[ExternalForce], str]:
    """Parse an ExternalLoads XML: (enabled forces, ``datafile`` text or '')."""
    text = read_text(path, "ExternalLoads file")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise InputError(path, f"not valid XML ({err})") from err
    loads = root if root.tag == "ExternalLoads" else root.find(".//ExternalLoads")
    if loads is None:
        raise InputError(path, "no <ExternalLoads> element")

    def field(node: ET.Element, tag: str, default: str | None = None) -> str:
        child = node.find(tag)
        if child is None or child.text is None or not child.text.strip():
            if default is None:
                raise InputError(path, f"ExternalForce '{node.get('name')}' lacks <{tag}>")
            return default
        return child.text.strip()

    forces = []
    for node in loads.iter("ExternalForce"):
        if field(node, "isDisabled", "false").lower() == "true":
            continue
        forces.append(
            ExternalForce(
                name=node.get("name", f"force{len(forces)}"),
                body=field(node, "applied_to_body"),
                force_identifier=field(node, "force_identifier"),
                point_identifier=field(node, "point_identifier", ""),
                torque_identifier=field(node, "torque_identifier", ""),
                force_expressed_in=field(node, "force_expressed_in_body", "ground"),
                point_expressed_in=field(node, "point_expressed_in_body", "ground"),
            )
        )
    if not forces:
        raise InputError(path, "no enabled <ExternalForce> entries")
    for f in forces:
        if f.force_expressed_in != "ground" or (f.point_identifier and f.point_expressed_in != "ground"):
            raise InputError(
                path, f"ExternalForce '{f.name}': only forces and points expressed in ground are supported"
            )
    datafile = loads.find("datafile")
    return forces, (datafile.text or "").strip() if datafile is not None else ""


@dataclasses.dataclass(frozen=True)
class AppliedLoads:
    """External loads in MuJoCo's world frame on a motion's timeline; F loads, T frames.

    ``force_n`` (T, F, 3) applied at ``point_m`` (T, F, 3); ``torque_nm`` (T, F, 3) free moments;
    ``body`` (F,) names of the bodies they act on.
    """

    names: tuple[str, ...]
    body: tuple[str, ...]
    force_n: np.ndarray
    point_m: np.ndarray
    torque_nm: np.ndarray


def loads_from_table(
    forces: list[ExternalForce],
    columns: list[str],
    data: np.ndarray,
    time_s: np.ndarray,
    target_time_s: np.ndarray,
    source: str | os.PathLike = "GRF file",
) -> AppliedLoads:
    """Build :class:`AppliedLoads` from a GRF table (OpenSim ground frame, Y up).

    ``data`` (N, C) holds the columns ``<id>x, <id>y, <id>z`` for each identifier; values are
    linearly resampled onto ``target_time_s`` (T,). Frames outside the GRF time range get zero load.
    """
    col = {c: k for k, c in enumerate(columns)}

    def triple(identifier: str) -> np.ndarray:
        names = [f"{identifier}{axis}" for axis in "xyz"]
        missing = [n for n in names if n not in col]
        if missing:
            raise InputError(source, f"missing GRF columns {missing}")
        xyz = data[:, [col[n] for n in names]]
        out = np.stack(
            [np.interp(target_time_s, time_s, xyz[:, i], left=np.nan, right=np.nan) for i in range(3)],
            axis=-1,
        )
        return out @ Y_UP_TO_Z_UP.T

    T = len(target_time_s)
    F = np.zeros((T, len(forces), 3))
    P = np.zeros_like(F)
    M = np.zeros_like(F)
    for i, f in enumerate(forces):
        F[:, i] = triple(f.force_identifier)
        if f.point_identifier:
            P[:, i] = triple(f.point_identifier)
        if f.torque_identifier:
            M[:, i] = triple(f.torque_identifier)
    outside = ~np.isfinite(F).all(axis=-1)
    F[outside] = 0.0
    P[~np.isfinite(P)] = 0.0
    M[~np.isfinite(M)] = 0.0
    return AppliedLoads(tuple(f.name for f in forces), tuple(f.body for f in forces), F, P, M)


def loads_on_model_bodies(
    loads: AppliedLoads,
    model: mujoco.MjModel,
    qpos: np.ndarray,
    subject_poses: dict[str, tuple[np.ndarray, np.ndarray]],
) -> AppliedLoads:
    """The loads moved to where they acted on the subject's bodies: each load's point, expressed
    in the frame of the subject's body it acts on, is put at the same place in that body of
    ``model`` posed by ``qpos`` (T, nq). Force and free moment keep their lab directions.

    ``subject_poses``: body -> (R (T, 3, 3), p (T, 3)) of the subject's own model (the one the
    coordinates were solved on) in MuJoCo's world
    (:func:`musclerl.models.osim_frames.body_poses_along`). Why: a model with other segment
    lengths or hip width, driven by the subject's joint angles, stands its feet elsewhere than the
    plates saw them; at the lab's centre of pressure the load would act beside or below its foot
    (e.g. a longer lever about the subtalar axis). Bodies without a pose keep their lab points."""
    data = mujoco.MjData(model)
    point = loads.point_m.copy()
    for t in range(qpos.shape[0]):
        data.qpos[:] = qpos[t]
        mujoco.mj_kinematics(model, data)
        for i, body in enumerate(loads.body):
            if body not in subject_poses:
                continue
            rotation, origin = subject_poses[body][0][t], subject_poses[body][1][t]
            b = model.body(body).id
            local = rotation.T @ (loads.point_m[t, i] - origin)
            point[t, i] = data.xpos[b] + data.xmat[b].reshape(3, 3) @ local
    return dataclasses.replace(loads, point_m=point)


def lowpass(values: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass of (T, ...) along time; returned unchanged if too short."""
    from scipy import signal

    values = np.asarray(values, dtype=float)
    if cutoff_hz <= 0 or cutoff_hz >= 0.5 * rate_hz or values.shape[0] <= 3 * (order + 1):
        return values
    b, a = signal.butter(order, cutoff_hz / (0.5 * rate_hz))
    return signal.filtfilt(b, a, values, axis=0, padtype="odd", padlen=min(values.shape[0] - 1, 3 * order))


def velocities(model: mujoco.MjModel, qpos: np.ndarray, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Central-difference (qvel (T, nv), qacc (T, nv)) from qpos (T, nq) at times (T,)."""
    T = qpos.shape[0]
    if T < 3:
        raise ValueError("need at least 3 frames for accelerations")
    qvel = finite_difference_qvel(model, qpos, time_s=time_s)
    qacc = np.gradient(qvel, np.asarray(time_s, dtype=float), axis=0)
    return qvel, qacc


@dataclasses.dataclass(frozen=True)
class InverseDynamicsResult:
    """Per-frame inverse dynamics. K coordinates, T frames.

    ``moments`` (T, K): N·m for hinges, N for slides, model sign convention.
    ``qfrc_joint`` (T, nv): generalised forces the joints must produce (before projection).
    ``residual`` (T, 6): the free root's generalised force (N world linear, N·m body angular).
    """

    time_s: np.ndarray
    coordinates: tuple[str, ...]
    moments: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    qacc: np.ndarray
    qfrc_joint: np.ndarray
    residual: np.ndarray


def id_model(model: mujoco.MjModel) -> mujoco.MjModel:
    """Copy of ``model`` with all constraints (contacts, equalities, limits) and joint springs/dampers off."""
    out = copy.copy(model)
    flags = mujoco.mjtDisableBit
    out.opt.disableflags |= int(flags.mjDSBL_CONSTRAINT)
    out.opt.disableflags |= int(flags.mjDSBL_SPRING) | int(flags.mjDSBL_DAMPER)
    return out


def external_qfrc(model: mujoco.MjModel, data: mujoco.MjData, loads: AppliedLoads, t: int) -> np.ndarray:
    """Generalised force (nv,) of all external loads at frame ``t``.

    ``data`` must hold the frame's position-stage quantities (``mj_fwdPosition`` or ``mj_inverse``
    ran): ``mj_applyFT`` uses ``cdof``/``subtree_com`` and silently gives zeros otherwise.
    """
    qfrc = np.zeros(model.nv)
    for i, body in enumerate(loads.body):
        b = model.body(body).id
        mujoco.mj_applyFT(
            model, data, loads.force_n[t, i], loads.torque_nm[t, i], loads.point_m[t, i], b, qfrc
        )
    return qfrc


def inverse_dynamics(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    time_s: np.ndarray,
    coordinates: list[str],
    loads: AppliedLoads | None = None,
    qvel: np.ndarray | None = None,
    qacc: np.ndarray | None = None,
) -> InverseDynamicsResult:
    """Joint moments (T, K) for ``coordinates`` along the motion ``qpos`` (T, nq).

    ``qvel``/``qacc`` default to central differences of ``qpos``. Bodies named by ``loads`` must
    exist in the model (:class:`InputError` otherwise).
    """
    if loads is not None:
        for body in loads.body:
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) < 0:
                raise InputError("external loads", f"body '{body}' is not in the model")
    if qvel is None or qacc is None:
        qvel, qacc = velocities(model, qpos, time_s)
    m = id_model(model)
    d = mujoco.MjData(m)
    T = qpos.shape[0]
    qfrc = np.zeros((T, model.nv))
    moments = np.zeros((T, len(coordinates)))
    root_dofs = [int(model.jnt_dofadr[j]) for j in free_joints(model)]
    for t in range(T):
        d.qpos[:], d.qvel[:], d.qacc[:] = qpos[t], qvel[t], qacc[t]
        mujoco.mj_inverse(m, d)
        tau = d.qfrc_inverse.copy()
        if loads is not None:
            tau -= external_qfrc(m, d, loads, t)
        qfrc[t] = tau
        moments[t] = coupling_matrix(model, qpos[t], coordinates) @ tau
    residual = qfrc[:, root_dofs[0] : root_dofs[0] + 6] if root_dofs else np.zeros((T, 0))
    return InverseDynamicsResult(
        np.asarray(time_s, float), tuple(coordinates), moments, qpos, qvel, qacc, qfrc, residual
    )
