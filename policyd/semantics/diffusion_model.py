"""How any diffusion backend sees a model: the pipeline class, the model_index.json component
names as a diffusers pipeline loads them, the Hugging Face repository. Engine-neutral, so the
core derives them (facts/derive.py) and every backend's rules read the same facts."""

from __future__ import annotations

from policyd.resources.objects import BaseModel


def pipeline_class(model: BaseModel) -> str:
    """The model_index.json _class_name OME recorded: diffusionPipeline.className, else the architecture."""
    if model.pipeline is not None and model.pipeline.class_name:
        return model.pipeline.class_name
    return model.architecture


def _is_unet(type_name: str | None) -> bool:
    # OME records a model_index.json "unet" as transformer; the type tells them apart.
    return bool(type_name) and "UNet" in str(type_name)


def component_names(model: BaseModel) -> tuple[str, ...]:
    """The model_index.json component names the adapter sees, sorted (empty without a pipeline)."""
    pipeline = model.pipeline
    if pipeline is None:
        return ()
    names = []
    for name, component in pipeline.components.items():
        if name == "textEncoder":
            names.append("text_encoder")
        elif name == "transformer" and _is_unet(component.type):
            names.append("unet")
        else:
            names.append(name)
    names.extend(pipeline.additional)
    return tuple(sorted(set(names)))


def hf_repo(model: BaseModel) -> str:
    """The Hugging Face repository of an hf:// model, empty for other storage."""
    uri = model.storage_uri
    if not uri.startswith("hf://"):
        return ""
    return uri.removeprefix("hf://").split("@", 1)[0].strip("/")
