"""Lint: the lint rules (the rule files' lint scopes) judge the catalog's lint records; each
finding rule that fires makes a finding with the rule's id, severity and reason."""

from __future__ import annotations

from dataclasses import dataclass

from policyd.catalog.snapshot import Catalog, Key
from policyd.decision.decider import Decider
from policyd.policy import templates
from policyd.records import LINT_SCOPES
from policyd.whatif.lint_facts import lint_records


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str
    objects: tuple[Key, ...]
    message: str
    order: int  # the rule's


@dataclass(frozen=True)
class Linting:
    findings: tuple[Finding, ...]  # in rule order, then in the records' order
    models_decided: int


def lint(catalog: Catalog, decider: Decider) -> Linting:
    records, decided = lint_records(catalog, decider)
    findings: list[tuple[int, int, Finding]] = []
    for scope in LINT_SCOPES:
        mine = [(i, r) for i, r in enumerate(records) if r.scope == scope]
        fired = decider.revision.engine.fire(scope, [r.record for _, r in mine])
        for (at, record), hits in zip(mine, fired, strict=True):
            for rule in hits:
                if rule.effect == "finding":
                    message = templates.render(rule.reason, record.record)
                    found = Finding(rule.id, rule.severity, record.objects, message, rule.order)
                    findings.append((rule.order, at, found))
    return Linting(tuple(f for _, _, f in sorted(findings, key=lambda t: t[:2])), decided)
