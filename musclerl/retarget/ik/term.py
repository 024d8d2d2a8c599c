"""One interface for everything that adds least-squares rows to the IK: tasks and constraints.

A :class:`Term` is looked up by ``name`` in the per-frame targets and gives, per frame,

``target_shape(tree) -> shape | None``
    The shape of one frame's slice of ``targets[name]`` (None: the term takes no targets);
    ``target_required`` says whether :func:`~musclerl.retarget.ik.solver.solve_clip` must be
    given them.
``residual(tree, q, target, prev) -> (k,) | None``  (JAX)
    Weighted rows added to the cost ``0.5 * |r|^2``, with ``q`` the full qpos (nq,), ``target``
    this frame's slice (None when not given) and ``prev`` the previous frame's solution
    (:class:`Previous`, weight 0 when there is none). None: no rows.
``residual_jacobian(tree, q, target, prev, dq_dx) -> ((k,), (k, n)) | None``  (JAX)
    Optional closed form: the rows and their Jacobian w.r.t. the solver's n variables, given
    ``dq_dx`` (nq, n). None (the default) makes the solver differentiate :meth:`Term.residual`
    with ``jax.jacfwd``.

Tasks (:mod:`musclerl.retarget.ik.tasks`, what is fitted) add point errors for the result;
constraints (:mod:`musclerl.retarget.ik.constraints`, what is held) add bounds, projections and a
host pass over the solved clip. The solver treats both through this one interface.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from musclerl.retarget.ik.kinematics import KinematicTree


class Previous(NamedTuple):
    """The previous frame's solution ``q`` (nq,) and a scalar ``weight`` (0 = no previous frame)."""

    q: jnp.ndarray
    weight: jnp.ndarray


class Term:
    """Base of tasks and constraints: every hook returns "nothing" by default (see the module
    docstring)."""

    name: str = "term"
    target_required: bool = False

    def target_shape(self, tree: KinematicTree) -> tuple[int, ...] | None:
        return None

    def residual(
        self, tree: KinematicTree, q: jnp.ndarray, target: jnp.ndarray | None, prev: Previous
    ) -> jnp.ndarray | None:
        return None

    def residual_jacobian(
        self,
        tree: KinematicTree,
        q: jnp.ndarray,
        target: jnp.ndarray | None,
        prev: Previous,
        dq_dx: jnp.ndarray,
    ) -> tuple[jnp.ndarray, jnp.ndarray] | None:
        return None
