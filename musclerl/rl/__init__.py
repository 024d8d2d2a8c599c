"""PPO trainer, networks, checkpoints, policy export, deterministic rollouts (:mod:`.rollout`)."""
