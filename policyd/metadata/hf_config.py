"""What OME records from a transformers ``config.json``.

``modelArchitecture`` is the first class in ``architectures``, ``modelFormat`` safetensors 1.0.0,
``modelFramework`` transformers at ``transformers_version``, ``quantization`` the declared
``quantization_config.quant_method`` as written (``fp8``, ``awq``, ``compressed-tensors``, …) and
``modelParameterSize`` the count from parameters.py when it covers the model.

Multimodal configs keep their language model in a sub-config (``text_config``, ``llm_config``,
``language_config``). The version and quantization are looked up there when the top level lacks
them; the architecture is not: the sub-config's class (``DeepseekV2ForCausalLM`` inside
DeepSeek-VL2) names only the language part, and recording it would let a text-only runtime be
picked for a vision model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.errors import InvalidInput
from policyd.metadata.parameters import parameter_count
from policyd.resources.sizes import format_size

LANGUAGE_SUBCONFIGS = ("text_config", "llm_config", "language_config")

# Keys only a sentence-transformers config_sentence_transformers.json has.
_SENTENCE_TRANSFORMERS_KEYS = ("__version__", "prompts", "similarity_fn_name", "default_prompt_name")


def config_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every BaseModel spec field OME records for a transformers model."""
    if not isinstance(config, Mapping):
        raise InvalidInput("config.json", f"must be a JSON object, got {type(config).__name__}")
    architecture = _architecture(config)
    fields: dict[str, Any] = {
        "modelArchitecture": architecture,
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": _transformers_version(config)},
    }
    method = quantization(config)
    if method is not None:
        fields["quantization"] = method
    count = parameter_count(config, architecture)
    if count is not None:
        fields["modelParameterSize"] = format_size(count)
    return fields


def quantization(config: Mapping[str, Any]) -> str | None:
    """The declared ``quant_method``, or None for a model that is not quantized."""
    for where, scope in _scopes(config):
        declared = scope.get("quantization_config")
        if declared is None:
            continue
        field = f"{where}quantization_config.quant_method"
        method = declared.get("quant_method") if isinstance(declared, Mapping) else None
        if not isinstance(method, str) or not method:
            raise InvalidInput(field, f"a quantization_config must name its quant_method, got {method!r}")
        return method
    return None


def _architecture(config: Mapping[str, Any]) -> str:
    classes = config.get("architectures")
    if classes is None:
        raise InvalidInput("architectures", _why_no_architecture(config))
    if not isinstance(classes, list) or not classes or not isinstance(classes[0], str) or not classes[0]:
        raise InvalidInput("architectures", f"must be a non-empty list of class names, got {classes!r}")
    return classes[0]


def _why_no_architecture(config: Mapping[str, Any]) -> str:
    if any(key in config for key in _SENTENCE_TRANSFORMERS_KEYS):
        return (
            "missing: this is a sentence-transformers config (config_sentence_transformers.json), "
            "not a transformers config.json"
        )
    for where, scope in _scopes(config):
        inner = scope.get("architectures")
        if where and isinstance(inner, list) and inner:
            return (
                f"missing at the top level; {where}architectures names {inner[0]}, which is only the "
                "language part of this multimodal model, so it is not recorded as the model's architecture"
            )
    return "missing: a transformers config.json names the model class in architectures"


def _transformers_version(config: Mapping[str, Any]) -> str:
    for where, scope in _scopes(config):
        version = scope.get("transformers_version")
        if version is None:
            continue
        if not isinstance(version, str) or not version:
            raise InvalidInput(f"{where}transformers_version", f"must be a version string, got {version!r}")
        return version
    raise InvalidInput(
        "transformers_version",
        "missing: OME records it as the modelFramework version, so the config must say which "
        "transformers version wrote it",
    )


def _scopes(config: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The config itself, then its language sub-configs, each with its key path prefix."""
    scopes: list[tuple[str, Mapping[str, Any]]] = [("", config)]
    scopes += [(f"{key}.", config[key]) for key in LANGUAGE_SUBCONFIGS if isinstance(config.get(key), Mapping)]
    return scopes
