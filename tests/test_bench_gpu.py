"""``musclerl bench gpu``: the rows it plans, the budget that stops it, the configs it measures,
and (slow) a real run of its myolegs rows on the CPU."""

from __future__ import annotations

import json

import pytest

from musclerl.bench.gpu import MODELS, plan, table
from musclerl.cli import main
from musclerl.rl.config import CONFIG_DIR, load_config


def test_plan_runs_warp_first_and_trains_after_myolegs_on_warp():
    rows = plan(["myolegs", "myofullbody"], (1024, 4096, 8192), 4096)
    kinds = [(r["kind"], r["model"], r["impl"], r["num_envs"]) for r in rows]
    assert kinds[:4] == [
        ("env", "myolegs", "warp", 1024),
        ("env", "myolegs", "warp", 4096),
        ("env", "myolegs", "warp", 8192),
        ("train", "myolegs", "warp", 4096),
    ]
    assert len(rows) == 13 and sum(r["impl"] == "jax" for r in rows) == 6


def test_gpu_configs_select_warp():
    for model, name in MODELS.items():  # the walks of the CMU config are made by the user: the bundled one
        walk = f"motion=assets/motions/walk_{model}.npz"
        cfg = load_config(CONFIG_DIR / name, ["validation.motion=null", walk])
        assert cfg.backend == "mjx" and cfg.env.mjx.impl == "warp" and cfg.ppo.num_envs >= 4096


def test_spent_budget_skips_every_row_and_still_writes_the_report(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["bench", "gpu", "--models", "myolegs", "--budget-s", "1", "--out", str(out)]) == 0
    report = json.loads((out / "bench_gpu.json").read_text())
    assert report["rows"] and all(r["status"] == "skipped: time budget spent" for r in report["rows"])
    if report["device"]["platform"] != "gpu":
        assert "not GPU figures" in report["note"]
    assert "skipped: time budget spent" in (out / "bench_gpu.md").read_text()


def test_table_lists_failures_and_figures():
    rows = [
        {
            "kind": "env",
            "model": "myolegs",
            "impl": "warp",
            "num_envs": 4096,
            "status": "timed out after 90 s",
        },
        {
            "kind": "train",
            "model": "myolegs",
            "impl": "warp",
            "num_envs": 4096,
            "status": "ok",
            "train_env_steps_per_s": 12345.6,
            "ratio": 0.81,
            "compile_s": 40.0,
            "peak_device_bytes": 3 * 2**30,
        },
    ]
    text = table(rows)
    assert "| env | myolegs | warp | 4096 | timed out after 90 s |" in text
    assert "| train | myolegs | warp | 4096 | 12,346 | 0.81 | 40.0 | 3.00 GiB |" in text


@pytest.mark.slow
def test_bench_gpu_runs_its_myolegs_rows_on_the_cpu(tmp_path):
    pytest.importorskip("warp")
    out = tmp_path / "bench"
    assert (
        main(["bench", "gpu", "--models", "myolegs", "--num-envs", "2", "--steps", "3", "--out", str(out)])
        == 0
    )
    rows = json.loads((out / "bench_gpu.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["ok"] * 3
    assert all(r.get("env_steps_per_s", r.get("train_env_steps_per_s", 0)) > 0 for r in rows)
    assert 0 < next(r for r in rows if r["kind"] == "train")["ratio"]
