"""Run logs: TensorBoard scalars, a tqdm progress bar with ETA, ``metrics.jsonl``, summary and PNG.

Per logged update, every metric (episode return/length/termination rate, each ``env/reward/<term>``,
``env/nan_reset``, losses, KL, entropy, learning rate, ``perf/env_steps_per_s``) goes to
``DIR/tb/`` and as one JSON line to ``DIR/metrics.jsonl``. On resume the lines after the
checkpoint are dropped and TensorBoard purges its later events, so the curves have no duplicates.
:meth:`RunLogger.close` writes ``DIR/summary.json`` and ``DIR/curves.png``; with more than one
clip the PNG also shows the worst clips (highest failure rate over the run, from the summary's
``clip_results``) and their failure rate per log interval (``clip/<name>/failure_rate``); with
validation (:mod:`musclerl.rl.validation`), the ``val/`` curves and each validation clip's tracked
fraction.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from musclerl.fileio import atomic_path

CURVES = [  # (metric, title) drawn in curves.png when present
    ("episode/return", "episode return"),
    ("episode/length", "episode length (steps)"),
    ("episode/termination_rate", "early-termination rate"),
    ("env/site_err_local_m", "MPJPE: root-relative site error (m)"),
    ("env/site_err_m", "world-frame site error (m)"),
    ("env/term/site_deviation", "terminations/step: site deviation"),
    ("env/term/root_deviation", "terminations/step: root drift"),
    ("loss/value", "value loss"),
    ("loss/approx_kl", "approx. KL"),
    ("optim/learning_rate", "learning rate"),
    ("policy/std", "policy std"),
    ("perf/env_steps_per_s", "env steps / s"),
    ("val/success", "validation: clips tracked to the end"),
    ("val/tracked_frac", "validation: fraction of each clip tracked"),
    ("val/mpjpe_m", "validation: MPJPE (m)"),
]
VAL_CLIP_PANEL = "validation: fraction tracked per clip"
WORST_BARS = 10  # clips in the worst-clips bar panel
WORST_CURVES = 5  # of which drawn over training
LEGEND_LINES = 8  # a panel's legend names at most this many lines: those that reach lowest


def _finite(x: Any) -> float | None:
    value = float(x)
    return value if math.isfinite(value) else None


class RunLogger:
    """Log scalars for a run folder; ``log(update, env_steps, metrics)`` then ``close(summary)``."""

    def __init__(
        self,
        out_dir: str | os.PathLike,
        total_updates: int,
        env_steps_per_update: int,
        start_update: int = 0,
        progress: bool = True,
    ):
        from tensorboardX import SummaryWriter
        from tqdm import tqdm

        self.out_dir = Path(out_dir)
        self.jsonl = self.out_dir / "metrics.jsonl"
        self.history: list[dict[str, float | None]] = []
        if self.jsonl.exists():
            for line in self.jsonl.read_text().splitlines():
                row = json.loads(line)
                if row["update"] <= start_update:
                    self.history.append(row)
        self._rewrite_jsonl()
        self.writer = SummaryWriter(
            str(self.out_dir / "tb"), purge_step=start_update + 1 if start_update else None
        )
        self.steps_per_update = env_steps_per_update
        self.bar = tqdm(
            total=total_updates * env_steps_per_update,
            initial=start_update * env_steps_per_update,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not progress,
            desc="train",
        )
        self._last_time = time.perf_counter()
        self._last_update = start_update
        self.started = time.perf_counter()

    def _rewrite_jsonl(self) -> None:
        with atomic_path(self.jsonl) as tmp:
            tmp.write_text("".join(json.dumps(row) + "\n" for row in self.history))

    def log(self, update: int, metrics: dict[str, Any]) -> dict[str, float | None]:
        """Record ``metrics`` (scalars) after ``update`` updates; returns the row written."""
        now = time.perf_counter()
        env_steps = update * self.steps_per_update
        progressed = update > self._last_update  # not for a row before the first update
        rate = (update - self._last_update) * self.steps_per_update / max(now - self._last_time, 1e-9)
        self._last_time, self._last_update = now, update
        row: dict[str, float | None] = {"update": update, "env_steps": env_steps}
        for key, value in sorted(metrics.items()):
            row[key] = _finite(np.asarray(value))
        if progressed:
            row["perf/env_steps_per_s"] = rate
        for key, value in row.items():
            # per-clip scalars stay in metrics.jsonl: thousands of clips would swamp TensorBoard
            if value is not None and key not in ("update", "env_steps") and not key.startswith("clip/"):
                self.writer.add_scalar(key, value, env_steps)
        self.history.append(row)
        with self.jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        self.bar.n = env_steps
        ret, length = row.get("episode/return"), row.get("episode/length")
        self.bar.set_postfix_str(
            f"return {ret:.2f} len {length:.0f}"
            if ret is not None and length is not None
            else "no finished episode yet",
            refresh=False,
        )
        self.bar.refresh()
        return row

    def close(self, summary: dict[str, Any]) -> dict[str, Any]:
        """Write ``summary.json`` (``summary`` plus the last logged metrics) and ``curves.png``;
        return the summary as written."""
        self.bar.close()
        self.writer.flush()
        self.writer.close()
        if self.history:
            summary = {
                **summary,
                "final_metrics": self.history[-1],
                "best_episode_return": max(
                    (r["episode/return"] for r in self.history if r.get("episode/return") is not None),
                    default=None,
                ),
            }
        with atomic_path(self.out_dir / "summary.json") as tmp:
            tmp.write_text(json.dumps(summary, indent=2))
        plot_curves(self.history, self.out_dir / "curves.png", summary.get("clip_results"))
        return summary


def plot_curves(
    history: list[dict[str, float | None]], path: Path, clip_results: dict[str, Any] | None = None
) -> list[str]:
    """One panel per metric in ``CURVES`` found in ``history``, against env steps; with
    ``clip_results`` (:meth:`musclerl.rl.clip_stats.ClipLog.summary`) of more than one clip, two
    more: the worst clips' failure rate over the run (bars) and per log interval (curves).
    Returns the panel titles, in drawing order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(k, t) for k, t in CURVES if any(r.get(k) is not None for r in history)] or CURVES[:1]
    val_clips = sorted(
        {
            k[4 : -len("/tracked_frac")]
            for r in history
            for k in r
            if k.startswith("val/") and k.endswith("/tracked_frac") and k.count("/") >= 2
        }
    )
    worst = _worst_clips(clip_results)
    extra = ["worst clips: failure rate over the run", "worst clips: failure rate during training"]
    titles = (
        [t for _, t in panels]
        + ([VAL_CLIP_PANEL] if val_clips else [])
        + (extra if worst is not None else [])
    )
    cols = 2 if len(titles) > 1 else 1
    rows = math.ceil(len(titles) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 2.8 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax, (key, title) in zip(flat, panels, strict=False):
        pts = [(r["env_steps"], r[key]) for r in history if r.get(key) is not None]
        if pts:
            x, y = zip(*pts, strict=True)
            ax.plot(x, y, lw=1.2)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    used = len(panels)
    if val_clips:
        _plot_lines(flat[used], history, [f"val/{n}/tracked_frac" for n in val_clips], val_clips)
        flat[used].set_title(VAL_CLIP_PANEL, fontsize=10)
        flat[used].set_ylim(-0.05, 1.05)
        used += 1
    if worst is not None:
        _plot_worst(flat[used], flat[used + 1], history, clip_results, worst, extra)
    for ax in flat[len(titles) :]:
        ax.axis("off")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return titles


def _worst_clips(clip_results: dict[str, Any] | None) -> list[str] | None:
    """Names of the worst clips (up to ``WORST_BARS``, highest failure rate first), or None when
    there are no per-clip results or only one clip."""
    if not clip_results or len(clip_results.get("clips", {})) <= 1:
        return None
    return list(clip_results.get("worst_clips", []))[:WORST_BARS]


def _short(name: str) -> str:
    """A clip name cut to 28 characters (keeping its end, where clip names differ) for labels."""
    return name if len(name) <= 28 else "..." + name[-25:]


def _plot_worst(bars, curves, history, clip_results, worst: list[str], titles: list[str]) -> None:
    """Bars: run failure rate (and episodes) of ``worst``; curves: the first ``WORST_CURVES`` of
    them per log interval."""
    clips = clip_results["clips"]
    if worst:
        y = np.arange(len(worst))
        rates = [clips[n]["failure_rate"] for n in worst]
        bars.barh(y, rates, color="tab:red", alpha=0.7)
        bars.set_yticks(y, [_short(n) for n in worst], fontsize=7)
        bars.invert_yaxis()
        for k, n in enumerate(worst):
            bars.text(rates[k], k, f" {clips[n]['episodes']} ep.", va="center", fontsize=7)
        bars.set_xlim(0, 1.15)
    else:
        bars.text(0.5, 0.5, "no episode ended yet", ha="center", va="center", transform=bars.transAxes)
    bars.set_xlabel("failure rate (terminated / ended episodes)")
    bars.set_title(f"{titles[0]} ({len(clips)} clips)", fontsize=10)
    shown = worst[:WORST_CURVES]
    _plot_lines(curves, history, [f"clip/{n}/failure_rate" for n in shown], shown)
    curves.set_title(titles[1], fontsize=10)
    curves.set_ylim(-0.05, 1.05)


def _plot_lines(ax, history, keys: list[str], names: list[str]) -> None:
    """One line per metric ``keys`` (labelled by ``names``) against env steps, where logged. With
    more than :data:`LEGEND_LINES` lines (a validation set of 28 clips) the legend names the ones
    that reach lowest and the rest are drawn thin and grey: a legend taller than its panel made
    the figure's layout shrink every other panel to a sliver."""
    lines = []
    for key, name in zip(keys, names, strict=True):
        pts = [(r["env_steps"], r[key]) for r in history if r.get(key) is not None]
        if pts:
            lines.append((name, *zip(*pts, strict=True)))
    named = {n for n, _, y in sorted(lines, key=lambda line: min(line[2]))[:LEGEND_LINES]}
    for name, x, y in lines:
        if name in named:
            ax.plot(x, y, lw=1.0, marker=".", ms=3, label=_short(name))
        else:
            ax.plot(x, y, lw=0.6, color="0.6")
    if named:
        more = len(lines) - len(named)
        ax.legend(fontsize=7, title=f"+{more} more (grey)" if more else None, title_fontsize=7)
    ax.set_xlabel("env steps")
    ax.grid(alpha=0.3)
