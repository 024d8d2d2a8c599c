"""EMG input: recordings (``.csv`` or OpenSim ``.sto``) and the channel -> muscle map (YAML).

CSV layout: a header row whose first cell is ``time`` (seconds), then one column per channel;
one row per sample, comma separated. ``.sto``/``.mot`` files go through the project's storage
reader.

Map YAML: each key is a channel; its value is a muscle name, a list of muscle names (the
channel is compared with their mean activation), or a mapping ``{muscles: [...], reference: X}``
where ``X`` normalises that channel's envelope instead of its peak (e.g. an MVC envelope value)::

    TA_right: tibant_r
    GAS_right: [gasmed_r, gaslat_r]
    SOL_right: {muscles: [soleus_r], reference: 0.42}
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import read_text


@dataclasses.dataclass(frozen=True)
class EmgRecording:
    """``data`` (T, C) raw (or already enveloped) EMG at ``time_s`` (T,), channels (C,)."""

    time_s: np.ndarray
    channels: tuple[str, ...]
    data: np.ndarray

    @property
    def rate_hz(self) -> float:
        return float((len(self.time_s) - 1) / (self.time_s[-1] - self.time_s[0]))


def read_emg(path: str | os.PathLike) -> EmgRecording:
    """Read an EMG ``.csv`` or ``.sto``; bad layout is an :class:`InputError` naming the file."""
    path = Path(path)
    if path.suffix.lower() in (".sto", ".mot"):
        from musclerl.motion.storage import read_storage

        table = read_storage(path)
        rec = EmgRecording(
            np.asarray(table.time_s, float), tuple(table.columns), np.asarray(table.data, float)
        )
    elif path.suffix.lower() == ".csv":
        lines = [ln for ln in read_text(path, "EMG file").splitlines() if ln.strip()]
        header = [c.strip() for c in lines[0].split(",")]
        if header[0].lower() != "time" or len(header) < 2:
            raise InputError(path, "EMG CSV header must be 'time,<channel>,...'")
        values = []
        for n, line in enumerate(lines[1:], start=2):
            cells = line.split(",")
            if len(cells) != len(header):
                raise InputError(path, f"line {n} has {len(cells)} values, expected {len(header)}")
            try:
                values.append([float(c) for c in cells])
            except ValueError as err:
                raise InputError(path, f"line {n}: non-numeric value") from err
        data = np.asarray(values, dtype=float).reshape(-1, len(header))
        rec = EmgRecording(data[:, 0], tuple(header[1:]), data[:, 1:])
    else:
        raise InputError(path, "EMG must be a .csv or .sto file")
    if len(rec.time_s) < 10 or not np.all(np.diff(rec.time_s) > 0):
        raise InputError(path, "EMG needs at least 10 samples with increasing time")
    if not np.all(np.isfinite(rec.data)):
        raise InputError(path, "EMG contains NaN or inf")
    return rec


@dataclasses.dataclass(frozen=True)
class EmgChannelMap:
    """channel -> muscles, and optional per-channel normalisation references."""

    muscles: dict[str, list[str]]
    reference: dict[str, float]


def read_emg_map(path: str | os.PathLike, channels: tuple[str, ...] = ()) -> EmgChannelMap:
    """Parse the map YAML; channels absent from ``channels`` (when given) are an error."""
    from musclerl.fileio import load_yaml

    raw = load_yaml(path)
    muscles: dict[str, list[str]] = {}
    reference: dict[str, float] = {}
    for channel, value in raw.items():
        channel = str(channel)
        if isinstance(value, str):
            muscles[channel] = [value]
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            muscles[channel] = list(value)
        elif isinstance(value, dict) and isinstance(value.get("muscles"), (list, str)):
            m = value["muscles"]
            muscles[channel] = [m] if isinstance(m, str) else [str(v) for v in m]
            if "reference" in value:
                ref = value["reference"]
                if not isinstance(ref, (int, float)) or ref <= 0:
                    raise InputError(path, f"channel {channel}: reference must be a positive number")
                reference[channel] = float(ref)
        else:
            raise InputError(
                path,
                f"channel {channel}: expected a muscle name, a list of names or "
                "{muscles: [...], reference: X}",
            )
        if channels and channel not in channels:
            raise InputError(path, f"channel {channel} is not in the EMG file (has {list(channels)[:6]})")
    if not muscles:
        raise InputError(path, "the EMG map is empty")
    return EmgChannelMap(muscles, reference)
