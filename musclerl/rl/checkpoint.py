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


def _parts(path: tuple) -> tuple[str, ...]:
    """A jax key path as its parts' names: field, dict key or sequence index, as strings."""
    tu = jax.tree_util
    names = {tu.GetAttrKey: "name", tu.DictKey: "key", tu.SequenceKey: "idx", tu.FlattenedIndexKey: "key"}
    return tuple(str(getattr(entry, names[type(entry)])) for entry in path)


def _key_parts(key: str) -> tuple[str, ...]:
    """The parts of a :func:`jax.tree_util.keystr` string (``.train.params['w']`` -> train, params, w)."""
    return tuple(next(g for g in m.groups() if g is not None) for m in _PATH_PART.finditer(key))


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

    def _read_leaves(self, step: int, meta: bool = False) -> tuple[dict[tuple[str, ...], np.ndarray], Any]:
        """Checkpoint ``step``'s arrays keyed by their path's parts (field, key or index names),
        read without a template: the flat format of :func:`_flat` and the nested one of earlier
        checkpoints alike. Returns (leaves, meta or None)."""
        args = {"carry": ocp.args.StandardRestore()}
        if meta:
            args["meta"] = ocp.args.JsonRestore()
        try:
            restored = self.manager.restore(step, args=ocp.args.Composite(**args))
        except (ValueError, KeyError, TypeError) as err:
            problem = f"unreadable checkpoint ({type(err).__name__}: {str(err).splitlines()[0][:160]})"
            raise InputError(self.directory / str(step), problem) from err
        leaves = {}
        for path, value in jax.tree_util.tree_flatten_with_path(restored["carry"])[0]:
            parts = _parts(path)
            if len(parts) == 1 and parts[0][:1] in (".", "["):  # the flat format: one key per leaf
                parts = _key_parts(parts[0])
            leaves[parts] = np.asarray(value)
        return leaves, (dict(restored["meta"]) if meta else None)

    def read_tree(self, update: int | None = None) -> dict[str, Any]:
        """Checkpoint ``update`` (default latest) without a template: the carry's non-empty
        leaves as nested dicts keyed by field and key names (e.g. ``["train"]["obs_stats"]``)."""
        step = self.latest_update() if update is None else update
        if step is None:
            raise InputError(self.directory, "no checkpoint to read")
        leaves, _ = self._read_leaves(step)
        out: dict[str, Any] = {}
        for parts, value in leaves.items():
            node = out
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return out

    def restore(self, like: Any, update: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Restore checkpoint ``update`` (default latest) into the structure of ``like``.

        Raises :class:`InputError` when there is no checkpoint or it does not fit ``like``
        (e.g. a different network size or number of environments).
        """
        step = self.latest_update() if update is None else update
        if step is None:
            raise InputError(self.directory, "no checkpoint to resume from")
        saved, meta = self._read_leaves(step, meta=True)
        leaves, treedef = jax.tree_util.tree_flatten_with_path(_to_host(like))
        values = []
        for path, ref in leaves:
            if ref.size == 0:  # not stored (see _flat)
                values.append(ref)
                continue
            parts = _parts(path)
            value = saved.get(parts)
            if value is None or value.shape != ref.shape:
                found = "missing" if value is None else f"{value.shape} != {ref.shape}"
                raise InputError(
                    self.directory / str(step),
                    f"checkpoint does not match this config ({'/'.join(parts)}: {found})",
                )
            values.append(value.astype(ref.dtype))
        if len(saved) != sum(ref.size > 0 for _, ref in leaves):
            raise InputError(
                self.directory / str(step), "checkpoint does not match this config (other arrays in it)"
            )
        return jax.tree_util.tree_unflatten(treedef, values), meta

    def close(self) -> None:
        self.manager.close()
