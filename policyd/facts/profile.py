"""What OME's ServingRuntime / ClusterServingRuntime webhooks read of a runtime's manifest
(spec.workers, spec.containers, protocolVersions, each entry's own name, version and
quantization): a runtime's admission profile. Pure; facts/derive.py's Derivation keeps one per
manifest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.resources.objects import ServingRuntime

Signature = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class EntryProfile:
    index: int
    name: str  # supportedModelFormats[].name, which OME's priority checks call the model format
    format: str  # the name, else modelFormat.name: what a warning names (catalog runtimes set no name)
    signature: Signature  # what areSupportedModelFormatsEqual compares
    auto_select: bool  # IsAutoSelectEnabled: autoSelect set to true
    priority: int | None


@dataclass(frozen=True, slots=True)
class RuntimeProfile:
    engine_config: bool
    decoder_config: bool
    workers: int | None  # spec.workers.size
    env_multinode: bool
    env_raw: bool
    protocols: frozenset[str]
    size_range: tuple[Any, Any] | None  # (min, max) as written, None for an unset bound
    entries: tuple[EntryProfile, ...]


def _get(doc: Any, key: str) -> Any:
    return doc.get(key) if isinstance(doc, Mapping) else None


def _compared(doc: Any) -> Any:
    """A modelFormat or modelFramework as areSupportedModelFormatsEqual means to compare it: by
    value, with the CRD's defaults (operator Equal, weight 1) for what is unset. OME's Go
    compares the structs, whose version and operator are pointers, so the API server's
    defaulted operator would make no two entries equal and the check could never deny: we
    compare what the pointers point to, as the check's message intends."""
    if doc is None:
        return None
    return (_get(doc, "name") or "", _get(doc, "version"), _get(doc, "operator") or "Equal", _get(doc, "weight") or 1)


def _entry(index: int, doc: Any) -> EntryProfile:
    name = _get(doc, "name") or ""
    parts = (_compared(_get(doc, "modelFramework")), _compared(_get(doc, "modelFormat")))
    # strings.EqualFold for the name; the other pointers compare the values they point to
    values = (_get(doc, "version"), _get(doc, "quantization"), _get(doc, "modelArchitecture"))
    signature = (name.casefold(), *values, *parts)
    priority = _get(doc, "priority")
    return EntryProfile(
        index=index,
        name=name,
        format=name or _get(_get(doc, "modelFormat"), "name") or "",
        signature=signature,
        auto_select=_get(doc, "autoSelect") is True,
        priority=priority if isinstance(priority, int) else None,
    )


def read_profile(runtime: ServingRuntime) -> RuntimeProfile:
    spec = _get(runtime.raw, "spec") or {}
    size = _get(_get(spec, "workers"), "size")
    modes = {
        _get(env, "value")
        for container in _get(spec, "containers") or ()
        for env in _get(container, "env") or ()
        if _get(env, "name") == "DEPLOYMENT_MODE"
    }
    rng = _get(spec, "modelSizeRange")
    return RuntimeProfile(
        engine_config=_get(spec, "engineConfig") is not None,
        decoder_config=_get(spec, "decoderConfig") is not None,
        workers=size if isinstance(size, int) else None,
        env_multinode="MultiNode" in modes,
        env_raw="RawDeployment" in modes,
        protocols=frozenset(str(p) for p in _get(spec, "protocolVersions") or ()),
        size_range=None if rng is None else (_get(rng, "min"), _get(rng, "max")),
        entries=tuple(_entry(i, e) for i, e in enumerate(_get(spec, "supportedModelFormats") or ())),
    )
