"""Reference trials of another lab's person, with force plates: the three C3D walks of
``../shared/data/opensim_c3d`` (OpenSim's test data, Apache-2.0; one person, 250 Hz markers, two
plates) in the Boo_LevelWalking layout, made the way a user with a C3D and no OpenSim model would:

1. **a marker set** for the lab's labels onto myolegs: the anatomical landmarks (ASIS, femoral
   condyles, malleoli, heel, first metatarsal head) at gait2354's locations of the same landmarks
   (``gait2354_Scale_MarkerSet.xml``, OpenSim example data, CC BY 3.0), the lab's hip-joint centres
   (``RHJC``/``LHJC``) at myolegs' own hip centres, and the thigh and shank clusters and the PSIS as
   placeholders (one point per segment: placed where the static pose sees them);
2. **no static trial** exists, so one frame of the walk itself, the middle of the frames where every
   marker is seen, serves as one: the static fit poses the model there, the segment lengths come from
   the markers (the thigh and shank from the joint centres, which do not depend on the pose);
3. ``musclerl retarget markers`` over the frames where the landmarks are seen, written as a ``.mot``;
4. ``musclerl reference MOT --grf C3D --lowpass-hz 6`` (inverse dynamics with the plates; the
   subject's mass from the plates themselves, ``reference``'s default without ``--mass``:
   :func:`musclerl.motion.foot_loads.body_weight_from_stances_n`);
5. the trial cut to the plates' stances with 0.1 s either side, and the joint moments and ground
   reactions marked valid only while every foot on the ground stands on a plate
   (:func:`measured_window_s`): elsewhere a foot carries load no plate measured.

``python tests/c3d_fixtures.py ROOT`` writes ``ROOT/S801/S801_TrialNN_Step01_Step02.npz``
(Trial01 ``test_walking``, Trial02 ``walking2``, Trial05 ``walking5``), and the marker set it used
with the intermediate files in ``ROOT_work/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
C3D_DIR = SHARED / "opensim_c3d"
GAIT2354_MARKERS = SHARED / "opensim_gait2354" / "gait2354_Scale_MarkerSet.xml"
MARGIN_S = 0.1  # the trial runs this long before the first plate stance and after the last
LOWPASS_HZ = 6.0  # the usual cut-off for walking kinematics before inverse dynamics
TRIALS = {"test_walking": "Trial01", "walking2": "Trial02", "walking5": "Trial05"}
#: lab label (side letter first) -> gait2354 landmark of the same name (side letter first)
LANDMARKS = {
    "ASI": "ASIS",
    "LFC": "Knee.Lat",
    "MFC": "Knee.Med",
    "LMAL": "Ankle.Lat",
    "MMAL": "Ankle.Med",
    "CAL": "Heel",
    "MT1": "Toe.Med",
}
#: placeholders: lab label -> gait2354 landmark whose body and rough location they take
PLACEHOLDERS = {"TH1": "Thigh.Front", "TH2": "Thigh.Front", "TH3": "Thigh.Front"} | {
    "TB1": "Shank.Front",
    "TB2": "Shank.Front",
    "TB3": "Shank.Front",
}


def _gait2354_marker(text: str, name: str) -> tuple[str, np.ndarray]:
    found = re.search(
        rf'<Marker name="{re.escape(name)}">.*?<body>\s*(\S+)\s*</body>.*?<location>([^<]*)</location>',
        text,
        re.S,
    )
    if found is None:
        raise KeyError(name)
    return found.group(1), np.array(found.group(2).split(), dtype=float)


def marker_set_xml(path: Path, gait2354: Path = GAIT2354_MARKERS) -> Path:
    """Write the lab's marker set for myolegs (module docstring, step 1) as an OpenSim MarkerSet."""
    import mujoco

    from musclerl.models.registry import load_model

    text = gait2354.read_text()
    model = load_model("myolegs")
    rows: dict[str, tuple[str, np.ndarray]] = {}
    for side, letter in (("r", "R"), ("l", "L")):
        for label, landmark in (LANDMARKS | PLACEHOLDERS).items():
            rows[f"{letter}{label}"] = _gait2354_marker(text, f"{letter}.{landmark}")
        rows[f"{letter}PSI"] = _gait2354_marker(text, "V.Sacral")  # both at one point: placeholders
        hip = model.body(f"femur_{side}")  # the femur's origin is the hip centre, in the pelvis frame
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis") == int(hip.parentid[0])
        rows[f"{letter}HJC"] = ("pelvis", np.array(hip.pos, dtype=float))
    markers = "".join(
        f'<Marker name="{name}"><body>{body}</body><location>{loc[0]:.5f} {loc[1]:.5f} {loc[2]:.5f}'
        "</location><fixed>false</fixed></Marker>\n"
        for name, (body, loc) in rows.items()
    )
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="20302">'
        f'<MarkerSet name="opensim_c3d_walks"><objects>\n{markers}</objects><groups/></MarkerSet>'
        "</OpenSimDocument>\n"
    )
    return path


def measured_window_s(grf) -> tuple[float, float]:
    """The span in which every foot on the ground is on a plate: from the first plate stance's
    start plus the double support (the other foot's previous stance, off the plates, overlaps it as
    long as the two plate stances overlap) to the last one's end minus the same."""
    from musclerl.motion.foot_loads import stances

    (on_a, off_a), (on_b, off_b) = sorted(stance for side in "rl" for stance in stances(grf, side))
    double_s = off_a - on_b
    return on_a + double_s, off_b - double_s


