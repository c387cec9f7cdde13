"""The one parser from Kubernetes manifests (dicts, YAML text) to resources."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import json_format

from policyd.contract import resources_pb2 as rpb
from policyd.errors import InvalidInput
from policyd.resources import fields as f
from policyd.resources import kinds as ome
from policyd.resources import safe_yaml
from policyd.resources.deployment_modes import COMPONENTS, check_mode
from policyd.resources.objects import (
    ACCELERATOR_CLASS_KIND,
    ISVC_KIND,
    MODEL_KINDS,
    NAMESPACED_KINDS,
    PIPELINE_COMPONENTS,
    RUNTIME_KINDS,
    AcceleratorClass,
    BaseModel,
    Entry,
    InferenceService,
    Meta,
    ModelRef,
    Pipeline,
    PipelineComponent,
    RuntimeRef,
    ServingRuntime,
    SizeRange,
    VersionedName,
    pack,
)
from policyd.resources.quantities import gib, quantity_value
from policyd.resources.sizes import parse_size, unreadable_size
from policyd.resources.versions import Version, parse_version, read_operator, unreadable_version

OME_GROUP = f"{ome.GROUP}/"
API_VERSION = ome.API_VERSION
DEFAULT_NAMESPACE = "default"  # where a namespaced manifest without metadata.namespace lives, as with kubectl
ACCELERATOR_CLASS_ANNOTATION = "ome.io/accelerator-class"
Resource = BaseModel | ServingRuntime | InferenceService | AcceleratorClass
KINDS = (*MODEL_KINDS, *RUNTIME_KINDS, ISVC_KIND, ACCELERATOR_CLASS_KIND)
INT32 = (-(2**31), 2**31 - 1)
# A runtime's scores are sums of (format weight + framework weight) x priority over its entries, in
# 64 bits on the wire: the weights and priorities it declares must keep that sum within them.
MAX_SCORE = 2**62
RULE_SCORING_LIMIT = 1_000_000  # rulefile.schema.json's maximum for scoring's weights and priority


def load_yaml(text: str, source: str = "input", values: str | None = None) -> list[Any]:
    """Every non-empty document of a (multi-document) YAML or JSON text, parsed with limits
    into values JSON can carry (policyd.resources.safe_yaml)."""
    return safe_yaml.load_all(text, source, values=values)


def load_documents(text: str, source: str = "input", values: str | None = None) -> list[dict[str, Any]]:
    """Every document, each of which must be a manifest (an object)."""
    docs = load_yaml(text, source, values)
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise InvalidInput(f"{source}[{i}]", "a manifest must be an object")
    return docs


_CANONICAL = json.JSONEncoder(sort_keys=True, default=str)  # made once, not on every call as json.dumps does


def content_digest(doc: Mapping[str, Any]) -> str:
    """A short digest of a manifest's content, independent of key order."""
    return hashlib.sha256(_CANONICAL.encode(doc).encode()).hexdigest()[:16]


def check_api_version(doc: Mapping[str, Any], kind: str) -> None:
    """OME's objects are ome.io/v1beta1; a kind of the same name in another API group
    (serving.kserve.io/v1beta1 InferenceService) is not OME's. A manifest without apiVersion is
    taken as OME's (the typed protobuf form has none)."""
    api = doc.get("apiVersion")
    if api is None or api == API_VERSION:
        return
    if not isinstance(api, str):
        raise InvalidInput("apiVersion", f"must be a string, got {f.type_name(api)}")
    raise InvalidInput("apiVersion", f'no matches for kind "{kind}" in version "{api}" (policyd reads {API_VERSION})')


def parse_object(doc: Mapping[str, Any]) -> Resource:
    """Any supported OME object, by its kind."""
    kind = f.string(doc, "kind", "kind", required=True)
    if kind in MODEL_KINDS:
        return parse_model(doc)
    if kind in RUNTIME_KINDS:
        return parse_runtime(doc)
    if kind == ISVC_KIND:
        return parse_inference_service(doc)
    if kind == ACCELERATOR_CLASS_KIND:
        return parse_accelerator_class(doc)
    raise InvalidInput("kind", f"unknown kind {kind!r} (one of {', '.join(KINDS)})")


