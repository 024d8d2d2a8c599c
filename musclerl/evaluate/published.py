"""Published figures for a generalist muscle policy, and ours computed the same way beside them.

The one table of published numbers (:data:`PUBLISHED`; source: MuscleMimic's project blog, no code
public; restated in ``../shared/REFERENCE_NPZ.md``). What they are: five AMASS walks simulated by
the policy, cut into gait cycles at GRF onset, normalised to 0–100 % and averaged, left leg, against
the mean cycles of two lab datasets of nine people each at 1.2 m/s: level walking (Gait120, the
source of Boo_LevelWalking) and treadmill walking (Wang et al. 2022). The two summary figures are
the means of their four listed parts: kinematics 0.94 = mean(0.98, 0.93, 0.89, 0.97) with the
vertical GRF, "joint dynamics" 0.71 = mean(0.91, 0.71, 0.28, 0.95) (our reading: the parts average
to the summaries, to two decimals, only with the GRF included).

Ours, the same computation (:func:`published_rows`): the left leg's gait-cycle means (each trial's
policy and reference cycle means, ``TrialResult.cycle_means``, averaged across trials), r of the
policy's mean cycle against the reference's, averaged over the figure's columns as they did. Beside
it, stricter: per trial the same r of that trial's own cycle means (median across trials), and on
time (no cycles; median across trials of each trial's mean r over those columns).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from musclerl.evaluate import tables
from musclerl.evaluate.metrics import pearson_r

LEVEL = "level walking (Gait120)"
TREADMILL = "treadmill walking (Wang et al. 2022)"
KINEMATICS_L = ("angle:hip_flexion_l", "angle:knee_angle_l", "angle:ankle_angle_l", "grf:vertical_l")
DYNAMICS_L = ("torque:ankle_angle_l", "torque:hip_flexion_l", "torque:knee_angle_l", "grf:vertical_l")


@dataclasses.dataclass(frozen=True)
class PublishedFigure:
    """One published number: ``label``, ``value`` (an r), the dataset it was measured ``against``,
    ``what`` it is in one line, and our ``columns`` (``kind:column``) whose r it averages (empty:
    nothing of ours computes it)."""

    label: str
    value: float
    against: str
    what: str
    columns: tuple[str, ...]


PUBLISHED = (
    PublishedFigure(
        "kinematics r",
        0.94,
        LEVEL,
        "mean of the hip, knee, ankle angle and vertical GRF r below",
        KINEMATICS_L,
    ),
    PublishedFigure("hip flexion angle r", 0.98, LEVEL, "left hip flexion angle", KINEMATICS_L[:1]),
    PublishedFigure("knee angle r", 0.93, LEVEL, "left knee angle", KINEMATICS_L[1:2]),
    PublishedFigure("ankle angle r", 0.89, LEVEL, "left ankle angle", KINEMATICS_L[2:3]),
    PublishedFigure("vertical GRF r", 0.97, LEVEL, "left foot's vertical ground reaction", KINEMATICS_L[3:]),
    PublishedFigure("kinematics r", 0.92, TREADMILL, "the same mean against the treadmill set", KINEMATICS_L),
    PublishedFigure(
        "joint dynamics r",
        0.71,
        TREADMILL,
        "mean of the ankle, hip, knee moment and vertical GRF r below",
        DYNAMICS_L,
    ),
    PublishedFigure("ankle moment r", 0.91, TREADMILL, "left ankle moment", DYNAMICS_L[:1]),
    PublishedFigure("hip flexion moment r", 0.71, TREADMILL, "left hip flexion moment", DYNAMICS_L[1:2]),
    PublishedFigure("knee moment r", 0.28, TREADMILL, "left knee moment", DYNAMICS_L[2:3]),
    PublishedFigure(
        "vertical GRF r", 0.95, TREADMILL, "left foot's vertical ground reaction", DYNAMICS_L[3:]
    ),
    PublishedFigure(
        "muscle activity r (policy)", 0.46, LEVEL + " EMG", "policy activation vs EMG envelopes", ("emg",)
    ),
    PublishedFigure(
        "muscle activity r (static optimisation)",
        0.49,
        LEVEL + " EMG",
        "static optimisation vs the same EMG (not computed here)",
        (),
    ),
    PublishedFigure(
        "muscle activity r (person vs person)",
        0.77,
        LEVEL + " EMG",
        "one person's EMG vs another's (not computed here)",
        (),
    ),
)


def pooled_cycle_r(results: list, column: str) -> tuple[float, int]:
    """r of the across-trial mean of the policy's cycle means against the reference's, for one
    headline column (``kind:column``), and the number of trials with cycles there."""
    pairs = [r.cycle_means[column] for r in results if column in r.cycle_means]
    if not pairs:
        return float("nan"), 0
    with np.errstate(all="ignore"):
        sim = np.nanmean(np.stack([p[0] for p in pairs]), axis=0)
        ref = np.nanmean(np.stack([p[1] for p in pairs]), axis=0)
    return pearson_r(sim, ref), len(pairs)


def _trial_mean(result, columns: tuple[str, ...], field: str) -> float:
    """A trial's mean over ``columns`` of ``field`` (r or cycle_r); NaN unless every column has it
    (a figure averaged over fewer parts would not be the published one)."""
    by_key = {f"{c['kind']}:{c['column']}": c for c in result.columns}
    if columns == ("emg",):
        vals = [c.get(field) for c in result.columns if c["kind"] == "emg"]
        return tables.stats(vals)["mean"]
    vals = [by_key.get(k, {}).get(field) for k in columns]
    vals = [np.nan if v is None else float(v) for v in vals]
    return float(np.mean(vals)) if vals and np.all(np.isfinite(vals)) else float("nan")


def published_rows(results: list) -> list[dict]:
    """One row per :data:`PUBLISHED` figure: the published value and ours computed the same way
    (``pooled_cycle_r``, ``pooled_trials``), per trial on cycles (``trial_cycle_r`` median across
    trials, ``trial_cycle_n``) and on time (``trial_time_r`` median, ``trial_time_n``)."""
    out = []
    for fig in PUBLISHED:
        row = {"figure": fig.label, "published": fig.value, "against": fig.against, "what": fig.what}
        nan = float("nan")
        pooled, pooled_n = nan, 0
        if fig.columns and fig.columns != ("emg",):
            rs_n = [pooled_cycle_r(results, c) for c in fig.columns]
            if all(np.isfinite(r) for r, _ in rs_n):
                pooled = float(np.mean([r for r, _ in rs_n]))
                pooled_n = min(n for _, n in rs_n)
        cyc = tables.stats([_trial_mean(r, fig.columns, "cycle_r") for r in results]) if fig.columns else None
        tim = tables.stats([_trial_mean(r, fig.columns, "r") for r in results]) if fig.columns else None
        row.update(
            pooled_cycle_r=pooled,
            pooled_trials=pooled_n,
            trial_cycle_r=cyc["median"] if cyc else nan,
            trial_cycle_n=cyc["n"] if cyc else 0,
            trial_time_r=tim["median"] if tim else nan,
            trial_time_n=tim["n"] if tim else 0,
        )
        out.append(row)
    return out
