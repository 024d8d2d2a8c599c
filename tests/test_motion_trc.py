"""TRC reader/writer on the real OpenSim trials and on generated files."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
from motion_samples import simple_trc_rows, trc_text

from musclerl.errors import InputError
from musclerl.motion.keypoints import Y_UP_TO_Z_UP
from musclerl.motion.trc import MarkerData, read_trc, write_trc


def test_rotation_is_proper_and_keeps_x_forward():
    assert np.isclose(np.linalg.det(Y_UP_TO_Z_UP), 1.0)
    np.testing.assert_allclose(Y_UP_TO_Z_UP @ [1, 0, 0], [1, 0, 0])  # forward stays forward
    np.testing.assert_allclose(Y_UP_TO_Z_UP @ [0, 1, 0], [0, 0, 1])  # lab up -> z
    np.testing.assert_allclose(Y_UP_TO_Z_UP @ [0, 0, 1], [0, -1, 0])  # subject's right -> -y


def test_walk_trial(gait2354):
    data = read_trc(gait2354 / "subject01_walk1.trc")
    assert data.positions_m.shape == (151, 41, 3)
    assert data.rate_hz == 60.0 and data.units_in == "mm" and data.z_up
    assert data.time_s[0] == 0.0 and data.duration_s == pytest.approx(2.5)
    # first row of the file: R.ASIS = 617.24762 1055.27502 170.78198 mm (lab x, y, z)
    np.testing.assert_allclose(data.marker("R.ASIS")[0], [0.61724762, -0.17078198, 1.05527502])
    pos = data.positions_m
    assert np.nanmin(pos[..., 2]) > 0.0 and np.nanmax(pos[..., 2]) < 2.0  # above the floor, below 2 m
    # left markers on +y, right on -y; the feet point along +x
    assert np.all(data.marker("L.ASIS")[:, 1] > data.marker("R.ASIS")[:, 1])
    assert np.median(data.marker("R.Toe.Tip")[:, 0] - data.marker("R.Heel")[:, 0]) > 0.1
    assert data.header["OrigDataStartFrame"] == "1"


def test_every_trc_in_shared_data(shared_data):
    files = sorted(shared_data.rglob("*.trc"))
    assert files
    for path in files:
        data = read_trc(path)
        assert data.num_frames > 1 and len(data.names) > 10
        assert np.isfinite(data.positions_m).any(axis=(0, 2)).all(), f"{path.name}: a marker with no data"


def test_static_trial(gait2354):
    data = read_trc(gait2354 / "subject01_static.trc")
    assert data.positions_m.shape == (300, 49, 3)


@pytest.mark.parametrize("y_up", [True, False])
def test_round_trip_real(gait2354, tmp_path, y_up):
    data = read_trc(gait2354 / "subject01_walk1.trc", y_up=y_up)
    write_trc(tmp_path / "copy.trc", data)
    back = read_trc(tmp_path / "copy.trc", y_up=y_up)
    assert back.names == data.names and back.rate_hz == data.rate_hz and back.units_in == "mm"
    np.testing.assert_allclose(back.positions_m, data.positions_m, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(back.time_s, data.time_s)


def test_round_trip_with_gaps_and_units(tmp_path):
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(6, 3, 3))
    pos[2, 1] = np.nan
    data = MarkerData(
        names=("a", "b", "c"), positions_m=pos, time_s=np.arange(6) / 50.0, rate_hz=50.0, units_in="mm"
    )
    for units in ("m", "cm", "mm"):
        write_trc(tmp_path / f"{units}.trc", data, units=units)
        back = read_trc(tmp_path / f"{units}.trc")
        assert back.units_in == units
        np.testing.assert_allclose(back.positions_m, pos, atol=1e-12)
        assert np.isnan(back.positions_m[2, 1]).all() and np.isfinite(back.positions_m[3]).all()


def test_units_and_axes(tmp_path):
    path = tmp_path / "cm.trc"
    rows_cm = [[f"{float(v) / 10:.4f}" for v in row] for row in simple_trc_rows()]  # mm values / 10
    path.write_text(trc_text(["A", "B"], rows_cm, units="cm"))
    data = read_trc(path)
    np.testing.assert_allclose(data.marker("A")[1], [0.1, 0.0, 1.0])  # (10, 100, 0) cm -> x 0.1 m, z 1 m
    np.testing.assert_allclose(data.marker("B")[0], [0.0, -0.2, 0.5])
    raw = read_trc(path, y_up=False)
    np.testing.assert_allclose(raw.marker("B")[0], [0.0, 0.5, 0.2])
    assert not raw.z_up
    rows_m = [[f"{float(v) / 1000:.6f}" for v in row] for row in simple_trc_rows()]
    path.write_text(trc_text(["A", "B"], rows_m, units="meters"))
    assert read_trc(path).units_in == "m"
    path.write_text(trc_text(["A", "B"], simple_trc_rows(), units="meters"))  # millimetres headed m
    with pytest.raises(InputError, match="span 500 m .*as mm they would span 0.5 m"):
        read_trc(path)


def test_gaps_blank_cells_and_zero_triples(tmp_path):
    rows = simple_trc_rows(5)
    rows[1][0:3] = ["", "", ""]  # blank marker A
    rows[2][3:6] = ["0", "0", "0"]  # zero triple = gap
    rows[3] = rows[3][:3]  # short row: marker B missing at the end
    rows[4][1] = ""  # a partly blank triple is a gap
    path = tmp_path / "gaps.trc"
    path.write_text(trc_text(["A", "B"], rows))
    data = read_trc(path)
    a, b = data.marker("A"), data.marker("B")
    assert np.isnan(a[1]).all() and np.isnan(b[2]).all() and np.isnan(b[3]).all() and np.isnan(a[4]).all()
    assert np.isfinite(a[0]).all() and np.isfinite(b[4]).all() and np.isfinite(a[2]).all()
    np.testing.assert_allclose(data.missing_fraction(), [0.4, 0.4])


def test_header_counts_that_disagree_warn_and_use_the_file(tmp_path):
    path = tmp_path / "counts.trc"
    path.write_text(trc_text(["A", "B"], simple_trc_rows(4), num_frames=10, num_markers=3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = read_trc(path)
    messages = " ".join(str(w.message) for w in caught)
    assert "NumFrames=10 but 4 data rows" in messages and "NumMarkers=3" in messages
    assert data.positions_m.shape == (4, 2, 3)


def test_layout_variants(tmp_path):
    rows = simple_trc_rows(3)
    variants = {
        "no_blank_line": trc_text(["A", "B"], rows, blank_line=False),
        "spaces": trc_text(["A", "B"], rows, sep=" "),
        "crlf_trailing_tabs": trc_text(["A", "B"], [r + ["", ""] for r in rows]).replace("\n", "\r\n"),
    }
    for name, text in variants.items():
        path = tmp_path / f"{name}.trc"
        path.write_text(text)
        data = read_trc(path)
        assert data.positions_m.shape == (3, 2, 3), name
        np.testing.assert_allclose(data.marker("A")[2], [0.2, 0.0, 1.0], err_msg=name)


def test_rate_fallbacks(tmp_path):
    path = tmp_path / "rate.trc"
    text = trc_text(["A", "B"], simple_trc_rows(5), rate="100")
    lines = text.splitlines()
    lines[2] = "NaN\t120\t5\t2\tmm\t120\t1\t5"  # DataRate unusable -> CameraRate
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert read_trc(path).rate_hz == 120.0
    lines[2] = "\t\t5\t2\tmm\t\t1\t5"  # neither -> the Time column (0.01 s steps)
    path.write_text("\n".join(lines) + "\n")
    assert read_trc(path).rate_hz == pytest.approx(100.0)


def _opensim_marker_array(path) -> tuple[list[str], np.ndarray]:
    """Markers as OpenSim reads them: labels and (T, M, 3) in the file's units, NaN for gaps."""
    import opensim

    table = opensim.TimeSeriesTableVec3(str(path))
    labels = [table.getColumnLabel(i) for i in range(table.getNumColumns())]
    out = np.array(
        [
            [[table.getRowAtIndex(t)[m].get(k) for k in range(3)] for m in range(len(labels))]
            for t in range(table.getNumRows())
        ]
    )
    return labels, out


