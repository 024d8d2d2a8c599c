"""Data-parallel training over two (virtual CPU) devices equals one device with the same batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, jax, numpy as np
    from musclerl.rl.config import load_config
    from musclerl.rl.ppo import data_mesh, make_train
    from musclerl.rl.toy_env import ToyTrackingEnv

    assert jax.device_count() == 2, jax.devices()
    cfg = load_config(None, ["ppo.num_envs=16", "ppo.rollout_steps=16", "ppo.num_minibatches=2",
                             "ppo.update_epochs=2", "network.policy_hidden=[32]",
                             "network.value_hidden=[32]"])
    out = {}
    for name, mesh in (("one", None), ("two", data_mesh())):
        _, init, step, _ = make_train(cfg, ToyTrackingEnv(num_envs=16), 4, mesh)
        carry = jax.jit(init)(jax.random.PRNGKey(0))
        step = jax.jit(step)
        for _ in range(4):
            carry, metrics = step(carry)
        leaves = jax.tree_util.tree_leaves(carry.train.params)
        out[name] = {"params": [np.asarray(x).ravel().tolist() for x in leaves],
                     "value_loss": float(metrics["loss/value"]),
                     "obs_devices": len(carry.env_state.obs.sharding.device_set),
                     "shard_rows": [s.data.shape[0] for s in carry.env_state.obs.addressable_shards]}
    print("RESULT " + json.dumps(out))
""")


def test_two_devices_match_one_device():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(s for s in proc.stdout.splitlines() if s.startswith("RESULT "))
    out = json.loads(line[len("RESULT ") :])
    # the two-device run really splits the 16 envs 8 + 8 over both devices
    assert out["two"]["obs_devices"] == 2 and out["two"]["shard_rows"] == [8, 8]
    assert out["one"]["obs_devices"] == 1
    for a, b in zip(out["one"]["params"], out["two"]["params"], strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
    loss_one, loss_two = out["one"]["value_loss"], out["two"]["value_loss"]
    assert abs(loss_one - loss_two) < 1e-4 * max(1.0, abs(loss_one))
