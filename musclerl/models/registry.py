"""Model registry: names -> editable ``mujoco.MjSpec`` / compiled ``mujoco.MjModel``.

Registered names
----------------
``myolegs`` (default)
    MyoSuite's bilateral lower-limb model (PyPI ``myo_sim``, Apache-2.0), derived from Rajagopal
    et al. 2016: 80 muscles, free root, nq 35, nv 34, with a passive torso and a floor plane.
``myofullbody``
    ``myo_sim``'s full body (416 muscles, nq 129).
``musclemimic-fullbody``, ``musclemimic-bimanual``
    From the optional ``musclemimic_models`` package (``pip install musclerl[musclemimic]``).
    The arm parts derive from MoBL-ARMS and carry a **non-commercial** licence.
``tiny``
    A small muscle model written for this project (``assets/models/tiny.xml``): free root, two
    legs with feet on a floor, six muscles on spatial tendons, one wrapping a cylinder. Used for
    fast tests and MJX compiles.
Any other string is treated as a path to an MJCF file.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import mujoco

from musclerl.errors import InputError
from musclerl.models.profiles import MYOFULLBODY, MYOLEGS, TINY, ModelProfile
from musclerl.resources import assets_dir

DEFAULT_MODEL = "myolegs"


@dataclasses.dataclass(frozen=True)
class RegisteredModel:
    """A named model: how to build its spec, and its anatomy for retargeting (``profile``; None:
    motions are not retargeted onto it by name, see :mod:`musclerl.models.profiles`)."""

    name: str
    description: str
    licence: str
    build_spec: Callable[[], mujoco.MjSpec]
    profile: ModelProfile | None = None


def _quiet_mujoco_warnings(fn: Callable[[], mujoco.MjSpec]) -> mujoco.MjSpec:
    """Run ``fn`` with MuJoCo's C warning printer and Python warnings silenced.

    ``myo_sim`` attaches sub-specs with an empty prefix, which makes MuJoCo print a warning to
    stdout; that would corrupt ``--json`` output.
    """
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda _msg: None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn()
    finally:
        mujoco.set_mju_user_warning(previous)


def _flat_ground(spec: mujoco.MjSpec) -> mujoco.MjSpec:
    """Replace MyoSuite's stage with a plain floor plane at z = 0.

    ``myo_sim`` composes its models into the MyoSuite scene: a floor at z = -0.4 m, a pedestal
    cylinder whose top (z = 0.015 m) is what the feet actually stand on, and decorative meshes.
    For motion tracking the ground must be the z = 0 plane the motions are expressed in, so the
    unnamed world geoms are deleted and the floor moved to z = 0.
    """
    for geom in list(spec.worldbody.geoms):
        if geom.name == "floor":
            geom.pos = [0.0, 0.0, 0.0]
            geom.size = [50.0, 50.0, 0.1]
        elif not geom.name:
            spec.delete(geom)
    return spec


def _myo_sim_spec(name: str) -> Callable[[], mujoco.MjSpec]:
    def build() -> mujoco.MjSpec:
        import myo_sim

        return _flat_ground(_quiet_mujoco_warnings(lambda: myo_sim.load_spec(name)))

    return build


def _musclemimic_spec(name: str) -> Callable[[], mujoco.MjSpec]:
    def build() -> mujoco.MjSpec:
        try:
            import musclemimic_models
        except ImportError as err:
            raise InputError(
                f"musclemimic-{name.replace('myofullbody', 'fullbody')}",
                "needs the optional package musclemimic_models: pip install 'musclerl[musclemimic]' "
                "(its arm parts carry the non-commercial MoBL-ARMS licence)",
            ) from err
        path = musclemimic_models.get_xml_path(name)
        return _quiet_mujoco_warnings(lambda: mujoco.MjSpec.from_file(str(path)))

    return build


def _asset_spec(filename: str) -> Callable[[], mujoco.MjSpec]:
    return lambda: mujoco.MjSpec.from_file(str(assets_dir() / "models" / filename))


REGISTRY: dict[str, RegisteredModel] = {
    m.name: m
    for m in [
        RegisteredModel(
            "myolegs", "MyoSuite legs, 80 muscles (myo_sim)", "Apache-2.0", _myo_sim_spec("myolegs"), MYOLEGS
        ),
        RegisteredModel(
            "myofullbody",
            "MyoSuite full body, 416 muscles (myo_sim)",
            "Apache-2.0",
            _myo_sim_spec("myofullbody"),
            MYOFULLBODY,
        ),
        RegisteredModel(
            "musclemimic-fullbody",
            "MuscleMimic full body (musclemimic_models)",
            "non-commercial (MoBL-ARMS arm parts)",
            _musclemimic_spec("myofullbody"),
            MYOFULLBODY,
        ),
        RegisteredModel(
            "musclemimic-bimanual",
            "MuscleMimic bimanual arms (musclemimic_models)",
            "non-commercial (MoBL-ARMS)",
            _musclemimic_spec("bimanual"),
        ),
        RegisteredModel(
            "tiny", "6-muscle biped for tests and MJX compiles", "Apache-2.0", _asset_spec("tiny.xml"), TINY
        ),
    ]
}


def model_names() -> list[str]:
    """Registered model names (paths to MJCF files are accepted too)."""
    return list(REGISTRY)


def model_profiles() -> dict[str, ModelProfile]:
    """name -> profile of every registered model that has one, in registry order."""
    return {name: m.profile for name, m in REGISTRY.items() if m.profile is not None}


def load_spec(model: str | os.PathLike = DEFAULT_MODEL) -> mujoco.MjSpec:
    """Return a fresh, editable ``MjSpec`` for a registered name or an MJCF path.

    Raises :class:`InputError` for unknown names, missing files and MJCF that does not parse.
    """
    key = str(model)
    if key in REGISTRY:
        return REGISTRY[key].build_spec()
    path = Path(key)
    if path.suffix.lower() != ".xml":
        raise InputError(key, f"unknown model; choose one of {model_names()} or an MJCF .xml path")
    if not path.is_file():
        raise InputError(key, "MJCF file not found")
    try:
        return mujoco.MjSpec.from_file(str(path))
    except Exception as err:  # MuJoCo raises ValueError with a multi-line message
        raise InputError(key, f"not a valid MJCF model ({_first_line(err)})") from err


def compile_spec(spec: mujoco.MjSpec, source: str | os.PathLike = "model") -> mujoco.MjModel:
    """Compile ``spec``; compiler errors become :class:`InputError` naming ``source``."""
    try:
        return _quiet_mujoco_warnings(spec.compile)
    except Exception as err:
        raise InputError(source, f"MJCF does not compile ({_first_line(err)})") from err


@functools.lru_cache(maxsize=8)
def _load_model_cached(key: str) -> mujoco.MjModel:
    return compile_spec(load_spec(key), key)


def load_model(model: str | os.PathLike = DEFAULT_MODEL) -> mujoco.MjModel:
    """Compiled ``MjModel`` for a registered name or MJCF path (cached per process).

    The returned model is shared: copy it (``copy.copy`` is cheap for parameters you edit)
    before changing fields.
    """
    return _load_model_cached(str(model))


def _first_line(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text[:300]
