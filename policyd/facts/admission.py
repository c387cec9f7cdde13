"""The records of the admission scopes (policyd/facts/fields.py): a runtime under review by OME's
ServingRuntime / ClusterServingRuntime webhooks, alone and against each existing runtime of its
kind in its scope. Derivation only describes; the rules in rules/15-runtime-admission.yaml judge.

OME reads these from the manifest (spec.workers, spec.containers, protocolVersions, each entry's
own name, version and quantization), so they are read from the runtime's manifest here, once per
manifest. Pairs are made only of entries OME's areSupportedModelFormatsEqual calls equal: the
existing runtimes' entries are indexed by that equality, once per catalog snapshot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd.catalog.snapshot import Catalog, Changes, Key, make_key
from policyd.facts.derive import intrinsic_facts
from policyd.memo import Bounded
from policyd.records import Record
from policyd.resources.objects import ACCELERATOR_CLASS_KIND, ServingRuntime

_MEMO_LIMIT = 50_000

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


def _profile(runtime: ServingRuntime) -> RuntimeProfile:
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


_PROFILES: Bounded[str, RuntimeProfile] = Bounded(_MEMO_LIMIT)


def profile(runtime: ServingRuntime) -> RuntimeProfile:
    """What OME's runtime webhook reads of the runtime, made once per manifest."""
    return _PROFILES.get_or(runtime.digest, lambda: _profile(runtime))


def _priorities_differ(entries: Sequence[EntryProfile]) -> str | None:
    """OME's validateModelFormatPrioritySame: the first name whose autoSelect entries' priorities
    differ, the first entry of each name holding the name's priority (even an unset one)."""
    first: dict[str, int | None] = {}
    for entry in entries:
        if not entry.auto_select:
            continue
        if entry.name not in first:
            first[entry.name] = entry.priority
        elif (held := first[entry.name]) is not None and entry.priority is not None and held != entry.priority:
            return entry.name
    return None


def unknown_accelerator_classes(runtime: ServingRuntime, catalog: Catalog) -> list[str]:
    """acceleratorRequirements.acceleratorClasses no AcceleratorClass of the catalog defines."""
    defined = catalog.accelerator_classes
    return [c for c in runtime.accelerator_classes or () if make_key(ACCELERATOR_CLASS_KIND, "", c) not in defined]


def accelerator_class_keys(names: Sequence[str]) -> list[Key]:
    return [make_key(ACCELERATOR_CLASS_KIND, "", name) for name in dict.fromkeys(names)]


def _existing(catalog: Catalog, runtime: ServingRuntime) -> tuple[ServingRuntime, ...]:
    """The runtimes OME's webhook lists: the namespace's ServingRuntimes, or every ClusterServingRuntime."""
    return catalog.of_kind(runtime.kind, runtime.meta.namespace)


def admit_runtime_record(runtime: ServingRuntime, catalog: Catalog) -> Record:
    own = profile(runtime)
    unknown = unknown_accelerator_classes(runtime, catalog)
    differ = _priorities_differ(own.entries)
    return {
        **intrinsic_facts(runtime),
        "admit_runtimes_in_scope": len(_existing(catalog, runtime)),
        "admit_engine_config": own.engine_config,
        "admit_decoder_config": own.decoder_config,
        "admit_workers_set": own.workers is not None,
        "admit_workers": own.workers or 0,
        "admit_env_multinode": own.env_multinode,
        "admit_env_raw": own.env_raw,
        "admit_unknown_accelerator_classes": unknown,
        "admit_unknown_accelerator_classes_text": f"[{' '.join(unknown)}]",
        "admit_priorities_differ": differ is not None,
        "admit_priorities_differ_name": differ or "",
    }


@dataclass(frozen=True)
class _EntryIndex:
    """The entries of one kind's runtimes in one namespace by what OME's equality compares."""

    kind: str
    namespace: str
    entries: Mapping[Signature, Sequence[tuple[ServingRuntime, EntryProfile]]]

    @staticmethod
    def of(catalog: Catalog, kind: str, namespace: str) -> _EntryIndex:
        index: dict[Signature, list[tuple[ServingRuntime, EntryProfile]]] = {}
        for runtime in catalog.of_kind(kind, namespace):
            for entry in profile(runtime).entries:
                index.setdefault(entry.signature, []).append((runtime, entry))
        return _EntryIndex(kind, namespace, index)

    def derive(self, catalog: Catalog, changes: Changes) -> _EntryIndex | None:
        """Kept while no runtime of its kind and namespace changes; made anew otherwise."""
        touched = any(k[0] == self.kind and k[1] == self.namespace for k in changes)
        return None if touched else self


def admit_pair_records(runtime: ServingRuntime, base: Record, catalog: Catalog) -> list[Record]:
    """The reviewed runtime (``base``: its admit_runtime record) against each existing runtime of
    its kind in its scope, one record per pair of entries OME calls equal, in OME's order: the
    existing runtimes by name, their entries, then the reviewed runtime's entries."""
    own = profile(runtime)
    kind, namespace = runtime.kind, runtime.meta.namespace
    index = catalog.derived(
        ("admission entries", kind, namespace), lambda c: _EntryIndex.of(c, kind, namespace)
    ).entries
    found: list[tuple[tuple[str, int, int], Record]] = []
    for mine in own.entries:
        for other, theirs in index.get(mine.signature, ()):
            their = profile(other)
            both = mine.priority is not None and theirs.priority is not None
            record = {
                **base,
                "admit_other_name": other.meta.name,
                "admit_other_same_name": other.meta.name == runtime.meta.name,
                "admit_other_disabled": other.disabled,
                "admit_protocol_shared": not their.protocols.isdisjoint(own.protocols),
                "admit_ranges_equal": their.size_range == own.size_range,
                "admit_entry_format": mine.format,
                "admit_both_auto_select": mine.auto_select and theirs.auto_select,
                "admit_same_priority": both and mine.priority == theirs.priority,
            }
            found.append(((other.meta.name, theirs.index, mine.index), record))
    return [record for _, record in sorted(found, key=lambda f: f[0])]
