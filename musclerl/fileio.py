"""Small file helpers shared by every writer: atomic outputs and input checks.

A failed command must leave no partial output, so writers produce a temporary file next to the
target and rename it into place only when everything succeeded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import numpy as np

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
    """Read a text file as UTF-8 (latin-1 fallback); missing/empty/binary files raise InputError."""
    p = existing_file(path, what)
    raw = p.read_bytes()
    if b"\x00" in raw[:4096]:
        raise InputError(p, f"{what} is binary, expected text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


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
