"""A loaded, validated policy revision: rules, groups, kinds, messages, scoring and ranking."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from policyd.facts.scoring import Scoring
from policyd.records import Field

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
    # admission: selection: as engine, and without spec.runtime it is part of the runtime's selection
    in_selection: bool = False


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
class RefusalKind:
    """A kind of refusal (a rule file's ``kinds``), not a Kubernetes kind: what refusing this way does."""

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
    kinds: Mapping[str, RefusalKind]
    messages: Mapping[str, str]
    scoring: Scoring
    ranking: tuple[RankKey, ...]
    listed: frozenset[str]  # effects whose runtimes OME lists as excluded
    none_selectable: str  # the kind of the refusal when no runtime can be selected
    fields: Mapping[str, Field]  # the fact catalogue it is compiled against: the core's and its backends'
    sources: tuple[str, ...] = field(default_factory=tuple)
    defaults: tuple[FieldDefault, ...] = ()  # in the order the rule file declares them

    def rule(self, rule_id: str) -> Rule:
        return next(r for r in self.rules if r.id == rule_id)

    def group(self, group_id: str) -> Group:
        return next(g for g in self.groups if g.id == group_id)

    def templates(self, rules: Iterable[Rule] | None = None) -> Iterator[str]:
        """Every template the policy prints with: of ``rules`` (default: all of them), of its
        groups and kinds, and its messages."""
        for rule in self.rules if rules is None else rules:
            yield from (rule.reason, rule.refusal, rule.condition_message, rule.field, rule.component)
            yield from (rule.model_value, rule.runtime_value, rule.advisory)
        for group in self.groups:
            yield from (group.component, group.advisory)
            if group.entries is not None:
                yield from (group.entries.reason, group.entries.empty)
        yield from (kind.refusal for kind in self.kinds.values())
        yield from self.messages.values()
