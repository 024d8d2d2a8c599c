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
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from musclerl.errors import InputError

_PATH_PART = re.compile(r"\.(\w+)|\['([^']*)'\]|\[(\d+)\]")


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts from :func:`_flat`'s path keys (``.train.params['params']['w']`` ->
    ``{"train": {"params": {"params": {"w": ...}}}}``; attribute, key and index parts alike)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        parts = [next(g for g in m.groups() if g is not None) for m in _PATH_PART.finditer(key)]
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _to_host(tree: Any) -> Any:
    return jax.tree_util.tree_map(np.asarray, tree)


def _flat(tree: Any) -> dict[str, np.ndarray]:
    """The non-empty leaves of ``tree`` as host arrays keyed by their path. Orbax cannot write
    zero-size arrays (e.g. the empty fields of an ``mjx.Data`` on a model without them); the
    restore takes those from the template, whose shapes the config fixes."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): np.asarray(x) for path, x in leaves if np.size(x) > 0}


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
            args=ocp.args.Composite(carry=ocp.args.StandardSave(_flat(carry)), meta=ocp.args.JsonSave(meta)),
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

    def read_tree(self, update: int | None = None) -> dict[str, Any]:
        """Checkpoint ``update`` (default latest) without a template: the carry's non-empty
        leaves as nested dicts keyed by field and key names (e.g. ``["train"]["obs_stats"]``)."""
        step = self.latest_update() if update is None else update
        if step is None:
            raise InputError(self.directory, "no checkpoint to read")
        try:
            restored = self.manager.restore(step, args=ocp.args.Composite(carry=ocp.args.StandardRestore()))
        except (ValueError, KeyError, TypeError) as err:
            problem = f"unreadable checkpoint ({type(err).__name__})"
            raise InputError(self.directory / str(step), problem) from err
        return _nested({k: np.asarray(v) for k, v in restored["carry"].items()})

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
                args=ocp.args.Composite(
                    carry=ocp.args.StandardRestore(_flat(target)), meta=ocp.args.JsonRestore()
                ),
            )
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(
                self.directory / str(step),
                f"checkpoint does not match this config ({str(err).splitlines()[0][:200]})",
            ) from err
        saved = restored["carry"]
        leaves, treedef = jax.tree_util.tree_flatten_with_path(target)
        values = []
        for path, ref in leaves:
            key = jax.tree_util.keystr(path)
            if ref.size == 0:
                values.append(ref)
                continue
            value = np.asarray(saved[key], dtype=ref.dtype)
            if value.shape != ref.shape:
                raise InputError(
                    self.directory / str(step),
                    f"checkpoint does not match this config ({key}: {value.shape} != {ref.shape})",
                )
            values.append(value)
        carry = jax.tree_util.tree_unflatten(treedef, values)
        return carry, dict(restored["meta"])

    def close(self) -> None:
        self.manager.close()
