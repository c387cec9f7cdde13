"""Simulate and Lint: proto in, what-if out (policyd/whatif), proto out. Both are reads: the
serving state is never changed. policyctl runs the same handlers in-process for --catalog DIR.

A rules directory sent with a request is built into a revision beside the serving rules and
kept (a few, by content), as is each side's decision per InferenceService and the last lints:
a CI job asking about the same catalog again is answered from them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

from policyd.catalog.snapshot import Catalog, CatalogObject
from policyd.contract import policy_pb2 as pb
from policyd.decision.decider import Decider
from policyd.decision.runtime_alone import first_catalog_refusal
from policyd.errors import InvalidInput
from policyd.memo import Lru
from policyd.policy.loader import RuleFileError
from policyd.policy.revision import build_revision_texts
from policyd.resources.objects import InferenceService
from policyd.server import responses
from policyd.server.fieldcheck import FieldCheck
from policyd.server.requests import catalog_keys, catalog_object, object_key, parse_isvc
from policyd.server.state import ServingState
from policyd.server.whatif_revisions import KeptRevisions
from policyd.whatif.lint import Linting, lint
from policyd.whatif.simulate import Cause, Decision, decide, propose, simulate

T = TypeVar("T")


def _decision(value: Decision) -> pb.Decision:
    runtime = value.runtime
    return pb.Decision(
        outcome=value.outcome,
        runtime=runtime.meta.name if runtime else "",
        runtime_kind=runtime.kind if runtime else "",
        runtime_namespace=runtime.meta.namespace if runtime else "",
        entry_index=value.entry_index,
        verdict=responses.verdict(value.verdict) if value.verdict is not None else None,
        rejection=responses.rejection(value.refusal),
        advisory=value.advisory,
    )


def _cause(value: Cause) -> pb.ChangeCause:
    return pb.ChangeCause(
        cause=value.cause,
        runtime=object_key(value.runtime) if value.runtime else None,
        reason=responses.reason(value.reason),
        by=object_key(value.by) if value.by else None,
        rank_key=value.rank_key,
        value=value.value,
        by_value=value.by_value,
        rejection=responses.rejection(value.refusal),
    )


class WhatIf:
    def __init__(self, state: ServingState) -> None:
        self.state = state
        self._revisions = KeptRevisions(4)
        # slim decisions (no verdicts but the chosen runtime's) by revisions and InferenceService
        self._decisions: Lru[tuple[str, str, str], Decision] = Lru(50_000)
        self._lints: Lru[tuple[str, str], Linting] = Lru(4)

    def _rules(self, files: Sequence[pb.RuleFile], serving: Decider) -> AbstractContextManager[Decider]:
        """A plain decider of the rule files sent, beside the serving rules, held for the block;
        the serving one (which the call holds) for none."""
        if not files:
            return nullcontext(serving)
        texts = [(f.name or f"rules[{i}]", f.content) for i, f in enumerate(files)]
        digest = hashlib.sha256(b"\0".join(f"{n}\0{c}".encode() for n, c in texts)).hexdigest()

        def build() -> Decider:
            try:
                revision = build_revision_texts(texts, "rules", self.state.rules_dir)
                return Decider(revision, self.state.facts, shortcuts=False)
            except RuleFileError as err:
                raise InvalidInput("rules", str(err)) from None

        return self._revisions.held((digest, serving.revision.id), build)

    def _cached(self, catalog: Catalog, isvc: InferenceService, decider: Decider) -> Decision:
        key = (decider.revision.id, catalog.revision, isvc.digest)
        return self._decisions.get_or(key, lambda: decide(catalog, isvc, decider).slim())

    def simulate(
        self, request: pb.SimulateRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.SimulateResponse:
        with self._rules(request.rules, decider) as after_rules:
            return self._simulate(request, decider, catalog, fields, after_rules)

    def _simulate(
        self,
        request: pb.SimulateRequest,
        decider: Decider,
        catalog: Catalog,
        fields: FieldCheck,
        after_rules: Decider,
    ) -> pb.SimulateResponse:
        applied = [catalog_object(o, f"apply[{i}]", fields) for i, o in enumerate(request.apply)]
        _refused(applied, after_rules)
        proposal = propose(catalog, applied, catalog_keys(request.delete, "delete"))
        given = [
            parse_isvc(value, fields, f"inference_services[{i}]") for i, value in enumerate(request.inference_services)
        ]
        result = simulate((catalog, decider), (proposal.catalog, after_rules), given, self._cached)
        return pb.SimulateResponse(
            changes=[
                pb.DecisionChange(
                    inference_service=object_key(c.isvc),
                    before=_decision(c.before),
                    after=_decision(c.after),
                    causes=[_cause(x) for x in c.causes],
                )
                for c in result.changes
            ],
            decided=result.decided,
            before=pb.Revisions(rules_revision=decider.revision.id, catalog_revision=catalog.revision),
            after=pb.Revisions(rules_revision=after_rules.revision.id, catalog_revision=proposal.catalog.revision),
            objects=[pb.ObjectChange(key=object_key(k), action=a) for k, a in proposal.actions],
        )

    def lint(self, request: pb.LintRequest, decider: Decider, catalog: Catalog, fields: FieldCheck) -> pb.LintResponse:
        with self._rules(request.rules, decider) as rules:
            found = self._lints.get_or((rules.revision.id, catalog.revision), lambda: lint(catalog, rules))
        return pb.LintResponse(
            findings=[
                pb.Finding(id=f.id, severity=f.severity, objects=[object_key(k) for k in f.objects], message=f.message)
                for f in found.findings
            ],
            revisions=pb.Revisions(rules_revision=rules.revision.id, catalog_revision=catalog.revision),
            catalog_errors=self.state.catalog_errors,
            models_decided=found.models_decided,
        )


def _refused(objects: Sequence[CatalogObject], decider: Decider) -> None:
    """What ApplyObjects would refuse is refused here too: a runtime the policy refuses in itself."""
    if (refused := first_catalog_refusal(decider, objects)) is not None:
        i, refusal = refused
        raise InvalidInput(f"apply[{i}].{refusal.field}", refusal.message)
