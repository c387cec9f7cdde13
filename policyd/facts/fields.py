"""The fact catalogue: every fact field a rule may test or a template may print, declared once.

Each field has a type, the scope whose records carry it, what it means, and a neutral
value — one that passes every bundled rule, so rule tests start from a neutral record and
set only the facts they are about. The rule loader refuses a rule that names a field not
declared here, or a field its scope's records don't carry; a test derives records of every
scope and checks they carry exactly the fields declared here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STR, BOOL, INT, LIST = "string", "boolean", "integer", "list"

# Scopes, and the scopes whose fields each scope's records also carry.
REQUEST, MODEL, RUNTIME, ENTRY, COMPONENT = "request", "model", "runtime", "entry", "component"
SCOPES = (REQUEST, MODEL, RUNTIME, ENTRY, COMPONENT)
VISIBLE: dict[str, tuple[str, ...]] = {
    MODEL: (MODEL,),
    REQUEST: (REQUEST, MODEL),
    RUNTIME: (REQUEST, MODEL, RUNTIME),
    ENTRY: (REQUEST, MODEL, RUNTIME, ENTRY),
    COMPONENT: (REQUEST, MODEL, RUNTIME, COMPONENT),
}
_EMPTY: dict[str, Any] = {STR: "", BOOL: False, INT: 0}


@dataclass(frozen=True)
class Field:
    type: str
    scope: str
    doc: str
    neutral: Any = field(default=None)
    # a runtime or entry field that depends on the request or its model too (not on the
    # runtime or its entry alone); intrinsic fields can be indexed before any request
    relational: bool = False

    @property
    def neutral_value(self) -> Any:
        if self.neutral is not None:
            return self.neutral
        return [] if self.type == LIST else _EMPTY[self.type]


FIELDS: dict[str, Field] = {
    # the request: the InferenceService (absent when a model is explained alone)
    "namespace": Field(STR, REQUEST, "namespace of the InferenceService (or of the explained model)"),
    "isvc_name": Field(STR, REQUEST, "name of the InferenceService"),
    "isvc_has_model": Field(BOOL, REQUEST, "the InferenceService sets spec.model", True),
    "isvc_names_runtime": Field(BOOL, REQUEST, "the InferenceService sets spec.runtime.name"),
    "named_runtime": Field(STR, REQUEST, "spec.runtime.name, or empty"),
    "named_runtime_kind": Field(STR, REQUEST, "spec.runtime.kind (ClusterServingRuntime by default), or empty"),
    "named_runtime_found": Field(BOOL, REQUEST, "the runtime spec.runtime.name names exists (by kind)", True),
    "isvc_has_engine": Field(BOOL, REQUEST, "the InferenceService declares spec.engine"),
    "isvc_has_decoder": Field(BOOL, REQUEST, "the InferenceService declares spec.decoder"),
    "isvc_has_router": Field(BOOL, REQUEST, "the InferenceService declares spec.router"),
    "accelerator_classes_requested": Field(
        LIST,
        REQUEST,
        "every accelerator class the InferenceService names: the ome.io/accelerator-class annotation,"
        " spec.acceleratorSelector and the engine's and decoder's acceleratorOverride",
    ),
    "engine_mode_requested": Field(STR, REQUEST, "mode the InferenceService asks of the engine, or empty"),
    "decoder_mode_requested": Field(STR, REQUEST, "mode the InferenceService asks of the decoder, or empty"),
    "router_mode_requested": Field(STR, REQUEST, "mode the InferenceService asks of the router, or empty"),
    "engine_mode_requested_text": Field(STR, REQUEST, "engine_mode_requested, or none", "none"),
    "decoder_mode_requested_text": Field(STR, REQUEST, "decoder_mode_requested, or none", "none"),
    "isvc_scaling_mode": Field(
        STR, REQUEST, "spec.scalingPolicy.mode (Independent when the policy sets none), empty without a policy"
    ),
    # the model
    "model_found": Field(BOOL, MODEL, "the base model the InferenceService names exists", True),
    "model_name": Field(STR, MODEL, "metadata.name of the model (the referenced name when it is missing)"),
    "model_kind": Field(STR, MODEL, "BaseModel or ClusterBaseModel"),
    "model_disabled": Field(BOOL, MODEL, "spec.disabled is true"),
    "model_distribution": Field(STR, MODEL, "spec.distribution"),
    "model_size_known": Field(BOOL, MODEL, "spec.modelParameterSize is set"),
    "model_size": Field(STR, MODEL, "spec.modelParameterSize as written"),
    "model_format_label": Field(
        STR, MODEL, "OME's label, e.g. mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.46.0"
    ),
    "model_format_name": Field(STR, MODEL, "spec.modelFormat.name", "safetensors"),
    "model_format_version": Field(STR, MODEL, "spec.modelFormat.version"),
    "model_format_version_set": Field(BOOL, MODEL, "spec.modelFormat.version is set (even to an empty string)"),
    "model_has_framework": Field(BOOL, MODEL, "spec.modelFramework is set", True),
    "model_framework_name": Field(STR, MODEL, "spec.modelFramework.name"),
    "model_framework_version": Field(STR, MODEL, "spec.modelFramework.version"),
    "model_framework_version_set": Field(BOOL, MODEL, "spec.modelFramework.version is set (even to an empty string)"),
    "model_architecture": Field(STR, MODEL, "spec.modelArchitecture"),
    "model_quantization": Field(STR, MODEL, "spec.quantization"),
    # the runtime, for this request
    "runtime_name": Field(STR, RUNTIME, "metadata.name of the runtime"),
    "runtime_kind": Field(STR, RUNTIME, "ServingRuntime or ClusterServingRuntime"),
    "runtime_namespace": Field(STR, RUNTIME, "namespace of a ServingRuntime, empty at cluster scope"),
    "runtime_scope": Field(STR, RUNTIME, "namespace-scoped or cluster-scoped"),
    "runtime_named": Field(
        BOOL, RUNTIME, "the InferenceService names this runtime (Resolve), rather than OME choosing", relational=True
    ),
    "runtime_labels": Field(LIST, RUNTIME, "the runtime's labels as key=value strings"),
    "runtime_annotations": Field(LIST, RUNTIME, "the runtime's annotations as key=value strings"),
    "runtime_images": Field(LIST, RUNTIME, "every runner image the runtime declares"),
    "runtime_image_unpinned": Field(BOOL, RUNTIME, "some runner image has no tag or digest, or uses the tag latest"),
    "runtime_disabled": Field(BOOL, RUNTIME, "spec.disabled is true"),
    "runtime_autoscaler_policy_ref": Field(BOOL, RUNTIME, "the runtime sets spec.autoscalerPolicyRef"),
    "runtime_scaling_mode": Field(
        STR, RUNTIME, "the runtime's spec.scalingPolicy.mode (Independent when it sets none), empty without a policy"
    ),
    "engine_mode_runtime": Field(STR, RUNTIME, "mode engineConfig declares (valid values only), or empty"),
    "decoder_mode_runtime": Field(STR, RUNTIME, "mode decoderConfig declares (valid values only), or empty"),
    "router_mode_runtime": Field(STR, RUNTIME, "mode routerConfig declares (valid values only), or empty"),
    "accelerator_classes_runtime": Field(LIST, RUNTIME, "acceleratorRequirements.acceleratorClasses"),
    "accelerator_class_listed": Field(
        BOOL, RUNTIME, "the runtime lists every accelerator class the InferenceService names", True, relational=True
    ),
    "size_range_set": Field(BOOL, RUNTIME, "the runtime declares modelSizeRange"),
    "size_range_min": Field(STR, RUNTIME, "modelSizeRange.min as written"),
    "size_range_max": Field(STR, RUNTIME, "modelSizeRange.max as written"),
    "size_in_range": Field(
        BOOL, RUNTIME, "the model's size lies in modelSizeRange (true when either is unknown)", True, relational=True
    ),
    "runtime_auto_select": Field(BOOL, RUNTIME, "some supportedModelFormats entry sets autoSelect: true", True),
    "runtime_score": Field(
        INT, RUNTIME, "the runtime's score: its best counted entry's, as scoring declares", 2, relational=True
    ),
    # one supportedModelFormats entry, against the model
    "entry_index": Field(INT, ENTRY, "index of the entry in supportedModelFormats"),
    "entry_auto_select": Field(BOOL, ENTRY, "autoSelect is true", True),
    "entry_counts_for_score": Field(BOOL, ENTRY, "autoSelect is not set to false", True),
    "entry_format_name": Field(STR, ENTRY, "modelFormat.name", "safetensors"),
    "entry_format_version": Field(STR, ENTRY, "modelFormat.version"),
    "entry_format_version_set": Field(BOOL, ENTRY, "modelFormat.version is set (even to an empty string)"),
    "entry_framework_name": Field(STR, ENTRY, "modelFramework.name"),
    "entry_framework_version": Field(STR, ENTRY, "modelFramework.version"),
    "entry_framework_version_set": Field(BOOL, ENTRY, "modelFramework.version is set (even to an empty string)"),
    "entry_architecture": Field(STR, ENTRY, "modelArchitecture"),
    "entry_quantization": Field(STR, ENTRY, "quantization"),
    "format_name_match": Field(BOOL, ENTRY, "model and entry format names are equal", True, relational=True),
    "format_version_match": Field(
        BOOL,
        ENTRY,
        "both set and the model's format version passes the entry's version and operator",
        True,
        relational=True,
    ),
    "framework_name_match": Field(BOOL, ENTRY, "model and entry framework names are equal", True, relational=True),
    "framework_version_match": Field(
        BOOL,
        ENTRY,
        "both set and the model's framework version passes the entry's version and operator",
        True,
        relational=True,
    ),
    "entry_score_eligible": Field(
        BOOL,
        ENTRY,
        "OME scores the entry: format and framework names agree and, where both sides set a version, it passes",
        True,
        relational=True,
    ),
    "pipeline_mismatch": Field(
        STR,
        ENTRY,
        "first diffusionPipeline requirement the model fails: pipeline-missing, class, component-missing, library,"
        " type, additional-none, additional-missing; empty when it passes",
        relational=True,
    ),
    "pipeline_component": Field(STR, ENTRY, "the pipeline component the mismatch is about", relational=True),
    "pipeline_model_value": Field(STR, ENTRY, "the model's value in the mismatch", relational=True),
    "pipeline_runtime_value": Field(STR, ENTRY, "the entry's value in the mismatch", relational=True),
    "format_weight": Field(INT, ENTRY, "modelFormat.weight as scoring reads it", 1),
    "framework_weight": Field(INT, ENTRY, "modelFramework.weight as scoring reads it", 1),
    "priority": Field(INT, ENTRY, "priority, or the default priority", 1),
    # one component the InferenceService declares, in the runtime's merge
    "component_name": Field(STR, COMPONENT, "engine, decoder or router", "engine"),
    "component_mode": Field(STR, COMPONENT, "the deployment mode the component runs in", "RawDeployment"),
    "component_mode_source": Field(STR, COMPONENT, "what set the component's mode", "default"),
}


def fields_of(scope: str) -> dict[str, Field]:
    """The fields a record of ``scope`` carries (its own and its outer scopes')."""
    seen = VISIBLE[scope]
    return {name: spec for name, spec in FIELDS.items() if spec.scope in seen}


def neutral_record(scope: str) -> dict[str, Any]:
    """A record of ``scope`` where every field has its neutral value."""
    return {name: spec.neutral_value for name, spec in fields_of(scope).items()}
