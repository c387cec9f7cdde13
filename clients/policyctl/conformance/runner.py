"""Run conformance cases through policyd's and the renderer's gRPC APIs.

Every expectation key is checked; a key the runner does not know fails the case,
so a case is never passed by skipping what it asks."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import json_format

from clients.decision import decide, placed_on, render_request
from clients.policyctl.conformance.cases import Case
from clients.policyctl.conformance.paths import check
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb

Problems = list[str]


@dataclass
class Stubs:
    policy: policy_pb2_grpc.PolicyServiceStub
    renderer: render_pb2_grpc.RendererServiceStub | None


def _objects(case: Case) -> pb.RequestCatalog:
    return pb.RequestCatalog(objects=[rpb.Object(manifest=json.dumps(o)) for o in case.objects], isolated=True)


def _isvc(case: Case) -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(case.request.get("inferenceService") or {}))


def _absent(value: Any) -> Any:
    # the format: an empty string and an absent value are the same
    return None if value == "" else value


def _compare(problems: Problems, what: str, got: Any, expected: Any) -> None:
    if _absent(got) != _absent(expected):
        problems.append(f"{what}: expected {expected!r}, got {got!r}")


def _unknown(expect: Mapping[str, Any], known: set[str]) -> Problems:
    return [f"cannot check expectation {k!r} for this action" for k in expect if k not in known]


def _select(case: Case, stubs: Stubs) -> Problems:
    e = case.expect
    problems = _unknown(e, {"selected", "selectedKind", "ranking", "error", "errorContains", "warnings"})
    try:
        reply = stubs.policy.Select(pb.SelectRequest(inference_service=_isvc(case), catalog=_objects(case)))
        names, error, warnings = [r.name for r in reply.ranking], reply.error, list(reply.warnings)
        kind = reply.ranking[0].kind if reply.ranking else None
    except grpc.RpcError as err:
        names, error, warnings, kind = [], err.details() or "", [], None
    if "selected" in e:
        _compare(problems, "selected", names[0] if names else None, e["selected"])
    if "selectedKind" in e:
        _compare(problems, "selectedKind", kind, e["selectedKind"])
    if "ranking" in e:
        _compare(problems, "ranking", names, e["ranking"])
    if "error" in e:
        _compare(problems, "error", error or None, e["error"])
    if "errorContains" in e and e["errorContains"] not in error:
        problems.append(f"error {error!r} does not contain {e['errorContains']!r}")
    if "warnings" in e:
        _compare(problems, "warnings", warnings, e["warnings"] or [])
    return problems


def _explain(case: Case, stubs: Stubs) -> Problems:
    problems = _unknown(case.expect, {"verdicts"})
    try:
        reply = stubs.policy.Explain(pb.ExplainRequest(inference_service=_isvc(case), catalog=_objects(case)))
    except grpc.RpcError as err:
        return [*problems, f"Explain failed: {err.code().name}: {err.details()}"]
    verdicts = {v.name: v for v in reply.runtimes}
    for name, expected in (case.expect.get("verdicts") or {}).items():
        v = verdicts.get(name)
        if v is None:
            problems.append(f"{name}: not in the explanation")
            continue
        message = v.reason.message if v.HasField("reason") else ""
        for key, want in expected.items():
            if key in ("selectable", "compatible", "score"):
                _compare(problems, f"{name}.{key}", getattr(v, key), want)
            elif key == "reason":
                _compare(problems, f"{name}.reason", message, want)
            elif key == "reasonContains":
                if want not in message:
                    problems.append(f"{name}.reason {message!r} does not contain {want!r}")
            else:
                problems.append(f"cannot check verdict key {key!r}")
    return problems


def _resolve_call(case: Case, stubs: Stubs) -> pb.ResolveResponse:
    reply: pb.ResolveResponse = stubs.policy.Resolve(
        pb.ResolveRequest(inference_service=_isvc(case), catalog=_objects(case))
    )
    return reply


def _resolve(case: Case, stubs: Stubs) -> Problems:
    e = case.expect
    problems = _unknown(e, {"runtime", "runtimeKind", "warning", "event", "rejected", "error", "errorContains"})
    try:
        reply = _resolve_call(case, stubs)
    except grpc.RpcError as err:
        error = err.details() or ""
        if "error" in e:
            _compare(problems, "error", error, e["error"])
        if "errorContains" in e and e["errorContains"] not in error:
            problems.append(f"error {error!r} does not contain {e['errorContains']!r}")
        if not {"error", "errorContains"} & set(e):
            problems.append(f"Resolve failed: {err.code().name}: {error}")
        return problems
    rejection = reply.rejection
    rejected_text = " ".join(t for t in (rejection.message, rejection.condition_message) if t)
    if "runtime" in e:
        _compare(problems, "runtime", reply.runtime or None, e["runtime"])
    if "runtimeKind" in e:
        _compare(problems, "runtimeKind", reply.runtime_kind or None, e["runtimeKind"])
    if "warning" in e:
        _compare(problems, "warning", reply.warning or None, e["warning"])
    if "event" in e:
        _compare(problems, "event", reply.event or None, e["event"])
    if "rejected" in e and (not rejected_text or e["rejected"] not in rejected_text):
        problems.append(f"rejection {rejected_text!r} does not contain {e['rejected']!r}")
    for key in ("error", "errorContains"):
        if key in e:
            problems.append(f"expected an error, got a resolution of {reply.runtime!r}")
    return problems


def _find(case: Case, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    for obj in case.objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == kind and meta.get("name") == name:
            if kind in ("ServingRuntime", "BaseModel") and (meta.get("namespace") or "") != namespace:
                continue
            return obj
    return None


def _render_root(case: Case, stubs: Stubs) -> dict[str, Any]:
    """The decision (Resolve for a named runtime, else Select), then the renderer."""
    if stubs.renderer is None:
        raise RuntimeError("no renderer to render with")
    decision = decide(stubs.policy, case.request.get("inferenceService") or {}, _objects(case))
    if decision.problem:
        return {"workloads": [], "errors": [decision.problem]}
    classes = placed_on(case.request.get("acceleratorClass"))
    request = render_request(decision, lambda kind, ns, name: _find(case, kind, ns, name), classes)
    reply = stubs.renderer.Render(request)
    return {"workloads": [json.loads(o) for o in reply.objects], "errors": list(reply.errors)}


def _inspect_root(case: Case, stubs: Stubs) -> dict[str, Any]:
    request = pb.InspectModelRequest()
    if "modelIndex" in case.request:
        json_format.ParseDict(case.request["modelIndex"], request.model_index)
    elif "config" in case.request:
        json_format.ParseDict(case.request["config"], request.config)
    if case.request.get("baseModel"):
        request.base_model.CopyFrom(rpb.Object(manifest=json.dumps(case.request["baseModel"])))
    spec: dict[str, Any] = json.loads(stubs.policy.InspectModel(request).spec_json)
    return spec


def _assertions(root_of: Callable[[Case, Stubs], dict[str, Any]]) -> Callable[[Case, Stubs], Problems]:
    def run(case: Case, stubs: Stubs) -> Problems:
        problems = _unknown(case.expect, {"assertions"})
        try:
            root = root_of(case, stubs)
        except grpc.RpcError as err:
            return [*problems, f"RPC failed: {err.code().name}: {err.details()}"]
        for assertion in case.expect.get("assertions") or []:
            try:
                failure = check(root, assertion)
            except ValueError as err:
                failure = str(err)
            if failure:
                problems.append(failure)
        return problems

    return run


ACTIONS: dict[str, Callable[[Case, Stubs], Problems]] = {
    "select": _select,
    "explain": _explain,
    "resolve": _resolve,
    "render": _assertions(_render_root),
    "inspect-model": _assertions(_inspect_root),
}


def run_case(case: Case, stubs: Stubs) -> Problems:
    if case.problem:
        return [case.problem]
    try:
        return ACTIONS[case.request["action"]](case, stubs)
    except Exception as err:  # a case that cannot run counts as failed, with the reason
        return [f"cannot run: {type(err).__name__}: {err}"]


__all__ = ["ACTIONS", "Stubs", "run_case"]
