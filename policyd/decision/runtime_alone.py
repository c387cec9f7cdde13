"""A runtime judged by itself, for no request: what the catalog refuses in it (a runtime the
policy refuses never enters the catalog), and what refuses it whenever it is named."""

from __future__ import annotations

from collections.abc import Sequence

from policyd.decision.decider import Decider
from policyd.decision.verdicts import Verdict
from policyd.facts.derive import Subject
from policyd.policy.effects import BLOCK
from policyd.policy.outcomes import Reason, Refusal, refusal, runtime_checks
from policyd.records import RUNTIME
from policyd.resources.objects import ServingRuntime


def refusal_when_named(decider: Decider, runtime: ServingRuntime) -> Reason | None:
    """Why the runtime is refused when an InferenceService names it, whatever the model: the
    first of its runtime checks (entries aside) whose kind refuses a named runtime, for a
    request and a model that pass every other check."""
    policy = decider.policy
    subject = Subject("", None, None)
    record = decider.facts.runtime_record(subject, decider.neutral_runtime, runtime, (), policy.scoring, True)
    fired = decider.revision.engine.fire(RUNTIME, [record])[0]
    checks, _ = runtime_checks(policy, record, fired, ())
    # an entry group's check says "no entry matches": it is about the model, not the runtime alone
    alone = tuple(c for c in checks if c.group is None or c.group.entries is None)
    check = Verdict(record, alone, 0, -1, (), 0.0, policy).when_named(BLOCK)
    return check.reason() if check is not None else None


def first_catalog_refusal(decider: Decider, objects: Sequence[object]) -> tuple[int, Refusal] | None:
    """The first of ``objects`` the catalog would not take (by its index), and why."""
    runtimes = [(i, obj) for i, obj in enumerate(objects) if isinstance(obj, ServingRuntime)]
    refused = catalog_refusals(decider, [obj for _, obj in runtimes])
    return next(((i, r[0]) for (i, _), r in zip(runtimes, refused, strict=True) if r), None)


def catalog_refusals(decider: Decider, runtimes: Sequence[ServingRuntime]) -> list[list[Refusal]]:
    """What the policy refuses in each runtime itself (the catalog does not take it): its
    runtime rules with effect refuse, which test the runtime alone. One batch for all."""
    records = [{**decider.neutral_runtime, **decider.facts.intrinsic(runtime)} for runtime in runtimes]
    fired = decider.revision.engine.fire(RUNTIME, records)
    return [
        [refusal(decider.policy, r, record) for r in hits if r.effect == "refuse"]
        for record, hits in zip(records, fired, strict=True)
    ]
