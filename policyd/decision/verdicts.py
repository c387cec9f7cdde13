"""From fired rules to a runtime's verdict: what its checks (policyd/policy/outcomes.py) make
of it when selected or named. Pure: checks in, verdicts out, plain frozen values.

A ``Verdict`` is what the rules say, judged for one runtime; it may stand for every runtime of
that runtime's shape (decision/verdict_cache.py). A ``RuntimeVerdict`` is a runtime with the verdict
that is its own. Verdicts compare by identity: one object is one judgement, which is what a
server's encodings of them are kept by (policyd/server/responses.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from policyd.policy import templates
from policyd.policy.effects import BLOCK
from policyd.policy.model import Policy
from policyd.policy.outcomes import Check, Reason, Refusal, refusal
from policyd.records import Record
from policyd.resources.objects import ServingRuntime


@dataclass(frozen=True, eq=False)
class Verdict:
    record: Record  # the facts it was judged from (none kept in a shared verdict's)
    checks: tuple[Check, ...]  # every check it fails, in order
    score: int
    entry_index: int  # the matched entry (its acceleratorConfig applies), -1 when none
    advisories: tuple[Reason, ...]
    size_distance: float
    policy: Policy = field(repr=False)
    entries_matching: tuple[int, ...] = ()  # the entries that match the model (whatever their autoSelect)
    reason: Reason | None = None  # the first reason in rule order; None when selectable
    compat_reason: Reason | None = None  # why the runtime does not declare support; None when it does

    @property
    def selectable(self) -> bool:
        return not self.checks

    @property
    def compatible(self) -> bool:
        return not any(c.effect == "exclude" for c in self.checks)

    def when_named(self, action: str) -> Check | None:
        """The first check whose kind does ``action`` (warn, block) when the runtime is named."""
        return next(
            (c for c in self.checks if c.effect != "skip" and self.policy.kinds[c.kind].when_named == action), None
        )

    def named_refusal(self) -> Refusal | None:
        check = self.when_named(BLOCK)
        if check is None:
            return None
        kind = self.policy.kinds[check.kind]
        if check.rule is not None and (check.rule.refusal or not kind.refusal):
            return refusal(self.policy, check.rule, self.record, named=True)
        reason = check.reason().message
        message = templates.render(kind.refusal, {**self.record, "reason": reason}) if kind.refusal else reason
        rule_id = check.rule.id if check.rule else check.group.id if check.group else ""
        return Refusal(
            kind=check.kind,
            message=message,
            field="spec.runtime.name",
            condition_reason=kind.condition_reason,
            condition_message=message,
            rule_id=rule_id,
            order=check.order,
        )


def reasons(checks: tuple[Check, ...]) -> tuple[Reason | None, Reason | None]:
    """A verdict's ``reason`` and ``compat_reason`` for its ``checks``."""
    if not checks:
        return None, None
    first = checks[0].reason()
    compat = next((c for c in checks if c.effect == "exclude"), None)
    return first, None if compat is None else first if compat is checks[0] else compat.reason()


@dataclass(frozen=True, slots=True)
class RuntimeVerdict:
    """A runtime and its verdict (judged for it, or for another runtime of its shape)."""

    runtime: ServingRuntime
    verdict: Verdict

    # what the verdict says, read as this runtime's
    @property
    def checks(self) -> tuple[Check, ...]:
        return self.verdict.checks

    @property
    def score(self) -> int:
        return self.verdict.score

    @property
    def entry_index(self) -> int:
        return self.verdict.entry_index

    @property
    def advisories(self) -> tuple[Reason, ...]:
        return self.verdict.advisories

    @property
    def size_distance(self) -> float:
        return self.verdict.size_distance

    @property
    def reason(self) -> Reason | None:
        return self.verdict.reason

    @property
    def compat_reason(self) -> Reason | None:
        return self.verdict.compat_reason

    @property
    def selectable(self) -> bool:
        return not self.verdict.checks

    @property
    def compatible(self) -> bool:
        return self.verdict.compatible
