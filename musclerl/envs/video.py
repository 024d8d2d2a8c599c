"""Rendering and MP4 video of rollouts, with the reference shown as a translucent ghost.

Rendering goes through ``mujoco.Renderer``, which picks its OpenGL backend from ``MUJOCO_GL``
when ``mujoco`` is first imported: on a headless machine set ``MUJOCO_GL=egl`` (GPU) or
``MUJOCO_GL=osmesa`` (CPU, Debian/Ubuntu package ``libosmesa6``) before starting Python.
Videos are written with ``imageio`` + ``imageio-ffmpeg`` (H.264 MP4), atomically.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path

GHOST_RGBA = np.array([0.3, 0.6, 1.0, 0.35], dtype=np.float32)
GHOST_MAX_GEOMS = 2000


class Frames:
    """Renders an MjData (and optionally a reference pose as a ghost) to RGB arrays (H, W, 3).

    The camera follows the root body from the side. ``close()`` frees the GL context.
    """

    def __init__(self, model: mujoco.MjModel, width: int = 480, height: int = 360, distance_m: float = 3.0):
        try:
            self.renderer = mujoco.Renderer(model, height=height, width=width, max_geom=10000)
        except Exception as err:  # no display / GL backend
            raise InputError(
                "rendering",
                f"cannot create an OpenGL context ({type(err).__name__}: "
                f"{' '.join(str(err).split())[:200]}); on a headless machine set "
                "MUJOCO_GL=egl or MUJOCO_GL=osmesa (apt-get install libosmesa6)",
            ) from err
        self.model = model
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self.camera.distance = distance_m
        self.camera.azimuth = 90.0
        self.camera.elevation = -15.0
        self._ghost = mujoco.MjData(model)
        self._option = mujoco.MjvOption()
        self._perturb = mujoco.MjvPerturb()

    def render(self, data: mujoco.MjData, ghost_qpos: np.ndarray | None = None) -> np.ndarray:
        """RGB frame (H, W, 3) uint8 of ``data``; ``ghost_qpos`` (nq,) drawn translucent if given."""
        self.camera.lookat[:] = data.xpos[1] if self.model.nbody > 1 else 0.0
        self.renderer.update_scene(data, camera=self.camera)
        if ghost_qpos is not None:
            self._add_ghost(ghost_qpos)
        return self.renderer.render().copy()

    def _add_ghost(self, qpos: np.ndarray) -> None:
        scene = self.renderer.scene
        self._ghost.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self._ghost)
        first = scene.ngeom
        mujoco.mjv_addGeoms(
            self.model, self._ghost, self._option, self._perturb, int(mujoco.mjtCatBit.mjCAT_DYNAMIC), scene
        )
        for i in range(first, min(scene.ngeom, first + GHOST_MAX_GEOMS)):
            scene.geoms[i].rgba[:] = GHOST_RGBA

    def close(self) -> None:
        self.renderer.close()


def write_mp4(frames: list[np.ndarray], path: str | os.PathLike, fps: float) -> Path:
    """Write RGB frames (H, W, 3) uint8 to an H.264 MP4 at ``fps``, atomically."""
    try:
        import imageio.v2 as imageio
    except ImportError as err:
        raise InputError(
            path, "writing MP4 needs imageio and imageio-ffmpeg: pip install imageio imageio-ffmpeg"
        ) from err
    if not frames:
        raise InputError(path, "no frames to write")
    path = Path(path)
    with atomic_path(path) as tmp:
        with imageio.get_writer(
            tmp, fps=fps, codec="libx264", quality=7, macro_block_size=8, format="FFMPEG"
        ) as writer:
            for frame in frames:
                writer.append_data(frame)
    return path


def write_frame_strip(frames: list[np.ndarray], path: str | os.PathLike, count: int = 6) -> Path:
    """``count`` frames (H, W, 3) evenly spaced over the rollout, side by side, as one PNG."""
    import matplotlib.image

    if not frames:
        raise InputError(path, "no frames to write")
    picks = np.linspace(0, len(frames) - 1, min(count, len(frames))).round().astype(int)
    strip = np.concatenate([frames[i] for i in picks], axis=1)
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            matplotlib.image.imsave(f, strip, format="png")
    return path


def record_rollout(
    env: Any,
    policy: Callable[[np.ndarray], np.ndarray],
    path: str | os.PathLike,
    num_steps: int = 200,
    seed: int = 0,
    clip: int | None = None,
    width: int = 480,
    height: int = 360,
    ghost: bool = True,
    strip_path: str | os.PathLike | None = None,
    start_time_s: float = 0.0,
) -> dict[str, float]:
    """Roll env 0 of a cpu :class:`~musclerl.envs.TrackingEnv` out under ``policy`` and write an MP4.

    ``policy`` maps observations (N, obs_dim) to actions (N, A) of the env's action space. Starts
    at ``start_time_s`` of ``clip`` (or an RSI start when None) and stops at the first episode end
    or after ``num_steps``. The reference pose at the same clip time is drawn as a ghost;
    ``strip_path`` also writes six evenly spaced frames side by side as a PNG. Returns
    ``{"steps": n, "mean_reward": r, "mean_site_err_m": e}`` for env 0.
    """
    if env.backend != "cpu":
        raise InputError("record_rollout", "recording runs on the cpu backend")
    from musclerl.envs.reference import lookup

    if clip is None:
        state = env.reset(seed)
    else:
        state = env.reset(seed, clip=np.full(env.num_envs, clip), time_s=np.full(env.num_envs, start_time_s))
    frames_out: list[np.ndarray] = []
    renderer = Frames(env.model, width, height)
    ref = env.reference.as_arrays(np)
    rewards, errors = [], []
    try:
        for _ in range(num_steps):
            ghost_qpos = (
                lookup(ref, state.info["clip"][:1], state.info["time_s"][:1], np)["qpos"][0]
                if ghost
                else None
            )
            frames_out.append(renderer.render(env.physics_data(0), ghost_qpos))
            state = env.step(state, policy(state.obs))
            rewards.append(float(state.reward[0]))
            errors.append(float(state.metrics["site_err_m"][0]))
            if bool(state.done[0]):
                break
    finally:
        renderer.close()
    write_mp4(frames_out, path, fps=1.0 / env.control_dt_s)
    if strip_path is not None:
        write_frame_strip(frames_out, strip_path)
    return {
        "steps": float(len(rewards)),
        "mean_reward": float(np.mean(rewards)),
        "mean_site_err_m": float(np.mean(errors)),
    }
