"""One loader for the project's configuration trees: nested dataclasses built from YAML mappings.

A config is a tree of dataclasses whose fields all have defaults (``EnvConfig``, ``TrainConfig``),
so a YAML file lists only what it changes. :func:`from_mapping` builds the tree from a mapping:
missing keys keep their defaults, unknown keys and values of the wrong type raise a one-line
:class:`InputError` naming the dotted key and the file (or ``key=value`` override) that set it.
Range checks belong to each tree's own ``validate``.

Types are read from the field annotations: a nested dataclass (a section), ``bool``, ``int``,
``float`` (ints are accepted; strings that read as numbers too, since YAML 1.1 reads ``3e-4`` as
text), ``str``, ``list[X]``, ``dict[str, float]`` (merged over the default's entries), ``X | None``
and ``Any`` (free-form: a motion set given as a file name or a mapping).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from musclerl.errors import InputError

#: Maps a dotted key (``ppo.num_envs``) to the file or override that set it last.
Origins = Mapping[str, str]


def source_of(dotted: str, origins: Origins | None, default: str) -> str:
    """The file or override that set ``dotted`` or the nearest section above it (else ``default``)."""
    parts = dotted.split(".") if dotted else []
    for n in range(len(parts), 0, -1):
        found = (origins or {}).get(".".join(parts[:n]))
        if found is not None:
            return found
    return default


def from_mapping(cls: type, data: Any, source: str, origins: Origins | None = None, prefix: str = "") -> Any:
    """The dataclass ``cls`` built from ``data`` (module docstring); ``prefix`` is the dotted key of
    ``data`` in a larger tree (``"env."``), used in messages and to look up ``origins``."""
    where = functools.partial(source_of, origins=origins, default=source)
    if not isinstance(data, Mapping):
        raise InputError(
            where(prefix.rstrip(".")),
            f"'{prefix.rstrip('.') or cls.__name__}' must be a mapping, got {type(data).__name__}",
        )
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            raise InputError(
                where(f"{prefix}{key}"),
                f"unknown config key '{prefix}{key}' ({cls.__name__} keys: {sorted(fields)})",
            )
    hints = _hints(cls)
    kwargs = {
        name: _value(hints[name], value, _default(fields[name]), f"{prefix}{name}", source, origins, where)
        for name, value in data.items()
    }
    return cls(**kwargs)


def flat_items(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every entry of a nested mapping, sections included (``ppo`` and
    ``ppo.num_envs``); a leaf's value is itself, a section's is its mapping."""
    for key, value in tree.items():
        yield f"{prefix}{key}", value
        if isinstance(value, Mapping):
            yield from flat_items(value, f"{prefix}{key}.")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _value(
    kind: Any,
    value: Any,
    default: Any,
    dotted: str,
    source: str,
    origins: Origins | None,
    where: Callable[[str], str],
) -> Any:
    """``value`` checked (and numbers converted) against the annotation ``kind``."""

    def fail(expected: str) -> InputError:
        return InputError(where(dotted), f"{dotted} must be {expected}, got {value!r}")

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (kind,) = [a for a in args if a is not type(None)]
        origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if dataclasses.is_dataclass(kind):
        return from_mapping(kind, value, source, origins, f"{dotted}.")
    if kind is bool:
        if not isinstance(value, bool):
            raise fail("true or false")
        return value
    if kind is int:
        if not (isinstance(value, int) and not isinstance(value, bool)):
            raise fail("an integer")
        return value
    if kind is float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise fail("a number") from None
        if not _is_number(value):
            raise fail("a number")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise fail("text")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise fail("a list")
        return [
            _value(args[0], v, None, f"{dotted}[{i}]", source, origins, where) for i, v in enumerate(value)
        ]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise fail("a mapping")
        entries = {
            str(k): _value(args[1], v, None, f"{dotted}.{k}", source, origins, where)
            for k, v in value.items()
        }
        return {**(default or {}), **entries}
    raise TypeError(f"{dotted}: no rule for the annotation {kind!r}")  # a config class's own bug