def is_ome_object(doc: Mapping[str, Any]) -> bool:
    api = doc.get("apiVersion")
    return not isinstance(api, str) or api.startswith(OME_GROUP)


def _meta(doc: Mapping[str, Any], namespaced: bool) -> Meta:
    meta = f.obj(doc, "metadata", "metadata", required=True) or {}
    name = f.string(meta, "name", "metadata.name", required=True)
    namespace = f.string(meta, "namespace", "metadata.namespace") or DEFAULT_NAMESPACE
    return Meta(
        name=name,
        namespace=namespace if namespaced else "",
        labels=f.string_map(meta, "labels", "metadata.labels"),
        annotations=f.string_map(meta, "annotations", "metadata.annotations"),
    )


def _version(text: str, field: str, notes: list[str]) -> Version | None:
    """The version OME compares, or None where it reads none (its comparisons then fail)."""
    if not text:
        return None
    try:
        return parse_version(text, field)
    except InvalidInput:
        notes.append(unreadable_version(field, text))
        return None


def _size(text: str, field: str, notes: list[str]) -> float:
    """The parameter count OME reads: 0 for what it cannot read."""
    size = parse_size(text)
    if size is None:
        notes.append(unreadable_size(field, text))
        return 0.0
    return size


def _versioned(doc: Mapping[str, Any] | None, path: str, entry: bool, notes: list[str]) -> VersionedName | None:
    if doc is None:
        return None
    name = f.string(doc, "name", f"{path}.name", required=entry)
    version = f.string(doc, "version", f"{path}.version")
    weight = f.integer(doc, "weight", f"{path}.weight")
    if weight is not None and not INT32[0] <= weight <= INT32[1]:
        # the CRD says int64; the contract (VersionedName.weight) and the score carry 32 bits
        raise InvalidInput(f"{path}.weight", f"must be between {INT32[0]} and {INT32[1]}, got {weight}")
    operator, note = read_operator(f.string(doc, "operator", f"{path}.operator"), f"{path}.operator")
    if note:
        notes.append(note)
    return VersionedName(
        name=name,
        version=version,
        parsed=_version(version, f"{path}.version", notes),
        # OME records version "" for a model_index.json without _diffusers_version: set, matching nothing
        version_set=doc.get("version") is not None,
        operator=operator,
        weight=1 if weight is None else weight,
        weight_set=weight is not None,
    )


def _component(doc: Mapping[str, Any], key: str, path: str) -> PipelineComponent | None:
    value = f.obj(doc, key, path)
    if value is None:
        return None
    library = value.get("library")
    kind = value.get("type")
    return PipelineComponent(
        library=None if library is None else f.string(value, "library", f"{path}.library"),
        type=None if kind is None else f.string(value, "type", f"{path}.type"),
    )


def _pipeline(doc: Mapping[str, Any], path: str) -> Pipeline | None:
    value = f.obj(doc, "diffusionPipeline", path)
    if value is None:
        return None
    components = {
        name: comp for name in PIPELINE_COMPONENTS if (comp := _component(value, name, f"{path}.{name}")) is not None
    }
    extra = f.obj(value, "additionalComponents", f"{path}.additionalComponents") or {}
    additional = {
        str(key): comp
        for key in extra
        if (comp := _component(extra, key, f"{path}.additionalComponents.{key}")) is not None
    }
    class_name = value.get("className")
    return Pipeline(
        class_name=None if class_name is None else f.string(value, "className", f"{path}.className"),
        components=components,
        additional=additional,
    )


