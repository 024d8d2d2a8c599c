"""Training datasets: files, folders, globs, lists and manifests packed into one Trajectory."""

from __future__ import annotations

import dataclasses
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from musclerl.dynamics.screening import load_dataset
from musclerl.envs.motions import sine_gait
from musclerl.errors import InputError
from musclerl.models.registry import load_model
from musclerl.motion.dataset import with_clip_weights
from musclerl.motion.trajectory import Trajectory
from musclerl.resources import assets_dir


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory) -> Path:
    """20 tiny clips: lengths 0.6-2.5 s, rates 50 Hz (even) and 25 Hz (odd), every third looping."""
    folder = tmp_path_factory.mktemp("clips")
    base = {
        rate: sine_gait("tiny", duration_s=2.5, rate_hz=rate, period_s=0.8, name="x") for rate in (50.0, 25.0)
    }
    for k in range(20):
        rate = 50.0 if k % 2 == 0 else 25.0
        n = int(round((0.6 + 0.1 * k) * rate))
        src = base[rate]
        clip = dataclasses.replace(
            src,
            qpos=src.qpos[:n],
            qvel=src.qvel[:n],
            clip_names=(f"c{k:02d}",),
            clip_loop=np.array([k % 3 == 0]),
        )
        clip.save(folder / f"c{k:02d}.npz")
    return folder


def test_folder_glob_and_list_pack_every_clip(tiny, clip_folder):
    data = load_dataset(str(clip_folder), tiny, "tiny")
    traj = data.trajectory
    assert data.num_clips == 20 and traj.rate_hz == 50.0
    assert data.clip_names == tuple(f"c{k:02d}" for k in range(20))
    np.testing.assert_array_equal(traj.clip_loop, [k % 3 == 0 for k in range(20)])
    # 50 Hz clips are packed as read; 25 Hz clips resampled to 50 Hz keep their duration
    for k in range(20):
        clip = traj.clip(k)
        src = Trajectory.load(clip_folder / f"c{k:02d}.npz")
        if k % 2 == 0:
            np.testing.assert_array_equal(clip.qpos, src.qpos)
        else:
            loop = bool(src.clip_loop[0])
            dur_src = (src.num_frames - (0 if loop else 1)) / src.rate_hz
            dur = (clip.num_frames - (0 if loop else 1)) / traj.rate_hz
            assert dur == pytest.approx(dur_src, abs=0.5 / traj.rate_hz)
            np.testing.assert_allclose(clip.qpos[0], src.qpos[0], atol=1e-12)
    np.testing.assert_array_equal(data.weights, np.ones(20))
    globbed = load_dataset(str(clip_folder / "c1*.npz"), tiny, "tiny")
    assert globbed.clip_names == tuple(f"c{k}" for k in range(10, 20))
    listed = load_dataset([str(clip_folder / "c03.npz"), str(clip_folder / "c00.npz")], tiny, "tiny")
    assert listed.clip_names == ("c03", "c00") and listed.trajectory.rate_hz == 50.0


def test_csv_and_yaml_manifests(tiny, clip_folder, tmp_path):
    csv_path = tmp_path / "set.csv"
    csv_path.write_text(
        f"path,weight,name,tags\n{clip_folder}/c00.npz,2.5,walk_a,walk;flat\n"
        f"{clip_folder}/c01.npz,,,\n{clip_folder}/c1[01].npz,0.5,,run\n"
    )
    data = load_dataset(str(csv_path), tiny, "tiny")
    assert data.clip_names == ("walk_a", "c01", "c10", "c11")
    np.testing.assert_array_equal(data.weights, [2.5, 1.0, 0.5, 0.5])
    assert data.tags == (("walk", "flat"), (), ("run",), ("run",))
    yaml_path = clip_folder.parent / "set.yaml"  # paths relative to the manifest
    yaml_path.write_text(
        f"mirror: true\nclips:\n  - {clip_folder.name}/c02.npz\n"
        f"  - {{path: {clip_folder.name}/c04.npz, weight: 3, tags: [slow]}}\n"
    )
    data = load_dataset(str(yaml_path), tiny, "tiny")
    assert data.clip_names == ("c02", "c04", "c02:mirror", "c04:mirror")
    np.testing.assert_array_equal(data.weights, [1, 3, 1, 3])
    np.testing.assert_array_equal(data.mirrored, [False, False, True, True])
    assert data.tags[3] == ("slow",)
    # the config form; its weights reach the env's sampling config
    cfg = {"clips": [{"path": str(clip_folder / "c00.npz"), "weight": 2}, str(clip_folder / "c02.npz")]}
    data = load_dataset(cfg, tiny, "tiny")
    from musclerl.envs.config import EnvConfig

    assert with_clip_weights(EnvConfig(), data).sampling.clip_weights == [2.0, 1.0]
    uniform = load_dataset(str(clip_folder / "c00.npz"), tiny, "tiny")
    assert with_clip_weights(EnvConfig(), uniform).sampling.clip_weights is None


