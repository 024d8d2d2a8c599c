"""Seeded valid and damaged C3D files for the fuzz tests (the :class:`fuzz_inputs.Variant` contract).

Valid files are written by ezc3d itself; damage is cut, overwritten or inserted bytes, header and
parameter-section fields, and units that disagree with the values.
"""

from __future__ import annotations

import functools
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from fuzz_inputs import Variant, _text, trc_base


@functools.cache
def c3d_base(
    units: str = "mm",
    screen: tuple[str, str] = ("+X", "+Z"),
    events: bool = False,
    lie: float = 1.0,
    plate_channels: tuple[int, ...] | None = None,
    markers: int = 3,
) -> bytes:
    """Bytes of a C3D ezc3d writes: the first ``markers`` of three (RHEE, LHEE, C7), 12 frames at
    100 Hz, a body's size in ``units`` (times ``lie``: values in other units than the file
    declares); ``plate_channels``: with one force plate on those analog channels (c3d_samples)."""
    from c3d_samples import write_c3d

    scale = {"mm": 1.0, "m": 1e-3}[units] * lie
    t = np.arange(12)[:, None]
    positions = np.stack(
        [
            np.column_stack([10.0 * t, np.full_like(t, -100.0), np.full_like(t, 60.0)]),
            np.column_stack([10.0 * t + 300.0, np.full_like(t, 100.0), np.full_like(t, 60.0)]),
            np.column_stack([10.0 * t + 150.0, np.zeros_like(t), np.full_like(t, 1450.0)]),
        ],
        axis=1,
    ).astype(float)
    marks = [("Right", "Foot Strike", 0.02), ("Left", "Foot Off", 0.05)] if events else []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "base.c3d"
        names = ["RHEE", "LHEE", "C7"][:markers]
        write_c3d(
            path,
            names,
            positions[:, :markers] * scale,
            100.0,
            units,
            screen=screen,
            events=marks,
            plate_channels=plate_channels,
        )
        return path.read_bytes()


def _c3d_integer_parameter(data: bytes, group: str, name: str, value: np.ndarray) -> bytes:
    """``data`` rewritten by ezc3d with the integer parameter ``group:name`` set to ``value`` (any shape)."""
    import ezc3d

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "in.c3d"
        path.write_bytes(data)
        c3d = ezc3d.c3d(str(path))
        c3d.add_parameter(group, name, np.asarray(value, dtype=float))
        c3d["parameters"][group][name]["type"] = ezc3d.ezc3d.INT
        c3d.write(str(path))
        return path.read_bytes()


def _c3d_patch(offset: int, new: bytes) -> bytes:
    data = bytearray(c3d_base())
    data[offset : offset + len(new)] = new
    return bytes(data)


def c3d_variants(seed: int = 0, random_count: int = 24) -> Iterator[Variant]:
    """Valid C3D files (units, a Y-up lab, events) and damaged ones: cut, overwritten, foreign bytes."""
    base = c3d_base()
    param_offset = (base[0] - 1) * 512
    yield Variant("c3d_valid", _text(base), "accept")
    yield Variant("c3d_valid_in_m", _text(c3d_base("m")), "accept")
    yield Variant("c3d_valid_y_up_lab", _text(c3d_base(screen=("+X", "+Y"))), "accept")
    yield Variant("c3d_valid_with_events", _text(c3d_base(events=True)), "accept")
    plate = (1, 2, 3, 4, 5, 6)
    yield Variant("c3d_valid_with_plate", _text(c3d_base(plate_channels=plate)), "accept")
    past = c3d_base(plate_channels=(1, 2, 3, 4, 5, 9))
    yield Variant("c3d_plate_channel_past_analogs", _text(past), "refuse")
    yield Variant("c3d_plate_channel_zero", _text(c3d_base(plate_channels=(0, 2, 3, 4, 5, 6))), "refuse")
    type_matrix = _c3d_integer_parameter(c3d_base(plate_channels=plate), "FORCE_PLATFORM", "TYPE", [[2]])
    yield Variant("c3d_plate_type_as_1x1_matrix", _text(type_matrix), "accept")
    yield Variant("c3d_plate_no_point_data", _text(c3d_base(plate_channels=plate, markers=0)), "refuse")
    with_plate = c3d_base(plate_channels=plate)
    # 12 frames of 3 float markers (16 bytes each) and 10 samples of 6 float analog channels
    plate_end = (int.from_bytes(with_plate[16:18], "little") - 1) * 512 + 12 * (3 * 16 + 10 * 6 * 4)
    for before_end in (1, 300, 2000):
        cut = _text(with_plate[: plate_end - before_end])
        yield Variant(f"c3d_plate_cut_{before_end}_bytes_early", cut, "refuse")
    yield Variant("c3d_plate_block_padding_cut", _text(with_plate[:plate_end]), "accept")
    yield Variant("c3d_empty", _text(b""), "refuse")
    yield Variant("c3d_text", _text(trc_base()), "refuse")
    yield Variant("c3d_zeros", _text(bytes(len(base))), "refuse")
    yield Variant("c3d_binary", _text(b"\x00\x01\xff" * 400), "refuse")
    data_end = (int.from_bytes(base[16:18], "little") - 1) * 512 + 12 * 3 * 4 * 4  # 12 frames, floats
    for fraction in (0.1, 0.4, 0.6, 0.8):
        yield Variant(f"c3d_cut_at_{fraction:g}", _text(base[: int(data_end * fraction)]), "refuse")
    yield Variant("c3d_cut_in_last_frame", _text(base[: data_end - 1]), "refuse")
    yield Variant("c3d_block_padding_cut", _text(base[:data_end]), "accept")
    yield Variant("c3d_no_header_key", _text(_c3d_patch(1, b"\x00")), "refuse")
    yield Variant("c3d_parameter_block_0", _text(_c3d_patch(0, b"\x00")), "refuse")
    yield Variant("c3d_parameter_block_beyond", _text(_c3d_patch(0, b"\xff")), "refuse")
    yield Variant("c3d_processor_unknown", _text(_c3d_patch(param_offset + 3, b"\x00")), "refuse")
    yield Variant("c3d_units_m_holding_mm", _text(c3d_base("m", lie=1e3)), "refuse")
    yield Variant("c3d_units_mm_holding_m", _text(c3d_base("mm", lie=1e-3)), "refuse")
    rng = random.Random(f"c3d-{seed}")
    for i in range(random_count):
        op = ("cut", "overwrite", "insert", "overwrite_header")[i % 4]
        data = bytearray(base)
        if op == "cut":
            data = data[: rng.randrange(1, len(data))]
        elif op in ("overwrite", "overwrite_header"):
            start = rng.randrange(512 if op == "overwrite_header" else len(data))
            for k in range(start, min(len(data), start + rng.randrange(1, 16))):
                data[k] = rng.randrange(256)
        else:
            k = rng.randrange(len(data))
            data[k:k] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        yield Variant(f"c3d_random{i}_{op}", _text(bytes(data)), "either")
