"""Marker fitting on MuJoCo C: one pose at a time (static calibration and marker placement).

:class:`PoseFit` solves, for one frame, OpenSim's IK objective

    min_q  sum_i w_i |x_i(q) - t_i|^2  +  sum_c w_c (q_c - v_c)^2  +  w_post |q - q_ref|^2

over the model's *independent* coordinates with Levenberg–Marquardt (a step is accepted and the
damping shrunk when the cost falls, rejected and the damping grown when it rises). Joints driven
by joint-equality polynomials (the knee's coupled translations and rotations, the patella) are
not free: they are computed from their driver after every step, so the equalities hold to
rounding, and their effect enters the Jacobian through the chain rule. Limited joints are clamped
into their ranges after every step (a projected method: no solution leaves the ranges).

``x_i`` are site positions (the markers added by :mod:`musclerl.models.markers`), ``t_i`` targets
in the world frame (metres, Z up); NaN targets are ignored. The free root is placed first by a
rigid (Kabsch) fit, :func:`musclerl.retarget.ik.problem.align_root`, so the first solve starts close.

:func:`place_markers` is OpenSim's MarkerPlacer: after the static pose is fitted, every marker
not flagged ``fixed`` moves to its measured position, expressed in its body's frame.
:func:`trial_marker_locations` does the same from a whole solved trial (mean body-frame
position), for markers on a segment whose posture in the trial differs from the static one.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.models.couplings import couplings
from musclerl.models.markers import MarkerSet

ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


@dataclasses.dataclass(frozen=True)
class FitResult:
    """One frame: ``qpos`` (nq,), weighted marker RMS ``residual_m``, ``converged``, ``iterations``."""

    qpos: np.ndarray
    residual_m: float
    converged: bool
    iterations: int


class PoseFit:
    """Weighted marker + coordinate least squares for one frame on a compiled model.

    ``sites`` (M,) names the marker sites, ``weights`` (M,) their weights; ``coordinate_targets``
    maps joint name -> (value in qpos units or None for qpos0, weight); ``posture_weight`` pulls
    every independent hinge/slide coordinate weakly towards ``qpos0`` (conditioning only);
    ``locked_dofs`` are dof indices kept at their initial values.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        sites: list[str],
        weights: np.ndarray,
        coordinate_targets: dict[str, tuple[float | None, float]] | None = None,
        posture_weight: float = 1e-8,
        max_iterations: int = 100,
        tolerance: float = 1e-7,
        locked_dofs: tuple[int, ...] = (),
    ):
        self.model = model
        self.data = mujoco.MjData(model)
        self.site_ids = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in sites])
        if np.any(self.site_ids < 0):
            missing = [s for s, i in zip(sites, self.site_ids, strict=True) if i < 0]
            raise InputError("model", f"no site for markers {missing}")
        self.weights = np.asarray(weights, dtype=float)
        self.couplings = couplings(model)
        dependent = {c.y_dof for c in self.couplings}
        self.free_dofs = np.array(
            [d for d in range(model.nv) if d not in dependent and d not in locked_dofs], dtype=int
        )
        self.coord_rows = []  # (qpos adr, dof, target, sqrt weight)
        for name, (value, weight) in (coordinate_targets or {}).items():
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if j < 0 or int(model.jnt_type[j]) not in ONE_DOF:
                continue
            adr = int(model.jnt_qposadr[j])
            target = float(model.qpos0[adr]) if value is None else float(value)
            self.coord_rows.append((adr, int(model.jnt_dofadr[j]), target, np.sqrt(weight)))
        self.posture = []  # (qpos adr, dof) of independent 1-dof joints
        for j in range(model.njnt):
            if int(model.jnt_type[j]) in ONE_DOF:
                if int(model.jnt_dofadr[j]) not in dependent:
                    self.posture.append((int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])))
        self.posture_sqrt_w = np.sqrt(posture_weight)
        self.limited = [
            (int(model.jnt_qposadr[j]), model.jnt_range[j].copy())
            for j in range(model.njnt)
            if model.jnt_limited[j] and int(model.jnt_type[j]) in ONE_DOF
        ]
        self.max_iterations = max_iterations
        self.tolerance = tolerance

    # ------------------------------------------------------------------ pieces
    def site_positions(self, qpos: np.ndarray) -> np.ndarray:
        """World positions (M, 3) of the marker sites at ``qpos``."""
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        return np.array(self.data.site_xpos[self.site_ids])

    def _project(self, qpos: np.ndarray) -> np.ndarray:
        for adr, (lo, hi) in self.limited:
            qpos[adr] = min(max(qpos[adr], lo), hi)
        for c in self.couplings:
            qpos[c.y_qpos] = c.value(qpos[c.x_qpos])
        return qpos

    def _residual(self, qpos: np.ndarray, targets: np.ndarray, sqrt_w: np.ndarray) -> np.ndarray:
        x = self.site_positions(qpos)
        err = np.where(np.isnan(targets), 0.0, x - np.nan_to_num(targets)) * sqrt_w[:, None]
        coords = [w * (qpos[adr] - t) for adr, _, t, w in self.coord_rows]
        post = [self.posture_sqrt_w * (qpos[adr] - self.model.qpos0[adr]) for adr, _ in self.posture]
        return np.concatenate([err.reshape(-1), coords, post])

    def _jacobian(self, qpos: np.ndarray, sqrt_w: np.ndarray) -> np.ndarray:
        """Residual Jacobian over the independent dofs, (3M + C + P, n_free)."""
        model, data = self.model, self.data
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        m = len(self.site_ids)
        jac = np.zeros((3 * m, model.nv))
        jacp = np.zeros((3, model.nv))
        for i, site in enumerate(self.site_ids):
            if sqrt_w[i] == 0:
                continue
            mujoco.mj_jacSite(model, data, jacp, None, int(site))
            jac[3 * i : 3 * i + 3] = jacp * sqrt_w[i]
        for c in self.couplings:  # chain rule through the equality polynomials
            jac[:, c.x_dof] += c.slope(qpos[c.x_qpos]) * jac[:, c.y_dof]
        rows = [jac]
        extra = np.zeros((len(self.coord_rows) + len(self.posture), model.nv))
        for r, (_, dof, _, w) in enumerate(self.coord_rows):
            extra[r, dof] = w
        for r, (_, dof) in enumerate(self.posture):
            extra[len(self.coord_rows) + r, dof] = self.posture_sqrt_w
        rows.append(extra)
        return np.vstack(rows)[:, self.free_dofs]

    # ------------------------------------------------------------------ solve
    def solve(self, targets_m: np.ndarray, qpos_init: np.ndarray) -> FitResult:
        """Fit one frame: ``targets_m`` (M, 3) world metres (NaN = missing) from ``qpos_init`` (nq,)."""
        present = ~np.isnan(targets_m[:, 0])
        sqrt_w = np.sqrt(self.weights) * present
        qpos = self._project(np.array(qpos_init, dtype=float))
        res = self._residual(qpos, targets_m, sqrt_w)
        cost = float(res @ res)
        damping = 1e-3
        converged = False
        step_v = np.zeros(self.model.nv)
        iterations = 0
        for step in range(1, self.max_iterations + 1):
            iterations = step
            jac = self._jacobian(qpos, sqrt_w)
            grad = jac.T @ res
            hess = jac.T @ jac
            accepted = False
            while damping < 1e8:
                delta = np.linalg.solve(
                    hess + damping * (np.diag(np.diag(hess)) + 1e-9 * np.eye(len(grad))), -grad
                )
                step_v[:] = 0.0
                step_v[self.free_dofs] = delta
                trial = qpos.copy()
                mujoco.mj_integratePos(self.model, trial, step_v, 1.0)
                trial = self._project(trial)
                trial_res = self._residual(trial, targets_m, sqrt_w)
                trial_cost = float(trial_res @ trial_res)
                if trial_cost <= cost:
                    damping = max(damping / 3.0, 1e-9)
                    accepted = True
                    break
                damping *= 4.0
            if not accepted:
                converged = True  # no descent direction left: a (local) minimum
                break
            decrease = cost - trial_cost
            qpos, res, cost = trial, trial_res, trial_cost
            if decrease <= self.tolerance * max(cost, 1e-12) or np.max(np.abs(delta)) < 1e-8:
                converged = True
                break
        total_w = float(np.sum(self.weights * present))
        x = self.site_positions(qpos)
        err2 = np.sum((x - np.nan_to_num(targets_m)) ** 2, axis=1)
        rms = float(np.sqrt(np.sum(err2 * self.weights * present) / total_w)) if total_w > 0 else float("nan")
        return FitResult(qpos, rms, converged, iterations)


