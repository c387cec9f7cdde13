"""The decision commands of policyctl (explain, select, resolve, effective, render) and model
inspect: each builds a request, calls policyd and returns what to print. What is printed is
what the daemon answered; nothing is decided here."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc
import yaml
from google.protobuf import json_format

from policyd.clients import channels
from policyd.clients.policyctl import inputs
from policyd.clients.policyctl.connection import Caller, as_objects, renderer_stub
from policyd.clients.policyctl.kinds import INFERENCE_SERVICE, object_name
from policyd.clients.policyctl.origins import Origin
from policyd.clients.policyctl.output import Column, Result, as_dict, shows_answer, table
from policyd.clients.render_request import Manifests, decide, from_catalog, placed_on, render_request
from policyd.clients.tls_faults import TlsFault
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

INFERENCE_SERVICE_FIELD = "inference_service"  # the request field of every decision call's subject


class UsageError(Exception):
    """The command line asks for something impossible: exit 2, as argparse does."""


def caller(args: argparse.Namespace) -> Caller:
    return Caller(args.address, args.validate, channels.of(args))


def _subject(args: argparse.Namespace) -> tuple[dict[str, Any], list[inputs.Document]]:
    """The InferenceService — from -f (whose other documents join the request's objects) or,
    by name, from the cluster — and the other objects of -f."""
    name = getattr(args, "isvc", None) or getattr(args, "name", None)
    if args.filename and name:
        raise UsageError("give either -f FILENAME or an InferenceService name, not both")
    if not args.filename:
        if not name:
            raise UsageError("must specify -f FILENAME, or the NAME of an InferenceService in the cluster")
        from policyd.clients.policyctl import cluster  # the kubernetes client takes 0.4 s to import: only when used

        isvc = cluster.inference_service(name, args.namespace, args.kubeconfig, args.context)
        args.origins.add(INFERENCE_SERVICE_FIELD, Origin("the cluster", f'{INFERENCE_SERVICE.name} "{name}"'))
        return isvc, []
    docs = inputs.read(args.filename, args.namespace, args.recursive)
    isvcs = [d for d in docs if d.kind == INFERENCE_SERVICE.name]
    if len(isvcs) != 1:
        where = ", ".join(str(f) for f in args.filename)
        found = ", ".join(d.source for d in isvcs) or "none"
        raise inputs.InputError(f"{where}: expected exactly one InferenceService, found {len(isvcs)} ({found})")
    args.origins.add(INFERENCE_SERVICE_FIELD, isvcs[0].origin)
    return isvcs[0].manifest, [d for d in docs if d is not isvcs[0]]


def _catalog(args: argparse.Namespace, others: list[inputs.Document]) -> pb.RequestCatalog:
    """Objects for this request only: the other documents of -f, then --objects."""
    objects = [*others, *inputs.read(args.objects or [], args.namespace, args.recursive)]
    inputs.sent_as(args.origins, "catalog.objects", objects)
    return pb.RequestCatalog(objects=as_objects([d.manifest for d in objects]), isolated=args.isolated)


def _request(args: argparse.Namespace) -> tuple[rpb.InferenceServiceInput, pb.RequestCatalog]:
    """The InferenceService and the request's own objects, from -f or the cluster."""
    isvc, others = _subject(args)
    return rpb.InferenceServiceInput(manifest=json.dumps(isvc)), _catalog(args, others)


def _revisions(r: pb.Revisions) -> str:
    return f"(rules {r.rules_revision}, catalog {r.catalog_revision})"


def _yes(value: bool) -> str:
    return "Yes" if value else "No"


def _view(args: argparse.Namespace) -> pb.VerdictView.ValueType:
    """The verdicts' FULL view (each group's reasons too) when the whole answer is printed."""
    return pb.VERDICT_VIEW_FULL if shows_answer(getattr(args, "output", None)) else pb.VERDICT_VIEW_BASIC


def explain(args: argparse.Namespace) -> Result:
    call = caller(args)
    request = pb.ExplainRequest(view=_view(args))
    if args.model:
        if args.filename or args.isvc:
            raise UsageError("give either --model NAME, -f FILENAME or --isvc NAME")
        namespace = args.namespace or "default"
        args.origins.add("model", Origin(f"--model {args.model}"))
        request.model.CopyFrom(
            pb.ModelSubject(model=rpb.ModelRef(name=args.model, kind=args.model_kind), namespace=namespace)
        )
        request.catalog.CopyFrom(_catalog(args, []))
    else:
        isvc, catalog = _request(args)
        request.inference_service.CopyFrom(isvc)
        request.catalog.CopyFrom(catalog)
    reply: pb.ExplainResponse = call("Explain", request)
    rows = [
        (
            v.name,
            v.kind,
            _yes(v.selectable),
            _yes(v.compatible),
            v.score if v.compatible else "",
            v.namespace,
            v.entry_index if v.entry_index >= 0 else "",
            v.reason.rule_id if v.HasField("reason") else "",
            "; ".join(a.message for a in v.advisories),
            v.reason.message if v.HasField("reason") else "",
        )
        for v in reply.runtimes
    ]
    # REASON last, in -o wide too: the long one, as kubectl puts MESSAGE
    columns = [Column(h) for h in ("RUNTIME", "KIND", "SELECTABLE", "COMPATIBLE", "SCORE")]
    columns += [Column(h, wide=True) for h in ("NAMESPACE", "ENTRY", "RULE", "ADVISORIES")]
    columns.append(Column("REASON"))
    data = as_dict(reply)
    return Result(
        data,
        columns,
        rows,
        items=data["runtimes"],
        title=f"MODEL {reply.model_name} {reply.model_format} {_revisions(reply.revisions)}",
        names=[object_name(v.kind, v.name) for v in reply.runtimes],
        warnings=[*call.warnings, *_omitted(reply.runtimes_omitted, "runtimes")],
    )


def _omitted(count: int, what: str) -> list[str]:
    """The warning for an answer policyd cut to keep it within what a client takes."""
    return [f"… and {count:,} more {what}, left out of the answer (it is kept within 4 MiB)"] if count else []


def select(args: argparse.Namespace) -> Result:
    call = caller(args)
    isvc, catalog = _request(args)
    request = pb.SelectRequest(inference_service=isvc, catalog=catalog, view=_view(args))
    reply: pb.SelectResponse = call("Select", request)
    rows = [
        (
            r.name,
            r.kind,
            r.score,
            r.entry_index,
            r.namespace,
            f"{r.entry.model_format.name}:{r.entry.model_format.version}".rstrip(":"),
            f"{r.entry.model_framework.name}:{r.entry.model_framework.version}".rstrip(":"),
        )
        for r in reply.ranking
    ]
    columns = [Column(h) for h in ("RUNTIME", "KIND", "SCORE", "ENTRY")]
    columns += [Column(h, wide=True) for h in ("NAMESPACE", "FORMAT", "FRAMEWORK")]
    refusal = reply.error or reply.rejection.message
    data = as_dict(reply)
    return Result(
        data if reply.ranking else None,  # a command that fails prints nothing on stdout
        columns,
        rows,
        items=data["ranking"],
        names=[object_name(r.kind, r.name) for r in reply.ranking],
        warnings=[*call.warnings, *reply.warnings, *_omitted(reply.excluded_omitted, "excluded runtimes")],
        errors=[refusal] if not reply.ranking and refusal else [],
        code=0 if reply.ranking else 1,
    )


def _rejection(rejection: pb.Rejection) -> list[str]:
    """The cause, once: the message (the condition's when the webhook would say none) and the
    RuntimeReady reason the controller would set."""
    text = rejection.message or rejection.condition_message
    if not text:
        return []
    return [f"{text} (RuntimeReady=False reason={rejection.condition_reason})" if rejection.condition_reason else text]


def resolve(args: argparse.Namespace) -> Result:
    call = caller(args)
    isvc, catalog = _request(args)
    request = pb.ResolveRequest(inference_service=isvc, catalog=catalog, lookup=args.lookup)
    reply: pb.ResolveResponse = call("Resolve", request)
    rejected = _rejection(reply.rejection)
    rows = (
        []
        if rejected
        else [
            (
                reply.runtime,
                reply.runtime_kind,
                _yes(reply.compatible),
                reply.event_reason,
                reply.runtime_namespace,
                reply.entry_index if reply.entry_index >= 0 else "",
                reply.reason.message if reply.HasField("reason") else "",
                reply.event,
            )
        ]
    )
    columns = [Column(h) for h in ("RUNTIME", "KIND", "COMPATIBLE", "EVENT")]
    columns += [Column(h, wide=True) for h in ("NAMESPACE", "ENTRY", "REASON", "MESSAGE")]
    data = as_dict(reply)
    return Result(
        None if rejected else data,
        columns,
        rows,
        items=[] if rejected else [data],
        names=[] if rejected else [object_name(reply.runtime_kind, reply.runtime)],
        warnings=[*call.warnings, *([reply.warning] if reply.warning else [])],
        errors=rejected,
        code=1 if rejected else 0,
    )


def _pin(isvc: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A pinned InferenceService's pin and drift (spec 002: effective "shows the pin and drift"),
    as data and as lines; nothing for one that follows its runtime."""
    runtime = (isvc.get("spec") or {}).get("runtime") or {}
    if not runtime.get("name") or runtime.get("autoSync") is not False:
        return {}, []
    revision = str(runtime.get("revision") or "")
    conditions = (isvc.get("status") or {}).get("conditions") or []
    drifted = next((c for c in conditions if c.get("type") == "RuntimeDrifted"), None)
    data: dict[str, Any] = {"pin": {"autoSync": False, "revision": revision}}
    lines = [f"PIN     autoSync: false, {'revision ' + revision if revision else 'the newest snapshot of the runtime'}"]
    if drifted is None:
        lines.append("DRIFT   <unknown: the controller has not reported RuntimeDrifted>")
    else:
        data["drift"] = {k: drifted.get(k, "") for k in ("status", "reason", "message")}
        lines.append(f"DRIFT   {drifted.get('status')} {drifted.get('reason')}: {drifted.get('message')}")
    return data, lines


def _inheritance(
    call: Caller, catalog: pb.RequestCatalog, isvc: Mapping[str, Any], reply: pb.EffectiveResponse
) -> tuple[dict[str, Any], list[str]]:
    """What each declared component inherits from the runtime, as ``inheritance`` (for -o
    json|yaml, spec 002), or the warning that says why it is not known."""
    if not reply.HasField("selection"):
        return {}, []
    key = reply.selection.runtime
    runtime = _manifests(call, catalog)(key.kind, key.namespace, key.name)
    if runtime is None:  # gone from the catalog since policyd answered
        return {}, [f"{object_name(key.kind, key.name)} is not in policyd's catalog: its inheritance is unknown"]
    modes = {c.component: (c.mode, c.source) for c in reply.components}
    from policyd.clients.policyctl.inheritance import (
        inheritance,  # the renderer's merge table loads the kubernetes client
    )

    return {"inheritance": inheritance(runtime, isvc, modes)}, []


def effective(args: argparse.Namespace) -> Result:
    call = caller(args)
    subject, others = _subject(args)
    isvc, catalog = rpb.InferenceServiceInput(manifest=json.dumps(subject)), _catalog(args, others)
    pin, pin_lines = _pin(subject)
    request = pb.EffectiveRequest(inference_service=isvc, catalog=catalog, lookup=args.lookup)
    reply: pb.EffectiveResponse = call("Effective", request)
    # read from the runtime's manifest, which only -o json|yaml shows: no call for the table
    inherits, unknown = _inheritance(call, catalog, subject, reply) if shows_answer(args.output) else ({}, [])
    errors = [f"{e.field}: {e.message}" if e.field else e.message for e in reply.errors]
    if not reply.runtime and not errors:  # the daemon's errors say why there is none; this only when they do not
        errors = ["no runtime: none is named, and none can be selected (see policyctl select)"]
    rows = [(c.component, c.mode, c.source, c.error.message if c.HasField("error") else "") for c in reply.components]
    footer = ["", *pin_lines] if pin_lines else []
    for field, section in reply.backends.ListFields():  # each engine backend's section, by its printer
        footer += ["", BACKEND_SECTIONS[field.name](section)]
    data = {**as_dict(reply), **pin, **inherits}
    return Result(
        data if reply.runtime else None,  # no runtime: nothing on stdout
        [Column("COMPONENT"), Column("MODE"), Column("SET BY"), Column("ERROR", wide=True)],
        rows,
        items=data["components"],
        title=f"RUNTIME {reply.runtime_kind}/{reply.runtime}",
        footer="\n".join(footer),
        names=[object_name(reply.runtime_kind, reply.runtime)] if reply.runtime else [],
        warnings=[*call.warnings, *unknown],
        errors=errors,
        code=1 if errors else 0,
    )


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


# how ``policyctl effective`` prints each field of EngineBackends: a backend's section, by the field
BACKEND_SECTIONS: dict[str, Callable[[Any], str]] = {"diffusers": diffusers_backend_text}


def _manifests(call: Caller, catalog: pb.RequestCatalog) -> Manifests:
    """Objects as policyd decided from them: the request's own, else its catalog's."""
    local = {
        (d["kind"], (d.get("metadata") or {}).get("name")): d for d in (json.loads(o.manifest) for o in catalog.objects)
    }
    in_catalog = from_catalog(call)

    def manifests(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return local.get((kind, name)) or in_catalog(kind, namespace, name)

    return manifests


def render(args: argparse.Namespace) -> Result:
    """Decide with policyd, then render with the renderer sidecar."""
    call = caller(args)
    isvc, catalog = _request(args)
    decision = decide(call, json.loads(isvc.manifest), catalog, args.lookup)
    if decision.problem:
        return Result(None, errors=[decision.problem], code=1, warnings=call.warnings)
    request = render_request(decision, _manifests(call, catalog), placed_on(args.accelerator_class))
    try:
        reply = renderer_stub(args.renderer, channels.of(args)).Render(request)
    except TlsFault as err:  # (before UNAVAILABLE, which it also is: the two ends' TLS disagree)
        raise inputs.InputError(f"the renderer at {err.details()}") from None
    except grpc.RpcError as err:
        if isinstance(err, grpc.Call) and err.code() == grpc.StatusCode.UNAVAILABLE:
            raise inputs.InputError(
                f"cannot reach the renderer at {args.renderer}: UNAVAILABLE (start it with `policy-render`)"
            ) from None
        raise
    objects = [_applicable(json.loads(o)) for o in reply.objects]
    rows = [
        (
            o.get("kind"),
            (o.get("metadata") or {}).get("name"),
            o.get("apiVersion"),
            (o.get("metadata") or {}).get("namespace"),
        )
        for o in objects
    ]
    return Result(
        {"apiVersion": "v1", "kind": "List", "items": objects},
        [Column("KIND"), Column("NAME"), Column("APIVERSION", wide=True), Column("NAMESPACE", wide=True)],
        rows,
        items=objects,
        names=[
            object_name(str(o.get("kind")), str((o.get("metadata") or {}).get("name")), str(o.get("apiVersion")))
            for o in objects
        ],
        text="\n---\n".join(yaml.safe_dump(o, sort_keys=False).rstrip() for o in objects),
        default="text",
        warnings=call.warnings,
        errors=list(reply.errors),
        code=1 if reply.errors else 0,
    )


def _applicable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as ``kubectl apply`` takes it: the API server refuses an ownerReference without
    a uid, which an InferenceService read from a file (not yet created) cannot give; one read
    from the cluster has its uid, and its objects keep their owner."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "ownerReferences" in meta:
        owners = [r for r in meta["ownerReferences"] if r.get("uid")]
        if owners:
            meta["ownerReferences"] = owners
        else:
            del meta["ownerReferences"]
    return obj


def _model_file(path: Path) -> tuple[Path, dict[str, Any]]:
    if not path.exists():
        raise inputs.InputError(f'the path "{path}" does not exist')
    if path.is_dir():
        for name in ("model_index.json", "config.json"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise inputs.InputError(f"{path}: neither model_index.json nor config.json")
    try:
        content = json.loads(inputs.read_text(path))
    except json.JSONDecodeError as err:
        raise inputs.InputError(f"{path}: not a JSON file: {err}") from None
    if not isinstance(content, dict):
        raise inputs.InputError(f"{path}: must hold a JSON object")
    return path, content


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}" if path else str(k))]
    return [(path, json.dumps(value) if isinstance(value, dict | list) else value)]


def model_inspect(args: argparse.Namespace) -> Result:
    call = caller(args)
    path, content = _model_file(args.path)
    request = pb.InspectModelRequest()
    is_index = path.name == "model_index.json" or ("_class_name" in content and "_diffusers_version" in content)
    json_format.ParseDict(content, request.model_index if is_index else request.config)
    args.origins.add("model_index" if is_index else "config", Origin(str(path)))
    base: dict[str, Any] | None = None
    if args.base_model:
        docs = inputs.read([args.base_model], args.namespace)
        if len(docs) != 1:
            raise inputs.InputError(
                f"{args.base_model}: expected one BaseModel or ClusterBaseModel, found {len(docs)} documents"
            )
        base = docs[0].manifest
        args.origins.add("base_model", docs[0].origin)
        request.base_model.CopyFrom(rpb.Object(manifest=json.dumps(base)))
    spec = json.loads(call("InspectModel", request).spec_json)
    # with --base-model: the whole manifest, ready to apply; else the spec OME records
    data = {**base, "spec": spec} if base is not None else {"spec": spec}
    leaves = _leaves(spec, "spec")
    return Result(
        data,
        [Column("FIELD"), Column("VALUE")],
        leaves,
        items=[{"field": f, "value": v} for f, v in leaves],
        names=[object_name(str(base.get("kind")), inputs.Document(base, "").name)] if base is not None else [],
        default="yaml",
        warnings=call.warnings,
    )
