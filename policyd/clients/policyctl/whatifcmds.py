"""policyctl diff and lint: what a change would do before it is made, and what is wrong with the
catalog — against the running daemon, or offline over a directory (--catalog DIR), where the
daemon's own Simulate and Lint handlers run in this process on the bundled rules."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from policyd import offline
from policyd.clients.policyctl import inputs
from policyd.clients.policyctl.commands import UsageError, caller
from policyd.clients.policyctl.connection import as_objects
from policyd.clients.policyctl.kinds import INFERENCE_SERVICE, UnknownKind, catalog_kind, object_name
from policyd.clients.policyctl.origins import Origin, Origins
from policyd.clients.policyctl.output import Column, Result, as_dict
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

SEVERITIES = ("error", "warning", "info")


class Local:
    """Simulate and Lint over a catalog directory, in this process (policyd.offline)."""

    def __init__(self, directory: Path, validation: str) -> None:
        if not directory.is_dir():
            raise inputs.InputError(f'the path "{directory}" does not exist or is not a directory')
        self.local = offline.LocalWhatIf(directory, validation)
        self.warnings: list[str] = []

    def __call__(self, method: str, request: Message) -> Any:
        response, warnings = self.local.call(method, request)
        self.warnings.extend(warnings)
        return response


def _call(args: argparse.Namespace) -> Any:
    if args.catalog is None:
        return caller(args)
    if args.address_given:
        raise UsageError("give either --catalog DIR (offline) or --address (the daemon), not both")
    return Local(args.catalog, args.validate)


def _rules(directory: Path | None, origins: Origins) -> list[pb.RuleFile]:
    """The files of a rules directory, sent whole: the daemon cannot read them where it runs."""
    if directory is None:
        return []
    origins.add("rules", Origin(f"--rules {directory}"))
    try:
        return [pb.RuleFile(name=name, content=text) for name, text in offline.rule_file_texts(directory)]
    except offline.RulesRefused as err:
        raise inputs.InputError(str(err)) from None


def _deletions(words: list[str], namespace: str | None) -> list[pb.ObjectKey]:
    keys = []
    for word in words:
        kind_text, slash, name = word.partition("/")
        if not slash or not name:
            raise UsageError(f"--delete takes KIND/NAME (e.g. csr/my-runtime), got {word!r}")
        try:
            kind = catalog_kind(kind_text)
        except UnknownKind as err:
            raise inputs.InputError(str(err)) from None
        keys.append(
            pb.ObjectKey(kind=kind.name, namespace=(namespace or "default") if kind.namespaced else "", name=name)
        )
    return keys


def _isvcs(paths: list[Path], namespace: str | None, origins: Origins) -> list[rpb.InferenceServiceInput]:
    docs = inputs.read(paths, namespace)
    inputs.sent_as(origins, "inference_services", docs)
    for doc in docs:
        if doc.kind != INFERENCE_SERVICE.name:
            raise inputs.InputError(
                f"{doc.source}: --isvc takes InferenceServices, not {doc.kind or 'an object without kind'}"
            )
    return [rpb.InferenceServiceInput(manifest=json.dumps(d.manifest)) for d in docs]


def _runtime(kind: str, name: str) -> str:
    return f"{kind}/{name}"


def _key(key: pb.ObjectKey) -> str:
    return _runtime(key.kind, key.name)


def decision_text(d: pb.Decision) -> str:
    if d.outcome in ("selected", "resolved"):
        return _runtime(d.runtime_kind, d.runtime) + (" [advisory]" if d.advisory else "")
    if d.outcome == "refused":
        return f"refused ({d.rejection.kind})"
    if d.outcome == "invalid":
        return f"invalid ({d.rejection.field})"
    return f"<{d.outcome}>"


def _refusal(r: pb.Rejection) -> str:
    return f"{r.kind} by {r.rule_id}: {r.message or r.condition_message}"


def cause_text(cause: pb.ChangeCause, change: pb.DecisionChange) -> str:
    runtime, reason = _key(cause.runtime), cause.reason.message
    match cause.cause:
        case "removed":
            return f"{runtime} removed"
        case "added":
            return f"{runtime} added"
        case "unselectable":
            return f"{runtime}: {reason}"
        case "selectable":
            return f"{runtime} no longer fails: {reason}"
        case "outranked":
            return f"{_key(cause.by)} ranks first on {cause.rank_key}: {cause.by_value} over {cause.value}"
        case "entry":
            return f"entry {cause.value} → {cause.by_value}"
        case "support" if change.after.advisory:
            return f"{runtime} stops declaring support: {reason}"
        case "support":
            return f"{runtime} declares support (was: {reason})"
        # a refusal no rule makes is OME's "no runtime found", which the decision shows and the other causes explain
        case "refused" if cause.rejection.rule_id:
            return f"refused: {_refusal(cause.rejection)}"
        case "admitted" if cause.rejection.rule_id:
            return f"no longer refused: {_refusal(cause.rejection)}"
        case "refused" | "admitted":
            return ""
    return cause.cause


def _why(change: pb.DecisionChange) -> str:
    return "; ".join(text for c in change.causes if (text := cause_text(c, change)))


def change_line(change: pb.DecisionChange) -> str:
    """``ns/name: before → after (why)``."""
    isvc = change.inference_service
    why = _why(change)
    line = f"{isvc.namespace}/{isvc.name}: {decision_text(change.before)} → {decision_text(change.after)}"
    return f"{line} ({why})" if why else line


def diff(args: argparse.Namespace) -> Result:
    if not (args.apply or args.delete or args.rules):
        raise UsageError("must specify what would change: --apply FILE, --delete KIND/NAME or --rules DIR")
    call = _call(args)
    applied = inputs.read(args.apply or [], args.namespace, args.recursive)
    inputs.sent_as(args.origins, "apply", applied)
    for i, word in enumerate(args.delete or []):
        args.origins.add(f"delete[{i}]", Origin(f"--delete {word}"))
    request = pb.SimulateRequest(
        apply=as_objects([d.manifest for d in applied]),
        delete=_deletions(args.delete or [], args.namespace),
        rules=_rules(args.rules, args.origins),
        inference_services=_isvcs(args.isvc or [], args.namespace, args.origins),
    )
    reply: pb.SimulateResponse = call("Simulate", request)
    warnings = list(call.warnings)
    if isinstance(call, Local):
        warnings += [f"catalog: {e}" for e in call.local.catalog_errors()]

    def score(d: pb.Decision) -> Any:
        return d.verdict.score if d.HasField("verdict") else ""

    rows = [
        (
            f"{c.inference_service.namespace}/{c.inference_service.name}",
            decision_text(c.before),
            decision_text(c.after),
            _why(c),
            score(c.before),
            score(c.after),
            c.after.advisory,
        )
        for c in reply.changes
    ]
    columns = [Column(h) for h in ("INFERENCESERVICE", "BEFORE", "AFTER", "WHY")]
    columns += [Column(h, wide=True) for h in ("SCORE BEFORE", "SCORE AFTER", "ADVISORY AFTER")]
    data = as_dict(reply)
    return Result(
        data,
        columns,
        rows,
        items=data["changes"],
        names=[object_name(INFERENCE_SERVICE.name, c.inference_service.name) for c in reply.changes],
        text="\n".join(change_line(c) for c in reply.changes),
        default="text",
        warnings=warnings,
        code=1 if reply.changes else 0,  # as kubectl diff: 1 when something differs
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def lint(args: argparse.Namespace) -> Result:
    call = _call(args)
    reply: pb.LintResponse = call("Lint", pb.LintRequest(rules=_rules(args.rules, args.origins)))
    shown = SEVERITIES[: SEVERITIES.index(args.severity) + 1]
    findings = [f for f in reply.findings if f.severity in shown]
    counts = {s: sum(1 for f in reply.findings if f.severity == s) for s in SEVERITIES}
    data = as_dict(reply)
    data["findings"] = [as_dict(f) for f in findings]
    r = reply.revisions
    summary = (
        f"{_count(len(reply.findings), 'finding')}: {_count(counts['error'], 'error')}, "
        f"{_count(counts['warning'], 'warning')}, {counts['info']} info"
        + (f", {len(findings)} shown" if len(findings) < len(reply.findings) else "")
        + f" ({_count(reply.models_decided, 'model')} decided; rules {r.rules_revision}, catalog {r.catalog_revision})"
    )
    names = dict.fromkeys(object_name(k.kind, k.name) for f in findings for k in f.objects)
    return Result(
        data,
        [Column("SEVERITY"), Column("ID"), Column("MESSAGE"), Column("OBJECTS", wide=True)],
        [(f.severity, f.id, f.message, ", ".join(_key(k) for k in f.objects)) for f in findings],
        items=data["findings"],
        footer="\n" + summary,
        names=list(names),
        text=None if findings else summary,
        warnings=call.warnings,
        errors=[f"catalog: {e}" for e in reply.catalog_errors],
        code=1 if counts["error"] or reply.catalog_errors else 0,
    )
