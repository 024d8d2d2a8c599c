"""OpenSim / Motion Analysis ``.trc`` marker files: reader and writer.

Layout (tab separated)::

    PathFileType  4  (X/Y/Z)  <file name>
    DataRate  CameraRate  NumFrames  NumMarkers  Units  OrigDataRate  OrigDataStartFrame  OrigNumFrames
    60.00     60.00       151        41          mm     60.00         1                   151
    Frame#  Time  R.ASIS  <tab>  <tab>  L.ASIS ...
            <tab> X1  Y1  Z1  X2  Y2  Z2 ...
    <optional blank line>
    1  0.000  608.66  1072.71  157.44 ...

What the reader does with the usual irregularities:

* Units ``mm``, ``cm`` or ``m`` (also spelled out, any case) become metres; anything else is an
  :class:`InputError`.
* Missing markers — blank cells, short rows, or an all-zero triple (how many systems write a
  gap) — become NaN.
* Header keys and values (lines 2 and 3) are whitespace tokens, as OpenSim reads them (repeated
  tabs or spaces between values); when both lines have the same number of tab cells, the cells
  are paired instead, so a blank value keeps its key.
* ``NumFrames`` or ``NumMarkers`` that disagree with the file: the rows and names actually
  present win, with a one-line :func:`warnings.warn` (a file cut at a row boundary reads as the
  rows it has). A file that ends inside a row (no final newline, and its last row shorter than
  the one before or fewer rows than ``NumFrames``) is refused: it was cut while being copied,
  and its last frame would be wrong without anyone noticing.
* Units must agree with the magnitudes: the markers of one frame must span between
  :data:`MIN_SPAN_M` and :data:`MAX_SPAN_M` (median over frames, in metres after the declared
  unit is applied: a person, not a coin or a building), and no coordinate may exceed
  :data:`MAX_ABS_M`; ``inf`` cells are refused (NaN is a gap).
* The rate is ``DataRate``; when it is missing or not a number, ``CameraRate``; when both are
  missing, the time column. A file whose Time cells are all blank gets
  ``t = (Frame# - OrigDataStartFrame) / DataRate`` (the OpenSim documentation's definition).
  ``OrigDataStartFrame`` and the other header fields are kept in ``MarkerData.header``.
* Trailing tabs, Windows line endings, a UTF-8 byte-order mark and blank lines between rows are
  accepted; cells may be separated by spaces when a file (or a data row) has no tabs at all (then
  marker names must not contain spaces and blank cells cannot be told apart), and a tabbed row
  with repeated tabs is read by whitespace tokens when that gives exactly one value per column.
  NaN as Windows writes it (``-nan(ind)``, ``1.#QNAN``) is read as NaN.

Frames: with ``y_up=True`` (the default; OpenSim labs are Y-up with X forward and Z to the right)
positions are rotated into MuJoCo's Z-up world by ``(x, y, z)_mujoco = (x, -z, y)_lab``
(:data:`musclerl.motion.keypoints.Y_UP_TO_Z_UP`, +90 degrees about X).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, read_text
from musclerl.motion.keypoints import y_up_to_z_up, z_up_to_y_up
from musclerl.motion.storage import is_float, parse_float

#: Accepted spellings of the Units field -> (canonical unit, metres per unit).
UNITS: dict[str, tuple[str, float]] = {
    "mm": ("mm", 1e-3),
    "millimeters": ("mm", 1e-3),
    "millimetres": ("mm", 1e-3),
    "cm": ("cm", 1e-2),
    "centimeters": ("cm", 1e-2),
    "centimetres": ("cm", 1e-2),
    "m": ("m", 1.0),
    "meters": ("m", 1.0),
    "metres": ("m", 1.0),
}

#: Median over frames of the largest extent of one frame's markers, metres: a human body with
#: its markers spans well inside this range; outside it the declared Units are wrong.
MIN_SPAN_M = 0.01
MAX_SPAN_M = 5.0
#: No marker coordinate of a motion-capture volume is 10 km from the origin.
MAX_ABS_M = 1.0e4


@dataclasses.dataclass(frozen=True)
class MarkerData:
    """Marker trajectories.

    ``positions_m`` is (T, M, 3) in metres, NaN where a marker is missing; in MuJoCo's Z-up world
    when ``z_up`` (the file was read with ``y_up=True``), else in the file's own axes.
    ``time_s`` (T,) is the file's time column; ``rate_hz`` the nominal frame rate; ``units_in``
    the unit the file was written in ('mm', 'cm' or 'm').
    """

    names: tuple[str, ...]
    positions_m: np.ndarray  # (T, M, 3)
    time_s: np.ndarray  # (T,)
    rate_hz: float
    units_in: str
    source: str = ""
    z_up: bool = True
    header: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def num_frames(self) -> int:
        return int(self.positions_m.shape[0])

    @property
    def duration_s(self) -> float:
        """Time from the first to the last frame."""
        return float(self.time_s[-1] - self.time_s[0]) if self.num_frames else 0.0

    def marker(self, name: str) -> np.ndarray:
        """Positions (T, 3) of marker ``name`` (metres, NaN where missing)."""
        if name not in self.names:
            raise InputError(self.source or "markers", f"no marker '{name}' in this file")
        return self.positions_m[:, self.names.index(name)]

    def missing_fraction(self) -> np.ndarray:
        """Per-marker fraction of frames that are missing, shape (M,)."""
        return np.isnan(self.positions_m[..., 0]).mean(axis=0)


def _cells(line: str, tabbed: bool) -> list[str]:
    """Cells of a line: tab separated (blank cells kept) in tabbed files and rows, else whitespace."""
    return [c.strip() for c in line.split("\t")] if tabbed and "\t" in line else line.split()


def _float_or_none(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


def read_trc(path: str | os.PathLike, *, y_up: bool = True) -> MarkerData:
    """Read a ``.trc`` file; positions in metres (Z-up when ``y_up``). See the module docstring."""
    path = Path(path)
    raw_text = read_text(path, "marker file")
    lines = raw_text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 5:
        raise InputError(path, f"truncated .trc: {len(lines)} lines, need at least 5 header lines")
    if not lines[0].startswith("PathFileType"):
        raise InputError(path, "not a .trc file: the first line must start with 'PathFileType'")
    tabbed = "\t" in lines[1] or "\t" in lines[3]
    key_cells, value_cells = _cells(lines[1], tabbed), _cells(lines[2], tabbed)
    if tabbed and len(key_cells) == len(value_cells):  # aligned tab cells: blank values kept
        header = {k: v for k, v in zip(key_cells, value_cells, strict=True) if k}
    else:  # whitespace tokens, as OpenSim reads them (repeated tabs or spaces between values)
        keys, values = lines[1].split(), lines[2].split()
        header = {k: (values[i] if i < len(values) else "") for i, k in enumerate(keys)}
    units_text = header.get("Units", "").strip()
    if units_text.lower() not in UNITS:
        raise InputError(path, f"unknown Units '{units_text}' (expected mm, cm or m)")
    units_in, scale = UNITS[units_text.lower()]

    label_cells = _cells(lines[3], tabbed)
    starts_ok = len(label_cells) >= 2 and label_cells[0].lower().rstrip("#") == "frame"
    if not starts_ok or label_cells[1].lower() != "time":
        raise InputError(path, "line 4 must start with 'Frame#' and 'Time' followed by marker names")
    names = tuple(n for n in label_cells[2:] if n)
    if not names:
        raise InputError(path, "no marker names on line 4")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(path, f"duplicate marker names: {', '.join(dup[:5])}")
    n_markers = len(names)
    declared_markers = _float_or_none(header.get("NumMarkers", ""))
    if declared_markers is not None and int(declared_markers) != n_markers:
        warnings.warn(
            f"{path}: NumMarkers={int(declared_markers)} but {n_markers} marker names; using the names",
            stacklevel=2,
        )

    width = 2 + 3 * n_markers
    first = 5 if "X1" in lines[4] or not lines[4].strip() else 4  # the X1 Y1 Z1 line is optional
    rows: list[list[float]] = []
    linenos: list[int] = []
    lengths: list[int] = []
    for lineno, line in enumerate(lines[first:], start=first + 1):
        if not line.strip():
            continue
        cells = _cells(line, tabbed)
        if len(cells) > width and len(line.split()) == width:  # repeated tabs between values
            cells = line.split()
        lengths.append(len([c for c in cells if c]))
        linenos.append(lineno)
        if len(cells) > width:
            if any(cells[width:]):
                raise InputError(
                    path,
                    f"line {lineno} has {len([c for c in cells if c])} values, "
                    f"expected at most {width} (Frame#, Time, 3 x {n_markers} markers)",
                )
            cells = cells[:width]
        cells = cells + [""] * (width - len(cells))
        if not cells[0]:
            raise InputError(path, f"line {lineno}: missing Frame# value")
        try:
            rows.append([parse_float(cell) if cell else np.nan for cell in cells])
        except ValueError:
            col = next(i for i, cell in enumerate(cells) if cell and not is_float(cell))
            raise InputError(
                path, f"line {lineno}, column {col + 1}: '{cells[col][:20]}' is not a number"
            ) from None
    if not rows:
        raise InputError(path, "no data rows after the header")
    table = np.asarray(rows, dtype=float)
    time_s = table[:, 1]
    if np.all(np.isnan(time_s)):  # no Time column: t = (frame - OrigDataStartFrame) / DataRate
        time_s = _time_from_frames(table[:, 0], header, path)
    if not np.all(np.isfinite(time_s)):
        raise InputError(path, "the Time column has blank or non-finite values")
    if len(time_s) > 1 and not np.all(np.diff(time_s) > 0):
        bad = int(np.argmax(np.diff(time_s) <= 0)) + 1
        raise InputError(path, f"Time is not increasing at data row {bad + 1} ({time_s[bad]:g} s)")
    declared_frames = _float_or_none(header.get("NumFrames", ""))
    _check_complete(path, raw_text, lengths, linenos, declared_frames)
    if declared_frames is not None and int(declared_frames) != len(rows):
        warnings.warn(
            f"{path}: NumFrames={int(declared_frames)} but {len(rows)} data rows; using the rows",
            stacklevel=2,
        )

    xyz = table[:, 2:].reshape(len(rows), n_markers, 3) * scale
    _check_finite(path, xyz, linenos, names)
    xyz[np.all(xyz == 0.0, axis=-1)] = np.nan  # all-zero triple = gap
    xyz[np.any(np.isnan(xyz), axis=-1)] = np.nan  # a partly blank triple is a gap too
    if np.all(np.isnan(xyz)):
        raise InputError(path, "every marker is missing in every frame (all cells blank, zero or NaN)")
    _check_units(path, xyz, linenos, names, units_text)
    empty = [names[m] for m in range(n_markers) if np.all(np.isnan(xyz[:, m, 0]))]
    if empty:
        warnings.warn(f"{path}: markers with no data in any frame: {', '.join(empty[:8])}", stacklevel=2)

    rate_hz = _rate(header, time_s, path)
    positions = y_up_to_z_up(xyz) if y_up else xyz
    return MarkerData(
        names=names,
        positions_m=positions,
        time_s=time_s,
        rate_hz=rate_hz,
        units_in=units_in,
        source=str(path),
        z_up=y_up,
        header=header,
    )


def _check_complete(
    path: Path, text: str, lengths: list[int], linenos: list[int], declared_frames: float | None
) -> None:
    """Refuse a file that ends inside a row (see the module docstring)."""
    if text.endswith(("\n", "\r")) or not lengths:
        return
    short = len(lengths) > 1 and lengths[-1] < lengths[-2]
    missing_rows = declared_frames is not None and len(lengths) < int(declared_frames)
    if short or missing_rows:
        raise InputError(
            path,
            f"the file ends inside line {linenos[-1]} ({lengths[-1]} values"
            + (f", the row before has {lengths[-2]}" if len(lengths) > 1 else "")
            + (f"; NumFrames={int(declared_frames)}, {len(lengths)} rows" if declared_frames else "")
            + "): truncated while copied? Cut it at a row boundary to use the complete rows",
        )


def _check_finite(path: Path, xyz: np.ndarray, linenos: list[int], names: tuple[str, ...]) -> None:
    """Refuse infinite cells (NaN is a gap, inf is a corrupt value)."""
    bad = np.isinf(xyz)
    if bad.any():
        t, m, _ = np.argwhere(bad)[0]
        raise InputError(path, f"line {linenos[t]}: marker '{names[m]}' has an infinite coordinate")


def _check_units(path: Path, xyz: np.ndarray, linenos: list[int], names: tuple[str, ...], units: str) -> None:
    """Refuse magnitudes that contradict the declared Units (see :data:`MIN_SPAN_M`)."""
    far = np.max(np.abs(np.nan_to_num(xyz, nan=0.0)), axis=-1)  # (T, M), gaps as 0
    if np.max(far) > MAX_ABS_M:
        t, m = np.unravel_index(np.argmax(far), far.shape)
        raise InputError(
            path,
            f"line {linenos[t]}: marker '{names[m]}' is {far[t, m]:.3g} m from the origin "
            f"(Units '{units}'): corrupt values or wrong Units",
        )
    present = ~np.isnan(xyz[..., 0])
    frames = present.sum(axis=1) >= 2
    if not frames.any():
        return
    with np.errstate(invalid="ignore"):
        extent = np.nanmax(xyz[frames], axis=1) - np.nanmin(xyz[frames], axis=1)
    span_m = float(np.median(np.max(extent, axis=-1)))
    if span_m > MAX_SPAN_M or (span_m < MIN_SPAN_M and present.shape[1] >= 3):
        per_m = UNITS[units.lower()][1]
        raise InputError(
            path,
            f"the markers of one frame span {span_m:.3g} m (median) with Units '{units}': a body spans "
            f"{MIN_SPAN_M:g}-{MAX_SPAN_M:g} m, so the values are in other units "
            f"(as mm they would span {span_m / per_m * 1e-3:.3g} m, as m {span_m / per_m:.3g} m)",
        )


def _time_from_frames(frames: np.ndarray, header: dict[str, str], path: Path) -> np.ndarray:
    """Times for a file without a Time column, as the TRC documentation defines them."""
    rate = _float_or_none(header.get("DataRate", "")) or _float_or_none(header.get("CameraRate", ""))
    if rate is None or rate <= 0:
        raise InputError(path, "no Time values and no DataRate/CameraRate to compute them from")
    start = _float_or_none(header.get("OrigDataStartFrame", "")) or 1.0
    return (frames - start) / rate


def _rate(header: dict[str, str], time_s: np.ndarray, path: Path) -> float:
    """DataRate, else CameraRate, else the time column; warn when the time column disagrees."""
    from_times = (len(time_s) - 1) / (time_s[-1] - time_s[0]) if len(time_s) > 1 else None
    for key in ("DataRate", "CameraRate"):
        rate = _float_or_none(header.get(key, ""))
        if rate is not None and rate > 0:
            if from_times is not None and abs(from_times - rate) > 0.01 * rate:
                warnings.warn(
                    f"{path}: {key}={rate:g} Hz but the Time column implies {from_times:.4g} Hz; using {key}",
                    stacklevel=3,
                )
            return float(rate)
    if from_times is None:
        raise InputError(path, "no DataRate/CameraRate in the header and a single frame: rate unknown")
    return float(from_times)


def write_trc(path: str | os.PathLike, data: MarkerData, *, units: str | None = None) -> None:
    """Write ``data`` as a tab-separated ``.trc`` (atomically), in ``units`` (default: ``data.units_in``).

    Positions are rotated back to OpenSim's Y-up lab frame when ``data.z_up``; NaN becomes a blank
    cell. Reading the file back with the matching ``y_up`` gives the same data to ~1e-12 m.
    """
    path = Path(path)
    units = units or data.units_in
    if units.lower() not in UNITS:
        raise InputError(path, f"unknown units '{units}' (expected mm, cm or m)")
    units, scale = UNITS[units.lower()]
    pos = z_up_to_y_up(data.positions_m) if data.z_up else np.asarray(data.positions_m, dtype=float)
    pos = pos / scale
    n_frames, n_markers = pos.shape[:2]
    orig_start = data.header.get("OrigDataStartFrame", "1") or "1"
    lines = [
        f"PathFileType\t4\t(X/Y/Z)\t{path.name}",
        "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames",
        f"{data.rate_hz:.10g}\t{data.rate_hz:.10g}\t{n_frames}\t{n_markers}\t{units}\t{data.rate_hz:.10g}\t"
        f"{orig_start}\t{n_frames}",
        "Frame#\tTime\t" + "\t".join(f"{n}\t\t" for n in data.names).rstrip("\t"),
        "\t\t" + "\t".join(f"X{i + 1}\tY{i + 1}\tZ{i + 1}" for i in range(n_markers)),
        "",
    ]
    pos[np.any(np.isnan(pos), axis=-1)] = np.nan  # a gap is the whole triple
    flat = pos.reshape(n_frames, -1).tolist()
    times = np.asarray(data.time_s, dtype=float).tolist()
    for t in range(n_frames):
        cells = "\t".join("" if v != v else repr(v) for v in flat[t])  # v != v: NaN -> blank cell
        lines.append(f"{t + 1}\t{times[t]!r}\t{cells}")
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
