"""Who and what a trial file is: the subject, kind and description a dataset's ``MANIFEST.tsv``
gives for it, else what its name says.

A ``MANIFEST.tsv`` beside the files (tab-separated, a header, one row per file; the CMU walks of
``../shared/data/cmu_walks/mb/`` have one) names each file in its ``file`` column and may give
``subject``, ``trial``, ``kind`` (walk, run, other) and ``description``. Without a manifest, or
for a file it does not list, a name of CMU's pattern ``SS_TT`` (``16_21.bvh``: subject 16, trial
21) gives the subject and trial; any other name gives no subject (None).
"""

from __future__ import annotations

import csv
import functools
import io
import re
from pathlib import Path

MANIFEST_NAME = "MANIFEST.tsv"
MANIFEST_FIELDS = ("subject", "trial", "kind", "description")
CMU_NAME = re.compile(r"^(\d+)_(\d+)$")


@functools.lru_cache(maxsize=32)
def _manifest(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / MANIFEST_NAME
    if not path.is_file():
        return {}
    rows = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8", errors="replace")), delimiter="\t")
    return {row["file"].strip(): row for row in rows if row.get("file")}


def trial_info(path: str | Path) -> dict:
    """``{"subject", "trial", "kind", "description", "from"}`` of a trial file (module docstring);
    ``from`` is ``"manifest"``, ``"file name"`` or None; fields nobody gives are None."""
    path = Path(path)
    info: dict = dict.fromkeys(MANIFEST_FIELDS)
    row = _manifest(path.parent.resolve()).get(path.name)
    if row is not None:
        info.update({k: (row.get(k) or "").strip() or None for k in MANIFEST_FIELDS})
        return {**info, "from": "manifest"}
    match = CMU_NAME.match(path.stem)
    if match:
        return {**info, "subject": match.group(1), "trial": match.group(2), "from": "file name"}
    return {**info, "from": None}
