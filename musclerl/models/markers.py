"""OpenSim marker sets -> MuJoCo sites.

An OpenSim ``MarkerSet`` (inside a ``.osim`` model or in a stand-alone MarkerSet ``.xml``) lists
markers, each with the body it rides on, a ``location`` in that body's frame (metres) and a
``fixed`` flag (``true``: the marker-placement step must not move it). OpenSim 3 files name the
body in ``<body>``; OpenSim 4 files use ``<socket_parent_frame>/bodyset/NAME</...>``.

:func:`add_markers` adds one site per marker to a ``mujoco.MjSpec`` on the body of the same
name, at the same location. This is correct when the MJCF body frames are OpenSim's body frames,
which holds for the MyoSuite models (``myolegs`` is OpenSim's Rajagopal 2016 model: its pelvis
body carries the rotation from MuJoCo's Z-up world to OpenSim's Y-up frames, and every body
below it uses OpenSim's axes). Markers whose body the model lacks are returned by name, not
silently dropped. ``fixed`` flags stay in :class:`Marker` metadata and in each site's
``userdata`` (``[1.0]`` fixed, ``[0.0]`` free).
"""

from __future__ import annotations

import dataclasses
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np

from musclerl.errors import InputError
from musclerl.fileio import read_xml
from musclerl.models.osim_frames import read_body_frames

MARKER_SITE_GROUP = 4
MARKER_SITE_RADIUS_M = 0.008
MARKER_SITE_RGBA = (1.0, 0.2, 0.2, 1.0)


@dataclasses.dataclass(frozen=True)
class Marker:
    """One OpenSim marker: ``location_m`` (3,) in the frame of ``body`` (OpenSim axes, metres)."""

    name: str
    body: str
    location_m: np.ndarray
    fixed: bool = False


@dataclasses.dataclass(frozen=True)
class MarkerSet:
    """Markers in file order; ``source`` is the file they came from."""

    markers: tuple[Marker, ...]
    source: str = ""
    # Body frames of the OpenSim model the markers were written for (child body -> BodyFrame,
    # :func:`musclerl.models.osim_frames.read_body_frames`); empty for a stand-alone MarkerSet.
    frames: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.markers)

    def __getitem__(self, name: str) -> Marker:
        for marker in self.markers:
            if marker.name == name:
                return marker
        raise KeyError(name)

    def with_locations(self, locations_m: dict[str, np.ndarray]) -> MarkerSet:
        """A copy with some markers moved; ``locations_m`` maps name -> (3,) body-frame metres."""
        return MarkerSet(
            tuple(
                dataclasses.replace(m, location_m=np.asarray(locations_m[m.name], dtype=float))
                if m.name in locations_m
                else m
                for m in self.markers
            ),
            self.source,
            self.frames,
        )


@dataclasses.dataclass(frozen=True)
class AddedMarkers:
    """What :func:`add_markers` did: sites added (names) and markers skipped (name -> body)."""

    added: tuple[str, ...]
    missing_body: dict[str, str]


def _body_name(element: ET.Element, path: Path, marker: str) -> str:
    body = element.findtext("body")
    if body is None:
        frame = element.findtext("socket_parent_frame")
        if frame is None:
            raise InputError(path, f"marker {marker!r} names no <body> or <socket_parent_frame>")
        parts = [p for p in frame.strip().split("/") if p]
        # "/bodyset/femur_r" -> femur_r; other frames (offset frames in a joint) keep their own
        # name, which no body has, so the marker is reported as missing its body.
        body = parts[parts.index("bodyset") + 1] if "bodyset" in parts[:-1] else (parts[-1] if parts else "")
    body = body.strip()
    if not body:
        raise InputError(path, f"marker {marker!r} has an empty body name")
    return body


def _location(element: ET.Element, path: Path, marker: str) -> np.ndarray:
    text = element.findtext("location")
    if text is None:
        raise InputError(path, f"marker {marker!r} has no <location>")
    try:
        values = np.array([float(v) for v in text.split()], dtype=float)
    except ValueError as err:
        raise InputError(path, f"marker {marker!r} location {text.strip()!r} is not numeric") from err
    if values.shape != (3,) or not np.all(np.isfinite(values)):
        raise InputError(path, f"marker {marker!r} location must be 3 finite numbers, got {text.strip()!r}")
    return values


def read_marker_set(path: str | os.PathLike) -> MarkerSet:
    """Read the markers of an OpenSim ``.osim`` model or stand-alone MarkerSet ``.xml``.

    Raises :class:`InputError` for unparsable XML, markers without body or location, duplicate
    names, or a file without any marker (e.g. a ``.osim`` whose MarkerSet is empty).
    """
    path = Path(path)
    root = read_xml(path, "marker set")
    markers: list[Marker] = []
    seen: set[str] = set()
    for marker_set in root.iter("MarkerSet"):
        for element in marker_set.iter("Marker"):
            name = (element.get("name") or "").strip()
            if not name:
                raise InputError(path, "a <Marker> has no name attribute")
            if name in seen:
                raise InputError(path, f"marker {name!r} is defined twice")
            seen.add(name)
            fixed_text = (element.findtext("fixed") or "false").strip().lower()
            if fixed_text not in ("true", "false", "1", "0"):
                raise InputError(path, f"marker {name!r} has <fixed> {fixed_text!r}, expected true/false")
            markers.append(
                Marker(
                    name,
                    _body_name(element, path, name),
                    _location(element, path, name),
                    fixed_text in ("true", "1"),
                )
            )
    if not markers:
        raise InputError(path, "no <Marker> in any <MarkerSet> (give a .osim or MarkerSet .xml with markers)")
    return MarkerSet(tuple(markers), str(path), read_body_frames(root, str(path)))


def add_markers(spec: mujoco.MjSpec, marker_set: MarkerSet, prefix: str = "") -> AddedMarkers:
    """Add a site ``prefix + marker.name`` per marker on the spec body of the same name.

    Site positions are the markers' body-frame locations (metres); the site ``userdata`` holds
    the ``fixed`` flag. Markers whose body is absent are skipped and listed in ``missing_body``.
    Raises :class:`InputError` if a site of that name already exists.
    """
    added: list[str] = []
    missing: dict[str, str] = {}
    for marker in marker_set.markers:
        body = spec.body(marker.body)
        if body is None:
            missing[marker.name] = marker.body
            continue
        site_name = prefix + marker.name
        if spec.site(site_name) is not None:
            raise InputError(
                marker_set.source or "markers", f"the model already has a site named {site_name!r}"
            )
        body.add_site(
            name=site_name,
            pos=np.asarray(marker.location_m, dtype=float),
            size=[MARKER_SITE_RADIUS_M, 0.0, 0.0],
            rgba=list(MARKER_SITE_RGBA),
            group=MARKER_SITE_GROUP,
            userdata=[1.0 if marker.fixed else 0.0],
        )
        added.append(site_name)
    return AddedMarkers(tuple(added), missing)
