"""Per-clip (and per-tag) training results: episodes, failure rate and site error of every clip.

The tracking env exposes each env's clip in ``info["clip"]`` and the number of clips as the
length of ``info["clip_fail_rate"]``. During a rollout the trainers record the clip each env was
on *before* its step (after a done step the env has already been reset onto a new clip), and
:func:`clip_sums` turns one rollout (T, N) into per-clip sums (C,): episodes that ended,
episodes that ended by termination (failures), steps, and the sum of the per-step mean site
error. :class:`ClipLog` accumulates those sums on the host:

- per log interval, :meth:`ClipLog.interval_metrics` gives scalars for ``metrics.jsonl``:
  ``clip/<name>/episodes``, ``clip/<name>/failure_rate``, ``clip/<name>/site_err_m`` for the
  clips seen in the interval, and the same under ``tag/<tag>/`` and ``tag/all/`` (the logger
  sends the ``tag/`` ones to TensorBoard);
- over the whole run, :meth:`ClipLog.summary` gives per clip and per tag ``steps``, ``episodes``,
  ``failures``, ``failure_rate``, ``success_rate`` (1 - failure rate: episodes that reached the
  clip's end or the horizon) and ``site_err_m``, and the clips with the highest failure rate.

The run totals travel with every checkpoint (:meth:`ClipLog.totals` into the checkpoint's meta,
:meth:`ClipLog.restore_totals` on ``--resume``), so a resumed run's summary counts the episodes
before the interruption, as an uninterrupted run does. The checkpoint, not ``metrics.jsonl``, is
their source: the log may hold lines written after the checkpoint the run resumes from, and its
interval rates do not give back the step and error sums.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from musclerl.errors import InputError

FIELDS = ("episodes", "failures", "steps", "site_err_sum_m")


def clip_sums(clip: Any, done: Any, terminated: Any, site_err_m: Any, num_clips: int, xp: Any) -> Any:
    """Per-clip sums (4, C) in :data:`FIELDS` order from a rollout's (T, N) arrays: the clip each
    env was on during the step, whether it ended, whether it ended by termination, its site error."""
    onehot = (clip[..., None] == xp.arange(num_clips)).astype(xp.float32)  # (T, N, C)
    return xp.stack(
        [
            xp.sum(onehot * done[..., None], axis=(0, 1)),
            xp.sum(onehot * terminated[..., None], axis=(0, 1)),
            xp.sum(onehot, axis=(0, 1)),
            xp.sum(onehot * site_err_m[..., None], axis=(0, 1)),
        ]
    )


def _rates(sums: np.ndarray) -> dict[str, np.ndarray]:
    """Rates (C,) from sums (4, C); NaN where a clip has no episode (or no step)."""
    episodes, failures, steps, err = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        failure = np.where(episodes > 0, failures / episodes, np.nan)
        site = np.where(steps > 0, err / steps, np.nan)
    return {
        "episodes": episodes,
        "failures": failures,
        "steps": steps,
        "failure_rate": failure,
        "site_err_m": site,
    }


class ClipLog:
    """Host-side accumulation of :func:`clip_sums` for clips ``names`` (C,) with ``tags`` (C,)."""

    def __init__(self, names: tuple[str, ...], tags: tuple[tuple[str, ...], ...] | None = None):
        self.names = tuple(names)
        self.tags = tuple(tags) if tags is not None else tuple(() for _ in names)
        self.tag_names = sorted({t for ts in self.tags for t in ts})
        self.total = np.zeros((len(FIELDS), len(names)))
        self.interval = np.zeros_like(self.total)

    def add(self, sums: Any) -> None:
        s = np.asarray(sums, dtype=float)
        self.total += s
        self.interval += s

    def totals(self) -> dict[str, Any]:
        """The run totals as JSON data (clip names, :data:`FIELDS`, sums (4, C) as lists)."""
        return {"clips": list(self.names), "fields": list(FIELDS), "sums": self.total.tolist()}

    def restore_totals(self, saved: dict[str, Any], source: str) -> None:
        """Continue from :meth:`totals` of a checkpoint (``source`` names it in errors): the same
        clips in the same order, or an InputError."""
        if list(saved.get("clips", ())) != list(self.names) or list(saved.get("fields", ())) != list(FIELDS):
            raise InputError(source, "the checkpoint's per-clip totals are for other clips than this run's")
        sums = np.asarray(saved["sums"], dtype=float)
        if sums.shape != self.total.shape:
            raise InputError(source, f"per-clip totals of shape {sums.shape}, expected {self.total.shape}")
        self.total = sums
        self.interval = np.zeros_like(self.total)

    def _groups(self) -> dict[str, np.ndarray]:
        """Boolean masks (C,) of ``all`` and of every tag."""
        out = {"all": np.ones(len(self.names), dtype=bool)}
        for tag in self.tag_names:
            out[tag] = np.array([tag in ts for ts in self.tags])
        return out

    def interval_metrics(self) -> dict[str, float]:
        """Scalars for the log line since the last call (see the module docstring); resets."""
        out: dict[str, float] = {}
        rates = _rates(self.interval)
        for c in np.flatnonzero(self.interval[2] > 0):
            for key in ("episodes", "failure_rate", "site_err_m"):
                out[f"clip/{self.names[c]}/{key}"] = float(rates[key][c])
        for tag, mask in self._groups().items():
            group = _rates(self.interval[:, mask].sum(axis=1, keepdims=True))
            for key in ("episodes", "failure_rate", "site_err_m"):
                out[f"tag/{tag}/{key}"] = float(group[key][0])
        self.interval[:] = 0.0
        return out

    def summary(self, worst: int = 10) -> dict[str, Any]:
        """Run totals per clip and per tag, and the ``worst`` clips by failure rate."""
        rates = _rates(self.total)

        def entry(r: dict[str, np.ndarray], k: int) -> dict[str, float | int | None]:
            fr = float(r["failure_rate"][k])
            return {
                "steps": int(r["steps"][k]),
                "episodes": int(r["episodes"][k]),
                "failures": int(r["failures"][k]),
                "failure_rate": fr if np.isfinite(fr) else None,
                "success_rate": 1.0 - fr if np.isfinite(fr) else None,
                "site_err_m": float(r["site_err_m"][k]) if np.isfinite(r["site_err_m"][k]) else None,
            }

        clips = {name: {**entry(rates, k), "tags": list(self.tags[k])} for k, name in enumerate(self.names)}
        tags = {}
        for tag, mask in self._groups().items():
            tags[tag] = {
                **entry(_rates(self.total[:, mask].sum(axis=1, keepdims=True)), 0),
                "clips": int(mask.sum()),
            }
        ranked = sorted(
            (n for n in self.names if clips[n]["failure_rate"] is not None),
            key=lambda n: -clips[n]["failure_rate"],
        )
        return {"clips": clips, "tags": tags, "worst_clips": ranked[:worst]}
