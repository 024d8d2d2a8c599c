"""Reference NPZ schema: writer/reader round trip and validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from motion_samples import small_reference, write_small_reference

from musclerl.errors import InputError
from musclerl.motion.reference import REQUIRED_KEYS, ReferenceData, read_reference, write_reference
from musclerl.motion.storage import read_storage


def _assert_same(a: ReferenceData, b: ReferenceData) -> None:
    for field in dataclasses.fields(ReferenceData):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        else:
            assert x == y, field.name


def test_round_trip(tmp_path):
    ref = small_reference()
    write_reference(tmp_path / "ref.npz", ref)
    back = read_reference(tmp_path / "ref.npz")
    _assert_same(ref, back)
    with np.load(tmp_path / "ref.npz") as z:
        assert set(REQUIRED_KEYS) <= set(z.files) and "source_time_sec" in z.files
        assert z["joint_torque_valid"].dtype == bool and z["subject"].shape == ()
    assert np.isnan(back.torque("hip_flexion_r")[2]) and back.angle("pelvis_ty")[0] == 0.9


def test_from_real_opensim_outputs(gait2354, tmp_path):
    """Build a reference from OpenSim's IK and ID of subject01 the way the exporter does."""
    ik = read_storage(gait2354 / "subject01_walk1_ik.mot")
    inverse = read_storage(gait2354 / "inverse_dynamics.sto")
    mass_kg = 72.6  # nominal; the schema only needs torques divided by the mass used
    moments = [c for c in inverse.columns if c.endswith("_moment")]
    torque = np.column_stack([inverse.column(c) for c in moments]) / mass_kg
    valid = np.isfinite(torque)
    n = ik.num_rows
    ref = ReferenceData(
        subject="subject01",
        trial="walk1",
        step_label="0.4-1.6 s",
        timestep=1 / 60,
        time_sec=ik.time_s,
        joint_angle=ik.data,
        joint_angle_columns=ik.columns,
        joint_torque=torque,
        joint_torque_columns=tuple(c.removesuffix("_moment") for c in moments),
        joint_torque_valid=valid,
        joint_torque_column_valid=valid.any(axis=0),
        joint_torque_sign_convention="OpenSim",
        joint_torque_normalization="divided by subject_weight_kg",
        joint_torque_units="N*m/kg",
        subject_weight_kg=mass_kg,
        subject_body_weight_n=mass_kg * 9.80665,
        computed_grf=np.zeros((n, 0)),
        computed_grf_columns=(),
        computed_grf_valid=np.zeros((n, 0), bool),
        computed_grf_normalization="divided by subject_body_weight_n",
        computed_grf_units="BW",
        source_files=("subject01_walk1_ik.mot", "inverse_dynamics.sto"),
        id_source_time_sec=inverse.time_s,
        original_kinematics_time_sec=ik.time_s,
    )
    write_reference(tmp_path / "subject01.npz", ref)
    back = read_reference(tmp_path / "subject01.npz")
    _assert_same(ref, back)
    assert back.joint_angle_columns[3] == "pelvis_tx" and back.joint_torque.shape == (73, 20)


def test_grf_valid_per_frame_is_broadcast(tmp_path):
    write_small_reference(tmp_path / "r.npz", computed_grf_valid=np.ones(5, dtype=bool))
    assert read_reference(tmp_path / "r.npz").computed_grf_valid.shape == (5, 3)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"joint_torque_column_valid": np.array([True, True, True])},
            "True for a column with no valid sample",
        ),
        ({"timestep": np.array(-1.0)}, "timestep must be > 0"),
        ({"joint_angle_columns": np.array(["a", "a", "b"])}, "duplicate"),
        ({"time_sec": np.array([0.0, 0.1, 0.1, 0.2, 0.3])}, "increasing"),
        ({"source_time_sec": np.zeros(3)}, "source_time_sec must be"),
        ({"joint_torque_valid": np.ones((5, 3), dtype=int) * 2}, "bool mask"),
    ],
)
def test_validation_errors(tmp_path, change, message):
    write_small_reference(tmp_path / "r.npz", **change)
    with pytest.raises(InputError, match=message):
        read_reference(tmp_path / "r.npz")


def test_invalid_reference_is_not_written(tmp_path):
    ref = dataclasses.replace(small_reference(), joint_angle=np.zeros((4, 3)))
    with pytest.raises(InputError, match="joint_angle must be"):
        write_reference(tmp_path / "bad.npz", ref)
    assert list(tmp_path.iterdir()) == []
