"""Reading YAML configuration files with one-line errors.

:func:`load_yaml` is the single entry point every command uses to read a YAML file; merging
defaults and ``key=value`` overrides lives with the training code.
"""

from __future__ import annotations

import os

import yaml

from musclerl.errors import InputError
from musclerl.fileio import read_text


def load_yaml(path: str | os.PathLike) -> dict:
    """Parse ``path`` as YAML and return its top-level mapping.

    Missing, empty or binary files, malformed YAML (the message gives the line and column) and a
    top level that is not a mapping (a list, a scalar) raise :class:`InputError` naming the file.
    """
    text = read_text(path, "YAML file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise InputError(path, f"malformed YAML{where}: {problem}") from None
    if data is None:
        raise InputError(path, "YAML file has no content (only comments or blank lines)")
    if not isinstance(data, dict):
        raise InputError(
            path, f"the top level must be a mapping of keys to values, got a {type(data).__name__}"
        )
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise InputError(path, f"top-level keys must be strings, got {bad_keys[0]!r}")
    return data
