"""PNG plots of a comparison (matplotlib, Agg backend).

- :func:`plot_series`: one column. With gait cycles (both sides have at least one), the
  simulation's and the reference's mean ± SD over cycles against 0–100 % of the cycle; otherwise
  both against time, with the reference's invalid frames shaded grey.
- :func:`plot_grid`: the same for many columns in one figure (an overview per kind).
- :func:`plot_tracking`: per-frame MPJPE (global and root-relative) and vertical contact force
  per foot, with the early termination marked.
- Across trials (folder evaluation): :func:`plot_r_distribution` (per-column r boxes) and
  :func:`plot_cycle_stack` (mean ± SD of per-trial cycle means, policy vs reference).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from musclerl.evaluate.compare import CycleComparison, Series
from musclerl.rl.rollout import Recording

SIM_COLOUR = "tab:blue"
REF_COLOUR = "black"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | os.PathLike, top: float = 1.0) -> Path:
    """Lay ``fig`` out (leaving ``top`` of the height below a suptitle), write it and close it."""
    fig.tight_layout(rect=(0, 0, 1, top))
    path = Path(path)
    fig.savefig(path)
    _pyplot().close(fig)
    return path


def invalid_spans(time_s: np.ndarray, valid: np.ndarray) -> list[tuple[float, float]]:
    """Contiguous (start, end) time spans where ``valid`` is False, padded by half a sample."""
    t = np.asarray(time_s, dtype=float)
    bad = ~np.asarray(valid, dtype=bool)
    if len(t) == 0 or not bad.any():
        return []
    half = 0.5 * float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    spans = []
    start = None
    for i, b in enumerate(bad):
        if b and start is None:
            start = i
        if start is not None and (not b or i == len(bad) - 1):
            end = i if b else i - 1
            spans.append((t[start] - half, t[end] + half))
            start = None
    return spans


def _draw(ax, series: Series, cycle: CycleComparison | None, legend: bool) -> None:
    use_cycles = cycle is not None and cycle.sim.count > 0 and cycle.ref.count > 0
    if use_cycles:
        x = cycle.sim.percent
        for cyc, colour, label in (
            (cycle.ref, REF_COLOUR, "reference"),
            (cycle.sim, SIM_COLOUR, "simulation"),
        ):
            mean, sd = cyc.mean()[:, 0], cyc.sd()[:, 0]
            ax.plot(x, mean, color=colour, lw=1.5, label=f"{label} (n={cyc.count})")
            ax.fill_between(x, mean - sd, mean + sd, color=colour, alpha=0.2, lw=0)
        ax.set_xlabel("gait cycle (%)")
        ax.set_xlim(0, 100)
    else:
        ref = np.where(series.valid, series.ref, np.nan)
        ax.plot(series.time_s, ref, color=REF_COLOUR, lw=1.5, label="reference")
        ax.plot(series.time_s, series.sim, color=SIM_COLOUR, lw=1.2, label="simulation")
        for k, (a, b) in enumerate(invalid_spans(series.time_s, series.valid)):
            ax.axvspan(a, b, color="0.85", lw=0, label="reference invalid" if k == 0 else None)
        ax.set_xlabel("time (s)")
    ax.set_title(series.name, fontsize=9)
    ax.set_ylabel(series.unit, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.axhline(0.0, color="0.6", lw=0.5)
    if legend:
        ax.legend(fontsize=7, loc="best")


def plot_series(
    series: Series, path: str | os.PathLike, cycle: CycleComparison | None = None, subtitle: str = ""
) -> Path:
    """One column's PNG at ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.2), dpi=110)
    _draw(ax, series, cycle, legend=True)
    if subtitle:
        ax.set_title(f"{series.name}\n{subtitle}", fontsize=9)
    return _save(fig, path)


