"""C3D motion-capture files: markers, force plates and events, read with ezc3d.

What the reader takes from a file (``ezc3d.c3d(path, extract_forceplat_data=True)``):

* **Markers**: the ``POINT`` trajectories named by ``POINT:LABELS`` (``LABELS2``... appended),
  except the modelled outputs Vicon stores as points too (the labels listed in ``POINT:ANGLES``,
  ``FORCES``, ``MOMENTS``, ``POWERS``, ``REACTIONS``, ``SCALARS``). A ``subject:`` prefix is
  dropped from a label. ``POINT:UNITS`` ``mm``, ``cm`` or ``m`` become metres; a sample whose
  residual is negative (the C3D mark of a gap) or whose three coordinates are all zero is a gap
  (NaN).
* **Force plates** (``FORCE_PLATFORM`` types 2, 3 and 4, with their calibration matrix, corners
  and origin; ezc3d computes the loads): per plate and analog sample the force the plate exerts
  on the subject (N, vertical component positive when someone stands on it), the centre of
  pressure on the plate surface (m) and the free moment about the vertical through it (N·m).
* **Events** (``EVENT:LABELS``, ``CONTEXTS``, ``TIMES`` as minutes and seconds), when present.

Times: marker frame ``i`` is at ``(first_frame + i) / POINT:RATE`` seconds, ``first_frame`` the
header's first frame counted from 0 (so events, which C3D times from the start of the capture,
line up); analog sample ``j`` at ``first_frame / POINT:RATE + j / ANALOG:RATE``.

Frames: the lab's axes are turned into MuJoCo's Z-up world by the rotation the file's
``POINT:X_SCREEN`` / ``POINT:Y_SCREEN`` describe: world +x is the lab's ``X_SCREEN`` axis, world +z
its ``Y_SCREEN`` axis (the one pointing up on the screen), world +y = z × x (:func:`lab_to_world`).
A Vicon lab (``+X``, ``+Z``, the usual C3D) is kept as it is; a Y-up lab (``+X``, ``+Y``) gets
``(x, y, z)_world = (x, -z, y)_lab`` as a Y-up ``.trc`` does. Missing parameters mean ``+X``/``+Z``.
OpenSim's ``C3DFileAdapter`` applies no rotation (its tables are the lab frame, mm); a ``.trc``
written from our markers (:func:`musclerl.motion.trc.write_trc`) is OpenSim's Y-up frame, which for
a Z-up lab is the -90 degree rotation about X OpenSim's examples apply to C3D markers.

Refused with :class:`InputError` (one line naming the file): not a C3D file, a file shorter than
its header declares (cut while copied: ezc3d would read the frames present without a word), no
markers, unknown units, a non-positive rate, infinite or absurd coordinates, plates ezc3d cannot
compute.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import warnings
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import existing_file
from musclerl.motion.trc import MAX_ABS_M, MAX_SPAN_M, MIN_SPAN_M, UNITS, MarkerData

#: ``POINT`` groups listing the labels of modelled outputs (not markers) that Vicon stores as points.
NON_MARKER_GROUPS = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "REACTIONS", "SCALARS")
#: Axis names of ``POINT:X_SCREEN`` / ``Y_SCREEN`` -> unit vector in the lab frame.
SCREEN_AXES = {
    "+X": (1.0, 0.0, 0.0),
    "-X": (-1.0, 0.0, 0.0),
    "+Y": (0.0, 1.0, 0.0),
    "-Y": (0.0, -1.0, 0.0),
    "+Z": (0.0, 0.0, 1.0),
    "-Z": (0.0, 0.0, -1.0),
}
#: Vertical force (N) below which a plate's centre of pressure and free moment are NaN (no load
#: to locate: ezc3d divides by the vertical force).
UNLOADED_N = 1.0e-6
#: Plate units ezc3d reports -> SI factor.
_LENGTH_UNITS = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}
_MOMENT_UNITS = {"Nmm": 1e-3, "Nm": 1.0}
#: First byte of the parameter section's processor type: Intel, DEC (little-endian), MIPS (big).
_PROCESSORS = {84: "<", 85: "<", 86: ">"}
#: Processor type -> the header byte holding the sign bit of POINT:SCALE (bytes 12-15; DEC floats
#: swap their 16-bit halves, MIPS is big-endian).
_SIGN_BYTE = {84: 15, 85: 13, 86: 12}


@dataclasses.dataclass(frozen=True)
class ForcePlates:
    """The loads of P force plates at T analog samples, in MuJoCo's Z-up world (the markers' frame).

    ``force_n`` (T, P, 3): the force the plate exerts on the subject; ``cop_m`` (T, P, 3): the
    centre of pressure on the plate surface (unloaded plates give noise, see
    :mod:`musclerl.motion.foot_loads`; NaN where the vertical force is 0); ``free_moment_nm``
    (T, P, 3): the free moment about the vertical through the centre of pressure (only its vertical
    component is non-zero; NaN with the centre of pressure);
    ``corners_m`` (P, 4, 3); ``origin_m`` (P, 3) the plate origin (sensor centre, below the surface);
    ``time_s`` (T,) at ``rate_hz``; ``types`` (P,) the ``FORCE_PLATFORM:TYPE`` of each plate.
    """

    force_n: np.ndarray
    cop_m: np.ndarray
    free_moment_nm: np.ndarray
    corners_m: np.ndarray
    origin_m: np.ndarray
    time_s: np.ndarray
    rate_hz: float
    types: tuple[int, ...]

    @property
    def count(self) -> int:
        return int(self.force_n.shape[1])


@dataclasses.dataclass(frozen=True)
class C3DEvent:
    """One ``EVENT`` entry: ``label`` (e.g. 'Foot Strike'), ``context`` ('Left', 'Right', ...), time (s)."""

    label: str
    context: str
    time_s: float


@dataclasses.dataclass(frozen=True)
class C3DTrial:
    """Everything :func:`read_c3d` takes from one file. ``lab_to_world`` (3, 3): ``p_world =
    lab_to_world @ p_lab`` (module docstring); ``plates.count`` is 0 without force plates."""

    markers: MarkerData
    plates: ForcePlates
    events: tuple[C3DEvent, ...]
    lab_to_world: np.ndarray


def lab_to_world(x_screen: str = "+X", y_screen: str = "+Z", source: str | os.PathLike = "C3D") -> np.ndarray:
    """The rotation (3, 3) from the lab to MuJoCo's world: rows are the world axes in lab
    coordinates, x = ``x_screen``, z = ``y_screen`` (up), y = z × x."""
    axes = [SCREEN_AXES.get(a.strip().upper()) for a in (x_screen, y_screen)]
    if axes[0] is None or axes[1] is None or abs(np.dot(axes[0], axes[1])) > 0.5:
        raise InputError(source, f"POINT:X_SCREEN '{x_screen}' / Y_SCREEN '{y_screen}' do not name two axes")
    x, z = np.asarray(axes[0]), np.asarray(axes[1])
    return np.stack([x, np.cross(z, x), z])


def read_c3d_markers(path: str | os.PathLike) -> MarkerData:
    """The markers of a C3D file (the ``markers`` reader of :data:`~musclerl.motion.readers.READERS`)."""
    return read_c3d(path, plates=False).markers


def read_c3d(path: str | os.PathLike, plates: bool = True) -> C3DTrial:
    """Markers, force plates (when ``plates``) and events of a C3D file; see the module docstring."""
    path = existing_file(path, "C3D file")
    declared_frames = _declared_frames(path)
    import ezc3d

    try:
        c3d = ezc3d.c3d(str(path), extract_forceplat_data=plates)
    except Exception as err:  # ezc3d raises OSError/RuntimeError/ValueError with its own text
        raise InputError(path, f"ezc3d cannot read it: {_first_line(err)}") from None
    params, data, header = c3d["parameters"], c3d["data"], c3d["header"]
    points = np.asarray(data["points"], dtype=float)  # (4, M, T)
    n_frames = int(points.shape[2]) if points.ndim == 3 else 0
    if declared_frames is not None and n_frames < declared_frames:
        raise InputError(
            path,
            f"the header declares {declared_frames} frames but the file holds {n_frames}: "
            "truncated while copied?",
        )
    rotation = lab_to_world(
        _text(params, "POINT", "X_SCREEN", "+X"), _text(params, "POINT", "Y_SCREEN", "+Z"), path
    )
    rate_hz = float(header["points"]["frame_rate"])
    if not np.isfinite(rate_hz) or rate_hz <= 0:
        raise InputError(path, f"POINT:RATE is {rate_hz:g}; a frame rate must be positive")
    first_frame = int(header["points"]["first_frame"])
    markers = _markers(path, params, points, data["meta_points"]["residuals"], rotation, rate_hz, first_frame)
    force_plates = _plates(path, c3d, rotation, rate_hz, first_frame) if plates else _no_plates(rate_hz)
    return C3DTrial(markers, force_plates, _events(path, params), rotation)


def c3d_details(path: str | os.PathLike) -> dict:
    """What ``musclerl info`` adds for a C3D file: its force plates and events."""
    trial = read_c3d(path)
    plates = trial.plates
    vertical = plates.force_n[..., 2] if plates.count else np.zeros((0, 0))
    return {
        "force_plates": plates.count,
        "plate_types": list(plates.types),
        "analog_rate_hz": plates.rate_hz,
        "plate_peak_vertical_n": [round(float(v), 1) for v in vertical.max(axis=0)] if plates.count else [],
        "events": [f"{e.context} {e.label} {e.time_s:.3f} s".strip() for e in trial.events],
    }


def _first_line(err: Exception) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


def _declared_frames(path: Path) -> int | None:
    """Frames the header declares (last - first + 1), or None when the 16-bit field overflowed.

    :class:`InputError` when the 512-byte header and the parameter section are not C3D's, or the
    file ends before the parameter blocks or the frames its header declares (ezc3d reads a file cut
    inside its data as the frames present, and can stall on one cut inside its parameters)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(512)
        if len(head) < 512:
            raise InputError(path, f"not a C3D file or truncated: {len(head)} bytes, a C3D header has 512")
        if head[1] != 0x50:
            raise InputError(path, "not a C3D file (no C3D header: byte 2 must be 0x50)")
        param_offset = (head[0] - 1) * 512
        if head[0] < 2 or param_offset + 4 > size:
            raise InputError(
                path,
                f"not a C3D file or truncated (parameter section at block {head[0]}, "
                f"the file has {size} bytes)",
            )
        f.seek(param_offset)
        _, _, param_blocks, processor = f.read(4)
    order = _PROCESSORS.get(processor)
    if order is None:
        raise InputError(path, f"not a C3D file (processor type {processor}, expected 84, 85 or 86)")
    n_points, n_analog, first, last = struct.unpack(order + "HHHH", head[2:10])
    (data_block,) = struct.unpack(order + "H", head[16:18])
    floats = head[_SIGN_BYTE[processor]] & 0x80  # a negative POINT:SCALE: 4-byte floats, else 2-byte ints
    frames = None if last == 0xFFFF or last < first else last - first + 1
    data_bytes = (frames or 0) * (4 * n_points + n_analog) * (4 if floats else 2)
    needed = max(param_offset + 512 * param_blocks, (data_block - 1) * 512 + data_bytes)
    if size < needed:
        raise InputError(
            path,
            f"truncated while copied? the header declares {512 * param_blocks} bytes of parameters and "
            f"{frames} frames of data ending at byte {needed}, the file has {size} bytes",
        )
    return frames


