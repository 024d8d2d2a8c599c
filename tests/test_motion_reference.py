"""Reference NPZ schema: writer/reader round trip and validation."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from motion_samples import legacy_reference_arrays, small_reference, write_small_reference

from musclerl.errors import InputError
from musclerl.motion.reference import (
    STRING_KEYS,
    TIME_KEYS,
    ReferenceData,
    muscle_rows_valid,
    read_reference,
    write_reference,
)
from musclerl.motion.storage import read_storage


def _assert_same(a: ReferenceData, b: ReferenceData) -> None:
    times_a, times_b = a.time_arrays(), b.time_arrays()  # None: the layout's default
    for field in dataclasses.fields(ReferenceData):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.name in times_a:
            x, y = times_a[field.name], times_b[field.name]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        else:
            assert x == y, field.name


def test_round_trip(tmp_path):
    ref = small_reference()
    write_reference(tmp_path / "ref.npz", ref)
    back = read_reference(tmp_path / "ref.npz")
    _assert_same(ref, back)
    assert np.isnan(back.torque("hip_flexion_r_moment")[2]) and back.angle("pelvis_ty")[0] == 0.9


def test_written_keys_match_the_dataset_layout(tmp_path):
    """Every key of the Boo_LevelWalking layout, with its shape and dtype."""
    write_reference(tmp_path / "ref.npz", small_reference())
    n, q, a, g = 5, 3, 3, 3
    expected = {
        **dict.fromkeys(STRING_KEYS, ((), "U")),
        "timestep": ((n,), "i"),
        "time_sec": ((n,), "f"),
        "source_time_sec": ((n,), "f"),
        "original_kinematics_time_sec": ((n,), "f"),
        "id_source_time_sec": ((n + 1,), "f"),
        "original_id_source_time_sec": ((n + 1,), "f"),
        "joint_angle": ((n, a), "f"),
        "joint_angle_columns": ((a,), "U"),
        "joint_torque": ((n, q), "f"),
        "joint_torque_columns": ((q,), "U"),
        "joint_torque_valid": ((n,), "b"),
        "joint_torque_column_valid": ((n, q), "b"),
        "subject_weight_kg": ((), "f"),
        "subject_body_weight_n": ((), "f"),
        "computed_grf": ((n, g), "f"),
        "computed_grf_columns": ((g,), "U"),
        "computed_grf_valid": ((n,), "b"),
        "source_files": ((3,), "U"),
    }
    with np.load(tmp_path / "ref.npz") as z:
        assert set(z.files) == set(expected)
        for key, (shape, kind) in expected.items():
            assert (z[key].shape, z[key].dtype.kind) == (shape, kind), key
        np.testing.assert_array_equal(z["timestep"], np.arange(n))
        # mtp_angle_r is never valid, so no row is; the knee column is valid throughout
        assert not z["joint_torque_valid"].any() and z["joint_torque_column_valid"][:, 1].all()
        assert str(z["qc_notes"]) == "mtp moment not computed"


def test_legacy_layout_reads_with_one_warning(tmp_path):
    np.savez(tmp_path / "old.npz", **legacy_reference_arrays())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref = read_reference(tmp_path / "old.npz")
    assert len(caught) == 1 and "earlier musclerl reference layout" in str(caught[0].message)
    assert "\n" not in str(caught[0].message)
    want = small_reference()
    np.testing.assert_array_equal(ref.joint_torque_column_valid, want.joint_torque_column_valid)
    np.testing.assert_array_equal(ref.timestep, np.arange(5))
    assert ref.computed_grf_valid.shape == (5,) and ref.qc_notes == "mtp moment not computed; low-pass 6 Hz"
    # the converted reference writes in the current layout and reads back without a warning
    write_reference(tmp_path / "new.npz", ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _assert_same(ref, read_reference(tmp_path / "new.npz"))


def test_from_real_opensim_outputs(gait2354, tmp_path):
    """Build a reference from OpenSim's IK and ID of subject01 the way the exporter does."""
    ik = read_storage(gait2354 / "subject01_walk1_ik.mot")
    inverse = read_storage(gait2354 / "inverse_dynamics.sto")
    mass_kg = 72.6  # nominal; the layout only needs torques divided by the mass used
    moments = [c for c in inverse.columns if c.endswith(("_moment", "_force"))]
    torque = np.column_stack([inverse.column(c) for c in moments]) / mass_kg
    n = ik.num_rows
    t0 = ik.time_s[0]
    ref = ReferenceData(
        subject="subject01",
        trial="walk1",
        step_label="Step01_Step02",
        time_sec=ik.time_s - t0,
        joint_angle=ik.data,
        joint_angle_columns=ik.columns,
        joint_torque=torque,
        joint_torque_columns=tuple(moments),
        joint_torque_column_valid=np.isfinite(torque),
        subject_weight_kg=mass_kg,
        subject_body_weight_n=mass_kg * 9.80665,
        computed_grf=np.zeros((n, 0)),
        computed_grf_columns=(),
        computed_grf_valid=np.zeros(n, bool),
        source_files=("subject01_walk1_ik.mot", "inverse_dynamics.sto", ""),
        id_source_time_sec=inverse.time_s - t0,
        original_id_source_time_sec=inverse.time_s,
        original_kinematics_time_sec=ik.time_s,
    )
    write_reference(tmp_path / "subject01.npz", ref)
    back = read_reference(tmp_path / "subject01.npz")
    _assert_same(ref, back)
    assert back.joint_angle_columns[3] == "pelvis_tx" and back.joint_torque.shape == (73, 23)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"joint_torque_column_valid": np.ones((5, 3), bool)}, "NaN/inf where joint_torque_column_valid"),
        ({"joint_torque_column_valid": np.ones((5, 2), bool)}, "joint_torque_column_valid must be"),
        ({"joint_torque_valid": np.ones(4, bool)}, "joint_torque_valid must be \\(T,\\)"),
        ({"timestep": np.arange(4)}, "timestep must be \\(T,\\)"),
        ({"timestep": np.arange(5) * 0.5}, "integer frame indices"),
        ({"joint_angle_columns": np.array(["a", "a", "b"])}, "duplicate"),
        ({"time_sec": np.array([0.0, 0.1, 0.1, 0.2, 0.3])}, "increasing"),
        ({"source_time_sec": np.zeros(3)}, "source_time_sec must be"),
        ({"original_id_source_time_sec": np.zeros(2)}, "original_id_source_time_sec must match"),
        ({"computed_grf_valid": np.ones(4, bool)}, "computed_grf_valid must be"),
        ({"computed_grf": np.full((5, 3), np.nan)}, "computed_grf is all NaN on a row"),
        ({"computed_grf": np.full((5, 3), np.inf)}, "computed_grf contains inf"),
        ({"joint_torque_column_valid": np.ones((5, 3), dtype=int) * 2}, "bool mask"),
        ({"subject": np.array(["a", "b"])}, "'subject' must be a single string"),
    ],
)
def test_validation_errors(tmp_path, change, message):
    write_small_reference(tmp_path / "r.npz", **change)
    with pytest.raises(InputError, match=message):
        read_reference(tmp_path / "r.npz")


