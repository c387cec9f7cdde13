"""The daemon-facing commands of policyctl: each builds a request, calls policyd, prints."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import yaml
from google.protobuf import json_format

from clients.decision import decide, from_catalog, placed_on, render_request
from clients.policyctl.connection import as_objects, policy_stub, read_manifests, renderer_stub
from clients.policyctl.output import as_dict, dump, table
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb


class UsageError(Exception):
    pass


def _isvc(args: argparse.Namespace) -> rpb.InferenceServiceInput:
    docs = read_manifests([args.filename])
    isvcs = [d for d in docs if d.get("kind") == "InferenceService"]
    if len(isvcs) != 1:
        raise UsageError(f"{args.filename}: expected exactly one InferenceService, found {len(isvcs)}")
    return rpb.InferenceServiceInput(manifest=json.dumps(isvcs[0]))


def _catalog(args: argparse.Namespace) -> pb.RequestCatalog:
    docs = read_manifests(args.objects or [])
    return pb.RequestCatalog(objects=as_objects(docs), isolated=args.isolated)


def _revisions(r: pb.Revisions) -> str:
    return f"(rules {r.rules_revision}, catalog {r.catalog_revision})"


def explain(args: argparse.Namespace) -> int:
    request = pb.ExplainRequest(catalog=_catalog(args))
    if args.filename:
        request.inference_service.CopyFrom(_isvc(args))
    elif args.model:
        request.model.CopyFrom(
            pb.ModelSubject(model=rpb.ModelRef(name=args.model, kind=args.model_kind), namespace=args.namespace)
        )
    else:
        raise UsageError("explain needs -f ISVC.yaml or --model NAME")
    reply = policy_stub(args.address).Explain(request)
    if args.output != "table":
        print(dump(as_dict(reply), args.output))
        return 0
    print(f"MODEL {reply.model_name} {reply.model_format} {_revisions(reply.revisions)}")
    rows = [
        (
            v.name,
            "SR" if v.kind == "ServingRuntime" else "CSR",
            "Yes" if v.selectable else "No",
            "Yes" if v.compatible else "No",
            v.score if v.compatible else "",
            v.reason.message if v.HasField("reason") else "",
        )
        for v in reply.runtimes
    ]
    print(table(("RUNTIME", "KIND", "SELECTABLE", "COMPATIBLE", "SCORE", "REASON"), rows))
    return 0


def select(args: argparse.Namespace) -> int:
    reply = policy_stub(args.address).Select(pb.SelectRequest(inference_service=_isvc(args), catalog=_catalog(args)))
    if args.output != "table":
        print(dump(as_dict(reply), args.output))
        return 0 if reply.ranking else 1
    for warning in reply.warnings:
        print(f"Warning: {warning}")
    if not reply.ranking:
        print(reply.error)
        return 1
    rows = [(r.name, r.kind, r.score, r.entry_index) for r in reply.ranking]
    print(table(("RUNTIME", "KIND", "SCORE", "ENTRY"), rows))
    return 0


def resolve(args: argparse.Namespace) -> int:
    reply = policy_stub(args.address).Resolve(
        pb.ResolveRequest(inference_service=_isvc(args), catalog=_catalog(args), lookup=args.lookup)
    )
    if args.output != "table":
        print(dump(as_dict(reply), args.output))
        return 1 if reply.rejection.message or reply.rejection.condition_message else 0
    rejection = reply.rejection
    if rejection.message or rejection.condition_message:
        if rejection.message:
            print(f"rejected: {rejection.message}")
        if rejection.condition_message:
            print(f"RuntimeReady=False reason={rejection.condition_reason}: {rejection.condition_message}")
        return 1
    print(f"{reply.runtime_kind}/{reply.runtime}")
    if reply.warning:
        print(f"Warning: {reply.warning}")
    if reply.event:
        print(f"Event RuntimeCompatibilityAdvisory: {reply.event}")
    return 0


def effective(args: argparse.Namespace) -> int:
    reply = policy_stub(args.address).Effective(
        pb.EffectiveRequest(inference_service=_isvc(args), catalog=_catalog(args), lookup=args.lookup)
    )
    if args.output != "table":
        print(dump(as_dict(reply), args.output))
        return 1 if reply.errors else 0
    kind = "SR" if reply.runtime_kind == "ServingRuntime" else "CSR"
    print(f"RUNTIME {kind}/{reply.runtime}" if reply.runtime else "RUNTIME <none>")
    print(table(("COMPONENT", "MODE", "SET BY"), [(c.component, c.mode, c.source) for c in reply.components]))
    for error in reply.errors:
        print(f"error: {error.field}: {error.message}")
    if reply.HasField("diffusers_backend"):
        print()
        print(diffusers_backend_text(reply.diffusers_backend))
    return 1 if reply.errors else 0


def diffusers_backend_text(backend: pb.DiffusersBackend) -> str:
    """The diffusers backend section of ``policyctl effective``."""
    lines = [f"DIFFUSERS BACKEND   pipeline {backend.pipeline_class or '<unknown>'}"]
    if backend.HasField("refusal"):
        lines.append(f"REFUSED: {backend.refusal.message}")
    lines += ["", "from_pretrained()"]
    rows = [(k.key, k.value, k.source, k.overrides) for k in backend.from_pretrained]
    lines.append(table(("KWARG", "VALUE", "FROM", "OVERRIDES"), rows))
    lines += ["", "__call__() kwargs, merged in this order (later wins):"]
    lines += [f"  {i}. {step}" for i, step in enumerate(backend.call_merge_order, start=1)]
    if backend.call_kwargs:
        rows = [(c.key, c.value, c.shadowed, c.shadowed_by) for c in backend.call_kwargs]
        lines.append(table(("CALL KWARG", "VALUE", "REQUEST OVERRIDES", "BY"), rows))
    q = backend.quantization
    detail = {
        "translated": f"{q.flag} {q.method} → TorchAO {q.config} on {', '.join(q.components) or '<no component>'}",
        "native": q.config,
        "refused": f"{q.flag} {q.method}" + (f": {q.message}" if q.message else ""),
        "unknown": f"{q.flag}: the config names no method",
    }.get(q.path, "")
    lines += ["", f"quantization: {q.path}" + (f" ({detail})" if detail else "")]
    a = backend.attention
    tried = ", ".join(a.attempts)
    asked = f"{a.requested} ({a.source})" if a.requested else "platform default"
    if a.applied:
        lines.append(f"attention: {asked} on {a.platform}: tries {tried}, then {a.fallback} (SDPA)")
    else:
        lines.append(f"attention: {asked}: not set (the pipeline has no transformer)")
    if a.ignored_roles:
        lines.append(f"  per-role settings ignored: {', '.join(a.ignored_roles)}")
    lines += [f"after loading: {step}" for step in backend.post_load]
    lines += [f"advice: {r.message}" for r in backend.advisories]
    return "\n".join(lines)


def render(args: argparse.Namespace) -> int:
    """Decide with policyd (Resolve or Select), then render with the renderer sidecar."""
    stub = policy_stub(args.address)
    decision = decide(stub, json.loads(_isvc(args).manifest), _catalog(args), args.lookup)
    if decision.problem:
        raise UsageError(f"rejected: {decision.problem}" if decision.resolved else decision.problem)
    local = {(d.get("kind"), (d.get("metadata") or {}).get("name")): d for d in read_manifests(args.objects or [])}
    in_catalog = from_catalog(stub)

    def manifests(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return local.get((kind, name)) or in_catalog(kind, namespace, name)

    request = render_request(decision, manifests, placed_on(args.accelerator_class))
    try:
        reply = renderer_stub(args.renderer).Render(request)
    except grpc.RpcError as err:
        if err.code() == grpc.StatusCode.UNAVAILABLE:
            raise UsageError(f"cannot reach the renderer at {args.renderer} (start it with `policy-render`)") from None
        raise
    print("\n---\n".join(yaml.safe_dump(json.loads(o), sort_keys=False).rstrip() for o in reply.objects))
    for error in reply.errors:
        print(f"error: {error}")
    return 1 if reply.errors else 0


def _model_file(path: Path) -> tuple[Path, dict[str, Any]]:
    if path.is_dir():
        for name in ("model_index.json", "config.json"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise UsageError(f"{path}: neither model_index.json nor config.json")
    try:
        content = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: not a JSON file: {err}") from None
    if not isinstance(content, dict):
        raise UsageError(f"{path}: must hold a JSON object")
    return path, content


def model_inspect(args: argparse.Namespace) -> int:
    path, content = _model_file(args.path)
    request = pb.InspectModelRequest()
    is_index = path.name == "model_index.json" or ("_class_name" in content and "_diffusers_version" in content)
    json_format.ParseDict(content, request.model_index if is_index else request.config)
    if args.base_model:
        request.base_model.CopyFrom(rpb.Object(manifest=json.dumps(read_manifests([args.base_model])[0])))
    spec = json.loads(policy_stub(args.address).InspectModel(request).spec_json)
    print(dump({"spec": spec}, args.output))
    return 0


def status(args: argparse.Namespace) -> int:
    print(dump(as_dict(policy_stub(args.address).GetStatus(pb.GetStatusRequest())), args.output))
    return 0


def apply(args: argparse.Namespace) -> int:
    reply = policy_stub(args.address).ApplyObjects(
        pb.ApplyObjectsRequest(objects=as_objects(read_manifests(args.files)))
    )
    print(f"catalog {reply.catalog_revision}: {reply.runtimes} runtimes, {reply.models} models")
    return 0


def delete(args: argparse.Namespace) -> int:
    key = pb.ObjectKey(kind=args.kind, namespace=args.namespace, name=args.name)
    reply = policy_stub(args.address).DeleteObjects(pb.DeleteObjectsRequest(keys=[key]))
    print(f"catalog {reply.catalog_revision}: {reply.deleted} deleted")
    return 0 if reply.deleted else 1