def parse_model(doc: Mapping[str, Any]) -> BaseModel:
    kind = f.one_of(f.string(doc, "kind", "kind", required=True), MODEL_KINDS, "kind", "model kind")
    check_api_version(doc, kind)
    meta = _meta(doc, namespaced=kind in NAMESPACED_KINDS)
    spec = f.obj(doc, "spec", "spec") or {}
    size_text = f.string(spec, "modelParameterSize", "spec.modelParameterSize")
    storage = f.obj(spec, "storage", "spec.storage") or {}
    notes: list[str] = []
    model_format = _versioned(f.obj(spec, "modelFormat", "spec.modelFormat"), "spec.modelFormat", False, notes)
    framework = _versioned(f.obj(spec, "modelFramework", "spec.modelFramework"), "spec.modelFramework", False, notes)
    return BaseModel(
        kind=kind,
        meta=meta,
        format=model_format,
        framework=framework,
        architecture=f.string(spec, "modelArchitecture", "spec.modelArchitecture"),
        quantization=f.string(spec, "quantization", "spec.quantization"),
        size=_size(size_text, "spec.modelParameterSize", notes) if size_text else None,
        size_text=size_text,
        pipeline=_pipeline(spec, "spec.diffusionPipeline"),
        disabled=f.boolean(spec, "disabled", "spec.disabled", False),
        distribution=f.string(spec, "distribution", "spec.distribution"),
        storage_uri=f.string(storage, "storageUri", "spec.storage.storageUri"),
        storage_path=f.string(storage, "path", "spec.storage.path"),
        packed=pack(doc),
        digest=content_digest(doc),
        notes=tuple(notes),
    )


def _entry(doc: Any, index: int, notes: list[str]) -> Entry:
    path = f"spec.supportedModelFormats[{index}]"
    if not isinstance(doc, Mapping):
        raise InvalidInput(path, "must be an object")
    model_format = _versioned(
        f.obj(doc, "modelFormat", f"{path}.modelFormat", required=True), f"{path}.modelFormat", True, notes
    )
    framework = _versioned(
        f.obj(doc, "modelFramework", f"{path}.modelFramework", required=True), f"{path}.modelFramework", True, notes
    )
    assert model_format is not None and framework is not None  # required=True above
    return Entry(
        index=index,
        format=model_format,
        framework=framework,
        architecture=f.string(doc, "modelArchitecture", f"{path}.modelArchitecture"),
        quantization=f.string(doc, "quantization", f"{path}.quantization"),
        auto_select=None
        if doc.get("autoSelect") is None
        else f.boolean(doc, "autoSelect", f"{path}.autoSelect", False),
        priority=_priority(doc, f"{path}.priority"),
        pipeline=_pipeline(doc, f"{path}.diffusionPipeline"),
        accelerator_config=_accelerator_config(doc, f"{path}.acceleratorConfig"),
    )


