"""``musclerl bench env`` prints the documented JSON; bad input exits 2."""

from __future__ import annotations

import json
import subprocess
import sys

from musclerl.cli import main


def test_bench_env_cpu_json(capsys):
    assert (
        main(
            [
                "bench",
                "env",
                "--model",
                "tiny",
                "--num-envs",
                "4",
                "--threads",
                "1",
                "--steps",
                "10",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    for key in ("env_steps_per_s", "raw_steps_per_s", "ratio", "raw_loop_mj_steps_per_s"):
        assert result[key] > 0
    assert result["ratio"] == result["env_steps_per_s"] / result["raw_steps_per_s"]
    assert result["env_mj_steps_per_s"] == result["env_steps_per_s"] * result["substeps"]


def test_bench_env_rejects_bad_counts(capsys):
    assert main(["bench", "env", "--model", "tiny", "--num-envs", "0", "--json"]) == 2
    assert "--num-envs" in capsys.readouterr().err


def test_importing_the_command_and_package_stays_light():
    code = (
        "import sys, musclerl.envs, musclerl.envs.bench; "
        "print([m for m in ('jax', 'flax', 'mujoco.mjx') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]"
