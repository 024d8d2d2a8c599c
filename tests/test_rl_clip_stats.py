"""Per-clip and per-tag training results: sums against a loop, and a short run that logs them."""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

from musclerl.envs.motions import sine_gait
from musclerl.errors import InputError
from musclerl.rl.clip_stats import ClipLog, clip_sums
from musclerl.rl.config import load_config
from musclerl.rl.run_log import plot_curves
from musclerl.rl.runner import train


def test_clip_sums_match_a_loop():
    rng = np.random.default_rng(0)
    T, N, C = 7, 5, 4
    clip = rng.integers(0, C, size=(T, N))
    done = rng.random((T, N)) < 0.3
    term = done & (rng.random((T, N)) < 0.5)
    err = rng.random((T, N))
    want = np.zeros((4, C))
    for t in range(T):
        for n in range(N):
            c = clip[t, n]
            want[:, c] += [done[t, n], term[t, n], 1.0, err[t, n]]
    np.testing.assert_allclose(clip_sums(clip, done, term, err, C, np), want)
    np.testing.assert_allclose(
        np.asarray(clip_sums(jnp.asarray(clip), done, term, err, C, jnp)), want, rtol=1e-6
    )


def test_clip_log_intervals_tags_and_summary():
    log = ClipLog(("a", "b", "c"), (("walk",), ("walk", "slope"), ()))
    # episodes, failures, steps, site error sums per clip
    log.add(np.array([[2, 0, 0], [1, 0, 0], [10, 4, 0], [1.0, 0.8, 0]]))
    row = log.interval_metrics()
    assert row["clip/a/failure_rate"] == 0.5 and row["clip/a/site_err_m"] == pytest.approx(0.1)
    assert "clip/b/failure_rate" in row and np.isnan(row["clip/b/failure_rate"])  # no episode ended yet
    assert "clip/c/episodes" not in row  # never sampled
    assert row["tag/walk/site_err_m"] == pytest.approx(1.8 / 14) and row["tag/all/episodes"] == 2
    log.add(np.array([[0, 4, 1], [0, 0, 1], [0, 8, 2], [0, 0.8, 0.5]]))
    assert log.interval_metrics()["clip/b/failure_rate"] == 0.0
    s = log.summary()
    assert s["clips"]["a"] == {
        "steps": 10,
        "episodes": 2,
        "failures": 1,
        "failure_rate": 0.5,
        "success_rate": 0.5,
        "site_err_m": pytest.approx(0.1),
        "tags": ["walk"],
    }
    assert s["clips"]["c"]["failure_rate"] == 1.0 and s["worst_clips"][0] == "c"
    assert s["tags"]["slope"]["clips"] == 1 and s["tags"]["all"]["episodes"] == 7


def _tiny_dataset_config(tmp_path, backend):
    for k in range(2):
        clip = sine_gait("tiny", duration_s=1.0, rate_hz=50.0, phase_rad=k, name=f"s{k}")
        clip.save(tmp_path / f"s{k}.npz")
    manifest = tmp_path / "set.csv"
    manifest.write_text(f"path,tags\n{tmp_path}/s0.npz,flat\n{tmp_path}/s1.npz,flat;fast\n")
    return load_config(
        None,
        [
            "model=tiny",
            f"backend={backend}",
            f"motion={manifest}",
            "ppo.num_envs=4",
            "ppo.rollout_steps=16",
            "ppo.total_env_steps=128",
            "threads=1",
            "network.policy_hidden=[16]",
            "network.value_hidden=[16]",
            "log.progress=false",
        ],
    )