def _accelerator_config(doc: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """acceleratorConfig, each class's settings checked against the contract's message (what
    answers carry): a word where an integer belongs is refused here, not in a later answer."""
    config = f.obj(doc, "acceleratorConfig", path) or {}
    for name, settings in config.items():
        try:
            json_format.ParseDict(settings, rpb.AcceleratorModelConfig(), ignore_unknown_fields=True)
        except (json_format.ParseError, TypeError, ValueError) as err:
            raise InvalidInput(f"{path}.{name}", str(err)) from None
    return config


def _check_scores(entries: tuple[Entry, ...]) -> None:
    # a rule file's default and zero weights and default priority are at most RULE_SCORING_LIMIT
    low = RULE_SCORING_LIMIT
    bound = sum(
        (max(abs(e.format.weight), low) + max(abs(e.framework.weight), low)) * max(e.priority or 0, low)
        for e in entries
    )
    if bound > MAX_SCORE:
        raise InvalidInput("spec.supportedModelFormats", "weights and priorities give scores beyond 64 bits")


def _priority(doc: Mapping[str, Any], path: str) -> int | None:
    value = f.integer(doc, "priority", path)
    if value is not None and not 1 <= value <= 2**31 - 1:
        # the CRD's minimum, and its int32
        raise InvalidInput(path, f"must be between 1 and {2**31 - 1}, got {value}")
    return value


def _scaling_mode(spec: Mapping[str, Any], path: str) -> str:
    """spec.scalingPolicy.mode: Independent (the default) when the policy names none; empty without a policy."""
    policy = f.obj(spec, "scalingPolicy", path)
    if policy is None:
        return ""
    return f.string(policy, "mode", f"{path}.mode") or "Independent"


def _images(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Every runner image the runtime declares, in document order."""
    found: list[str] = []

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, Mapping):
            runner = node.get("runner")
            if isinstance(runner, Mapping) and isinstance(runner.get("image"), str):
                yield runner["image"]
            for key in ("leader", "worker"):
                yield from walk(node.get(key))

    for component in COMPONENTS:
        found.extend(walk(spec.get(f"{component}Config")))
    return tuple(found)


def _autoscaler_policy_ref(spec: Mapping[str, Any]) -> str:
    """Where the runtime sets an autoscalerPolicyRef (relative to spec, the top level first), or ""."""
    for where in ("", *(f"{component}Config" for component in COMPONENTS)):
        node = spec.get(where) if where else spec
        if isinstance(node, Mapping) and node.get("autoscalerPolicyRef") is not None:
            return f"{where}.autoscalerPolicyRef" if where else "autoscalerPolicyRef"
    return ""


def parse_runtime(doc: Mapping[str, Any]) -> ServingRuntime:
    kind = f.one_of(f.string(doc, "kind", "kind", required=True), RUNTIME_KINDS, "kind", "runtime kind")
    check_api_version(doc, kind)
    meta = _meta(doc, namespaced=kind in NAMESPACED_KINDS)
    spec = f.obj(doc, "spec", "spec") or {}
    notes: list[str] = []
    entries = tuple(
        _entry(e, i, notes) for i, e in enumerate(f.items(spec, "supportedModelFormats", "spec.supportedModelFormats"))
    )
    _check_scores(entries)
    size_range = None
    if (rng := f.obj(spec, "modelSizeRange", "spec.modelSizeRange")) is not None:
        low = f.string(rng, "min", "spec.modelSizeRange.min")
        high = f.string(rng, "max", "spec.modelSizeRange.max")
        if low or high:
            size_range = SizeRange(
                min_text=low,
                max_text=high,
                min=_size(low, "spec.modelSizeRange.min", notes) if low else 0.0,
                max=_size(high, "spec.modelSizeRange.max", notes) if high else float("inf"),
            )
            if size_range.min > size_range.max:
                notes.append(f"spec.modelSizeRange: min {low!r} is greater than max {high!r}; no model size is in it")
    classes = None
    if (req := f.obj(spec, "acceleratorRequirements", "spec.acceleratorRequirements")) is not None:
        classes = f.strings(req, "acceleratorClasses", "spec.acceleratorRequirements.acceleratorClasses")
    components = {}
    for name in COMPONENTS:
        config = f.obj(spec, f"{name}Config", f"spec.{name}Config")
        if config is not None:
            components[name] = f.string_map(config, "annotations", f"spec.{name}Config.annotations")
    return ServingRuntime(
        kind=kind,
        meta=meta,
        entries=entries,
        size_range=size_range,
        accelerator_classes=classes,
        disabled=f.boolean(spec, "disabled", "spec.disabled", False),
        components=components,
        images=_images(spec),
        autoscaler_policy_ref=_autoscaler_policy_ref(spec),
        scaling_mode=_scaling_mode(spec, "spec.scalingPolicy"),
        packed=pack(doc),
        digest=content_digest(doc),
        shape=content_digest({k: v for k, v in doc.items() if k != "metadata"}),
        notes=tuple(notes),
    )


def parse_inference_service(doc: Mapping[str, Any]) -> InferenceService:
    kind = f.string(doc, "kind", "kind") or ISVC_KIND
    f.one_of(kind, (ISVC_KIND,), "kind", "kind")
    check_api_version(doc, kind)
    meta = _meta(doc, namespaced=True)
    deciding, rest = _deciding(doc)
    shape = content_digest(deciding)
    spec = f.obj(doc, "spec", "spec", required=True) or {}
    model = None
    if (ref := f.obj(spec, "model", "spec.model")) is not None:
        model_kind = f.string(ref, "kind", "spec.model.kind") or "ClusterBaseModel"
        model = ModelRef(
            name=f.string(ref, "name", "spec.model.name", required=True),
            kind=f.one_of(model_kind, MODEL_KINDS, "spec.model.kind", "model kind"),
        )
    runtime = None
    if (ref := f.obj(spec, "runtime", "spec.runtime")) is not None:
        runtime_kind = f.string(ref, "kind", "spec.runtime.kind")
        runtime = RuntimeRef(
            name=f.string(ref, "name", "spec.runtime.name", required=True),
            kind=f.one_of(runtime_kind or "ClusterServingRuntime", RUNTIME_KINDS, "spec.runtime.kind", "runtime kind"),
            auto_sync=f.boolean(ref, "autoSync", "spec.runtime.autoSync", True),
            revision=f.string(ref, "revision", "spec.runtime.revision"),
        )
    components = {}
    annotated = meta.annotations.get(ACCELERATOR_CLASS_ANNOTATION, "")
    selector = f.obj(spec, "acceleratorSelector", "spec.acceleratorSelector") or {}
    selected = f.string(selector, "acceleratorClass", "spec.acceleratorSelector.acceleratorClass")
    classes = [annotated, selected]
    placements = {}
    for name in COMPONENTS:
        component = f.obj(spec, name, f"spec.{name}")
        if component is not None:
            components[name] = f.string_map(component, "annotations", f"spec.{name}.annotations")
            if name in ("engine", "decoder"):
                override = f.obj(component, "acceleratorOverride", f"spec.{name}.acceleratorOverride") or {}
                own = f.string(override, "acceleratorClass", f"spec.{name}.acceleratorOverride.acceleratorClass")
                classes.append(own)
                # the most specific the InferenceService names
                if placed := own or selected or annotated:
                    placements[name] = placed
    return InferenceService(
        meta=meta,
        model=model,
        runtime=runtime,
        deployment_mode=check_mode(f.string(spec, "deploymentMode", "spec.deploymentMode"), "spec.deploymentMode"),
        components=components,
        accelerator_classes=tuple(dict.fromkeys(c for c in classes if c)),
        placements=placements,
        scaling_mode=_scaling_mode(spec, "spec.scalingPolicy"),
        raw=doc,
        digest=hashlib.sha256(f"{meta.namespace}/{meta.name}/{shape}/{content_digest(rest)}".encode()).hexdigest()[:16],
        shape=shape,
    )


# what an InferenceService's facts are read from besides its spec (and its name and namespace)
_DECIDING_META = ("labels", "annotations")


def _deciding(doc: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest split into what decides it (all but its status and its metadata's name,
    namespace and system fields) and the rest. A review's object carries a uid, a resourceVersion
    and managed fields of its own: only what decides keys the verdicts it shares with others."""
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    deciding = {k: v for k, v in doc.items() if k not in ("metadata", "status")}
    deciding["metadata"] = {k: meta[k] for k in _DECIDING_META if k in meta}
    skipped = (*_DECIDING_META, "name", "namespace")
    rest = {"metadata": {k: v for k, v in meta.items() if k not in skipped}, "status": doc.get("status")}
    return deciding, rest


def parse_accelerator_class(doc: Mapping[str, Any]) -> AcceleratorClass:
    check_api_version(doc, ACCELERATOR_CLASS_KIND)
    spec = f.obj(doc, "spec", "spec") or {}
    capabilities = f.obj(spec, "capabilities", "spec.capabilities") or {}
    memory = capabilities.get("memoryGB")
    return AcceleratorClass(
        meta=_meta(doc, namespaced=False),
        vendor=f.string(spec, "vendor", "spec.vendor"),
        family=f.string(spec, "family", "spec.family"),
        raw=doc,
        digest=content_digest(doc),
        memory_gib=None if memory is None else gib(quantity_value(memory, "spec.capabilities.memoryGB")),
    )
