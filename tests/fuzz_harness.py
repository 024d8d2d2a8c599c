"""The bad-input contract, checked on one CLI call: shared by the fuzz tests.

:func:`check_call` runs ``musclerl.cli.main(argv)`` in-process with the working directory set to an
empty folder and checks, whatever the outcome:

- no exception escapes ``main`` (an escaping exception is a traceback for the user);
- every input (file or folder) hashes the same afterwards;
- nothing appears outside the requested outputs (listings of the working folder and the case
  folder before and after), and MuJoCo wrote no ``MUJOCO_LOG.TXT``;

and by the expected outcome:

- ``refuse``: exit code 2, stdout empty, the last stderr line is the only ``musclerl: error:``
  line and names the file (``names``), every other stderr line is a one-line
  ``musclerl: warning:``, and no requested output exists;
- ``accept``: exit code 0 and no ``musclerl: error:`` line;
- ``either``: one of the two (random truncations may cut a file at a row boundary).
"""

from __future__ import annotations

import dataclasses
import hashlib
import traceback
from collections.abc import Sequence
from pathlib import Path

from musclerl.cli import main

ERROR_PREFIX = "musclerl: error: "
WARNING_PREFIX = "musclerl: warning: "


def digest(path: Path) -> str:
    """sha256 of a file, or of a folder's relative names and contents; 'absent' when missing."""
    if not path.exists():
        return "absent"
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def listing(*folders: Path) -> list[str]:
    return sorted(str(p) for folder in folders for p in folder.rglob("*"))


@dataclasses.dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_call(
    argv: Sequence[str],
    *,
    expect: str,
    names: str | Path | tuple[str | Path, ...],
    inputs: Sequence[Path],
    outputs: Sequence[Path] = (),
    folder: Path,
    cwd: Path,
    capsys,
    monkeypatch,
) -> Outcome:
    """Run ``main(argv)`` from ``cwd`` and check the contract above; ``problems`` lists breaches."""
    assert expect in ("refuse", "accept", "either")
    monkeypatch.chdir(cwd)
    hashes = {p: digest(p) for p in inputs}
    before = listing(folder, cwd)
    capsys.readouterr()
    problems: list[str] = []
    try:
        code: int | None = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception:  # noqa: BLE001 - any escape is a traceback for the user
        code = None
        problems.append("traceback: " + traceback.format_exc().strip().splitlines()[-1])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    refused = code == 2
    if expect == "refuse" and not refused and code is not None:
        problems.append(f"accepted (exit {code}), expected exit 2")
    if expect == "accept" and code not in (0, None):
        problems.append(f"refused (exit {code}): {errors[-1] if errors else captured.err[-300:]}")
    if refused:
        if len(errors) != 1:
            problems.append(f"{len(errors)} 'musclerl: error:' lines: {captured.err[-500:]!r}")
        elif lines[-1] != errors[0]:
            problems.append(f"the error is not the last stderr line: {lines[-1]!r}")
        elif not any(str(n) in errors[0] for n in (names if isinstance(names, tuple) else (names,))):
            problems.append(f"the error does not name {names}: {errors[0]!r}")
        others = [line for line in lines if not line.startswith((ERROR_PREFIX, WARNING_PREFIX))]
        if others:
            problems.append(f"other stderr lines: {others[:3]!r}")
        if captured.out.strip():
            problems.append(f"stdout not empty: {captured.out[:200]!r}")
        left = [str(p) for p in outputs if p.exists() and str(p) not in before]
        if left:
            problems.append(f"partial outputs left: {left}")
    if "Traceback" in captured.err:
        problems.append("a traceback on stderr")
    changed = [str(p) for p, h in hashes.items() if digest(p) != h]
    if changed:
        problems.append(f"inputs changed: {changed}")
    allowed = {str(p) for p in outputs} if code == 0 else set()
    new = [p for p in listing(folder, cwd) if p not in before]
    stray = [p for p in new if not any(p == a or p.startswith(a + "/") for a in allowed)]
    if stray:
        problems.append(f"files written outside the requested outputs: {stray[:4]}")
    return Outcome(code, captured.out, captured.err, problems)
