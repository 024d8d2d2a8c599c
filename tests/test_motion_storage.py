"""OpenSim .mot/.sto reader/writer on the real files and on generated headers."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
from motion_samples import storage_text

from musclerl.errors import InputError
from musclerl.motion.storage import Table, parse_float, read_storage, write_storage


def test_ik_mot(gait2354):
    table = read_storage(gait2354 / "subject01_walk1_ik.mot")
    assert table.data.shape == (73, 23) and table.in_degrees and table.name == "Coordinates"
    assert table.time_s[0] == 0.4 and table.time_s[-1] == pytest.approx(1.6)
    assert table.rate_hz == pytest.approx(60.0)
    assert table.column("knee_angle_r")[0] == -54.91982332
    assert "Angles are in degrees." in table.header["comments"]


def test_grf_mot_with_trailing_tabs(gait2354):
    table = read_storage(gait2354 / "subject01_walk1_grf.mot")
    assert table.data.shape == (1501, 18) and table.name == "subject01_walk1_grf.mot"
    assert table.rate_hz == pytest.approx(600.0)
    assert table.header["nRows"] == "1501"
    assert np.max(table.column("ground_force_vy")) > 500  # vertical force of a ~70 kg walker, N


def test_id_sto(gait2354):
    table = read_storage(gait2354 / "inverse_dynamics.sto")
    assert not table.in_degrees and table.columns[0] == "pelvis_tilt_moment" and table.num_rows == 73


SIZE_KEYS = {"version", "nRows", "nColumns", "inDegrees", "datacolumns", "datarows", "range"}


def _content(header: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in header.items() if k not in SIZE_KEYS}


def test_every_storage_file_round_trips_exactly(shared_data, tmp_path):
    files = sorted([*shared_data.rglob("*.mot"), *shared_data.rglob("*.sto")])
    assert len(files) >= 5
    for path in files:
        table = read_storage(path)
        out = tmp_path / path.name
        write_storage(out, table)
        back = read_storage(out)
        assert back.columns == table.columns and back.name == table.name
        assert back.in_degrees == table.in_degrees
        # the header's size lines are rewritten from the data in the current format (an old
        # c3dExport file's datacolumns/datarows/range become nRows/nColumns); every other key stays
        assert _content(back.header) == _content(table.header), path.name
        np.testing.assert_array_equal(back.data, table.data)  # bit for bit
        np.testing.assert_array_equal(back.time_s, table.time_s)


def test_round_trip_exact_random_and_nan(tmp_path):
    rng = np.random.default_rng(1)
    data = rng.normal(size=(20, 3)) * 10.0 ** rng.integers(-8, 8, size=(20, 3))
    data[3, 1] = np.nan
    table = Table(
        columns=("a", "b_tx", "c"),
        data=data,
        time_s=np.cumsum(rng.uniform(0.001, 0.1, 20)),
        in_degrees=False,
        name="random",
    )
    write_storage(tmp_path / "r.sto", table)
    back = read_storage(tmp_path / "r.sto")
    np.testing.assert_array_equal(back.data, data)
    np.testing.assert_array_equal(back.time_s, table.time_s)
    assert not back.in_degrees and back.name == "random"


def test_legacy_counts_that_disagree(tmp_path):
    """nRows that disagrees: the rows win, with a warning; nColumns that disagrees: refused."""
    rows = np.column_stack([np.arange(4) / 100.0, np.ones(4), np.zeros(4)])
    path = tmp_path / "legacy.mot"
    header = ["legacy", "nRows=99", "nColumns=3", "inDegrees=yes", "endheader"]
    path.write_text(storage_text(["q1", "q2"], rows, header=header))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = read_storage(path)
    assert "nRows=99 but the file has 4 rows" in " ".join(str(w.message) for w in caught)
    assert table.data.shape == (4, 2)
    header[1:3] = ["nRows=4", "nColumns=7"]
    path.write_text(storage_text(["q1", "q2"], rows, header=header))
    with pytest.raises(InputError, match="nColumns=7 but the file has 3 columns"):
        read_storage(path)


def test_simm_and_opensim4_headers(tmp_path):
    rows = np.column_stack([np.arange(3) / 10.0, np.arange(3.0)])
    simm = tmp_path / "simm.mot"
    simm.write_text(
        storage_text(["q"], rows, header=["datacolumns 2", "datarows 3", "range 0 0.2", "endheader"])
    )
    table = read_storage(simm)
    assert table.header["datarows"] == "3" and table.data.shape == (3, 1) and not table.in_degrees
    os4 = tmp_path / "os4.sto"
    os4.write_text(
        storage_text(
            ["q"],
            rows,
            header=["DataType=double", "version=3", "OpenSimVersion=4.5", "inDegrees=no", "endheader"],
        )
    )
    table = read_storage(os4)
    assert table.header["OpenSimVersion"] == "4.5" and table.name == "os4"
    write_storage(tmp_path / "again.sto", table)
    assert read_storage(tmp_path / "again.sto").header["OpenSimVersion"] == "4.5"


def test_space_separated_labels_and_crlf(tmp_path):
    rows = np.column_stack([np.arange(3) / 10.0, np.arange(3.0)])
    text = storage_text(["q"], rows).replace("time\tq", "time   q").replace("\n", "\r\n")
    path = tmp_path / "spaces.mot"
    path.write_text(text)
    np.testing.assert_allclose(read_storage(path).column("q"), [0, 1, 2])


def test_missing_column_is_input_error(gait2354):
    table = read_storage(gait2354 / "subject01_walk1_ik.mot")
    with pytest.raises(InputError, match="no column 'knee_angle'"):
        table.column("knee_angle")


def test_failed_write_leaves_no_file(tmp_path):
    table = Table(
        columns=("has space",), data=np.zeros((2, 1)), time_s=np.arange(2.0), in_degrees=True, name="x"
    )
    with pytest.raises(InputError, match="whitespace"):
        write_storage(tmp_path / "bad.mot", table)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("opensim") is None, reason="opensim package not installed")
def test_written_mot_opens_in_opensim(gait2354, tmp_path):
    import opensim

    table = read_storage(gait2354 / "subject01_walk1_ik.mot")
    write_storage(tmp_path / "ik.mot", table)
    storage = opensim.Storage(str(tmp_path / "ik.mot"))
    assert storage.getSize() == 73 and storage.getColumnLabels().getSize() == 24
    sto = opensim.TimeSeriesTable(str(tmp_path / "ik.mot"))
    assert sto.getNumRows() == 73 and sto.getNumColumns() == 23


def test_mot_first_column_other_than_time(tmp_path):
    rows = np.column_stack([np.arange(3.0), np.arange(3.0) * 2])
    path = tmp_path / "frames.mot"
    path.write_text(storage_text(["q"], rows).replace("time\tq", "frame\tq"))
    with pytest.warns(UserWarning, match="first column is 'frame'"):
        table = read_storage(path)
    np.testing.assert_array_equal(table.time_s, [0, 1, 2])


def test_windows_nan_spellings(tmp_path):
    path = tmp_path / "win.sto"
    path.write_text("name\ninDegrees=no\nendheader\ntime\ta\tb\n0.0\t-nan(ind)\t1\n0.1\t1.#QNAN\t2\n")
    table = read_storage(path)
    assert np.isnan(table.column("a")).all() and table.column("b")[0] == 1 and not table.in_degrees
    assert parse_float("1.#INF") == np.inf  # read, then refused as a value:
    path.write_text("name\nendheader\ntime\ta\tb\n0.0\t-nan(ind)\t1.#INF\n0.1\t1.#QNAN\t2\n")
    with pytest.raises(InputError, match="line 4, column 'b': value inf is infinite or absurd"):
        read_storage(path)
