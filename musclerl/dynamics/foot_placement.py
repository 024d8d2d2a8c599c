"""Stance feet on the floor: a clip's root translation corrected so the supporting foot stands still.

Joint angles measured on one subject and played on a model of another size put the stance foot
above or below the floor, and let it slide: the pelvis travels as the subject's did, the model's
legs are shorter or longer. Only the root translation is wrong, so only it is changed
(:func:`plant_feet`); every joint angle and the root orientation stay as given.

Per frame and foot, the foot's *contact point* is the lowest of its collision geoms' surface
samples (:class:`musclerl.ground.surface.GeomSurface`; the heel at heel strike, the toes after
heel rise). :func:`foot_track` follows that material point one frame ahead: a foot rolling over
its heel or toes without slipping moves its contact point by nothing, whereas the lowest point
itself travels along the sole. With ``support`` (T, F), each foot's share of the body's support
per frame (from force plates where the trial has them, else :func:`kinematic_support`), the
correction of the root translation is

* horizontal: integrated over frames, the step ``- sum_f w_f (d_f - v_ground dt)`` that cancels
  the supporting feet's contact-point motion ``d_f`` (T, F, 2) relative to the ground
  (``v_ground``: a treadmill belt; zero overground), weighted by their shares; where nothing
  supports (``sum_f w_f < 1``) the rest of the step keeps the clip's own motion;
* vertical: ``- sum_f w_f h_f / sum_f w_f``, the supporting contact points' height ``h_f`` (T, F)
  brought to z = 0, linearly interpolated over frames without support;

then low-passed (:data:`CUTOFF_HZ`, zero phase) so the root's velocity has no kinks at stance
transitions. In double support the shares blend the two feet (the loaded one is held); both stay
put exactly only where the joint angles allow it. :func:`stance_fit` measures the result: the
stance feet's height above the floor and their slip per stance. World frame: metres, Z up.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
from scipy.ndimage import uniform_filter1d

from musclerl.dynamics.inverse_dynamics import lowpass
from musclerl.dynamics.plausibility import leg_feet
from musclerl.geometry.free_root import free_root_qposadr
from musclerl.ground.contact import detect_contacts, stance_phases
from musclerl.ground.surface import GeomSurface

#: Surface samples per foot geom: the lowest of them stands for the contact point (~1 mm).
SURFACE_SAMPLES = 200
#: The root correction is low-passed at this cutoff (Hz): a walk's foot placement changes at the
#: step rate (about 2 Hz), its stance transitions over about 0.1 s.
CUTOFF_HZ = 8.0
#: Stance flags from the motion alone are smoothed over this long (s) into support shares.
SUPPORT_SMOOTH_S = 0.05


@dataclasses.dataclass(frozen=True)
class FootTrack:
    """The contact point of each foot along a clip of T frames.

    ``feet`` (F,) names (``right``, ``left``: :func:`musclerl.dynamics.plausibility.leg_feet`);
    ``height_m`` (T, F) world z of each foot's lowest surface sample; ``step_m`` (T, F, 2) the world
    x, y displacement from frame t to t + 1 of the material point lowest at t (zero in the last row).
    """

    feet: tuple[str, ...]
    height_m: np.ndarray
    step_m: np.ndarray

    def shifted(self, root_offset_m: np.ndarray) -> FootTrack:
        """The track after adding ``root_offset_m`` (T, 3) to the root's translation (a rigid shift
        per frame: the same material points, moved with the body)."""
        off = np.asarray(root_offset_m, dtype=float)
        step = self.step_m.copy()
        step[:-1] += np.diff(off[:, :2], axis=0)[:, None, :]
        return FootTrack(self.feet, self.height_m + off[:, 2:3], step)


def foot_track(model: mujoco.MjModel, qpos: np.ndarray) -> FootTrack:
    """:class:`FootTrack` of ``qpos`` (T, nq): forward kinematics once per frame."""
    feet, geoms, foot_of_geom = leg_feet(model)
    surface = GeomSurface.of(model, geoms, SURFACE_SAMPLES)
    foot_of_sample = foot_of_geom[surface.owner]
    sample_body = model.geom_bodyid[geoms][surface.owner]
    groups = [np.flatnonzero(foot_of_sample == f) for f in range(len(feet))]
    data = mujoco.MjData(model)
    T, F = len(qpos), len(feet)
    height = np.zeros((T, F))
    step = np.zeros((T, F, 2))
    body, local, prev = np.zeros(F, dtype=int), np.zeros((F, 3)), np.zeros((F, 3))
    for t in range(T):
        data.qpos[:] = qpos[t]
        mujoco.mj_kinematics(model, data)
        if t > 0:  # where last frame's contact points are now
            moved = data.xpos[body] + np.einsum("fij,fj->fi", data.xmat[body].reshape(F, 3, 3), local)
            step[t - 1] = moved[:, :2] - prev[:, :2]
        pts = surface.world_points(data)
        for f, sel in enumerate(groups):
            k = sel[np.argmin(pts[sel, 2])]
            height[t, f], prev[f] = pts[k, 2], pts[k]
            body[f] = sample_body[k]
            local[f] = data.xmat[body[f]].reshape(3, 3).T @ (pts[k] - data.xpos[body[f]])
    return FootTrack(feet, height, step)


def kinematic_support(track: FootTrack, rate_hz: float) -> np.ndarray:
    """Support shares (T, F) from the motion alone: the stance detector of the marker pipeline
    (:func:`musclerl.ground.contact.detect_contacts`: slow and low against the foot's own level
    nearby in time, with hysteresis) on each foot's contact-point path (its material steps summed,
    its height), the feet in stance sharing equally; zero where no foot is (nothing held).
    Smoothed over :data:`SUPPORT_SMOOTH_S`."""
    path = np.concatenate([np.cumsum(track.step_m, axis=0), track.height_m[..., None]], axis=-1)
    path[1:, :, :2] = path[:-1, :, :2].copy()  # position t: the steps before t
    path[0, :, :2] = 0.0
    flags = detect_contacts(path, rate_hz).astype(float)
    share = flags / np.maximum(flags.sum(axis=1, keepdims=True), 1.0)
    width = max(int(round(SUPPORT_SMOOTH_S * rate_hz)), 1)
    return uniform_filter1d(share, size=width, axis=0, mode="nearest") if width > 1 else share


def root_correction_m(
    track: FootTrack,
    support: np.ndarray,
    rate_hz: float,
    ground_velocity_mps: np.ndarray | None = None,
    cutoff_hz: float = CUTOFF_HZ,
) -> np.ndarray:
    """The root translation offset (T, 3) that plants the supporting feet (module docstring).

    ``support`` (T, F) shares in [0, 1] (rows summing to at most 1) in the order of
    ``track.feet``; ``ground_velocity_mps`` (2,) the ground's horizontal velocity (a treadmill
    belt), zero when None. Horizontal offsets start at 0 on the first frame.
    """
    w = np.clip(np.asarray(support, dtype=float), 0.0, 1.0)
    T = len(w)
    belt = np.zeros(2) if ground_velocity_mps is None else np.asarray(ground_velocity_mps, float)[:2]
    rel = track.step_m - belt / rate_hz  # contact-point motion relative to the ground, per step
    step = -np.einsum("tf,tfk->tk", w[:-1], rel[:-1])
    out = np.zeros((T, 3))
    out[1:, :2] = np.cumsum(step, axis=0)
    total = w.sum(axis=1)
    held = total > 0.05
    if held.any():
        z = -(w * track.height_m).sum(axis=1)[held] / total[held]
        out[:, 2] = np.interp(np.arange(T), np.flatnonzero(held), z)
    return lowpass(out, rate_hz, cutoff_hz)


def plant_feet(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    support: np.ndarray,
    rate_hz: float,
    ground_velocity_mps: np.ndarray | None = None,
    track: FootTrack | None = None,
    cutoff_hz: float = CUTOFF_HZ,
) -> tuple[np.ndarray, FootTrack]:
    """(``qpos`` (T, nq) with the root translation corrected by :func:`root_correction_m`, the
    foot track after it). ``track``: :func:`foot_track` of ``qpos`` when already computed."""
    track = foot_track(model, qpos) if track is None else track
    offset = root_correction_m(track, support, rate_hz, ground_velocity_mps, cutoff_hz)
    adr = free_root_qposadr(model)
    if adr is None:
        raise ValueError("planting the feet moves the root: the model needs a free root joint")
    q = np.array(qpos, dtype=float, copy=True)
    q[:, adr : adr + 3] += offset
    return q, track.shifted(offset)


@dataclasses.dataclass(frozen=True)
class StanceFit:
    """How well the stance feet of a clip meet the floor (z = 0).

    ``height_mean_cm`` / ``height_max_cm``: the mean and largest absolute height of the stance
    feet's contact points over stance frames; ``slip_mean_cm`` / ``slip_max_cm``: per stance (a run
    of stance frames of one foot) the horizontal path of its contact point relative to the ground,
    mean and largest over the ``stances`` counted; ``loaded_slip_mean_cm``: the same path with each
    step weighted by the foot's support share (a foot carrying a tenth of the body in double
    support counts a tenth), NaN without shares.
    """

    height_mean_cm: float
    height_max_cm: float
    slip_mean_cm: float
    slip_max_cm: float
    loaded_slip_mean_cm: float
    stances: int

    def as_text(self) -> str:
        return (
            f"stance foot height |z| mean {self.height_mean_cm:.1f} cm, max {self.height_max_cm:.1f} cm; "
            f"slip per stance mean {self.slip_mean_cm:.1f} cm, max {self.slip_max_cm:.1f} cm, "
            f"load-weighted {self.loaded_slip_mean_cm:.1f} cm ({self.stances} stances)"
        )


def stance_fit(
    track: FootTrack,
    stance: np.ndarray,
    rate_hz: float,
    ground_velocity_mps: np.ndarray | None = None,
    support: np.ndarray | None = None,
) -> StanceFit:
    """:class:`StanceFit` of ``track`` over the stance flags ``stance`` (T, F) bool; the ground
    moves at ``ground_velocity_mps`` (2,) (a treadmill belt; None: still); ``support`` (T, F) the
    feet's support shares, for the load-weighted slip."""
    stance = np.asarray(stance, dtype=bool)
    belt = np.zeros(2) if ground_velocity_mps is None else np.asarray(ground_velocity_mps, float)[:2]
    rel = np.linalg.norm(track.step_m - belt / rate_hz, axis=-1)
    heights = np.abs(track.height_m[stance])
    weight = np.full(stance.shape, np.nan) if support is None else np.asarray(support, dtype=float)
    slips, loaded = [], []
    for f in range(stance.shape[1]):
        for a, b in stance_phases(stance[:, f]):
            if b - a >= 2:  # the steps between its stance frames
                slips.append(rel[a : b - 1, f].sum())
                loaded.append((rel[a : b - 1, f] * weight[a : b - 1, f]).sum())
    nan = float("nan")
    return StanceFit(
        height_mean_cm=100 * float(heights.mean()) if heights.size else nan,
        height_max_cm=100 * float(heights.max()) if heights.size else nan,
        slip_mean_cm=100 * float(np.mean(slips)) if slips else nan,
        slip_max_cm=100 * float(np.max(slips)) if slips else nan,
        loaded_slip_mean_cm=100 * float(np.mean(loaded)) if loaded else nan,
        stances=len(slips),
    )
