"""Seeded generators of malformed and valid variants of every input kind, for the fuzz tests.

Each generator yields :class:`Variant` objects: a name, a function that writes the variant's
bytes into a path, and the expected outcome (``refuse``, ``accept`` or ``either``, see
:mod:`fuzz_harness`). Deterministic variants cover the known traps (units that lie, counts that
disagree, non-finite and absurd values, BOMs, CRLF, repeated tabs); seeded random ones cut,
duplicate, swap and overwrite lines and cells, where either outcome is legitimate but the
contract (one line, exit 2, nothing written, no traceback) must hold.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from motion_samples import storage_text, trc_text, write_small_reference, write_step_up_amass

from musclerl.models.couplings import SAGITTAL_LEG_COORDINATES
from musclerl.motion.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[1]
TINY_WALK = REPO / "assets" / "motions" / "walk_tiny.npz"
SHIPPED_POLICY = REPO / "assets" / "policies" / "myolegs_walk"
MYOLEGS_WALK = REPO / "assets" / "motions" / "walk_myolegs.npz"
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?")
INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.])")


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    write: Callable[[Path], None]
    expect: str  # refuse | accept | either


def _text(content: str | bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))

    return write


# ------------------------------------------------------------------------------- base files
TINY_COORDS = SAGITTAL_LEG_COORDINATES


def trc_base(units: str = "mm", n: int = 12) -> str:
    """Three markers, ``n`` frames at 100 Hz; positions in ``units`` (lab Y-up, a body's size)."""
    scale = {"mm": 1.0, "m": 1e-3}[units]
    rows = []
    for t in range(n):
        x = 10.0 * t
        cells = [x, 1000.0, 0.0, x, 500.0, 200.0, x + 150.0, 80.0, -100.0]
        rows.append([f"{v * scale:.6f}" for v in cells])
    return trc_text(["A", "B", "C"], rows, units=units)


def mot_base(in_degrees: bool = True, n: int = 20) -> str:
    """Tiny's six coordinates, ``n`` rows at 100 Hz: sinusoids of 20-40 degrees (or radians)."""
    t = np.arange(n) / 100.0
    deg = np.column_stack([(20 + 4 * k) * np.sin(2 * np.pi * t + k) for k in range(6)])
    values = deg if in_degrees else np.radians(deg)
    header = ["coords", "version=1", f"nRows={n}", "nColumns=7", f"inDegrees={'yes' if in_degrees else 'no'}"]
    return storage_text(TINY_COORDS, np.column_stack([t, values]), header=[*header, "endheader"])


def deepmimic_base(n: int = 12) -> str:
    """A humanoid3d clip: identity joint rotations, the root walking along +x at 0.85 m."""
    frames = []
    for i in range(n):
        q = [1.0, 0.0, 0.0, 0.0]
        frame = [1 / 30, 0.03 * i, 0.85, 0.0, *q, *q, *q, *q, 0.0, *q, *q, 0.0, *q, 0.0, *q, *q, 0.0]
        frames.append(frame)
    return json.dumps({"Loop": "none", "Frames": frames}, indent=1)


def loads_xml(datafile: str = "grf.mot") -> str:
    forces = "".join(
        f'<ExternalForce name="{side}"><applied_to_body>foot_{side}</applied_to_body>'
        f"<force_expressed_in_body>ground</force_expressed_in_body>"
        f"<point_expressed_in_body>ground</point_expressed_in_body>"
        f"<force_identifier>{side}_v</force_identifier><point_identifier>{side}_p</point_identifier>"
        f"<torque_identifier>{side}_m</torque_identifier></ExternalForce>"
        for side in ("r", "l")
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="30000">'
        f'<ExternalLoads name="loads"><objects>{forces}</objects><groups/>'
        f"<datafile>{datafile}</datafile></ExternalLoads></OpenSimDocument>\n"
    )


def grf_base(n: int = 20) -> str:
    t = np.arange(n) / 100.0
    cols = [f"{s}_{q}{a}" for s in "rl" for q in "vpm" for a in "xyz"]
    values = np.zeros((n, len(cols)))
    values[:, 1] = values[:, 10] = 350.0  # vertical forces (Y up), N
    header = ["grf", "version=1", f"nRows={n}", f"nColumns={len(cols) + 1}", "inDegrees=no", "endheader"]
    return storage_text(cols, np.column_stack([t, values]), header=header)


YAML_BASE = (
    "model: tiny\nmotion: {motion}\nthreads: 1\nppo:\n  num_envs: 4\n  rollout_steps: 8\n"
    "  total_env_steps: 64\n"
)


# ------------------------------------------------------------------------------- text mutations
def _lines(text: str) -> list[str]:
    return text.split("\n")


def _numbers(text: str) -> list[re.Match]:
    return list(NUMBER.finditer(text))


def _replace_number(text: str, index: int, new: str) -> str:
    m = (_numbers(text) or list(INTEGER.finditer(text)))[index]
    return text[: m.start()] + new + text[m.end() :]


def random_text_variants(kind: str, base: str, seed: int, count: int) -> Iterator[Variant]:
    """Seeded structural damage of ``base``: every outcome allowed, the contract always checked."""
    rng = random.Random(f"{kind}-{seed}")
    tokens = ["", "nan", "-nan(ind)", "inf", "-inf", "1e30", "-1e308", "abc", "1,5", "0x10", "\t\t", "1e-320"]
    for i in range(count):
        op = ("cut", "drop_line", "dup_line", "swap_lines", "cell", "bytes")[i % 6]
        lines = _lines(base)
        if op == "cut":
            text = base[: rng.randrange(1, len(base))]
        elif op == "drop_line":
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif op == "dup_line":
            k = rng.randrange(len(lines))
            lines.insert(k, lines[k])
            text = "\n".join(lines)
        elif op == "swap_lines":
            k = rng.randrange(len(lines) - 1)
            lines[k], lines[k + 1] = lines[k + 1], lines[k]
            text = "\n".join(lines)
        elif op == "cell":
            count_numbers = len(_numbers(base) or list(INTEGER.finditer(base)))
            text = _replace_number(base, rng.randrange(count_numbers), rng.choice(tokens))
        else:
            k = rng.randrange(len(base))
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
            data = base.encode()
            yield Variant(f"{kind}_random{i}_{op}", _text(data[:k] + noise + data[k:]), "either")
            continue
        yield Variant(f"{kind}_random{i}_{op}", _text(text), "either")


def layout_variants(kind: str, base: str) -> Iterator[Variant]:
    """Encodings and whitespace that OpenSim reads: must be accepted."""
    yield Variant(f"{kind}_bom", _text("\ufeff" + base), "accept")
    yield Variant(f"{kind}_crlf", _text(base.replace("\n", "\r\n")), "accept")
    yield Variant(f"{kind}_bom_crlf", _text("\ufeff" + base.replace("\n", "\r\n")), "accept")
    if kind != "deepmimic":
        yield Variant(f"{kind}_trailing_tabs", _text(base.replace("\n", "\t\n")), "accept")
    yield Variant(f"{kind}_no_final_newline", _text(base.rstrip("\n")), "accept")
    yield Variant(f"{kind}_trailing_blank_lines", _text(base + "\n\n  \n"), "accept")


def value_variants(kind: str, base: str) -> Iterator[Variant]:
    """Non-finite, absurd and non-numeric values, and binary junk: must be refused."""
    numbers = _numbers(base)
    last = len(numbers) - 1
    yield Variant(f"{kind}_cell_inf", _text(_replace_number(base, last - 1, "inf")), "refuse")
    yield Variant(f"{kind}_cell_minus_inf", _text(_replace_number(base, last - 2, "-1.#INF")), "refuse")
    yield Variant(f"{kind}_cell_1e30", _text(_replace_number(base, last - 1, "1e30")), "refuse")
    yield Variant(f"{kind}_cell_text", _text(_replace_number(base, last - 1, "x1.0")), "refuse")
    absurd = NUMBER.sub(lambda m: m.group(0) + "e30" if "e" not in m.group(0) else m.group(0), base)
    yield Variant(f"{kind}_all_times_1e30", _text(absurd), "refuse")
    yield Variant(f"{kind}_binary", _text(b"\x00\x01\xff" * 64), "refuse")
    yield Variant(f"{kind}_utf16", _text(base.encode("utf-16")), "refuse")
    yield Variant(f"{kind}_empty", _text(b""), "refuse")
    yield Variant(f"{kind}_whitespace_only", _text(" \n\t\n"), "refuse")


# ------------------------------------------------------------------------------- TRC
def _trc_header_sep(text: str, sep: str) -> str:
    lines = _lines(text)
    for k in (1, 2):
        lines[k] = sep.join(lines[k].split("\t"))
    return "\n".join(lines)


def _trc_blank_marker(text: str) -> str:
    lines = _lines(text)
    for k in (8, 9):
        cells = lines[k].split("\t")
        cells[5:8] = ["", "", ""]  # marker B missing
        lines[k] = "\t".join(cells)
    return "\n".join(lines)


def _trc_scaled(text: str, factor: float) -> str:
    lines = _lines(text)
    for k in range(6, len(lines)):
        cells = lines[k].split("\t")
        if len(cells) > 2:
            lines[k] = "\t".join(cells[:2] + [f"{float(c) * factor:.6f}" for c in cells[2:]])
    return "\n".join(lines)


def _trc_cut_mid_row(text: str) -> str:
    lines = _lines(text)
    keep = lines[:12]
    keep.append(lines[12][: len(lines[12]) // 2])
    return "\n".join(keep)


def trc_variants(seed: int = 0, random_count: int = 24) -> Iterator[Variant]:
    base = trc_base()
    yield Variant("trc_valid", _text(base), "accept")
    yield from layout_variants("trc", base)
    yield from value_variants("trc", base)
    yield Variant("trc_header_double_tabs", _text(_trc_header_sep(base, "\t\t")), "accept")
    yield Variant("trc_header_spaces", _text(_trc_header_sep(base, "   ")), "accept")
    yield Variant("trc_header_tab_space", _text(_trc_header_sep(base, " \t ")), "accept")
    yield Variant("trc_blank_marker_cells", _text(_trc_blank_marker(base)), "accept")
    yield Variant(
        "trc_numframes_more_than_rows", _text(base.replace("\t12\t3\tmm\t", "\t30\t3\tmm\t")), "accept"
    )
    yield Variant(
        "trc_numframes_fewer_than_rows", _text(base.replace("\t12\t3\tmm\t", "\t5\t3\tmm\t")), "accept"
    )
    yield Variant("trc_cut_mid_row", _text(_trc_cut_mid_row(base)), "refuse")
    yield Variant("trc_units_m_holding_mm", _text(base.replace("\tmm\t", "\tm\t")), "refuse")
    yield Variant("trc_units_mm_holding_m", _text(_trc_scaled(base, 1e-3)), "refuse")
    yield Variant("trc_units_m_holding_km", _text(_trc_scaled(trc_base("m"), 1e3)), "refuse")
    yield Variant("trc_valid_in_m", _text(trc_base("m")), "accept")
    yield Variant("trc_all_nan", _text(_trc_scaled(base, float("nan")).replace("nan", "NaN")), "refuse")
    yield from random_text_variants("trc", base, seed, random_count)


# ------------------------------------------------------------------------------- MOT / STO
def mot_variants(seed: int = 0, random_count: int = 24) -> Iterator[Variant]:
    base = mot_base()
    yield Variant("mot_valid", _text(base), "accept")
    yield from layout_variants("mot", base)
    yield from value_variants("mot", base)
    yield Variant("mot_ncolumns_wrong", _text(base.replace("nColumns=7", "nColumns=9")), "refuse")
    yield Variant("mot_nrows_wrong", _text(base.replace("nRows=20", "nRows=31")), "accept")
    yield Variant("mot_spaces_around_equals", _text(base.replace("nRows=20", "nRows = 20")), "accept")
    legacy = base.replace("version=1\nnRows=20\nnColumns=7\n", "datacolumns 7\ndatarows 20\nrange 0 0.19\n")
    yield Variant("mot_legacy_simm_header", _text(legacy), "accept")
    yield Variant("mot_no_indegrees", _text(base.replace("inDegrees=yes\n", "")), "either")
    yield Variant("mot_space_separated_rows", _text(base.replace("\t", "   ")), "accept")
    yield Variant("mot_time_all_nan", _text(re.sub(r"\n0\.\d+\t", "\nnan\t", base)), "refuse")
    yield from random_text_variants("mot", base, seed, random_count)


def mot_coordinate_variants() -> Iterator[Variant]:
    """Coordinates for `musclerl reference`: units that lie are refused there."""
    yield Variant("coords_valid_degrees", _text(mot_base(True)), "accept")
    yield Variant("coords_valid_radians", _text(mot_base(False)), "accept")
    lie = mot_base(True).replace("inDegrees=yes", "inDegrees=no")
    yield Variant("coords_degrees_headed_radians", _text(lie), "refuse")
    yield Variant("coords_three_rows", _text(mot_base(True, n=3)), "refuse")


# ------------------------------------------------------------------------------- DeepMimic
def deepmimic_variants(seed: int = 0, random_count: int = 12) -> Iterator[Variant]:
    base = deepmimic_base()
    yield Variant("deepmimic_valid", _text(base), "accept")
    yield from layout_variants("deepmimic", base)
    yield from value_variants("deepmimic", base)
    yield Variant("deepmimic_frames_not_list", _text('{"Loop": "none", "Frames": 3}'), "refuse")
    yield Variant("deepmimic_top_level_list", _text("[1, 2, 3]"), "refuse")
    yield Variant("deepmimic_nested_bomb", _text("[" * 100_000 + "]" * 100_000), "refuse")
    yield from random_text_variants("deepmimic", base, seed, random_count)


# ------------------------------------------------------------------------------- NPZ kinds
def _npz_writer(base: Callable[[Path], None], change: dict) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        base(path)
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        for key, value in change.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value(data[key]) if callable(value) else value
        with path.open("wb") as f:
            np.savez(f, **data)

    return write


def _truncated(base: Callable[[Path], None], fraction: float) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        base(path)
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * fraction)])

    return write


