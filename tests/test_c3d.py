"""C3D input: the reader against OpenSim's own extraction of the same files, the plate-to-foot rule,
``musclerl convert``, ``reference --grf X.c3d`` and ``retarget markers`` from a C3D.

OpenSim's references (``../shared/data/opensim_c3d/std_*``, written by its ``C3DFileAdapter`` test)
are in the lab frame (no rotation), mm and N·mm; markers every 10th frame (written with 5
significant digits: 0.05 mm rounding), plates every 100th analog sample.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from c3d_samples import write_c3d

from musclerl.cli import main
from musclerl.motion.c3d import C3DTrial, ForcePlates, read_c3d
from musclerl.motion.foot_loads import MIN_LOAD_N, external_loads_xml, foot_loads_table, plate_contacts
from musclerl.motion.storage import read_storage
from musclerl.motion.trc import MarkerData, read_trc

WALKS = ("walking2", "walking5")


@pytest.fixture(scope="module")
def c3d_data(shared_data):
    path = shared_data / "opensim_c3d"
    if not path.is_dir():
        pytest.skip("opensim_c3d data not present")
    return path


def _lab(points_world: np.ndarray, trial: C3DTrial) -> np.ndarray:
    """World-frame points (..., 3) back in the C3D lab frame."""
    return points_world @ trial.lab_to_world


@pytest.mark.parametrize("walk", WALKS)
def test_markers_match_opensim(c3d_data, walk):
    trial = read_c3d(c3d_data / f"{walk}.c3d", plates=False)
    with pytest.warns(UserWarning, match="Time column implies"):  # OpenSim's file keeps DataRate=250
        reference = read_trc(c3d_data / f"std_{walk}_markers.trc", y_up=False)
    assert trial.markers.names == reference.names
    frames = np.round(reference.time_s * trial.markers.rate_hz).astype(int)
    np.testing.assert_allclose(trial.markers.time_s[frames], reference.time_s, atol=1e-12)
    ours = _lab(trial.markers.positions_m[frames], trial)
    assert np.array_equal(np.isnan(ours), np.isnan(reference.positions_m))  # the same gaps
    assert np.isnan(ours).any() and (~np.isnan(ours)).sum() > 1000
    assert np.nanmax(np.abs(ours - reference.positions_m)) < 1e-4  # 0.1 mm (measured: 0.050 mm)


@pytest.mark.parametrize("walk", WALKS)
def test_plates_match_opensim(c3d_data, walk):
    """Forces on every stored sample; centre of pressure and free moment where the plate is loaded
    (unloaded, both are a ratio of noise to a near-zero vertical force: meaningless in either)."""
    trial = read_c3d(c3d_data / f"{walk}.c3d")
    plates = trial.plates
    wrench = read_storage(c3d_data / f"std_{walk}_grfs.sto")
    cop = read_storage(c3d_data / f"std_cop_{walk}_grfs.sto")
    samples = np.round(wrench.time_s * plates.rate_hz).astype(int)
    assert plates.count == 2 and plates.types == (2, 2) and plates.rate_hz == 2000.0
    for p in range(plates.count):
        cols = [f"f{p + 1}_{a}" for a in (1, 2, 3)]
        force = _lab(plates.force_n[samples, p], trial)
        expected = np.column_stack([wrench.column(c) for c in cols])
        assert np.abs(force - expected).max() < 0.1  # N (measured: 5e-9 N)
        loaded = force[:, 2] > MIN_LOAD_N
        assert loaded.sum() >= 8
        ours_cop = _lab(plates.cop_m[samples, p], trial)[loaded] * 1e3
        their_cop = np.column_stack([cop.column(f"p{p + 1}_{a}") for a in (1, 2, 3)])[loaded]
        assert np.abs(ours_cop - their_cop).max() < 0.1  # mm (measured: 5e-8 mm)
        free = _lab(plates.free_moment_nm[samples, p], trial)[loaded] * 1e3
        their_free = np.column_stack([cop.column(f"m{p + 1}_{a}") for a in (1, 2, 3)])[loaded]
        assert np.abs(free - their_free).max() < 0.1  # N·mm


def test_convert_writes_opensim_files(c3d_data, tmp_path, capsys):
    from musclerl.dynamics.inverse_dynamics import read_external_loads

    out = tmp_path / "out"
    assert main(["convert", str(c3d_data / "walking2.c3d"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "plate 1 2.675-3.244 s -> r foot" in printed and "plate 2 2.251-2.751 s -> l foot" in printed
    trial = read_c3d(c3d_data / "walking2.c3d")
    markers = read_trc(out / "walking2.trc")  # Y-up file read back into the Z-up world
    assert markers.names == trial.markers.names and markers.units_in == "mm"
    np.testing.assert_allclose(markers.positions_m, trial.markers.positions_m, atol=1e-12)
    np.testing.assert_allclose(markers.time_s, trial.markers.time_s, atol=1e-12)

    grf = read_storage(out / "walking2_grf.mot")
    sides = [c.split("_")[2] for c in grf.columns]
    assert sides == ["r"] * 9 + ["l"] * 9
    assert grf.columns[:9] == (
        *(f"ground_force_r_v{a}" for a in "xyz"),
        *(f"ground_force_r_p{a}" for a in "xyz"),
        *(f"ground_torque_r_{a}" for a in "xyz"),
    )
    # Y up: the vertical force is vy, the plates' sum where loaded; the point lies on the floor (py = 0)
    vertical = trial.plates.force_n[..., 2]
    loaded = vertical > MIN_LOAD_N
    feet_vy = grf.column("ground_force_r_vy") + grf.column("ground_force_l_vy")
    np.testing.assert_allclose(feet_vy, np.where(loaded, vertical, 0.0).sum(axis=1), atol=1e-9)
    right = loaded[:, 0]  # plate 1 carries the right foot
    np.testing.assert_allclose(grf.column("ground_force_r_vy")[right], vertical[right, 0], atol=1e-9)
    np.testing.assert_allclose(grf.column("ground_force_r_px")[right], trial.plates.cop_m[right, 0, 0])
    np.testing.assert_allclose(grf.column("ground_force_r_pz")[right], -trial.plates.cop_m[right, 0, 1])
    assert np.abs(grf.column("ground_force_l_py")).max() < 1e-9

    forces, datafile = read_external_loads(out / "walking2_grf.xml")
    assert datafile == "walking2_grf.mot"
    assert [(f.body, f.force_identifier, f.torque_identifier) for f in forces] == [
        ("calcn_r", "ground_force_r_v", "ground_torque_r_"),
        ("calcn_l", "ground_force_l_v", "ground_torque_l_"),
    ]


def test_plate_goes_to_the_nearer_side(c3d_data):
    """Swapping the R/L letters of every label swaps every contact's foot."""
    trial = read_c3d(c3d_data / "walking5.c3d")
    swap = {"R": "L", "L": "R"}
    names = tuple(swap.get(n[0], n[0]) + n[1:] for n in trial.markers.names)
    mirrored = dataclasses.replace(trial, markers=dataclasses.replace(trial.markers, names=names))
    sides = [(c.plate, c.side) for c in plate_contacts(trial)]
    assert sides == [(0, "l"), (1, "r")]
    assert [(c.plate, c.side) for c in plate_contacts(mirrored)] == [(0, "r"), (1, "l")]
    assert all(max(c.distance_m.values()) > 5 * min(c.distance_m.values()) for c in plate_contacts(trial))