@pytest.mark.parametrize(
    "spec, match",
    [
        ("nowhere/x.npz", "motion file not found"),
        ("nowhere/*.npz", "no .npz file matches"),
        ({"clips": []}, "lists no clip"),
        ({"clips": ["a.npz"], "mirorr": True}, "'clips' \\(required\\), 'mirror' and 'plausibility'"),
        ({"clips": [{"path": "{folder}/c00.npz", "weight": -1}]}, "must be >= 0"),
        ({"clips": [{"path": "{folder}/c00.npz", "wieght": 1}]}, "unknown dataset entry key"),
        ({"clips": [{"path": "{folder}/c00.npz", "weight": 0}]}, "every clip has weight 0"),
        (42, "expected a path, a list"),
    ],
)
def test_bad_dataset_specs_are_one_line_errors(tiny, clip_folder, spec, match):
    import json

    spec = json.loads(json.dumps(spec).replace("{folder}", str(clip_folder)))
    with pytest.raises(InputError, match=match) as err:
        load_dataset(spec, tiny, "tiny")
    assert "\n" not in str(err.value)


def test_clip_of_another_model_names_its_file(tiny, clip_folder):
    walk = assets_dir() / "motions" / "walk_myolegs.npz"
    with pytest.raises(InputError, match="walk_myolegs.npz: motion has nq"):
        load_dataset([str(clip_folder / "c00.npz"), str(walk)], tiny, "tiny")


def test_train_config_accepts_a_dataset(clip_folder, tmp_path):
    """``motion=FOLDER`` in a training config builds the env on every clip."""
    from musclerl.rl.config import load_config
    from musclerl.rl.runner import build_env

    manifest = tmp_path / "m.csv"
    manifest.write_text(f"path,weight\n{clip_folder}/c00.npz,1\n{clip_folder}/c05.npz,4\n")
    cfg = load_config(None, ["model=tiny", f"motion={manifest}", "ppo.num_envs=2", "threads=1"])
    env = build_env(cfg)
    assert env.reference.clip_names == ("c00", "c05")
    assert env.config.sampling.clip_weights == [1.0, 4.0]


@pytest.mark.slow
def test_thousand_clips_load_with_bounded_memory(tmp_path):
    """1,000 myolegs clips (30 and 60 Hz, 20-38 frames) load and pack into one dataset; peak
    memory a small multiple of the packed arrays. The plausibility check (inverse dynamics per
    clip) is off: it is what loading a training set adds, not what packing costs; the times are
    printed, not asserted (they depend on the machine)."""
    model = load_model("myolegs")
    walk = Trajectory.load(assets_dir() / "motions" / "walk_myolegs.npz")
    walk = dataclasses.replace(walk, site_names=(), site_pos_m=None, contact_names=(), contact=None)
    rng = np.random.default_rng(0)
    folder = tmp_path / "many"
    folder.mkdir()
    for k in range(1000):
        n = int(rng.integers(20, 39))
        start = int(rng.integers(0, 39 - n + 1))
        clip = dataclasses.replace(
            walk,
            qpos=walk.qpos[start : start + n],
            qvel=walk.qvel[start : start + n],
            rate_hz=30.0 if k % 4 else 60.0,
            clip_names=(f"clip{k:04d}",),
            clip_loop=np.array([False]),
        )
        clip.save(folder / f"clip{k:04d}.npz")
    t0, c0 = time.perf_counter(), time.process_time()
    data = load_dataset(str(folder), model, "myolegs", plausibility="off")
    load_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    tracemalloc.start()  # a second load for memory: tracing slows allocation several-fold
    load_dataset(str(folder), model, "myolegs", plausibility="off")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    packed = data.trajectory.qpos.nbytes + data.trajectory.qvel.nbytes
    print(
        f"1000 clips: {load_s:.2f} s wall, {cpu_s:.2f} s CPU, {data.trajectory.num_frames} frames, "
        f"packed {packed / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB"
    )
    assert data.num_clips == 1000 and data.trajectory.rate_hz == 60.0
    assert peak < 3 * packed + 20e6


def test_train_cli_with_a_bad_manifest_is_one_line(clip_folder, tmp_path, capsys):
    from musclerl.cli import main

    manifest = tmp_path / "bad.csv"
    manifest.write_text(f"path,weight\n{clip_folder}/c00.npz,heavy\n")
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), "--quiet", "model=tiny", f"motion={manifest}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.csv: row 2" in err[0] and "must be a number" in err[0]
    assert not out.exists()


def test_mirror_from_the_command_line_doubles_the_clips():
    from musclerl.rl.config import load_config
    from musclerl.rl.runner import build_env

    walk = assets_dir() / "motions" / "walk_tiny.npz"
    cfg = load_config(None, ["model=tiny", f"motion={{clips: [{walk}], mirror: true}}", "ppo.num_envs=2"])
    env = build_env(cfg)
    name = Trajectory.load(walk).clip_names[0]
    assert env.reference.clip_names == (name, f"{name}:mirror")
    half = env.reference.num_frames // 2
    # the mirror's root walks the same way with its lateral position reflected
    np.testing.assert_allclose(env.reference.qpos[half:, 0], env.reference.qpos[:half, 0])
    np.testing.assert_allclose(env.reference.qpos[half:, 1], -env.reference.qpos[:half, 1])


