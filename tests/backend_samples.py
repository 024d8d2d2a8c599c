"""Shared pieces of the cpu-vs-mjx tests."""

from __future__ import annotations


def mjx_step_from(mjx_env):
    """A jitted ``(clip, time_s, qpos, qvel, act, last_ctrl, action) -> (start, stepped)``: the mjx
    env's state set to a physics state taken from the cpu env (so both start identically), then
    one ``step`` with ``action``."""
    import jax

    @jax.jit
    def from_shared(clip, time_s, qpos, qvel, act, last_ctrl, action):
        start = mjx_env.with_physics(mjx_env.reset(jax.random.PRNGKey(0), clip, time_s), qpos, qvel, act)
        start = start.replace(info={**start.info, "last_ctrl": last_ctrl})
        return start, mjx_env.step(start, action)

    return from_shared
