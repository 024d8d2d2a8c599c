"""Retargeting: lean kinematic tree, IK tasks and constraints, terrain, quality reports."""