# ----------------------------------------------------------------------------- plausibility screen


def _stand(tiny, frames: int = 20, lift_m: float = 0.0) -> Trajectory:
    """Tiny standing still on z = 0 (plausible), or held ``lift_m`` above it (no foot down: the
    floor cannot carry it), as a one-clip Trajectory at 50 Hz."""
    import mujoco

    from musclerl.models.geoms import foot_geoms, geom_lowest_z

    data = mujoco.MjData(tiny)
    mujoco.mj_kinematics(tiny, data)
    q = tiny.qpos0.copy()
    q[2] += lift_m - geom_lowest_z(tiny, data, foot_geoms(tiny)).min()
    return Trajectory(
        qpos=np.tile(q, (frames, 1)),
        qvel=np.zeros((frames, tiny.nv)),
        rate_hz=50.0,
        joint_names=tuple(tiny.joint(j).name for j in range(tiny.njnt)),
        model_name="tiny",
        clip_names=("held" if lift_m else "stand",),
    )


@pytest.fixture
def screened(tiny, tmp_path) -> list[str]:
    _stand(tiny).save(tmp_path / "stand.npz")
    _stand(tiny, lift_m=0.5).save(tmp_path / "held.npz")
    return [str(tmp_path / "stand.npz"), str(tmp_path / "held.npz")]


def test_failing_clip_is_kept_by_default_and_reported(tiny, screened):
    expected = r"held\.npz: held: fails the plausibility check \(centre of pressure"
    with pytest.warns(UserWarning, match=expected):
        data = load_dataset({"clips": screened, "mirror": True}, tiny, "tiny")
    assert data.clip_names == ("stand", "held", "stand:mirror", "held:mirror")
    verdicts = {k.rpartition(": ")[2]: v for k, v in data.plausibility.items()}
    assert verdicts["stand"] == {"passed": True, "failures": [], "action": "kept"}
    assert verdicts["held"]["passed"] is False and verdicts["held"]["action"] == "kept"
    assert verdicts["held"]["failures"][0].startswith("centre of pressure outside the feet: 100%")


def test_failing_clip_is_dropped_with_a_warning(tiny, screened):
    with pytest.warns(UserWarning, match=r"held: fails the plausibility check .*: dropped"):
        data = load_dataset({"clips": screened, "mirror": True, "plausibility": "drop"}, tiny, "tiny")
    assert data.clip_names == ("stand", "stand:mirror")
    assert data.sources == (screened[0], screened[0]) and len(data.weights) == 2
    assert [v["action"] for v in data.plausibility.values()] == ["kept", "dropped"]
    with pytest.raises(InputError, match="every clip fails the plausibility"), pytest.warns(UserWarning):
        load_dataset({"clips": screened[1:], "plausibility": "drop"}, tiny, "tiny")


def test_failing_clip_is_refused_naming_it(tiny, screened):
    with pytest.raises(InputError, match=r"held\.npz: clip 'held' fails the plausibility check \(centre"):
        load_dataset({"clips": screened, "plausibility": "refuse"}, tiny, "tiny")
    assert load_dataset({"clips": screened[:1], "plausibility": "refuse"}, tiny, "tiny").num_clips == 1


def test_plausibility_off_and_bad_values(tiny, screened, tmp_path, recwarn):
    data = load_dataset({"clips": screened, "plausibility": "off"}, tiny, "tiny")
    assert data.num_clips == 2 and data.plausibility == {} and not recwarn.list
    manifest = tmp_path / "set.yaml"
    manifest.write_text(f"clips: [{screened[1]}]\nplausibility: drop\n")
    with pytest.raises(InputError, match="every clip fails"), pytest.warns(UserWarning):
        load_dataset(str(manifest), tiny, "tiny")
    with pytest.raises(InputError, match="plausibility must be one of keep, drop, refuse, off, got 'yes'"):
        load_dataset({"clips": screened, "plausibility": "yes"}, tiny, "tiny")


def test_multi_clip_file_keeps_only_its_plausible_clips(tiny, tmp_path):
    from musclerl.motion.trajectory import concatenate

    concatenate([_stand(tiny), _stand(tiny, lift_m=0.5), _stand(tiny, 30)]).save(tmp_path / "three.npz")
    with pytest.warns(UserWarning, match="held"):
        data = load_dataset({"clips": [str(tmp_path / "three.npz")], "plausibility": "drop"}, tiny, "tiny")
    assert data.clip_names == ("stand", "stand")
    assert list(data.trajectory.clip_ends - data.trajectory.clip_starts) == [20, 30]