def _param(params: dict, group: str, name: str):
    return params.get(group, {}).get(name, {}).get("value")


def _text(params: dict, group: str, name: str, default: str) -> str:
    value = _param(params, group, name)
    return str(value[0]).strip() if value is not None and len(value) and str(value[0]).strip() else default


def _labels(params: dict, n_points: int, path: Path) -> list[str]:
    """``POINT:LABELS`` + ``LABELS2``..., without a ``subject:`` prefix; one per point."""
    labels = list(_param(params, "POINT", "LABELS") or [])
    k = 2
    while _param(params, "POINT", f"LABELS{k}") is not None:
        labels += list(_param(params, "POINT", f"LABELS{k}"))
        k += 1
    if len(labels) < n_points:
        raise InputError(path, f"POINT:LABELS names {len(labels)} of the {n_points} points")
    return [str(label).strip().rsplit(":", 1)[-1] for label in labels[:n_points]]


def _markers(
    path: Path,
    params: dict,
    points: np.ndarray,
    residuals: np.ndarray,
    rotation: np.ndarray,
    rate_hz: float,
    first_frame: int,
) -> MarkerData:
    """MarkerData (T, M, 3) in metres, world frame, from ezc3d's points (4, M, T) and residuals (1, M, T)."""
    n_points = int(points.shape[1]) if points.ndim == 3 else 0
    labels = _labels(params, n_points, path) if n_points else []
    modelled = {str(v).strip() for g in NON_MARKER_GROUPS for v in (_param(params, "POINT", g) or [])}
    keep = [m for m, label in enumerate(labels) if label and label not in modelled]
    if not keep or points.shape[2] == 0:
        raise InputError(
            path, f"no marker trajectories ({n_points} points, {points.shape[2] if n_points else 0} frames)"
        )
    names = tuple(labels[m] for m in keep)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(path, f"duplicate marker labels: {', '.join(dup[:5])}")
    units_text = _text(params, "POINT", "UNITS", "")
    if units_text.lower() not in UNITS:
        raise InputError(path, f"unknown POINT:UNITS '{units_text}' (expected mm, cm or m)")
    units_in, scale = UNITS[units_text.lower()]
    xyz = points[:3, keep].transpose(2, 1, 0) * scale  # (T, M, 3), lab frame
    if np.isinf(xyz).any():
        t, m, _ = np.argwhere(np.isinf(xyz))[0]
        raise InputError(path, f"frame {t + 1}: marker '{names[m]}' has an infinite coordinate")
    gap = np.asarray(residuals)[0, keep].T < 0 if np.size(residuals) else np.zeros(xyz.shape[:2], bool)
    gap |= np.all(xyz == 0.0, axis=-1) | np.any(np.isnan(xyz), axis=-1)
    xyz[gap] = np.nan
    if gap.all():
        raise InputError(path, "every marker is missing in every frame (negative residuals, zeros or NaN)")
    far = np.nanmax(np.abs(xyz))
    if far > MAX_ABS_M:
        raise InputError(
            path, f"a marker is {far:.3g} m from the origin (POINT:UNITS '{units_text}'): corrupt values"
        )
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # frames with every marker missing
        span_m = np.nanmedian(np.max(np.nanmax(xyz, axis=1) - np.nanmin(xyz, axis=1), axis=-1))
    if span_m > MAX_SPAN_M or (span_m < MIN_SPAN_M and len(names) >= 3):
        raise InputError(
            path,
            f"the markers of one frame span {span_m:.3g} m (median) with POINT:UNITS "
            f"'{units_text}': a body spans {MIN_SPAN_M:g}-{MAX_SPAN_M:g} m, so the values are in other units",
        )
    empty = [names[m] for m in range(len(names)) if gap[:, m].all()]
    if empty:
        warnings.warn(f"{path}: markers with no data in any frame: {', '.join(empty[:8])}", stacklevel=3)
    time_s = (first_frame + np.arange(xyz.shape[0])) / rate_hz
    header = {
        "DataRate": f"{rate_hz:g}",
        "OrigDataStartFrame": str(first_frame + 1),
        "LabFrame": f"X_SCREEN {_text(params, 'POINT', 'X_SCREEN', '+X')}, Y_SCREEN "
        f"{_text(params, 'POINT', 'Y_SCREEN', '+Z')} (turned Z-up)",
    }
    return MarkerData(names, xyz @ rotation.T, time_s, rate_hz, units_in, str(path), True, header)


