"""The records of the admission scopes (policyd/facts/fields.py): a runtime under review by OME's
ServingRuntime / ClusterServingRuntime webhooks, alone and against each existing runtime of its
kind in its scope. Derivation only describes; the rules in rules/15-runtime-admission.yaml judge.

OME reads these from the manifest: a runtime's admission profile (facts/profile.py), read once
per manifest by the Derivation the caller passes. Pairs are made only of entries OME's
areSupportedModelFormatsEqual calls equal: the existing runtimes' entries are indexed by that
equality, once per catalog snapshot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from policyd.catalog.snapshot import Catalog, Changes, Key, make_key
from policyd.facts.derive import Derivation
from policyd.facts.profile import EntryProfile, Signature
from policyd.records import Record
from policyd.resources.objects import ACCELERATOR_CLASS_KIND, ServingRuntime


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


def admit_runtime_record(runtime: ServingRuntime, catalog: Catalog, facts: Derivation) -> Record:
    own = facts.profile(runtime)
    unknown = unknown_accelerator_classes(runtime, catalog)
    differ = _priorities_differ(own.entries)
    return {
        **facts.intrinsic(runtime),
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
    def of(catalog: Catalog, kind: str, namespace: str, facts: Derivation) -> _EntryIndex:
        index: dict[Signature, list[tuple[ServingRuntime, EntryProfile]]] = {}
        for runtime in catalog.of_kind(kind, namespace):
            for entry in facts.profile(runtime).entries:
                index.setdefault(entry.signature, []).append((runtime, entry))
        return _EntryIndex(kind, namespace, index)

    def derive(self, catalog: Catalog, changes: Changes) -> _EntryIndex | None:
        """Kept while no runtime of its kind and namespace changes; made anew otherwise."""
        touched = any(k[0] == self.kind and k[1] == self.namespace for k in changes)
        return None if touched else self


def admit_pair_records(runtime: ServingRuntime, base: Record, catalog: Catalog, facts: Derivation) -> list[Record]:
    """The reviewed runtime (``base``: its admit_runtime record) against each existing runtime of
    its kind in its scope, one record per pair of entries OME calls equal, in OME's order: the
    existing runtimes by name, their entries, then the reviewed runtime's entries."""
    own = facts.profile(runtime)
    kind, namespace = runtime.kind, runtime.meta.namespace
    index = catalog.derived(
        ("admission entries", kind, namespace), lambda c: _EntryIndex.of(c, kind, namespace, facts)
    ).entries
    found: list[tuple[tuple[str, int, int], Record]] = []
    for mine in own.entries:
        for other, theirs in index.get(mine.signature, ()):
            their = facts.profile(other)
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