def _synthetic_trial(cop_m: np.ndarray, force_n: np.ndarray, free_nm: np.ndarray) -> C3DTrial:
    """Two heel markers per side on the floor (right at y = -0.1 m, left at y = +0.1 m) and the given
    plates (T, P, 3), world frame; markers at 100 Hz, plates at 1 kHz."""
    n = force_n.shape[0]
    heels = np.array([[0.0, -0.1, 0.05], [0.2, -0.1, 0.05], [0.0, 0.1, 0.05], [0.2, 0.1, 0.05]])
    markers = MarkerData(
        ("RHEE", "RTOE", "LHEE", "LTOE"),
        np.tile(heels, (n // 10, 1, 1)),
        np.arange(n // 10) / 100.0,
        100.0,
        "m",
    )
    plates = ForcePlates(
        force_n, cop_m, free_nm, np.zeros((2, 4, 3)), np.zeros((2, 3)), np.arange(n) / 1000.0, 1000.0, (2, 2)
    )
    return C3DTrial(markers, plates, (), np.eye(3))


def test_one_foot_on_two_plates_keeps_the_resultant():
    """The right foot straddles two plates: the foot's force, point and torque give the same
    resultant force and moment about the origin as the two plates' loads."""
    rng = np.random.default_rng(1)
    n = 40
    force = np.zeros((n, 2, 3))
    force[:, :, 2] = rng.uniform(200.0, 400.0, (n, 2))
    force[:, :, :2] = rng.normal(0.0, 40.0, (n, 2, 2))
    cop = np.zeros((n, 2, 3))
    cop[:, 0, :2] = [0.02, -0.11]
    cop[:, 1, :2] = [0.18, -0.09]
    cop[..., :2] += rng.normal(0.0, 0.01, (n, 2, 2))
    free = np.zeros((n, 2, 3))
    free[..., 2] = rng.normal(0.0, 3.0, (n, 2))
    trial = _synthetic_trial(cop, force, free)
    assert [c.side for c in plate_contacts(trial)] == ["r", "r"]
    table = foot_loads_table(trial)
    from musclerl.motion.keypoints import y_up_to_z_up

    def block(name: str) -> np.ndarray:
        return y_up_to_z_up(np.column_stack([table.column(f"{name}{a}") for a in "xyz"]))

    f, p, t = block("ground_force_r_v"), block("ground_force_r_p"), block("ground_torque_r_")
    np.testing.assert_allclose(f, force.sum(axis=1), atol=1e-9)
    moment_plates = (np.cross(cop, force) + free).sum(axis=1)
    np.testing.assert_allclose(np.cross(p, f) + t, moment_plates, atol=1e-9)
    np.testing.assert_allclose(p[:, 2], 0.0, atol=1e-12)
    assert np.abs(table.data[:, 9:]).max() == 0.0  # the left foot carries nothing


def test_reader_details_gaps_events_and_y_up(tmp_path):
    rng = np.random.default_rng(0)
    pos = rng.uniform(0.0, 1000.0, (10, 3, 3))
    residuals = np.zeros((10, 3))
    residuals[2, 1] = -1.0
    pos[4, 2] = 0.0  # an all-zero triple is a gap too
    events = [("Right", "Foot Strike", 0.05), ("Left", "Foot Off", 0.02)]
    write_c3d(tmp_path / "a.c3d", ["RHEE", "LHEE", "C7"], pos, 100.0, residuals=residuals, events=events)
    trial = read_c3d(tmp_path / "a.c3d")
    gaps = np.isnan(trial.markers.positions_m).all(axis=-1)
    assert np.argwhere(gaps).tolist() == [[2, 1], [4, 2]]
    np.testing.assert_allclose(trial.markers.positions_m[~gaps] * 1e3, pos[~gaps], atol=1e-3)
    assert [(e.context, e.label) for e in trial.events] == [("Left", "Foot Off"), ("Right", "Foot Strike")]
    np.testing.assert_allclose([e.time_s for e in trial.events], [0.02, 0.05], atol=1e-6)
    assert trial.plates.count == 0

    pos_m = pos * 1e-3
    write_c3d(tmp_path / "y.c3d", ["RHEE", "LHEE", "C7"], pos_m, 100.0, units="m", screen=("+X", "+Y"))
    y_up = read_c3d(tmp_path / "y.c3d").markers.positions_m
    ok = ~np.isnan(y_up[..., 0])
    expected = np.stack([pos_m[..., 0], -pos_m[..., 2], pos_m[..., 1]], axis=-1)  # as a Y-up .trc is read
    np.testing.assert_allclose(y_up[ok], expected[ok], rtol=1e-6)


def test_external_loads_xml_escapes_the_file_name():
    assert "<datafile>a&amp;b_grf.mot</datafile>" in external_loads_xml("a&b_grf.mot")


def test_reference_grf_from_c3d_equals_converted_files(c3d_data, tmp_path):
    """``reference --grf X.c3d`` applies the same loads as the converted ``.mot`` + ``.xml``."""
    from musclerl.motion.reference import read_reference

    t = np.arange(2.2, 3.3, 0.02)
    motion = tmp_path / "still.mot"
    header = f"still\nversion=1\nnRows={len(t)}\nnColumns=3\ninDegrees=yes\nendheader\n"
    motion.write_text(
        header + "time\thip_flexion_r\thip_flexion_l\n" + "".join(f"{v:.4f}\t10\t-5\n" for v in t)
    )
    files = tmp_path / "converted"
    assert main(["convert", str(c3d_data / "walking2.c3d"), "--out", str(files)]) == 0
    base = ["reference", str(motion), "--model", "myolegs", "--no-static-optimisation", "--mass", "70"]
    assert main([*base, "--grf", str(c3d_data / "walking2.c3d"), "--out", str(tmp_path / "a.npz")]) == 0
    assert main([*base, "--loads", str(files / "walking2_grf.xml"), "--out", str(tmp_path / "b.npz")]) == 0
    a, b = read_reference(tmp_path / "a.npz"), read_reference(tmp_path / "b.npz")
    assert a.computed_grf_columns == b.computed_grf_columns
    assert a.computed_grf_columns[0] == "calcn_r_force_x"
    np.testing.assert_allclose(a.computed_grf, b.computed_grf, atol=1e-12)
    np.testing.assert_allclose(a.joint_torque, b.joint_torque, atol=1e-9, equal_nan=True)
    assert np.nanmax(a.computed_grf) > 0.9  # body weights: the stance foot's vertical load (Z up)


def test_retarget_from_c3d_equals_from_trc(tmp_path):
    """The same markers as a C3D and as a .trc retarget to the same angles (the C3D is read through
    the READERS table, as the static trial)."""
    from markers_fixtures import write_case

    from musclerl.motion.storage import read_storage as read_mot
    from musclerl.motion.trc import write_trc

    case = write_case(tmp_path / "case", frames=8)
    paths = {}
    for key in ("walk", "static"):
        markers = read_trc(case[key])
        lab = markers.positions_m * 1e3  # the Z-up world is a Vicon lab frame
        paths[key] = tmp_path / f"{key}.c3d"
        write_c3d(paths[key], list(markers.names), np.nan_to_num(lab), markers.rate_hz)
        # what the C3D holds (float32), as a .trc: the two inputs carry the same numbers
        write_trc(tmp_path / f"{key}.trc", read_c3d(paths[key]).markers)
    outs = {}
    for kind in ("c3d", "trc"):
        mot = tmp_path / f"{kind}.mot"
        argv = ["retarget", "markers", str(tmp_path / f"walk.{kind}"), "--model", "tiny"]
        argv += ["--markers", str(case["markers"]), "--static", str(tmp_path / f"static.{kind}")]
        assert main([*argv, "--out", str(tmp_path / f"{kind}.npz"), "--mot", str(mot)]) == 0
        outs[kind] = read_mot(mot)
    assert outs["c3d"].columns == outs["trc"].columns
    np.testing.assert_allclose(outs["c3d"].data, outs["trc"].data, atol=1e-6)  # degrees


def test_reference_weighs_the_person_on_the_plates_without_a_mass(c3d_data, tmp_path):
    """A C3D carries no mass: ``reference --grf X.c3d`` without ``--mass`` takes the plates' (one
    stance of each foot a step apart: walking2's person, 63.5 kg; the model weighs 75 kg) and
    normalises by it; with ``--mass`` the given one."""
    from musclerl.motion.reference import read_reference

    t = np.arange(2.2, 3.3, 0.02)
    motion = tmp_path / "still.mot"
    header = f"still\nversion=1\nnRows={len(t)}\nnColumns=3\ninDegrees=yes\nendheader\n"
    motion.write_text(
        header + "time\thip_flexion_r\thip_flexion_l\n" + "".join(f"{v:.4f}\t10\t-5\n" for v in t)
    )
    base = ["reference", str(motion), "--model", "myolegs", "--no-static-optimisation"]
    base += ["--grf", str(c3d_data / "walking2.c3d")]
    assert main([*base, "--out", str(tmp_path / "a.npz")]) == 0
    assert main([*base, "--mass", "70", "--out", str(tmp_path / "b.npz")]) == 0
    a, b = read_reference(tmp_path / "a.npz"), read_reference(tmp_path / "b.npz")
    assert a.subject_weight_kg == pytest.approx(63.5, abs=0.1) and b.subject_weight_kg == 70.0
    assert "from the plates" in a.qc_notes and "from the plates" not in b.qc_notes
    np.testing.assert_allclose(a.computed_grf * 63.474, b.computed_grf * 70.0, rtol=1e-3, atol=1e-9)
