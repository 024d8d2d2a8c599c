"""Orbax checkpoints of the whole training carry: learner state, environment state, episode sums.

``DIR/checkpoints/<update>/`` holds ``carry`` (every array of :class:`musclerl.rl.ppo.Carry`:
parameters, optimiser state, observation statistics, PRNG key, environment state) and ``meta``
(JSON: the full config, update count, env steps). Orbax writes each checkpoint into a temporary
folder and renames it when complete, and only finalised checkpoints are listed, so a kill at any
moment leaves the previous checkpoint intact. The last ``keep`` checkpoints are kept.

Because the carry contains the environment state and the PRNG key, resuming continues exactly
where the checkpoint was taken: on the CPU the resumed run is bit-identical to an uninterrupted one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from musclerl.errors import InputError


def _to_host(tree: Any) -> Any:
    return jax.tree_util.tree_map(np.asarray, tree)


class Checkpointer:
    """Save/restore :class:`musclerl.rl.ppo.Carry` pytrees under ``directory``."""

    def __init__(self, directory: str | os.PathLike, keep: int):
        self.directory = Path(directory).resolve()
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, create=True, enable_async_checkpointing=False
        )
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_update(self) -> int | None:
        return self.manager.latest_step()

    def save(self, update: int, carry: Any, meta: dict[str, Any]) -> Path:
        """Write checkpoint ``update`` (blocking) and return its folder."""
        self.manager.save(
            update,
            args=ocp.args.Composite(
                carry=ocp.args.StandardSave(_to_host(carry)), meta=ocp.args.JsonSave(meta)
            ),
            force=True,
        )
        self.manager.wait_until_finished()
        return self.directory / str(update)

    def read_meta(self, update: int | None = None) -> dict[str, Any]:
        """The JSON part (config, update, env steps) of checkpoint ``update`` (default latest)."""
        step = self.latest_update() if update is None else update
        if step is None:
            raise InputError(self.directory, "no checkpoint to resume from")
        restored = self.manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
        return dict(restored["meta"])

    def restore(self, like: Any, update: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Restore checkpoint ``update`` (default latest) into the structure of ``like``.

        Raises :class:`InputError` when there is no checkpoint or it does not fit ``like``
        (e.g. a different network size or number of environments).
        """
        step = self.latest_update() if update is None else update
        if step is None:
            raise InputError(self.directory, "no checkpoint to resume from")
        target = _to_host(like)
        try:
            restored = self.manager.restore(
                step,
                args=ocp.args.Composite(carry=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()),
            )
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(
                self.directory / str(step),
                f"checkpoint does not match this config ({str(err).splitlines()[0][:200]})",
            ) from err
        carry = jax.tree_util.tree_map(
            lambda ref, x: np.asarray(x, dtype=np.asarray(ref).dtype), target, restored["carry"]
        )
        return carry, dict(restored["meta"])

    def close(self) -> None:
        self.manager.close()
