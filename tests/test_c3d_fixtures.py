"""The C3D walks as reference trials of an unseen person (:mod:`c3d_fixtures`), and the body weight
from the plates that ``musclerl reference`` takes when no mass is given: the weight and the
measured window on synthetic plates, the marker set for the lab's labels, and (slow) the whole
chain on OpenSim's C3D walks."""

from __future__ import annotations

import numpy as np
import pytest
from c3d_fixtures import C3D_DIR, GAIT2354_MARKERS, marker_set_xml, measured_window_s, write_dataset

from musclerl.motion.foot_loads import body_weight_from_stances_n, stances
from musclerl.motion.storage import Table

RATE_HZ = 1000.0


def _walk_plates(weight_n: float, step_s: float, stance_s: float) -> Table:
    """Two plate stances of a symmetric walk: left from 0.2 s, right one step later, each a
    half-sine scaled so that one stance per foot carries the weight over the stride (2 steps)."""
    t = np.arange(0.0, 0.4 + step_s + stance_s, 1.0 / RATE_HZ)
    # over a stride each foot stands once: integral of one stance = weight * stride / 2
    peak_n = weight_n * step_s * np.pi / (2.0 * stance_s)

    def stance(on_s):
        phase = (t - on_s) / stance_s
        return np.where((phase >= 0) & (phase <= 1), peak_n * np.sin(np.pi * phase), 0.0)

    left, right = stance(0.2), stance(0.2 + step_s)
    return Table(("ground_force_r_vy", "ground_force_l_vy"), np.c_[right, left], t, False, "plates")


def test_body_weight_comes_back_from_one_stance_per_foot():
    grf = _walk_plates(weight_n=630.0, step_s=0.42, stance_s=0.5)
    assert body_weight_from_stances_n(grf) == pytest.approx(630.0, rel=0.01)
    # the same walk at another cadence and stance time: still the weight
    assert body_weight_from_stances_n(_walk_plates(800.0, 0.55, 0.7)) == pytest.approx(800.0, rel=0.01)


def test_no_weight_without_a_step_on_the_plates():
    """Stances that are not one step apart (the second starts after the first ended), a foot cut by
    the recording, or plates not named per foot: no estimate (reference keeps the model's mass)."""
    apart = _walk_plates(630.0, step_s=0.9, stance_s=0.5)  # no double support: not one step
    assert body_weight_from_stances_n(apart) is None
    grf = _walk_plates(630.0, step_s=0.42, stance_s=0.5)
    cut = Table(grf.columns, grf.data[: int(0.9 * RATE_HZ)], grf.time_s[: int(0.9 * RATE_HZ)], False, "cut")
    assert stances(cut, "r") == [] and body_weight_from_stances_n(cut) is None
    plates = Table(("ground_force_vy", "1_ground_force_vy"), grf.data, grf.time_s, False, "plates")
    assert body_weight_from_stances_n(plates) is None


def test_measured_window_drops_the_double_support_off_the_plates():
    grf = _walk_plates(630.0, step_s=0.42, stance_s=0.5)
    ((on_l, off_l),), ((on_r, off_r),) = stances(grf, "l"), stances(grf, "r")
    double_s = off_l - on_r  # 0.08 s: the other foot's stance before and after overlaps as long
    assert double_s == pytest.approx(0.08, abs=0.01)
    lo, hi = measured_window_s(grf)
    assert lo == pytest.approx(on_l + double_s, abs=1e-9) and hi == pytest.approx(off_r - double_s, abs=1e-9)


@pytest.mark.skipif(not GAIT2354_MARKERS.is_file(), reason="shared gait2354 data absent")
def test_marker_set_names_the_lab_labels_on_myolegs_bodies(tmp_path):
    from musclerl.models.markers import read_marker_set
    from musclerl.retarget.markers.registration import placeholder_markers

    markers = read_marker_set(marker_set_xml(tmp_path / "set.xml"))
    by_name = {m.name: m for m in markers.markers}
    for side, letter in (("r", "R"), ("l", "L")):
        assert (
            by_name[f"{letter}LFC"].body == f"femur_{side}"
            and by_name[f"{letter}CAL"].body == f"calcn_{side}"
        )
        assert by_name[f"{letter}HJC"].body == "pelvis"
    # the lab's hip centres at myolegs' own: the femurs' origins, mirror images of each other
    np.testing.assert_allclose(by_name["RHJC"].location_m * [1, 1, -1], by_name["LHJC"].location_m)
    placeholders = set(placeholder_markers(markers))
    assert {"RTH1", "RTH2", "RTH3", "LTB1", "RPSI", "LPSI"} <= placeholders
    assert not placeholders & {"RASI", "RLFC", "RMMAL", "RCAL", "RMT1", "RHJC"}


@pytest.mark.slow
@pytest.mark.timeout(2400)  # three retargetings and inverse dynamics: 9-15 min on two busy cores
@pytest.mark.skipif(not (C3D_DIR / "walking2.c3d").is_file(), reason="shared C3D data absent")
def test_c3d_walks_become_reference_trials_with_plausible_loads(tmp_path):
    """The three walks retarget within 15 mm marker RMS, the person weighs the same in all three
    (the plates), and inverse dynamics in the measured window stays within what walking needs
    (joint moments under 3 N·m/kg, vertical GRF under 2 BW): no 360 deg pelvis jump, no load
    from a foot off the plates."""
    import json

    paths = write_dataset(tmp_path / "root")
    assert len(paths) == 3
    masses = []
    for path in paths:
        with np.load(path) as z:
            masses.append(float(z["subject_weight_kg"]))
            valid = z["joint_torque_column_valid"]
            assert 0.4 < valid.all(axis=1).mean() < 0.9  # the plates' stances, less double support
            assert np.nanmax(np.abs(z["joint_torque"])) < 3.0
            assert np.max(z["computed_grf"][:, [2, 5]]) < 2.0
    assert max(masses) - min(masses) < 3.0
    for name in ("walking2", "walking5", "test_walking"):
        report = json.loads((tmp_path / "root_work" / f"{name}.json").read_text())
        assert report["marker_rms_m"]["mean"] < 0.015
