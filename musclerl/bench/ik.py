"""``musclerl bench ik``: IK speed and accuracy, ours against mink (and OpenSim), in one run.

Target set: a synthetic myolegs clip (:mod:`musclerl.retarget.synthetic.clip`): a known smooth motion
of every independent coordinate, 3 markers per moving body, 2 mm Gaussian noise. Both solvers
get the same markers, weights, start pose, joint limits and knee equalities:

* ours: :func:`musclerl.retarget.ik.solver.solve_clip` (lean tree, batched LM, equalities
  eliminated), on every local JAX device (on CPU: ``--cpu-devices``, default one per core;
  mink uses one core, so ``--cpu-devices 1`` is the like-for-like ratio). Compile time is
  measured apart; frames/s is a second, compiled run. Reported with it: JAX devices, chains
  per call, CPU threads available, and the threads the timed solve kept busy (process CPU
  seconds per wall second).
* mink (``pip install mink``, optional): one ``FrameTask`` per marker site (position only,
  weight as ours), a small ``PostureTask``, the model's equalities as ``EqualityConstraintTask``,
  ``ConfigurationLimit``; per frame, warm-started from the previous frame, ``solve_ik`` steps
  (dt = 1, daqp) until the marker cost falls by less than the same relative tolerance.
* OpenSim (when ``import opensim`` works and the gait2354 data is present): its own
  InverseKinematicsTool on ``subject01_walk1`` with ``subject01_Setup_IK.xml`` (time per frame;
  a different model and markers, reported for scale only).

Reported: frames/s of each (wall clock; ours the median of ``OURS_REPEATS`` solves), the ratio,
the same per CPU second of the process (``*_fps_cpu``, ``fps_ratio_cpu_ours_over_mink``: on a
machine shared with other jobs, a solve of a few tenths of a second is easily caught by someone
else's burst; CPU seconds are not, and with one core they are what one core does), marker RMS
(mm), coordinate RMS error against the known truth (deg), equality residual and limit
violations, compile seconds, and the machine's load average (the numbers are only as quiet as
the machine).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

SHARED_DATA = Path(
    os.environ.get("MUSCLERL_SHARED_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "data")
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=1000, help="frames in the target clip")
    parser.add_argument(
        "--mink-frames",
        type=int,
        default=None,
        help="frames solved by mink (default: all; it is the slow one)",
    )
    parser.add_argument(
        "--chunk-len",
        type=int,
        default=None,
        help="our frames per warm-start chain (default: frames / chains per call)",
    )
    parser.add_argument("--no-mink", action="store_true", help="skip mink")
    parser.add_argument("--no-opensim", action="store_true", help="skip OpenSim")
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="JAX CPU devices for ours (default: one per core this process may use; "
        "1 = one core, as mink uses)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from musclerl.bench import print_result
    from musclerl.errors import InputError

    if args.frames < 2 or (args.chunk_len is not None and args.chunk_len < 1):
        raise InputError("bench ik", "--frames must be >= 2 and --chunk-len >= 1")
    if args.cpu_devices is not None and args.cpu_devices < 1:
        raise InputError("bench ik", "--cpu-devices must be >= 1")
    from musclerl.jax_setup import available_cores, set_cpu_devices

    # No persistent compilation cache here: the bench reports compile seconds.
    set_cpu_devices(args.cpu_devices or available_cores())
    result = bench(
        args.frames,
        args.mink_frames,
        args.chunk_len,
        not args.no_mink,
        not args.no_opensim,
        progress=not args.json,
    )
    print_result(result, args.json, key_width=34)
    return 0


TOL = 1e-4  # relative cost decrease at which both solvers stop on a frame
OURS_REPEATS = 5  # timed solves of ours (the median is reported): each is a short burst


def bench(
    frames: int,
    mink_frames: int | None,
    chunk_len: int | None,
    with_mink: bool,
    with_opensim: bool,
    progress: bool = False,
) -> dict:
    import numpy as np

    from musclerl.models.registry import load_model
    from musclerl.retarget.synthetic.clip import synthetic_clip

    model = load_model("myolegs")
    clip = synthetic_clip(model, n_frames=frames, noise_m=0.002, seed=0)
    out: dict = {
        "model": "myolegs",
        "frames": frames,
        "markers": len(clip.marker_bodies),
        "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }
    out.update(_bench_ours(model, clip, chunk_len))
    if with_mink:
        out.update(_bench_mink(model, clip, mink_frames or frames, progress))
        if out.get("mink_fps"):
            out["fps_ratio_ours_over_mink"] = out["ours_fps"] / out["mink_fps"]
            out["fps_ratio_cpu_ours_over_mink"] = out["ours_fps_cpu"] / out["mink_fps_cpu"]
    else:
        out["mink"] = "skipped"
    out.update(_bench_opensim() if with_opensim else {"opensim": "skipped"})
    out["load_avg_1min_end"] = round(os.getloadavg()[0], 2)
    return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in out.items()}


def _errors(model, clip, qs, frames):
    """Marker RMS (m), coordinate RMS error (deg), equality residual, limit violations."""
    import numpy as np

    from musclerl.retarget.ik.constraints import JointEqualities, JointLimits
    from musclerl.retarget.synthetic.clip import marker_positions

    eq, lim = JointEqualities(model), JointLimits(model)
    pred = marker_positions(model, qs, list(clip.marker_bodies), clip.local_points_m)
    marker_rms = float(np.sqrt(np.mean(np.sum((pred - clip.markers_m[:frames]) ** 2, axis=-1))))
    err = np.degrees(qs[:, clip.coord_qadr] - clip.q[:frames, clip.coord_qadr])
    viol = lim.violation(qs, skip_qadr=eq.dep_qadr)
    return {
        "marker_rms_m": marker_rms,
        "coord_rms_deg": float(np.sqrt(np.mean(err**2))),
        "equality_residual_max": eq.residual_max(qs),
        "joint_limit_violation_frac": float(np.mean(viol > 0)),
        "joint_limit_violation_max": float(viol.max()),
    }


def _bench_ours(model, clip, chunk_len: int | None) -> dict:
    import jax
    import numpy as np

    from musclerl.retarget.ik.constraints import JointEqualities, JointLimits, Smoothness
    from musclerl.retarget.ik.kinematics import KinematicTree
    from musclerl.retarget.ik.solver import IKProblem, solve_clip
    from musclerl.retarget.ik.tasks import MarkerTask, PostureTask

    t0 = time.perf_counter()
    tree = KinematicTree.from_model(model, keep_bodies=clip.marker_bodies)
    problem = IKProblem(
        tree,
        [MarkerTask(tree, clip.marker_bodies, clip.local_points_m), PostureTask(model.qpos0, 1e-6)],
        [JointLimits(model), JointEqualities(model), Smoothness(1e-4)],
    )
    targets = {"markers": clip.markers_m}
    first = solve_clip(problem, targets, model.qpos0, chunk_len=chunk_len, tol=TOL)
    first_s = time.perf_counter() - t0
    wall_s, cpu_s = [], []
    for _ in range(OURS_REPEATS):
        cpu0 = time.process_time()
        result = solve_clip(problem, targets, model.qpos0, chunk_len=chunk_len, tol=TOL)
        cpu_s.append(time.process_time() - cpu0)
        wall_s.append(result.solve_s)
    frames = len(clip.markers_m)
    errors = _errors(model, clip, result.q, frames)
    wall, cpu = float(np.median(wall_s)), float(np.median(cpu_s))
    return {
        "ours_compile_s": first.compile_s,
        "ours_first_run_s": first_s,
        "ours_solve_s": wall,
        "ours_fps": frames / wall,
        "ours_fps_cpu": frames / cpu,
        "ours_converged_frac": float(result.converged.mean()),
        "ours_iterations_mean": float(result.iterations.mean()),
        "ours_jax_devices": len(jax.local_devices()),
        "ours_chains_per_call": problem.chain_batch,
        "ours_cpu_threads_available": len(os.sched_getaffinity(0)),
        # Process CPU seconds per wall second of the timed solve: the threads it kept busy.
        "ours_busy_threads": cpu / max(wall, 1e-9),
        **{f"ours_{k}": v for k, v in errors.items()},
    }


def _bench_mink(model, clip, frames: int, progress: bool) -> dict:
    try:
        import mink
    except ImportError:
        return {"mink": "not installed (pip install mink)"}
    import numpy as np
    from tqdm import tqdm

    from musclerl.models.registry import compile_spec, load_spec

    frames = min(frames, len(clip.markers_m))
    spec = load_spec("myolegs")
    names = []
    for i, (body, local) in enumerate(zip(clip.marker_bodies, clip.local_points_m, strict=True)):
        name = f"bench_marker_{i}"
        spec.body(body).add_site(name=name, pos=local)
        names.append(name)
    mj_model = compile_spec(spec, "myolegs+markers")
    config = mink.Configuration(mj_model)
    tasks = [mink.FrameTask(n, "site", position_cost=1.0, orientation_cost=0.0) for n in names]
    posture = mink.PostureTask(mj_model, cost=1e-3)
    posture.set_target(mj_model.qpos0)
    equality = mink.EqualityConstraintTask(mj_model, cost=100.0)
    limits = [mink.ConfigurationLimit(mj_model)]
    all_tasks = [*tasks, posture, equality]
    q = mj_model.qpos0.copy()
    # Start like ours: root placed at the first frame's marker centroid offset.
    q[:3] += clip.markers_m[0].mean(axis=0) - _markers_at(mj_model, q, names).mean(axis=0)
    qs = np.empty((frames, mj_model.nq))
    iterations = np.zeros(frames, np.int64)
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    start, cpu0 = time.perf_counter(), time.process_time()
    rows = tqdm(range(frames), desc="mink", unit="frame", disable=not progress)
    for f in rows:
        for task, target in zip(tasks, clip.markers_m[f], strict=True):
            task.set_target(mink.SE3.from_rotation_and_translation(mink.SO3(identity), target))
        config.update(q)
        cost = _marker_cost(config, names, clip.markers_m[f])
        for it in range(100 if f == 0 else 20):
            vel = mink.solve_ik(config, all_tasks, 1.0, "daqp", damping=1e-6, limits=limits)
            config.integrate_inplace(vel, 1.0)
            new_cost = _marker_cost(config, names, clip.markers_m[f])
            iterations[f] = it + 1
            done = cost - new_cost <= TOL * cost
            cost = new_cost
            if done:
                break
        q = config.q.copy()
        qs[f] = q
    elapsed, cpu_s = time.perf_counter() - start, time.process_time() - cpu0
    errors = _errors(model, clip, qs[:, : model.nq], frames)
    return {
        "mink_frames": frames,
        "mink_solve_s": elapsed,
        "mink_fps": frames / elapsed,
        "mink_fps_cpu": frames / cpu_s,
        "mink_iterations_mean": float(iterations.mean()),
        **{f"mink_{k}": v for k, v in errors.items()},
    }


def _markers_at(model, q, names):
    import mujoco
    import numpy as np

    data = mujoco.MjData(model)
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    return np.array([data.site(n).xpos for n in names])


def _marker_cost(config, names, targets) -> float:
    import numpy as np

    pos = np.array([config.data.site(n).xpos for n in names])
    return float(0.5 * np.sum((pos - targets) ** 2))


def _bench_opensim() -> dict:
    try:
        import opensim
    except ImportError:
        return {"opensim": "not installed"}
    import tempfile

    folder = SHARED_DATA / "opensim_gait2354"
    setup = folder / "subject01_Setup_IK.xml"
    if not setup.is_file():
        return {"opensim": f"gait2354 data not found under {SHARED_DATA}"}
    opensim.Logger.setLevel(opensim.Logger.Level_Error)  # per-frame info lines would flood stdout
    with tempfile.TemporaryDirectory() as tmp:
        tool = opensim.InverseKinematicsTool(str(setup))
        model = opensim.Model(str(folder / tool.get_model_file()))
        with _quiet_c_stdout():
            model.initSystem()
        tool.setModel(model)
        tool.setMarkerDataFileName(str(folder / tool.getMarkerDataFileName()))
        tool.setResultsDir(tmp)
        tool.setOutputMotionFileName(str(Path(tmp) / "ik.mot"))
        with _quiet_c_stdout():  # OpenSim prints a model summary from C++
            start = time.perf_counter()
            tool.run()
            elapsed = time.perf_counter() - start
        frames = opensim.Storage(str(Path(tmp) / "ik.mot")).getSize()
    return {
        "opensim": f"OpenSim {opensim.__version__} IK, gait2354 subject01_walk1",
        "opensim_frames": frames,
        "opensim_solve_s": elapsed,
        "opensim_ms_per_frame": 1000.0 * elapsed / max(frames, 1),
    }


@contextlib.contextmanager
def _quiet_c_stdout():
    """Send file descriptor 1 (C/C++ printf) to /dev/null inside the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
