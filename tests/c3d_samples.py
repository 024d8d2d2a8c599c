"""Small C3D files written with ezc3d's own writer, for the C3D tests and the fuzz suite."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_c3d(
    path: Path,
    names: list[str],
    positions: np.ndarray,
    rate_hz: float,
    units: str = "mm",
    residuals: np.ndarray | None = None,
    screen: tuple[str, str] = ("+X", "+Z"),
    events: list[tuple[str, str, float]] = (),
    plate_channels: tuple[int, ...] | None = None,
) -> None:
    """``positions`` (T, M, 3) in ``units`` and the lab frame, written as a C3D marker file;
    ``residuals`` (T, M) (default 0: every sample measured); ``events`` (context, label, time_s).
    ``plate_channels``: also one type-2 force plate (500 x 600 mm at the lab origin, 600 N down
    throughout) on six analog channels (Fx Fy Fz Mx My Mz, 10 samples per frame), its
    ``FORCE_PLATFORM:CHANNEL`` the given 1-based channel numbers (numbers past 6 point past the data)."""
    import ezc3d

    c3d = ezc3d.c3d()
    point = c3d["parameters"]["POINT"]
    point["RATE"]["value"] = [float(rate_hz)]
    point["LABELS"]["value"] = list(names)
    point["UNITS"]["value"] = [units]
    c3d.add_parameter("POINT", "X_SCREEN", [screen[0]])
    c3d.add_parameter("POINT", "Y_SCREEN", [screen[1]])
    n_frames, n_markers = positions.shape[:2]
    points = np.ones((4, n_markers, n_frames))
    points[:3] = np.asarray(positions, dtype=float).transpose(2, 1, 0)
    c3d["data"]["points"] = points
    res = np.zeros((n_frames, n_markers)) if residuals is None else np.asarray(residuals, dtype=float)
    c3d["data"]["meta_points"]["residuals"] = res.T[None]
    c3d["data"]["meta_points"]["camera_masks"] = np.zeros((7, n_markers, n_frames), dtype=bool)
    if events:
        times = np.array([[0.0, t] for _, _, t in events]).T
        c3d.add_parameter("EVENT", "USED", [len(events)])
        c3d.add_parameter("EVENT", "CONTEXTS", [c for c, _, _ in events])
        c3d.add_parameter("EVENT", "LABELS", [label for _, label, _ in events])
        c3d.add_parameter("EVENT", "TIMES", times)
    if plate_channels is not None:
        _add_plate(c3d, n_frames, plate_channels)
    c3d.write(str(path))


def _add_plate(c3d, n_frames: int, channels: tuple[int, ...]) -> None:
    import ezc3d

    analog = c3d["parameters"]["ANALOG"]
    analog["RATE"]["value"] = [10.0 * c3d["parameters"]["POINT"]["RATE"]["value"][0]]
    analog["LABELS"]["value"] = ["Fx", "Fy", "Fz", "Mx", "My", "Mz"]
    analog["UNITS"]["value"] = ["N", "N", "N", "Nmm", "Nmm", "Nmm"]
    samples = np.zeros((1, 6, 10 * n_frames))
    samples[0, 2] = -600.0
    c3d["data"]["analogs"] = samples
    corners = np.array([[500.0, 0, 0], [500, 600, 0], [0, 600, 0], [0, 0, 0]]).T[:, :, None]
    c3d.add_parameter("FORCE_PLATFORM", "CORNERS", corners)
    c3d.add_parameter("FORCE_PLATFORM", "ORIGIN", np.array([[0.0], [0.0], [-40.0]]))
    integers = {"USED": [1], "TYPE": [2], "ZERO": [1, 0], "CHANNEL": [[c] for c in channels]}
    for name, value in integers.items():  # ezc3d's add_parameter stores Python ints as floats
        c3d.add_parameter("FORCE_PLATFORM", name, np.array(value, dtype=float))
        c3d["parameters"]["FORCE_PLATFORM"][name]["type"] = ezc3d.ezc3d.INT
