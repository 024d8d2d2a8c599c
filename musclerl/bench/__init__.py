"""The ``musclerl bench`` commands (one module each: ik, so, accuracy, env, train, learn, gpu; env_steps
holds the env stepping measurements) and the output they share."""

from __future__ import annotations

import json


def print_result(result: dict, as_json: bool, key_width: int) -> None:
    """``result`` as one JSON object, or one ``key value`` line per entry (keys padded to
    ``key_width``, floats to 4 significant digits)."""
    if as_json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        text = f"{value:.4g}" if isinstance(value, float) else f"{value}"
        print(f"{key:{key_width}s} {text}")
