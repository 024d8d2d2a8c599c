"""One compiled IK problem per model and term set, solved for every pass and clip that fits it.

Both retargeting pipelines (markers and keypoints) fit a whole clip the same way: sites on the
model's bodies follow per-frame targets while the clip stays feasible and smooth. What they share
is here:

* :class:`ClipIK` builds the :class:`~musclerl.retarget.ik.problem.IKProblem` once (the held
  constraints of every retarget — joint limits, joint equalities, smoothness, tendon continuity
  — plus the pipeline's tasks and extra constraints), solves clips with
  :func:`~musclerl.retarget.ik.solver.solve_clip` (warm-start chains; its compiled sweeps are
  traced once per problem and target layout) and sums the cost of the solves in ``stats``;
* :func:`site_tree` is the lean kinematic tree of the bodies carrying the fitted sites;
* :func:`start_pose` is the cold start of a clip: the free root placed rigidly on the fullest
  frame's targets;
* :func:`cached` keeps built solvers in a caller's dict, so later passes, trials and motions with
  the same key reuse the compiled problem.

What each pipeline keeps for itself is which tasks it adds and how its targets are laid out
(marker positions with per-frame weights; keypoints with their sites' local points, segment
orientations and sole anchors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import mujoco
import numpy as np

from musclerl.retarget.ik.constraints import (
    Constraint,
    JointEqualities,
    JointLimits,
    Smoothness,
    TendonContinuity,
)
from musclerl.retarget.ik.kinematics import KinematicTree
from musclerl.retarget.ik.problem import align_root
from musclerl.retarget.ik.solver import IKProblem, IKResult, solve_clip
from musclerl.retarget.ik.tasks import Task

#: Compiled clip solvers a :func:`cached` dict keeps (least recently used dropped first): a
#: folder of clips with their own body shapes must not pile them up.
CLIPS_KEPT = 4


def site_tree(
    model: mujoco.MjModel, site_ids: Sequence[int], extra_bodies: Iterable[str] = ()
) -> KinematicTree:
    """The tree of the bodies on the paths to the bodies of ``site_ids`` and ``extra_bodies``."""
    return KinematicTree.from_model(model, keep_bodies=[*site_bodies(model, site_ids), *extra_bodies])


def site_bodies(model: mujoco.MjModel, site_ids: Sequence[int]) -> list[str]:
    """Name of the body carrying each site of ``site_ids`` (same order)."""
    return [model.body(int(model.site_bodyid[i])).name for i in site_ids]


def start_pose(model: mujoco.MjModel, sites: list[str], targets_m: np.ndarray) -> np.ndarray:
    """Cold start (nq,) of a clip: ``model.qpos0`` with the free root rigidly fitted to the
    targets (T, M, 3) of ``sites`` (world metres, NaN = missing) in the frame with the most
    present targets (the first such frame)."""
    first = int(np.argmax(np.sum(~np.isnan(targets_m[..., 0]), axis=1)))
    return align_root(model, np.array(model.qpos0), sites, targets_m[first])


class ClipIK:
    """``tasks`` on ``tree`` with the constraints every retarget holds (joint limits, joint
    equalities, smoothness, tendon continuity: muscle-path jumps between frames detected and
    re-solved) and ``constraints`` of the pipeline's own, as one
    :class:`~musclerl.retarget.ik.problem.IKProblem` that compiles once.

    ``max_iters`` (LM iterations per warm-started frame) and ``tol`` (relative cost decrease of
    a converged frame) are passed to every :func:`~musclerl.retarget.ik.solver.solve_clip`.
    ``stats`` sums ``compile_s``, ``solve_s`` and ``tendon_jumps_detected`` over the solves since
    :meth:`reset_stats` and keeps ``tendon_jumps_left``, the frames still jumping after the last.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        tree: KinematicTree,
        tasks: Sequence[Task],
        constraints: Sequence[Constraint] = (),
        *,
        max_iters: int = 20,
        tol: float = 1e-4,
    ):
        held = [JointLimits(model), JointEqualities(model), Smoothness(), TendonContinuity(model)]
        self.problem = IKProblem(tree, tasks, [*held, *constraints])
        self.max_iters, self.tol = max_iters, tol
        self.reset_stats()

    def reset_stats(self) -> None:
        self.stats = {"compile_s": 0.0, "solve_s": 0.0, "tendon_jumps_detected": 0, "tendon_jumps_left": 0}

    def solve(
        self, targets: Mapping[str, np.ndarray], q0: np.ndarray, starts: np.ndarray | None = None
    ) -> IKResult:
        """Every frame of one clip: ``targets`` term name -> (T, ...) (see each term), ``q0``
        (nq,) the cold start (:func:`start_pose`), or ``starts`` (T, nq) a pose per frame (see
        :func:`~musclerl.retarget.ik.solver.solve_clip`). Adds the solve to ``stats``."""
        result = solve_clip(self.problem, targets, q0, max_iters=self.max_iters, tol=self.tol, starts=starts)
        self.stats["compile_s"] += result.compile_s
        self.stats["solve_s"] += result.solve_s
        self.stats["tendon_jumps_detected"] += int(result.tendon_jumps_detected)
        self.stats["tendon_jumps_left"] = int(result.tendon_jump.sum())
        return result


def cached(cache: dict, key: tuple, build: Callable[[], ClipIK], kept: int = CLIPS_KEPT) -> ClipIK:
    """The :class:`ClipIK` of ``key`` in ``cache`` (built by ``build`` when absent), marked most
    recently used; the least recently used beyond ``kept`` are dropped."""
    ik = cache.pop(key, None) or build()
    cache[key] = ik  # most recently used last
    while len(cache) > kept:
        cache.pop(next(iter(cache)))
    return ik
