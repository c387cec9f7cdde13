"""From fired rules to a runtime's verdict: what its checks (policyd/policy/outcomes.py) make
of it when selected or named, and what a server encodes of it. Pure: checks in, verdicts out."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from policyd.policy import templates
from policyd.policy.effects import BLOCK
from policyd.policy.model import Policy
from policyd.policy.outcomes import Check, Reason, Refusal, refusal
from policyd.records import Record
from policyd.resources.objects import ServingRuntime


class Shared:
    """What a transport made of a shared verdict (its encoded forms), made once."""

    __slots__ = ("ranked", "wire", "wire_full")

    def __init__(self) -> None:
        self.wire: bytes | None = None  # the verdict in a list's basic view
        self.wire_full: bytes | None = None  # and in its full one
        self.ranked: dict[str, bytes] | None = None  # by the shape of runtime


@dataclass(frozen=True)
class RuntimeVerdict:
    runtime: ServingRuntime
    record: Record
    checks: tuple[Check, ...]  # every check it fails, in order
    score: int
    entry_index: int  # the matched entry (its acceleratorConfig applies), -1 when none
    advisories: tuple[Reason, ...]
    size_distance: float
    policy: Policy = field(repr=False)
    entries_matching: tuple[int, ...] = ()  # the entries that match the model (whatever their autoSelect)
    # set when the verdict stands for every runtime of a shape (decision/shared.py): what a
    # server encodes of it once, for all of them
    shared: Shared | None = field(default=None, repr=False, compare=False)

    def on(self, runtime: ServingRuntime) -> RuntimeVerdict:
        """This verdict for another runtime of the same shape. The record stays the judged
        runtime's: a shared verdict is only read for what its shape decides."""
        clone = object.__new__(RuntimeVerdict)
        clone.__dict__.update(self.__dict__)
        clone.__dict__["runtime"] = runtime
        return clone

    @property
    def selectable(self) -> bool:
        return not self.checks

    @property
    def compatible(self) -> bool:
        return not any(c.effect == "exclude" for c in self.checks)

    @cached_property
    def reason(self) -> Reason | None:
        """The first reason in rule order; None when selectable."""
        return self.checks[0].reason() if self.checks else None

    @cached_property
    def compat_reason(self) -> Reason | None:
        """Why the runtime does not declare support; None when it does."""
        check = next((c for c in self.checks if c.effect == "exclude"), None)
        if check is None:
            return None
        return self.reason if check is self.checks[0] else check.reason()

    def when_named(self, action: str) -> Check | None:
        """The first check whose kind does ``action`` (advise, reject) when the runtime is named."""
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
