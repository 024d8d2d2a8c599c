"""Evaluation: rollouts, inverse dynamics / static optimisation, metrics, plots, reports."""
