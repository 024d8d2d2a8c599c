"""Evaluation: metrics against inverse dynamics / static optimisation / EMG, plots, reports
(the rollout recorder is :mod:`musclerl.rl.rollout`, the commands :mod:`musclerl.cli`)."""
