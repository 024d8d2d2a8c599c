"""Fuzz: every command that writes, given output paths it cannot or must not write.

For each writing option of each command (``info --plot``, ``convert --out``, ``reference
--out/--save-trajectory``, ``retarget smpl|markers --out/--report/--plot/--mot``, ``evaluate
--out``, ``train --out``, ``bench learn --out/--video``) and each kind of bad path (the input
itself, a parent that is a file, an existing folder where a file is asked, an existing file where
a folder is asked, an unwritable place, the input folder as an output folder), the command must
refuse before any work: exit 2, one line naming the output, the input untouched, nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fuzz_c3d import c3d_base
from fuzz_harness import check_call
from fuzz_inputs import (
    MYOLEGS_WALK,
    SHIPPED_POLICY,
    TINY_WALK,
    YAML_BASE,
    amass_base,
    mot_base,
    trc_base,
)
from markers_fixtures import write_case

#: A place no process can create files in, root included (procfs).
UNWRITABLE = Path("/proc/musclerl-fuzz")


@pytest.fixture(scope="module", autouse=True)
def compilation_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MUSCLERL_CACHE", str(tmp_path_factory.mktemp("jax_cache")))
        yield


@pytest.fixture(scope="module")
def marker_case(tmp_path_factory) -> dict[str, Path]:
    return write_case(tmp_path_factory.mktemp("markers"), frames=12)


def _inputs(folder: Path, marker_case: dict[str, Path]) -> dict[str, Path]:
    """Valid inputs for each command, written into ``folder``."""
    paths = {
        "trc": folder / "walk.trc",
        "coords": folder / "coords.mot",
        "amass": folder / "motion.npz",
        "config": folder / "train.yaml",
        "c3d": folder / "walk.c3d",
    }
    paths["trc"].write_text(trc_base())
    paths["c3d"].write_bytes(c3d_base())
    paths["coords"].write_text(mot_base())
    amass_base(paths["amass"])
    paths["config"].write_text(YAML_BASE.format(motion=TINY_WALK))
    for key, source in marker_case.items():  # copies: a broken command must not spoil other cases
        paths[f"markers_{key}"] = folder / f"markers_{source.name}"
        paths[f"markers_{key}"].write_bytes(source.read_bytes())
    return paths


# command -> (argv from (inputs, {option: path}), {option: (default name, kind)}, main input key)
Builder = Callable[[dict[str, Path], dict[str, Path]], list]
COMMANDS: dict[str, tuple[Builder, dict[str, tuple[str, str]], str]] = {
    "info": (lambda i, o: ["info", i["trc"], "--plot", o["--plot"]], {"--plot": ("plot.png", "file")}, "trc"),
    "convert": (
        lambda i, o: ["convert", i["c3d"], "--out", o["--out"]], {"--out": ("converted", "folder")}, "c3d",
    ),
    "reference": (
        lambda i, o: [
            "reference", i["coords"], "--model", "tiny", "--no-static-optimisation",
            "--out", o["--out"], "--save-trajectory", o["--save-trajectory"],
        ],
        {"--out": ("ref.npz", "file"), "--save-trajectory": ("traj.npz", "file")},
        "coords",
    ),
    "retarget smpl": (
        lambda i, o: [
            "retarget", "smpl", i["amass"], "--model", "tiny", "--out", o["--out"],
            "--report", o["--report"], "--plot", o["--plot"],
        ],
        {"--out": ("out.npz", "file"), "--report": ("r.json", "file"), "--plot": ("p.png", "file")},
        "amass",
    ),
    "retarget markers": (
        lambda i, o: [
            "retarget", "markers", i["markers_walk"], "--model", "tiny", "--markers", i["markers_markers"],
            "--static", i["markers_static"], "--out", o["--out"], "--report", o["--report"],
            "--mot", o["--mot"], "--plot", o["--plot"],
        ],
        {
            "--out": ("out.npz", "file or folder"), "--report": ("r.json", "file"),
            "--mot": ("m.mot", "file"), "--plot": ("p.png", "file"),
        },
        "markers_walk",
    ),
    "evaluate": (
        lambda i, o: [
            "evaluate", SHIPPED_POLICY, "--motion", MYOLEGS_WALK, "--max-steps", "3", "--out", o["--out"],
        ],
        {"--out": ("eval", "folder")},
        "",
    ),
    "train": (
        lambda i, o: ["train", "--config", i["config"], "--out", o["--out"], "--quiet"],
        {"--out": ("run", "folder")},
        "config",
    ),
    "bench learn": (
        lambda i, o: [
            "bench", "learn", "--policy", SHIPPED_POLICY, "--motion", MYOLEGS_WALK, "--seconds", "0.1",
            "--out", o["--out"], "--video", o["--video"],
        ],
        {"--out": ("run", "folder"), "--video": ("test.mp4", "file")},
        "",
    ),
}  # fmt: skip

# "file or folder": one trial and a .npz is a file, else a folder receiving one output per trial.
BAD_KINDS = (
    "same_as_input",
    "parent_is_file",
    "existing_folder",
    "existing_file",
    "unwritable",
    "input_folder",
)


def _cases():
    for command, (_, options, main_input) in COMMANDS.items():
        for option, (_, kind) in options.items():
            for bad in BAD_KINDS:
                if bad == "existing_folder" and kind != "file":
                    continue
                if bad == "existing_file" and kind != "folder":
                    continue
                if bad in ("same_as_input", "input_folder") and not main_input:
                    continue
                if bad == "input_folder" and (kind != "folder" or command not in ("train", "convert")):
                    continue
                yield command, option, bad


CASES = list(_cases())


def _bad_path(bad: str, folder: Path, inputs: dict[str, Path], main_input: str, default: str) -> Path:
    if bad == "same_as_input":
        return inputs[main_input]
    if bad == "parent_is_file":
        (folder / "afile").write_text("x")
        return folder / "afile" / default
    if bad == "existing_folder":
        (folder / "adir").mkdir()
        return folder / "adir"
    if bad == "existing_file":
        (folder / "afile.txt").write_text("x")
        return folder / "afile.txt"
    if bad == "unwritable":
        return UNWRITABLE / default
    return inputs[main_input].parent  # input_folder: the output folder holds an input


@pytest.mark.parametrize("command, option, bad", CASES, ids=[f"{c}|{o}|{b}" for c, o, b in CASES])
def test_bad_output_paths(command, option, bad, marker_case, tmp_path, capsys, monkeypatch):
    folder, cwd = tmp_path / "case", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    build, options, main_input = COMMANDS[command]
    inputs = _inputs(folder, marker_case)
    outputs = {opt: folder / "outs" / name for opt, (name, _) in options.items()}
    outputs[option] = _bad_path(bad, folder, inputs, main_input, options[option][0])
    watched = [*inputs.values(), SHIPPED_POLICY]
    if bad in ("existing_folder", "existing_file"):
        watched.append(outputs[option])  # what is there already must stay as it was
    outcome = check_call(
        build(inputs, outputs),
        expect="refuse",
        names=outputs[option],
        inputs=watched,
        outputs=[p for opt, p in outputs.items() if opt != option],
        folder=folder,
        cwd=cwd,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert outcome.ok, f"{command} {option} {bad}: {outcome.problems}"


def test_retarget_smpl_folder_out_is_input_folder(tmp_path, capsys, monkeypatch):
    """Many motions: an output folder that is the input folder would mix outputs with inputs."""
    folder, cwd = tmp_path / "case", tmp_path / "cwd"
    (folder / "motions").mkdir(parents=True)
    cwd.mkdir()
    amass_base(folder / "motions" / "a.npz")
    amass_base(folder / "motions" / "b.npz")
    outcome = check_call(
        ["retarget", "smpl", folder / "motions", "--model", "tiny", "--out", folder / "motions"],
        expect="refuse",
        names=folder / "motions",
        inputs=[folder / "motions"],
        folder=folder,
        cwd=cwd,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert outcome.ok, outcome.problems


def test_cases_cover_every_writer():
    assert len(CASES) >= 40
    assert {c for c, _, _ in CASES} == set(COMMANDS)
