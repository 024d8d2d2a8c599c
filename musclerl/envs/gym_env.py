"""gymnasium front ends: ``gymnasium.make("musclerl/Tracking-v0", model=..., motion=...)``.

:class:`TrackingGymEnv` is one environment on the MuJoCo C backend; :class:`TrackingVectorEnv`
(``gymnasium.make_vec``) is N of them stepped together by the same batched backend. Both are
registered when ``musclerl.envs`` is imported. Observations are float32 (obs_dim,), actions
float32 excitations (nu,) in [0, 1].

``render_mode="rgb_array"`` renders through ``mujoco.Renderer``; headless machines need
``MUJOCO_GL=egl`` or ``MUJOCO_GL=osmesa`` set before Python starts (see video.py).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from musclerl.envs.config import EnvConfig
from musclerl.envs.tracking import TrackingEnv
from musclerl.motion.trajectory import Trajectory


def _make(
    model: str,
    motion: Trajectory | str | os.PathLike | None,
    config: EnvConfig | dict | None,
    num_envs: int,
    threads: int,
) -> TrackingEnv:
    if motion is None:
        from musclerl.envs.motions import sine_dataset

        motion = sine_dataset(model)
    return TrackingEnv(
        model=model, motion=motion, config=config, backend="cpu", num_envs=num_envs, threads=threads
    )


def _info(state: Any, i: Any = 0) -> dict[str, Any]:
    return {
        "clip": int(state.info["clip"][i]),
        "time_s": float(state.info["time_s"][i]),
        **{k: float(v[i]) for k, v in state.metrics.items()},
    }


class TrackingGymEnv(gymnasium.Env):
    """One tracking environment (MuJoCo C). ``motion``: a Trajectory or .npz path (default: a
    synthetic sine gait of the model, for smoke tests)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(
        self,
        model: str = "tiny",
        motion: Trajectory | str | os.PathLike | None = None,
        config: EnvConfig | dict | None = None,
        render_mode: str | None = None,
        width: int = 480,
        height: int = 360,
    ):
        self.env = _make(model, motion, config, 1, 1)
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.env.observation_size,), np.float32)
        self.action_space = spaces.Box(
            self.env.actions.low.astype(np.float32),
            self.env.actions.high.astype(np.float32),
            dtype=np.float32,
        )
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / self.env.control_dt_s))}
        self._size = (width, height)
        self._frames = None
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """``options``: optional ``clip`` (int) and ``time_s`` (float) to start from."""
        super().reset(seed=seed)
        options = options or {}
        rng = int(self.np_random.integers(0, 2**62))
        if "clip" in options:
            self._state = self.env.reset(
                rng, clip=np.array([options["clip"]]), time_s=np.array([options.get("time_s", 0.0)])
            )
        else:
            self._state = self.env.reset(rng)
        return self._state.obs[0].astype(np.float32), _info(self._state)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._state = self.env.step(self._state, np.asarray(action, dtype=float)[None])
        s = self._state
        obs = s.info["terminal_obs"][0].astype(np.float32)  # the state reached, not the auto-reset one
        return obs, float(s.reward[0]), bool(s.terminated[0]), bool(s.truncated[0]), _info(s)

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        from musclerl.envs.video import Frames

        if self._frames is None:
            self._frames = Frames(self.env.model, *self._size)
        return self._frames.render(self.env.physics_data(0))

    def close(self) -> None:
        if self._frames is not None:
            self._frames.close()
            self._frames = None


class TrackingVectorEnv(VectorEnv):
    """``num_envs`` tracking environments in one MuJoCo C batch on ``threads`` threads.

    Auto-reset in the same step: the returned observation of a finished env is its new
    episode's first; ``info["final_obs"]`` holds the observation the step reached.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 1,
        model: str = "tiny",
        motion: Trajectory | str | os.PathLike | None = None,
        config: EnvConfig | dict | None = None,
        threads: int = 1,
        **_: Any,
    ):
        self.env = _make(model, motion, config, num_envs, threads)
        self.num_envs = num_envs
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (self.env.observation_size,), np.float32)
        self.single_action_space = spaces.Box(
            self.env.actions.low.astype(np.float32),
            self.env.actions.high.astype(np.float32),
            dtype=np.float32,
        )
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)
        self._state = None
        self._seed = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self._seed = int(seed)
        self._state = self.env.reset(self._seed)
        self._seed += 1
        return self._state.obs.astype(np.float32), {"clip": self._state.info["clip"].copy()}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        s = self._state = self.env.step(self._state, np.asarray(actions, dtype=float))
        info = {
            "final_obs": s.info["terminal_obs"].astype(np.float32),
            "clip": s.info["clip"].copy(),
            **{k: v.copy() for k, v in s.metrics.items()},
        }
        return (
            s.obs.astype(np.float32),
            s.reward.astype(np.float32),
            s.terminated.copy(),
            s.truncated.copy(),
            info,
        )
