"""``musclerl reference --locked``: OpenSim's locked coordinates (Gait120 locks subtalar and mtp).

A locked coordinate is held at the model's default in inverse dynamics and static optimisation,
its moment is carried by the joint (no torque column, no muscle asked to hold it), and
``joint_angle`` keeps the motion's raw values, as the Boo_LevelWalking files have them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from reference_samples import subject01_reference_args

from musclerl.cli import main
from musclerl.motion.reference import read_reference
from musclerl.motion.storage import read_storage

MTP = ["mtp_angle_r", "mtp_angle_l"]


def _mot_with_column(src: Path, dst: Path, column: str, value_deg: float) -> None:
    """Copy of the OpenSim .mot ``src`` with ``column`` set to ``value_deg`` on every row."""
    lines = src.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip().lower() == "endheader")
    names = lines[end + 1].split()
    k = names.index(column)
    rows = []
    for line in lines[end + 2 :]:
        if not line.strip():
            continue
        values = line.split()
        values[k] = f"{value_deg:.6f}"
        rows.append("\t".join(values))
    dst.write_text("\n".join(lines[: end + 2] + rows) + "\n")


def _reference(gait2354: Path, motion: Path, out: Path, *extra: str) -> int:
    return main([*subject01_reference_args(gait2354, motion), "--out", str(out), *extra])


@pytest.fixture(scope="module")
def bent_toes(gait2354, tmp_path_factory):
    """The subject01 walk with the right toes bent 20° throughout (the IK held them at 0)."""
    path = tmp_path_factory.mktemp("locked") / "walk_toes20.mot"
    _mot_with_column(gait2354 / "subject01_walk1_ik.mot", path, "mtp_angle_r", 20.0)
    return path


def test_locked_coordinates_are_held_and_lose_their_columns(gait2354, bent_toes, tmp_path):
    held = tmp_path / "held.npz"
    assert _reference(gait2354, bent_toes, held, "--locked", *MTP) == 0
    free = tmp_path / "free.npz"
    assert _reference(gait2354, gait2354 / "subject01_walk1_ik.mot", free, "--no-static-optimisation") == 0
    a, b = read_reference(held), read_reference(free)
    assert "mtp_angle_r_moment" not in a.joint_torque_columns
    assert "mtp_angle_l_moment" not in a.joint_torque_columns
    assert "mtp_angle_r_moment" in b.joint_torque_columns
    # joint_angle keeps the raw 20°, the dynamics ran with the toes at the model's default (0):
    # every other torque column equals the run on the walk whose toes the IK held at 0
    np.testing.assert_allclose(a.angle("mtp_angle_r"), 20.0, atol=1e-6)
    for column in a.joint_torque_columns:
        np.testing.assert_allclose(a.torque(column), b.torque(column), atol=1e-9, err_msg=column)
    assert "locked" in a.qc_notes and "mtp_angle_r" in a.qc_notes
    act = read_storage(tmp_path / "held_muscle_activation.sto")
    assert act.num_rows == a.num_frames and np.all((act.data >= 0) & (act.data <= 1))


def test_locked_static_optimisation_frees_the_toe_muscles(gait2354, tmp_path):
    """With the toes free, a long toe flexor's pull at the mtp must be cancelled (the plates load
    the calcaneus, so nothing pushes back on the toes); locked, the joint carries it, and the
    flexors help the plantarflexors at push-off."""
    motion = gait2354 / "subject01_walk1_ik.mot"
    assert _reference(gait2354, motion, tmp_path / "free.npz") == 0
    assert _reference(gait2354, motion, tmp_path / "held.npz", "--locked", *MTP) == 0
    free = read_storage(tmp_path / "free_muscle_activation.sto")
    held = read_storage(tmp_path / "held_muscle_activation.sto")
    push_off = (free.time_s + 0.4 >= 1.0) & (free.time_s + 0.4 <= 1.3)  # right stance, the file starts at 0
    assert held.column("fhl_r")[push_off].mean() > 2 * free.column("fhl_r")[push_off].mean()


@pytest.mark.parametrize("name", ["mtp_angle_x", "knee_angle_r_translation2"])
def test_locked_unknown_coordinate_is_refused(gait2354, tmp_path, capsys, name):
    out = tmp_path / "ref.npz"
    rc = _reference(gait2354, gait2354 / "subject01_walk1_ik.mot", out, "--locked", name)
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "--locked" in err and name in err and len(err.splitlines()) == 1
    assert not out.exists() and not list(tmp_path.iterdir())
