"""JAX set-up of a process that solves IK: the persistent compilation cache and the CPU devices.

:func:`configure_compilation_cache` points JAX's persistent compilation cache at
``$MUSCLERL_CACHE`` (default ``~/.cache/musclerl/jax``; ``MUSCLERL_CACHE=off`` disables it), so a
second run, or another process of the same folder run, loads a compiled IK solver from disk
instead of compiling it again. :func:`set_cpu_devices` gives JAX one CPU device per core it may
use, so a solve split over the local devices (:func:`musclerl.retarget.ik.solver.solve_clip`,
``shard_map``) runs each share on its own thread. The commands call :func:`configure_jax` (both)
first thing; importing the library changes nothing.

:func:`inline_cpu_dispatch` (the training and benchmark commands, first thing) runs JAX's CPU
computations on the calling thread: where MuJoCo C steps the physics, the host loop alternates
small jitted calls (the PD law before every physics step, the policy once per control step) with
threaded MuJoCo calls, and each call's result is needed at once, so handing it to JAX's dispatch
thread and waiting for it only adds a thread hand-off (and, on a busy machine, a wake-up) to the
serial part between two MuJoCo calls. The compiled programs and their results are the same.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "MUSCLERL_CACHE"
#: Compiles shorter than this are not written to the persistent cache. 0: every compile,
#: the small eager-op kernels of a solve too, whose compiles add up per process.
CACHE_MIN_COMPILE_S = 0.0


def compilation_cache_dir() -> Path | None:
    """The persistent compilation cache folder: ``$MUSCLERL_CACHE``, else ``~/.cache/musclerl/jax``;
    None when ``MUSCLERL_CACHE=off``."""
    value = os.environ.get(CACHE_ENV, "")
    if value.lower() == "off":
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "musclerl" / "jax"


def configure_compilation_cache() -> Path | None:
    """Turn on JAX's persistent compilation cache in :func:`compilation_cache_dir` (every entry
    compiled in more than :data:`CACHE_MIN_COMPILE_S`, any size); returns the folder or None.

    Must run before the process compiles anything with JAX: JAX decides once, at its first
    compile, whether a cache is used.
    """
    import jax

    path = compilation_cache_dir()
    if path is None:
        return None
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_S)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def configure_jax(jobs: int = 1) -> int:
    """Set up JAX for one of ``jobs`` retargeting processes: the persistent compilation cache
    (:func:`configure_compilation_cache`) and :func:`set_cpu_devices` with this process's share of
    the cores (at least 1). Returns the CPU device count set (0: left as it was)."""
    configure_compilation_cache()
    return set_cpu_devices(max(1, available_cores() // max(1, jobs)))


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0))


def set_cpu_devices(count: int) -> int:
    """Give JAX ``count`` CPU devices (``jax_num_cpu_devices``), so that a solve split over the
    local devices runs each share on its own thread; on a GPU host the solver uses the GPUs and
    this does not matter. Left alone (returns 0) when ``XLA_FLAGS`` already sets a host device
    count or when JAX has already computed something in this process (the count is fixed then);
    else returns ``count``."""
    import jax

    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return 0
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # raised once JAX's backends are initialised: keep what it has
        return 0
    return count


#: Set (to 0 or 1) in the environment, JAX's own variable for the flag: it is then left as given.
ASYNC_DISPATCH_ENV = "JAX_CPU_ENABLE_ASYNC_DISPATCH"


def inline_cpu_dispatch() -> bool:
    """Turn JAX's CPU async dispatch off (``jax_cpu_enable_async_dispatch``; module docstring)
    unless ``$JAX_CPU_ENABLE_ASYNC_DISPATCH`` sets it. Takes effect only before JAX's CPU client
    exists, i.e. before the process computes anything with JAX. Returns whether it was set here."""
    import jax

    if ASYNC_DISPATCH_ENV in os.environ:
        return False
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    return True
