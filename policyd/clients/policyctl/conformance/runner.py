"""Run conformance cases through policyd's and the renderer's gRPC APIs.

Every expectation key is checked; a key the runner does not know fails the case,
so a case is never passed by skipping what it asks. Every action can expect an error
(``error`` / ``errorContains``): the daemon's refusal of the call, or the error its answer
carries (Select's no-runtime message, a render with no runtime to render with)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import grpc
from google.protobuf import json_format

from policyd.clients.policyctl.conformance.cases import Case
from policyd.clients.policyctl.conformance.paths import check
from policyd.clients.render_request import decide, placed_on, render_request
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb

Problems = list[str]
Answer = TypeVar("Answer")
ERROR_KEYS = frozenset({"error", "errorContains"})


@dataclass
class Stubs:
    policy: policy_pb2_grpc.PolicyServiceStub
    renderer: render_pb2_grpc.RendererServiceStub | None


@dataclass(frozen=True)
class Action(Generic[Answer]):
    """One request.action: the call, and the checks of its answer. Expecting an error is
    handled once for all of them (``run_case``)."""

    label: str  # what the failure messages call it
    keys: frozenset[str]  # the expectation keys it checks besides error and errorContains
    call: Callable[[Case, Stubs], Answer]  # raises grpc.RpcError when the daemon refuses
    refused: Callable[[], Answer]  # the answer of a refused call: nothing selected, listed or rendered
    error: Callable[[Answer], str]  # the error an answer carries; "" for none
    summary: Callable[[Answer], str]  # what came instead, when an error was expected
    check: Callable[[Case, Answer], Problems]


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


def _unknown(expect: Mapping[str, Any], known: frozenset[str]) -> Problems:
    return [f"cannot check expectation {k!r} for this action" for k in expect if k not in known]


def _no_error(_: Any) -> str:
    return ""


def _error_problems(expect: Mapping[str, Any], error: str, instead: str) -> Problems:
    """``error`` (exact; null: none) and ``errorContains`` against the error that came
    (empty: none, and ``instead`` says what came)."""
    got = repr(error) if error else f"no error ({instead})"
    problems: Problems = []
    if "error" in expect and _absent(error) != _absent(expect["error"]):
        wanted = "none" if _absent(expect["error"]) is None else repr(expect["error"])
        problems.append(f"error: expected {wanted}, got {got}")
    if "errorContains" in expect and not (error and str(expect["errorContains"]) in error):
        problems.append(f"error: expected one containing {expect['errorContains']!r}, got {got}")
    return problems


# -- select -------------------------------------------------------------------------------
def _select_call(case: Case, stubs: Stubs) -> pb.SelectResponse:
    reply: pb.SelectResponse = stubs.policy.Select(
        pb.SelectRequest(inference_service=_isvc(case), catalog=_objects(case))
    )
    return reply


def _select_summary(reply: pb.SelectResponse) -> str:
    return f"selected {reply.ranking[0].name!r}" if reply.ranking else "nothing selected"


def _select_check(case: Case, reply: pb.SelectResponse) -> Problems:
    e, problems = case.expect, Problems()
    names = [r.name for r in reply.ranking]
    if "selected" in e:
        _compare(problems, "selected", names[0] if names else None, e["selected"])
    if "selectedKind" in e:
        _compare(problems, "selectedKind", reply.ranking[0].kind if names else None, e["selectedKind"])
    if "ranking" in e:
        _compare(problems, "ranking", names, e["ranking"])
    if "warnings" in e:
        _compare(problems, "warnings", list(reply.warnings), e["warnings"] or [])
    return problems


# -- explain ------------------------------------------------------------------------------
def _explain_call(case: Case, stubs: Stubs) -> pb.ExplainResponse:
    reply: pb.ExplainResponse = stubs.policy.Explain(
        pb.ExplainRequest(inference_service=_isvc(case), catalog=_objects(case))
    )
    return reply


def _explain_check(case: Case, reply: pb.ExplainResponse) -> Problems:
    problems: Problems = []
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


# -- resolve ------------------------------------------------------------------------------
def _resolve_call(case: Case, stubs: Stubs) -> pb.ResolveResponse:
    reply: pb.ResolveResponse = stubs.policy.Resolve(
        pb.ResolveRequest(inference_service=_isvc(case), catalog=_objects(case))
    )
    return reply


def _rejection(reply: pb.ResolveResponse) -> str:
    rejection = reply.rejection
    return " ".join(t for t in (rejection.message, rejection.condition_message) if t)


def _resolve_summary(reply: pb.ResolveResponse) -> str:
    rejected = _rejection(reply)
    return f"rejected: {rejected}" if rejected else f"resolved to {reply.runtime!r}"


def _resolve_check(case: Case, reply: pb.ResolveResponse) -> Problems:
    e, problems = case.expect, Problems()
    rejected_text = _rejection(reply)
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
    return problems


# -- render and inspect-model: assertions on a root ---------------------------------------
@dataclass(frozen=True)
class Root:
    """What the assertions are checked on, and the error that came with it."""

    value: dict[str, Any]
    error: str = ""


def _find(case: Case, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    for obj in case.objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == kind and meta.get("name") == name:
            if kind in ("ServingRuntime", "BaseModel") and (meta.get("namespace") or "") != namespace:
                continue
            return obj
    return None


def _render_root(case: Case, stubs: Stubs) -> Root:
    """policyd's decision, then the renderer. A decision
    with no runtime to render with renders nothing: its problem is the error, and in ``errors``."""
    if stubs.renderer is None:
        raise RuntimeError("no renderer to render with")
    decision = decide(stubs.policy, case.request.get("inferenceService") or {}, _objects(case))
    if decision.problem:
        return Root({"workloads": [], "errors": [decision.problem]}, decision.problem)
    classes = placed_on(case.request.get("acceleratorClass"))
    request = render_request(decision, lambda kind, ns, name: _find(case, kind, ns, name), classes)
    reply = stubs.renderer.Render(request)
    return Root({"workloads": [json.loads(o) for o in reply.objects], "errors": list(reply.errors)})


def _render_summary(root: Root) -> str:
    return f"{len(root.value.get('workloads') or [])} workloads rendered"


def _inspect_root(case: Case, stubs: Stubs) -> Root:
    request = pb.InspectModelRequest()
    if "modelIndex" in case.request:
        json_format.ParseDict(case.request["modelIndex"], request.model_index)
    elif "config" in case.request:
        json_format.ParseDict(case.request["config"], request.config)
    if case.request.get("baseModel"):
        request.base_model.CopyFrom(rpb.Object(manifest=json.dumps(case.request["baseModel"])))
    spec: dict[str, Any] = json.loads(stubs.policy.InspectModel(request).spec_json)
    return Root(spec)


def _assertions_check(case: Case, root: Root) -> Problems:
    problems: Problems = []
    for assertion in case.expect.get("assertions") or []:
        try:
            failure = check(root.value, assertion)
        except ValueError as err:
            failure = str(err)
        if failure:
            problems.append(failure)
    return problems


_ASSERTIONS = frozenset({"assertions"})

ACTIONS: dict[str, Action[Any]] = {
    "select": Action(
        "Select",
        frozenset({"selected", "selectedKind", "ranking", "warnings"}),
        _select_call,
        pb.SelectResponse,
        lambda reply: str(reply.error),
        _select_summary,
        _select_check,
    ),
    "explain": Action(
        "Explain",
        frozenset({"verdicts"}),
        _explain_call,
        pb.ExplainResponse,
        _no_error,
        lambda reply: f"an explanation of {len(reply.runtimes)} runtimes",
        _explain_check,
    ),
    "resolve": Action(
        "Resolve",
        frozenset({"runtime", "runtimeKind", "warning", "event", "rejected"}),
        _resolve_call,
        pb.ResolveResponse,
        _no_error,
        _resolve_summary,
        _resolve_check,
    ),
    "render": Action(
        "render",
        _ASSERTIONS,
        _render_root,
        lambda: Root({"workloads": [], "errors": []}),
        lambda root: root.error,
        _render_summary,
        _assertions_check,
    ),
    "inspect-model": Action(
        "InspectModel",
        _ASSERTIONS,
        _inspect_root,
        lambda: Root({}),
        _no_error,
        lambda _: "a spec recorded",
        _assertions_check,
    ),
}


def _run(action: Action[Any], case: Case, stubs: Stubs) -> Problems:
    expect = case.expect
    problems = _unknown(expect, action.keys | ERROR_KEYS)
    try:
        answer = action.call(case, stubs)
        error = action.error(answer)
    except grpc.RpcError as err:  # refused: the refusal is the error, and nothing was answered
        answer, error = action.refused(), err.details() or err.code().name
        if not ERROR_KEYS & set(expect):
            problems.append(f"{action.label} refused: {err.code().name}: {err.details()}")
    problems += _error_problems(expect, error, action.summary(answer))
    return problems + action.check(case, answer)


def run_case(case: Case, stubs: Stubs) -> Problems:
    if case.problem:
        return [case.problem]
    try:
        return _run(ACTIONS[case.request["action"]], case, stubs)
    except Exception as err:  # a case that cannot run counts as failed, with the reason
        return [f"cannot run: {type(err).__name__}: {err}"]


__all__ = ["ACTIONS", "Stubs", "run_case"]
