"""Reference NPZ: policy-reference data exported from OpenSim inverse dynamics / static optimisation.

Schema (T frames, A angle columns, Q torque columns, G force columns):

==================================  ============  ==========================================================
key                                 shape, dtype  meaning
==================================  ============  ==========================================================
``subject``, ``trial``              () str        identifiers
``step_label``                      () str        which step/stride/cycle this is (free text)
``timestep``                        () float      nominal sample interval, s
``time_sec``                        (T,) float    sample times, s, increasing
``joint_angle``                     (T, A) float  coordinates: degrees, except pelvis translations (m)
``joint_angle_columns``             (A,) str      coordinate names (OpenSim / myolegs joint names)
``joint_torque``                    (T, Q) float  ID moments / subject mass, N*m/kg; NaN where invalid
``joint_torque_columns``            (Q,) str      moment names
``joint_torque_valid``              (T, Q) bool   where ``joint_torque`` is usable (finite)
``joint_torque_column_valid``       (Q,) bool     columns usable at all (False -> no valid sample)
``joint_torque_sign_convention``    () str        e.g. "OpenSim: positive moment increases the coordinate"
``joint_torque_normalization``      () str        e.g. "divided by subject_weight_kg"
``joint_torque_units``              () str        e.g. "N*m/kg"
``subject_weight_kg``               () float      body mass, kg
``subject_body_weight_n``           () float      body weight, N (mass x g)
``computed_grf``                    (T, G) float  ground reaction forces, normalised; NaN where invalid
``computed_grf_columns``            (G,) str      force names
``computed_grf_valid``              (T, G) bool   where ``computed_grf`` is usable ((T,) read as all)
``computed_grf_normalization``      () str        e.g. "divided by subject_body_weight_n"
``computed_grf_units``              () str        e.g. "BW"
``qc_notes``                        (N,) str      quality-control notes (may be empty)
``source_files``                    (N,) str      files the data came from
``source_time_sec``                 (T,) float    optional: source time of each sample
``original_kinematics_time_sec``    (K,) float    optional: time column of the original kinematics
``id_source_time_sec``              (T,) float    optional: ID time matched to each sample
``original_id_source_time_sec``     (I,) float    optional: time column of the original ID output
==================================  ============  ==========================================================

Companion ``*_muscle_activation.sto`` / ``*_muscle_force.sto`` files are ordinary OpenSim tables:
read them with :func:`musclerl.motion.storage.read_storage`.
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
)
OPTIONAL_TIME_KEYS = (
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
    "qc_notes",
    "source_files",
)
STANDARD_GRAVITY = 9.80665


@dataclasses.dataclass(frozen=True)
class ReferenceData:
    """One reference trial (see the module docstring for every field's shape and unit)."""

    subject: str
    trial: str
    step_label: str
    timestep: float
    time_sec: np.ndarray  # (T,)
    joint_angle: np.ndarray  # (T, A)
    joint_angle_columns: tuple[str, ...]
    joint_torque: np.ndarray  # (T, Q) N*m/kg
    joint_torque_columns: tuple[str, ...]
    joint_torque_valid: np.ndarray  # (T, Q) bool
    joint_torque_column_valid: np.ndarray  # (Q,) bool
    joint_torque_sign_convention: str
    joint_torque_normalization: str
    joint_torque_units: str
    subject_weight_kg: float
    subject_body_weight_n: float
    computed_grf: np.ndarray  # (T, G)
    computed_grf_columns: tuple[str, ...]
    computed_grf_valid: np.ndarray  # (T, G) bool
    computed_grf_normalization: str
    computed_grf_units: str
    qc_notes: tuple[str, ...] = ()
    source_files: tuple[str, ...] = ()
    source_time_sec: np.ndarray | None = None
    original_kinematics_time_sec: np.ndarray | None = None
    id_source_time_sec: np.ndarray | None = None
    original_id_source_time_sec: np.ndarray | None = None

    @property
    def num_frames(self) -> int:
        return int(self.time_sec.shape[0])

    def angle(self, name: str) -> np.ndarray:
        """Column (T,) of ``joint_angle`` (degrees, or metres for pelvis translations)."""
        return self.joint_angle[:, _index(self.joint_angle_columns, name, "joint_angle")]

    def torque(self, name: str) -> np.ndarray:
        """Column (T,) of ``joint_torque`` (N*m/kg, NaN where invalid)."""
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
        need(np.isfinite(self.timestep) and self.timestep > 0, f"timestep must be > 0, got {self.timestep}")
        if n > 1:
            median_dt = float(np.median(np.diff(t)))
            if abs(median_dt - self.timestep) > 0.05 * self.timestep:
                warnings.warn(
                    f"{source}: timestep {self.timestep:g} s but time_sec steps by {median_dt:g} s",
                    stacklevel=3,
                )
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
        self._check_mask("joint_torque", self.joint_torque, self.joint_torque_valid, need)
        self._check_mask("computed_grf", self.computed_grf, self.computed_grf_valid, need)
        cv = self.joint_torque_column_valid
        need(
            cv.shape == (len(self.joint_torque_columns),) and cv.dtype == bool,
            f"joint_torque_column_valid must be ({len(self.joint_torque_columns)},) bool, "
            f"got {cv.shape} {cv.dtype}",
        )
        need(
            bool(np.all(cv | ~self.joint_torque_valid.any(axis=0))),
            "joint_torque_column_valid is False for a column that has valid samples",
        )
        need(
            bool(np.all(~cv | self.joint_torque_valid.any(axis=0))),
            "joint_torque_column_valid is True for a column with no valid sample",
        )
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
        for key in ("source_time_sec", "id_source_time_sec"):
            arr = getattr(self, key)
            need(
                arr is None or arr.shape == (n,),
                f"{key} must be (T,) = ({n},), got {None if arr is None else arr.shape}",
            )
        for key in ("original_kinematics_time_sec", "original_id_source_time_sec"):
            arr = getattr(self, key)
            need(arr is None or arr.ndim == 1, f"{key} must be 1-D")

    @staticmethod
    def _check_mask(key: str, values: np.ndarray, valid: np.ndarray, need) -> None:
        need(
            valid.shape == values.shape and valid.dtype == bool,
            f"{key}_valid must be a bool array of shape {values.shape}, got {valid.dtype} {valid.shape}",
        )
        need(bool(np.all(np.isfinite(values[valid]))), f"{key} has NaN/inf where {key}_valid is True")
        need(bool(np.all(np.isnan(values[~valid]))), f"{key} must be NaN where {key}_valid is False")


def _index(columns: tuple[str, ...], name: str, what: str) -> int:
    if name not in columns:
        raise InputError(what, f"no column '{name}'")
    return columns.index(name)


def read_reference(path: str | os.PathLike) -> ReferenceData:
    """Read and validate a reference NPZ; any problem is an :class:`InputError` naming ``path``."""
    path = Path(path)
    data = read_npz(path)
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise InputError(path, f"not a reference NPZ: missing key(s) {', '.join(missing[:6])}")

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
        if arr.dtype.kind not in "US":
            raise InputError(path, f"'{key}' must be strings, got {arr.dtype}")
        return tuple(s.decode() if isinstance(s, bytes) else str(s) for s in np.atleast_1d(arr).reshape(-1))

    def bools(key: str) -> np.ndarray:
        arr = np.asarray(data[key])
        if arr.dtype != bool:
            if arr.dtype.kind in "iu" and np.all((arr == 0) | (arr == 1)):
                return arr.astype(bool)
            raise InputError(path, f"'{key}' must be a bool mask, got {arr.dtype}")
        return arr

    time_sec = floats("time_sec")
    grf = floats("computed_grf")
    grf_valid = bools("computed_grf_valid")
    if grf_valid.ndim == 1 and grf.ndim == 2 and grf_valid.shape[0] == grf.shape[0]:
        grf_valid = np.repeat(grf_valid[:, None], grf.shape[1], axis=1)
    optional = {k: floats(k) for k in OPTIONAL_TIME_KEYS if k in data}
    ref = ReferenceData(
        **{k: strings(k)[0] if strings(k) else "" for k in STRING_KEYS},
        timestep=scalar("timestep"),
        time_sec=time_sec,
        joint_angle=floats("joint_angle"),
        joint_angle_columns=strings("joint_angle_columns"),
        joint_torque=floats("joint_torque"),
        joint_torque_columns=strings("joint_torque_columns"),
        joint_torque_valid=bools("joint_torque_valid"),
        joint_torque_column_valid=bools("joint_torque_column_valid").reshape(-1),
        subject_weight_kg=scalar("subject_weight_kg"),
        subject_body_weight_n=scalar("subject_body_weight_n"),
        computed_grf=grf,
        computed_grf_columns=strings("computed_grf_columns"),
        computed_grf_valid=grf_valid,
        qc_notes=strings("qc_notes") if np.asarray(data["qc_notes"]).size else (),
        source_files=strings("source_files") if np.asarray(data["source_files"]).size else (),
        **optional,
    )
    ref.validate(path)
    return ref


def write_reference(path: str | os.PathLike, ref: ReferenceData) -> None:
    """Validate ``ref`` and write it in the schema above (atomically: no partial file on failure)."""
    path = Path(path)
    ref.validate(path)
    arrays: dict[str, np.ndarray] = {k: np.array(getattr(ref, k), dtype=str) for k in STRING_KEYS}
    arrays.update(
        timestep=np.array(float(ref.timestep)),
        time_sec=np.asarray(ref.time_sec, dtype=np.float64),
        joint_angle=np.asarray(ref.joint_angle, dtype=np.float64),
        joint_angle_columns=np.array(ref.joint_angle_columns, dtype=str),
        joint_torque=np.asarray(ref.joint_torque, dtype=np.float64),
        joint_torque_columns=np.array(ref.joint_torque_columns, dtype=str),
        joint_torque_valid=np.asarray(ref.joint_torque_valid, dtype=bool),
        joint_torque_column_valid=np.asarray(ref.joint_torque_column_valid, dtype=bool),
        subject_weight_kg=np.array(float(ref.subject_weight_kg)),
        subject_body_weight_n=np.array(float(ref.subject_body_weight_n)),
        computed_grf=np.asarray(ref.computed_grf, dtype=np.float64),
        computed_grf_columns=np.array(ref.computed_grf_columns, dtype=str),
        computed_grf_valid=np.asarray(ref.computed_grf_valid, dtype=bool),
        qc_notes=np.array(ref.qc_notes, dtype=str).reshape(-1),
        source_files=np.array(ref.source_files, dtype=str).reshape(-1),
    )
    for key in OPTIONAL_TIME_KEYS:
        value = getattr(ref, key)
        if value is not None:
            arrays[key] = np.asarray(value, dtype=np.float64)
    if path.suffix != ".npz":
        raise InputError(path, "reference files must end in .npz")
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, **arrays)
