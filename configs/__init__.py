"""Bundled training configs, shipped in the wheel as ``musclerl.configs``."""
