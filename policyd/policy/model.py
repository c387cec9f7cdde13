"""A loaded, validated policy revision: rules, groups, kinds, messages, scoring and ranking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")  # of findings, most severe first


@dataclass(frozen=True)
class RuleTest:
    name: str
    facts: Mapping[str, Any]
    expect: Mapping[str, Any]
    entries: tuple[Mapping[str, Any], ...] = ()  # group tests: the facts of each entry


@dataclass(frozen=True)
class Rule:
    id: str
    order: int
    applies_to: str  # request | model | runtime | entry | component
    effect: str
    kind: str  # for refuse / exclude / reject
    group: str  # the group the rule's reasons combine in, or empty
    when: Mapping[str, Any]  # the condition as written (an allow rule's overrides extend it)
    condition: Mapping[str, Any]  # compiled durable-rules condition
    fields: frozenset[str]  # fact fields the condition tests
    reason: str
    refusal: str  # message when a named runtime is refused by this rule (reason when unset)
    condition_message: str  # RuntimeReady message after admission, when it differs from the reason
    admission: bool  # the webhook refuses (false: only the condition reports it)
    field: str  # the request field a refusal is about
    component: str
    model_value: str
    runtime_value: str
    advisory: str
    points: int
    overrides: tuple[str, ...]  # allow: the rules it waives
    severity: str  # finding: error, warning or info
    tests: tuple[RuleTest, ...]
    source: str
    line: int
    needs_engine: bool = False  # admission: engine: the webhook checks it only with spec.engine


@dataclass(frozen=True)
class EntriesReason:
    """How an entry group's reasons for several entries make the runtime's reason."""

    join: str
    reason: str  # template; {reasons} is the joined entry reasons
    empty: str  # the reason of a runtime without entries; empty when the group does not judge that


@dataclass(frozen=True)
class Group:
    id: str
    applies_to: str
    combine: str  # first | collect
    join: str  # collect: between one record's reasons
    order: int  # where the group's verdict stands among the runtime's checks
    entries: EntriesReason | None  # entry groups
    effect: str
    kind: str
    component: str
    advisory: str
    tests: tuple[RuleTest, ...]
    source: str
    line: int


@dataclass(frozen=True)
class Kind:
    name: str
    when_named: str  # what a refusal of this kind makes of a named runtime: one of effects.NAMED_ACTIONS
    condition_reason: str  # the RuntimeReady reason (and the event reason) it reports
    event_reason: str  # the event a named runtime records when used anyway
    refusal: str  # reject: the message refusing a named runtime, unless the rule sets its own


@dataclass(frozen=True)
class RankKey:
    key: str
    direction: str = "asc"
    order: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scoring:
    default_weight: int  # a weight left unset
    zero_format_weight: int  # modelFormat.weight: 0, as OME reads it
    zero_framework_weight: int
    default_priority: int
    add: tuple[str, ...]
    multiply_by: str
    count: tuple[str, ...]  # boolean entry facts that must hold for an entry to count toward the runtime's score
    matched_count: tuple[str, ...]  # ... to be the runtime's matched entry
    matched_auto_selected: tuple[str, ...]  # ... when OME chose the runtime
    matched_priority: str  # entry | default: the priority the matched entry is scored with

    def entry_score(self, record: Mapping[str, Any], priority: int | None = None) -> int:
        total = sum(int(record[name]) for name in self.add)
        if self.multiply_by != "priority":
            return total
        return total * int(record["priority"] if priority is None else priority)

    def runtime_score(self, entries: Sequence[Mapping[str, Any]]) -> int:
        """The best score among the entries that count (0 when none does)."""
        return max((self.entry_score(e) for e in entries if all(e[f] for f in self.count)), default=0)

    def matched_entry(self, entries: Sequence[Mapping[str, Any]], auto_selected: bool) -> int:
        """The index of the entry whose settings (acceleratorConfig) apply: the first best-scored one."""
        needs = self.matched_count + (self.matched_auto_selected if auto_selected else ())
        priority = self.default_priority if self.matched_priority == "default" else None
        best, at = 0, -1
        for record in entries:
            if all(record[f] for f in needs) and (score := self.entry_score(record, priority)) > best:
                best, at = score, int(record["entry_index"])
        return at


@dataclass(frozen=True)
class FieldDefault:
    """What OME's mutating webhook sets in a component the InferenceService declares."""

    component: str  # engine, decoder or router
    field: str  # the component's field, e.g. minReplicas
    value: Any
    when: str  # unset: the field is absent (or null); unset_or_zero: absent, null or 0


@dataclass(frozen=True)
class Policy:
    revision: str
    rules: tuple[Rule, ...]
    groups: tuple[Group, ...]
    kinds: Mapping[str, Kind]
    messages: Mapping[str, str]
    scoring: Scoring
    ranking: tuple[RankKey, ...]
    listed: frozenset[str]  # effects whose runtimes OME lists as excluded
    none_selectable: str  # the kind of the refusal when no runtime can be selected
    sources: tuple[str, ...] = field(default_factory=tuple)
    defaults: tuple[FieldDefault, ...] = ()  # in the order the rule file declares them

    def rule(self, rule_id: str) -> Rule:
        return next(r for r in self.rules if r.id == rule_id)

    def group(self, group_id: str) -> Group:
        return next(g for g in self.groups if g.id == group_id)