def place_markers(
    model: mujoco.MjModel, qpos: np.ndarray, marker_set: MarkerSet, measured_m: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """OpenSim MarkerPlacer: body-frame locations (3,) for every non-fixed, measured marker.

    ``qpos`` is the fitted static pose; ``measured_m`` maps name -> world position (3,).
    """
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    out = {}
    for marker in marker_set.markers:
        point = measured_m.get(marker.name)
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, marker.name)
        if marker.fixed or point is None or site < 0 or not np.all(np.isfinite(point)):
            continue
        body = int(model.site_bodyid[site])
        rot = data.xmat[body].reshape(3, 3)
        out[marker.name] = rot.T @ (np.asarray(point) - data.xpos[body])
    return out


def trial_marker_locations(
    model: mujoco.MjModel, qpos: np.ndarray, sites: list[str], targets_m: np.ndarray
) -> dict[str, np.ndarray]:
    """Body-frame location (3,) of each marker of ``sites`` (M,) as the mean over a solved trial.

    ``qpos`` (T, nq) are the solved poses, ``targets_m`` (T, M, 3) the measured markers (world
    metres, NaN = missing). This fits marker offsets to the trial itself (an explicit option of
    the markers pipeline, never the default); markers never present are left out.
    """
    data = mujoco.MjData(model)
    bodies = [int(model.site_bodyid[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s)]) for s in sites]
    sums, counts = np.zeros((len(sites), 3)), np.zeros(len(sites))
    for q, frame in zip(qpos, targets_m, strict=True):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        for i, body in enumerate(bodies):
            if np.all(np.isfinite(frame[i])):
                sums[i] += data.xmat[body].reshape(3, 3).T @ (frame[i] - data.xpos[body])
                counts[i] += 1
    return {s: sums[i] / counts[i] for i, s in enumerate(sites) if counts[i] > 0}


def root_rigid_sites(model: mujoco.MjModel, sites: list[str]) -> np.ndarray:
    """(M,) bool: sites on bodies moved by the free root joint alone (pelvis, rigid trunk)."""
    out = np.zeros(len(sites), dtype=bool)
    for i, name in enumerate(sites):
        body = int(model.site_bodyid[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)])
        only_free = True
        while body > 0:
            for j in range(model.body_jntadr[body], model.body_jntadr[body] + model.body_jntnum[body]):
                if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
                    only_free = False
            body = int(model.body_parentid[body])
        out[i] = only_free
    return out
