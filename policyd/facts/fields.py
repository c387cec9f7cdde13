"""Every fact field a rule may test or a reason template may print, with its type.

The rule loader refuses a rule that names a field not listed here.
"""

from __future__ import annotations

from dataclasses import dataclass

STR, BOOL, INT, LIST = "string", "boolean", "integer", "list"


@dataclass(frozen=True)
class Field:
    type: str
    scope: str  # runtime | entry | model
    doc: str


FIELDS: dict[str, Field] = {
    # the request
    "namespace": Field(STR, "runtime", "namespace of the InferenceService (or of the explained model)"),
    "isvc_name": Field(STR, "runtime", "name of the InferenceService, empty when explaining a model alone"),
    "isvc_has_decoder": Field(BOOL, "runtime", "the InferenceService declares spec.decoder"),
    "isvc_has_router": Field(BOOL, "runtime", "the InferenceService declares spec.router"),
    "accelerator_class_requested": Field(STR, "runtime", "accelerator class the InferenceService names, or empty"),
    # the runtime
    "runtime_name": Field(STR, "runtime", "metadata.name of the runtime"),
    "runtime_kind": Field(STR, "runtime", "ServingRuntime or ClusterServingRuntime"),
    "runtime_namespace": Field(STR, "runtime", "namespace of a ServingRuntime, empty at cluster scope"),
    "runtime_labels": Field(LIST, "runtime", "the runtime's labels as key=value strings"),
    "runtime_annotations": Field(LIST, "runtime", "the runtime's annotations as key=value strings"),
    "runtime_images": Field(LIST, "runtime", "every runner image the runtime declares"),
    "runtime_image_unpinned": Field(BOOL, "runtime", "some runner image has no tag or digest, or uses the tag latest"),
    "runtime_disabled": Field(BOOL, "runtime", "spec.disabled is true"),
    "engine_mode_runtime": Field(STR, "runtime", "mode engineConfig declares (valid values only), or empty"),
    "engine_mode_requested": Field(STR, "runtime", "mode the InferenceService asks of the engine, or empty"),
    "decoder_mode_runtime": Field(STR, "runtime", "mode decoderConfig declares (valid values only), or empty"),
    "decoder_mode_requested": Field(STR, "runtime", "mode the InferenceService asks of the decoder, or empty"),
    "router_mode_runtime": Field(STR, "runtime", "mode routerConfig declares (valid values only), or empty"),
    "router_mode_requested": Field(STR, "runtime", "mode the InferenceService asks of the router, or empty"),
    "accelerator_classes_runtime": Field(LIST, "runtime", "acceleratorRequirements.acceleratorClasses"),
    "accelerator_class_listed": Field(
        BOOL, "runtime", "the runtime lists every accelerator class the InferenceService names"
    ),
    "size_range_set": Field(BOOL, "runtime", "the runtime declares modelSizeRange"),
    "size_range_min": Field(STR, "runtime", "modelSizeRange.min as written"),
    "size_range_max": Field(STR, "runtime", "modelSizeRange.max as written"),
    "size_in_range": Field(BOOL, "runtime", "the model's size lies in modelSizeRange (true when either is unknown)"),
    # the model
    "model_name": Field(STR, "model", "metadata.name of the model"),
    "model_kind": Field(STR, "model", "BaseModel or ClusterBaseModel"),
    "model_size_known": Field(BOOL, "model", "spec.modelParameterSize is set"),
    "model_size": Field(STR, "model", "spec.modelParameterSize as written"),
    "model_format_label": Field(
        STR, "model", "OME's label, e.g. mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.46.0"
    ),
    "model_format_name": Field(STR, "model", "spec.modelFormat.name"),
    "model_format_version": Field(STR, "model", "spec.modelFormat.version"),
    "model_framework_name": Field(STR, "model", "spec.modelFramework.name"),
    "model_framework_version": Field(STR, "model", "spec.modelFramework.version"),
    "model_architecture": Field(STR, "model", "spec.modelArchitecture"),
    "model_quantization": Field(STR, "model", "spec.quantization"),
    # the supportedModelFormats entry
    "entry_index": Field(INT, "entry", "index of the entry, -1 when the runtime has none"),
    "entry_auto_select": Field(BOOL, "entry", "autoSelect is true"),
    "entry_format_name": Field(STR, "entry", "modelFormat.name"),
    "entry_format_version": Field(STR, "entry", "modelFormat.version"),
    "entry_framework_name": Field(STR, "entry", "modelFramework.name"),
    "entry_framework_version": Field(STR, "entry", "modelFramework.version"),
    "entry_architecture": Field(STR, "entry", "modelArchitecture"),
    "entry_quantization": Field(STR, "entry", "quantization"),
    "format_name_match": Field(BOOL, "entry", "model and entry format names are equal"),
    "format_version_match": Field(BOOL, "entry", "the model's format version passes the entry's version and operator"),
    "framework_name_match": Field(BOOL, "entry", "model and entry framework names are equal"),
    "framework_version_match": Field(
        BOOL, "entry", "the model's framework version passes the entry's version and operator"
    ),
    "pipeline_mismatch": Field(
        STR,
        "entry",
        "first diffusionPipeline requirement the model fails: pipeline-missing, class, component-missing, library,"
        " type, additional-none, additional-missing; empty when it passes",
    ),
    "pipeline_component": Field(STR, "entry", "the pipeline component the mismatch is about"),
    "pipeline_model_value": Field(STR, "entry", "the model's value in the mismatch"),
    "pipeline_runtime_value": Field(STR, "entry", "the entry's value in the mismatch"),
    "format_weight": Field(INT, "entry", "modelFormat.weight, or the default weight"),
    "framework_weight": Field(INT, "entry", "modelFramework.weight, or the default weight"),
    "priority": Field(INT, "entry", "priority, or the default priority"),
}

# Values that pass every default rule: rule tests start from this record and
# set only the facts they are about.
_NEUTRAL_OVERRIDES: dict[str, object] = {
    "accelerator_class_listed": True,
    "size_in_range": True,
    "entry_auto_select": True,
    "format_name_match": True,
    "format_version_match": True,
    "framework_name_match": True,
    "framework_version_match": True,
    "entry_index": 0,
    "format_weight": 1,
    "framework_weight": 1,
    "priority": 1,
}
_EMPTY: dict[str, object] = {STR: "", BOOL: False, INT: 0}


def neutral_record() -> dict[str, object]:
    return {
        name: _NEUTRAL_OVERRIDES.get(name, [] if spec.type == LIST else _EMPTY[spec.type])
        for name, spec in FIELDS.items()
    }
