"""Model metadata extraction: the BaseModel spec fields OME records from a model's
``model_index.json`` or ``config.json``, as a plain dict with OME's camelCase keys."""

from policyd.metadata.record import inspect_config, inspect_model_index, inspect_path

__all__ = ["inspect_config", "inspect_model_index", "inspect_path"]
