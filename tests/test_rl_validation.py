"""Validation during training (``validation:``, musclerl.rl.validation) on the tiny model.

A short run trains on the bundled tiny walk and validates on a generated clip and its mirror:
the rows name exactly the validation clips, the training env never holds them, the training is
the same update for update as without validation, and the numbers are ``bench learn``'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from musclerl.cli import main
from musclerl.envs.motions import sine_gait
from musclerl.errors import InputError
from musclerl.rl.config import load_config
from musclerl.rl.runner import _compiled, train

REPO = Path(__file__).resolve().parents[1]
WALK = REPO / "assets" / "motions" / "walk_tiny.npz"
SHORT = [
    f"motion={WALK}",
    "ppo.num_envs=16",
    "ppo.rollout_steps=16",
    "ppo.total_env_steps=768",  # 3 updates
    "ppo.num_minibatches=2",
    "ppo.update_epochs=1",
    "network.policy_hidden=[16]",
    "network.value_hidden=[16]",
    "checkpoint.every_updates=10",
    "log.progress=false",
]


def _held_out(folder: Path, duration_s: float) -> Path:
    """A generated tiny clip no training set here reads, saved in ``folder``."""
    path = folder / "held_out.npz"
    sine_gait("tiny", duration_s=duration_s, name="held_out").save(path)
    return path


def _rows(run: Path) -> list[dict]:
    return [json.loads(s) for s in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("validation")
    held_out = _held_out(folder, 0.8)
    val = [
        f"validation.motion={{clips: [{held_out}], mirror: true}}",
        "validation.every_updates=2",
        "validation.seconds=0.5",
    ]
    cfg = load_config(REPO / "configs" / "tiny.yaml", [*SHORT, *val])
    with_val = train(cfg, folder / "with", quiet=True)
    env = _compiled(cfg, 3)[0]  # the training env of that run (cached)
    plain = train(load_config(REPO / "configs" / "tiny.yaml", SHORT), folder / "without", quiet=True)
    return folder, cfg, with_val, plain, env


def test_validation_logs_the_held_out_clips_at_its_updates(runs):
    folder, _, summary, _, env = runs
    rows = _rows(folder / "with")
    val_rows = [r for r in rows if "val/success" in r]
    assert [r["update"] for r in val_rows] == [0, 2, 3]  # before training, every 2nd, the last
    names = {k.split("/")[1] for r in val_rows for k in r if k.count("/") == 2 and k.startswith("val/")}
    assert names == {"held_out", "held_out:mirror"}
    for r in val_rows:
        clips = [r[f"val/{n}/tracked_frac"] for n in sorted(names)]
        assert r["val/tracked_frac"] == pytest.approx(sum(clips) / 2)
        assert 0 < r["val/tracked_frac"] <= 1 and r["val/success"] in (0.0, 0.5, 1.0)
    # never trained on: the training env holds the walk only, per-clip training logs name no held-out clip
    assert env.reference.clip_names == ("humanoid3d_walk",)
    assert not any(k.startswith("clip/held_out") for r in rows for k in r)
    best, last = summary["validation"]["best"], summary["validation"]["last"]
    assert last["update"] == 3 and best["val/success"] >= last["val/success"] - 1e-12
    assert summary["validation"]["clips"] == ["held_out", "held_out:mirror"]
    best_policy = json.loads((folder / "with" / "policy_best" / "config.json").read_text())
    final_policy = json.loads((folder / "with" / "policy" / "config.json").read_text())
    # the best test's export carries what the final one does (a policy to ship), and its test
    assert set(final_policy) <= set(best_policy) and best_policy["validation"]["update"] == best["update"]
    assert best_policy["env_steps"] == best["env_steps"] and best_policy["motion"] == final_policy["motion"]
    assert (folder / "with" / "curves.png").is_file()


def test_training_is_the_same_with_and_without_validation(runs):
    folder = runs[0]
    with_val = {r["update"]: r for r in _rows(folder / "with")}
    plain = _rows(folder / "without")
    assert [r["update"] for r in plain] == [1, 2, 3]
    for r in plain:
        other = with_val[r["update"]]
        for key in r:
            if not key.startswith(("perf/", "val/")):
                assert other[key] == r[key], key


def test_validation_numbers_are_bench_learns(runs, capsys):
    """The last validation test is ``bench learn --policy P --validation`` of the final policy."""
    folder, cfg, summary, _, _ = runs
    args = ["bench", "learn", "--policy", str(folder / "with" / "policy"), "--validation", "--seconds", "0.5"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    last = summary["validation"]["last"]
    assert list(result["clips"]) == ["held_out", "held_out:mirror"]
    assert last["val/tracked_frac"] == result["tracked_frac"]
    assert last["val/success"] == result["success_rate"]
    for name, clip in result["clips"].items():
        assert last[f"val/{name}/mpjpe_m"] == clip["mpjpe_m"]
    assert main([*args, "--motion", str(WALK)]) == 2  # one set or the other
    assert "drop --motion" in capsys.readouterr().err


def test_validation_clips_from_a_training_file_are_refused(tmp_path):
    cfg = load_config(REPO / "configs" / "tiny.yaml", [*SHORT, f"validation.motion={WALK}"])
    with pytest.raises(InputError, match="both the training set"):
        train(cfg, tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


def test_missing_motion_files_fail_config_loading_in_one_line_with_the_configs_help(tmp_path):
    help_text = "make them with musclerl retarget markers"
    with pytest.raises(InputError) as err:
        load_config(
            REPO / "configs" / "tiny.yaml",
            [f"validation.motion={tmp_path / 'nothere.npz'}", f"motion_help={help_text}"],
        )
    message = str(err.value)
    assert "nothere.npz: motion file not found (named by validation.motion=" in message
    assert "); make them with musclerl" in message and "\n" not in message
    with pytest.raises(InputError, match="validation.seconds"):
        load_config(None, ["validation.seconds=0"])


def test_resumed_run_validates_as_an_uninterrupted_one(tmp_path):
    """A run killed after update 2 and resumed from its checkpoint logs the same validation tests
    and keeps the same best and last as the run that was never stopped."""
    held_out = _held_out(tmp_path, 0.6)
    overrides = [
        *SHORT,
        f"validation.motion={held_out}",
        "validation.every_updates=1",
        "validation.seconds=0.4",
    ]
    more = ["checkpoint.every_updates=2", "ppo.total_env_steps=1024"]  # 4 updates
    cfg = load_config(REPO / "configs" / "tiny.yaml", [*overrides, *more])
    full = train(cfg, tmp_path / "full", quiet=True)
    train(cfg, tmp_path / "cut", quiet=True, stop_after_updates=3)  # killed after update 3: resumes from 2
    resumed = train(cfg, tmp_path / "cut", quiet=True, resume=True)
    assert resumed["resumed_from_update"] == 2
    val = [
        {k: v for k, v in r.items() if k.startswith("val/") or k == "update"}
        for r in _rows(tmp_path / "full")
    ]
    assert [
        {k: v for k, v in r.items() if k.startswith("val/") or k == "update"} for r in _rows(tmp_path / "cut")
    ] == val
    assert [r["update"] for r in val] == [0, 1, 2, 3, 4]
    assert resumed["validation"] == full["validation"]


def test_curves_draw_the_validation_panels(tmp_path):
    from musclerl.rl.run_log import VAL_CLIP_PANEL, plot_curves

    rows = [
        {"update": u, "env_steps": 10 * u, "val/success": s, "val/tracked_frac": f, "val/mpjpe_m": 0.05}
        | {"val/a/tracked_frac": f, "val/b:mirror/tracked_frac": f}
        for u, s, f in ((0, 0.0, 0.4), (1, 0.5, 0.8))
    ]
    titles = plot_curves(rows, tmp_path / "curves.png")
    assert titles == [
        "validation: clips tracked to the end",
        "validation: fraction of each clip tracked",
        "validation: MPJPE (m)",
        VAL_CLIP_PANEL,
    ]
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_a_validation_set_of_many_clips_names_the_lowest_in_its_legend(tmp_path, monkeypatch):
    """28 validation clips: the per-clip panel's legend names the LEGEND_LINES that reach lowest
    (the clips that fall), not all 28, so it fits its panel and the other panels keep their size."""
    import matplotlib.figure

    from musclerl.rl import run_log

    names = [f"walk{k:02d}" for k in range(28)]
    rows = [
        {"update": u, "env_steps": 10 * u, "val/success": 0.9, "val/tracked_frac": 0.95}
        | {f"val/{n}/tracked_frac": (0.3 + 0.01 * k if u == 1 else 1.0) for k, n in enumerate(names)}
        for u in (0, 1, 2)
    ]
    saved, savefig = [], matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        saved.append(fig)
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    run_log.plot_curves(rows, tmp_path / "curves.png")
    (fig,) = saved
    panel = next(ax for ax in fig.axes if ax.get_title() == run_log.VAL_CLIP_PANEL)
    legend = panel.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == names[: run_log.LEGEND_LINES]  # the lowest dips: walk00 reached 0.30
    assert legend.get_title().get_text() == f"+{28 - run_log.LEGEND_LINES} more (grey)"
    heights = [ax.get_position().height for ax in fig.axes if ax.get_visible() and ax.axison]
    assert min(heights) > 0.5 * max(heights)  # no panel squashed by a legend


def test_training_clip_weights_do_not_reach_the_validation_env(tmp_path):
    held_out = _held_out(tmp_path, 0.4)
    overrides = [
        *SHORT,
        "ppo.total_env_steps=256",
        "env.sampling.clip_weights=[2.0]",  # one weight: the one training clip
        f"validation.motion={{clips: [{held_out}], mirror: true}}",  # two clips
        "validation.seconds=0.2",
    ]
    summary = train(load_config(REPO / "configs" / "tiny.yaml", overrides), tmp_path / "run", quiet=True)
    assert summary["validation"]["clips"] == ["held_out", "held_out:mirror"]


def test_a_clip_survived_to_its_end_counts_as_tracked_to_the_end(runs, tmp_path):
    """With every early termination switched off, the test of a clip shorter than ``seconds`` must
    end by the clip's own truncation and count every step of it: success, ``tracked_frac`` 1 and
    ``tracked_s`` equal to the clip's length in whole control steps (the step that reaches the
    clip's end is survived even though the env auto-resets its state)."""
    import dataclasses

    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.export import load_policy
    from musclerl.rl.validation import clip_test, tracking_test_env

    folder, cfg = runs[0], runs[1]
    policy = load_policy(folder / "with" / "policy")
    never = dataclasses.replace(
        cfg.env.termination,
        site_deviation_m=0.0,
        root_deviation_m=0.0,
        root_height_min_m=-1e3,
        root_height_max_m=1e3,
        max_tilt_deg=360.0,
        nonfoot_contact_m=-1e3,
    )
    no_falls = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, termination=never))
    clip = Trajectory.load(_held_out(tmp_path, 0.3))
    env, steps = tracking_test_env(no_falls, clip, seconds=1.0)
    result = clip_test(env, policy, steps, 0)
    clip_steps = int(float(env.reference.clip_duration_s[0]) // env.control_dt_s)  # the clip's whole steps
    assert result["test_s"] == pytest.approx(clip_steps * env.control_dt_s)
    assert result["tracked_s"] == pytest.approx(result["test_s"])
    assert result["tracked_frac"] == 1.0 and result["success"]
    # the paces: the generated clip's root travels straight ahead at its 0.5 m/s
    assert result["reference_speed_mps"] == pytest.approx(0.5, rel=1e-6)
    assert 0.0 < result["speed_mps"] < 3.0


def test_the_test_from_start_phases_runs_each_start_to_the_clips_end(runs, tmp_path):
    """``clips_test(..., phases=3)``: with early terminations off, each start k/3 of a clip that
    does not loop is tracked to the clip's end, so its test lasts the whole control steps left
    after it; the rows are the rollouts from those times and the summary their means."""
    import dataclasses

    import numpy as np

    from musclerl.motion.trajectory import Trajectory
    from musclerl.rl.export import load_policy
    from musclerl.rl.rollout import rollout
    from musclerl.rl.validation import clips_test, phase_starts_s, tracking_test_env

    folder, cfg = runs[0], runs[1]
    policy = load_policy(folder / "with" / "policy")
    never = dataclasses.replace(
        cfg.env.termination,
        site_deviation_m=0.0,
        root_deviation_m=0.0,
        root_height_min_m=-1e3,
        root_height_max_m=1e3,
        max_tilt_deg=360.0,
        nonfoot_contact_m=-1e3,
    )
    no_falls = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, termination=never))
    env, steps = tracking_test_env(no_falls, Trajectory.load(_held_out(tmp_path, 0.6)), seconds=1.0)
    duration_s, dt = float(env.reference.clip_duration_s[0]), env.control_dt_s
    starts = phase_starts_s(env, 0, 3)
    assert starts == pytest.approx([0.0, duration_s / 3, 2 * duration_s / 3])
    result = clips_test(env, policy, steps, [0], phases=3)
    expected_test_s = [np.floor((duration_s - t + 1e-6) / dt) * dt for t in starts]
    phases = result["phases"]
    assert phases["starts_per_clip"] == 3 and phases["success"] == 1.0
    assert phases["test_s"] == pytest.approx(np.mean(expected_test_s))
    assert phases["tracked_s"] == pytest.approx(phases["test_s"])
    # each start's error is that of a rollout started there, written out here
    act = lambda obs: policy.act(obs, deterministic=True)  # noqa: E731
    later = [rollout(env, act, clip=0, start_time_s=float(t)).mpjpe_local_m[1:].mean() for t in starts[1:]]
    first = result["clips"]["held_out"]
    assert first["test_s"] == pytest.approx(expected_test_s[0])  # the t = 0 test is unchanged
    assert later[0] != pytest.approx(first["mpjpe_m"])  # another start, another test
    assert phases["mpjpe_m"] == pytest.approx((first["mpjpe_m"] + sum(later)) / 3)
    assert first["phases"] == {k: phases[k] for k in first["phases"]}  # one clip: its means are the test's
