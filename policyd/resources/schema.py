"""The fields OME's v1beta1 CRDs declare, as far down as policyd reads a manifest: what
"unknown field" means, as kubectl's field validation reports it (``unknown field "spec.modle"``).

A compact schema kept in the package rather than the CRDs themselves (large, and not ours to
ship): every level policyd parses lists its fields; a subtree policyd passes through to
renderers (pod specs, runners, scaling settings, free-form maps) is OPEN — any content. A test
checks each listed level against the CRDs' openAPI schemas, so a field the CRDs gain or lose
shows up there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.resources.objects import ACCELERATOR_CLASS_KIND, ISVC_KIND, MODEL_KINDS, PIPELINE_COMPONENTS, RUNTIME_KINDS


class _Open:
    def __repr__(self) -> str:
        return "OPEN"


OPEN = _Open()  # any content: policyd does not read below here
Fields = Mapping[str, "Fields | _Open"]  # a list of objects is checked element by element with the same Fields


def _all_open(*names: str) -> dict[str, _Open]:
    return dict.fromkeys(names, OPEN)


# metav1.ObjectMeta: the CRDs only say "type: object"; these are the Kubernetes API's fields.
OBJECT_META: Fields = _all_open(
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)

VERSIONED: Fields = _all_open("name", "version", "operator", "weight")
PIPELINE: Fields = {
    "className": OPEN,
    **{name: _all_open("library", "type") for name in PIPELINE_COMPONENTS},
    "additionalComponents": OPEN,
}

MODEL_SPEC: Fields = {
    **_all_open(
        "additionalMetadata",
        "apiCapabilities",
        "compartmentID",
        "disabled",
        "displayName",
        "distribution",
        "maxTokens",
        "modelArchitecture",
        "modelCapabilities",
        "modelConfiguration",
        "modelParameterSize",
        "modelType",
        "quantization",
        "servingMode",
        "vendor",
        "version",
    ),
    "diffusionPipeline": PIPELINE,
    "modelFormat": VERSIONED,
    "modelFramework": VERSIONED,
    "storage": _all_open(
        "downloadPolicy", "key", "nodeAffinity", "nodeSelector", "parameters", "path", "schemaPath", "storageUri"
    ),
}

SUPPORTED_MODEL_FORMAT: Fields = {
    **_all_open(
        "acceleratorConfig",
        "autoSelect",
        "modelArchitecture",
        "modelType",
        "name",
        "priority",
        "quantization",
        "version",
    ),
    "diffusionPipeline": PIPELINE,
    "modelFormat": VERSIONED,
    "modelFramework": VERSIONED,
}

RUNTIME_SPEC: Fields = {
    **_all_open(
        "affinity",
        "annotations",
        "autoscalerPolicyRef",
        "containers",
        "decoderConfig",
        "disabled",
        "dnsPolicy",
        "engineConfig",
        "hostIPC",
        "hostNetwork",
        "imagePullSecrets",
        "labels",
        "nodeSelector",
        "protocolVersions",
        "routerConfig",
        "scalingPolicy",
        "schedulerName",
        "tolerations",
        "volumes",
        "workers",
    ),
    "acceleratorRequirements": _all_open(
        "acceleratorClasses",
        "minArchitectureVersion",
        "minComputePerformanceTFLOPS",
        "minMemory",
        "preferredPrecisions",
        "requiredFeatures",
    ),
    "modelSizeRange": _all_open("max", "min"),
    "supportedModelFormats": SUPPORTED_MODEL_FORMAT,
}

ISVC_SPEC: Fields = {
    **_all_open(
        "autoscalerPolicyRef",
        "decoder",
        "deploymentMode",
        "engine",
        "kedaConfig",
        "predictor",
        "router",
        "scalingPolicy",
    ),
    "acceleratorSelector": _all_open("acceleratorClass", "constraints", "policy"),
    "model": _all_open("apiGroup", "fineTunedWeights", "kind", "name"),
    "runtime": _all_open("apiGroup", "autoSync", "kind", "name", "revision"),
}

# policyd reads an AcceleratorClass's name (and shows vendor and family); the rest is the cluster's
ACCELERATOR_CLASS_SPEC: Fields = _all_open(
    "capabilities", "cost", "discovery", "family", "integration", "model", "resources", "vendor"
)


def _object(spec: Fields) -> Fields:
    return {"apiVersion": OPEN, "kind": OPEN, "metadata": OBJECT_META, "spec": spec, "status": OPEN}


SCHEMAS: Mapping[str, Fields] = {
    **{kind: _object(MODEL_SPEC) for kind in MODEL_KINDS},
    **{kind: _object(RUNTIME_SPEC) for kind in RUNTIME_KINDS},
    ISVC_KIND: _object(ISVC_SPEC),
    ACCELERATOR_CLASS_KIND: _object(ACCELERATOR_CLASS_SPEC),
}


def _walk(value: Any, fields: Fields, path: str, out: list[str]) -> None:
    """Appends to ``out``; a field's path is made only for one reported or walked into (this runs
    on every manifest a request carries)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, fields, f"{path}[{i}]", out)
        return
    if type(value) is not dict and not isinstance(value, Mapping):
        return  # a wrong type is the parser's error, with its own message
    for key, item in value.items():
        below = fields.get(str(key))
        if below is None:
            out.append(f"{path}.{key}" if path else str(key))
        elif not isinstance(below, _Open) and isinstance(item, list | Mapping):
            _walk(item, below, f"{path}.{key}" if path else str(key), out)


def unknown_fields(doc: Mapping[str, Any]) -> list[str]:
    """The paths of the fields a manifest sets that its kind does not declare (none for an unknown kind:
    that is an error of its own)."""
    schema = SCHEMAS.get(str(doc.get("kind")))
    out: list[str] = []
    if schema is not None:
        _walk(doc, schema, "", out)
    return out