@pytest.mark.skipif(importlib.util.find_spec("opensim") is None, reason="opensim package not installed")
def test_reader_agrees_with_opensim(gait2354):
    labels, raw_mm = _opensim_marker_array(gait2354 / "subject01_walk1.trc")
    ours = read_trc(gait2354 / "subject01_walk1.trc", y_up=False)
    assert tuple(labels) == ours.names
    np.testing.assert_allclose(ours.positions_m, raw_mm / 1000.0, rtol=0, atol=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("opensim") is None, reason="opensim package not installed")
def test_written_trc_opens_in_opensim(tmp_path):
    pos = np.arange(4 * 2 * 3, dtype=float).reshape(4, 2, 3) / 10.0 + 0.05
    pos[1, 0] = np.nan
    data = MarkerData(
        names=("A", "B"), positions_m=pos, time_s=np.arange(4) / 100.0, rate_hz=100.0, units_in="mm"
    )
    write_trc(tmp_path / "w.trc", data)
    labels, raw_mm = _opensim_marker_array(tmp_path / "w.trc")
    assert labels == ["A", "B"]
    back = raw_mm / 1000.0 @ Y_UP_TO_Z_UP.T  # OpenSim keeps the lab frame; rotate like read_trc
    np.testing.assert_allclose(back, pos, atol=1e-12)


def test_blank_time_column_uses_frame_numbers(tmp_path):
    text = trc_text(["A", "B"], simple_trc_rows(3), rate="50")
    lines = text.splitlines()
    for i in range(6, 9):
        cells = lines[i].split("\t")
        cells[0], cells[1] = str(i + 4), ""  # frames 10, 11, 12; no time
        lines[i] = "\t".join(cells)
    lines[2] = lines[2].replace("\t1\t", "\t10\t")  # OrigDataStartFrame 10
    (tmp_path / "t.trc").write_text("\n".join(lines) + "\n")
    np.testing.assert_allclose(read_trc(tmp_path / "t.trc").time_s, [0.0, 0.02, 0.04])


def test_space_separated_rows_in_a_tabbed_file(tmp_path):
    text = trc_text(["A", "B"], simple_trc_rows(2))
    lines = text.splitlines()
    lines[-1] = lines[-1].replace("\t", "   ")
    (tmp_path / "mixed.trc").write_text("\n".join(lines) + "\n")
    np.testing.assert_allclose(read_trc(tmp_path / "mixed.trc").marker("A")[1], [0.1, 0.0, 1.0])
