"""Fuzz: generated variants of every input kind through every command that reads them.

Every variant is written into an empty folder and given to the commands that read its kind
(``info`` for all motion files; ``reference``, ``retarget markers``, ``retarget smpl``,
``evaluate``, ``train`` and ``bench learn`` for the kinds they read, with the other inputs
valid). :func:`fuzz_harness.check_call` checks the contract: exit 2 with one last
``musclerl: error:`` line naming the broken file, no traceback, no output, inputs unchanged,
nothing written anywhere else; or, for valid variants, exit 0. Commands run in-process.

The variants are seeded (:mod:`fuzz_inputs`), so a failure names a reproducible case.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_bvh import bvh_variants
from fuzz_c3d import c3d_variants
from fuzz_harness import check_call
from fuzz_inputs import (
    MYOLEGS_WALK,
    SHIPPED_POLICY,
    TINY_WALK,
    Variant,
    amass_variants,
    deepmimic_variants,
    grf_base,
    loads_xml,
    mot_base,
    mot_coordinate_variants,
    mot_variants,
    policy_variants,
    reference_variants,
    short_trajectory,
    trajectory_variants,
    trc_variants,
    xml_variants,
    yaml_variants,
)
from markers_fixtures import write_case


@pytest.fixture(scope="module", autouse=True)
def compilation_cache(tmp_path_factory):
    """A persistent compilation cache private to this module (not the user's ~/.cache)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MUSCLERL_CACHE", str(tmp_path_factory.mktemp("jax_cache")))
        yield


@pytest.fixture
def room(tmp_path):
    """(case folder, working folder): both must hold only what the case put there afterwards."""
    folder, cwd = tmp_path / "case", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    return folder, cwd


@pytest.fixture(scope="module")
def valid_inputs(tmp_path_factory) -> dict[str, Path]:
    """Valid companions: tiny coordinates .mot, GRF .mot, ExternalLoads .xml, a tiny marker case."""
    folder = tmp_path_factory.mktemp("valid")
    paths = {"coords": folder / "coords.mot", "grf": folder / "grf.mot", "loads": folder / "loads.xml"}
    paths["coords"].write_text(mot_base())
    paths["grf"].write_text(grf_base())
    paths["loads"].write_text(loads_xml())
    paths.update(write_case(folder / "markers", frames=12))
    return paths


def _ids(variants: list[Variant]) -> list[str]:
    return [v.name for v in variants]


def _run(variant: Variant, suffix: str, argv_for, room, capsys, monkeypatch, extra_inputs=(), outputs=()):
    folder, cwd = room
    path = folder / f"{variant.name}{suffix}"
    variant.write(path)
    argv, outs, names = argv_for(path, folder)
    outcome = check_call(
        argv,
        expect=variant.expect,
        names=names,
        inputs=[path, *extra_inputs],
        outputs=list(outs) + list(outputs),
        folder=folder,
        cwd=cwd,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert outcome.ok, f"{variant.name}: {outcome.problems}"
    return outcome


def _info(path: Path, folder: Path):
    return ["info", path], [], path


TRC = list(trc_variants())
C3D = list(c3d_variants())
BVH = list(bvh_variants())
MOT = list(mot_variants())
DEEPMIMIC = list(deepmimic_variants())
AMASS = list(amass_variants())
TRAJECTORY = list(trajectory_variants())
REFERENCE = list(reference_variants())
XML = list(xml_variants())
POLICY = list(policy_variants())
YAML = list(yaml_variants(TINY_WALK))
COORDS = list(mot_coordinate_variants())
SUFFIX = {
    "trc": ".trc",
    "c3d": ".c3d",
    "bvh": ".bvh",
    "mot": ".mot",
    "deepmimic": ".txt",
    "amass": ".npz",
    "trajectory": ".npz",
    "reference": ".npz",
}
INFO_CASES = [
    (kind, v) for kind, vs in (
        ("trc", TRC), ("c3d", C3D), ("bvh", BVH), ("mot", MOT), ("deepmimic", DEEPMIMIC), ("amass", AMASS),
        ("trajectory", TRAJECTORY), ("reference", REFERENCE),
    ) for v in vs
]  # fmt: skip


def _refused(variants: list[Variant]) -> list[Variant]:
    return [v for v in variants if v.expect == "refuse"]


@pytest.mark.parametrize("kind, variant", INFO_CASES, ids=[v.name for _, v in INFO_CASES])
def test_info_reads_every_variant(kind, variant, room, capsys, monkeypatch):
    _run(variant, SUFFIX[kind], _info, room, capsys, monkeypatch)


BAD_MARKER_TRIALS = [(".trc", v) for v in _refused(TRC)] + [(".c3d", v) for v in _refused(C3D)]


@pytest.mark.parametrize("suffix, variant", BAD_MARKER_TRIALS, ids=[v.name for _, v in BAD_MARKER_TRIALS])
@pytest.mark.parametrize("role", ["trial", "static"])
def test_retarget_markers_refuses_bad_marker_files(
    suffix, variant, role, valid_inputs, room, capsys, monkeypatch
):
    """A bad .trc or .c3d, as the trial or the static trial (both go through the READERS table)."""
    case = valid_inputs

    def argv(path: Path, folder: Path):
        trial, static = (path, case["static"]) if role == "trial" else (case["walk"], path)
        out = folder / "out.npz"
        cmd = [
            "retarget",
            "markers",
            trial,
            "--model",
            "tiny",
            "--markers",
            case["markers"],
            "--static",
            static,
        ]
        return [*cmd, "--out", out, "--report", folder / "r.json"], [out, folder / "r.json"], path

    _run(variant, suffix, argv, room, capsys, monkeypatch, extra_inputs=[case["walk"], case["static"]])


@pytest.mark.parametrize("variant", _refused(C3D), ids=_ids(_refused(C3D)))
def test_convert_and_reference_refuse_bad_c3d(variant, valid_inputs, room, capsys, monkeypatch):
    def convert(path: Path, folder: Path):
        out = folder / "converted"
        return ["convert", path, "--out", out], [out], path

    def reference(path: Path, folder: Path):
        out = folder / "ref.npz"
        cmd = ["reference", valid_inputs["coords"], "--model", "tiny", "--grf", path]
        return [*cmd, "--no-static-optimisation", "--out", out], [out], path

    _run(variant, ".c3d", convert, room, capsys, monkeypatch)
    for leftover in room[0].iterdir():
        leftover.unlink()
    _run(variant, ".c3d", reference, room, capsys, monkeypatch, extra_inputs=[valid_inputs["coords"]])


MOT_FOR_REFERENCE = _refused(MOT) + COORDS


@pytest.mark.parametrize("variant", MOT_FOR_REFERENCE, ids=_ids(MOT_FOR_REFERENCE))
def test_reference_reads_coordinates(variant, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "ref.npz"
        return ["reference", path, "--model", "tiny", "--no-static-optimisation", "--out", out], [out], path

    _run(variant, ".mot", argv, room, capsys, monkeypatch)


@pytest.mark.parametrize("variant", _refused(MOT), ids=_ids(_refused(MOT)))
def test_reference_reads_grf(variant, valid_inputs, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "ref.npz"
        cmd = ["reference", valid_inputs["coords"], "--model", "tiny", "--grf", path]
        return [*cmd, "--loads", valid_inputs["loads"], "--no-static-optimisation", "--out", out], [out], path

    _run(variant, ".mot", argv, room, capsys, monkeypatch, extra_inputs=[valid_inputs["coords"]])


@pytest.mark.parametrize("variant", XML, ids=_ids(XML))
def test_reference_reads_external_loads(variant, valid_inputs, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "ref.npz"
        cmd = ["reference", valid_inputs["coords"], "--model", "tiny", "--grf", valid_inputs["grf"]]
        return [*cmd, "--loads", path, "--no-static-optimisation", "--out", out], [out], path

    _run(variant, ".xml", argv, room, capsys, monkeypatch, extra_inputs=[valid_inputs["coords"]])


SHORT_SMPL = [
    Variant(name, v.write, "refuse") for v in AMASS for name in ("amass_one_frame",) if v.name == name
]
SMPL_BAD = _refused(AMASS) + _refused(DEEPMIMIC) + _refused(BVH) + SHORT_SMPL


@pytest.mark.parametrize("variant", SMPL_BAD, ids=_ids(SMPL_BAD))
def test_retarget_smpl_refuses(variant, room, capsys, monkeypatch):
    suffix = {"amass": ".npz", "bvh": ".bvh"}.get(variant.name.split("_")[0], ".txt")

    def argv(path: Path, folder: Path):
        out = folder / "out.npz"
        return (
            ["retarget", "smpl", path, "--model", "tiny", "--out", out, "--report", folder / "r.json"],
            [
                out,
                folder / "r.json",
            ],
            path,
        )

    _run(variant, suffix, argv, room, capsys, monkeypatch)


SHORT = [Variant(f"trajectory_{n}_frames", short_trajectory(n), "refuse") for n in (1, 2)]
TRAJ_BAD = _refused(TRAJECTORY) + SHORT


@pytest.mark.parametrize("variant", TRAJ_BAD, ids=_ids(TRAJ_BAD))
def test_reference_refuses_bad_trajectory(variant, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "ref.npz"
        return ["reference", path, "--model", "tiny", "--out", out], [out], path

    _run(variant, ".npz", argv, room, capsys, monkeypatch)


def test_train_refuses_a_one_frame_motion(room, capsys, monkeypatch):
    folder, cwd = room
    motion = folder / "one_frame.npz"
    short_trajectory(1)(motion)
    run = folder / "run"
    outcome = check_call(
        ["train", "--out", run, "--quiet", f"motion={motion}", "model=tiny", "threads=1"],
        expect="refuse",
        names=motion,
        inputs=[motion],
        outputs=[run],
        folder=folder,
        cwd=cwd,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert outcome.ok, outcome.problems
    assert "1 frame(s); tracking needs at least 2" in outcome.err


@pytest.mark.parametrize("variant", _refused(TRAJECTORY), ids=_ids(_refused(TRAJECTORY)))
def test_evaluate_refuses_bad_motion(variant, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "eval"
        return ["evaluate", SHIPPED_POLICY, "--motion", path, "--out", out], [out], path

    _run(variant, ".npz", argv, room, capsys, monkeypatch, extra_inputs=[SHIPPED_POLICY])


@pytest.mark.parametrize("variant", _refused(REFERENCE), ids=_ids(_refused(REFERENCE)))
def test_evaluate_refuses_bad_reference(variant, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "eval"
        cmd = ["evaluate", SHIPPED_POLICY, "--motion", MYOLEGS_WALK, "--reference", path]
        return [*cmd, "--out", out], [out], path

    _run(variant, ".npz", argv, room, capsys, monkeypatch, extra_inputs=[SHIPPED_POLICY])


@pytest.mark.parametrize("variant", POLICY, ids=_ids(POLICY))
@pytest.mark.parametrize("command", ["evaluate", "bench learn"])
def test_policy_folders(variant, command, room, capsys, monkeypatch):
    def argv(path: Path, folder: Path):
        out = folder / "eval"
        names = path  # the folder or the file in it that is wrong
        if command == "evaluate":
            return ["evaluate", path, "--motion", MYOLEGS_WALK, "--out", out], [out], names
        return ["bench", "learn", "--policy", path, "--motion", MYOLEGS_WALK, "--out", out], [out], names

    _run(variant, "", argv, room, capsys, monkeypatch)


@pytest.mark.parametrize("variant", YAML, ids=_ids(YAML))
def test_train_config(variant, room, capsys, monkeypatch):
    """``train --resume`` on an empty run folder: a good config ends on the missing checkpoints
    (naming the run folder), a bad one on the config file, before any training."""

    must_refuse = variant.expect == "refuse"

    def argv(path: Path, folder: Path):
        run = folder / "run"
        names = path if must_refuse else (path, run)
        return ["train", "--config", path, "--out", run, "--resume", "--quiet"], [run], names

    _run(Variant(variant.name, variant.write, "refuse"), ".yaml", argv, room, capsys, monkeypatch)


def test_every_kind_is_fuzzed():
    """The suite covers each input kind with refused and accepted variants."""
    total = len(INFO_CASES) + len(XML) + len(POLICY) + len(YAML) + len(COORDS) + len(SHORT)
    assert total >= 300, total
    for variants in (TRC, C3D, BVH, MOT, DEEPMIMIC, AMASS, TRAJECTORY, REFERENCE, XML):
        kinds = {v.expect for v in variants}
        assert {"refuse", "accept"} <= kinds


SLOW_RANDOM = [
    (kind, v)
    for seed in range(1, 9)
    for kind, variants in (
        ("trc", trc_variants(seed, 24)),
        ("c3d", c3d_variants(seed, 24)),
        ("bvh", bvh_variants(seed, 24)),
        ("mot", mot_variants(seed, 24)),
        ("deepmimic", deepmimic_variants(seed, 12)),
    )
    for v in variants
    if "_random" in v.name
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, variant", SLOW_RANDOM, ids=[f"{v.name}-{i}" for i, (_, v) in enumerate(SLOW_RANDOM)]
)
def test_info_more_random_damage(kind, variant, room, capsys, monkeypatch):
    """More seeds of the random damage (the default run has seed 0)."""
    _run(variant, SUFFIX[kind], _info, room, capsys, monkeypatch)


@pytest.mark.parametrize("command", ["train", "evaluate", "bench learn"])
def test_motion_of_another_model_names_the_file(command, room, capsys, monkeypatch):
    """A tiny Trajectory given to a myolegs config or policy: the line names the motion file."""
    folder, cwd = room
    motion = folder / "tiny_walk.npz"
    motion.write_bytes(TINY_WALK.read_bytes())
    out = folder / "out"
    argv = {
        "train": ["train", "--out", out, "--quiet", f"motion={motion}", "model=myolegs"],
        "evaluate": ["evaluate", SHIPPED_POLICY, "--motion", motion, "--out", out],
        "bench learn": ["bench", "learn", "--policy", SHIPPED_POLICY, "--motion", motion, "--out", out],
    }[command]
    outcome = check_call(
        argv,
        expect="refuse",
        names=motion,
        inputs=[motion, SHIPPED_POLICY],
        outputs=[out],
        folder=folder,
        cwd=cwd,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert outcome.ok, outcome.problems
    assert "nq=13" in outcome.err and "myolegs" in outcome.err
