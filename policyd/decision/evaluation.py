"""Judge each runtime in scope for one subject: facts in, rules engine, verdicts out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from policyd.facts.derive import Defaults, Record, Subject, records, subject_facts
from policyd.policy import templates
from policyd.policy.engine import RecordVerdict
from policyd.policy.model import Rule
from policyd.policy.revision import Revision
from policyd.resources.objects import ServingRuntime
from policyd.semantics.sizes import range_distance


@dataclass(frozen=True)
class Reason:
    rule_id: str
    effect: str
    component: str
    model_value: str
    runtime_value: str
    message: str
    entry_index: int


@dataclass(frozen=True)
class RuntimeEvaluation:
    runtime: ServingRuntime
    selectable: bool
    compatible: bool
    score: int
    entry_index: int  # best entry for the decision, -1 when none
    compatible_entry_index: int  # best compatible entry, autoSelect aside (a named runtime's), -1 when none
    advisories: tuple[Reason, ...]
    size_distance: float
    name_matched_entry: int  # first entry whose format and framework names match, -1 when none
    # Reasons are rendered only when asked for: Select needs none of them when something is selectable.
    _reason: tuple[Rule, Record] | None
    _compat: tuple[Rule, Record] | None
    _messages: Mapping[str, str]

    @cached_property
    def reason(self) -> Reason | None:
        """The first reason in rule order; None when selectable."""
        return make_reason(*self._reason) if self._reason else None

    @cached_property
    def compat_reason(self) -> Reason | None:
        """Why the runtime does not declare support; None when it does."""
        return make_reason(*self._compat) if self._compat else None

    @property
    def refused_when_named(self) -> bool:
        """The rule it is not compatible by rejects a runtime named explicitly (it cannot start)."""
        return self._compat is not None and self._compat[0].named == "reject"

    def compat_detail(self) -> str:
        """The "does not declare support" detail of a runtime named explicitly
        (the rule's advisory template, else the incompatible message); empty when compatible."""
        if self._compat is None or self.compat_reason is None:
            return ""
        rule, record = self._compat
        template = rule.advisory or self._messages["incompatible"]
        return templates.render(template, {**record, "reason": self.compat_reason.message})


def make_reason(rule: Rule, record: Mapping[str, Any]) -> Reason:
    message = templates.render(rule.reason, record)
    return Reason(
        rule_id=rule.id,
        effect=rule.effect,
        component=templates.render(rule.component, record),
        model_value=templates.render(rule.model_value, record),
        runtime_value=templates.render(rule.runtime_value, record),
        message=message,
        entry_index=int(record["entry_index"]) if rule.applies_to == "entry" else -1,
    )


def _evaluate_one(
    runtime: ServingRuntime,
    recs: Sequence[Record],
    verdicts: Sequence[RecordVerdict],
    revision: Revision,
    model_size: float | None,
) -> RuntimeEvaluation:
    policy = revision.policy
    compat = [i for i, v in enumerate(verdicts) if v.compat is None]
    selectable = [i for i in compat if verdicts[i].select is None]
    pool = selectable or compat
    scores = {i: policy.scoring.entry_score(recs[i]) + verdicts[i].points for i in compat}  # pool ⊆ compat
    best = max(pool, key=lambda i: (scores[i], -i)) if pool else -1
    best_compatible = max(compat, key=lambda i: (scores[i], -i)) if compat else -1
    reason_rule: Rule | None = None
    at = 0
    if not selectable:
        at = compat[0] if compat else 0
        reason_rule = verdicts[at].select if compat else verdicts[at].first
    first_compat_rule = verdicts[0].compat if not compat else None
    rng = runtime.size_range
    names = [i for i, r in enumerate(recs) if r["format_name_match"] and r["framework_name_match"]]
    return RuntimeEvaluation(
        runtime=runtime,
        selectable=bool(selectable),
        compatible=bool(compat),
        score=scores[best] if best >= 0 else 0,
        entry_index=int(recs[best]["entry_index"]) if best >= 0 else -1,
        compatible_entry_index=int(recs[best_compatible]["entry_index"]) if best_compatible >= 0 else -1,
        _reason=(reason_rule, recs[at]) if reason_rule else None,
        _compat=(first_compat_rule, recs[0]) if first_compat_rule else None,
        _messages=policy.messages,
        advisories=tuple(
            make_reason(rule, recs[best if best >= 0 else 0]) for rule in verdicts[best if best >= 0 else 0].advisories
        ),
        size_distance=0.0 if rng is None or model_size is None else range_distance(model_size, rng.min, rng.max),
        name_matched_entry=int(recs[names[0]]["entry_index"]) if names else -1,
    )


def evaluate(revision: Revision, subject: Subject, runtimes: Sequence[ServingRuntime]) -> list[RuntimeEvaluation]:
    """One evaluation per runtime, in the order given. All records go to the engine in one batch."""
    policy = revision.policy
    defaults = Defaults(policy.scoring.default_weight, policy.scoring.default_priority)
    base = subject_facts(subject)
    per_runtime = [records(subject, base, rt, defaults) for rt in runtimes]
    flat = [r for recs in per_runtime for r in recs]
    verdicts = revision.engine.evaluate(flat)
    out, at = [], 0
    for runtime, recs in zip(runtimes, per_runtime, strict=True):
        out.append(_evaluate_one(runtime, recs, verdicts[at : at + len(recs)], revision, subject.model.size))
        at += len(recs)
    return out