def test_training_logs_per_clip_and_per_tag_results(tmp_path):
    cfg = _tiny_dataset_config(tmp_path, "cpu")
    summary = train(cfg, tmp_path / "run", quiet=True)
    res = summary["clip_results"]
    assert set(res["clips"]) == {"s0", "s1"} and set(res["tags"]) == {"all", "flat", "fast"}
    # every env step belongs to exactly one clip
    assert sum(c["steps"] for c in res["clips"].values()) == summary["env_steps"] == 128
    assert res["tags"]["all"]["steps"] == 128 and res["tags"]["fast"]["steps"] == res["clips"]["s1"]["steps"]
    rows = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert any("clip/s0/site_err_m" in r for r in rows) and all("tag/all/site_err_m" in r for r in rows)
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["clip_results"]["clips"]["s1"]["tags"] == ["flat", "fast"]
    # the run's curves.png has the worst-clips panels: drawn again from the run's own files, the
    # figure has the same size, and without the per-clip results it is a row shorter
    again = plot_curves(rows, tmp_path / "again.png", saved["clip_results"])
    assert WORST in again
    assert _png_size(tmp_path / "run" / "curves.png") == _png_size(tmp_path / "again.png")
    plot_curves(rows, tmp_path / "plain.png")
    assert _png_size(tmp_path / "plain.png")[1] < _png_size(tmp_path / "again.png")[1]


WORST = "worst clips: failure rate over the run"


def _png_size(path) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _history(names, updates=3):
    return [
        {
            "update": u,
            "env_steps": 64 * u,
            "episode/return": float(u),
            **{f"clip/{n}/failure_rate": (k + 1) / (len(names) + 1) for k, n in enumerate(names)},
        }
        for u in range(1, updates + 1)
    ]


def test_curves_show_the_worst_clips_only_with_more_than_one_clip(tmp_path):
    names = ("walk", "run", "slope")
    log = ClipLog(names)
    log.add(np.array([[4, 4, 4], [1, 3, 2], [40, 40, 40], [1.0, 1.0, 1.0]]))
    results = log.summary()
    assert results["worst_clips"] == ["run", "slope", "walk"]
    titles = plot_curves(_history(names), tmp_path / "many.png", results)
    assert titles[-2:] == [WORST, "worst clips: failure rate during training"]
    one = ClipLog(("walk",))
    one.add(np.array([[4], [1], [40], [1.0]]))
    titles = plot_curves(_history(("walk",)), tmp_path / "one.png", one.summary())
    assert WORST not in titles and titles == ["episode return"]
    # several clips, none ended an episode yet: the panel says so instead of ranking
    fresh = ClipLog(names)
    assert WORST in plot_curves(_history(()), tmp_path / "fresh.png", fresh.summary())
    for name in ("many", "one", "fresh"):
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_mjx_update_returns_clip_sums(tmp_path):
    """The jitted update (mjx backend) returns the per-clip sums too: every env step on one clip."""
    import jax

    from musclerl.rl.config import num_updates
    from musclerl.rl.runner import _compiled

    cfg = _tiny_dataset_config(tmp_path, "mjx")
    _, _, init, update_step, *_ = _compiled(cfg, num_updates(cfg))
    _, metrics = update_step(init(jax.random.PRNGKey(0)))
    sums = np.asarray(metrics["clip_sums"])
    assert sums.shape == (4, 2) and sums[2].sum() == 4 * 16
    assert np.all(sums[1] <= sums[0]) and np.all(sums[3] >= 0)


def test_clip_totals_round_trip_through_json_and_refuse_other_clips():
    log = ClipLog(("walk", "run"), (("flat",), ()))
    log.add(np.array([[2, 1], [1, 0], [30, 20], [0.3, 0.125]]))
    saved = json.loads(json.dumps(log.totals()))  # as the checkpoint's meta stores it
    again = ClipLog(("walk", "run"), (("flat",), ()))
    again.restore_totals(saved, "ckpt/3")
    assert again.summary() == log.summary()
    assert again.interval_metrics()["tag/all/episodes"] == 0.0  # only the totals carry over
    with pytest.raises(InputError, match="ckpt/3.*other clips"):
        ClipLog(("run", "walk")).restore_totals(saved, "ckpt/3")
