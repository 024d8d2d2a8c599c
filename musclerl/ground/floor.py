"""Putting a clip on the floor: the lowest point of a set of geoms, frame by frame.

Every stage that lowers a clip onto a flat floor measures the same thing, the lowest world z of
some colliding geoms (:func:`musclerl.models.geoms.geom_lowest_z`) over the clip, and moves the
root by a statistic of it: the bundled motions by its minimum over the feet (no frame
penetrates), lab coordinates by a low percentile over every moving geom
(:func:`musclerl.evaluate.coordinates.place_on_ground`: a few noisy frames may dip). The marker
pipeline's floor, a plane fitted through the stance soles and a per-frame support lift over a
terrain, is :mod:`musclerl.retarget.markers.ground`.
"""

from __future__ import annotations

import mujoco
import numpy as np

from musclerl.models.geoms import geom_lowest_z


def lowest_z_m(model: mujoco.MjModel, qpos: np.ndarray, geoms: np.ndarray) -> np.ndarray:
    """Per frame (T,), the lowest world z (m) of the geoms ``geoms`` (G,) at the poses ``qpos``
    (T, nq) (a single pose (nq,) counts as one frame); forward kinematics only."""
    qpos = np.atleast_2d(qpos)
    data = mujoco.MjData(model)
    out = np.zeros(len(qpos))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[t] = geom_lowest_z(model, data, geoms).min()
    return out
