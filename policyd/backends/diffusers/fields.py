"""The fact fields vLLM-Omni's diffusers backend declares (policyd/backends/diffusers/facts.py
derives them; rules/30-diffusers-backend.yaml judges them)."""

from __future__ import annotations

from policyd.records import BOOL, FROM_REQUEST, FROM_RUNTIME, INT, MODEL, RUNTIME, STR, Field

FIELDS: dict[str, Field] = {
    # the engine's command line: the runtime's runner with the InferenceService's on top
    "diffusers_engine_vllm_omni": Field(
        BOOL, RUNTIME, "the engine runs vllm serve with --omni (vLLM-Omni)", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_engine_args_error": Field(
        STR,
        RUNTIME,
        "vllm serve's own error for the engine's command line, or empty",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_load_format": Field(
        STR, RUNTIME, "--diffusion-load-format, default when not given", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_backend": Field(
        BOOL,
        RUNTIME,
        "the engine runs vLLM-Omni with --diffusion-load-format diffusers",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_model_class_name": Field(
        STR, RUNTIME, "--model-class-name, else DiffusersAdapterPipeline", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_load_kwargs_given": Field(
        BOOL, RUNTIME, "--diffusers-load-kwargs holds a non-empty value", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_call_kwargs_given": Field(
        BOOL, RUNTIME, "--diffusers-call-kwargs holds a non-empty value", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_load_kwargs_type": Field(
        STR,
        RUNTIME,
        "Python type of the load kwargs' JSON value (dict for an object)",
        "dict",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_call_kwargs_type": Field(
        STR,
        RUNTIME,
        "Python type of the call kwargs' JSON value (dict for an object)",
        "dict",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_cfg_parallel_size": Field(
        INT, RUNTIME, "--cfg-parallel-size (1 when not given)", 1, relational=True, source=FROM_RUNTIME
    ),
    "diffusers_sequence_parallel_size": Field(
        INT,
        RUNTIME,
        "sequence parallel size: --allgather-degree when above 1, else --ulysses-degree times --ring-degree",
        1,
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_cache_backend": Field(
        STR,
        RUNTIME,
        "--cache-backend, else DIFFUSION_CACHE_BACKEND / DIFFUSION_CACHE_ADAPTER (lowercased), else none",
        "none",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_enforce_eager": Field(BOOL, RUNTIME, "--enforce-eager is given", relational=True, source=FROM_RUNTIME),
    "diffusers_use_hsdp": Field(BOOL, RUNTIME, "--use-hsdp is given", relational=True, source=FROM_RUNTIME),
    "diffusers_max_num_seqs": Field(
        INT, RUNTIME, "--max-num-seqs (1 when not given)", 1, relational=True, source=FROM_RUNTIME
    ),
    "diffusers_dlo_dp_concurrency": Field(
        BOOL,
        RUNTIME,
        "distributed layerwise offload with AllGather over more than one data-parallel replica",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_step_execution": Field(
        BOOL,
        RUNTIME,
        "--step-execution, or --diffusion-streaming-output which turns it on",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_quantization_set": Field(
        BOOL, RUNTIME, "a vLLM-Omni quantization config is given", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_quantization_flag": Field(STR, RUNTIME, "the flag that gives it", relational=True, source=FROM_RUNTIME),
    "diffusers_native_quantization": Field(
        BOOL, RUNTIME, "the load kwargs carry their own quantization_config", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_quant_method": Field(
        STR, RUNTIME, "the quantization method, lowercased with - as _", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_quant_torchao": Field(
        STR,
        RUNTIME,
        "the TorchAO config the shortcut maps the method to, or empty",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_quant_serialized": Field(
        BOOL,
        RUNTIME,
        "the config says the checkpoint is serialized in that method",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_quant_activation_scheme": Field(
        STR, RUNTIME, "activation_scheme (dynamic when not given)", "dynamic", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_quant_weight_block_size": Field(
        BOOL, RUNTIME, "weight_block_size is given", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_quant_ignored_layers": Field(
        BOOL, RUNTIME, "ignored_layers or modules_to_not_convert is non-empty", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_dduf_file": Field(BOOL, RUNTIME, "the load kwargs set dduf_file", relational=True, source=FROM_RUNTIME),
    "diffusers_boundary_ratio_set": Field(
        BOOL, RUNTIME, "--boundary-ratio is given", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_flow_shift_set": Field(BOOL, RUNTIME, "--flow-shift is given", relational=True, source=FROM_RUNTIME),
    "diffusers_call_kwargs_shadowed": Field(
        STR,
        RUNTIME,
        "call-kwargs keys that request-time values always override, comma-separated",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "diffusers_attention_backend": Field(
        STR, RUNTIME, "the default attention backend asked for, empty for none", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_attention_mapped": Field(
        BOOL, RUNTIME, "the adapter maps that backend name (true when none)", True, relational=True, source=FROM_RUNTIME
    ),
    "diffusers_attention_per_role": Field(
        STR, RUNTIME, "attention roles given their own backend, comma-separated", relational=True, source=FROM_RUNTIME
    ),
    "diffusers_attention_conflict": Field(
        BOOL,
        RUNTIME,
        "--diffusion-attention-backend and --diffusion-attention-config.default.backend are both given",
        relational=True,
        source=FROM_RUNTIME,
    ),
    # how the backend sees the model
    "diffusers_model_pipeline_native": Field(
        BOOL, MODEL, "vLLM-Omni implements the pipeline class natively", source=FROM_REQUEST
    ),
    "diffusers_model_pipeline_wan": Field(
        BOOL, MODEL, "the backend applies its Wan routines to the pipeline class", source=FROM_REQUEST
    ),
    "diffusers_model_has_transformer": Field(
        BOOL, MODEL, "it has a transformer or transformer_2 component", source=FROM_REQUEST
    ),
    "diffusers_model_verified": Field(
        BOOL, MODEL, "the repository is on the diffusers backend's verified list", source=FROM_REQUEST
    ),
}
