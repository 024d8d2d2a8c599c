"""Small synthetic motions for tests, benchmarks and demos (no data files needed).

``sine_gait`` moves every hinge joint of a model sinusoidally around its default pose while the
root travels forward at a constant speed, with velocities by finite differences. It is not a
physically consistent gait; it is a smooth, valid reference for the env's machinery.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.models.registry import load_model
from musclerl.motion.trajectory import Trajectory, concatenate


def sine_gait(
    model_name: str = "tiny",
    duration_s: float = 2.0,
    rate_hz: float = 50.0,
    amplitude_rad: float = 0.2,
    speed_mps: float = 0.5,
    period_s: float = 1.0,
    loop: bool = False,
    phase_rad: float = 0.0,
    name: str = "sine",
) -> Trajectory:
    """One clip of ``duration_s`` at ``rate_hz`` for a registered model (or MJCF path)."""
    model = load_model(model_name)
    n = max(int(round(duration_s * rate_hz)), 2)
    t = np.arange(n) / rate_hz
    qpos = np.tile(model.qpos0, (n, 1))
    qpos[:, 0] += speed_mps * t
    for j in range(1, model.njnt):
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            continue
        adr = model.jnt_qposadr[j]
        centre = model.qpos0[adr]
        if model.jnt_limited[j]:
            lo, hi = model.jnt_range[j]
            centre = (
                np.clip(centre, lo + amplitude_rad, hi - amplitude_rad)
                if hi - lo > 2 * amplitude_rad
                else (lo + hi) / 2
            )
        side = 1.0 if model.joint(j).name.endswith("_l") else -1.0
        qpos[:, adr] = centre + amplitude_rad * np.sin(
            2 * np.pi * t / period_s + phase_rad + side * np.pi / 2
        )
    _lift_out_of_floor(model, qpos)
    return Trajectory.from_qpos(
        model,
        qpos,
        rate_hz,
        str(model_name),
        clip_names=(name,),
        clip_loop=np.array([loop]),
    )


def sine_dataset(
    model_name: str = "tiny", num_clips: int = 3, duration_s: float = 2.0, rate_hz: float = 50.0
) -> Trajectory:
    """``num_clips`` sine gaits of different phase and speed in one dataset (the last one looping)."""
    clips = [
        sine_gait(
            model_name,
            duration_s=duration_s,
            rate_hz=rate_hz,
            speed_mps=0.3 + 0.2 * c,
            phase_rad=0.7 * c,
            loop=(c == num_clips - 1),
            name=f"sine{c}",
        )
        for c in range(num_clips)
    ]
    return concatenate(clips)


def _lift_out_of_floor(model: mujoco.MjModel, qpos: np.ndarray) -> None:
    """Raise the root of every frame (in place) so no collision geom penetrates the floor."""
    data = mujoco.MjData(model)
    for t in range(qpos.shape[0]):
        for _ in range(3):
            data.qpos[:] = qpos[t]
            mujoco.mj_forward(model, data)
            depth = max([-data.contact.dist[i] for i in range(data.ncon)] + [0.0])
            if depth <= 1e-5:
                break
            qpos[t, 2] += depth + 1e-4
