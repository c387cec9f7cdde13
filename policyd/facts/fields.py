"""The fact catalogue: every fact field a rule may test or a template may print, declared once:
the core's here, each engine backend's in its package (policyd/backends/), taken in from the registry.

Each field has a type, the scope whose records carry it, what it means, and a neutral
value — one that passes every bundled rule, so rule tests start from a neutral record and
set only the facts they are about. The rule loader refuses a rule that names a field not
declared here, or a field its scope's records don't carry; a test derives records of every
scope and checks they carry exactly the fields declared here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from policyd.backends import BACKENDS, Backend
from policyd.records import (
    ADMISSION_SCOPES,
    ADMIT_PAIR,
    ADMIT_RUNTIME,
    BOOL,
    COMPONENT,
    ENTRY,
    FROM_CATALOG,
    FROM_REQUEST,
    FROM_RUNTIME,
    INT,
    LINT_ACCELERATOR,
    LINT_ENTRY,
    LINT_MODEL,
    LINT_PAIR,
    LINT_RUNTIME,
    LINT_SCOPES,
    LIST,
    MODEL,
    REQUEST,
    RUNTIME,
    SOURCES,
    STR,
    VISIBLE,
    Field,
)

CORE_FIELDS: dict[str, Field] = {
    # the request: the InferenceService (absent when a model is explained alone)
    "namespace": Field(
        STR, REQUEST, "namespace of the InferenceService (or of the explained model)", source=FROM_REQUEST
    ),
    "isvc_name": Field(STR, REQUEST, "name of the InferenceService", source=FROM_REQUEST),
    "isvc_has_model": Field(BOOL, REQUEST, "the InferenceService sets spec.model", True, source=FROM_REQUEST),
    "isvc_names_runtime": Field(BOOL, REQUEST, "the InferenceService sets spec.runtime.name", source=FROM_REQUEST),
    "named_runtime": Field(STR, REQUEST, "spec.runtime.name, or empty", source=FROM_REQUEST),
    "named_runtime_kind": Field(
        STR, REQUEST, "spec.runtime.kind (ClusterServingRuntime by default), or empty", source=FROM_REQUEST
    ),
    "named_runtime_found": Field(
        BOOL, REQUEST, "the runtime spec.runtime.name names exists (by kind)", True, source=FROM_CATALOG
    ),
    "named_runtime_auto_sync": Field(
        BOOL, REQUEST, "spec.runtime.autoSync (true when unset, and without spec.runtime)", True, source=FROM_REQUEST
    ),
    "named_runtime_revision": Field(STR, REQUEST, "spec.runtime.revision, or empty", source=FROM_REQUEST),
    "isvc_has_engine": Field(BOOL, REQUEST, "the InferenceService declares spec.engine", source=FROM_REQUEST),
    "isvc_has_decoder": Field(BOOL, REQUEST, "the InferenceService declares spec.decoder", source=FROM_REQUEST),
    "isvc_has_router": Field(BOOL, REQUEST, "the InferenceService declares spec.router", source=FROM_REQUEST),
    "accelerator_classes_requested": Field(
        LIST,
        REQUEST,
        "every accelerator class the InferenceService names: the ome.io/accelerator-class annotation,"
        " spec.acceleratorSelector and the engine's and decoder's acceleratorOverride",
        source=FROM_REQUEST,
    ),
    "engine_mode_requested": Field(
        STR, REQUEST, "mode the InferenceService asks of the engine, or empty", source=FROM_REQUEST
    ),
    "decoder_mode_requested": Field(
        STR, REQUEST, "mode the InferenceService asks of the decoder, or empty", source=FROM_REQUEST
    ),
    "router_mode_requested": Field(
        STR, REQUEST, "mode the InferenceService asks of the router, or empty", source=FROM_REQUEST
    ),
    "engine_mode_requested_text": Field(STR, REQUEST, "engine_mode_requested, or none", "none", source=FROM_REQUEST),
    "decoder_mode_requested_text": Field(STR, REQUEST, "decoder_mode_requested, or none", "none", source=FROM_REQUEST),
    "isvc_scaling_mode": Field(
        STR,
        REQUEST,
        "spec.scalingPolicy.mode (Independent when the policy sets none), empty without a policy",
        source=FROM_REQUEST,
    ),
    # what OME's InferenceService webhook reads besides (policyd/facts/isvc_checks.py)
    "isvc_name_valid": Field(
        BOOL, REQUEST, "metadata.name matches [a-z]([-a-z0-9]*[a-z0-9])?", True, source=FROM_REQUEST
    ),
    "isvc_full_runner": Field(
        BOOL,
        REQUEST,
        "the engine has a complete runner of its own: engine.runner.image, or leader.runner.image and"
        " worker.runner.image",
        source=FROM_REQUEST,
    ),
    "isvc_autoscaler_class_set": Field(
        BOOL, REQUEST, "the ome.io/autoscalerClass annotation is set", source=FROM_REQUEST
    ),
    "isvc_autoscaler_class": Field(STR, REQUEST, "its value", source=FROM_REQUEST),
    "isvc_autoscaler_metric_set": Field(BOOL, REQUEST, "the ome.io/metrics annotation is set", source=FROM_REQUEST),
    "isvc_autoscaler_metric": Field(STR, REQUEST, "its value", source=FROM_REQUEST),
    "isvc_target_utilization_set": Field(
        BOOL, REQUEST, "the ome.io/targetUtilizationPercentage annotation is set", source=FROM_REQUEST
    ),
    "isvc_target_utilization_integer": Field(
        BOOL, REQUEST, "its value is a decimal integer (as Go's strconv.Atoi reads one)", True, source=FROM_REQUEST
    ),
    "isvc_target_utilization": Field(INT, REQUEST, "that integer (0 when it is none)", 80, source=FROM_REQUEST),
    # KEDA's settings, checked with the keda autoscaler class: spec.kedaConfig's (set and not empty)
    # and the autoscaling.keda.sh annotations'
    "isvc_keda_config_operator_set": Field(BOOL, REQUEST, "spec.kedaConfig set scalingOperator", source=FROM_REQUEST),
    "isvc_keda_config_operator": Field(STR, REQUEST, "that operator", source=FROM_REQUEST),
    "isvc_keda_config_threshold_set": Field(BOOL, REQUEST, "spec.kedaConfig set scalingThreshold", source=FROM_REQUEST),
    "isvc_keda_config_threshold": Field(STR, REQUEST, "that threshold", source=FROM_REQUEST),
    "isvc_keda_config_threshold_number": Field(
        BOOL, REQUEST, "strconv.ParseFloat reads it (true when unset)", True, source=FROM_REQUEST
    ),
    "isvc_keda_config_address_set": Field(BOOL, REQUEST, "spec.kedaConfig set promServerAddress", source=FROM_REQUEST),
    "isvc_keda_config_address": Field(STR, REQUEST, "that address", source=FROM_REQUEST),
    "isvc_keda_config_address_error": Field(
        STR, REQUEST, "url.Parse's error for it, empty when it parses", source=FROM_REQUEST
    ),
    "isvc_keda_config_address_scheme": Field(STR, REQUEST, "its scheme, lower-case", source=FROM_REQUEST),
    "isvc_keda_config_address_host": Field(
        BOOL, REQUEST, "it names a host (true when unset)", True, source=FROM_REQUEST
    ),
    "isvc_keda_annotation_operator_set": Field(
        BOOL, REQUEST, "the autoscaling.keda.sh/ annotations set operator", source=FROM_REQUEST
    ),
    "isvc_keda_annotation_operator": Field(STR, REQUEST, "that operator", source=FROM_REQUEST),
    "isvc_keda_annotation_threshold_set": Field(
        BOOL, REQUEST, "the autoscaling.keda.sh/ annotations set threshold", source=FROM_REQUEST
    ),
    "isvc_keda_annotation_threshold": Field(STR, REQUEST, "that threshold", source=FROM_REQUEST),
    "isvc_keda_annotation_threshold_number": Field(
        BOOL, REQUEST, "strconv.ParseFloat reads it (true when unset)", True, source=FROM_REQUEST
    ),
    "isvc_keda_annotation_address_set": Field(
        BOOL, REQUEST, "the autoscaling.keda.sh/ annotations set prometheus.serverAddress", source=FROM_REQUEST
    ),
    "isvc_keda_annotation_address": Field(STR, REQUEST, "that address", source=FROM_REQUEST),
    "isvc_keda_annotation_address_error": Field(
        STR, REQUEST, "url.Parse's error for it, empty when it parses", source=FROM_REQUEST
    ),
    "isvc_keda_annotation_address_scheme": Field(STR, REQUEST, "its scheme, lower-case", source=FROM_REQUEST),
    "isvc_keda_annotation_address_host": Field(
        BOOL, REQUEST, "it names a host (true when unset)", True, source=FROM_REQUEST
    ),
    "isvc_keda_auth_mode_unknown": Field(
        STR,
        REQUEST,
        "the first of spec.kedaConfig.authModes' comma-separated modes not one of KEDA's (basic, tls, bearer, custom)",
        source=FROM_REQUEST,
    ),
    # the model
    "model_found": Field(BOOL, MODEL, "the base model the InferenceService names exists", True, source=FROM_REQUEST),
    "model_name": Field(
        STR, MODEL, "metadata.name of the model (the referenced name when it is missing)", source=FROM_REQUEST
    ),
    "model_kind": Field(STR, MODEL, "BaseModel or ClusterBaseModel", source=FROM_REQUEST),
    "model_disabled": Field(BOOL, MODEL, "spec.disabled is true", source=FROM_REQUEST),
    "model_distribution": Field(STR, MODEL, "spec.distribution", source=FROM_REQUEST),
    "model_input_notes": Field(
        STR,
        MODEL,
        "what OME reads otherwise than written — a size it reads as 0, a version that matches none, an unknown"
        " operator it reads as Equal — each naming its field, joined with '; ' (empty when none)",
        source=FROM_REQUEST,
    ),
    "model_size_known": Field(BOOL, MODEL, "spec.modelParameterSize is set", source=FROM_REQUEST),
    "model_size": Field(STR, MODEL, "spec.modelParameterSize as written", source=FROM_REQUEST),
    "model_format_label": Field(
        STR, MODEL, "OME's label, e.g. mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.46.0", source=FROM_REQUEST
    ),
    "model_format_name": Field(STR, MODEL, "spec.modelFormat.name", "safetensors", source=FROM_REQUEST),
    "model_format_version": Field(STR, MODEL, "spec.modelFormat.version", source=FROM_REQUEST),
    "model_format_version_set": Field(
        BOOL, MODEL, "spec.modelFormat.version is set (even to an empty string)", source=FROM_REQUEST
    ),
    "model_has_framework": Field(BOOL, MODEL, "spec.modelFramework is set", True, source=FROM_REQUEST),
    "model_framework_name": Field(STR, MODEL, "spec.modelFramework.name", source=FROM_REQUEST),
    "model_framework_version": Field(STR, MODEL, "spec.modelFramework.version", source=FROM_REQUEST),
    "model_framework_version_set": Field(
        BOOL, MODEL, "spec.modelFramework.version is set (even to an empty string)", source=FROM_REQUEST
    ),
    "model_architecture": Field(STR, MODEL, "spec.modelArchitecture", source=FROM_REQUEST),
    "model_quantization": Field(STR, MODEL, "spec.quantization", source=FROM_REQUEST),
    # how any diffusion backend sees the model (semantics/diffusion_model.py)
    "model_pipeline_class": Field(
        STR, MODEL, "diffusionPipeline.className, else modelArchitecture", source=FROM_REQUEST
    ),
    "model_pipeline_known": Field(BOOL, MODEL, "the model records a diffusionPipeline", source=FROM_REQUEST),
    "model_pipeline_components": Field(
        STR, MODEL, "its model_index.json component names, comma-separated", source=FROM_REQUEST
    ),
    "model_hf_repo": Field(
        STR, MODEL, "the Hugging Face repository of an hf:// model, else empty", source=FROM_REQUEST
    ),
    # the runtime, for this request
    "runtime_name": Field(STR, RUNTIME, "metadata.name of the runtime", source=FROM_RUNTIME),
    "runtime_kind": Field(STR, RUNTIME, "ServingRuntime or ClusterServingRuntime", source=FROM_RUNTIME),
    "runtime_namespace": Field(
        STR, RUNTIME, "namespace of a ServingRuntime, empty at cluster scope", source=FROM_RUNTIME
    ),
    "runtime_scope": Field(STR, RUNTIME, "namespace-scoped or cluster-scoped", source=FROM_RUNTIME),
    "runtime_named": Field(
        BOOL,
        RUNTIME,
        "the InferenceService names this runtime (Resolve), rather than OME choosing",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "runtime_labels": Field(LIST, RUNTIME, "the runtime's labels as key=value strings", source=FROM_RUNTIME),
    "runtime_annotations": Field(LIST, RUNTIME, "the runtime's annotations as key=value strings", source=FROM_RUNTIME),
    "runtime_images": Field(LIST, RUNTIME, "every runner image the runtime declares", source=FROM_RUNTIME),
    "runtime_image_unpinned": Field(
        BOOL, RUNTIME, "some runner image has no tag or digest, or uses the tag latest", source=FROM_RUNTIME
    ),
    "runtime_disabled": Field(BOOL, RUNTIME, "spec.disabled is true", source=FROM_RUNTIME),
    "runtime_autoscaler_policy_ref": Field(
        BOOL,
        RUNTIME,
        "the runtime sets an autoscalerPolicyRef: at the top of its spec or in a component's config",
        source=FROM_RUNTIME,
    ),
    "runtime_autoscaler_policy_ref_at": Field(
        STR,
        RUNTIME,
        "where, relative to spec: autoscalerPolicyRef, else engineConfig., decoderConfig. or"
        " routerConfig.autoscalerPolicyRef",
        source=FROM_RUNTIME,
    ),
    "runtime_input_notes": Field(
        STR,
        RUNTIME,
        "what OME reads otherwise than written — a size it reads as 0, a version that matches none, an unknown"
        " operator it reads as Equal, a size range whose min exceeds its max — each naming its field, joined"
        " with '; ' (empty when none)",
        source=FROM_RUNTIME,
    ),
    "runtime_scaling_mode": Field(
        STR,
        RUNTIME,
        "the runtime's spec.scalingPolicy.mode (Independent when it sets none), empty without a policy",
        source=FROM_RUNTIME,
    ),
    "engine_mode_runtime": Field(
        STR, RUNTIME, "mode engineConfig declares (valid values only), or empty", source=FROM_RUNTIME
    ),
    "decoder_mode_runtime": Field(
        STR, RUNTIME, "mode decoderConfig declares (valid values only), or empty", source=FROM_RUNTIME
    ),
    "router_mode_runtime": Field(
        STR, RUNTIME, "mode routerConfig declares (valid values only), or empty", source=FROM_RUNTIME
    ),
    "accelerator_classes_runtime": Field(
        LIST, RUNTIME, "acceleratorRequirements.acceleratorClasses", source=FROM_RUNTIME
    ),
    "accelerator_class_listed": Field(
        BOOL,
        RUNTIME,
        "the runtime lists every accelerator class the InferenceService names",
        True,
        relational=True,
        source=FROM_RUNTIME,
    ),
    "accelerator_memory_min_gib": Field(
        INT,
        RUNTIME,
        "the least GPU memory, in GiB as OME reads spec.capabilities.memoryGB, of the AcceleratorClasses"
        " acceleratorRequirements.acceleratorClasses names (those the catalog defines with one); 0 when none",
        source=FROM_CATALOG,
    ),
    "size_range_set": Field(BOOL, RUNTIME, "the runtime declares modelSizeRange", source=FROM_RUNTIME),
    "size_range_min": Field(STR, RUNTIME, "modelSizeRange.min as written", source=FROM_RUNTIME),
    "size_range_max": Field(STR, RUNTIME, "modelSizeRange.max as written", source=FROM_RUNTIME),
    "size_in_range": Field(
        BOOL,
        RUNTIME,
        "the model's size lies in modelSizeRange (true when either is unknown)",
        True,
        relational=True,
        source=FROM_RUNTIME,
    ),
    "runtime_auto_select": Field(
        BOOL, RUNTIME, "some supportedModelFormats entry sets autoSelect: true", True, source=FROM_RUNTIME
    ),
    "runtime_score": Field(
        INT,
        RUNTIME,
        "the runtime's score: its best counted entry's, as scoring declares",
        2,
        relational=True,
        source=FROM_RUNTIME,
    ),
    # one supportedModelFormats entry, against the model
    "entry_index": Field(INT, ENTRY, "index of the entry in supportedModelFormats", source=FROM_RUNTIME),
    "entry_auto_select": Field(BOOL, ENTRY, "autoSelect is true", True, source=FROM_RUNTIME),
    "entry_counts_for_score": Field(BOOL, ENTRY, "autoSelect is not set to false", True, source=FROM_RUNTIME),
    "entry_format_name": Field(STR, ENTRY, "modelFormat.name", "safetensors", source=FROM_RUNTIME),
    "entry_format_version": Field(STR, ENTRY, "modelFormat.version", source=FROM_RUNTIME),
    "entry_format_version_set": Field(
        BOOL, ENTRY, "modelFormat.version is set (even to an empty string)", source=FROM_RUNTIME
    ),
    "entry_framework_name": Field(STR, ENTRY, "modelFramework.name", source=FROM_RUNTIME),
    "entry_framework_version": Field(STR, ENTRY, "modelFramework.version", source=FROM_RUNTIME),
    "entry_framework_version_set": Field(
        BOOL, ENTRY, "modelFramework.version is set (even to an empty string)", source=FROM_RUNTIME
    ),
    "entry_architecture": Field(STR, ENTRY, "modelArchitecture", source=FROM_RUNTIME),
    "entry_quantization": Field(STR, ENTRY, "quantization", source=FROM_RUNTIME),
    "format_name_match": Field(
        BOOL, ENTRY, "model and entry format names are equal", True, relational=True, source=FROM_RUNTIME
    ),
    "format_version_match": Field(
        BOOL,
        ENTRY,
        "both set and the model's format version passes the entry's version and operator",
        True,
        relational=True,
        source=FROM_RUNTIME,
    ),
    "framework_name_match": Field(
        BOOL, ENTRY, "model and entry framework names are equal", True, relational=True, source=FROM_RUNTIME
    ),
    "framework_version_match": Field(
        BOOL,
        ENTRY,
        "both set and the model's framework version passes the entry's version and operator",
        True,
        relational=True,
        source=FROM_RUNTIME,
    ),
    "entry_score_eligible": Field(
        BOOL,
        ENTRY,
        "OME scores the entry: format and framework names agree and, where both sides set a version, it passes",
        True,
        relational=True,
        source=FROM_RUNTIME,
    ),
    "pipeline_mismatch": Field(
        STR,
        ENTRY,
        "first diffusionPipeline requirement the model fails: pipeline-missing, class, component-missing, library,"
        " type, additional-none, additional-missing; empty when it passes",
        relational=True,
        source=FROM_RUNTIME,
    ),
    "pipeline_component": Field(
        STR, ENTRY, "the pipeline component the mismatch is about", relational=True, source=FROM_RUNTIME
    ),
    "pipeline_model_value": Field(
        STR, ENTRY, "the model's value in the mismatch", relational=True, source=FROM_RUNTIME
    ),
    "pipeline_runtime_value": Field(
        STR, ENTRY, "the entry's value in the mismatch", relational=True, source=FROM_RUNTIME
    ),
    "format_weight": Field(INT, ENTRY, "modelFormat.weight as scoring reads it", 1, source=FROM_RUNTIME),
    "framework_weight": Field(INT, ENTRY, "modelFramework.weight as scoring reads it", 1, source=FROM_RUNTIME),
    "priority": Field(INT, ENTRY, "priority, or the default priority", 1, source=FROM_RUNTIME),
    # one component the InferenceService declares, in the runtime's merge
    "component_name": Field(STR, COMPONENT, "engine, decoder or router", "engine", source=FROM_RUNTIME),
    "component_mode": Field(
        STR, COMPONENT, "the deployment mode the component runs in", "RawDeployment", source=FROM_RUNTIME
    ),
    "component_mode_source": Field(STR, COMPONENT, "what set the component's mode", "default", source=FROM_RUNTIME),
    # --- lint: a catalog model, decided as an InferenceService naming only it would be -----------
    "lint_namespace": Field(
        STR,
        LINT_MODEL,
        "the namespace it is decided in (a ClusterBaseModel: default and each with ServingRuntimes)",
        source=FROM_CATALOG,
    ),
    "lint_model_refusal_rule": Field(
        STR, LINT_MODEL, "the rule refusing such an InferenceService, or empty", source=FROM_CATALOG
    ),
    "lint_model_refusal": Field(STR, LINT_MODEL, "that refusal's message", source=FROM_CATALOG),
    "lint_model_selectable": Field(
        INT, LINT_MODEL, "how many runtimes can be auto-selected for it", 1, source=FROM_CATALOG
    ),
    "lint_model_chosen": Field(STR, LINT_MODEL, "the runtime OME selects (Kind/name), or empty", source=FROM_CATALOG),
    "lint_model_runner_up": Field(STR, LINT_MODEL, "the runtime ranked second, or empty", source=FROM_CATALOG),
    "lint_model_decided_by": Field(
        STR,
        LINT_MODEL,
        "the ranking key that puts the chosen runtime before the runner-up (kind, score, size_distance, name);"
        " empty with fewer than two",
        source=FROM_CATALOG,
    ),
    "lint_model_tied": Field(
        LIST,
        LINT_MODEL,
        "the chosen runtime and each runtime equal to it on every ranking key but the name",
        source=FROM_CATALOG,
    ),
    # --- lint: a catalog runtime, against every catalog model it is in scope for ------------------
    "lint_models": Field(
        INT,
        LINT_RUNTIME,
        "how many models (per namespace) it is in scope for, the models refused outright left out",
        1,
        source=FROM_CATALOG,
    ),
    "lint_runtime_compatible": Field(
        INT, LINT_RUNTIME, "for how many of them it declares support", 1, source=FROM_CATALOG
    ),
    "lint_runtime_selectable": Field(INT, LINT_RUNTIME, "for how many it can be auto-selected", 1, source=FROM_CATALOG),
    "lint_runtime_chosen": Field(INT, LINT_RUNTIME, "for how many OME selects it", 1, source=FROM_CATALOG),
    "lint_runtime_outranked_by": Field(
        LIST,
        LINT_RUNTIME,
        "the runtimes OME selects instead, where it can be selected but is not (Kind/name)",
        source=FROM_CATALOG,
    ),
    "lint_runtime_outranked_on": Field(
        LIST,
        LINT_RUNTIME,
        "the ranking keys that put those first (kind, score, size_distance, name)",
        source=FROM_CATALOG,
    ),
    "lint_runtime_refusal_rule": Field(
        STR,
        LINT_RUNTIME,
        "the first check refusing it when named whatever the model (an InferenceService naming it, with a model"
        " that passes every check), or empty",
        source=FROM_CATALOG,
    ),
    "lint_runtime_refusal_kind": Field(STR, LINT_RUNTIME, "that check's kind", source=FROM_CATALOG),
    "lint_runtime_refusal": Field(STR, LINT_RUNTIME, "that check's reason", source=FROM_CATALOG),
    # --- lint: one supportedModelFormats entry of a catalog runtime ----------------------------
    "lint_entry_matching": Field(
        INT, LINT_ENTRY, "how many of the runtime's models it matches (no entry rule excludes)", 1, source=FROM_CATALOG
    ),
    "lint_entry_selected": Field(
        INT,
        LINT_ENTRY,
        "for how many OME selects the runtime with this entry as the matched one",
        1,
        source=FROM_CATALOG,
    ),
    # --- lint: two runtimes in one scope with entries of the same format and architecture -------
    "lint_pair_first": Field(STR, LINT_PAIR, "one runtime (Kind/name)", source=FROM_CATALOG),
    "lint_pair_second": Field(STR, LINT_PAIR, "the other", source=FROM_CATALOG),
    "lint_pair_namespace": Field(
        STR, LINT_PAIR, "the namespace of their ServingRuntime, empty for two cluster runtimes", source=FROM_CATALOG
    ),
    "lint_pair_format": Field(STR, LINT_PAIR, "the entries' modelFormat.name", source=FROM_CATALOG),
    "lint_pair_architecture": Field(
        STR, LINT_PAIR, "the entries' modelArchitecture (may be empty)", source=FROM_CATALOG
    ),
    "lint_pair_first_range": Field(
        STR, LINT_PAIR, "the first's modelSizeRange as [min, max], empty when none", source=FROM_CATALOG
    ),
    "lint_pair_second_range": Field(STR, LINT_PAIR, "the second's", source=FROM_CATALOG),
    "lint_pair_ranges_set": Field(BOOL, LINT_PAIR, "both declare modelSizeRange", source=FROM_CATALOG),
    "lint_pair_overlap": Field(
        BOOL, LINT_PAIR, "some model size lies in both (a runtime without a range takes any)", source=FROM_CATALOG
    ),
    "lint_pair_auto_select": Field(BOOL, LINT_PAIR, "both set autoSelect on such an entry", source=FROM_CATALOG),
    "lint_pair_same_quantization": Field(
        BOOL, LINT_PAIR, "two such entries ask for the same quantization", source=FROM_CATALOG
    ),
    "lint_pair_same_kind": Field(
        BOOL, LINT_PAIR, "both are of one kind (the kind does not rank one first)", source=FROM_CATALOG
    ),
    "lint_pair_same_priority": Field(
        BOOL,
        LINT_PAIR,
        "what the runtime webhooks warn of: neither disabled, both of one kind, a protocolVersion and"
        " the modelSizeRange shared, and an autoSelect entry of each, equal as OME's"
        " areSupportedModelFormatsEqual compares them, at the same priority",
        source=FROM_CATALOG,
    ),
    # --- lint: an accelerator class name used in the catalog ------------------------------------
    "accelerator_class": Field(STR, LINT_ACCELERATOR, "the name", source=FROM_CATALOG),
    "accelerator_class_defined": Field(
        BOOL, LINT_ACCELERATOR, "an AcceleratorClass of that name is in the catalog", True, source=FROM_CATALOG
    ),
    "accelerator_classes_defined": Field(
        INT, LINT_ACCELERATOR, "how many AcceleratorClasses the catalog holds", source=FROM_CATALOG
    ),
    "accelerator_class_users": Field(
        LIST,
        LINT_ACCELERATOR,
        "what names it (Kind/name): runtimes' acceleratorRequirements and acceleratorConfig, InferenceServices",
        source=FROM_CATALOG,
    ),
    # --- admission: the runtime under review (OME's ServingRuntime webhooks) ----------------------
    "admit_runtimes_in_scope": Field(
        INT,
        ADMIT_RUNTIME,
        "how many runtimes of its kind its scope holds (its namespace's ServingRuntimes, or every"
        " ClusterServingRuntime), itself included when stored",
        source=FROM_CATALOG,
    ),
    "admit_engine_config": Field(BOOL, ADMIT_RUNTIME, "spec.engineConfig is set", source=FROM_RUNTIME),
    "admit_decoder_config": Field(BOOL, ADMIT_RUNTIME, "spec.decoderConfig is set", source=FROM_RUNTIME),
    "admit_workers_set": Field(BOOL, ADMIT_RUNTIME, "spec.workers.size is set", source=FROM_RUNTIME),
    "admit_workers": Field(INT, ADMIT_RUNTIME, "spec.workers.size (0 when unset)", source=FROM_RUNTIME),
    "admit_env_multinode": Field(
        BOOL, ADMIT_RUNTIME, "some spec.containers[].env sets DEPLOYMENT_MODE to MultiNode", source=FROM_RUNTIME
    ),
    "admit_env_raw": Field(
        BOOL, ADMIT_RUNTIME, "some spec.containers[].env sets DEPLOYMENT_MODE to RawDeployment", source=FROM_RUNTIME
    ),
    "admit_unknown_accelerator_classes": Field(
        LIST,
        ADMIT_RUNTIME,
        "acceleratorRequirements.acceleratorClasses no AcceleratorClass defines, in order",
        source=FROM_CATALOG,
    ),
    "admit_unknown_accelerator_classes_text": Field(
        STR, ADMIT_RUNTIME, "that list as Go prints a []string: [a b]", "[]", source=FROM_CATALOG
    ),
    "admit_priorities_differ": Field(
        BOOL,
        ADMIT_RUNTIME,
        "OME's walk of its autoSelect entries finds two of one supportedModelFormats[].name whose priorities"
        " are both set and differ",
        source=FROM_RUNTIME,
    ),
    "admit_priorities_differ_name": Field(STR, ADMIT_RUNTIME, "that name (may be empty)", source=FROM_RUNTIME),
    # --- admission: the runtime under review against one existing runtime and an entry pair -----
    "admit_other_name": Field(STR, ADMIT_PAIR, "metadata.name of the existing runtime", source=FROM_CATALOG),
    "admit_other_same_name": Field(
        BOOL, ADMIT_PAIR, "it has the reviewed runtime's name (an update)", source=FROM_CATALOG
    ),
    "admit_other_disabled": Field(BOOL, ADMIT_PAIR, "it sets spec.disabled: true", source=FROM_CATALOG),
    "admit_protocol_shared": Field(
        BOOL, ADMIT_PAIR, "some protocolVersion of it is one of the reviewed runtime's", source=FROM_CATALOG
    ),
    "admit_ranges_equal": Field(
        BOOL,
        ADMIT_PAIR,
        "both modelSizeRanges are unset, or both set with equal min and max (each as written)",
        source=FROM_CATALOG,
    ),
    "admit_entry_format": Field(
        STR,
        ADMIT_PAIR,
        "the reviewed runtime's entry's supportedModelFormats[].name, else its modelFormat.name"
        " (catalog runtimes set no name)",
        source=FROM_CATALOG,
    ),
    "admit_both_auto_select": Field(BOOL, ADMIT_PAIR, "both entries set autoSelect: true", source=FROM_CATALOG),
    "admit_same_priority": Field(BOOL, ADMIT_PAIR, "both entries set the same priority", source=FROM_CATALOG),
}


# the scopes whose records the core adds a backend's facts to (facts/derive.py)
_BACKEND_SCOPES = (MODEL, RUNTIME)


def catalogue(backends: Sequence[Backend[Any]]) -> dict[str, Field]:
    """The core's fields and each backend's: a backend declares model and runtime fields only,
    each named with its prefix, none read from the catalog, and none that the core or another
    backend declares. Every field
    declares what it reads (records.py's SOURCES); a request or model field reads no runtime."""
    out = dict(CORE_FIELDS)
    for backend in backends:
        for name, spec in backend.fields.items():
            if name in out:
                raise ValueError(f"{backend.name}: fact field {name!r} is declared already")
            if not name.startswith(backend.prefix + "_"):
                raise ValueError(
                    f"{backend.name}: fact field {name!r} does not begin with the backend's prefix {backend.prefix}_"
                )
            if spec.scope not in _BACKEND_SCOPES:
                raise ValueError(
                    f"{backend.name}: fact field {name!r} has scope {spec.scope!r}; a backend's fields are"
                    f" {' or '.join(_BACKEND_SCOPES)} fields"
                )
            if spec.source == FROM_CATALOG:
                # a backend derives its facts from the runtime and the request (backends/interface.py)
                raise ValueError(
                    f"{backend.name}: fact field {name!r} has source {FROM_CATALOG!r}; a backend's facts read"
                    f" the {FROM_RUNTIME} or the {FROM_REQUEST} only"
                )
            out[name] = spec
    for name, spec in out.items():
        if spec.source not in SOURCES:
            raise ValueError(
                f"fact field {name!r} has source {spec.source!r}; a fact reads one of {', '.join(SOURCES)}"
            )
        if spec.scope in (REQUEST, MODEL) and spec.source == FROM_RUNTIME:
            raise ValueError(f"fact field {name!r} is a {spec.scope} field: it cannot read the {FROM_RUNTIME}")
    return out


FIELDS = catalogue(BACKENDS)


def fields_of(scope: str, fields: Mapping[str, Field] = FIELDS) -> dict[str, Field]:
    """The fields of ``fields`` (a catalogue: the registry's by default) a record of ``scope``
    carries (its own and its outer scopes')."""
    seen = VISIBLE[scope]
    alone = scope in LINT_SCOPES or scope in ADMISSION_SCOPES
    return {
        name: spec
        for name, spec in fields.items()
        if spec.scope in seen and not (alone and spec.scope in (RUNTIME, ENTRY) and not spec.intrinsic)
    }


def neutral_record(scope: str, fields: Mapping[str, Field] = FIELDS) -> dict[str, Any]:
    """A record of ``scope`` where every field (of ``fields``) has its neutral value."""
    return {name: spec.neutral_value for name, spec in fields_of(scope, fields).items()}


def reader(
    names: Sequence[str], fields: Mapping[str, Field] = FIELDS
) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """The values of fields ``names`` in a record, as a hashable key (a list field's as a
    tuple): read in C but for the list fields, as memo keys read dozens of fields a request."""
    lists = [i for i, name in enumerate(names) if fields[name].type == LIST]
    if len(names) < 2:
        return lambda record: tuple(tuple(record[n]) if i in lists else record[n] for i, n in enumerate(names))
    read = itemgetter(*names)
    if not lists:
        return read

    def values(record: Mapping[str, Any]) -> tuple[Any, ...]:
        found = list(read(record))
        for i in lists:
            found[i] = tuple(found[i])
        return tuple(found)

    return values