def _object_array(_old=None) -> np.ndarray:
    arr = np.empty(2, dtype=object)
    arr[:] = [{"a": 1}, None]
    return arr


def _with(value: float, where: str = "one") -> Callable[[np.ndarray], np.ndarray]:
    def change(arr: np.ndarray) -> np.ndarray:
        out = np.array(arr, dtype=float)
        if where == "one":
            out.reshape(-1)[out.size // 2] = value
        else:
            out[...] = value
        return out

    return change


def _scale(factor: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda arr: np.asarray(arr, dtype=float) * factor


def _frames(n: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda arr: np.asarray(arr)[:n]


def npz_variants(
    kind: str, base: Callable[[Path], None], numeric: list[str], keys: list[str]
) -> Iterator[Variant]:
    """Generic damage of an ``.npz``: dropped keys, object/str arrays, NaN/inf/1e30, truncation."""
    yield Variant(f"{kind}_valid", base, "accept")
    for fraction in (0.1, 0.5, 0.95):
        yield Variant(f"{kind}_truncated_{fraction}", _truncated(base, fraction), "refuse")
    for key in keys:
        yield Variant(f"{kind}_drop_{key}", _npz_writer(base, {key: None}), "either")
        yield Variant(f"{kind}_object_{key}", _npz_writer(base, {key: _object_array}), "refuse")
    for key in numeric:
        yield Variant(f"{kind}_{key}_inf", _npz_writer(base, {key: _with(np.inf)}), "refuse")
        yield Variant(f"{kind}_{key}_1e30", _npz_writer(base, {key: _scale(1e30)}), "either")
        yield Variant(f"{kind}_{key}_all_nan", _npz_writer(base, {key: _with(np.nan, "all")}), "refuse")
        yield Variant(
            f"{kind}_{key}_text", _npz_writer(base, {key: lambda a: np.asarray(a).astype(str)}), "either"
        )
        yield Variant(f"{kind}_{key}_scalar", _npz_writer(base, {key: np.array(1.0)}), "either")
        yield Variant(
            f"{kind}_{key}_3d", _npz_writer(base, {key: lambda a: np.asarray(a)[None, None]}), "either"
        )


def amass_base(path: Path) -> None:
    write_step_up_amass(path, n_frames=8)


def amass_variants() -> Iterator[Variant]:
    yield from npz_variants(
        "amass",
        amass_base,
        ["poses", "trans", "betas", "mocap_framerate"],
        ["poses", "trans", "betas", "gender"],
    )
    yield Variant("amass_trans_km", _npz_writer(amass_base, {"trans": _scale(1e4)}), "refuse")
    yield Variant("amass_poses_1e30", _npz_writer(amass_base, {"poses": _scale(1e30)}), "refuse")
    yield Variant(
        "amass_one_frame", _npz_writer(amass_base, {"poses": _frames(1), "trans": _frames(1)}), "either"
    )
    yield Variant("amass_rate_inf", _npz_writer(amass_base, {"mocap_framerate": np.array(np.inf)}), "refuse")


def trajectory_base(path: Path) -> None:
    path.write_bytes(TINY_WALK.read_bytes())


def trajectory_variants() -> Iterator[Variant]:
    keys = ["qpos", "qvel", "rate_hz", "joint_names", "clip_starts", "contact", "model_name"]
    yield from npz_variants("trajectory", trajectory_base, ["qpos", "qvel", "rate_hz"], keys)
    yield Variant("trajectory_qpos_1e30", _npz_writer(trajectory_base, {"qpos": _scale(1e30)}), "refuse")
    yield Variant("trajectory_rate_zero", _npz_writer(trajectory_base, {"rate_hz": np.array(0.0)}), "refuse")


def short_trajectory(n: int) -> Callable[[Path], None]:
    """A valid tiny Trajectory cut to ``n`` frames (for commands that need velocities)."""

    def write(path: Path) -> None:
        traj = Trajectory.load(TINY_WALK)
        Trajectory(
            qpos=traj.qpos[:n],
            qvel=traj.qvel[:n],
            rate_hz=traj.rate_hz,
            joint_names=traj.joint_names,
            model_name=traj.model_name,
        ).save(path)

    return write


def reference_base(path: Path) -> None:
    write_small_reference(path)


def reference_variants() -> Iterator[Variant]:
    keys = ["joint_torque", "time_sec", "joint_angle", "subject_weight_kg", "joint_torque_valid", "qc_notes"]
    numeric = ["time_sec", "joint_angle", "subject_weight_kg", "computed_grf"]
    yield from npz_variants("reference", reference_base, numeric, keys)
    yield Variant(
        "reference_weight_1e30", _npz_writer(reference_base, {"subject_weight_kg": np.array(1e30)}), "refuse"
    )


# ------------------------------------------------------------------------------- XML, YAML
def xml_variants(seed: int = 0, random_count: int = 12) -> Iterator[Variant]:
    base = loads_xml()
    yield Variant("xml_valid", _text(base), "accept")
    yield Variant("xml_bom", _text("\ufeff" + base), "accept")
    yield Variant("xml_crlf", _text(base.replace("\n", "\r\n")), "accept")
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><OpenSimDocument><ExternalLoads><datafile>&c;</datafile>'
        "</ExternalLoads></OpenSimDocument>"
    )
    yield Variant("xml_entity_expansion", _text(bomb), "refuse")
    external = (
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        "<OpenSimDocument><ExternalLoads><datafile>&e;</datafile></ExternalLoads></OpenSimDocument>"
    )
    yield Variant("xml_external_entity", _text(external), "refuse")
    yield Variant("xml_unknown_body", _text(base.replace("foot_r</applied", "calcn_x</applied")), "refuse")
    yield Variant("xml_no_forces", _text(re.sub(r"<objects>.*</objects>", "<objects/>", base)), "refuse")
    yield Variant("xml_binary", _text(b"\x00\x01" * 40), "refuse")
    yield from random_text_variants("xml", base, seed, random_count)


def yaml_variants(motion: Path, seed: int = 0, random_count: int = 12) -> Iterator[Variant]:
    base = YAML_BASE.format(motion=motion)
    yield Variant("yaml_valid", _text(base), "either")
    bad = {
        "yaml_total_steps_negative": ("total_env_steps: 64", "total_env_steps: -100"),
        "yaml_num_envs_negative": ("num_envs: 4", "num_envs: -4"),
        "yaml_num_envs_zero": ("num_envs: 4", "num_envs: 0"),
        "yaml_num_envs_text": ("num_envs: 4", "num_envs: four"),
        "yaml_num_envs_float": ("num_envs: 4", "num_envs: 4.5"),
        "yaml_threads_zero": ("threads: 1", "threads: 0"),
    }
    for name, (old, new) in bad.items():
        yield Variant(name, _text(base.replace(old, new)), "refuse")
    extra = {
        "yaml_gamma_two": "  gamma: 2.0\n",
        "yaml_clip_eps_inf": "  clip_eps: .inf\n",
        "yaml_ent_coef_nan": "  ent_coef: .nan\n",
        "yaml_lr_zero": "optimizer:\n  learning_rate: 0\n",
        "yaml_lr_negative": "optimizer:\n  learning_rate: -3e-4\n",
        "yaml_adam_eps_negative": "optimizer:\n  eps: -1.0\n",
        "yaml_final_fraction_two": "optimizer:\n  final_fraction: 2.0\n",
        "yaml_warmup_negative": "optimizer:\n  warmup_updates: -5\n",
        "yaml_weight_decay_negative": "optimizer:\n  weight_decay: -0.1\n",
        "yaml_control_hz_negative": "env:\n  control_hz: -50\n",
        "yaml_substeps_zero": "env:\n  substeps: 0\n",
        "yaml_horizon_negative": "env:\n  horizon: -1\n",
        "yaml_env_unknown_key": "env:\n  horizn: 10\n",
        "yaml_checkpoint_keep_zero": "checkpoint:\n  keep: 0\n",
        "yaml_hidden_negative": "network:\n  policy_hidden: [-3]\n",
        "yaml_unknown_section": "trainer:\n  steps: 3\n",
        "yaml_python_object": "seed: !!python/object/apply:os.system ['true']\n",
        "yaml_anchor_bomb": "a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
    }
    for name, tail in extra.items():
        yield Variant(name, _text(base + tail if tail.startswith(" ") else base + tail), "refuse")
    yield Variant("yaml_binary", _text(b"\x00\xff" * 30), "refuse")
    yield from random_text_variants("yaml", base, seed, random_count)


# ------------------------------------------------------------------------------- policy folders
def _policy(change: Callable[[Path], None]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.mkdir()
        for f in SHIPPED_POLICY.iterdir():
            (path / f.name).write_bytes(f.read_bytes())
        change(path)

    return write


def _rewrite_stats(**arrays) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        with np.load(folder / "obs_stats.npz") as z:
            data = {k: z[k] for k in z.files}
        data.update(arrays)
        with (folder / "obs_stats.npz").open("wb") as f:
            np.savez(f, **data)

    return change


def _edit_config(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        edit(config)
        (folder / "config.json").write_text(json.dumps(config))

    return change


def _cut(name: str, keep: int) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[:keep])

    return change


def policy_variants() -> Iterator[Variant]:
    for key in ("mean", "std"):
        yield Variant(
            f"policy_stats_{key}_object", _policy(_rewrite_stats(**{key: _object_array()})), "refuse"
        )
        yield Variant(f"policy_stats_{key}_short", _policy(_rewrite_stats(**{key: np.zeros(3)})), "refuse")
        yield Variant(
            f"policy_stats_{key}_nan", _policy(_rewrite_stats(**{key: np.full(3, np.nan)})), "refuse"
        )
    for name, keep in (("config.json", 40), ("params.msgpack", 1000), ("obs_stats.npz", 100)):
        yield Variant(f"policy_{name}_truncated", _policy(_cut(name, keep)), "refuse")
    yield Variant("policy_config_list", _policy(lambda f: (f / "config.json").write_text("[1, 2]")), "refuse")
    yield Variant("policy_config_other_model", _policy(_edit_config(_other_model)), "refuse")
    yield Variant("policy_config_bounds_short", _policy(_edit_config(_short_bounds)), "refuse")
    yield Variant("policy_stats_missing_std", _policy(_drop_stats("std")), "refuse")
    yield Variant("policy_config_obs_size_text", _policy(_edit_config(_set("obs_size", "many"))), "refuse")
    yield Variant(
        "policy_params_garbage", _policy(lambda f: (f / "params.msgpack").write_bytes(b"\x93" * 50)), "refuse"
    )


def _short_bounds(config: dict) -> None:
    config["action_bounds"] = {k: v[:2] for k, v in config["action_bounds"].items()}


def _drop_stats(key: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        with np.load(folder / "obs_stats.npz") as z:
            data = {k: z[k] for k in z.files if k != key}
        with (folder / "obs_stats.npz").open("wb") as f:
            np.savez(f, **data)

    return change


def _other_model(config: dict) -> None:
    config["train_config"]["model"] = "tiny"


def _set(key: str, value) -> Callable[[dict], None]:
    return lambda config: config.__setitem__(key, value)


# ------------------------------------------------------------------------------- re-layouts of real files
def header_layout_variants(text: str, kind: str) -> Iterator[tuple[str, str]]:
    """Valid re-layouts of a real ``.trc``/``.mot`` (name, text): each must read to the same numbers."""
    yield "as_is", text
    yield "crlf", text.replace("\n", "\r\n")
    yield "bom", "\ufeff" + text
    yield "trailing_tabs", text.replace("\n", "\t\n")
    yield "no_final_newline", text.rstrip("\n")
    lines = text.split("\n")
    if kind == "trc":
        for name, sep in (("header_double_tabs", "\t\t"), ("header_spaces", " "), ("header_mixed", " \t")):
            alt = list(lines)
            for k in (1, 2):
                alt[k] = sep.join(alt[k].split())
            yield name, "\n".join(alt)
        alt = list(lines)
        cells = alt[2].split()
        cells[2] = str(int(cells[2]) + 50)  # NumFrames disagreeing with the rows
        alt[2] = "\t".join(cells)
        yield "numframes_wrong", "\n".join(alt)
        end = next(i for i, line in enumerate(lines) if line.split("\t")[:1] == ["1"])
        yield (
            "no_blank_line_before_data",
            "\n".join(lines[: end - 1] + lines[end:]) if not lines[end - 1].strip() else text,
        )
    else:
        end = next(i for i, line in enumerate(lines) if line.strip().lower() == "endheader")
        yield (
            "spaced_columns",
            "\n".join(lines[: end + 1] + [" ".join(line.split()) for line in lines[end + 1 :]]),
        )
        yield (
            "spaces_around_equals",
            "\n".join(line.replace("=", " = ", 1) if "=" in line else line for line in lines[:end])
            + "\n"
            + "\n".join(lines[end:]),
        )
