"""Batched Levenberg–Marquardt IK over a whole clip.

``solve_clip(problem, targets, q0)`` solves every frame of a clip in one batched computation:

1. The clip is cut into chains of ``chunk_len`` consecutive frames; ``problem.chain_batch``
   chains (``CHAINS_PER_DEVICE`` on every local JAX device, split across the devices with
   ``shard_map``) are solved side by side, more chains in further calls of the same function.
2. Sweep 0 solves the first frame of every chain *cold* from ``q0`` (root first aligned rigidly
   to the markers by a weighted Kabsch fit, then up to ``cold_iters`` LM iterations), or from
   the chain's own row of ``starts`` where the caller has a pose per frame. Then sweep
   ``l`` solves frame ``l`` of every chain at once, warm-started from (and smoothed towards) the
   constant-velocity prediction ``2 q[l-1] - q[l-2]`` of the same chain (``q[l-1]`` for
   ``l = 1``; rotations of free and ball joints are carried over, not extrapolated), so
   Smoothness penalises acceleration. ``chunk_len=1`` is a pure batch solve of all frames from
   the cold start.
3. The sweeps run inside compiled code: one call solves up to ``BLOCK_SWEEPS`` frames of every
   chain, sweep after sweep; a sweep starts every chain's frame once (the start, with its
   residual and first step, is not recomputed on every iteration) and then runs a
   ``while_loop`` whose trip is one LM iteration of every chain not yet done, until all are.
   Warm frames of a smooth clip nearly all take the same two iterations, so chains seldom wait
   for each other. Every shape is fixed per problem (chains per call, sweeps
   per call, repair batches, error batches), so a problem compiles once and clips of any
   length, and repairs of any size, reuse it. ``time_limit_s`` is checked between calls.
4. Constraints' ``finalize`` passes (e.g. tendon-jump repair, through
   :meth:`IKProblem.resolve_frames`, the same compiled sweeps) run on the host, then per-frame
   errors are measured.

A warm frame after a solved one of the same call does not linearise at its prediction: its
residual there is evaluated exactly and the solved frame's Jacobian (one frame away) stands in
for its own in the first Gauss-Newton step (:meth:`IKProblem._lm_reuse`), which saves one of
the linearisations a frame would otherwise cost (the prediction, the step, the check).

Each iteration linearises in closed form (:meth:`IKProblem.linearize`): marker Jacobians from
the tree's joint twists directly in the free variables, coordinate/posture/smoothness rows as
rows of ``dq/dx``; ``jax.jacfwd`` only for terms without a closed form (e.g. FrameTask).

Per frame, LM minimises ``0.5 |r(q)|^2`` over the tree's free tangent coordinates (dependent
coordinates eliminated, see :class:`~musclerl.retarget.ik.constraints.JointEqualities`) with
Marquardt scaling: step ``(J^T J + lam diag(J^T J)) dx = -J^T r``; a step that lowers the cost is
accepted and ``lam`` shrinks x0.3, a step that raises it is rejected and ``lam`` grows x10
(``lam`` starts at 1e-3 for cold starts and repairs, 1e-5 for warm starts, whose predictions are
close enough for Gauss-Newton steps).
Bounds are held by projecting each candidate and freezing coordinates on an active bound.
A frame is ``converged`` when an accepted step lowers the cost by less than ``tol`` (relative),
the next step from an accepted point is below ``STEP_TOL`` (1e-5 rad or m) or is predicted by
the Gauss-Newton model to lower the cost by less than ``tol`` (relative), the gradient
vanishes, or no damping gives a decrease (a numerical minimum); frames that hit
``max_iters`` or the ``time_limit_s`` are reported as not converged.

Precision: the solve runs in float64 (``jax.enable_x64(True)`` around tracing and calls), which
the 1e-6 equality residual needs; inputs and outputs are NumPy float64.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from musclerl.errors import InputError, require
from musclerl.retarget.ik.constraints import Constraint, JointEqualities, JointLimits
from musclerl.retarget.ik.problem import (
    BLOCK_SWEEPS,
    CHAINS_PER_DEVICE,
    COLD,
    ERRORS_BATCH,
    STEP_TOL,
    WARM,
    IKProblem,
)

__all__ = [
    "BLOCK_SWEEPS",
    "CHAINS_PER_DEVICE",
    "STEP_TOL",
    "IKProblem",
    "IKResult",
    "default_constraints",
    "frame_errors",
    "solve_clip",
]


@dataclasses.dataclass(frozen=True)
class IKResult:
    """Per-frame IK outcome for a clip of T frames.

    q: (T, nq) solved qpos. converged: (T,) bool. iterations: (T,) LM iterations used.
    residual_m: (T,) RMS of the point errors (markers, frame positions) in metres, NaN when a
    frame has no position target. max_error_m: (T,) largest point error. cost: (T,) final
    ``0.5 |r|^2``. timed_out: (T,) frames not solved before ``time_limit_s`` (held at the
    previous solution). tendon_jump: (T,) frames whose muscle path still jumps (all False when no
    TendonContinuity constraint ran); tendon_jumps_detected: jumps found before repair.
    solve_s: seconds of solving (after compile). compile_s: seconds spent tracing/compiling.
    """

    q: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    residual_m: np.ndarray
    max_error_m: np.ndarray
    cost: np.ndarray
    timed_out: np.ndarray
    tendon_jump: np.ndarray
    tendon_jumps_detected: int = 0
    solve_s: float = 0.0
    compile_s: float = 0.0

    @property
    def failed_frames(self) -> np.ndarray:
        """Indices of frames that did not converge (or were not reached)."""
        return np.flatnonzero(~self.converged)


def solve_clip(
    problem: IKProblem,
    targets: Mapping[str, np.ndarray],
    q0: np.ndarray,
    *,
    max_iters: int = 20,
    cold_iters: int = 100,
    tol: float = 1e-4,
    chunk_len: int | None = None,
    smooth_warm: bool = True,
    time_limit_s: float | None = None,
    starts: np.ndarray | None = None,
) -> IKResult:
    """Solve IK for every frame of a clip.

    Args:
        problem: tasks and constraints.
        targets: task/constraint name -> per-frame array (T, ...) (see each task).
        q0: (nq,) initial guess for cold starts (root re-aligned to the markers).
        max_iters: LM iterations per warm-started frame. cold_iters: per cold-started frame.
        tol: relative cost decrease below which a frame counts as converged.
        chunk_len: frames solved sequentially per chain (warm starts); chains run in parallel,
            ``problem.chain_batch`` per compiled call. Default: ``ceil(T / chain_batch)``.
        smooth_warm: pass the previous frame to constraints (Smoothness) in warm sweeps.
        time_limit_s: checked before every block of ``BLOCK_SWEEPS`` warm sweeps (after the
            cold sweep, which always runs); frames not reached are returned with ``timed_out``
            True and ``converged`` False, holding the last reached frame of their chain.
    """
    tree = problem.tree
    arrays, n_frames = _check_targets(problem, targets)
    q0 = np.asarray(q0, dtype=np.float64)
    require(q0.shape == (tree.nq,), "q0", f"must be ({tree.nq},), got {q0.shape}")
    if starts is not None:
        starts = np.asarray(starts, dtype=np.float64)
        require(
            starts.shape == (n_frames, tree.nq),
            "starts",
            f"must be ({n_frames}, {tree.nq}), got {starts.shape}",
        )
    batch = problem.chain_batch
    if chunk_len is None:
        chunk_len = -(-n_frames // batch)
    require(
        chunk_len >= 1 and max_iters >= 1 and cold_iters >= 1,
        "solve_clip",
        "chunk_len, max_iters and cold_iters must be >= 1",
    )
    n_chains = -(-n_frames // chunk_len)
    n_groups = -(-n_chains // batch)  # calls of `batch` chains side by side
    # Frame index grid (group, chain, sweep); padding repeats the last frame.
    grid = np.minimum(np.arange(n_groups * batch * chunk_len), n_frames - 1).reshape(
        n_groups, batch, chunk_len
    )
    q = np.empty(grid.shape + (tree.nq,))
    conv = np.zeros(grid.shape, bool)
    iters = np.zeros(grid.shape, np.int64)
    cost = np.full(grid.shape, np.nan)
    reached = np.zeros(grid.shape, bool)
    with jax.enable_x64(True):
        q_start = np.asarray(problem.project(jnp.asarray(problem.cold_start(q0))))
    weights = {
        COLD: np.zeros((BLOCK_SWEEPS, batch)),
        WARM: np.full((BLOCK_SWEEPS, batch), 1.0 if smooth_warm else 0.0),
    }
    carries = [(np.zeros((batch, tree.nq)),) * 2] * n_groups
    # The cold sweep (sweep 0) of every group, then blocks of warm sweeps, group after group.
    blocks = [(0, COLD)] + [(first, WARM) for first in range(1, chunk_len, BLOCK_SWEEPS)]
    compile_s = 0.0
    start = time.perf_counter()
    with jax.enable_x64(True):
        for first, kind in blocks:
            if (
                kind == WARM
                and time_limit_s is not None
                and time.perf_counter() - start - compile_s > time_limit_s
            ):
                break
            count = 1 if kind == COLD else min(BLOCK_SWEEPS, chunk_len - first)
            sweeps = np.minimum(first + np.arange(BLOCK_SWEEPS), chunk_len - 1)
            n_iters = np.where(np.arange(BLOCK_SWEEPS) < count, cold_iters if kind == COLD else max_iters, 0)
            for g in range(n_groups):
                frame = {name: arr[grid[g][:, sweeps].T] for name, arr in arrays.items()}
                if kind != COLD:
                    given = q_start
                elif starts is None:
                    given = problem.aligned_starts(q_start, {k: v[0] for k, v in frame.items()})
                else:
                    given = _own_starts(problem, starts[grid[g][:, 0]])
                q_given = np.broadcast_to(given, (BLOCK_SWEEPS, batch, tree.nq))
                carries[g], out, dt = problem._run_sweeps(
                    carries[g],
                    np.full(BLOCK_SWEEPS, kind),
                    frame,
                    q_given,
                    q_given,
                    weights[kind],
                    n_iters,
                    tol,
                )
                compile_s += dt
                done = sweeps[:count]
                for dest, value in zip((q, conv, iters, cost), out, strict=True):
                    dest[g][:, done] = np.swapaxes(value[:count], 0, 1)
                reached[g][:, done] = True
    # Keep the first occurrence of each real frame (padding repeats the last frame).
    first_of = np.unique(grid.reshape(-1), return_index=True)[1]
    q_out = q.reshape(-1, tree.nq)[first_of]
    conv_out, it_out, cost_out, reached_out = (a.reshape(-1)[first_of] for a in (conv, iters, cost, reached))
    # Unreached frames hold the last reached frame of their chain (frame 0 of a chain is reached).
    for f in np.flatnonzero(~reached_out):
        q_out[f] = q_out[f - 1]
    result = IKResult(
        q=q_out,
        converged=conv_out & reached_out,
        iterations=it_out,
        residual_m=np.zeros(0),
        max_error_m=np.zeros(0),
        cost=cost_out,
        timed_out=~reached_out,
        tendon_jump=np.zeros(n_frames, bool),
    )

    def resolve(frames, q_init, q_prev, prev_weight):
        return problem.resolve_frames(
            frames, arrays, q_init, q_prev, prev_weight, max_iters=max(max_iters, 50), tol=tol
        )

    for c in problem.constraints:
        result = c.finalize(problem, arrays, result, resolve)
    rms, worst, dt = _frame_errors(problem, arrays, result.q)
    compile_s += dt
    solve_s = time.perf_counter() - start - compile_s
    return dataclasses.replace(
        result, residual_m=rms, max_error_m=worst, solve_s=solve_s, compile_s=compile_s
    )


def _own_starts(problem: IKProblem, rows: np.ndarray) -> np.ndarray:
    """Cold starts (C, nq) from given poses ``rows`` (C, nq): each moved inside its bounds as
    :meth:`IKProblem.cold_start` does, onto the constraint manifold (``jax.enable_x64`` on)."""
    return np.stack([np.asarray(problem.project(jnp.asarray(problem.cold_start(r)))) for r in rows])


def frame_errors(
    problem: IKProblem, targets: Mapping[str, np.ndarray], qs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """RMS and max point error (T,) each, metres, of ``qs`` (T, nq) against ``targets``."""
    return _frame_errors(problem, targets, qs)[:2]


def _frame_errors(problem, targets, qs):
    """:func:`frame_errors` and the seconds spent compiling, in calls of ``ERRORS_BATCH``
    frames (one compiled shape for any clip length)."""
    qs = np.asarray(qs, dtype=np.float64)
    n = len(qs)
    errs, compile_s = [], 0.0
    with jax.enable_x64(True):
        for lo in range(0, n, ERRORS_BATCH):
            rows = np.minimum(lo + np.arange(ERRORS_BATCH), n - 1)
            args = (qs[rows], {k: np.asarray(v, np.float64)[rows] for k, v in targets.items()})
            fn, dt = problem._compiled_fn("errors", *args)
            compile_s += dt
            errs.append(np.asarray(fn(*args))[: n - lo])
    errs = np.concatenate(errs)
    valid = np.isfinite(errs)
    count = valid.sum(axis=1)
    sq = np.where(valid, errs, 0.0) ** 2
    rms = np.where(count > 0, np.sqrt(sq.sum(axis=1) / np.maximum(count, 1)), np.nan)
    worst = np.where(count > 0, np.where(valid, errs, -np.inf).max(axis=1), np.nan)
    return rms, worst, compile_s


def _check_targets(problem: IKProblem, targets: Mapping[str, np.ndarray]):
    terms = list(problem.tasks) + list(problem.constraints)
    known = {t.name for t in terms}
    unknown = set(targets) - known
    require(not unknown, "targets", f"no task or constraint named {sorted(unknown)}")
    arrays: dict[str, np.ndarray] = {}
    n_frames = None
    for term in terms:
        shape = term.target_shape(problem.tree)
        if term.name not in targets:
            require(
                not (shape is not None and term.target_required),
                "targets",
                f"missing targets for {term.name!r}",
            )
            continue
        require(shape is not None, term.name, "takes no per-frame targets")
        arr = np.asarray(targets[term.name], dtype=np.float64)
        require(
            arr.ndim == len(shape) + 1 and arr.shape[1:] == shape,
            term.name,
            f"targets must be (T, {', '.join(map(str, shape))}), got {arr.shape}",
        )
        if n_frames is None:
            n_frames = arr.shape[0]
        require(
            arr.shape[0] == n_frames, term.name, f"has {arr.shape[0]} frames, other targets have {n_frames}"
        )
        require(not np.any(np.isinf(arr)), term.name, "targets contain inf")
        arrays[term.name] = arr
    if n_frames is None or n_frames == 0:
        raise InputError("targets", "no frames to solve (give at least one per-frame target)")
    return arrays, n_frames


def default_constraints(model) -> list[Constraint]:
    """Joint limits and joint equalities of ``model`` (what every retarget should hold)."""
    return [JointLimits(model), JointEqualities(model)]
