"""Seeded valid and damaged BVH files for the fuzz tests (the :class:`fuzz_inputs.Variant` contract).

The base is :func:`motion_samples.bvh_text` of a standing sway (cm, Y up, 24 frames at 40 Hz).
Damage: files cut in every section, a ``Frames:`` count larger or smaller than the rows, a
``CHANNELS`` count that disagrees with the names after it or with the frame width, broken
numbers, and seeded random cuts, line edits and foreign bytes (:func:`fuzz_inputs.random_text_variants`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from fuzz_inputs import Variant, _text, layout_variants, random_text_variants
from motion_samples import bvh_standing_sway, bvh_text


@functools.cache
def bvh_base() -> str:
    return bvh_text(bvh_standing_sway(), "ZXY")


def _nth_channels(text: str, n: int, count: str) -> str:
    """``text`` with the ``n``-th ``CHANNELS k`` line's count replaced by ``count``."""
    matches = list(re.finditer(r"CHANNELS (\d+)", text))
    m = matches[n]
    return text[: m.start(1)] + count + text[m.end(1) :]


def _drop_channel_name(text: str, n: int) -> str:
    """The ``n``-th ``CHANNELS`` line lists one name fewer than its count says."""
    matches = list(re.finditer(r"CHANNELS \d+ [^\n]*", text))
    m = matches[n]
    line = m.group(0).rsplit(" ", 1)[0]
    return text[: m.start()] + line + text[m.end() :]


def bvh_variants(seed: int = 0, random_count: int = 24) -> Iterator[Variant]:
    base = bvh_base()
    motion_at = base.index("MOTION")
    rows = base[motion_at:].splitlines()
    frames = len(rows) - 3
    yield Variant("bvh_valid", _text(base), "accept")
    yield from layout_variants("bvh", base)
    # cut: inside the HIERARCHY, before MOTION, inside the header, inside a row, a whole row gone
    for fraction in (0.05, 0.3, 0.7):
        cut = _text(base[: int(motion_at * fraction)])
        yield Variant(f"bvh_cut_hierarchy_at_{fraction:g}", cut, "refuse")
    yield Variant("bvh_cut_before_motion", _text(base[:motion_at]), "refuse")
    yield Variant("bvh_cut_after_frames_line", _text(base[: base.index("Frame Time")]), "refuse")
    yield Variant("bvh_cut_mid_row", _text(base.rstrip("\n")[:-7]), "refuse")
    yield Variant("bvh_last_row_missing", _text(base.rstrip("\n").rsplit("\n", 1)[0] + "\n"), "refuse")
    yield Variant("bvh_cut_half", _text(base[: len(base) // 2]), "refuse")

    # counts that disagree with the data
    def frames_says(count: str):
        return _text(base.replace(f"Frames: {frames}", f"Frames: {count}"))

    yield Variant("bvh_frames_more_than_rows", frames_says("300"), "refuse")
    yield Variant("bvh_frames_fewer_than_rows", frames_says("5"), "refuse")
    yield Variant("bvh_frames_zero", frames_says("0"), "refuse")
    yield Variant("bvh_frames_negative", frames_says("-3"), "refuse")
    yield Variant("bvh_frames_not_integer", frames_says("2.5e1"), "refuse")
    yield Variant("bvh_frame_time_zero", _text(re.sub(r"Frame Time: \S+", "Frame Time: 0", base)), "refuse")
    yield Variant("bvh_frame_time_nan", _text(re.sub(r"Frame Time: \S+", "Frame Time: nan", base)), "refuse")
    yield Variant("bvh_root_channels_5", _text(_nth_channels(base, 0, "5")), "refuse")
    yield Variant("bvh_root_channels_7", _text(_nth_channels(base, 0, "7")), "refuse")
    yield Variant("bvh_joint_channels_2", _text(_nth_channels(base, 3, "2")), "refuse")
    yield Variant("bvh_joint_channels_4", _text(_nth_channels(base, 3, "4")), "refuse")
    yield Variant("bvh_joint_channels_99", _text(_nth_channels(base, 3, "99")), "refuse")
    yield Variant("bvh_channel_name_missing", _text(_drop_channel_name(base, 2)), "refuse")
    # a joint with 6 channels where the rows keep 3: the HIERARCHY wants more values per frame
    six = base.replace("CHANNELS 3 Zrotation", "CHANNELS 6 Xposition Yposition Zposition Zrotation", 1)
    yield Variant("bvh_channels_wider_than_rows", _text(six), "refuse")
    yield Variant("bvh_row_value_text", _text(base.rstrip("\n") + "x\n"), "refuse")
    yield Variant("bvh_row_value_inf", _text(re.sub(r"(Frame Time: \S+\n)\S+", r"\1inf", base)), "refuse")
    yield Variant("bvh_motion_only", _text(base[motion_at:]), "refuse")
    yield Variant("bvh_two_roots", _text(base[:motion_at] + base[:motion_at] + base[motion_at:]), "refuse")
    yield from random_text_variants("bvh", base, seed, random_count)
