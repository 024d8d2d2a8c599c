"""Issue 22's accuracy table on the shared OpenCap subject: every walk against the expert's IK.

One folder run of ``musclerl retarget markers`` over the 13 walks and the squat, sit-to-stand and
drop jump (generic LaiArnold marker set, static trial, no setup files: what a new user types),
then ``musclerl bench accuracy``'s rows checked against the issue's aims, per walk and metric.
Known shortfalls are strict xfails with their cause, so a fix shows up as an unexpected pass.
Takes about two minutes on one core: slow.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from musclerl.bench.accuracy import accuracy_table
from musclerl.cli import main
from musclerl.motion.storage import read_storage

WALKS = [
    *(f"walking{k}" for k in (1, 2, 3)),
    *(f"walkingTI{k}" for k in (1, 2, 3)),
    *(f"walkingTO{k}" for k in (1, 2, 3, 4)),
    *(f"walkingTS{k}" for k in (1, 2, 3)),
]
OTHERS = ["squats1", "STS1", "DJ1"]
#: The issue's aims, per walk.
AIMS = {
    "hip_rms_deg": 5.0,
    "knee_rms_deg": 5.0,
    "ankle_rms_deg": 5.0,
    "hip_adduction_rms_deg": 5.0,
    "marker_rms_lower_mm": 20.0,
    "at_limit_excess_frac": 0.05,
    "stance_slip_mps": 0.05,
    "penetration_max_mm": 5.0,
}
KNEE_BOUND = (
    "knee_angle_r on myolegs' 0 deg bound in extension: our knee is 1-2 deg straighter than the "
    "expert's there (the marker fit's, 5-9 % of frames)"
)
SUBTALAR_BOUND = "subtalar on myolegs' 20 deg bound in the toes-in walk (the marker fit's, 7-8 % of frames)"
KNOWN = {
    ("walking1", "marker_rms_lower_mm"): "the L_thigh cluster's labels are mirrored between static and walk",
    ("walking3", "marker_rms_lower_mm"): "the L_thigh cluster's labels are mirrored between static and walk",
    ("walkingTI1", "stance_slip_mps"): "0.054 m/s: the toes-in stance feet slide in the fit",
    ("walkingTI3", "stance_slip_mps"): "0.056 m/s: the toes-in stance feet slide in the fit",
    # The toe joint's time at its bound and the trailing toes' penetration at toe-off are gone
    # (the trailing leg's IK, retarget/markers/toe_off.py); the knee and subtalar bounds are not.
    **{
        (walk, "at_limit_excess_frac"): KNEE_BOUND
        for walk in ("walking2", *(f"walkingTO{k}" for k in range(1, 5)))
    },
    **{(walk, "at_limit_excess_frac"): SUBTALAR_BOUND for walk in ("walkingTI1", "walkingTI3")},
    ("walkingTS3", "at_limit_excess_frac"): (
        "mtp_angle_l on myolegs' bound in 8 % of frames where the expert's toes are not (counted frame "
        "by frame since the per-leg table; the difference of the two times there was 4 %)"
    ),
}


@pytest.fixture(scope="module")
def opencap(shared_data, tmp_path_factory):
    data = shared_data / "opencap_expert1"
    if not (data / "generic.osim").is_file():
        pytest.skip("opencap_expert1 data not present")
    out = tmp_path_factory.mktemp("opencap")
    trials = [str(data / f"{t}.trc") for t in WALKS + OTHERS]
    code = main(
        ["retarget", "markers", *trials, "--model", "myolegs", "--markers", str(data / "generic.osim"),
         "--static", str(data / "static1.trc"), "--out", str(out), "--mot", "1"]
    )  # fmt: skip
    assert code == 0
    rows, mean = accuracy_table(out, data, WALKS + OTHERS)
    return data, out, {r["trial"]: r for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("metric", list(AIMS))
@pytest.mark.parametrize("walk", WALKS)
def test_every_opencap_walk_meets_the_aim(opencap, walk, metric, request):
    if (walk, metric) in KNOWN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN[(walk, metric)]))
    _, _, rows = opencap
    assert rows[walk][metric] <= AIMS[metric], (walk, metric, rows[walk][metric])


@pytest.mark.slow
def test_opencap_floors_are_flat_and_every_trial_runs(opencap):
    import json

    _, out, rows = opencap
    assert all(rows[w]["floor_flat"] for w in WALKS)
    for trial in WALKS + OTHERS:
        report = json.loads((out / f"{trial}.json").read_text())
        assert report["frames"] > 100 and report["failed_frames"] == 0


@pytest.mark.slow
def test_the_drop_jump_stands_on_a_box_then_the_floor(opencap):
    """DJ1 starts on a box (its heel markers 0.30 m above where they land) and lands on the floor:
    two level surfaces, not the 17.5 deg ramp one plane through both stances made, with the box
    where the person stood; its angles are compared where the expert solved it (0.96-1.9 s) and
    meet the walks' aims there (before, the table compared all 2.39 s: knee 22 deg)."""
    import json

    from musclerl.motion.trajectory import Trajectory
    from musclerl.motion.trc import read_trc

    data, out, rows = opencap
    floor = json.loads((out / "DJ1.json").read_text())["floor"]
    assert floor["kind"] == "steps" and not floor["flat"]
    terrain = Trajectory.load(out / "DJ1.npz").terrain
    heel_z = read_trc(data / "DJ1.trc").marker("r_calc")[:, 2]  # Z up in this file
    box_m = float(np.median(heel_z[:60]) - np.median(heel_z[140:170]))  # standing on it, landed
    assert terrain.height_m.min() == pytest.approx(0.0, abs=0.005)
    assert terrain.height_m.max() == pytest.approx(box_m, abs=0.05)
    row = rows["DJ1"]
    assert 0.3 < row["compared_frac"] < 0.5
    for key in ("hip_rms_deg", "knee_rms_deg", "ankle_rms_deg", "hip_adduction_rms_deg"):
        assert row[key] <= AIMS[key], (key, row[key])


