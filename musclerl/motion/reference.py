"""Reference NPZ: one trial of OpenSim inverse dynamics / static optimisation, in the layout of the
Boo_LevelWalking dataset (Gait120) that users evaluate policies against.

Keys (T kinematics frames, A angle columns, Q torque columns, G GRF columns, N_id ID rows):

==================================  ============  ==========================================================
key                                 shape, dtype  meaning
==================================  ============  ==========================================================
``subject``, ``trial``              () str        e.g. ``S011``, ``Trial01``
``step_label``                      () str        e.g. ``Step01_Step02``
``timestep``                        (T,) int      frame index 0..T-1 on the kinematics timeline
``time_sec``                        (T,) float    kinematics time, s, first frame 0.0
``source_time_sec``                 (T,) float    the same zero-based kinematics time
``original_kinematics_time_sec``    (T,) float    the kinematics file's timestamps before the shift
``id_source_time_sec``              (N_id,) float the ID output's own timestamps, shifted like the kinematics
``original_id_source_time_sec``     (N_id,) float the ID timestamps before the shift
``joint_angle``                     (T, A) float  coordinates: degrees; pelvis translations in metres
``joint_angle_columns``             (A,) str      coordinate names
``joint_torque``                    (T, Q) float  ID generalised forces / subject_weight_kg; NaN where invalid
``joint_torque_columns``            (Q,) str      e.g. ``hip_flexion_r_moment``, ``pelvis_tx_force``
``joint_torque_valid``              (T,) bool     rows where every torque column is valid
``joint_torque_column_valid``       (T, Q) bool   validity per row and column (one leg can be valid alone)
``joint_torque_sign_convention``    () str        torques follow each angle column's sign
``joint_torque_normalization``      () str        ``divided_by_subject_weight_kg``
``joint_torque_units``              () str        ``original_ID_units_per_kg`` (N*m/kg, N/kg for forces)
``subject_weight_kg``               () float      mass used for the normalisation
``subject_body_weight_n``           () float      ``subject_weight_kg * 9.80665``
``computed_grf``                    (T, G) float  GRF used by ID; force columns / body weight (N)
``computed_grf_columns``            (G,) str      column names
``computed_grf_valid``              (T,) bool     rows where ``computed_grf`` holds values
``computed_grf_normalization``      () str        how the GRF columns are scaled
``computed_grf_units``              () str
``qc_notes``                        () str        quality flags; empty when none
``source_files``                    (3,) str      kinematics, ID and GRF files it came from
==================================  ============  ==========================================================

Comparisons use ``joint_torque_column_valid`` per column: the rows of ``joint_torque_valid`` drop a
whole row when one foot is off the force plates. Files in the earlier musclerl layout (scalar
``timestep``, (T, Q) ``joint_torque_valid``, (Q,) ``joint_torque_column_valid``, (T, G)
``computed_grf_valid``, (N,) ``qc_notes``) still read, converted, with one warning line.

Companion ``<stem>_muscle_activation.sto`` / ``<stem>_muscle_force.sto`` files are ordinary
OpenSim tables on the same timeline (NaN where a leg is invalid): read them with
:func:`musclerl.motion.storage.read_storage`.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, read_npz

STRING_KEYS = (
    "subject",
    "trial",
    "step_label",
    "joint_torque_sign_convention",
    "joint_torque_normalization",
    "joint_torque_units",
    "computed_grf_normalization",
    "computed_grf_units",
    "qc_notes",
)
#: Time keys a file may lack (then filled from ``time_sec``); ``musclerl reference`` writes them all.
TIME_KEYS = (
    "source_time_sec",
    "original_kinematics_time_sec",
    "id_source_time_sec",
    "original_id_source_time_sec",
)
REQUIRED_KEYS = (
    *STRING_KEYS,
    "timestep",
    "time_sec",
    "joint_angle",
    "joint_angle_columns",
    "joint_torque",
    "joint_torque_columns",
    "joint_torque_valid",
    "joint_torque_column_valid",
    "subject_weight_kg",
    "subject_body_weight_n",
    "computed_grf",
    "computed_grf_columns",
    "computed_grf_valid",
    "source_files",
)
STANDARD_GRAVITY = 9.80665
TORQUE_SIGN_CONVENTION = "torques follow each angle column's sign convention"
TORQUE_NORMALIZATION = "divided_by_subject_weight_kg"
TORQUE_UNITS = "original_ID_units_per_kg"


class LegacyLayoutWarning(UserWarning):
    """A reference file in the earlier musclerl layout was read and converted."""


@dataclasses.dataclass(frozen=True)
class ReferenceData:
    """One reference trial (see the module docstring for every field's shape and unit).

    The time fields left None take their layout defaults when written or read
    (:meth:`time_arrays`): ``timestep`` 0..T-1, the kinematics times ``time_sec``.
    """

    subject: str
    trial: str
    step_label: str
    time_sec: np.ndarray  # (T,) s
    joint_angle: np.ndarray  # (T, A) deg / m
    joint_angle_columns: tuple[str, ...]
    joint_torque: np.ndarray  # (T, Q) per kg
    joint_torque_columns: tuple[str, ...]
    joint_torque_column_valid: np.ndarray  # (T, Q) bool
    subject_weight_kg: float
    subject_body_weight_n: float
    computed_grf: np.ndarray  # (T, G)
    computed_grf_columns: tuple[str, ...]
    computed_grf_valid: np.ndarray  # (T,) bool
    joint_torque_sign_convention: str = TORQUE_SIGN_CONVENTION
    joint_torque_normalization: str = TORQUE_NORMALIZATION
    joint_torque_units: str = TORQUE_UNITS
    computed_grf_normalization: str = "force columns divided_by_subject_body_weight_n"
    computed_grf_units: str = "BW"
    qc_notes: str = ""
    source_files: tuple[str, ...] = ("", "", "")
    timestep: np.ndarray | None = None  # (T,) int frame index
    source_time_sec: np.ndarray | None = None  # (T,)
    original_kinematics_time_sec: np.ndarray | None = None  # (T,)
    id_source_time_sec: np.ndarray | None = None  # (N_id,)
    original_id_source_time_sec: np.ndarray | None = None  # (N_id,)

    @property
    def num_frames(self) -> int:
        return int(self.time_sec.shape[0])

    @property
    def rate_hz(self) -> float:
        """Kinematics sample rate from ``time_sec`` (median interval); 0 for a single frame."""
        return 1.0 / float(np.median(np.diff(self.time_sec))) if self.num_frames > 1 else 0.0

    @property
    def joint_torque_valid(self) -> np.ndarray:
        """(T,) rows where every torque column is valid (derived from the columns, which are what
        comparisons use; a file's own row mask is checked for its shape only)."""
        return self.joint_torque_column_valid.all(axis=1)

    def time_arrays(self) -> dict[str, np.ndarray]:
        """``timestep`` and the four time keys, the ones left None filled with their defaults."""
        n = self.num_frames
        ik = self.original_kinematics_time_sec
        id_t = self.id_source_time_sec
        return {
            "timestep": np.arange(n) if self.timestep is None else self.timestep,
            "source_time_sec": self.time_sec if self.source_time_sec is None else self.source_time_sec,
            "original_kinematics_time_sec": self.time_sec if ik is None else ik,
            "id_source_time_sec": self.time_sec if id_t is None else id_t,
            "original_id_source_time_sec": (
                (self.time_sec if id_t is None else id_t)
                if self.original_id_source_time_sec is None
                else self.original_id_source_time_sec
            ),
        }

    def angle(self, name: str) -> np.ndarray:
        """Column (T,) of ``joint_angle`` (degrees, or metres for pelvis translations)."""
        return self.joint_angle[:, _index(self.joint_angle_columns, name, "joint_angle")]

    def torque(self, name: str) -> np.ndarray:
        """Column (T,) of ``joint_torque`` (per kg, NaN where invalid)."""
        return self.joint_torque[:, _index(self.joint_torque_columns, name, "joint_torque")]

    def validate(self, source: str | os.PathLike = "reference") -> None:
        """Check shapes, columns, masks and units; raise :class:`InputError` naming ``source``."""

        def need(cond: bool, problem: str) -> None:
            if not cond:
                raise InputError(source, problem)

        t = self.time_sec
        need(t.ndim == 1 and t.shape[0] >= 1, f"time_sec must be (T,), got {t.shape}")
        n = t.shape[0]
        need(bool(np.all(np.isfinite(t))), "time_sec contains NaN or inf")
        need(n < 2 or bool(np.all(np.diff(t) > 0)), "time_sec must be increasing")
        times = self.time_arrays()
        step = np.asarray(times["timestep"])
        need(step.shape == (n,), f"timestep must be (T,) = ({n},) frame indices, got shape {step.shape}")
        need(
            bool(np.all(np.isfinite(step))) and bool(np.all(step == np.round(step))),
            "timestep must hold integer frame indices",
        )
        need(n < 2 or bool(np.all(np.diff(step) > 0)), "timestep must be increasing")
        tables = (
            ("joint_angle", self.joint_angle_columns),
            ("joint_torque", self.joint_torque_columns),
            ("computed_grf", self.computed_grf_columns),
        )
        for key, cols in tables:
            arr = getattr(self, key)
            need(
                arr.ndim == 2 and arr.shape == (n, len(cols)),
                f"{key} must be (T, {len(cols)}) = ({n}, {len(cols)}) to match time_sec and "
                f"{key}_columns, got {arr.shape}",
            )
            need(len(set(cols)) == len(cols), f"{key}_columns has duplicate names")
            need(all(cols), f"{key}_columns has an empty name")
        need(bool(np.all(np.isfinite(self.joint_angle))), "joint_angle contains NaN or inf")
        cv = self.joint_torque_column_valid
        need(
            cv.shape == self.joint_torque.shape and cv.dtype == bool,
            f"joint_torque_column_valid must be a bool array of shape {self.joint_torque.shape} (T, Q), "
            f"got {cv.dtype} {cv.shape}",
        )
        need(
            bool(np.all(np.isfinite(self.joint_torque[cv]))),
            "joint_torque has NaN/inf where joint_torque_column_valid is True",
        )
        gv = self.computed_grf_valid
        need(
            gv.shape == (n,) and gv.dtype == bool,
            f"computed_grf_valid must be (T,) = ({n},) bool, got {gv.dtype} {gv.shape}",
        )
        # a valid row holds values; single columns may be NaN (a plate's COP while nothing is on it)
        need(
            self.computed_grf.shape[1] == 0 or not bool(np.any(np.isnan(self.computed_grf[gv]).all(axis=1))),
            "computed_grf is all NaN on a row where computed_grf_valid is True",
        )
        need(not bool(np.any(np.isinf(self.computed_grf))), "computed_grf contains inf")
        need(
            np.isfinite(self.subject_weight_kg) and self.subject_weight_kg > 0,
            f"subject_weight_kg must be > 0, got {self.subject_weight_kg}",
        )
        need(
            np.isfinite(self.subject_body_weight_n) and self.subject_body_weight_n > 0,
            f"subject_body_weight_n must be > 0, got {self.subject_body_weight_n}",
        )
        g = self.subject_body_weight_n / self.subject_weight_kg
        need(
            9.0 < g < 10.5,
            f"subject_body_weight_n / subject_weight_kg = {g:.3g} m/s^2, not gravity: "
            "is the weight in N and the mass in kg?",
        )
        for key in ("source_time_sec", "original_kinematics_time_sec"):
            arr = np.asarray(times[key])
            need(arr.shape == (n,), f"{key} must be (T,) = ({n},), got {arr.shape}")
        id_t, id_orig = (
            np.asarray(times["id_source_time_sec"]),
            np.asarray(times["original_id_source_time_sec"]),
        )
        need(id_t.ndim == 1, f"id_source_time_sec must be 1-D (the ID output's rows), got {id_t.shape}")
        need(
            id_orig.shape == id_t.shape,
            f"original_id_source_time_sec must match id_source_time_sec {id_t.shape}, got {id_orig.shape}",
        )


def side_of(name: str) -> str | None:
    """``"r"`` / ``"l"`` for a right / left column (``knee_angle_r_moment``, ``gasmed_l``), else None."""
    for side in ("r", "l"):
        if name.endswith(f"_{side}") or f"_{side}_" in name:
            return side
    return None


def muscle_rows_valid(ref: ReferenceData, muscles: tuple[str, ...] | list[str]) -> np.ndarray:
    """(T, M) bool: a muscle's rows are valid where every torque column of its leg is valid (a
    muscle of neither side: where every torque column is valid). For the ``.sto`` companions,
    NaN where a leg is invalid."""
    if not len(muscles):
        return np.ones((ref.num_frames, 0), dtype=bool)
    sides = [side_of(c) for c in ref.joint_torque_columns]
    rows = {}
    for side in ("r", "l", None):
        mine = [k for k, s in enumerate(sides) if s == side or side is None]
        rows[side] = (
            ref.joint_torque_column_valid[:, mine].all(axis=1) if mine else np.ones(ref.num_frames, bool)
        )
    return np.stack([rows[side_of(m)] for m in muscles], axis=1)


def _index(columns: tuple[str, ...], name: str, what: str) -> int:
    if name not in columns:
        raise InputError(what, f"no column '{name}'")
    return columns.index(name)


def read_reference(path: str | os.PathLike) -> ReferenceData:
    """Read and validate a reference NPZ; any problem is an :class:`InputError` naming ``path``.

    A file in the earlier musclerl layout is converted (one warning naming the keys)."""
    path = Path(path)
    data = read_npz(path)
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise InputError(path, f"not a reference NPZ: missing key(s) {', '.join(missing[:6])}")
    legacy: list[str] = []

    def floats(key: str) -> np.ndarray:
        try:
            return np.asarray(data[key], dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(path, f"'{key}' is not numeric") from None

    def scalar(key: str) -> float:
        arr = floats(key)
        if arr.size != 1:
            raise InputError(path, f"'{key}' must be a single number, got shape {arr.shape}")
        return float(arr.reshape(()))

    def strings(key: str) -> tuple[str, ...]:
        arr = np.asarray(data[key])
        if arr.size and arr.dtype.kind not in "US":
            raise InputError(path, f"'{key}' must be strings, got {arr.dtype}")
        return tuple(s.decode() if isinstance(s, bytes) else str(s) for s in np.atleast_1d(arr).reshape(-1))

    def text(key: str) -> str:
        items = strings(key)
        if np.asarray(data[key]).ndim == 0:
            return items[0]
        if key == "qc_notes":  # the earlier layout: one note per entry
            legacy.append("(N,) qc_notes")
            return "; ".join(items)
        if len(items) != 1:
            raise InputError(path, f"'{key}' must be a single string, got {len(items)}")
        return items[0]

    def bools(key: str) -> np.ndarray:
        arr = np.asarray(data[key])
        if arr.dtype != bool:
            if arr.dtype.kind in "iu" and np.all((arr == 0) | (arr == 1)):
                return arr.astype(bool)
            raise InputError(path, f"'{key}' must be a bool mask, got {arr.dtype}")
        return arr

    time_sec = floats("time_sec")
    torque = floats("joint_torque")
    grf = floats("computed_grf")
    n = time_sec.shape[0] if time_sec.ndim == 1 else 0
    step = floats("timestep")
    if step.ndim == 0:
        legacy.append("scalar timestep")
        step = np.arange(n)
    row_valid, col_valid = bools("joint_torque_valid"), bools("joint_torque_column_valid")
    if col_valid.ndim == 1 and row_valid.ndim == 2:
        legacy.append("(T, Q) joint_torque_valid and (Q,) joint_torque_column_valid")
        if col_valid.shape[0] != row_valid.shape[1]:
            raise InputError(
                path, f"joint_torque_column_valid {col_valid.shape} does not match {row_valid.shape}"
            )
        col_valid = row_valid & col_valid[None, :]
    elif row_valid.shape != (n,):
        raise InputError(
            path, f"joint_torque_valid must be (T,) = ({n},) bool rows, got shape {row_valid.shape}"
        )
    grf_valid = bools("computed_grf_valid")
    if grf_valid.ndim == 2:
        legacy.append("(T, G) computed_grf_valid")
        grf_valid = grf_valid.all(axis=1)
    qc_notes = text("qc_notes")
    ref = ReferenceData(
        **{k: text(k) for k in STRING_KEYS if k != "qc_notes"},
        qc_notes=qc_notes,
        timestep=step.astype(np.int64) if np.all(step == np.round(step)) else step,
        time_sec=time_sec,
        joint_angle=floats("joint_angle"),
        joint_angle_columns=strings("joint_angle_columns"),
        joint_torque=torque,
        joint_torque_columns=strings("joint_torque_columns"),
        joint_torque_column_valid=col_valid,
        subject_weight_kg=scalar("subject_weight_kg"),
        subject_body_weight_n=scalar("subject_body_weight_n"),
        computed_grf=grf,
        computed_grf_columns=strings("computed_grf_columns"),
        computed_grf_valid=grf_valid,
        source_files=strings("source_files"),
        **{k: floats(k) for k in TIME_KEYS if k in data},
    )
    ref.validate(path)
    if legacy:
        warnings.warn(
            f"{path}: earlier musclerl reference layout ({', '.join(legacy)}); read and converted "
            "(write it again with `musclerl reference` for the current layout)",
            LegacyLayoutWarning,
            stacklevel=2,
        )
    return ref


def write_reference(path: str | os.PathLike, ref: ReferenceData) -> None:
    """Validate ``ref`` and write every key of the layout (atomically: no partial file on failure)."""
    path = Path(path)
    if path.suffix != ".npz":
        raise InputError(path, "reference files must end in .npz")
    ref.validate(path)
    torque = np.where(ref.joint_torque_column_valid, ref.joint_torque, np.nan)
    arrays: dict[str, np.ndarray] = {k: np.array(getattr(ref, k), dtype=str) for k in STRING_KEYS}
    arrays.update({k: np.asarray(v, dtype=np.float64) for k, v in ref.time_arrays().items()})
    arrays.update(
        timestep=np.asarray(ref.time_arrays()["timestep"], dtype=np.int64),
        time_sec=np.asarray(ref.time_sec, dtype=np.float64),
        joint_angle=np.asarray(ref.joint_angle, dtype=np.float64),
        joint_angle_columns=np.array(ref.joint_angle_columns, dtype=str),
        joint_torque=torque.astype(np.float64),
        joint_torque_columns=np.array(ref.joint_torque_columns, dtype=str),
        joint_torque_valid=np.asarray(ref.joint_torque_valid, dtype=bool),
        joint_torque_column_valid=np.asarray(ref.joint_torque_column_valid, dtype=bool),
        subject_weight_kg=np.array(float(ref.subject_weight_kg)),
        subject_body_weight_n=np.array(float(ref.subject_body_weight_n)),
        computed_grf=np.asarray(ref.computed_grf, dtype=np.float64),
        computed_grf_columns=np.array(ref.computed_grf_columns, dtype=str),
        computed_grf_valid=np.asarray(ref.computed_grf_valid, dtype=bool),
        source_files=np.array(ref.source_files, dtype=str).reshape(-1),
    )
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, **arrays)
