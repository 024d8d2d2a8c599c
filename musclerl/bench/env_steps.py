"""Environment steps/s against raw MuJoCo stepping, measured in one run (``musclerl bench env``).

cpu backend (:func:`bench_cpu`): our env (physics + action space — with a PD space the PD law
inverted before every physics step — + observations + rewards + terminations + auto-resets)
against a raw ``mujoco.batch.Batch`` of the same model, the same number of simulations and
threads, doing the same ``substeps`` mj_step per control step from the same states (copied from
the env before each step, untimed) with the same controls, in as many batch calls as the env
makes (one per physics step when a PD law runs before each), and nothing else. Both are reported
as control steps per second summed over envs: ``env_steps_per_s``, ``raw_steps_per_s``,
``ratio`` = env / raw; ``raw_contract_steps_per_s`` and ``contract_ratio`` the same against a raw
batch stepped as the env's own is (persistent, positions and velocities made current after every
call: 1.12x the plain batch's time on the demo config), so ``contract_ratio`` is what the env's
Python between MuJoCo's calls keeps of its physics; ``*_mj_steps_per_s`` multiply by
``substeps``. ``raw_sim_s`` is the simulated time the raw batch advanced over the timed steps,
summed over simulations (read from MuJoCo's own clock). ``raw_loop_mj_steps_per_s`` is a plain
Python loop of ``mujoco.mj_step`` on one MjData, for reference.

Thread scaling (``single`` given: the same env built with one thread): every timed control step
is taken by both envs in turn (same actions, so the same states: MuJoCo's batch is bit-identical
at any thread count), with a raw one-thread batch beside the raw one, so both see the same
machine load: ``thread_speedup`` = env steps/s on ``threads`` threads over one thread,
``raw_thread_speedup`` the same for raw stepping (what MuJoCo's own scaling allows); the gap
between the two is the env's serial work between threaded MuJoCo calls. On a machine other jobs
keep busy neither is meaningful (the second thread finds no free core), so the same is also
estimated from CPU seconds, which they do not inflate: ``serial_frac``, the share of the
one-thread env step's CPU time spent outside MuJoCo's batch calls (``serial_ms_per_step`` per
control step, all envs), and ``amdahl_thread_speedup``, the speedup on ``threads`` free cores if
MuJoCo's calls scaled perfectly and the rest stayed serial.

mjx backend (:func:`bench_mjx`): ``jax.jit`` of ``lax.scan`` over ``env.step``; compile time,
steps/s and ``state_bytes_per_env``, the device memory of one environment's state.
"""

from __future__ import annotations

import sys
import time