def _no_plates(rate_hz: float) -> ForcePlates:
    empty = np.zeros((0, 0, 3))
    return ForcePlates(empty, empty, empty, np.zeros((0, 4, 3)), np.zeros((0, 3)), np.zeros(0), rate_hz, ())


def _plates(path: Path, c3d, rotation: np.ndarray, point_rate_hz: float, first_frame: int) -> ForcePlates:
    """ezc3d's per-plate loads (global frame, plate units) -> :class:`ForcePlates` in SI, world frame."""
    platforms = c3d["data"].get("platform", [])
    rate_hz = float(c3d["header"]["analogs"]["frame_rate"])
    if not platforms:
        return _no_plates(rate_hz if rate_hz > 0 else point_rate_hz)
    if not np.isfinite(rate_hz) or rate_hz <= 0:
        raise InputError(path, f"ANALOG:RATE is {rate_hz:g} with {len(platforms)} force plates")
    arrays: dict[str, list[np.ndarray]] = {"force": [], "cop": [], "free": [], "corners": [], "origin": []}
    for k, plate in enumerate(platforms):
        length = _LENGTH_UNITS.get(str(plate["unit_position"]).strip())
        moment = _MOMENT_UNITS.get(str(plate["unit_moment"]).strip())
        if length is None or moment is None or str(plate["unit_force"]).strip() != "N":
            units = f"{plate['unit_force']}, {plate['unit_moment']}, {plate['unit_position']}"
            raise InputError(path, f"force plate {k + 1}: units ({units}) are not N, N·mm or N·m, mm or m")
        for key, src, factor in (
            ("force", "force", 1.0),
            ("cop", "center_of_pressure", length),
            ("free", "Tz", moment),
        ):
            values = np.asarray(plate[src], dtype=float).T * factor  # (T, 3) lab frame
            if key != "force":  # a zero vertical force makes ezc3d's COP and free moment 0/0
                values[np.abs(arrays["force"][-1][:, 2]) < UNLOADED_N] = np.nan
            if not np.all(np.isfinite(values) | (np.isnan(values) & (key != "force"))):
                raise InputError(path, f"force plate {k + 1}: non-finite {src.replace('_', ' ')} values")
            arrays[key].append(values @ rotation.T)
        arrays["corners"].append(np.asarray(plate["corners"], dtype=float).T * length @ rotation.T)
        arrays["origin"].append(np.asarray(plate["origin"], dtype=float) * length @ rotation.T)
    n = min(len(a) for a in arrays["force"])
    stack = {key: np.stack([a[:n] for a in arrays[key]], axis=1) for key in ("force", "cop", "free")}
    types = _param(c3d["parameters"], "FORCE_PLATFORM", "TYPE")
    return ForcePlates(
        force_n=stack["force"],
        cop_m=stack["cop"],
        free_moment_nm=stack["free"],
        corners_m=np.stack(arrays["corners"]),
        origin_m=np.stack(arrays["origin"]),
        time_s=first_frame / point_rate_hz + np.arange(n) / rate_hz,
        rate_hz=rate_hz,
        types=tuple(int(t) for t in np.ravel(types if types is not None else [])[: len(platforms)]),
    )


def _events(path: Path, params: dict) -> tuple[C3DEvent, ...]:
    """``EVENT`` entries sorted by time; :class:`InputError` when its arrays disagree with ``USED``."""
    used = _param(params, "EVENT", "USED")
    count = int(np.asarray(used).ravel()[0]) if used is not None and np.size(used) else 0
    if count <= 0:
        return ()
    labels = list(_param(params, "EVENT", "LABELS") or [])
    contexts = list(_param(params, "EVENT", "CONTEXTS") or [])
    times = np.asarray(
        _param(params, "EVENT", "TIMES") if _param(params, "EVENT", "TIMES") is not None else []
    )
    if len(labels) < count or times.ndim != 2 or times.shape[0] != 2 or times.shape[1] < count:
        raise InputError(path, f"EVENT:USED is {count} but LABELS / TIMES hold fewer events")
    contexts += [""] * (count - len(contexts))
    events = [
        C3DEvent(str(labels[i]).strip(), str(contexts[i]).strip(), float(60.0 * times[0, i] + times[1, i]))
        for i in range(count)
    ]
    return tuple(sorted(events, key=lambda e: e.time_s))
