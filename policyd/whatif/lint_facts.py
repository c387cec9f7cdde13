"""The records of the lint scopes (policyd/facts/fields.py): what the catalog is, and what the
Decider decides for each of its models. Derivation only describes; the lint rules judge.

Each catalog model is decided as a plain InferenceService naming only it would be (Select, no
accelerator class, no mode asked): a ClusterBaseModel in ``default`` and in every namespace
with ServingRuntimes, a BaseModel in its own namespace. What each runtime and each entry made
of those models, how each model's choice was ranked, which runtimes claim the same format and
architecture, and which accelerator class names the catalog uses: each becomes a record."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from policyd.catalog.snapshot import Catalog, Key, key_of
from policyd.decision.answers import Selection
from policyd.decision.decider import Decider
from policyd.decision.ranking import deciding_key
from policyd.decision.runtime_alone import refusal_when_named
from policyd.decision.verdicts import RuntimeVerdict
from policyd.errors import InvalidInput
from policyd.facts.derive import Derivation, entry_alone_facts
from policyd.records import LINT_ACCELERATOR, LINT_ENTRY, LINT_MODEL, LINT_PAIR, LINT_RUNTIME, Record
from policyd.resources import kinds as ome
from policyd.resources.manifests import DEFAULT_NAMESPACE, parse_inference_service
from policyd.resources.objects import BaseModel, Entry, InferenceService, ServingRuntime


@dataclass(frozen=True)
class LintRecord:
    scope: str
    record: Record
    objects: tuple[Key, ...]  # what a finding about the record involves


@dataclass
class _Tally:
    """What the decided models made of one runtime."""

    models: int = 0
    compatible: int = 0
    selectable: int = 0
    chosen: int = 0
    outranked_by: dict[str, None] = field(default_factory=dict)  # in the order met
    outranked_on: dict[str, None] = field(default_factory=dict)
    matching: Counter[int] = field(default_factory=Counter)  # per entry index
    selected: Counter[int] = field(default_factory=Counter)


def name_of(key: Key) -> str:
    """Kind/name, as the lint records show an object."""
    return f"{key[0]}/{key[2]}"


def _subjects(catalog: Catalog) -> list[tuple[BaseModel, str]]:
    namespaces = sorted({DEFAULT_NAMESPACE, *(ns for kind, ns, _ in catalog.runtimes if kind == "ServingRuntime")})
    out = []
    for key, model in sorted(catalog.models.items()):
        for namespace in namespaces if model.kind == "ClusterBaseModel" else [key[1]]:
            out.append((model, namespace))
    return out


def _as_isvc(model: BaseModel, namespace: str) -> InferenceService:
    return parse_inference_service(
        {
            "apiVersion": ome.API_VERSION,
            "kind": ome.INFERENCE_SERVICE.name,
            "metadata": {"name": model.meta.name, "namespace": namespace},
            "spec": {"model": {"name": model.meta.name, "kind": model.kind}, "engine": {}},
        }
    )


def _model(model: BaseModel, namespace: str, selection: Selection, facts: Derivation) -> LintRecord:
    ranking = selection.ranking
    refusal = selection.refusal
    chosen = ranking[0] if ranking else None
    decided_by, tied = "", [name_of(key_of(chosen.runtime))] if chosen else []
    if chosen is not None and len(ranking) > 1:
        found = deciding_key(chosen, ranking[1], chosen.verdict.policy.ranking)
        decided_by = found[0] if found else "order"
        for other in ranking[1:]:
            step = deciding_key(chosen, other, chosen.verdict.policy.ranking)
            if step is not None and step[0] != "name":
                break
            tied.append(name_of(key_of(other.runtime)))
    record = {
        **facts.model_record(model),
        "lint_namespace": namespace,
        "lint_model_refusal_rule": refusal.rule_id if refusal is not None else "",
        "lint_model_refusal": refusal.message if refusal is not None and refusal.rule_id else "",
        "lint_model_selectable": len(ranking),
        "lint_model_chosen": tied[0] if tied else "",
        "lint_model_runner_up": name_of(key_of(ranking[1].runtime)) if len(ranking) > 1 else "",
        "lint_model_decided_by": decided_by,
        "lint_model_tied": tied if len(tied) > 1 else [],
    }
    objects = (key_of(model), *(key_of(v.runtime) for v in ranking[: max(2, len(tied))]))
    return LintRecord(LINT_MODEL, record, objects)


def _count(tallies: dict[Key, _Tally], selection: Selection, judged: Sequence[RuntimeVerdict]) -> None:
    chosen = selection.ranking[0] if selection.ranking else None
    for verdict in judged:
        tally = tallies[key_of(verdict.runtime)]
        tally.models += 1
        tally.compatible += verdict.compatible
        tally.selectable += verdict.selectable
        tally.matching.update(verdict.verdict.entries_matching)
        if verdict is chosen:
            tally.chosen += 1
            tally.selected[verdict.entry_index] += 1
        elif verdict.selectable and chosen is not None:
            tally.outranked_by[name_of(key_of(chosen.runtime))] = None
            decided = deciding_key(chosen, verdict, chosen.verdict.policy.ranking)
            tally.outranked_on[decided[0] if decided else "order"] = None


def _runtime(runtime: ServingRuntime, tally: _Tally, decider: Decider) -> Record:
    refused = refusal_when_named(decider, runtime)
    return {
        **decider.facts.intrinsic(runtime),
        "lint_models": tally.models,
        "lint_runtime_compatible": tally.compatible,
        "lint_runtime_selectable": tally.selectable,
        "lint_runtime_chosen": tally.chosen,
        "lint_runtime_outranked_by": list(tally.outranked_by),
        "lint_runtime_outranked_on": list(tally.outranked_on),
        "lint_runtime_refusal_rule": refused.rule_id if refused else "",
        "lint_runtime_refusal_kind": refused.kind if refused else "",
        "lint_runtime_refusal": refused.message if refused else "",
    }


def _range(runtime: ServingRuntime) -> str:
    rng = runtime.size_range
    return f"[{rng.min_text}, {rng.max_text}]" if rng else ""


def _overlap(a: ServingRuntime, b: ServingRuntime) -> bool:
    ra, rb = a.size_range, b.size_range
    return ra is None or rb is None or (ra.min <= rb.max and rb.min <= ra.max)


def _scopes(catalog: Catalog) -> list[tuple[str, list[ServingRuntime], Sequence[ServingRuntime]]]:
    """(namespace, runtimes, the ones that may pair with them): the cluster runtimes among
    themselves, then each namespace's ServingRuntimes with each other and the cluster's."""
    cluster = [r for r in catalog.in_scope("") if not r.namespaced]
    out: list[tuple[str, list[ServingRuntime], Sequence[ServingRuntime]]] = [("", cluster, cluster)]
    for namespace in sorted({ns for kind, ns, _ in catalog.runtimes if kind == "ServingRuntime"}):
        scope = catalog.in_scope(namespace)
        out.append((namespace, [r for r in scope if r.namespaced], scope))
    return out


def _pairs(catalog: Catalog, facts: Derivation) -> list[LintRecord]:
    out: list[LintRecord] = []
    seen: set[tuple[Key, Key, str, str]] = set()
    for namespace, runtimes, partners in _scopes(catalog):
        claims: dict[tuple[str, str], list[tuple[ServingRuntime, Entry]]] = {}
        for runtime in partners:
            for entry in runtime.entries:
                claims.setdefault((entry.format.name, entry.architecture), []).append((runtime, entry))
        mine = {key_of(r) for r in runtimes}
        for (fmt, arch), claimants in sorted(claims.items()):
            by_runtime: dict[Key, list[tuple[ServingRuntime, Entry]]] = {}
            for runtime, entry in claimants:
                by_runtime.setdefault(key_of(runtime), []).append((runtime, entry))
            for first, second in combinations(sorted(by_runtime), 2):
                if (first not in mine and second not in mine) or (first, second, fmt, arch) in seen:
                    continue
                seen.add((first, second, fmt, arch))
                out.append(_pair((namespace, fmt, arch), by_runtime[first], by_runtime[second], facts))
    return out


def _same_priority(
    a: ServingRuntime, b: ServingRuntime, entries: Sequence[tuple[Entry, Entry]], facts: Derivation
) -> bool:
    """What the runtime webhooks warn of when one of the two is applied beside the other."""
    pa, pb = facts.profile(a), facts.profile(b)
    if a.kind != b.kind or a.disabled or b.disabled or pa.protocols.isdisjoint(pb.protocols):
        return False
    if pa.size_range != pb.size_range:
        return False
    pairs = ((pa.entries[x.index], pb.entries[y.index]) for x, y in entries)
    return any(
        ex.signature == ey.signature
        and ex.auto_select
        and ey.auto_select
        and ex.priority is not None
        and ex.priority == ey.priority
        for ex, ey in pairs
    )


def _pair(
    claim: tuple[str, str, str],
    first: Sequence[tuple[ServingRuntime, Entry]],
    second: Sequence[tuple[ServingRuntime, Entry]],
    facts: Derivation,
) -> LintRecord:
    """Two runtimes claiming one (format, architecture) in one namespace (``claim``: those three)."""
    namespace, fmt, arch = claim
    a, b = first[0][0], second[0][0]
    entries = [(x, y) for _, x in first for _, y in second]
    record = {
        "lint_pair_first": name_of(key_of(a)),
        "lint_pair_second": name_of(key_of(b)),
        "lint_pair_namespace": namespace,
        "lint_pair_format": fmt,
        "lint_pair_architecture": arch,
        "lint_pair_first_range": _range(a),
        "lint_pair_second_range": _range(b),
        "lint_pair_ranges_set": a.size_range is not None and b.size_range is not None,
        "lint_pair_overlap": _overlap(a, b),
        "lint_pair_auto_select": any(x.auto_select is True and y.auto_select is True for x, y in entries),
        "lint_pair_same_quantization": any(x.quantization == y.quantization for x, y in entries),
        "lint_pair_same_kind": a.kind == b.kind,
        "lint_pair_same_priority": _same_priority(a, b, entries, facts),
    }
    return LintRecord(LINT_PAIR, record, (key_of(a), key_of(b)))


def _accelerator_users(catalog: Catalog) -> dict[str, list[Key]]:
    users: dict[str, list[Key]] = {}

    def use(names: Iterable[str], key: Key) -> None:
        for name in dict.fromkeys(names):
            users.setdefault(name, []).append(key)

    for key, runtime in sorted(catalog.runtimes.items()):
        use([*(runtime.accelerator_classes or ()), *(c for e in runtime.entries for c in e.accelerator_config)], key)
    for key, isvc in sorted(catalog.inference_services.items()):
        use(isvc.accelerator_classes, key)
    return users


def _accelerators(catalog: Catalog) -> list[LintRecord]:
    defined = {name for _, _, name in catalog.accelerator_classes}
    out = []
    for name, users in sorted(_accelerator_users(catalog).items()):
        record = {
            "accelerator_class": name,
            "accelerator_class_defined": name in defined,
            "accelerator_classes_defined": len(defined),
            "accelerator_class_users": [name_of(u) for u in users],
        }
        out.append(LintRecord(LINT_ACCELERATOR, record, tuple(users)))
    return out


def lint_records(catalog: Catalog, decider: Decider) -> tuple[list[LintRecord], int]:
    """Every lint record of the catalog, and how many (model, namespace) pairs were decided."""
    tallies: dict[Key, _Tally] = {key: _Tally() for key in catalog.runtimes}
    models: list[LintRecord] = []
    subjects = _subjects(catalog)
    for model, namespace in subjects:
        isvc = _as_isvc(model, namespace)
        try:
            selection, judged = decider.explain_all(catalog, isvc)
        except InvalidInput:
            continue  # a model no InferenceService can name is the manifest's error, reported by the catalog
        models.append(_model(model, namespace, selection, decider.facts))
        _count(tallies, selection, judged)
    runtimes, entries = [], []
    for key, runtime in sorted(catalog.runtimes.items()):
        tally = tallies[key]
        record = _runtime(runtime, tally, decider)
        runtimes.append(LintRecord(LINT_RUNTIME, record, (key,)))
        for entry in runtime.entries:
            entry_record = {
                **record,
                **entry_alone_facts(entry, decider.policy.scoring),
                "lint_entry_matching": tally.matching[entry.index],
                "lint_entry_selected": tally.selected[entry.index],
            }
            entries.append(LintRecord(LINT_ENTRY, entry_record, (key,)))
    return [*models, *runtimes, *entries, *_pairs(catalog, decider.facts), *_accelerators(catalog)], len(subjects)