@pytest.mark.slow
def test_opencap_mot_columns_are_the_marker_sets_coordinates(opencap):
    """The ``--mot`` loads onto the marker set's OpenSim model: every column names one of its
    coordinates, and the pelvis translation follows the expert's within centimetres."""
    import numpy as np

    data, out, _ = opencap
    coordinates = set(re.findall(r'<Coordinate name="([^"]+)"', (data / "generic.osim").read_text()))
    ours, expert = read_storage(out / "walking1.mot"), read_storage(data / "walking1.mot")
    assert set(ours.columns) <= coordinates
    for name in ("pelvis_tx", "pelvis_ty", "pelvis_tz"):
        ref = np.interp(ours.time_s, expert.time_s, expert.column(name))
        assert np.sqrt(np.mean((ours.column(name) - ref) ** 2)) < 0.03, name


@pytest.mark.slow
def test_hand_scaled_model_without_a_static_trial_matches_the_static_trial(opencap, tmp_path):
    """OpenCap's own subject-scaled model (hand-placed markers) and no static trial: the model's
    default pose stands in for the static trial. Every angle within 1 deg (markers within 2 mm)
    of the generic-model-plus-static-trial run, and within the aims."""
    data, _, with_static = opencap
    walks = ["walking2", "walkingTO1"]
    code = main(
        ["retarget", "markers", *(str(data / f"{w}.trc") for w in walks), "--model", "myolegs",
         "--markers", str(data / "hand_scaled.osim"), "--out", str(tmp_path), "--mot", "1"]
    )  # fmt: skip
    assert code == 0
    rows, _ = accuracy_table(tmp_path, data, walks)
    for row in rows:
        static = with_static[row["trial"]]
        for metric in ("hip_rms_deg", "knee_rms_deg", "ankle_rms_deg", "hip_adduction_rms_deg"):
            assert row[metric] <= min(static[metric] + 1.0, AIMS[metric]), (row["trial"], metric)
        assert row["marker_rms_lower_mm"] <= static["marker_rms_lower_mm"] + 2.0, row["trial"]


@pytest.mark.slow
def test_the_walk_with_a_mirrored_thigh_cluster_names_that_leg(opencap):
    """walking1's L_thigh cluster labels are mirrored against the static trial: pooled, the trial
    reads 41 mm; per leg, the report says which leg and segment failed. A clean walk says nothing."""
    import json

    _, out, rows = opencap
    report = json.loads((out / "walking1.json").read_text())
    assert report["side_warning"].startswith("the left leg is clearly worse: markers")
    assert "(femur_l " in report["side_warning"] and "right leg" not in report["side_warning"]
    assert (
        rows["walking1"]["legs"]["left"]["marker_rms_mm"]
        > 3 * rows["walking1"]["legs"]["right"]["marker_rms_mm"]
    )
    assert json.loads((out / "walkingTI2.json").read_text())["side_warning"] is None
    # the cause, named: the cluster's labels against the static trial's
    assert [(c["body"], c["relabel"]) for c in report["cluster_labels"]] == [
        (
            "femur_l",
            {"L_thigh1": "L_thigh3", "L_thigh2": "L_thigh4", "L_thigh3": "L_thigh1", "L_thigh4": "L_thigh2"},
        )
    ]
    to1 = json.loads((out / "walkingTO1.json").read_text())["cluster_labels"]
    assert [(c["body"], c["relabel"]) for c in to1] == [
        ("femur_r", {"r_thigh3": "r_thigh5", "r_thigh5": "r_thigh3"})
    ]
    assert json.loads((out / "walking2.json").read_text())["cluster_labels"] == []


