"""OpenSim ``.mot`` / ``.sto`` tables: reader and writer.

Layout::

    <name>                       first line: the table's name (any text without '=')
    version=1                    key=value header lines, kept in Table.header
    nRows=73                     legacy row/column counts (nColumns includes 'time')
    nColumns=24
    inDegrees=yes
    <free text lines>            e.g. "Units are S.I. units ..." (kept as header['comments'])
    endheader
    time  col1  col2 ...         column labels, tab separated
    0.40  4.84  -1.84 ...        one row per time, any whitespace between numbers

Irregularities handled: headers with trailing tabs (OpenSim's GRF files), ``key = value`` with
spaces, legacy SIMM headers (``datacolumns N`` / ``datarows N`` / ``range a b``), an ``nRows``
that disagrees with the rows (the rows win, with a one-line warning), Windows line endings, a
UTF-8 byte-order mark, blank lines, NaN written the Windows way (``-nan(ind)``). A missing
``inDegrees`` means radians (OpenSim's assumption).
A row with the wrong number of values, text in a numeric cell, a missing ``endheader``, (in a
``.sto``) a first column other than ``time``, an ``nColumns``/``datacolumns`` that disagrees
with the labels (the header and the columns describe different tables: which one is right cannot
be told), an infinite or absurd (above :data:`MAX_ABS_VALUE`) value, or a table whose every value
is NaN is an :class:`InputError` naming the line or column.
OpenSim allows a ``.mot`` to have another quantity in its first column: it is used as the
(increasing) time axis, with a warning.

:func:`write_storage` writes an OpenSim-4-readable header (``name``, ``version=1``, ``nRows``,
``nColumns``, ``inDegrees``, ``endheader``) and every number with Python's shortest round-trip
representation, so ``read_storage(write_storage(t))`` reproduces ``t.data`` bit for bit.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import atomic_path, read_text

# NaN/inf as Windows C runtimes print them (OpenSim on Windows writes e.g. "-nan(ind)").
_MSVC_SPECIALS = {
    "nan(ind)": np.nan,
    "-nan(ind)": np.nan,
    "nan(snan)": np.nan,
    "-nan(snan)": np.nan,
    "1.#qnan": np.nan,
    "-1.#qnan": np.nan,
    "1.#ind": np.nan,
    "-1.#ind": np.nan,
    "1.#inf": np.inf,
    "-1.#inf": -np.inf,
}

#: No quantity a .mot/.sto holds (angles, metres, newtons, activations, EMG volts) reaches this.
MAX_ABS_VALUE = 1.0e9

# Header keys the writer produces itself (other keys from Table.header are written after them).
_WRITER_KEYS = ("version", "nRows", "nColumns", "inDegrees")


@dataclasses.dataclass(frozen=True)
class Table:
    """A time table: ``data`` (T, C) with ``columns`` (C names, without 'time') and ``time_s`` (T,).

    ``in_degrees`` tells whether rotational columns are in degrees (OpenSim's ``inDegrees``);
    translational columns are in metres either way. ``header`` holds the other header fields.
    """

    columns: tuple[str, ...]
    data: np.ndarray  # (T, C)
    time_s: np.ndarray  # (T,)
    in_degrees: bool
    name: str
    header: dict[str, str] = dataclasses.field(default_factory=dict)
    source: str = ""

    def __post_init__(self):
        src = self.source or self.name or "table"
        if self.data.ndim != 2 or self.data.shape[1] != len(self.columns):
            raise InputError(src, f"data must be (T, {len(self.columns)}), got {self.data.shape}")
        if self.time_s.shape != (self.data.shape[0],):
            raise InputError(src, f"time must be ({self.data.shape[0]},), got {self.time_s.shape}")

    @property
    def num_rows(self) -> int:
        return int(self.data.shape[0])

    @property
    def rate_hz(self) -> float | None:
        """Mean sampling rate from the time column (None with fewer than two rows)."""
        if self.num_rows < 2 or self.time_s[-1] <= self.time_s[0]:
            return None
        return float((self.num_rows - 1) / (self.time_s[-1] - self.time_s[0]))

    def column(self, name: str) -> np.ndarray:
        """Values (T,) of column ``name``."""
        if name not in self.columns:
            raise InputError(self.source or self.name, f"no column '{name}' in this table")
        return self.data[:, self.columns.index(name)]


def _split_header_line(line: str) -> tuple[str, str] | None:
    """``key=value`` -> (key, value); SIMM ``datacolumns 5`` -> ('datacolumns', '5'); else None."""
    text = line.strip()
    if "=" in text:
        key, _, value = text.partition("=")
        return key.strip(), value.strip()
    parts = text.split()
    if len(parts) >= 2 and parts[0] in ("datacolumns", "datarows", "range"):
        return parts[0], " ".join(parts[1:])
    return None


def read_storage(path: str | os.PathLike) -> Table:
    """Read an OpenSim ``.mot`` or ``.sto`` file (see the module docstring)."""
    path = Path(path)
    lines = read_text(path, "storage file").splitlines()
    end = next((i for i, line in enumerate(lines) if line.strip().lower() == "endheader"), None)
    if end is None:
        raise InputError(path, "no 'endheader' line: not an OpenSim .mot/.sto file, or truncated")
    name = ""
    header: dict[str, str] = {}
    comments: list[str] = []
    for i, line in enumerate(lines[:end]):
        if not line.strip():
            continue
        pair = _split_header_line(line)
        if pair is not None:
            header[pair[0]] = pair[1]
        elif i == 0:
            name = line.strip()
        else:
            comments.append(line.strip())
    if comments:
        header["comments"] = "\n".join(comments)

    body = [(i + 1, line) for i, line in enumerate(lines[end + 1 :], start=end + 1) if line.strip()]
    if not body:
        raise InputError(path, "no column labels after 'endheader'")
    label_line = body[0][1]
    labels = [c.strip() for c in label_line.split("\t")] if "\t" in label_line else label_line.split()
    while labels and not labels[-1]:
        labels.pop()
    if not labels:
        raise InputError(path, f"line {body[0][0]}: no column labels")
    if labels[0].lower() != "time":
        if path.suffix.lower() != ".mot":
            raise InputError(path, f"line {body[0][0]}: the first column must be 'time', got '{labels[0]}'")
        warnings.warn(
            f"{path}: first column is '{labels[0]}', not 'time'; using it as the time axis", stacklevel=2
        )
    if any(not lab for lab in labels):
        raise InputError(path, f"line {body[0][0]}: empty column label")
    columns = tuple(labels[1:])
    if len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1})
        raise InputError(path, f"duplicate column labels: {', '.join(dup[:5])}")

    width = len(labels)
    rows = np.empty((len(body) - 1, width))
    for r, (lineno, line) in enumerate(body[1:]):
        cells = line.split()
        if len(cells) != width:
            raise InputError(
                path, f"line {lineno} has {len(cells)} values, expected {width} (one per column label)"
            )
        try:
            rows[r] = [parse_float(c) for c in cells]
        except ValueError:
            bad = next(c for c in cells if not is_float(c))
            raise InputError(path, f"line {lineno}: '{bad[:20]}' is not a number") from None
    time_s = rows[:, 0].copy()
    if not np.all(np.isfinite(time_s)):
        raise InputError(path, "the time column has non-finite values")
    if len(time_s) > 1 and not np.all(np.diff(time_s) > 0):
        bad = int(np.argmax(np.diff(time_s) <= 0)) + 1
        raise InputError(path, f"time is not increasing at line {body[bad + 1][0]} ({time_s[bad]:g} s)")
    _check_counts(header, rows.shape[0], width, path)
    _check_values(rows[:, 1:], labels[1:], [lineno for lineno, _ in body[1:]], path)
    in_degrees = header.get("inDegrees", "no").strip().lower() in ("yes", "true", "1")
    return Table(
        columns=columns,
        data=rows[:, 1:].copy(),
        time_s=time_s,
        in_degrees=in_degrees,
        name=name or path.stem,
        header=header,
        source=str(path),
    )


def parse_float(text: str) -> float:
    """``float(text)``, also accepting the NaN/inf spellings of Windows C runtimes; else ValueError."""
    try:
        return float(text)
    except ValueError:
        special = _MSVC_SPECIALS.get(text.strip().lower())
        if special is None:
            raise
        return float(special)


def is_float(text: str) -> bool:
    """Whether :func:`parse_float` accepts ``text``."""
    try:
        parse_float(text)
    except ValueError:
        return False
    return True


def _check_counts(header: dict[str, str], n_rows: int, width: int, path: Path) -> None:
    """Refuse column counts that disagree with the labels; warn on row counts (the rows win)."""
    for key, actual in (("nRows", n_rows), ("datarows", n_rows), ("nColumns", width), ("datacolumns", width)):
        if key not in header:
            continue
        try:
            declared = int(float(header[key]))
        except ValueError:
            warnings.warn(f"{path}: header {key}={header[key]!r} is not a number; ignored", stacklevel=3)
            continue
        if declared != actual and key in ("nColumns", "datacolumns"):
            raise InputError(
                path, f"header {key}={declared} but the file has {actual} columns (time included)"
            )
        if declared != actual:
            warnings.warn(
                f"{path}: header {key}={declared} but the file has {actual} rows; using the rows",
                stacklevel=3,
            )


def _check_values(data: np.ndarray, columns: list[str], linenos: list[int], path: Path) -> None:
    """Refuse infinite or absurd values, and a table without a single number (all NaN)."""
    bad = np.isinf(data) | (np.abs(np.nan_to_num(data)) > MAX_ABS_VALUE)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise InputError(
            path, f"line {linenos[r]}, column '{columns[c]}': value {data[r, c]:g} is infinite or absurd"
        )
    if data.size and np.all(np.isnan(data)):
        raise InputError(path, "every value is NaN")


def write_storage(path: str | os.PathLike, table: Table) -> None:
    """Write ``table`` as an OpenSim ``.mot``/``.sto`` (atomically); exact round trip with the reader."""
    path = Path(path)
    data = np.asarray(table.data, dtype=float)
    n_rows, n_cols = data.shape
    for label in table.columns:
        if not label or any(ch.isspace() for ch in label):
            raise InputError(path, f"column label {label!r} is empty or contains whitespace")
    name = (table.name or path.stem).splitlines()[0].replace("=", "_") or path.stem
    lines = [
        name,
        "version=1",
        f"nRows={n_rows}",
        f"nColumns={n_cols + 1}",
        f"inDegrees={'yes' if table.in_degrees else 'no'}",
    ]
    for key, value in table.header.items():
        if key in _WRITER_KEYS or key in ("datacolumns", "datarows", "range", "comments"):
            continue
        lines.append(f"{key}={value}")
    if table.header.get("comments"):
        lines.extend(["", *table.header["comments"].splitlines(), ""])
    lines.append("endheader")
    lines.append("\t".join(("time", *table.columns)))
    time_s = np.asarray(table.time_s, dtype=float)
    rows = np.column_stack([time_s, data]).tolist()
    lines.extend("\t".join(map(repr, row)) for row in rows)
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
