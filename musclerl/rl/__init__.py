"""PPO trainer, networks, checkpoints, policy export."""
