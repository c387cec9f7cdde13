"""What fired rules say: each rule's reason, the refusal it makes, and a runtime's checks, its
groups and its entries combined as the rule files declare (first match, or every match
joined). Pure: records and fired rules in, reasons and checks out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policyd.policy import templates
from policyd.policy.effects import DECIDING
from policyd.policy.engine import Fired
from policyd.policy.model import Group, Policy, Rule
from policyd.records import Record


@dataclass(frozen=True, slots=True)
class Reason:
    rule_id: str  # the rule, or the group whose rules' reasons it combines
    effect: str
    kind: str
    component: str
    model_value: str
    runtime_value: str
    message: str
    entry_index: int  # the entry it is about, -1 for the runtime as a whole
    parts: tuple[Reason, ...] = ()  # a group's reasons, in order


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: str
    message: str  # the admission message; empty when only the condition reports it
    field: str
    condition_reason: str
    condition_message: str
    rule_id: str
    order: int
    component: str = ""
    admission: bool = True  # the webhook refuses (false: only the condition reports it)
    needs_engine: bool = False  # the webhook checks it only when the InferenceService has spec.engine
    in_selection: bool = False  # without spec.runtime, the webhook's selection of a runtime makes it


def rule_reason(rule: Rule, record: Record) -> Reason:
    return Reason(
        rule_id=rule.id,
        effect=rule.effect,
        kind=rule.kind,
        component=templates.render(rule.component, record),
        model_value=templates.render(rule.model_value, record),
        runtime_value=templates.render(rule.runtime_value, record),
        message=templates.render(rule.reason, record),
        entry_index=int(record["entry_index"]) if rule.applies_to == "entry" else -1,
    )


def refusal(policy: Policy, rule: Rule, record: Record, named: bool = False, component: str = "") -> Refusal:
    """The refusal ``rule`` makes of the request (or, ``named``, of the runtime the request names)."""
    message = templates.render((rule.refusal if named else "") or rule.reason, record)
    return Refusal(
        kind=rule.kind,
        message=message if rule.admission else "",
        field=templates.render(rule.field, record),
        condition_reason=policy.kinds[rule.kind].condition_reason,
        condition_message=templates.render(rule.condition_message, record) or message,
        rule_id=rule.id,
        order=rule.order,
        component=component,
        admission=rule.admission,
        needs_engine=rule.needs_engine,
        in_selection=rule.in_selection,
    )


@dataclass(frozen=True, slots=True)
class Check:
    """A check the runtime fails: a rule, or a group of rules whose reasons combine."""

    order: int
    effect: str
    kind: str
    rule: Rule | None
    group: Group | None
    record: Record
    entries: tuple[tuple[Record, Fired], ...] = ()  # an entry group's entries and what each fired

    def reason(self) -> Reason:
        if self.rule is not None:
            return rule_reason(self.rule, self.record)
        assert self.group is not None
        return _group_reason(self.group, self.record, self.entries)

    def advisory(self, policy: Policy) -> str:
        """What a named runtime that fails this check is told: the advisory template, with the reason."""
        template = (self.rule.advisory if self.rule else self.group.advisory if self.group else "") or policy.messages[
            "incompatible"
        ]
        return templates.render(template, {**self.record, "reason": self.reason().message})


def _combined(group: Group, parts: Sequence[Reason]) -> tuple[Reason, ...]:
    return tuple(parts[:1]) if group.combine == "first" else tuple(parts)


def _group_reason(group: Group, record: Record, entries: Sequence[tuple[Record, Fired]]) -> Reason:
    parts: tuple[Reason, ...] = ()
    if group.entries is None:
        # a group of one record's rules: entries holds that record alone
        parts = _combined(group, [rule_reason(r, record) for r in _members(group, entries[0][1])])
        message = group.join.join(p.message for p in parts)
    else:
        per_entry = []
        for entry_record, fired in entries:
            found = _combined(group, [rule_reason(r, entry_record) for r in _members(group, fired)])
            if found:
                parts += found
                per_entry.append(group.join.join(p.message for p in found))
        if entries and per_entry:
            message = templates.render(group.entries.reason, {**record, "reasons": group.entries.join.join(per_entry)})
        else:
            message = templates.render(group.entries.empty, record)
    return Reason(
        rule_id=group.id,
        effect=group.effect,
        kind=group.kind,
        component=templates.render(group.component, record),
        model_value="",
        runtime_value="",
        message=message,
        entry_index=-1,
        parts=parts,
    )


def _members(group: Group, fired: Fired) -> list[Rule]:
    return [r for r in fired if r.group == group.id]


def entry_matches(hits: Fired) -> bool:
    """An entry matches the model when none of its rules decides against it."""
    return not any(r.effect in DECIDING for r in hits)


def runtime_checks(
    policy: Policy, record: Record, fired: Fired, entries: Sequence[tuple[Record, Fired]]
) -> tuple[tuple[Check, ...], bool]:
    """The checks a runtime fails, in order, and whether some entry matches."""
    checks = [Check(r.order, r.effect, r.kind, r, None, record) for r in fired if r.effect in DECIDING and not r.group]
    for group in policy.groups:
        if group.applies_to == "runtime" and _members(group, fired):
            checks.append(Check(group.order, group.effect, group.kind, None, group, record, ((record, fired),)))
    matched = any(entry_matches(hits) for _, hits in entries)
    if not matched:
        for group in policy.groups:
            if group.entries is None:
                continue
            failing = any(_members(group, hits) for _, hits in entries)
            if failing or (not entries and group.entries.empty):
                checks.append(Check(group.order, group.effect, group.kind, None, group, record, tuple(entries)))
    return tuple(sorted(checks, key=lambda c: c.order)), matched