@pytest.mark.slow
def test_a_marker_missing_from_the_static_trial_is_placed_from_the_trial(opencap, tmp_path):
    """r_thigh2 left out of the static trial: a placeholder (OpenCap's generic thigh markers share
    one point), nothing places it, and posing the walk with it pulled the right thigh to that point
    (right leg markers 41 mm). The walk is posed without it, it is placed where that pose puts it,
    and the walk solved again: the right leg as with the full static trial."""
    import dataclasses
    import json

    from musclerl.motion.trc import read_trc, write_trc

    data, _, with_static = opencap
    static = read_trc(data / "static1.trc")
    keep = [i for i, n in enumerate(static.names) if n != "r_thigh2"]
    names = tuple(static.names[i] for i in keep)
    write_trc(
        tmp_path / "static.trc",
        dataclasses.replace(static, names=names, positions_m=static.positions_m[:, keep]),
    )
    out, trials = tmp_path / "out", [str(data / "walking2.trc"), str(data / "walkingTS2.trc")]
    code = main(
        ["retarget", "markers", *trials, "--model", "myolegs", "--markers", str(data / "generic.osim"),
         "--static", str(tmp_path / "static.trc"), "--out", str(out), "--mot", "1"]
    )  # fmt: skip
    assert code == 0
    rows, _ = accuracy_table(out, data, ["walking2", "walkingTS2"])
    for row in rows:
        report = json.loads((out / f"{row['trial']}.json").read_text())
        assert report["markers_placed_from_trial"] == ["r_thigh2"] and report["side_warning"] is None
        full = with_static[row["trial"]]["legs"]["right"]
        right = row["legs"]["right"]
        assert right["marker_rms_mm"] <= full["marker_rms_mm"] + 2.0
        for metric in ("hip_rms_deg", "knee_rms_deg", "ankle_rms_deg", "hip_adduction_rms_deg"):
            assert right[metric] <= full[metric] + 0.5, (row["trial"], metric)


def _hip_rotation_rms_deg(ours_mot, expert_mot, column: str) -> float:
    ours, expert = read_storage(ours_mot), read_storage(expert_mot)
    ref = np.interp(ours.time_s, expert.time_s, expert.column(column))
    return float(np.sqrt(np.mean((ours.column(column) - ref) ** 2)))


@pytest.mark.slow
def test_an_extra_marker_on_one_thigh_changes_nothing(opencap, tmp_path):
    """Another lab's set: a fifth marker on the left thigh plate (in the marker set at the plate's
    shared generic point, in the static trial and the walk on the plate, rigidly). That leg's
    angles, hip rotation included, stay where the four-marker plate puts them."""
    import copy
    import dataclasses
    import xml.etree.ElementTree as ET

    from musclerl.motion.trc import read_trc, write_trc

    data, base_out, with_static = opencap
    tree = ET.parse(data / "generic.osim")
    for objects in tree.getroot().iter("objects"):
        first = next((m for m in objects.iter("Marker") if m.get("name") == "L_thigh1"), None)
        if first is not None:
            extra = copy.deepcopy(first)
            extra.set("name", "L_thigh5")
            objects.append(extra)
            break
    tree.write(tmp_path / "extra.osim")
    for trial in ("static1", "walking2"):
        d = read_trc(data / f"{trial}.trc")
        p1, p2, p3 = (d.positions_m[:, d.names.index(f"L_thigh{k}")] for k in (1, 2, 3))
        normal = np.cross(p2 - p1, p3 - p1)
        p5 = p1 + 0.5 * (p2 - p1) + 0.3 * (p3 - p1) + 0.015 * normal / np.linalg.norm(normal, axis=1)[:, None]
        positions = np.concatenate([d.positions_m, p5[:, None]], axis=1)
        write_trc(
            tmp_path / f"{trial}.trc",
            dataclasses.replace(d, names=(*d.names, "L_thigh5"), positions_m=positions),
        )
    out = tmp_path / "out"
    code = main(
        ["retarget", "markers", str(tmp_path / "walking2.trc"), "--model", "myolegs",
         "--markers", str(tmp_path / "extra.osim"), "--static", str(tmp_path / "static1.trc"),
         "--out", str(out / "walking2.npz"), "--report", str(out / "walking2.json"),
         "--mot", str(out / "walking2.mot")]
    )  # fmt: skip
    assert code == 0
    rows, _ = accuracy_table(out, data, ["walking2"])
    left, base = rows[0]["legs"]["left"], with_static["walking2"]["legs"]["left"]
    for metric in ("hip_rms_deg", "knee_rms_deg", "ankle_rms_deg", "hip_adduction_rms_deg"):
        assert left[metric] <= base[metric] + 0.5, metric
    assert left["marker_rms_mm"] <= base["marker_rms_mm"] + 2.0
    rotation = _hip_rotation_rms_deg(out / "walking2.mot", data / "walking2.mot", "hip_rotation_l")
    assert (
        rotation
        <= _hip_rotation_rms_deg(base_out / "walking2.mot", data / "walking2.mot", "hip_rotation_l") + 1.0
    )