def bench_actions(env, steps: int, seed: int = 0):
    """(steps, N, A) actions: excitations uniform in [0, 0.5] (the excitation space), or in the
    middle fifth of a PD space's range around its neutral action (a policy near the reference)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (steps, env.num_envs, env.action_size)
    if not env.actions.is_pd:
        return rng.uniform(0.0, 0.5, size=shape)
    half_width = 0.1 * (env.actions.high - env.actions.low)
    return env.actions.neutral + rng.uniform(-1.0, 1.0, size=shape) * half_width


def bench_cpu(env, steps: int, single=None) -> dict:
    """Our cpu ``env`` vs raw batched mj_step on the same compiled model (module docstring);
    ``single``: the same env on one thread, for the thread scaling."""
    import mujoco
    import mujoco.batch
    import numpy as np
    from tqdm import tqdm

    num_envs, threads, substeps = env.num_envs, env._physics.batch.nthread, env.config.substeps
    actions = bench_actions(env, steps + 5)
    pd = env.actions.is_pd  # a PD space's controls come from the env's state rows (the last ctrl)
    # the env's MuJoCo calls per control step: one per physics step when the PD law runs before each
    calls = [1] * substeps if env.actions.per_physics_step else [substeps]
    sides = [("", env)] + ([("single_", single)] if single is not None else [])
    raws = {
        name: mujoco.batch.Batch(e.model, nsim=num_envs, nthread=e._physics.batch.nthread)
        for name, e in sides
    }
    # the env's own stepping contract: one MjData per simulation, positions and velocities made
    # current after every call (its PD law reads them), as a raw batch
    contract = mujoco.batch.Batch(env.model, nsim=num_envs, nthread=threads, persistent=True)
    vel = int(mujoco.mjtStage.mjSTAGE_VEL)
    times = {f"{name}{kind}": 0.0 for name, _ in sides for kind in ("env", "raw")}
    times["contract"] = 0.0
    cpu = dict.fromkeys([*times, *(f"{name}mujoco" for name, _ in sides)], 0.0)  # CPU seconds
    sim_s = [0.0]

    def run(n: int, states: dict, timed: bool):
        for k in tqdm(range(n), desc="env + raw steps", disable=not timed, file=sys.stderr, leave=False):
            for name, e in sides:
                rows = e._physics.batch.state.copy()  # the env's state rows (nsim, nstate), read only
                start, start_cpu, mujoco_cpu = (
                    time.perf_counter(),
                    time.process_time(),
                    e._physics.mujoco_s,
                )
                states[name] = e.step(states[name], actions[k])
                times[f"{name}env"] += time.perf_counter() - start
                cpu[f"{name}env"] += time.process_time() - start_cpu
                cpu[f"{name}mujoco"] += e._physics.mujoco_s - mujoco_cpu
                raw = raws[name]
                raw.state[:] = rows
                if not pd:
                    raw.bind("ctrl")[:] = actions[k]
                before = raw.bind("time").copy()
                start, start_cpu = time.perf_counter(), time.process_time()
                for nstep in calls:
                    raw.step(nstep=nstep)
                times[f"{name}raw"] += time.perf_counter() - start
                cpu[f"{name}raw"] += time.process_time() - start_cpu
                if name == "" and timed:
                    sim_s[0] += float(np.sum(raw.bind("time") - before))
                if name == "":
                    contract.state[:] = rows
                    if not pd:
                        contract.bind("ctrl")[:] = actions[k]
                    start = time.perf_counter()
                    for nstep in calls:
                        contract.step(nstep=nstep, stage=vel)
                    times["contract"] += time.perf_counter() - start
        return states

    if single is not None:  # CPU seconds inside its MuJoCo calls (no clock is read on the timed env)
        single._physics.clock = time.process_time
    states = run(5, {name: e.reset(0) for name, e in sides}, False)  # warm up
    times.update(dict.fromkeys(times, 0.0))
    cpu.update(dict.fromkeys(cpu, 0.0))
    run(steps, states, True)
    env_sps, raw_sps = steps * num_envs / times["env"], steps * num_envs / times["raw"]

    data = env.physics_data(0)
    loop_n = max(200, 20 * substeps)
    start = time.perf_counter()
    data.ctrl[:] = env._physics.ctrl[0]
    for _ in range(loop_n):
        mujoco.mj_step(env.model, data)
    loop_sps = loop_n / (time.perf_counter() - start)
    result = {
        "backend": "cpu",
        "action_space": env.actions.name,
        "num_envs": num_envs,
        "threads": threads,
        "substeps": substeps,
        "timestep_s": float(env.model.opt.timestep),
        "timed_steps": steps,
        "env_steps_per_s": env_sps,
        "raw_steps_per_s": raw_sps,
        "ratio": env_sps / raw_sps,
        "raw_contract_steps_per_s": steps * num_envs / times["contract"],
        "contract_ratio": times["contract"] / times["env"],
        "env_mj_steps_per_s": env_sps * substeps,
        "raw_mj_steps_per_s": raw_sps * substeps,
        "raw_sim_s": sim_s[0],
        "raw_loop_mj_steps_per_s": loop_sps,
        "obs_dim": env.observation_size,
        "nu": env.model.nu,
        "action_size": env.action_size,
    }
    if single is not None:
        result["thread_speedup"] = times["single_env"] / times["env"]
        result["raw_thread_speedup"] = times["single_raw"] / times["raw"]
        # from CPU seconds, which other jobs on the machine do not inflate: the one-thread env
        # step's work outside MuJoCo's batch calls is the serial part; Amdahl on ``threads`` cores
        work, physics = cpu["single_env"], cpu["single_mujoco"]
        result["serial_frac"] = (work - physics) / work
        result["serial_ms_per_step"] = 1e3 * (work - physics) / steps
        result["amdahl_thread_speedup"] = work / (physics / threads + work - physics)
    return result


def bench_mjx(env, steps: int) -> dict:
    """Compile time and steps/s of ``jit(scan(env.step))`` over ``steps`` control steps of the mjx
    ``env``, actions as :func:`bench_actions` draws them (fixed over the scan)."""
    import jax
    import jax.numpy as jnp

    num_envs = env.num_envs
    actions = jnp.asarray(bench_actions(env, 1)[0])

    def rollout(state, key):
        def body(s, k):
            s = env.step(s, actions)
            return s, s.reward

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    start = time.perf_counter()
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    jax.block_until_ready(state)
    reset_s = time.perf_counter() - start
    start = time.perf_counter()
    compiled = jax.jit(rollout).lower(state, jax.random.PRNGKey(1)).compile()
    compile_s = time.perf_counter() - start
    state, _ = compiled(state, jax.random.PRNGKey(1))
    jax.block_until_ready(state)
    start = time.perf_counter()
    state, rewards = compiled(state, jax.random.PRNGKey(2))
    jax.block_until_ready(rewards)
    elapsed = time.perf_counter() - start
    return {
        "backend": "mjx",
        "action_space": env.actions.name,
        "num_envs": num_envs,
        "substeps": env.config.substeps,
        "device": str(jax.devices()[0]),
        "env_steps_per_s": steps * num_envs / elapsed,
        "compile_s": compile_s,
        "reset_compile_s": reset_s,
        "mean_reward": float(jnp.mean(rewards)),
        # what each environment's state holds in device memory (the scan's working memory comes on top)
        "state_bytes_per_env": sum(x.nbytes for x in jax.tree_util.tree_leaves(state)) / num_envs,
        "obs_dim": env.observation_size,
        "nu": env.model.nu,
        "action_size": env.action_size,
    }
