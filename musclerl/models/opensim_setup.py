"""OpenSim tool setup files: IK task weights/time range and Scale-tool marker-pair measurements.

Only what the retargeting pipeline uses is read:

* ``InverseKinematicsTool`` (``*_Setup_IK.xml``): ``IKMarkerTask`` weights (markers with
  ``<apply>false`` get weight 0), ``IKCoordinateTask`` targets (``default_value`` -> the model's
  default, 0 for the coordinates MuJoCo models define; ``manual_value`` -> ``<value>``; values in
  the file are degrees for rotational coordinates, as OpenSim writes them) and ``time_range``.
* ``ScaleTool`` (``*_Setup_Scale.xml``): the ``MeasurementSet`` (marker pairs -> bodies and
  axes), the marker-placement ``IKTaskSet`` (same parsing as above), the static ``time_range``
  and ``preserve_mass_distribution``. Manual ``ScaleSet`` factors are ignored: they are written for
  OpenSim's generic model, not for the MJCF being scaled.
"""

from __future__ import annotations

import dataclasses
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from musclerl.errors import InputError
from musclerl.fileio import read_xml


@dataclasses.dataclass(frozen=True)
class CoordinateTarget:
    """Hold coordinate ``name`` at ``value`` (degrees as in the file; None = model default)."""

    name: str
    weight: float
    value_deg: float | None


@dataclasses.dataclass(frozen=True)
class IKSetup:
    """Task weights of an OpenSim IK (or marker-placement) task set."""

    marker_weights: dict[str, float]
    coordinate_targets: tuple[CoordinateTarget, ...] = ()
    time_range_s: tuple[float, float] | None = None


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One Scale-tool measurement: the mean pair distance ratio scales ``bodies`` on ``axes``."""

    name: str
    marker_pairs: tuple[tuple[str, str], ...]
    bodies: tuple[str, ...]
    axes: tuple[int, ...] = (0, 1, 2)


@dataclasses.dataclass(frozen=True)
class ScaleSetup:
    measurements: tuple[Measurement, ...]
    placement: IKSetup
    time_range_s: tuple[float, float] | None = None
    preserve_mass_distribution: bool = True
    mass_kg: float | None = None


def _float(text: str | None, path: Path, what: str) -> float:
    try:
        return float((text or "").strip())
    except ValueError as err:
        raise InputError(path, f"{what} {text!r} is not a number") from err


def _time_range(element: ET.Element | None, path: Path) -> tuple[float, float] | None:
    text = None if element is None else element.findtext("time_range")
    if text is None or not text.strip():
        return None
    parts = text.split()
    if len(parts) != 2:
        raise InputError(path, f"time_range needs two numbers, got {text.strip()!r}")
    start, end = (_float(p, path, "time_range value") for p in parts)
    if not end >= start:
        raise InputError(path, f"time_range end {end} is before start {start}")
    return (start, end)


def _applies(element: ET.Element) -> bool:
    return (element.findtext("apply") or "true").strip().lower() in ("true", "1")


def _task_set(element: ET.Element | None, path: Path) -> IKSetup:
    weights: dict[str, float] = {}
    coordinates: list[CoordinateTarget] = []
    if element is None:
        return IKSetup(weights)
    for task in element.iter("IKMarkerTask"):
        weight = _float(task.findtext("weight") or "1", path, f"weight of marker task {task.get('name')!r}")
        weights[task.get("name", "")] = weight if _applies(task) else 0.0
    for task in element.iter("IKCoordinateTask"):
        if not _applies(task):
            continue
        kind = (task.findtext("value_type") or "default_value").strip()
        if kind == "from_file":
            raise InputError(
                path, f"coordinate task {task.get('name')!r}: value_type from_file is not supported"
            )
        value = (
            _float(task.findtext("value") or "0", path, "coordinate value")
            if kind == "manual_value"
            else None
        )
        weight = _float(
            task.findtext("weight") or "1", path, f"weight of coordinate task {task.get('name')!r}"
        )
        coordinates.append(CoordinateTarget(task.get("name", ""), weight, value))
    return IKSetup(weights, tuple(coordinates))


def _tool(path: Path, tag: str, kind: str) -> ET.Element:
    """The ``<tag>`` element of the setup file at ``path`` (the root or below it)."""
    root = read_xml(path, "OpenSim setup")
    tool = root if root.tag == tag else root.find(f".//{tag}")
    if tool is None:
        raise InputError(path, f"no <{tag}> element (is this an OpenSim {kind} setup?)")
    return tool


def read_ik_setup(path: str | os.PathLike) -> IKSetup:
    """Read an OpenSim ``InverseKinematicsTool`` setup: marker weights, coordinate tasks, time range."""
    path = Path(path)
    tool = _tool(path, "InverseKinematicsTool", "IK")
    tasks = _task_set(tool.find("IKTaskSet"), path)
    return dataclasses.replace(tasks, time_range_s=_time_range(tool, path))


_AXES = {"X": 0, "Y": 1, "Z": 2}


def _measurement(element: ET.Element, path: Path) -> Measurement:
    name = element.get("name", "")
    pairs = []
    for pair in element.iter("MarkerPair"):
        names = (pair.findtext("markers") or "").split()
        if len(names) != 2:
            raise InputError(path, f"measurement {name!r}: a MarkerPair needs two marker names, got {names}")
        pairs.append((names[0], names[1]))
    bodies, axes = [], (0, 1, 2)
    for body_scale in element.iter("BodyScale"):
        bodies.append(body_scale.get("name", ""))
        letters = (body_scale.findtext("axes") or "X Y Z").split()
        try:
            axes = tuple(sorted(_AXES[a.upper()] for a in letters))
        except KeyError as err:
            raise InputError(path, f"measurement {name!r}: unknown axis in {letters}") from err
    if not pairs or not bodies:
        raise InputError(path, f"measurement {name!r} needs at least one MarkerPair and one BodyScale")
    return Measurement(name, tuple(pairs), tuple(bodies), axes)


def read_scale_setup(path: str | os.PathLike) -> ScaleSetup:
    """Read an OpenSim ``ScaleTool`` setup (measurements, placement weights, static time range)."""
    path = Path(path)
    tool = _tool(path, "ScaleTool", "Scale")
    scaler = tool.find("ModelScaler")
    measurements = ()
    if scaler is not None and _applies(scaler):
        measurement_set = scaler.find(".//MeasurementSet")
        if measurement_set is not None:
            measurements = tuple(
                _measurement(m, path) for m in measurement_set.iter("Measurement") if _applies(m)
            )
    placer = tool.find("MarkerPlacer")
    placement = _task_set(None if placer is None else placer.find("IKTaskSet"), path)
    preserve = (scaler.findtext("preserve_mass_distribution") if scaler is not None else None) or "true"
    mass_text = tool.findtext("mass")
    return ScaleSetup(
        measurements=measurements,
        placement=placement,
        time_range_s=_time_range(scaler, path) or _time_range(placer, path),
        preserve_mass_distribution=preserve.strip().lower() in ("true", "1"),
        mass_kg=None if mass_text is None else _float(mass_text, path, "mass"),
    )
