"""Tracking environments: one interface, MuJoCo C (cpu) and MJX backends, gymnasium wrapper."""
