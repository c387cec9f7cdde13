"""Derive fact records from a request, a runtime and its entries. Derivation
only describes; the rules judge."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from policyd.facts import diffusers_backend
from policyd.resources.objects import BaseModel, Entry, InferenceService, ServingRuntime, VersionedName
from policyd.semantics.format_label import format_label
from policyd.semantics.modes import annotated_mode, requested_mode
from policyd.semantics.pipelines import first_mismatch
from policyd.semantics.versions import version_satisfies

Record = dict[str, Any]
T = TypeVar("T")
# Facts that depend only on manifests' content, by the digests of those manifests: the
# same runtime (and model) yields the same facts on every request.
_MEMO_LIMIT = 50_000
_TEMPLATES: dict[tuple[str, str], Record] = {}
_ENTRIES: dict[tuple[str, str, Defaults], list[Record]] = {}
_TAG = re.compile(r":(?P<tag>[\w][\w.-]{0,127})$")


@dataclass(frozen=True)
class Subject:
    """What a decision is about: a model, with the InferenceService that serves it when there is one."""

    model: BaseModel
    isvc: InferenceService | None
    namespace: str


@dataclass(frozen=True)
class Defaults:
    weight: int
    priority: int


def image_unpinned(image: str) -> bool:
    """True when an image reference floats: no tag and no digest, or the tag ``latest``."""
    if "@" in image:
        return False
    match = _TAG.search(image.rsplit("/", 1)[-1])
    return match is None or match.group("tag") == "latest"


def _pairs(values: Mapping[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(values.items())]


def subject_facts(subject: Subject) -> Record:
    """Fields that depend only on the request (computed once per request)."""
    model, isvc = subject.model, subject.isvc
    components = isvc.components if isvc else {}
    spec_mode = isvc.deployment_mode if isvc else ""
    return {
        "namespace": subject.namespace,
        "isvc_name": isvc.meta.name if isvc else "",
        "isvc_has_decoder": "decoder" in components,
        "isvc_has_router": "router" in components,
        "accelerator_class_requested": isvc.accelerator_class if isvc else "",
        "engine_mode_requested": requested_mode(components.get("engine"), spec_mode) if "engine" in components else "",
        "decoder_mode_requested": requested_mode(components.get("decoder"), spec_mode)
        if "decoder" in components
        else "",
        "router_mode_requested": requested_mode(components.get("router"), spec_mode) if "router" in components else "",
        "model_name": model.meta.name,
        "model_kind": model.kind,
        "model_size_known": model.size is not None,
        "model_size": model.size_text,
        "model_format_label": format_label(model),
        "model_format_name": model.format.name if model.format else "",
        "model_format_version": model.format.version if model.format else "",
        "model_framework_name": model.framework.name if model.framework else "",
        "model_framework_version": model.framework.version if model.framework else "",
        "model_architecture": model.architecture,
        "model_quantization": model.quantization,
        **diffusers_backend.model_facts(model),
    }


def _memo(cache: dict[Any, T], key: Any, compute: Callable[[], T]) -> T:
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= _MEMO_LIMIT:
            cache.clear()
        hit = cache[key] = compute()
    return hit


def _template(subject: Subject, subject_record: Record, runtime: ServingRuntime) -> Record:
    """A record of every field for one runtime: its own facts (and its engine's, as the
    InferenceService runs it) with the request's and the entry's fields in place to be
    overwritten, so that a record is a copy and overwrites — never a dict that grows."""
    key = (runtime.digest, diffusers_backend.engine_key(subject.isvc))
    return _memo(
        _TEMPLATES,
        key,
        lambda: {
            **subject_record,
            **_runtime_only_facts(runtime),
            **runtime_facts(subject, runtime),
            **diffusers_backend.engine_facts(runtime, subject.isvc),
            **_NO_ENTRY,
        },
    )


def _runtime_only_facts(runtime: ServingRuntime) -> Record:
    rng = runtime.size_range
    return {
        "runtime_name": runtime.meta.name,
        "runtime_kind": runtime.kind,
        "runtime_namespace": runtime.meta.namespace,
        "runtime_labels": _pairs(runtime.meta.labels),
        "runtime_annotations": _pairs(runtime.meta.annotations),
        "runtime_images": list(runtime.images),
        "runtime_image_unpinned": any(image_unpinned(i) for i in runtime.images),
        "runtime_disabled": runtime.disabled,
        "engine_mode_runtime": annotated_mode(runtime.components.get("engine")),
        "decoder_mode_runtime": annotated_mode(runtime.components.get("decoder")),
        "router_mode_runtime": annotated_mode(runtime.components.get("router")),
        "accelerator_classes_runtime": list(runtime.accelerator_classes or ()),
        "size_range_set": rng is not None,
        "size_range_min": rng.min_text if rng else "",
        "size_range_max": rng.max_text if rng else "",
    }


def runtime_facts(subject: Subject, runtime: ServingRuntime) -> Record:
    """Fields about one runtime for this request, besides its intrinsic ones."""
    rng = runtime.size_range
    size = subject.model.size
    requested_class = subject.isvc.accelerator_class if subject.isvc else ""
    return {
        "accelerator_class_listed": not requested_class or requested_class in (runtime.accelerator_classes or ()),
        "size_in_range": rng is None or size is None or rng.min <= size <= rng.max,
    }


def _version_match(model: VersionedName | None, entry: VersionedName) -> bool:
    if entry.parsed is None:
        return True
    if model is None or model.parsed is None:
        return False
    return version_satisfies(model.parsed, entry.parsed, entry.operator)


# an entry's fields for a runtime without supportedModelFormats
_NO_ENTRY: Record = {
    "entry_index": -1,
    "entry_auto_select": False,
    "entry_format_name": "",
    "entry_format_version": "",
    "entry_framework_name": "",
    "entry_framework_version": "",
    "entry_architecture": "",
    "entry_quantization": "",
    "format_name_match": False,
    "format_version_match": False,
    "framework_name_match": False,
    "framework_version_match": False,
    "pipeline_mismatch": "",
    "pipeline_component": "",
    "pipeline_model_value": "",
    "pipeline_runtime_value": "",
    "format_weight": 0,
    "framework_weight": 0,
    "priority": 0,
}


def entry_facts(model: BaseModel, entry: Entry | None, defaults: Defaults) -> Record:
    """Fields about one supportedModelFormats entry against the model."""
    if entry is None:
        return dict(_NO_ENTRY)
    mismatch = first_mismatch(model.pipeline, entry.pipeline)
    return {
        "entry_index": entry.index,
        "entry_auto_select": entry.auto_select,
        "entry_format_name": entry.format.name,
        "entry_format_version": entry.format.version,
        "entry_framework_name": entry.framework.name,
        "entry_framework_version": entry.framework.version,
        "entry_architecture": entry.architecture,
        "entry_quantization": entry.quantization,
        "format_name_match": model.format is not None and model.format.name == entry.format.name,
        "format_version_match": _version_match(model.format, entry.format),
        "framework_name_match": model.framework is not None and model.framework.name == entry.framework.name,
        "framework_version_match": _version_match(model.framework, entry.framework),
        "pipeline_mismatch": mismatch.kind if mismatch else "",
        "pipeline_component": mismatch.component if mismatch else "",
        "pipeline_model_value": mismatch.model_value if mismatch else "",
        "pipeline_runtime_value": mismatch.runtime_value if mismatch else "",
        "format_weight": entry.format.weight if entry.format.weight_set else defaults.weight,
        "framework_weight": entry.framework.weight if entry.framework.weight_set else defaults.weight,
        "priority": defaults.priority if entry.priority is None else entry.priority,
    }


def records(subject: Subject, subject_record: Record, runtime: ServingRuntime, defaults: Defaults) -> list[Record]:
    """One record per entry of ``runtime`` (one with entry_index -1 when it has none)."""
    template = _template(subject, subject_record, runtime)
    request = runtime_facts(subject, runtime)
    entries: tuple[Entry | None, ...] = runtime.entries or (None,)
    key = (subject.model.digest, runtime.digest, defaults)
    per_entry = _memo(_ENTRIES, key, lambda: [entry_facts(subject.model, e, defaults) for e in entries])
    out = []
    for facts in per_entry:
        record = template.copy()
        record.update(subject_record)
        record.update(request)
        record.update(facts)
        out.append(record)
    return out