def test_grf_may_lack_single_values_on_valid_rows(tmp_path):
    """A plate's COP is undefined while nothing stands on it: NaN there is not a broken file."""
    grf = np.tile([0.1, 1.0, 0.0], (5, 1))
    grf[1:3, 2] = np.nan
    write_small_reference(tmp_path / "r.npz", computed_grf=grf)
    assert np.isnan(read_reference(tmp_path / "r.npz").computed_grf[1, 2])


def test_time_keys_absent_take_the_kinematics_time(tmp_path):
    """Files from other tools may lack the four optional time keys: they read as ``time_sec``."""
    write_small_reference(tmp_path / "r.npz", **dict.fromkeys(TIME_KEYS))
    ref = read_reference(tmp_path / "r.npz")
    np.testing.assert_array_equal(ref.time_arrays()["id_source_time_sec"], ref.time_sec)


def test_muscle_rows_follow_their_leg():
    ref = small_reference()
    rows = muscle_rows_valid(ref, ["soleus_r", "soleus_l", "lumbar"])
    # right leg: hip_flexion_r invalid at row 2, mtp_angle_r never valid -> no right row valid
    assert not rows[:, 0].any() and rows[:, 1].all() and not rows[:, 2].any()


def test_invalid_reference_is_not_written(tmp_path):
    ref = dataclasses.replace(small_reference(), joint_angle=np.zeros((4, 3)))
    with pytest.raises(InputError, match="joint_angle must be"):
        write_reference(tmp_path / "bad.npz", ref)
    assert list(tmp_path.iterdir()) == []


def test_legacy_layout_cli_warns_on_one_line(tmp_path, capsys):
    from musclerl.cli import main

    np.savez(tmp_path / "old.npz", **legacy_reference_arrays())
    assert main(["info", str(tmp_path / "old.npz")]) == 0
    said = capsys.readouterr().out.splitlines()  # info lists a file's warnings, one line
    lines = [line for line in said if "earlier musclerl reference layout" in line]
    assert len(lines) == 1 and lines[0].startswith("warnings:")
