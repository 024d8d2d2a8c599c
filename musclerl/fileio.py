"""Small file helpers shared by every reader and writer: input checks, YAML, atomic outputs.

A failed command must leave no partial output, so writers produce a temporary file next to the
target and rename it into place only when everything succeeded; and every command checks its
output paths with :func:`check_outputs` before it starts any work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
import yaml

from musclerl.errors import InputError


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success, delete on error.

    Works for files and folders: whatever the body creates at the temporary path is moved.
    The temporary name keeps the suffix, so libraries that dispatch on it still work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")
    try:
        yield tmp
        if path.is_dir() and tmp.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


PathLike = str | os.PathLike


def check_outputs(
    files: Mapping[str, PathLike | None] | None = None,
    folders: Mapping[str, PathLike | None] | None = None,
    inputs: Iterable[PathLike | None] = (),
) -> None:
    """Refuse, before any work, output paths a command could not or must not write.

    ``files`` and ``folders`` map an option name (``--out``) to the path it names (None: not
    given); ``inputs`` are the files and folders the command reads. Refused, with one line naming
    the output: an output that is an input (it would be overwritten) or a folder that holds an
    input (``evaluate`` replaces its folder; others would mix outputs with inputs); a file output
    that is an existing folder, a folder output that is an existing file; two options naming the
    same path; a path below an existing file; a place this process cannot create files in (the
    nearest existing folder is probed with an unnamed temporary file, so nothing is left there).
    """
    outputs = [(opt, Path(p), "file") for opt, p in (files or {}).items() if p is not None]
    outputs += [(opt, Path(p), "folder") for opt, p in (folders or {}).items() if p is not None]
    sources = [Path(p).resolve() for p in inputs if p is not None and Path(p).exists()]
    seen: dict[Path, str] = {}
    for option, path, kind in outputs:
        resolved = path.resolve()
        if resolved in seen:
            raise InputError(path, f"{option} names the same path as {seen[resolved]}")
        seen[resolved] = option
        if resolved in sources:
            raise InputError(path, f"{option} is also an input; writing it would destroy the input")
        if kind == "folder":
            inside = next((s for s in sources if resolved in s.parents), None)
            if inside is not None:
                raise InputError(path, f"{option} folder holds the input {inside}; choose another folder")
            if path.exists() and not path.is_dir():
                raise InputError(path, f"{option} must be a folder, but a file of that name exists")
        elif path.is_dir():
            raise InputError(path, f"{option} must be a file path, but it is an existing folder")
        _check_writable(path, option)


def _check_writable(path: Path, option: str) -> None:
    """The nearest existing ancestor of ``path`` must be a folder this process can create files in."""
    ancestor = path.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(path, f"{option}: {ancestor} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as err:
        raise InputError(
            path, f"{option}: cannot create files in {ancestor} ({err.strerror or type(err).__name__})"
        ) from None


def existing_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return ``Path(path)`` if it is a non-empty file, else raise :class:`InputError`."""
    p = Path(path)
    if not p.exists():
        raise InputError(p, f"{what} not found")
    if not p.is_file():
        raise InputError(p, f"{what} is not a regular file")
    if p.stat().st_size == 0:
        raise InputError(p, f"{what} is empty")
    return p


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """Read a text file as UTF-8 (latin-1 fallback), without a byte-order mark; missing, empty,
    blank or binary (NUL bytes, e.g. UTF-16) files raise InputError."""
    p = existing_file(path, what)
    raw = p.read_bytes()
    if b"\x00" in raw[:4096]:
        raise InputError(p, f"{what} is binary (or UTF-16), expected UTF-8 text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError(p, f"{what} holds only whitespace")
    return text


def read_xml(path: str | os.PathLike, what: str = "file") -> ET.Element:
    """Parse an XML text file (read as by :func:`read_text`); bad XML raises InputError."""
    text = read_text(path, what)
    try:
        return ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as err:
        raise InputError(path, f"not valid XML ({err})") from err


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file (no pickles) by key; missing/unreadable files raise InputError."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as err:
        raise InputError(path, f"not a readable .npz file ({type(err).__name__})") from err


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
