"""Errors that reach the user.

Every failure caused by bad input (a malformed file, an unknown name, wrong units, NaNs, a model
that does not fit the data) is raised as :class:`InputError`. Its message is one line that names
the file (or option) and the problem; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import os


class InputError(Exception):
    """Bad user input. ``str(err)`` is ``"<source>: <problem>"`` on one line."""

    def __init__(self, source: str | os.PathLike, problem: str):
        self.source = str(source)
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{self.source}: {self.problem}")


def require(condition: bool, source: str | os.PathLike, problem: str) -> None:
    """Raise :class:`InputError` unless ``condition`` holds."""
    if not condition:
        raise InputError(source, problem)
