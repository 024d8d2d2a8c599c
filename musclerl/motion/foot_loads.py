"""Force plates' loads given to the feet: the per-foot GRF table OpenSim's tools read.

**Which foot stands on a plate.** A plate's *contact* is a run of analog samples whose vertical
force exceeds :data:`MIN_LOAD_N`. A side's foot markers are the markers whose label (without a
``subject:`` prefix) starts with ``R`` / ``L`` (any case: ``RCAL``, ``r_toe``, ``LMT1``) and whose
median height over the trial is below :data:`FOOT_HEIGHT_M` (heel, toe, metatarsal and ankle
markers; thigh, pelvis and head markers starting with the same letter are higher). For every
sample of the contact, each side's distance is the horizontal distance from the centre of
pressure to that side's nearest foot marker (markers at the nearest marker frame; gaps skipped);
the contact goes to the side with the smaller median distance. A contact during which no foot
marker of either side is visible is refused: nobody can tell whose it is.

**The table** (:func:`foot_loads_table`): OpenSim's column names per foot ``s`` in ``r``, ``l``:
``ground_force_s_vx|vy|vz`` (N), ``ground_force_s_px|py|pz`` (m, the centre of pressure),
``ground_torque_s_x|y|z`` (N·m, the free moment), at the plates' analog rate, in OpenSim's Y-up
lab frame (:func:`musclerl.motion.keypoints.z_up_to_y_up` of the world frame). A foot with no
loaded plate has zeros (as OpenSim's example files). A foot on two plates at once gets their sum:
the force, the vertical-force-weighted centre of pressure, and the free moments plus the moments of
the forces about that point (the same resultant, so exact). :func:`external_loads_xml` is the
ExternalLoads file that applies the two feet's loads to ``calcn_r`` / ``calcn_l``.
"""

from __future__ import annotations

import dataclasses
import os
from xml.sax.saxutils import escape

import numpy as np

from musclerl.errors import InputError
from musclerl.geometry.arrays import runs
from musclerl.motion.c3d import C3DTrial
from musclerl.motion.keypoints import z_up_to_y_up
from musclerl.motion.storage import Table

#: Vertical force (N) above which a plate is loaded (below it the centre of pressure is noise).
MIN_LOAD_N = 20.0
#: A side's markers with a median height below this (m) are its foot markers.
FOOT_HEIGHT_M = 0.15
#: side -> (ExternalForce name, the body OpenSim's gait models name for the foot).
FEET = {"r": ("right", "calcn_r"), "l": ("left", "calcn_l")}


@dataclasses.dataclass(frozen=True)
class PlateContact:
    """One contact: ``plate`` (0-based) loaded over analog samples ``[start, stop)``, given to
    ``side`` ('r' or 'l'); ``distance_m`` the median COP-to-foot-marker distance per side."""

    plate: int
    start: int
    stop: int
    side: str
    distance_m: dict[str, float]


def force_columns(side: str) -> tuple[str, ...]:
    """The nine OpenSim columns of one foot's load (module docstring)."""
    return (
        *(f"ground_force_{side}_v{a}" for a in "xyz"),
        *(f"ground_force_{side}_p{a}" for a in "xyz"),
        *(f"ground_torque_{side}_{a}" for a in "xyz"),
    )


def _side(label: str) -> str | None:
    first = label.rsplit(":", 1)[-1].strip()[:1].lower()
    return first if first in FEET else None


def foot_markers(trial: C3DTrial) -> dict[str, list[int]]:
    """side -> indices of its foot markers (module docstring); sides without any are left out."""
    pos = trial.markers.positions_m
    with np.errstate(invalid="ignore"):
        present = ~np.all(np.isnan(pos[..., 2]), axis=0)
        height = np.full(pos.shape[1], np.inf)
        height[present] = np.nanmedian(pos[:, present, 2], axis=0)
    feet: dict[str, list[int]] = {}
    for m, name in enumerate(trial.markers.names):
        side = _side(name)
        if side is not None and height[m] < FOOT_HEIGHT_M:
            feet.setdefault(side, []).append(m)
    return feet


def plate_contacts(trial: C3DTrial) -> list[PlateContact]:
    """Every plate's contacts and the foot each goes to (module docstring), in time order."""
    plates, markers = trial.plates, trial.markers
    feet = foot_markers(trial)
    contacts = []
    for p in range(plates.count):
        for start, stop, loaded in runs(plates.force_n[:, p, 2] > MIN_LOAD_N):
            if not loaded:
                continue
            cop = plates.cop_m[start:stop, p, :2]  # (S, 2) horizontal
            frames = np.clip(
                np.searchsorted(markers.time_s, plates.time_s[start:stop]), 0, markers.num_frames - 1
            )
            distance = {}
            for side, idx in feet.items():
                foot = markers.positions_m[frames][:, idx, :2]  # (S, K, 2)
                with np.errstate(invalid="ignore"):
                    nearest = np.nanmin(np.linalg.norm(foot - cop[:, None], axis=-1), axis=1, initial=np.inf)
                nearest = nearest[np.isfinite(nearest)]
                if nearest.size:
                    distance[side] = float(np.median(nearest))
            if not distance:
                t0, t1 = plates.time_s[start], plates.time_s[stop - 1]
                raise InputError(
                    markers.source,
                    f"force plate {p + 1} is loaded {t0:.3f}-{t1:.3f} s but no foot marker (a label starting "
                    f"with R or L, median height below {FOOT_HEIGHT_M:g} m) is visible to tell which foot",
                )
            side = min(distance, key=distance.get)
            contacts.append(PlateContact(p, int(start), int(stop), side, distance))
    return sorted(contacts, key=lambda c: (c.start, c.plate))


