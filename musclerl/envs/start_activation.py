"""Muscle activations an episode starts with, consistent with the reference pose and motion.

``initial_activation: static`` estimates, for every reference frame, the activations that make
the muscles produce the joint moments the motion needs, as OpenSim's Static Optimization does:

1. inverse dynamics of the reference without contacts (``dynamics.inverse_dynamics``) gives the
   external wrench the ground must supply (the free root's residual);
2. that wrench is applied at the supporting foot body (``dynamics.ground_support``: the foot
   body whose lowest point is lowest, feet within 1 cm of it sharing it), and the inverse
   dynamics repeated, so the stance leg's joints carry the body's weight;
3. static optimisation (``dynamics.static_optimisation``: min sum a^2 with MuJoCo's own muscle
   gain and bias) turns the joint moments into activations.

Without this a reset starts every muscle at zero activation and the body sags for the ~10-40 ms
the activation dynamics need (the root dropped 4 cm in 10 steps with the old start).
"""

from __future__ import annotations

import numpy as np

from musclerl.dynamics.ground_support import residual_on_feet
from musclerl.dynamics.inverse_dynamics import inverse_dynamics
from musclerl.dynamics.static_optimisation import static_optimisation
from musclerl.envs.world import World
from musclerl.models.couplings import independent_coordinates
from musclerl.models.introspect import muscle_ids


def static_activations(world: World, qpos: np.ndarray, qvel: np.ndarray, qacc: np.ndarray) -> np.ndarray:
    """Activations (T, na) for reference frames qpos (T, nq), qvel, qacc (T, nv) of one clip."""
    model = world.model
    coords = independent_coordinates(model)
    times = np.arange(len(qpos), dtype=float)  # qvel/qacc are given: the times are not used
    free = inverse_dynamics(model, qpos, times, coords, qvel=qvel, qacc=qacc)
    loads = residual_on_feet(model, free, [(int(b),) for b in world.foot_body_ids])
    supported = inverse_dynamics(model, qpos, times, coords, loads=loads, qvel=qvel, qacc=qacc)
    result = static_optimisation(model, qpos, qvel, supported.moments, coords)
    act = np.zeros((len(qpos), model.na))
    act[:, model.actuator_actadr[muscle_ids(model)]] = result.activation
    return act


def reference_activations(
    world: World,
    qpos: np.ndarray,
    qvel: np.ndarray,
    rate_hz: float,
    starts: np.ndarray,
    lengths: np.ndarray,
    loop: np.ndarray,
) -> np.ndarray:
    """:func:`static_activations` of every clip, qacc by central differences of qvel (wrapped
    around a looping clip's period)."""
    out = np.zeros((len(qpos), world.model.na))
    for s, n, lp in zip(starts, lengths, loop, strict=True):
        v = qvel[s : s + n]
        if lp:
            qacc = (np.roll(v, -1, axis=0) - np.roll(v, 1, axis=0)) * (rate_hz / 2.0)
        else:
            qacc = np.gradient(v, 1.0 / rate_hz, axis=0) if n > 1 else np.zeros_like(v)
        out[s : s + n] = static_activations(world, qpos[s : s + n], v, qacc)
    return out
