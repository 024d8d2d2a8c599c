"""The project's one motion type: :class:`Trajectory`, saved as a documented ``.npz``.

NPZ schema (``format_version`` 1); T frames, nq/nv of the model, S sites, F contact points,
C clips:

=====================  ==============  ====================================================
key                    shape / dtype   meaning
=====================  ==============  ====================================================
``format_version``     () int          1
``model_name``         () str          registry name or MJCF path the qpos belong to
``rate_hz``            () float        frame rate
``qpos``               (T, nq) float   MuJoCo generalised positions (free root: x,y,z, w,x,y,z)
``qvel``               (T, nv) float   MuJoCo generalised velocities (free root: world linear,
                                       body-frame angular, as ``mj_differentiatePos`` gives)
``joint_names``        (J,) str        model joint names, in model order
``site_names``         (S,) str        optional: names of tracked sites
``site_pos_m``         (T, S, 3)       optional: world positions of those sites, metres, Z up
``contact_names``      (F,) str        optional: names of contact points (e.g. foot sites)
``contact``            (T, F) bool     optional: contact flags
``terrain_height_m``   (R, Cc) float   optional heightfield: rows along +y, columns along +x
``terrain_origin_m``   (2,) float      world (x, y) of cell [0, 0]
``terrain_cell_m``     () float        grid spacing in metres
``clip_starts``        (C,) int        first frame of each clip (clip_starts[0] == 0)
``clip_names``         (C,) str        clip names
``clip_loop``          (C,) bool       whether each clip is cyclic
=====================  ==============  ====================================================
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, read_npz

FORMAT_VERSION = 1
#: Bounds beyond which a Trajectory's numbers are corrupt, not motion: no capture runs at 100 kHz,
#: and no coordinate (metres from the origin, radians) reaches 10 km or 10^4 rad.
MAX_RATE_HZ = 1.0e5
MAX_ABS_QPOS = 1.0e4


@dataclasses.dataclass(frozen=True)
class Terrain:
    """A heightfield. ``height_m[r, c]`` is the ground height at ``origin + (c, r) * cell``."""

    height_m: np.ndarray  # (R, C)
    origin_m: np.ndarray  # (2,) world x, y of cell [0, 0]
    cell_m: float

    def height_at(self, xy_m: np.ndarray) -> np.ndarray:
        """Bilinear ground height under world points ``xy_m`` (..., 2); clamps outside the grid."""
        xy = np.asarray(xy_m, dtype=float)
        rows, cols = self.height_m.shape
        gx = np.clip((xy[..., 0] - self.origin_m[0]) / self.cell_m, 0, cols - 1)
        gy = np.clip((xy[..., 1] - self.origin_m[1]) / self.cell_m, 0, rows - 1)
        c0 = np.minimum(np.floor(gx).astype(int), max(cols - 2, 0))
        r0 = np.minimum(np.floor(gy).astype(int), max(rows - 2, 0))
        c1 = np.minimum(c0 + 1, cols - 1)
        r1 = np.minimum(r0 + 1, rows - 1)
        fx, fy = gx - c0, gy - r0
        h = self.height_m
        top = h[r0, c0] * (1 - fx) + h[r0, c1] * fx
        bottom = h[r1, c0] * (1 - fx) + h[r1, c1] * fx
        return top * (1 - fy) + bottom * fy

    @property
    def size_m(self) -> tuple[float, float]:
        """Extent (x, y) covered by the grid in metres."""
        rows, cols = self.height_m.shape
        return ((cols - 1) * self.cell_m, (rows - 1) * self.cell_m)


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """Model-space motion: qpos/qvel per frame plus optional sites, contacts, terrain and clips."""

    qpos: np.ndarray  # (T, nq)
    qvel: np.ndarray  # (T, nv)
    rate_hz: float
    joint_names: tuple[str, ...]
    model_name: str
    site_names: tuple[str, ...] = ()
    site_pos_m: np.ndarray | None = None  # (T, S, 3)
    contact_names: tuple[str, ...] = ()
    contact: np.ndarray | None = None  # (T, F) bool
    terrain: Terrain | None = None
    clip_starts: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(1, dtype=int))
    clip_names: tuple[str, ...] = ("clip0",)
    clip_loop: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(1, dtype=bool))

    def __post_init__(self):
        self.validate("trajectory")

    # ----------------------------------------------------------------- properties
    @property
    def num_frames(self) -> int:
        return int(self.qpos.shape[0])

    @property
    def num_clips(self) -> int:
        return int(len(self.clip_starts))

    @property
    def duration_s(self) -> float:
        return self.num_frames / self.rate_hz

    @property
    def clip_ends(self) -> np.ndarray:
        """One past the last frame of each clip, shape (C,)."""
        return np.append(self.clip_starts[1:], self.num_frames).astype(int)

    def clip(self, index: int) -> Trajectory:
        """One clip as its own single-clip Trajectory (terrain shared)."""
        s, e = int(self.clip_starts[index]), int(self.clip_ends[index])
        return dataclasses.replace(
            self,
            qpos=self.qpos[s:e],
            qvel=self.qvel[s:e],
            site_pos_m=None if self.site_pos_m is None else self.site_pos_m[s:e],
            contact=None if self.contact is None else self.contact[s:e],
            clip_starts=np.zeros(1, dtype=int),
            clip_names=(self.clip_names[index],),
            clip_loop=self.clip_loop[index : index + 1],
        )

    # ----------------------------------------------------------------- validation
    def validate(self, source: str | os.PathLike) -> None:
        """Check shapes, finiteness and clip layout; raise :class:`InputError` naming ``source``."""

        def need(cond: bool, problem: str) -> None:
            if not cond:
                raise InputError(source, problem)

        need(self.qpos.ndim == 2 and self.qpos.shape[0] >= 1, f"qpos must be (T, nq), got {self.qpos.shape}")
        need(
            self.qvel.ndim == 2 and self.qvel.shape[0] == self.qpos.shape[0],
            f"qvel must be (T, nv) with T={self.qpos.shape[0]}, got {self.qvel.shape}",
        )
        need(
            bool(np.all(np.isfinite(self.qpos))) and bool(np.all(np.isfinite(self.qvel))),
            "qpos/qvel contain NaN or inf",
        )
        need(
            np.isfinite(self.rate_hz) and 0 < self.rate_hz <= MAX_RATE_HZ,
            f"rate_hz must be in (0, {MAX_RATE_HZ:g}], got {self.rate_hz}",
        )
        peak = float(np.max(np.abs(self.qpos))) if self.qpos.size else 0.0
        need(
            peak <= MAX_ABS_QPOS,
            f"qpos reaches {peak:.3g}: absurd for metres or radians (> {MAX_ABS_QPOS:g})",
        )
        if self.site_pos_m is not None:
            need(
                self.site_pos_m.shape == (self.num_frames, len(self.site_names), 3),
                f"site_pos_m must be (T, S, 3) = ({self.num_frames}, {len(self.site_names)}, 3), "
                f"got {self.site_pos_m.shape}",
            )
        if self.contact is not None:
            need(
                self.contact.shape == (self.num_frames, len(self.contact_names)),
                f"contact must be (T, F) = ({self.num_frames}, {len(self.contact_names)}), "
                f"got {self.contact.shape}",
            )
        starts = np.asarray(self.clip_starts)
        need(starts.ndim == 1 and len(starts) >= 1 and starts[0] == 0, "clip_starts must start with 0")
        need(
            bool(np.all(np.diff(starts) > 0)) and starts[-1] < self.num_frames,
            "clip_starts must be increasing and inside the frames",
        )
        need(
            len(self.clip_names) == len(starts) and len(self.clip_loop) == len(starts),
            "clip_names/clip_loop must have one entry per clip",
        )
        if self.terrain is not None:
            h = self.terrain.height_m
            need(
                h.ndim == 2 and min(h.shape) >= 2 and bool(np.all(np.isfinite(h))),
                "terrain_height_m must be a finite (R, C) grid with R, C >= 2",
            )
            need(self.terrain.cell_m > 0, "terrain_cell_m must be > 0")

    def check_model(self, model: mujoco.MjModel, source: str | os.PathLike = "trajectory") -> None:
        """Raise :class:`InputError` if this motion does not fit ``model`` (sizes, joint names)."""
        names = tuple(model.joint(j).name for j in range(model.njnt))
        if self.qpos.shape[1] != model.nq or self.qvel.shape[1] != model.nv:
            raise InputError(
                source,
                f"motion has nq={self.qpos.shape[1]}, nv={self.qvel.shape[1]} but the "
                f"model has nq={model.nq}, nv={model.nv} (wrong model?)",
            )
        if names != tuple(self.joint_names):
            missing = sorted(set(names) ^ set(self.joint_names))[:5]
            raise InputError(source, f"joint names differ from the model's (e.g. {missing})")

    # ----------------------------------------------------------------- I/O
    def save(self, path: str | os.PathLike) -> None:
        """Write the NPZ schema above atomically (a temp file renamed into place; folders created)."""
        arrays: dict[str, np.ndarray] = {
            "format_version": np.array(FORMAT_VERSION),
            "model_name": np.array(self.model_name),
            "rate_hz": np.array(float(self.rate_hz)),
            "qpos": np.asarray(self.qpos, dtype=np.float64),
            "qvel": np.asarray(self.qvel, dtype=np.float64),
            "joint_names": np.array(self.joint_names, dtype=str),
            "clip_starts": np.asarray(self.clip_starts, dtype=np.int64),
            "clip_names": np.array(self.clip_names, dtype=str),
            "clip_loop": np.asarray(self.clip_loop, dtype=bool),
        }
        if self.site_pos_m is not None:
            arrays["site_names"] = np.array(self.site_names, dtype=str)
            arrays["site_pos_m"] = np.asarray(self.site_pos_m, dtype=np.float64)
        if self.contact is not None:
            arrays["contact_names"] = np.array(self.contact_names, dtype=str)
            arrays["contact"] = np.asarray(self.contact, dtype=bool)
        if self.terrain is not None:
            arrays["terrain_height_m"] = np.asarray(self.terrain.height_m, dtype=np.float64)
            arrays["terrain_origin_m"] = np.asarray(self.terrain.origin_m, dtype=np.float64)
            arrays["terrain_cell_m"] = np.array(float(self.terrain.cell_m))
        with atomic_path(Path(path)) as tmp:
            with open(tmp, "wb") as f:  # a file object: numpy would append ".npz" to a bare name
                np.savez_compressed(f, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Trajectory:
        """Read and validate a Trajectory NPZ; any problem is an :class:`InputError` naming ``path``."""
        path = Path(path)
        data = read_npz(path)
        for key in ("qpos", "qvel", "rate_hz", "joint_names", "model_name"):
            if key not in data:
                raise InputError(path, f"not a musclerl Trajectory: missing key '{key}'")
        version = int(data.get("format_version", FORMAT_VERSION))
        if version != FORMAT_VERSION:
            raise InputError(
                path, f"Trajectory format_version {version} is not supported (want {FORMAT_VERSION})"
            )
        try:
            qpos = np.asarray(data["qpos"], dtype=np.float64)
            qvel = np.asarray(data["qvel"], dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise InputError(path, "qpos/qvel are not numeric arrays") from err
        try:
            kwargs = _fields(data)
        except (TypeError, ValueError, IndexError, KeyError) as err:
            raise InputError(path, f"malformed Trajectory field ({type(err).__name__}: {err})") from err
        kwargs.update(qpos=qpos, qvel=qvel)
        try:
            return cls(**kwargs)
        except InputError as err:
            raise InputError(path, err.problem) from err

    @classmethod
    def from_qpos(
        cls, model: mujoco.MjModel, qpos: np.ndarray, rate_hz: float, model_name: str, **fields
    ) -> Trajectory:
        """The Trajectory of positions ``qpos`` (T, nq) of ``model`` sampled at ``rate_hz``: the
        velocities by :func:`finite_difference_qvel`, the joint names the model's; ``fields`` are
        the other Trajectory fields (sites, contact, terrain, clip names and loops)."""
        return cls(
            qpos=qpos,
            qvel=finite_difference_qvel(model, qpos, rate_hz),
            rate_hz=rate_hz,
            joint_names=tuple(model.joint(j).name for j in range(model.njnt)),
            model_name=model_name,
            **fields,
        )


def _fields(data: dict[str, np.ndarray]) -> dict:
    """Trajectory keyword arguments (but qpos and qvel) from the arrays of an NPZ."""
    terrain = None
    if "terrain_height_m" in data:
        terrain = Terrain(
            height_m=np.asarray(data["terrain_height_m"], dtype=np.float64),
            origin_m=np.asarray(data["terrain_origin_m"], dtype=np.float64).reshape(2),
            cell_m=float(data["terrain_cell_m"]),
        )
    starts = np.asarray(data.get("clip_starts", np.zeros(1, dtype=int)), dtype=int).reshape(-1)
    kwargs = dict(
        rate_hz=float(data["rate_hz"]),
        joint_names=tuple(str(s) for s in np.atleast_1d(data["joint_names"])),
        model_name=str(data["model_name"]),
        site_names=tuple(str(s) for s in np.atleast_1d(data.get("site_names", np.array([], dtype=str)))),
        site_pos_m=data.get("site_pos_m"),
        contact_names=tuple(
            str(s) for s in np.atleast_1d(data.get("contact_names", np.array([], dtype=str)))
        ),
        contact=data.get("contact"),
        terrain=terrain,
        clip_starts=starts,
        clip_names=tuple(
            str(s)
            for s in np.atleast_1d(data.get("clip_names", np.array([f"clip{i}" for i in range(len(starts))])))
        ),
        clip_loop=np.asarray(data.get("clip_loop", np.zeros(len(starts), dtype=bool)), dtype=bool).reshape(
            -1
        ),
    )
    return kwargs


def finite_difference_qvel(
    model: mujoco.MjModel, qpos: np.ndarray, rate_hz: float | None = None, time_s: np.ndarray | None = None
) -> np.ndarray:
    """Generalised velocities (T, nv) from positions (T, nq) by central differences.

    Frames are sampled at ``rate_hz``, or at the (possibly uneven) times ``time_s`` (T,) seconds.
    Uses ``mj_differentiatePos`` so free and ball joints get proper angular velocities (MuJoCo's
    convention: free-joint linear velocity in the world frame, angular velocity in the body frame).
    One-sided differences at the ends; zeros for a single frame.
    """
    qpos = np.asarray(qpos, dtype=np.float64)
    n = qpos.shape[0]
    qvel = np.zeros((n, model.nv))
    if n < 2:
        return qvel
    dt = None if rate_hz is None else 1.0 / rate_hz
    for t in range(n):
        a, b = max(t - 1, 0), min(t + 1, n - 1)
        span_s = (b - a) * dt if dt is not None else float(time_s[b] - time_s[a])
        mujoco.mj_differentiatePos(model, qvel[t], span_s, qpos[a], qpos[b])
    return qvel


def looping_qvel(
    model: mujoco.MjModel, qpos: np.ndarray, rate_hz: float, cycle_xy_m: np.ndarray
) -> np.ndarray:
    """Generalised velocities (T, nv) of one looping clip by wrapped central differences.

    ``qpos`` (T, nq) holds one period (frame T would be frame 0 again); the next period is the
    same motion moved by ``cycle_xy_m`` (2,), the free root's ground-plane displacement per
    period, so the first and last frames' differences cross the seam without a jump.
    """
    qpos = np.asarray(qpos, dtype=np.float64)
    n = len(qpos)
    step = np.zeros(model.nq)
    step[:2] = cycle_xy_m
    ahead = np.vstack([qpos[1:], qpos[:1] + step])
    behind = np.vstack([qpos[-1:] - step, qpos[:-1]])
    qvel = np.zeros((n, model.nv))
    for t in range(n):
        mujoco.mj_differentiatePos(model, qvel[t], 2.0 / rate_hz, behind[t], ahead[t])
    return qvel


def concatenate(trajectories: list[Trajectory], names: list[str] | None = None) -> Trajectory:
    """Join single- or multi-clip trajectories of the same model and rate into one dataset."""
    if not trajectories:
        raise ValueError("no trajectories to concatenate")
    first = trajectories[0]
    starts, clip_names, loops, offset = [], [], [], 0
    for i, traj in enumerate(trajectories):
        if traj.model_name != first.model_name or traj.joint_names != first.joint_names:
            raise InputError(
                names[i] if names else f"trajectory {i}", "different model from the first motion"
            )
        if abs(traj.rate_hz - first.rate_hz) > 1e-9:
            raise InputError(
                names[i] if names else f"trajectory {i}",
                f"rate {traj.rate_hz} Hz differs from {first.rate_hz} Hz; resample first",
            )
        starts.extend(int(s) + offset for s in traj.clip_starts)
        clip_names.extend(traj.clip_names)
        loops.extend(bool(x) for x in traj.clip_loop)
        offset += traj.num_frames
    same_sites = all(t.site_names == first.site_names and t.site_pos_m is not None for t in trajectories)
    same_contacts = all(
        t.contact_names == first.contact_names and t.contact is not None for t in trajectories
    )
    return Trajectory(
        qpos=np.concatenate([t.qpos for t in trajectories]),
        qvel=np.concatenate([t.qvel for t in trajectories]),
        rate_hz=first.rate_hz,
        joint_names=first.joint_names,
        model_name=first.model_name,
        site_names=first.site_names if same_sites else (),
        site_pos_m=np.concatenate([t.site_pos_m for t in trajectories]) if same_sites else None,
        contact_names=first.contact_names if same_contacts else (),
        contact=np.concatenate([t.contact for t in trajectories]) if same_contacts else None,
        terrain=first.terrain,
        clip_starts=np.asarray(starts, dtype=int),
        clip_names=tuple(clip_names),
        clip_loop=np.asarray(loops, dtype=bool),
    )


def resample(traj: Trajectory, model: mujoco.MjModel, rate_hz: float) -> Trajectory:
    """Every clip of ``traj`` resampled to about ``rate_hz`` by interpolation on the model's manifold.

    qpos is interpolated with ``mj_differentiatePos``/``mj_integratePos`` (free and ball joints
    rotate along the shortest arc), qvel linearly. Each clip keeps its timing in whole frames: a
    looping clip of period P gets ``round(P * rate_hz)`` frames spread evenly over one period (its
    last interval runs towards the first frame shifted by the clip's root displacement over a
    period); a non-looping clip keeps its first and last frame. The clip's own rate is then within
    half a frame per clip of ``rate_hz``; a one-clip result carries that exact rate, a dataset the
    requested one. Sites and contacts are dropped (they belong to the old frames); terrain is kept.
    """
    if rate_hz <= 0:
        raise InputError("resample", f"rate_hz must be > 0, got {rate_hz}")
    qpos_out, qvel_out, starts = [], [], []
    dq = np.zeros(model.nv)
    for c in range(traj.num_clips):
        clip = traj.clip(c)
        n = clip.num_frames
        loop = bool(clip.clip_loop[0])
        duration = n / clip.rate_hz if loop else (n - 1) / clip.rate_hz
        count = max(int(round(duration * rate_hz)) + (0 if loop else 1), 2)
        clip_rate_hz = count / duration if loop else (count - 1) / duration
        times = np.arange(count) / clip_rate_hz
        qpos_src, qvel_src = clip.qpos, clip.qvel
        if loop:  # one extra frame: the first, shifted by one period of root displacement
            first = qpos_src[0].copy()
            first[:2] += qpos_src[-1, :2] - qpos_src[0, :2] + qvel_src[-1, :2] / clip.rate_hz
            qpos_src = np.vstack([qpos_src, first])
            qvel_src = np.vstack([qvel_src, qvel_src[:1]])
        f = np.clip(times * clip.rate_hz, 0, qpos_src.shape[0] - 1)
        i0 = np.clip(np.floor(f).astype(int), 0, max(qpos_src.shape[0] - 2, 0))
        alpha = f - i0
        qpos = np.zeros((count, model.nq))
        for k in range(count):
            a, b = int(i0[k]), min(int(i0[k]) + 1, qpos_src.shape[0] - 1)
            mujoco.mj_differentiatePos(model, dq, 1.0, qpos_src[a], qpos_src[b])
            qpos[k] = qpos_src[a]
            mujoco.mj_integratePos(model, qpos[k], dq, float(alpha[k]))
        b = np.minimum(i0 + 1, qvel_src.shape[0] - 1)
        qvel = qvel_src[i0] * (1 - alpha[:, None]) + qvel_src[b] * alpha[:, None]
        starts.append(sum(len(q) for q in qpos_out))
        qpos_out.append(qpos)
        qvel_out.append(qvel)
    return Trajectory(
        qpos=np.concatenate(qpos_out),
        qvel=np.concatenate(qvel_out),
        rate_hz=float(clip_rate_hz if traj.num_clips == 1 else rate_hz),
        joint_names=traj.joint_names,
        model_name=traj.model_name,
        terrain=traj.terrain,
        clip_starts=np.asarray(starts, dtype=int),
        clip_names=traj.clip_names,
        clip_loop=np.asarray(traj.clip_loop, dtype=bool),
    )
