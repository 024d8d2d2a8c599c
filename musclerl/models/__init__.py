"""Models: registry, MJCF introspection, marker sets, scaling."""

from musclerl.models.registry import DEFAULT_MODEL, REGISTRY, compile_spec, load_model, load_spec, model_names

__all__ = ["DEFAULT_MODEL", "REGISTRY", "compile_spec", "load_model", "load_spec", "model_names"]
