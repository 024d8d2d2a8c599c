"""musclerl: muscle-actuated motion imitation on MuJoCo.

Pipeline: motion files -> retargeting (IK) -> Trajectory -> tracking environments (MuJoCo C / MJX)
-> PPO -> evaluation against inverse dynamics and EMG.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_policy"]


def load_policy(path):
    """Load an exported policy folder (params + observation normaliser + config).

    Returns a :class:`musclerl.rl.export.Policy`, callable on observations ``(..., obs_dim)``.
    """
    from musclerl.rl.export import load_policy as _load

    return _load(path)
