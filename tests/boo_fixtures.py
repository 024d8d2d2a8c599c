"""Reference trials written the way users receive them: the Boo_LevelWalking (Gait120) layout of
``../shared/REFERENCE_NPZ.md``, from the shared OpenSim outputs of subject01's walk, with plain
numpy and text files (not musclerl's writer, so the reader is tested on files others made).

Sources (``../shared/data``): ``opensim_gait2354/subject01_walk1_ik.mot`` (kinematics, 60 Hz,
0.4-1.6 s), ``inverse_dynamics.sto`` (ID, its own timestamps), ``subject01_walk1_grf.mot`` (two
plates, 600 Hz) and ``opensim_gait2392_so/subject01_StaticOptimization_activation.sto`` (100 Hz,
0.5-2.0 s, gait2392 names, renamed to Rajagopal2016's as the dataset ships them).

Per trial: a window of the walk (start and length vary; the treadmill's belt motion added, so it
walks overground as Boo's subjects do), kinematics and ID in Gait120's signs
(knee extension positive, as gait2354 already is; the left hip's adduction and rotation negated),
and an off-plate window: the first stance of one foot inside the trial (the left foot in trial
0, 3, ...; the right in 1, 4, ...; none in 2, 5, ...) makes that leg's and the pelvis's torque
columns invalid (NaN) while the other leg and the lumbar columns stay valid, and that leg's
muscles NaN in the ``_muscle_activation.sto``. Subjects differ in body mass (the ID scaled with
it, so the per-kg torques are the walk's). ``ROOT/<subject>/<subject>_TrialNN_Step01_Step02.npz``.

Each such trial spans less than a stride (one heel strike per foot). :func:`long_trial_arrays` adds
one trial of the whole 2.5 s walk (OpenSim's 10-dof IK and ID of it), a gait cycle per foot, with the
plates named the Boo way (``ground_force_r_vy``, ``ground_force_l_vy``).

Run as a script to write a dataset root: ``python tests/boo_fixtures.py ROOT --subjects 4 --trials 5``
(``--long``: also the long trial, in ``S990/``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from musclerl.evaluate.muscle_names import gait2392_to_rajagopal
from musclerl.motion.storage import read_storage

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GRAVITY = 9.80665
MASS_KG = 72.6  # subject01_simbody.osim: the sum of its body masses
STANCE_N = 20.0  # vertical plate force above which a foot is in stance
#: subject01 walks on a treadmill, Boo's subjects overground: the belt's speed (m/s, the stance
#: feet's ground speed, measured once with musclerl's belt estimator on this trial) is added to
#: ``pelvis_tx`` so the trials walk forward; ID and GRF are unchanged by a constant belt speed.
BELT_MPS = 1.01
MIRRORED_LEFT = ("hip_adduction_l", "hip_rotation_l")
PLATES = {"r": "ground_force_vy", "l": "1_ground_force_vy"}  # right foot on plate 1, left on plate 2


def _leg(name: str) -> str | None:
    for side in ("r", "l"):
        if name.endswith(f"_{side}") or f"_{side}_" in name:
            return side
    return None


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of True."""
    edges = np.diff(np.concatenate([[0], mask.astype(int), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def write_sto(path: Path, name: str, time_s: np.ndarray, columns: list[str], data: np.ndarray) -> None:
    """An OpenSim storage file as OpenSim writes it (tab separated, NaN as ``nan``)."""
    lines = [name, "version=1", f"nRows={len(time_s)}", f"nColumns={len(columns) + 1}", "inDegrees=no"]
    lines += ["endheader", "\t".join(["time", *columns])]
    lines += ["\t".join(f"{v:.8f}" for v in [t, *row]) for t, row in zip(time_s, data, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def _subject_fields(mass_kg: float) -> dict[str, np.ndarray]:
    """The Boo layout's per-subject mass and its statements of units and normalisation."""
    return {
        "joint_torque_sign_convention": np.array("torques follow each angle column's sign convention"),
        "joint_torque_normalization": np.array("divided_by_subject_weight_kg"),
        "joint_torque_units": np.array("original_ID_units_per_kg"),
        "subject_weight_kg": np.array(mass_kg),
        "subject_body_weight_n": np.array(mass_kg * GRAVITY),
        "computed_grf_normalization": np.array("force_vectors_divided_by_subject_body_weight_n"),
        "computed_grf_units": np.array("force: BW; cop: m; torque: N*m"),
    }


def trial_arrays(
    subject: str, trial_index: int, mass_kg: float, off_plate: str | None, data: Path = SHARED
) -> tuple[dict[str, np.ndarray], list[str], np.ndarray]:
    """(the .npz's arrays, muscle names, activations (T, M) with NaN where a leg is invalid)."""
    ik = read_storage(data / "opensim_gait2354" / "subject01_walk1_ik.mot")
    inv = read_storage(data / "opensim_gait2354" / "inverse_dynamics.sto")
    grf = read_storage(data / "opensim_gait2354" / "subject01_walk1_grf.mot")
    so = read_storage(data / "opensim_gait2392_so" / "subject01_StaticOptimization_activation.sto")
    start_s = 0.5 + 0.05 * (trial_index % 3)
    stop_s = min(1.6, start_s + 0.95 + 0.05 * (trial_index % 2))
    rows = np.flatnonzero((ik.time_s >= start_s - 1e-6) & (ik.time_s <= stop_s + 1e-6))
    t_orig = ik.time_s[rows]
    t0 = t_orig[0]
    angles = np.array(ik.data[rows], dtype=float)
    angle_cols = list(ik.columns)
    angles[:, angle_cols.index("pelvis_tx")] += BELT_MPS * (t_orig - ik.time_s[0])
    for name in MIRRORED_LEFT:
        angles[:, angle_cols.index(name)] *= -1
    torque_cols = [c for c in inv.columns if c.endswith(("_moment", "_force"))]
    moments = np.column_stack([np.interp(t_orig, inv.time_s, inv.column(c)) for c in torque_cols])
    moments *= mass_kg / MASS_KG  # a heavier subject walking the same way
    for k, c in enumerate(torque_cols):
        if c.removesuffix("_moment") in MIRRORED_LEFT:
            moments[:, k] *= -1
    id_rows = np.flatnonzero((inv.time_s >= t0 - 0.02) & (inv.time_s <= t_orig[-1] + 0.02))
    weight_n = mass_kg * GRAVITY
    grf_cols = list(grf.columns)
    grf_vals = np.column_stack([np.interp(t_orig, grf.time_s, grf.column(c)) for c in grf_cols])
    force_cols = [k for k, c in enumerate(grf_cols) if "_force_v" in c]
    grf_vals *= mass_kg / MASS_KG
    grf_vals[:, force_cols] /= weight_n
    valid = np.ones((len(rows), len(torque_cols)), dtype=bool)
    if off_plate is not None:
        stance = np.interp(t_orig, grf.time_s, grf.column(PLATES[off_plate])) > STANCE_N
        a, b = _runs(stance)[0]
        for k, c in enumerate(torque_cols):
            if _leg(c) == off_plate or c.startswith("pelvis_"):
                valid[a:b, k] = False
    torque = np.where(valid, moments / mass_kg, np.nan)
    muscles, acts = [], []
    for k, col in enumerate(so.columns):
        name = gait2392_to_rajagopal(col)
        if name is not None:
            muscles.append(name)
            acts.append(np.interp(t_orig, so.time_s, so.data[:, k]))
    act = np.column_stack(acts)
    for side in ("r", "l"):
        leg_ok = valid[:, [k for k, c in enumerate(torque_cols) if _leg(c) == side]].all(axis=1)
        act[:, [m for m, name in enumerate(muscles) if name.endswith(f"_{side}")]] *= np.where(
            leg_ok, 1.0, np.nan
        )[:, None]
    notes = [] if off_plate is None else [f"{'left' if off_plate == 'l' else 'right'} foot off the plates"]
    trial = f"Trial{trial_index + 1:02d}"
    arrays = {
        "subject": np.array(subject),
        "trial": np.array(trial),
        "step_label": np.array("Step01_Step02"),
        "timestep": np.arange(len(rows)),
        "time_sec": t_orig - t0,
        "source_time_sec": t_orig - t0,
        "original_kinematics_time_sec": t_orig,
        "id_source_time_sec": inv.time_s[id_rows] - t0,
        "original_id_source_time_sec": inv.time_s[id_rows],
        "joint_angle": angles,
        "joint_angle_columns": np.array(angle_cols),
        "joint_torque": torque,
        "joint_torque_columns": np.array(torque_cols),
        "joint_torque_valid": valid.all(axis=1),
        "joint_torque_column_valid": valid,
        **_subject_fields(mass_kg),
        "computed_grf": grf_vals,
        "computed_grf_columns": np.array(grf_cols),
        "computed_grf_valid": np.ones(len(rows), dtype=bool),
        "qc_notes": np.array("; ".join(notes)),
        "source_files": np.array(
            [f"{subject}/{trial}_ik.mot", f"{subject}/{trial}_id.sto", f"{subject}/{trial}_grf.mot"]
        ),
    }
    return arrays, muscles, act


LONG_SOURCE = "opensim_gait10dof18musc"  # the same walk's IK and ID over the GRF's whole 2.5 s


def long_trial_arrays(subject: str, mass_kg: float, data: Path = SHARED) -> dict[str, np.ndarray]:
    """A trial long enough for a gait cycle per foot, in Boo's two-plate GRF names
    (``ground_force_r_vy``, ...; plate 1 carries the right foot, plate 2 the left): the 2.5 s of
    OpenSim's 10-dof (sagittal) IK and ID of the same walk, the coordinates that model lacks
    (pelvis list/rotation/tz) at 0, the others absent. All columns valid."""
    ik = read_storage(data / LONG_SOURCE / "subject01_walk_IK.mot")
    inv = read_storage(data / LONG_SOURCE / "subject01_walk_ID.sto")
    grf = read_storage(data / "opensim_gait2354" / "subject01_walk1_grf.mot")
    t = np.asarray(ik.time_s, dtype=float)
    angle_cols = list(ik.columns) + ["pelvis_list", "pelvis_rotation", "pelvis_tz"]
    angles = np.column_stack([ik.data, np.zeros((len(t), 3))])
    angles[:, angle_cols.index("pelvis_tx")] += BELT_MPS * (t - t[0])
    torque_cols = [c for c in inv.columns if c.endswith(("_moment", "_force"))]
    moments = np.column_stack([np.interp(t, inv.time_s, inv.column(c)) for c in torque_cols])
    weight_n = mass_kg * GRAVITY
    plate_side = {"": "r", "1_": "l"}
    grf_cols, grf_vals = [], []
    for c in grf.columns:
        prefix = "1_" if c.startswith("1_") else ""
        name = c.removeprefix(prefix)
        part, _, axis = name.rpartition("_")  # ground_force_vy -> ground_force, vy
        grf_cols.append(f"{part}_{plate_side[prefix]}_{axis}")
        scale = (mass_kg / MASS_KG) / (weight_n if "_force_v" in c else 1.0)
        grf_vals.append(np.interp(t, grf.time_s, grf.column(c)) * scale)
    valid = np.ones((len(t), len(torque_cols)), dtype=bool)
    return {
        "subject": np.array(subject),
        "trial": np.array("Trial90"),
        "step_label": np.array("Step01_Step04"),
        "timestep": np.arange(len(t)),
        "time_sec": t - t[0],
        "source_time_sec": t - t[0],
        "original_kinematics_time_sec": t,
        "id_source_time_sec": inv.time_s - t[0],
        "original_id_source_time_sec": inv.time_s,
        "joint_angle": angles,
        "joint_angle_columns": np.array(angle_cols),
        "joint_torque": moments / MASS_KG,
        "joint_torque_columns": np.array(torque_cols),
        "joint_torque_valid": valid.all(axis=1),
        "joint_torque_column_valid": valid,
        **_subject_fields(mass_kg),
        "computed_grf": np.column_stack(grf_vals),
        "computed_grf_columns": np.array(grf_cols),
        "computed_grf_valid": np.ones(len(t), dtype=bool),
        "qc_notes": np.array("sagittal model: hip adduction/rotation, subtalar and mtp not in joint_angle"),
        "source_files": np.array(
            [f"{subject}/long_ik.mot", f"{subject}/long_id.sto", f"{subject}/long_grf.mot"]
        ),
    }


def write_dataset(root: Path, subjects: int = 2, trials: int = 3, data: Path = SHARED) -> list[Path]:
    """``subjects`` folders (S901, S902, ...) of ``trials`` trials each; returns the .npz paths."""
    paths = []
    for s in range(subjects):
        subject = f"S{901 + s}"
        folder = Path(root) / subject
        folder.mkdir(parents=True, exist_ok=True)
        for j in range(trials):
            k = s * trials + j
            off_plate = ("l", "r", None)[k % 3]
            arrays, muscles, act = trial_arrays(subject, j, 60.0 + 7.5 * s, off_plate, data)
            stem = folder / f"{subject}_{arrays['trial']}_Step01_Step02"
            np.savez(stem.with_suffix(".npz"), **arrays)
            write_sto(
                Path(f"{stem}_muscle_activation.sto"),
                "Static Optimization activations",
                arrays["time_sec"],
                muscles,
                act,
            )
            paths.append(stem.with_suffix(".npz"))
    return paths


def write_long_trial(
    root: Path, subject: str = "S990", mass_kg: float = MASS_KG, data: Path = SHARED
) -> Path:
    """One :func:`long_trial_arrays` trial under ``root/<subject>/``; returns the .npz path."""
    arrays = long_trial_arrays(subject, mass_kg, data)
    folder = Path(root) / subject
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{subject}_{arrays['trial']}_{arrays['step_label']}.npz"
    np.savez(path, **arrays)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--subjects", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3, help="trials per subject")
    parser.add_argument(
        "--long", action="store_true", help="also one 2.5 s trial (a gait cycle per foot) in S990/"
    )
    args = parser.parse_args(argv)
    paths = write_dataset(Path(args.root), args.subjects, args.trials)
    if args.long:
        paths.append(write_long_trial(Path(args.root)))
    print(f"wrote {len(paths)} trials under {args.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
