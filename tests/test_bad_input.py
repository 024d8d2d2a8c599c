"""The bad-input table: malformed files through the CLI give one line naming the file, exit 2.

Each case writes one broken file into an empty folder and runs ``musclerl info FILE`` (``musclerl
train --config FILE --out RUN`` for YAML) in-process. Every case must: return 2, print exactly
one line on stderr that names the file, print nothing on stdout, and leave no new file behind.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from c3d_samples import write_c3d
from motion_samples import (
    BVH_SKELETON,
    bvh_text,
    bvh_width,
    rewrite_npz,
    simple_trc_rows,
    storage_text,
    trc_text,
    write_small_reference,
    write_step_up_amass,
)

from musclerl.cli import main
from musclerl.errors import InputError
from musclerl.fileio import load_yaml
from musclerl.motion.trajectory import Trajectory

GOOD_TRC = trc_text(["A", "B"], simple_trc_rows(4))
MOT_ROWS = np.column_stack([np.arange(4) / 100.0, np.ones(4), np.arange(4.0)])
GOOD_MOT = storage_text(["q1", "q2"], MOT_ROWS)


def _text(content: str | bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)

    return write


def _trc_all_cells(value: str) -> Callable[[Path], None]:
    """Every marker cell of every row set to ``value``."""
    return _text(trc_text(["A", "B"], [[value] * 6 for _ in range(4)]))


def _trc_cell(row: int, col: int, value: str) -> Callable[[Path], None]:
    rows = simple_trc_rows(4)
    rows[row][col] = value
    return _text(trc_text(["A", "B"], rows))


def _replace_line(text: str, index: int, new: str) -> str:
    lines = text.splitlines()
    lines[index] = new
    return "\n".join(lines) + "\n"


def _amass(**change) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        write_step_up_amass(path, n_frames=6)
        rewrite_npz(path, **change)

    return write


def _reference(**change) -> Callable[[Path], None]:
    return lambda path: write_small_reference(path, **change)


def _npz(**arrays) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("wb") as f:
            np.savez(f, **arrays)

    return write


def _trajectory_with(**change) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        Trajectory(
            qpos=np.zeros((5, 2)),
            qvel=np.zeros((5, 2)),
            rate_hz=50.0,
            joint_names=("a", "b"),
            model_name="tiny",
        ).save(path)
        rewrite_npz(path, **change)

    return write


def _tiny_trajectory_with(**change) -> Callable[[Path], None]:
    """A standing Trajectory of the ``tiny`` model it names (nq 13, nv 12), then ``change``."""

    def write(path: Path) -> None:
        qpos = np.zeros((5, 13))
        qpos[:, 2], qpos[:, 3] = 1.0, 1.0
        Trajectory(
            qpos=qpos,
            qvel=np.zeros((5, 12)),
            rate_hz=50.0,
            joint_names=("root", "hip_flexion_r", "knee_angle_r", "ankle_angle_r")
            + ("hip_flexion_l", "knee_angle_l", "ankle_angle_l"),
            model_name="tiny",
        ).save(path)
        rewrite_npz(path, **change)

    return write


def _nan_pose() -> np.ndarray:
    poses = np.zeros((6, 156))
    poses[3, 10] = np.nan
    return poses


def _object_array() -> np.ndarray:
    arr = np.empty(2, dtype=object)
    arr[:] = [{"a": 1}, None]
    return arr


def _pickled_npz(path: Path) -> None:
    with path.open("wb") as f:
        np.savez(f, poses=_object_array())


TRC_NO_LABELS = _replace_line(GOOD_TRC, 3, "Name\tA\t\t\tB")
TRC_BACKWARDS = GOOD_TRC.replace("\n2\t0.010000\t", "\n2\t-0.010000\t")
MOT_LINES = GOOD_MOT.splitlines()
DM_FRAME = [1 / 30] + [0.0] * 43
GOOD_BVH = bvh_text(np.zeros((3, bvh_width())))
BVH_LINES = GOOD_BVH.splitlines()
BVH_NO_LEGS = tuple(s for s in BVH_SKELETON if not any(w in f"{s[0]} {s[1]}" for w in ("Left", "Right")))


def _c3d(names=("RHEE", "LHEE", "C7"), scale: float = 1.0, cut: float | None = None, **options):
    """A 3-marker, 10-frame C3D (mm), positions times ``scale``; ``cut``: only that share of its bytes."""

    def write(path: Path) -> None:
        rng = np.random.default_rng(0)
        positions = rng.uniform(0.0, 1000.0, (10, len(names), 3)) * scale
        write_c3d(path, list(names), positions, 100.0, **options)
        if cut is not None:
            data = path.read_bytes()
            path.write_bytes(data[: int(len(data) * cut)])

    return write


CASES: list[tuple[str, str, Callable[[Path], None], str]] = [
    # ---------------------------------------------------------------- C3D
    ("c3d_garbage", ".c3d", _text(b"\x02\x13" + bytes(range(256)) * 4), "not a C3D file"),
    ("c3d_text", ".c3d", _text("PathFileType\t4\n" * 40), "not a C3D file"),
    ("c3d_header_only", ".c3d", _c3d(cut=0.25), "truncated"),
    ("c3d_truncated_data", ".c3d", _c3d(cut=0.9), "truncated while copied"),
    ("c3d_no_markers", ".c3d", _c3d(names=()), "no marker trajectories"),
    ("c3d_unknown_units", ".c3d", _c3d(units="inch"), "unknown POINT:UNITS 'inch'"),
    ("c3d_units_lie", ".c3d", _c3d(scale=1e4), "so the values are in other units"),
    ("c3d_every_residual_negative", ".c3d", _c3d(residuals=-np.ones((10, 3))), "every marker is missing"),
    ("c3d_screen_axes_parallel", ".c3d", _c3d(screen=("+Z", "-Z")), "do not name two axes"),
    ("c3d_duplicate_labels", ".c3d", _c3d(names=("RHEE", "RHEE", "C7")), "duplicate marker labels: RHEE"),
    # ---------------------------------------------------------------- TRC
    ("trc_empty", ".trc", _text(""), "empty"),
    ("trc_truncated_header", ".trc", _text("\n".join(GOOD_TRC.splitlines()[:3])), "truncated"),
    ("trc_header_only", ".trc", _text("\n".join(GOOD_TRC.splitlines()[:6])), "no data rows"),
    (
        "trc_unknown_units",
        ".trc",
        _text(trc_text(["A", "B"], simple_trc_rows(4), units="inch")),
        "unknown Units 'inch'",
    ),
    ("trc_text_in_cell", ".trc", _trc_cell(1, 2, "abc"), "'abc' is not a number"),
    ("trc_too_many_values", ".trc", _trc_cell(2, 5, "1\t2\t3\t4"), "line 9 has"),
    ("trc_nan_only_markers", ".trc", _trc_all_cells("NaN"), "every marker is missing"),
    ("trc_zero_only_markers", ".trc", _trc_all_cells("0"), "every marker is missing"),
    ("trc_no_marker_label_line", ".trc", _text(TRC_NO_LABELS), "Frame#"),
    ("trc_time_backwards", ".trc", _text(TRC_BACKWARDS), "not increasing"),
    ("trc_is_csv", ".trc", _text("x,y,z\n1,2,3\n4,5,6\n7,8,9\n1,1,1\n2,2,2\n"), "PathFileType"),
    ("trc_binary", ".trc", _text(b"\x00\x01\x02PathFileType" * 50), "binary"),
    # ---------------------------------------------------------------- MOT / STO
    ("mot_empty", ".mot", _text(""), "empty"),
    ("mot_no_endheader", ".mot", _text("\n".join(MOT_LINES[:4])), "endheader"),
    ("mot_truncated_mid_row", ".mot", _text(GOOD_MOT[: GOOD_MOT.rindex("\t")]), "has 2 values, expected 3"),
    ("mot_wrong_column_count", ".mot", _text(GOOD_MOT.replace("time\tq1\tq2", "time\tq1")), "expected 2"),
    ("mot_text_in_cell", ".mot", _text(GOOD_MOT.replace("1.00000000", "one", 1)), "'one' is not a number"),
    ("sto_first_column_not_time", ".sto", _text(GOOD_MOT.replace("time\tq1", "frame\tq1")), "'time'"),
    ("mot_no_labels", ".mot", _text("\n".join(MOT_LINES[:6]) + "\n"), "no column labels"),
    ("sto_duplicate_labels", ".sto", _text(GOOD_MOT.replace("q2", "q1")), "duplicate column labels: q1"),
    (
        "sto_time_not_increasing",
        ".sto",
        _text(GOOD_MOT.replace("0.03000000", "0.01000000")),
        "not increasing",
    ),
    # ---------------------------------------------------------------- NPZ (any)
    ("npz_not_a_zip", ".npz", _text("this is not a zip archive\n"), "not a readable .npz"),
    ("npz_empty", ".npz", _text(b""), "empty"),
    ("npz_unrecognised_keys", ".npz", _npz(foo=np.zeros(3)), "unrecognised .npz"),
    ("npz_pickled_objects", ".npz", _pickled_npz, "not a readable .npz"),
    # ---------------------------------------------------------------- AMASS / SMPL
    ("amass_wrong_pose_width", ".npz", _amass(poses=np.zeros((6, 100))), "100 values per frame"),
    ("amass_missing_trans", ".npz", _amass(trans=None), "missing key 'trans'"),
    ("amass_missing_rate", ".npz", _amass(mocap_framerate=None), "missing frame rate"),
    ("amass_zero_rate", ".npz", _amass(mocap_framerate=np.array(0.0)), "frame rate must be > 0"),
    ("amass_nan_in_poses", ".npz", _amass(poses=_nan_pose()), "'poses' contains NaN"),
    ("amass_trans_frames_mismatch", ".npz", _amass(trans=np.zeros((4, 3))), "trans has 4 frames"),
    ("amass_trans_wrong_shape", ".npz", _amass(trans=np.zeros((6, 2))), "'trans' must be (T, 3)"),
    ("amass_text_poses", ".npz", _amass(poses=np.array([["a"] * 156] * 6)), "'poses' is not numeric"),
    # ---------------------------------------------------------------- reference NPZ
    (
        "reference_missing_key",
        ".npz",
        _reference(joint_torque_units=None),
        "missing key(s) joint_torque_units",
    ),
    (
        "reference_wrong_shape",
        ".npz",
        _reference(joint_torque=np.zeros((4, 3))),
        "joint_torque must be (T, 3)",
    ),
    (
        "reference_nan_where_valid",
        ".npz",
        _reference(joint_torque=np.full((5, 3), np.nan)),
        "NaN/inf where joint_torque_column_valid is True",
    ),
    (
        "reference_mask_wrong_shape",
        ".npz",
        _reference(joint_torque_column_valid=np.ones((5, 2), bool)),
        "joint_torque_column_valid must be a bool array",
    ),
    ("reference_weight_in_kg", ".npz", _reference(subject_body_weight_n=np.array(72.6)), "not gravity"),
    (
        "reference_columns_mismatch",
        ".npz",
        _reference(joint_angle_columns=np.array(["a", "b"])),
        "joint_angle must be (T, 2)",
    ),
    # ---------------------------------------------------------------- Trajectory NPZ
    ("trajectory_missing_qvel", ".npz", _trajectory_with(qvel=None), "missing key 'qvel'"),
    ("trajectory_nan_qpos", ".npz", _trajectory_with(qpos=np.full((5, 2), np.nan)), "NaN"),
    ("trajectory_qvel_frames", ".npz", _trajectory_with(qvel=np.zeros((3, 2))), "qvel must be (T, nv)"),
    ("trajectory_qvel_short_of_model", ".npz", _tiny_trajectory_with(qvel=np.zeros((5, 11))), "nv=11"),
    # ---------------------------------------------------------------- DeepMimic
    ("deepmimic_bad_json", ".txt", _text('{"Loop": "wrap", "Frames": [[0.03, 1, 2,'), "not valid JSON"),
    (
        "deepmimic_short_frame",
        ".txt",
        _text('{"Loop": "wrap", "Frames": [' + str(DM_FRAME[:43]) + "]}"),
        "frame 0 has 43 values",
    ),
    ("deepmimic_no_frames", ".json", _text('{"Loop": "wrap"}'), "missing key 'Frames'"),
    (
        "deepmimic_text_value",
        ".txt",
        _text('{"Loop": "none", "Frames": [' + str(DM_FRAME[:43] + ["x"]).replace("'", '"') + "]}"),
        "non-numeric",
    ),
    # ---------------------------------------------------------------- BVH
    (
        "bvh_truncated_motion",
        ".bvh",
        _text("\n".join(BVH_LINES[:-1]) + "\n"),
        "MOTION says 3 frames, the file has 2",
    ),
    ("bvh_frame_width", ".bvh", _text(_replace_line(GOOD_BVH, -1, "0 " * (bvh_width() - 1))), "frame 2 has"),
    (
        "bvh_unknown_channel",
        ".bvh",
        _text(GOOD_BVH.replace("Xrotation", "Wrotation", 1)),
        "unknown or repeated",
    ),
    (
        "bvh_nan",
        ".bvh",
        _text(_replace_line(GOOD_BVH, -2, "nan " + "0 " * (bvh_width() - 1))),
        "frame 1, value 0: NaN",
    ),
    (
        "bvh_no_legs",
        ".bvh",
        _text(bvh_text(np.zeros((2, bvh_width(BVH_NO_LEGS))), skeleton=BVH_NO_LEGS)),
        "skeleton lacks pelvis, left_hip, left_knee, left_ankle, left_foot, right_hip",
    ),
    ("bvh_no_motion", ".bvh", _text(GOOD_BVH.split("MOTION")[0]), "expected HIERARCHY ... MOTION"),
    ("bvh_giant", ".bvh", _text(bvh_text(np.zeros((2, bvh_width())), scale=30.0)), "give the units"),
    # ---------------------------------------------------------------- MJCF
    ("mjcf_truncated", ".xml", _text("<mujoco><worldbody><body>"), "not a valid MJCF"),
    ("mjcf_not_mujoco", ".xml", _text("<html><body/></html>"), "not a valid MJCF"),
    (
        "mjcf_bad_attribute",
        ".xml",
        _text('<mujoco><worldbody><geom type="sphere" size="abc"/></worldbody></mujoco>'),
        "bad format in attribute 'size'",
    ),
    (
        "mjcf_does_not_compile",
        ".xml",
        _text(
            '<mujoco><worldbody><body><joint type="hinge" range="1 0" '
            'limited="true"/><geom size="0.1"/></body></worldbody></mujoco>'
        ),
        "does not compile",
    ),
    ("mjcf_missing_include", ".xml", _text('<mujoco><include file="nothere.xml"/></mujoco>'), "nothere.xml"),
    # ---------------------------------------------------------------- YAML (via train --config)
    ("yaml_malformed", ".yaml", _text("ppo:\n  lr: [1, 2\n  steps: 3\n"), "malformed YAML at line 3"),
    ("yaml_list_top_level", ".yaml", _text("- ppo\n- env\n"), "mapping"),
    ("yaml_only_comments", ".yaml", _text("# nothing here\n\n"), "no content"),
    ("yaml_tab_indent", ".yaml", _text("ppo:\n\tlr: 1\n"), "malformed YAML"),
    ("yaml_empty", ".yaml", _text(""), "empty"),
]


def _argv(path: Path) -> list[str]:
    if path.suffix == ".yaml":
        return ["train", "--config", str(path), "--out", str(path.parent / "run"), "--quiet"]
    return ["info", str(path)]


def test_table_is_large_enough():
    kinds = {suffix for _, suffix, _, _ in CASES}
    assert len(CASES) >= 25 and {".trc", ".c3d", ".mot", ".sto", ".npz", ".xml", ".yaml"} <= kinds
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize("name, suffix, write, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, capsys, name, suffix, write, message):
    path = tmp_path / f"{name}{suffix}"
    write(path)
    before = sorted(tmp_path.rglob("*"))
    code = main(_argv(path))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert str(path) in lines[0] and message in lines[0], lines[0]
    assert captured.out == ""
    assert sorted(tmp_path.rglob("*")) == before  # no output or partial file left behind


def test_missing_and_unsupported_files(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nothere.trc")]) == 2
    assert "nothere.trc: motion file not found" in capsys.readouterr().err
    (tmp_path / "clip.c3d").write_bytes(b"\x00" * 10)
    assert main(["info", str(tmp_path / "clip.c3d")]) == 2
    assert "clip.c3d: not a C3D file or truncated: 10 bytes" in capsys.readouterr().err
    (tmp_path / "clip.fbx").write_bytes(b"\x00" * 10)
    assert main(["info", str(tmp_path / "clip.fbx")]) == 2
    err = capsys.readouterr().err
    assert "clip.fbx: unsupported file type '.fbx'" in err and ".c3d" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "name", ["yaml_malformed", "yaml_list_top_level", "yaml_only_comments", "yaml_tab_indent"]
)
def test_load_yaml_directly(tmp_path, name):
    _, suffix, write, message = next(c for c in CASES if c[0] == name)
    write(tmp_path / f"{name}{suffix}")
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as err:
        load_yaml(tmp_path / f"{name}{suffix}")
    assert "\n" not in str(err.value)


def test_load_yaml_good(tmp_path):
    (tmp_path / "ok.yaml").write_text("ppo:\n  lr: 0.0003\nenv: {model: tiny}\n")
    assert load_yaml(tmp_path / "ok.yaml") == {"ppo": {"lr": 0.0003}, "env": {"model": "tiny"}}


def test_real_process_exit_code_and_no_traceback(tmp_path):
    """Two cases through a real interpreter: exit status 2 and a one-line message, no traceback."""
    for name in ("trc_unknown_units", "reference_wrong_shape"):
        _, suffix, write, message = next(c for c in CASES if c[0] == name)
        path = tmp_path / f"{name}{suffix}"
        write(path)
        proc = subprocess.run(
            [sys.executable, "-m", "musclerl.cli", "info", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr
