"""Bundled data (models, motions, policies), shipped in the wheel as ``musclerl.assets``."""
