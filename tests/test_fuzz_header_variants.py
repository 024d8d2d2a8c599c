"""Header and layout variants of the shared OpenSim files: each reads to the same numbers.

Every ``.trc`` and ``.mot``/``.sto`` of ``../shared/data/opensim_gait2354`` is rewritten in the
layouts OpenSim reads (CRLF, byte-order mark, trailing tabs, no final newline, header values
separated by repeated tabs or spaces, a ``NumFrames`` that disagrees with the rows, spaced
columns, ``key = value``) and read back: names, rate, times and values must equal those of the
original file. Where the ``opensim`` package is installed, OpenSim reads each variant too and
must find the same frames, rate, names and values.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from fuzz_inputs import header_layout_variants

from musclerl.motion.storage import read_storage
from musclerl.motion.trc import read_trc

HAS_OPENSIM = importlib.util.find_spec("opensim") is not None
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "opensim_gait2354"
TRC_FILES = ["subject01_walk1.trc", "subject01_static.trc"]
STORAGE_FILES = ["subject01_walk1_ik.mot", "subject01_walk1_grf.mot", "inverse_dynamics.sto"]


def _variants(name: str) -> list[tuple[str, str]]:
    if not (SHARED / name).is_file():
        return [("absent", "")]
    text = (SHARED / name).read_bytes().decode("utf-8")
    return list(header_layout_variants(text, "trc" if name.endswith(".trc") else "storage"))


def _read_quietly(reader, path: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = reader(path)
    assert all("\n" not in str(w.message) for w in caught)
    return result


TRC_CASES = [(name, v, t) for name in TRC_FILES for v, t in _variants(name)]
STORAGE_CASES = [(name, v, t) for name in STORAGE_FILES for v, t in _variants(name)]


@pytest.mark.parametrize("name, variant, text", TRC_CASES, ids=[f"{n}-{v}" for n, v, _ in TRC_CASES])
def test_trc_variants_read_the_same(gait2354, tmp_path, name, variant, text):
    original = read_trc(gait2354 / name, y_up=False)
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    data = _read_quietly(lambda p: read_trc(p, y_up=False), path)
    assert data.names == original.names and data.rate_hz == original.rate_hz and data.units_in == "mm"
    np.testing.assert_array_equal(data.time_s, original.time_s)
    np.testing.assert_array_equal(data.positions_m, original.positions_m)  # NaN gaps in the same cells
    if HAS_OPENSIM:
        import opensim

        table = opensim.TimeSeriesTableVec3(str(path))
        labels = [table.getColumnLabel(i) for i in range(table.getNumColumns())]
        assert tuple(labels) == data.names and table.getNumRows() == data.num_frames
        assert float(table.getTableMetaDataAsString("DataRate")) == data.rate_hz
        raw = np.array(
            [
                [[table.getRowAtIndex(t)[m].get(k) for k in range(3)] for m in range(len(labels))]
                for t in range(table.getNumRows())
            ]
        )
        np.testing.assert_allclose(data.positions_m, raw / 1000.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name, variant, text", STORAGE_CASES, ids=[f"{n}-{v}" for n, v, _ in STORAGE_CASES])
def test_storage_variants_read_the_same(gait2354, tmp_path, name, variant, text):
    original = read_storage(gait2354 / name)
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    table = _read_quietly(read_storage, path)
    assert table.columns == original.columns and table.in_degrees == original.in_degrees
    np.testing.assert_array_equal(table.time_s, original.time_s)
    np.testing.assert_array_equal(table.data, original.data)
    if HAS_OPENSIM:
        import opensim

        theirs = opensim.TimeSeriesTable(str(path))
        labels = [theirs.getColumnLabel(i) for i in range(theirs.getNumColumns())]
        assert tuple(labels) == table.columns and theirs.getNumRows() == table.num_rows
        np.testing.assert_allclose(np.array(theirs.getIndependentColumn()), table.time_s, rtol=0, atol=1e-12)
        values = np.array(
            [[theirs.getRowAtIndex(r)[c] for c in range(len(labels))] for r in range(table.num_rows)]
        )
        np.testing.assert_allclose(values, table.data, rtol=0, atol=1e-12, equal_nan=True)


def test_variants_cover_the_known_layouts():
    names = {v for _, v, _ in TRC_CASES} | {v for _, v, _ in STORAGE_CASES}
    if "absent" in names:
        pytest.skip("../shared/data is not present")
    expected = {"crlf", "bom", "trailing_tabs", "header_double_tabs", "header_spaces", "numframes_wrong"}
    assert expected <= names and "spaces_around_equals" in names