def plot_grid(
    series: list[Series],
    path: str | os.PathLike,
    title: str,
    cycles: list[CycleComparison] | None = None,
    columns: int = 4,
) -> Path | None:
    """All ``series`` in one PNG (grid of ``columns``); None when there is nothing to plot."""
    if not series:
        return None
    plt = _pyplot()
    rows = int(np.ceil(len(series) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), dpi=90, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i < len(series):
            _draw(ax, series[i], cycles[i] if cycles else None, legend=(i == 0))
        else:
            ax.axis("off")
    fig.suptitle(title, fontsize=11)
    return _save(fig, path, top=0.97)


def plot_tracking(rec: Recording, path: str | os.PathLike) -> Path:
    """MPJPE and per-foot vertical ground force over the rollout."""
    plt = _pyplot()
    fig, (a0, a1) = plt.subplots(2, 1, figsize=(7, 5), dpi=100, sharex=True)
    a0.plot(rec.time_s, rec.mpjpe_m * 100, label="MPJPE global")
    a0.plot(rec.time_s, rec.mpjpe_local_m * 100, label="MPJPE root-relative")
    a0.set_ylabel("cm")
    a0.legend(fontsize=8)
    for k, foot in enumerate(rec.feet):
        a1.plot(rec.time_s, rec.grf_n[:, k, 2] / rec.body_weight_n, label=foot)
    a1.set_ylabel("vertical contact force (BW)")
    a1.set_xlabel("time (s)")
    a1.legend(fontsize=8, ncol=2)
    if rec.early_termination:
        for ax in (a0, a1):
            ax.axvline(rec.time_s[-1], color="red", lw=1)
        reason = f": {rec.end_reason}" if rec.end_reason else ""
        a0.set_title(f"early termination (red line){reason}", fontsize=9, color="red")
    return _save(fig, path)


def plot_r_distribution(column_rows: list[dict], path: str | os.PathLike) -> Path | None:
    """Across trials, the distribution of Pearson r per column (a box per column, one panel per
    kind: torque, activation); None when no column has an r."""
    kinds = [k for k in ("torque", "activation") if any(r["kind"] == k for r in column_rows)]
    panels = []
    for kind in kinds:
        names = sorted({r["column"] for r in column_rows if r["kind"] == kind})
        data = [
            [r["r"] for r in column_rows if r["kind"] == kind and r["column"] == n and np.isfinite(r["r"])]
            for n in names
        ]
        keep = [(n, d) for n, d in zip(names, data, strict=True) if d]
        if keep:
            panels.append((kind, keep))
    if not panels:
        return None
    plt = _pyplot()
    width = max(6.0, 0.35 * max(len(k) for _, k in panels))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 3.2 * len(panels)), dpi=90, squeeze=False)
    for ax, (kind, keep) in zip(axes[:, 0], panels, strict=True):
        ax.boxplot([d for _, d in keep], showfliers=True)
        ax.set_xticks(range(1, len(keep) + 1), [n for n, _ in keep], rotation=70, fontsize=7)
        ax.axhline(0.0, color="grey", lw=0.6)
        ax.set_ylim(-1.05, 1.05)
        ax.set_ylabel("Pearson r")
        ax.set_title(f"{kind}: r per column across trials", fontsize=10)
    return _save(fig, path)


def plot_cycle_stack(
    stack: dict[str, tuple[np.ndarray, np.ndarray]], path: str | os.PathLike, xlabel: str, columns: int = 4
) -> Path | None:
    """Per column, mean ± SD across trials of the simulation's and the reference's per-trial
    curves (each (n_trials, 101) over 0–100 %); None when ``stack`` is empty."""
    if not stack:
        return None
    plt = _pyplot()
    names = list(stack)
    rows = int(np.ceil(len(names) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), dpi=90, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.axis("off")
            continue
        sim, ref = stack[names[i]]
        x = np.linspace(0, 100, sim.shape[1])
        for values, colour, label in ((ref, REF_COLOUR, "reference"), (sim, SIM_COLOUR, "policy")):
            with warnings.catch_warnings():  # an all-NaN percentile (no valid sample) stays a gap
                warnings.simplefilter("ignore", RuntimeWarning)
                m, s = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
            ax.plot(x, m, color=colour, lw=1.2, label=f"{label} (n={values.shape[0]})")
            ax.fill_between(x, m - s, m + s, color=colour, alpha=0.2, lw=0)
        ax.set_title(names[i], fontsize=8)
        ax.set_xlabel(xlabel, fontsize=7)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=6)
    fig.suptitle("torque (N·m/kg): policy vs reference, mean ± SD across trials", fontsize=11)
    return _save(fig, path, top=0.96)