def static_frame(markers, path: Path) -> Path:
    """One frame of the walk as a static trial: the middle of the frames where every marker is seen."""
    from musclerl.motion.trc import write_trc

    seen = np.isfinite(markers.positions_m[..., 0]).sum(axis=1)
    full = np.flatnonzero(seen == seen.max())
    k = int(full[len(full) // 2])
    one = dataclasses.replace(
        markers, positions_m=markers.positions_m[k : k + 1], time_s=markers.time_s[k : k + 1]
    )
    write_trc(path, one)
    return path


def landmark_window_s(markers) -> tuple[float, float]:
    """First and last time every landmark of the marker set (both sides) is seen."""
    names = [f"{s}{label}" for s in "RL" for label in (*LANDMARKS, "HJC")]
    seen = np.all(np.isfinite(markers.positions_m[:, [markers.names.index(n) for n in names], 0]), axis=1)
    rows = np.flatnonzero(seen)
    return float(markers.time_s[rows[0]]), float(markers.time_s[rows[-1]])


def _cut(arrays: dict[str, np.ndarray], rows: np.ndarray, valid: np.ndarray) -> dict[str, np.ndarray]:
    """The reference NPZ's per-frame arrays cut to ``rows``; moments and GRF outside ``valid``
    marked invalid (torques NaN, as Boo ships them)."""
    n = len(arrays["time_sec"])
    out = {k: (v[rows] if v.ndim >= 1 and v.shape[0] == n else v) for k, v in arrays.items()}
    t0 = out["time_sec"][0]
    for key in ("time_sec", "source_time_sec", "id_source_time_sec"):
        out[key] = out[key] - t0
    out["timestep"] = np.arange(len(rows))
    column_valid = out["joint_torque_column_valid"] & valid[:, None]
    out["joint_torque_column_valid"] = column_valid
    out["joint_torque_valid"] = column_valid.all(axis=1)
    out["joint_torque"] = np.where(column_valid, out["joint_torque"], np.nan)
    out["computed_grf_valid"] = out["computed_grf_valid"] & valid
    return out


def write_trial(root: Path, name: str, work: Path, marker_set: Path, data: Path = C3D_DIR) -> Path:
    """One C3D walk as ``root/S801/S801_<TrialNN>_Step01_Step02.npz`` (module docstring)."""
    from musclerl.cli import main as cli
    from musclerl.motion.foot_loads import stances
    from musclerl.motion.readers import read_motion_file
    from musclerl.motion.storage import read_storage

    c3d = data / f"{name}.c3d"
    assert cli(["convert", str(c3d), "--out", str(work / name)]) == 0
    grf = read_storage(work / name / f"{name}_grf.mot")
    markers = read_motion_file(c3d)
    start_s, end_s = landmark_window_s(markers)
    static = static_frame(markers, work / f"{name}_static.trc")
    mot = work / f"{name}.mot"
    retarget = ["retarget", "markers", str(c3d), "--markers", str(marker_set), "--static", str(static)]
    retarget += ["--start", f"{start_s}", "--end", f"{end_s}", "--out", str(work / f"{name}.npz")]
    assert cli([*retarget, "--mot", str(mot), "--report", str(work / f"{name}.json")]) == 0
    whole = work / f"{name}_reference.npz"  # the mass from the plates (reference's default)
    reference = ["reference", str(mot), "--grf", str(c3d), "--lowpass-hz", f"{LOWPASS_HZ}"]
    assert cli([*reference, "--no-static-optimisation", "--out", str(whole)]) == 0
    with np.load(whole, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    t = arrays["original_kinematics_time_sec"]
    on_plates = [stance for side in "rl" for stance in stances(grf, side)]
    first_s, last_s = min(s[0] for s in on_plates) - MARGIN_S, max(s[1] for s in on_plates) + MARGIN_S
    rows = np.flatnonzero((t >= first_s) & (t <= last_s))
    lo_s, hi_s = measured_window_s(grf)
    out = _cut(arrays, rows, (t[rows] >= lo_s) & (t[rows] <= hi_s))
    trial = TRIALS[name]
    out |= {
        "subject": np.array("S801"),
        "trial": np.array(trial),
        "step_label": np.array("Step01_Step02"),
        "qc_notes": np.array(
            f"{out['qc_notes']}; {name}.c3d (OpenSim test data); moments and GRF valid "
            f"{lo_s:.3f}-{hi_s:.3f} s (every foot on the ground on a plate); mass from the plates"
        ),
    }
    folder = root / "S801"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"S801_{trial}_Step01_Step02.npz"
    np.savez(path, **out)
    return path


def write_dataset(root: Path, work: Path | None = None, data: Path = C3D_DIR) -> list[Path]:
    """Every C3D walk under ``root/S801/``; intermediate files (converted markers and plates, the
    static frame, retargeting reports, the whole-trial references) under ``work`` (default
    ``<root>_work`` beside it: a dataset root holds reference trials only)."""
    root = Path(root)
    work = Path(work) if work is not None else root.with_name(f"{root.name}_work")
    work.mkdir(parents=True, exist_ok=True)
    marker_set = marker_set_xml(work / "opensim_c3d_markers.xml")
    return [write_trial(root, name, work, marker_set, data) for name in TRIALS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    args = parser.parse_args(argv)
    paths = write_dataset(Path(args.root))
    print(f"wrote {len(paths)} trials under {args.root}/S801")
    return 0


if __name__ == "__main__":
    sys.exit(main())
