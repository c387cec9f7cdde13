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
    # --- vLLM-Omni's diffusers backend (policyd/facts/diffusers_backend.py) -------------------
    # the engine's command line: the runtime's runner with the InferenceService's on top
    "engine_vllm_omni": Field(BOOL, "runtime", "the engine runs vllm serve with --omni (vLLM-Omni)"),
    "engine_args_error": Field(STR, "runtime", "vllm serve's own error for the engine's command line, or empty"),
    "diffusion_load_format": Field(STR, "runtime", "--diffusion-load-format, default when not given"),
    "diffusers_backend": Field(BOOL, "runtime", "the engine runs vLLM-Omni with --diffusion-load-format diffusers"),
    "diffusers_model_class_name": Field(STR, "runtime", "--model-class-name, else DiffusersAdapterPipeline"),
    "diffusers_load_kwargs_given": Field(BOOL, "runtime", "--diffusers-load-kwargs holds a non-empty value"),
    "diffusers_call_kwargs_given": Field(BOOL, "runtime", "--diffusers-call-kwargs holds a non-empty value"),
    "diffusers_load_kwargs_type": Field(
        STR, "runtime", "Python type of the load kwargs' JSON value (dict for an object)"
    ),
    "diffusers_call_kwargs_type": Field(
        STR, "runtime", "Python type of the call kwargs' JSON value (dict for an object)"
    ),
    "diffusers_cfg_parallel_size": Field(INT, "runtime", "--cfg-parallel-size (1 when not given)"),
    "diffusers_sequence_parallel_size": Field(
        INT,
        "runtime",
        "sequence parallel size: --allgather-degree when above 1, else --ulysses-degree times --ring-degree",
    ),
    "diffusers_cache_backend": Field(
        STR,
        "runtime",
        "--cache-backend, else DIFFUSION_CACHE_BACKEND / DIFFUSION_CACHE_ADAPTER (lowercased), else none",
    ),
    "diffusers_enforce_eager": Field(BOOL, "runtime", "--enforce-eager is given"),
    "diffusers_use_hsdp": Field(BOOL, "runtime", "--use-hsdp is given"),
    "diffusers_max_num_seqs": Field(INT, "runtime", "--max-num-seqs (1 when not given)"),
    "diffusers_dlo_dp_concurrency": Field(
        BOOL, "runtime", "distributed layerwise offload with AllGather over more than one data-parallel replica"
    ),
    "diffusers_step_execution": Field(
        BOOL, "runtime", "--step-execution, or --diffusion-streaming-output which turns it on"
    ),
    "diffusers_quantization_set": Field(BOOL, "runtime", "a vLLM-Omni quantization config is given"),
    "diffusers_quantization_flag": Field(STR, "runtime", "the flag that gives it"),
    "diffusers_native_quantization": Field(BOOL, "runtime", "the load kwargs carry their own quantization_config"),
    "diffusers_quant_method": Field(STR, "runtime", "the quantization method, lowercased with - as _"),
    "diffusers_quant_torchao": Field(STR, "runtime", "the TorchAO config the shortcut maps the method to, or empty"),
    "diffusers_quant_serialized": Field(BOOL, "runtime", "the config says the checkpoint is serialized in that method"),
    "diffusers_quant_activation_scheme": Field(STR, "runtime", "activation_scheme (dynamic when not given)"),
    "diffusers_quant_weight_block_size": Field(BOOL, "runtime", "weight_block_size is given"),
    "diffusers_quant_ignored_layers": Field(BOOL, "runtime", "ignored_layers or modules_to_not_convert is non-empty"),
    "diffusers_dduf_file": Field(BOOL, "runtime", "the load kwargs set dduf_file"),
    "diffusers_boundary_ratio_set": Field(BOOL, "runtime", "--boundary-ratio is given"),
    "diffusers_flow_shift_set": Field(BOOL, "runtime", "--flow-shift is given"),
    "diffusers_call_kwargs_shadowed": Field(
        STR, "runtime", "call-kwargs keys that request-time values always override, comma-separated"
    ),
    "diffusers_attention_backend": Field(STR, "runtime", "the default attention backend asked for, empty for none"),
    "diffusers_attention_mapped": Field(BOOL, "runtime", "the adapter maps that backend name (true when none)"),
    "diffusers_attention_per_role": Field(STR, "runtime", "attention roles given their own backend, comma-separated"),
    "diffusers_attention_conflict": Field(
        BOOL, "runtime", "--diffusion-attention-backend and --diffusion-attention-config.default.backend are both given"
    ),
    # how the backend sees the model
    "model_pipeline_class": Field(STR, "model", "diffusionPipeline.className, else modelArchitecture"),
    "model_pipeline_native": Field(BOOL, "model", "vLLM-Omni implements the pipeline class natively"),
    "model_pipeline_wan": Field(BOOL, "model", "the backend applies its Wan routines to the pipeline class"),
    "model_pipeline_known": Field(BOOL, "model", "the model records a diffusionPipeline"),
    "model_pipeline_components": Field(STR, "model", "its model_index.json component names, comma-separated"),
    "model_has_transformer_component": Field(BOOL, "model", "it has a transformer or transformer_2 component"),
    "model_hf_repo": Field(STR, "model", "the Hugging Face repository of an hf:// model, else empty"),
    "model_diffusers_verified": Field(BOOL, "model", "the repository is on the diffusers backend's verified list"),
    # --- end of the diffusers-backend block --------------------------------------------------
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
    # diffusers backend: what an engine without vLLM-Omni flags has
    "diffusers_cfg_parallel_size": 1,
    "diffusers_sequence_parallel_size": 1,
    "diffusers_max_num_seqs": 1,
    "diffusers_attention_mapped": True,
    "diffusers_quant_activation_scheme": "dynamic",
    "diffusers_cache_backend": "none",
    "diffusers_load_kwargs_type": "dict",
    "diffusers_call_kwargs_type": "dict",
}
_EMPTY: dict[str, object] = {STR: "", BOOL: False, INT: 0}


def neutral_record() -> dict[str, object]:
    return {
        name: _NEUTRAL_OVERRIDES.get(name, [] if spec.type == LIST else _EMPTY[spec.type])
        for name, spec in FIELDS.items()
    }
