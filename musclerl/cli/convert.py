"""``musclerl convert``: a C3D trial -> the files OpenSim users make from it.

``musclerl convert TRIAL.c3d --out DIR`` writes, into ``DIR``:

- ``TRIAL.trc``: the markers (in the C3D's unit), in OpenSim's Y-up lab frame;
- with force plates, ``TRIAL_grf.mot``: the plates' loads per foot with OpenSim's column names
  (``ground_force_r_vx`` ... ``ground_torque_l_z``) and ``TRIAL_grf.xml``: the ExternalLoads file
  applying them to ``calcn_r`` / ``calcn_l`` (each plate contact goes to the foot whose markers are
  nearest its centre of pressure: :mod:`musclerl.motion.foot_loads`).

Everything is computed before the first file is written; a bad C3D writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("c3d", help="C3D trial (markers, optional force plates)")
    parser.add_argument(
        "--out", required=True, help="folder receiving TRIAL.trc [TRIAL_grf.mot, TRIAL_grf.xml]"
    )
    parser.add_argument("--units", choices=("mm", "m"), help="units of the .trc (default: the C3D's own)")


def run(args: argparse.Namespace) -> int:
    from musclerl.errors import InputError
    from musclerl.fileio import atomic_path, check_outputs
    from musclerl.motion.c3d import read_c3d
    from musclerl.motion.foot_loads import external_loads_xml, foot_loads_table, plate_contacts
    from musclerl.motion.storage import write_storage
    from musclerl.motion.trc import write_trc

    source = Path(args.c3d)
    if source.suffix.lower() != ".c3d":
        raise InputError(source, f"convert reads C3D files (.c3d), not '{source.suffix}'")
    out = Path(args.out)
    stem = source.stem
    check_outputs(folders={"--out": out}, inputs=[source])
    trial = read_c3d(source)
    contacts = plate_contacts(trial) if trial.plates.count else []
    table = foot_loads_table(trial, contacts) if trial.plates.count else None

    written = [out / f"{stem}.trc"]
    write_trc(written[0], trial.markers, units=args.units)
    if table is not None:
        written += [out / f"{stem}_grf.mot", out / f"{stem}_grf.xml"]
        write_storage(written[1], table)
        with atomic_path(written[2]) as tmp:
            tmp.write_text(external_loads_xml(written[1].name), encoding="utf-8")
    markers = trial.markers
    print(
        f"{source.name}: {len(markers.names)} markers, {markers.num_frames} frames at "
        f"{markers.rate_hz:g} Hz, "
        f"{trial.plates.count} force plates -> {', '.join(str(p) for p in written)}"
    )
    for c in contacts:
        t0, t1 = trial.plates.time_s[c.start], trial.plates.time_s[c.stop - 1]
        far = max(c.distance_m.values()) if len(c.distance_m) > 1 else float("nan")
        print(
            f"  plate {c.plate + 1} {t0:.3f}-{t1:.3f} s -> {c.side} foot "
            f"(markers {1e3 * c.distance_m[c.side]:.0f} mm from the centre of pressure, other foot "
            f"{1e3 * far:.0f} mm)"
        )
    return 0