def foot_loads_table(trial: C3DTrial, contacts: list[PlateContact] | None = None) -> Table:
    """The per-foot GRF table (module docstring) of ``trial``'s plates: (T, 18) at the analog rate."""
    plates = trial.plates
    if plates.count == 0:
        raise InputError(trial.markers.source, "no force plates (FORCE_PLATFORM:USED is 0)")
    contacts = plate_contacts(trial) if contacts is None else contacts
    n = len(plates.time_s)
    columns: list[str] = []
    blocks = []
    for side in FEET:
        force = np.zeros((n, 3))
        weighted_cop = np.zeros((n, 3))
        vertical = np.zeros(n)
        on = [(c.plate, slice(c.start, c.stop)) for c in contacts if c.side == side]
        for p, span in on:
            force[span] += plates.force_n[span, p]
            weighted_cop[span] += plates.force_n[span, p, 2:3] * plates.cop_m[span, p]
            vertical[span] += plates.force_n[span, p, 2]
        loaded = vertical > 0
        point = np.zeros((n, 3))
        point[loaded] = weighted_cop[loaded] / vertical[loaded, None]
        torque = np.zeros((n, 3))
        for p, span in on:
            arm = plates.cop_m[span, p] - point[span]
            torque[span] += plates.free_moment_nm[span, p] + np.cross(arm, plates.force_n[span, p])
        columns += force_columns(side)
        blocks += [z_up_to_y_up(force), z_up_to_y_up(point), z_up_to_y_up(torque)]
    return Table(
        columns=tuple(columns),
        data=np.hstack(blocks),
        time_s=np.asarray(plates.time_s, dtype=float),
        in_degrees=False,
        name=f"ground reaction forces of {os.path.basename(trial.markers.source)}",
        source=trial.markers.source,
    )


def external_loads_xml(datafile: str) -> str:
    """An OpenSim ExternalLoads document applying ``datafile``'s two feet to ``calcn_r`` / ``calcn_l``."""
    forces = []
    for side, (name, body) in FEET.items():
        forces.append(
            f"""\t\t\t<ExternalForce name="{name}">
\t\t\t\t<isDisabled>false</isDisabled>
\t\t\t\t<applied_to_body>{body}</applied_to_body>
\t\t\t\t<force_expressed_in_body>ground</force_expressed_in_body>
\t\t\t\t<point_expressed_in_body>ground</point_expressed_in_body>
\t\t\t\t<force_identifier>ground_force_{side}_v</force_identifier>
\t\t\t\t<point_identifier>ground_force_{side}_p</point_identifier>
\t\t\t\t<torque_identifier>ground_torque_{side}_</torque_identifier>
\t\t\t\t<data_source_name>Unassigned</data_source_name>
\t\t\t</ExternalForce>"""
        )
    body = "\n".join(forces)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="30000">
\t<ExternalLoads name="externalloads">
\t\t<objects>
{body}
\t\t</objects>
\t\t<groups/>
\t\t<datafile>{escape(datafile)}</datafile>
\t</ExternalLoads>
</OpenSimDocument>
"""


def stances(grf: Table, side: str) -> list[tuple[float, float]]:
    """(on, off) times (s) of each complete stance of foot ``side`` in a per-foot GRF table
    (``ground_force_<side>_vy`` above :data:`MIN_LOAD_N`; a run that starts at the first sample or
    ends at the last is cut by the recording and left out)."""
    loaded = grf.column(f"ground_force_{side}_vy") > MIN_LOAD_N
    n = len(loaded)
    return [
        (float(grf.time_s[a]), float(grf.time_s[b - 1]))
        for a, b, on in runs(loaded)
        if on and a > 0 and b < n
    ]


def body_weight_from_stances_n(grf: Table) -> float | None:
    """Body weight (N) from one complete stance of each foot, one step apart: over a stride each
    foot stands once, so the two stances' vertical impulse is the weight times the stride time,
    taken as twice the time from one heel strike to the other's (steady walking). None when the
    table has no such pair (a foot never complete on a plate, or the two stances more than a step
    apart: the second must start before the first ends, as in walking's double support)."""
    if not all(f"ground_force_{s}_vy" in grf.columns for s in FEET):
        return None
    every = sorted((on, off, side) for side in FEET for on, off in stances(grf, side))
    steps = [
        (a, b) for a, b in zip(every[:-1], every[1:], strict=True) if a[2] != b[2] and a[0] < b[0] <= a[1]
    ]
    if not steps:
        return None
    impulse = 0.0
    for on, off, side in steps[0]:
        keep = (grf.time_s >= on) & (grf.time_s <= off)
        impulse += float(np.trapezoid(grf.column(f"ground_force_{side}_vy")[keep], grf.time_s[keep]))
    step_s = steps[0][1][0] - steps[0][0][0]
    return impulse / (2.0 * step_s)
