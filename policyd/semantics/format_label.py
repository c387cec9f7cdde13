"""OME's model format label, as its messages print it:
``mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.46.0``, with the
quantization after the architecture when the model has one."""

from __future__ import annotations

from policyd.resources.objects import BaseModel


def format_label(model: BaseModel) -> str:
    # OME's model format is a struct, not a pointer: its name is always printed ("mt:" without one)
    parts = ["mt", model.format.name if model.format else ""]
    if model.format is not None and model.format.version_set:
        parts.append(model.format.version)
    if model.architecture:
        parts.append(model.architecture)
    if model.quantization:
        parts.append(model.quantization)
    if model.framework is not None:
        parts.append(model.framework.name)
        if model.framework.version_set:
            parts.append(model.framework.version)
    return ":".join(parts)
