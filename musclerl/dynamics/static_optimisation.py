"""Static optimisation: muscle activations that reproduce inverse-dynamics moments.

Per frame (independently, as OpenSim's Static Optimization tool does)::

    minimise    sum_i a_i^2 + sum_k u_k^2
    subject to  sum_i A_ki (g_i(l, v) a_i + b_i(l)) + R_k u_k = tau_k - P_k qfrc_passive
                0 <= a_i <= 1

``g_i``/``b_i`` are MuJoCo's own muscle gain (active force–length–velocity) and bias (passive
force–length), from ``mju_muscleGain``/``mju_muscleBias`` at the frame's actuator length and
velocity; the actuator force is ``g a + b`` (negative = pulling, MuJoCo's sign). ``A = P M^T``
projects actuator moment arms ``M`` (nu, nv) onto the matched coordinates with the same coupling
matrix ``P`` as the inverse dynamics. ``u_k`` drives a weak reserve actuator of strength ``R_k``
(default 1 N·m) on each coordinate, so an unreachable moment is still met; its use is reported
(``reserve_nm``) rather than hidden. Solved with SciPy's SLSQP, warm-started from the previous frame.

SLSQP makes many tiny LAPACK calls; a multi-threaded OpenBLAS on a busy machine makes each of
them wait for its threads, so BLAS is held to one thread during the solve when ``threadpoolctl``
is installed.
"""

from __future__ import annotations

import contextlib
import dataclasses

import mujoco
import numpy as np

from musclerl.models.couplings import coupling_matrix
from musclerl.models.introspect import muscle_ids


def muscle_gain_bias(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
    """(gain (n,), bias (n,)) of the muscles at ``data``'s actuator length/velocity; force = g a + b, N.

    ``data`` must hold current ``actuator_length``/``actuator_velocity`` (after ``mj_forward``).
    """
    ids = muscle_ids(model)
    gain = np.zeros(len(ids))
    bias = np.zeros(len(ids))
    for k, a in enumerate(ids):
        lr = model.actuator_lengthrange[a]
        acc0 = float(model.actuator_acc0[a])
        length = float(data.actuator_length[a])
        gain[k] = mujoco.mju_muscleGain(
            length, float(data.actuator_velocity[a]), lr, acc0, model.actuator_gainprm[a, :9]
        )
        bias[k] = mujoco.mju_muscleBias(length, lr, acc0, model.actuator_biasprm[a, :9])
    return gain, bias


def moment_arms(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """Dense actuator moment matrix (nu, nv): generalised force per unit actuator force."""
    dense = np.zeros((model.nu, model.nv))
    mujoco.mju_sparse2dense(
        dense, data.actuator_moment, data.moment_rownnz, data.moment_rowadr, data.moment_colind
    )
    return dense


@dataclasses.dataclass(frozen=True)
class StaticOptimisationResult:
    """T frames, N muscles, K coordinates.

    ``activation`` (T, N) in [0, 1]; ``force_n`` (T, N) muscle tension (positive pulls);
    ``reserve_nm`` (T, K) reserve moments used; ``residual_nm`` (T, K) constraint violation left
    by the solver; ``success`` (T,) solver status per frame.
    """

    muscles: tuple[str, ...]
    coordinates: tuple[str, ...]
    activation: np.ndarray
    force_n: np.ndarray
    reserve_nm: np.ndarray
    residual_nm: np.ndarray
    success: np.ndarray

    def reserve_summary(self) -> dict[str, dict[str, float]]:
        """Per coordinate: RMS and peak |reserve| in N·m."""
        return {
            c: {
                "rms_nm": float(np.sqrt(np.mean(self.reserve_nm[:, k] ** 2))),
                "max_abs_nm": float(np.max(np.abs(self.reserve_nm[:, k]))),
            }
            for k, c in enumerate(self.coordinates)
        }


def single_threaded_blas() -> contextlib.AbstractContextManager:
    """Context limiting BLAS/LAPACK to one thread (a no-op without ``threadpoolctl``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def solve_frame(
    A: np.ndarray, gain: np.ndarray, target: np.ndarray, reserve_strength: np.ndarray, x0: np.ndarray
) -> tuple[np.ndarray, bool]:
    """One frame's QP. ``A`` (K, N) moment arms, ``target`` (K,) after passive/bias terms.

    Returns (x = [a (N,), u (K,)], success).
    """
    from scipy.optimize import minimize

    N = A.shape[1]
    B = np.hstack([A * gain[None, :], np.diag(reserve_strength)])
    scale = 1.0 / np.maximum(np.abs(target), 1.0)  # equalities of similar magnitude for SLSQP
    bounds = [(0.0, 1.0)] * N + [(None, None)] * len(target)
    result = minimize(
        lambda x: float(x @ x),
        x0,
        jac=lambda x: 2.0 * x,
        method="SLSQP",
        bounds=bounds,
        constraints=[
            {"type": "eq", "fun": lambda x: (B @ x - target) * scale, "jac": lambda x: B * scale[:, None]}
        ],
        options={"maxiter": 300, "ftol": 1e-10},
    )
    x = result.x
    x[:N] = np.clip(x[:N], 0.0, 1.0)
    return x, bool(result.success)


def static_optimisation(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    qvel: np.ndarray,
    moments: np.ndarray,
    coordinates: list[str],
    reserve_nm: float | dict[str, float] = 1.0,
    progress: bool = False,
) -> StaticOptimisationResult:
    """Activations (T, N) reproducing ``moments`` (T, K) at ``coordinates`` along ``qpos``/``qvel``."""
    ids = muscle_ids(model)
    names = tuple(model.actuator(a).name for a in ids)
    K = len(coordinates)
    if isinstance(reserve_nm, dict):
        strength = np.array([float(reserve_nm.get(c, 1.0)) for c in coordinates])
    else:
        strength = np.full(K, float(reserve_nm))
    d = mujoco.MjData(model)
    T = qpos.shape[0]
    act = np.zeros((T, len(ids)))
    force = np.zeros((T, len(ids)))
    reserve = np.zeros((T, K))
    residual = np.zeros((T, K))
    success = np.zeros(T, dtype=bool)
    x = np.concatenate([np.full(len(ids), 0.05), np.zeros(K)])
    frames = range(T)
    if progress:
        from tqdm import tqdm

        frames = tqdm(frames, desc="static optimisation", unit="frame")
    with single_threaded_blas():
        for t in frames:
            d.qpos[:], d.qvel[:] = qpos[t], qvel[t]
            d.act[:] = 0.0
            mujoco.mj_forward(model, d)
            gain, bias = muscle_gain_bias(model, d)
            P = coupling_matrix(model, qpos[t], coordinates)
            A = P @ moment_arms(model, d)[ids].T  # (K, N)
            target = moments[t] - A @ bias - P @ d.qfrc_passive
            x, success[t] = solve_frame(A, gain, target, strength, x)
            act[t] = x[: len(ids)]
            reserve[t] = strength * x[len(ids) :]
            force[t] = -(gain * act[t] + bias)
            residual[t] = A @ (gain * act[t] + bias) + P @ d.qfrc_passive + reserve[t] - moments[t]
    return StaticOptimisationResult(names, tuple(coordinates), act, force, reserve, residual, success)
