"""``musclerl bench so``: our static optimisation against OpenSim's on the same walk.

Runs ``musclerl reference`` (inverse dynamics + static optimisation, as a user runs it) on an
OpenSim IK ``.mot`` with its ground reaction forces, then correlates our activations with an
OpenSim Static Optimization ``_activation.sto`` of the same trial, per muscle group and side,
over the time both cover. OpenSim's gait2392 names are mapped onto the model's Rajagopal names
(:mod:`musclerl.evaluate.muscle_names`); a group's activation is the mean of its compartments.

Default data: the gait2354 subject01 walk (IK 0.4-1.6 s, two force plates) and OpenSim's own
static optimisation of that walk (``opensim_gait2392_so``, 0.5-2.0 s), from ``../shared/data``.
OpenSim's run used RRA-adjusted kinematics, which move the subtalar joint the IK holds at zero;
``--motion`` takes any other coordinates file of the trial. ``--subject-model`` (default: the
subject's scaled gait2354, the model the IK was solved on) scales the model's segments to it and
applies the plates' loads where they acted on its feet; ``--no-subject-model`` runs the model as it
is with the loads at the lab's centre of pressure. ``--other-lab`` trials take theirs from
``--other-lab-subject-model``.

``--other-lab``: walks of another subject without plates; heel strikes from the feet's sole
heights (:func:`sole_heel_strikes`), OpenSim's from the plates of ``--grf``/``--loads``; r of a few
muscles over :data:`WINDOW_S` around each (:func:`around_heel_strikes`).

Reported: Pearson r per group and side, the median over :data:`MAIN_GROUPS` (both sides), and
whether the aims hold: median >= :data:`AIM_MEDIAN_R`, every group of :data:`AIM_GROUPS` >=
:data:`AIM_GROUP_R` on both sides.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np

from musclerl.bench.ik import SHARED_DATA  # ../shared/data, or $MUSCLERL_SHARED_DATA
from musclerl.errors import InputError

GAIT = SHARED_DATA / "opensim_gait2354"
OPENSIM_SO = SHARED_DATA / "opensim_gait2392_so" / "subject01_StaticOptimization_activation.sto"

#: group -> the model's muscles (Rajagopal names, no side) averaged into it.
MAIN_GROUPS: dict[str, tuple[str, ...]] = {
    "soleus": ("soleus",),
    "gastrocnemius medialis": ("gasmed",),
    "gastrocnemius lateralis": ("gaslat",),
    "tibialis anterior": ("tibant",),
    "vastus medialis": ("vasmed",),
    "vastus intermedius": ("vasint",),
    "vastus lateralis": ("vaslat",),
    "rectus femoris": ("recfem",),
    "gluteus maximus": ("glmax1", "glmax2", "glmax3"),
    "gluteus medius": ("glmed1", "glmed2", "glmed3"),
    "biceps femoris long head": ("bflh",),
    "semimembranosus": ("semimem",),
    "semitendinosus": ("semiten",),
    "iliacus": ("iliacus",),
    "psoas": ("psoas",),
}
#: the groups the aim names (soleus, gastrocnemii, tibialis anterior, vasti, gluteus medius,
#: hamstrings, iliopsoas), each to reach AIM_GROUP_R on both sides.
AIM_GROUPS = tuple(g for g in MAIN_GROUPS if g not in ("rectus femoris", "gluteus maximus"))
AIM_MEDIAN_R = 0.9
AIM_GROUP_R = 0.7
#: --other-lab: muscles compared around heel strikes, and the window (s from the heel strike).
OTHER_LAB_MUSCLES = ("tibant", "soleus", "gasmed", "vaslat")
WINDOW_S = (-0.15, 0.6)
#: A foot swings when its sole is 1.5 cm above its median height, and lands back within 5 mm.
SWING_M, LANDED_M = 0.015, 0.005


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--motion", default=str(GAIT / "subject01_walk1_ik.mot"), help="coordinates .mot")
    parser.add_argument("--grf", default=str(GAIT / "subject01_walk1_grf.mot"), help="GRF .mot")
    parser.add_argument("--loads", default=str(GAIT / "subject01_walk1_grf.xml"), help="ExternalLoads .xml")
    parser.add_argument("--opensim", default=str(OPENSIM_SO), help="OpenSim SO _activation.sto")
    parser.add_argument("--model", default="myolegs")
    parser.add_argument(
        "--subject-model",
        default=str(GAIT / "subject01_simbody.osim"),
        help="OpenSim model the --motion was solved on (musclerl reference --subject-model)",
    )
    parser.add_argument(
        "--no-subject-model",
        action="store_true",
        help="the model as it is, loads at the plates' centre of pressure in the lab",
    )
    parser.add_argument("--mass", type=float, default=72.6, help="subject mass (kg)")
    parser.add_argument(
        "--no-grf", action="store_true", help="ignore the plates: the ground's load estimated from the motion"
    )
    parser.add_argument(
        "--no-ground-estimate", action="store_true", help="with --no-grf: stance unloaded (no estimate)"
    )
    parser.add_argument(
        "--other-lab",
        nargs="+",
        metavar="TRIAL.mot",
        help="walks of another subject without plates (e.g. opencap_expert1/walking*.mot): r of "
        f"{', '.join(OTHER_LAB_MUSCLES)} around each heel strike against OpenSim's subject01 SO "
        "around its own",
    )
    parser.add_argument(
        "--other-lab-subject-model",
        metavar="SUBJECT.osim",
        help="the OpenSim model the --other-lab trials were solved on (e.g. "
        "opencap_expert1/hand_scaled.osim)",
    )
    parser.add_argument(
        "--locked",
        nargs="+",
        default=[],
        metavar="COORDINATE",
        help="coordinates locked in our inverse dynamics and static optimisation (musclerl reference "
        "--locked), e.g. mtp_angle_r mtp_angle_l",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")


def our_activations(
    motion: str,
    grf: str | None,
    loads: str | None,
    model: str = "myolegs",
    mass_kg: float | None = None,
    ground_estimate: bool = True,
    subject_model: str | None = None,
    locked: tuple[str, ...] = (),
):
    """Our static optimisation of ``motion``: the ``_muscle_activation.sto`` Table ``musclerl
    reference`` writes (its console output swallowed; an error is raised as it would print), on
    the motion's own clock (the file's time starts at 0, as the reference layout has it)."""
    import dataclasses

    from musclerl.cli import reference as command_reference
    from musclerl.motion.storage import read_storage

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "so.npz"
        argv = [motion, "--model", model, "--out", str(out)]
        if loads:
            argv += ["--loads", loads] + (["--grf", grf] if grf else [])
        if mass_kg is not None:
            argv += ["--mass", f"{mass_kg}"]
        if not ground_estimate:
            argv.append("--no-ground-estimate")
        if subject_model:
            argv += ["--subject-model", subject_model]
        if locked:
            argv += ["--locked", *locked]
        parser = argparse.ArgumentParser()
        command_reference.add_arguments(parser)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            command_reference.run(parser.parse_args(argv))
        table = read_storage(Path(tmp) / "so_muscle_activation.sto")
    start_s = float(read_storage(motion).time_s[0]) if Path(motion).suffix.lower() != ".npz" else 0.0
    if abs(float(table.time_s[0])) > 1e-9:  # already on the motion's clock
        return table
    return dataclasses.replace(table, time_s=table.time_s + start_s)


def group_correlations(ours, opensim) -> dict[tuple[str, str], float]:
    """Pearson r of (group, side) -> r over the time both tables cover, on ``ours``' samples.

    ``ours``: Table with the model's muscle columns; ``opensim``: Table with gait2392 columns.
    """
    from musclerl.evaluate.alignment import resample
    from musclerl.evaluate.metrics import pearson_r
    from musclerl.evaluate.muscle_names import SIDES, rename_gait2392_table

    theirs = rename_gait2392_table(opensim)
    t = np.asarray(ours.time_s, dtype=float)
    lo, hi = float(theirs.time_s[0]), float(theirs.time_s[-1])
    inside = (t >= lo - 1e-9) & (t <= hi + 1e-9)
    if inside.sum() < 10:
        problem = f"covers {lo:g}-{hi:g} s, which the motion barely overlaps"
        raise InputError(opensim.source or "opensim", problem)
    t = t[inside]
    out = {}
    for group, members in MAIN_GROUPS.items():
        for side in SIDES:
            names = [f"{m}_{side}" for m in members]
            missing = [n for n in names if n not in ours.columns or n not in theirs.columns]
            if missing:
                raise InputError(ours.source or "activations", f"no column for {', '.join(missing)}")
            a = np.mean([np.asarray(ours.data)[inside, ours.columns.index(n)] for n in names], axis=0)
            b = np.mean([resample(theirs.time_s, theirs.column(n), t) for n in names], axis=0)
            out[(group, side)] = pearson_r(a, b)
    return out


def summary(r: dict[tuple[str, str], float]) -> dict:
    """Median r over every (group, side), and the aims: per group, whether both sides reach it."""
    median = float(np.median(list(r.values())))
    weak = sorted({g for (g, _s), v in r.items() if g in AIM_GROUPS and not v >= AIM_GROUP_R})
    return {
        "median_r": median,
        "aim_median": median >= AIM_MEDIAN_R,
        "aim_groups": not weak,
        "groups_below_aim": ", ".join(weak) or "none",
    }


def sole_heel_strikes(model_name: str, motion: str) -> dict[str, np.ndarray]:
    """Heel strikes (s) per side from the feet's sole heights along a coordinates file: the
    frame a foot lands (within LANDED_M of its median height) after swinging (SWING_M above)."""
    import mujoco

    from musclerl.dynamics.ground_support import model_feet
    from musclerl.dynamics.inverse_dynamics import lowpass
    from musclerl.evaluate.coordinates import coordinates_to_qpos
    from musclerl.evaluate.gait_events import contact_events
    from musclerl.models.geoms import collision_geoms, geom_lowest_z
    from musclerl.models.registry import load_model
    from musclerl.motion.storage import read_storage

    model = load_model(model_name)
    table = read_storage(motion)
    qpos = coordinates_to_qpos(
        model, list(table.columns), lowpass(table.data, table.rate_hz, 6.0), table.in_degrees
    ).qpos
    feet = model_feet(model)
    geoms = [collision_geoms(model, list(f)) for f in feet]
    data = mujoco.MjData(model)
    height = np.zeros((len(qpos), len(feet)))
    for t, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        height[t] = [geom_lowest_z(model, data, g).min() for g in geoms]
    out = {}
    for k, foot in enumerate(feet):
        level = np.median(height[:, k])
        contact = np.zeros(len(qpos), dtype=bool)
        swinging = False
        for t, h in enumerate(height[:, k]):
            swinging = (swinging or h > level + SWING_M) and not h < level + LANDED_M
            contact[t] = not swinging
        side = model.body(foot[0]).name.rpartition("_")[2]
        out[side] = contact_events(np.asarray(table.time_s, float), contact).heel_strikes_s
    return out


def around_heel_strikes(
    ours, strikes: dict[str, np.ndarray], opensim, opensim_strikes: dict[str, np.ndarray]
) -> dict[str, list[float]]:
    """Per muscle of OTHER_LAB_MUSCLES: r of ours against OpenSim's over WINDOW_S around each of
    our heel strikes (OpenSim's around its first heel strike of that side whose window its table
    covers), both sides pooled."""
    from musclerl.evaluate.alignment import resample
    from musclerl.evaluate.metrics import pearson_r
    from musclerl.evaluate.muscle_names import rename_gait2392_table

    theirs = rename_gait2392_table(opensim)
    lag = np.arange(WINDOW_S[0], WINDOW_S[1] + 1e-9, 0.01)
    out: dict[str, list[float]] = {m: [] for m in OTHER_LAB_MUSCLES}
    for side, hs in strikes.items():
        covered = [
            h
            for h in opensim_strikes.get(side, ())
            if h + WINDOW_S[0] >= theirs.time_s[0] and h + WINDOW_S[1] <= theirs.time_s[-1]
        ]
        if not covered:
            continue
        for h in hs:
            inside = (h + lag >= ours.time_s[0]) & (h + lag <= ours.time_s[-1])
            if inside.sum() < 0.5 * len(lag):
                continue
            for m in OTHER_LAB_MUSCLES:
                a = resample(ours.time_s, ours.column(f"{m}_{side}"), h + lag[inside])
                b = resample(theirs.time_s, theirs.column(f"{m}_{side}"), covered[0] + lag[inside])
                out[m].append(pearson_r(a, b))
    return out


def run(args: argparse.Namespace) -> int:
    from musclerl.bench import print_result
    from musclerl.motion.storage import read_storage

    for flag, path in (("--motion", args.motion), ("--opensim", args.opensim)):
        if not Path(path).is_file():
            raise InputError(flag, f"{path} not found (the default is in ../shared/data)")
    opensim = read_storage(args.opensim)
    plates = (None, None) if args.no_grf else (args.grf, args.loads)
    subject = None if args.no_subject_model else args.subject_model
    if subject and not Path(subject).is_file():
        raise InputError("--subject-model", f"{subject} not found (the default is in ../shared/data)")
    ours = our_activations(
        args.motion, *plates, args.model, args.mass, not args.no_ground_estimate, subject, tuple(args.locked)
    )
    r = group_correlations(ours, opensim)
    result = {f"r {g} {s}": v for (g, s), v in r.items()}
    result.update(summary(r))
    if args.other_lab:
        from musclerl.dynamics.inverse_dynamics import read_external_loads
        from musclerl.evaluate.gait_events import OFF_BW, ON_BW, gait_events
        from musclerl.motion.reference import STANDARD_GRAVITY

        grf = read_storage(args.grf)
        weight_n = args.mass * STANDARD_GRAVITY
        opensim_strikes = {  # per side (the loaded body's suffix), from the plate's vertical (Y-up) force
            f.body.rpartition("_")[2]: gait_events(
                grf.time_s, grf.column(f"{f.force_identifier}y"), ON_BW * weight_n, OFF_BW * weight_n
            ).heel_strikes_s
            for f in read_external_loads(args.loads)[0]
        }
        pooled: dict[str, list[float]] = {m: [] for m in OTHER_LAB_MUSCLES}
        for trial in args.other_lab:
            other = our_activations(
                trial,
                None,
                None,
                args.model,
                None,
                not args.no_ground_estimate,
                args.other_lab_subject_model,
                tuple(args.locked),
            )
            found = around_heel_strikes(other, sole_heel_strikes(args.model, trial), opensim, opensim_strikes)
            for m, values in found.items():
                pooled[m] += values
        for m, values in pooled.items():
            result[f"other lab {m} around heel strike: median r"] = (
                float(np.median(values)) if values else float("nan")
            )
            result[f"other lab {m}: windows"] = len(values)
    print_result(result, args.json, key_width=max(len(k) for k in result))
    return 0
