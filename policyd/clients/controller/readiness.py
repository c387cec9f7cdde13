"""The InferenceService status OME's controller writes from the objects it owns (status/
status_reconciler.go, controller.go): each component's ready condition, IngressReady, Ready, the
URL, the components' status and the model's. A pure function of the InferenceService (its status
included), its live workloads and its live pods.

OME's install (disableIngressCreation: true, domain svc.cluster.local) is what is described:
IngressReady True ``IngressDisabled``, and the URL that of the Service named after the
InferenceService, with the port of the router's Service when a router is declared, else the
engine's (GetTargetServicePort; 8080 while that Service is unknown). Ready is knative's
LivingConditionSet(IngressReady, EngineReady), so a decoder or router not ready leaves it alone;
RuntimeReady and RuntimeDrifted are written elsewhere and take no part in it.

Where OME is read one way and written another:

- ``observedGeneration`` is the InferenceService's ``metadata.generation``: OME copies the last
  component's Deployment ``status.observedGeneration`` (or LeaderWorkerSet generation), another
  object's counter, which says nothing about which InferenceService spec the status is for.
- A component whose workload does not exist yet, or shows no Available condition yet: OME sets
  an empty condition (a no-op) and its InitializeComponentCondition skips an absent one, so
  nothing is shown; here it is Unknown ``Initializing`` "<component> component initializing",
  its wording, and Ready Unknown with it (knative's MarkUnknown).
- A component not Available keeps the Deployment's reason and message: OME's
  InitializeComponentCondition rewrites any False one to ``Initializing`` on every pass, hiding
  them. A pod the scheduler cannot place adds its reason to the message (False, the pod's reason,
  when there was no Available condition to keep).
- A LeaderWorkerSet that lost its availability flips Available to False but keeps "All replicas
  are ready": its reason and message are then those of the condition it raised instead
  (Progressing or UpdateInProgress).
- A component's ``url`` is there only while it is Available (OME keeps the last one it set).
  A LeaderWorkerSet has no ``latestCreatedRevision`` (OME reads an annotation nobody sets).
- ``modelStatus`` is PropagateModelStatus over the engine's pods, applied to the status the
  InferenceService has (it keeps ``activeModelState``, ``modelCopies``, ``lastFailureInfo``).
  OME runs it for each component in turn, the last declared winning, and in MultiNode lists pods
  by a Knative revision label no pod has (Pending forever); here the engine's pods are the
  model's, a MultiNode group counting once (its leader). Where OME leaves it as it was for want
  of a container status (a runner not started yet, a crash loop with no termination recorded),
  it is Pending; ``activeModelState`` starts at the CRD's default, Pending (Go writes "").
- VirtualDeployment (the ``ome.io/deploymentMode`` annotation): OME's fixed Ready True, URL and
  ``predictor`` component, and no modelStatus.
- Both a Deployment and a LeaderWorkerSet for a component (its mode changed, the old one not yet
  deleted): the newer is the component's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd.clients.controller.outcome import Condition
from policyd.clients.renderer.external_service import DEFAULT_PORT, target_port
from policyd.clients.renderer.metadata import LABEL_COMPONENT
from policyd.clients.renderer.multinode import LEADER, LWS_API_VERSION
from policyd.clients.renderer.names import lws_name, truncated
from policyd.clients.renderer.parts import DEFAULT_RUNNER_NAME
from policyd.resources.deployment_modes import COMPONENTS, MODE_ANNOTATION

ENGINE_READY = "EngineReady"
DECODER_READY = "DecoderReady"
ROUTER_READY = "RouterReady"
INGRESS_READY = "IngressReady"
READY = "Ready"
READY_CONDITIONS = {"engine": ENGINE_READY, "decoder": DECODER_READY, "router": ROUTER_READY}
INGRESS_DISABLED = Condition(
    "True", "IngressDisabled", "Ingress creation is disabled, using external service for access", INGRESS_READY
)
_LIVING = (READY, ENGINE_READY, INGRESS_READY)  # the condition set's happy condition and dependents
_DOMAIN = "svc.cluster.local"
_REVISION = "deployment.kubernetes.io/revision"
_STORAGE_INITIALIZER = "storage-initializer"
_LWS_RAISED = ("Progressing", "UpdateInProgress")  # what a LeaderWorkerSet raises when Available drops
_TRANSITION = {
    "Pending": "InProgress",
    "Loading": "InProgress",
    "Loaded": "UpToDate",
    "FailedToLoad": "BlockedByFailedLoad",
}


@dataclass(frozen=True)
class Readiness:
    # in the order OME sets them: EngineReady, DecoderReady, RouterReady, IngressReady, Ready
    conditions: tuple[Condition, ...]
    url: str
    components: Mapping[str, Mapping[str, Any]]  # component -> ComponentStatusSpec
    model_status: Mapping[str, Any] | None  # None: OME writes none (VirtualDeployment)
    observed_generation: int | None

    @property
    def address(self) -> dict[str, str]:
        return {"url": self.url}

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


def readiness(
    isvc: Mapping[str, Any], workloads: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]
) -> Readiness:
    """``workloads``: the objects the InferenceService owns, ``pods`` its pods, as read from the
    cluster with the status their controllers wrote."""
    metadata = _mapping(isvc.get("metadata"))
    name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace") or "default")
    generation = metadata.get("generation")
    observed = generation if isinstance(generation, int) else None
    if _mapping(metadata.get("annotations")).get(MODE_ANNOTATION) == "VirtualDeployment":
        url = f"http://{name}.{namespace}.{_DOMAIN}"
        ready = Condition("True", "VirtualDeployment", "InferenceService is in VirtualDeployment mode", READY)
        return Readiness((ready,), url, {"predictor": {"url": url}}, None, observed)
    spec = _mapping(isvc.get("spec"))
    # EngineReady is in the condition set whether or not an engine is declared
    evaluated = [c for c in COMPONENTS if c == "engine" or spec.get(c) is not None]
    found = {c: _workload(f"{name}-{c}", workloads) for c in evaluated}
    conditions: list[Condition] = []
    components: dict[str, dict[str, Any]] = {}
    for component, workload in found.items():
        own_pods = [p for p in pods if _labels(p).get(LABEL_COMPONENT) == component and not _deleting(p)]
        condition = _component_condition(component, workload, own_pods)
        conditions.append(condition)
        url = f"http://{truncated(f'{name}-{component}')}.{namespace}.{_DOMAIN}"
        components[component] = _component_status(workload, condition.ready, url)
    ready = _ready((conditions[0], INGRESS_DISABLED))  # EngineReady, then IngressReady, as OME marks them
    conditions += [INGRESS_DISABLED, ready]
    port = target_port(isvc, workloads)  # that Service not there (yet): OME's default port
    url = f"http://{name}.{namespace}.{_DOMAIN}:{DEFAULT_PORT if port is None else port}"
    multinode = (found["engine"] or {}).get("kind") == "LeaderWorkerSet"
    engine_pods = [
        p
        for p in pods
        if _labels(p).get(LABEL_COMPONENT) == "engine"
        and not _deleting(p)
        and (not multinode or LEADER.items() <= _labels(p).items())
    ]
    previous = _mapping(_mapping(isvc.get("status")).get("modelStatus"))
    return Readiness(tuple(conditions), url, components, _model_status(previous, engine_pods, ready.ready), observed)


def status_fields(readiness: Readiness, isvc: Mapping[str, Any]) -> dict[str, Any]:
    """The status fields other than conditions that differ from the InferenceService's, as a
    JSON merge patch (a key gone is None); {} when its status already says them all."""
    desired: dict[str, Any] = {
        "url": readiness.url,
        "address": readiness.address,
        "components": {k: dict(v) for k, v in readiness.components.items()},
    }
    if readiness.model_status is not None:
        desired["modelStatus"] = readiness.model_status
    if readiness.observed_generation is not None:
        desired["observedGeneration"] = readiness.observed_generation
    status = _mapping(isvc.get("status"))
    return {key: _merge_patch(status.get(key), value) for key, value in desired.items() if status.get(key) != value}


def severity(condition_type: str) -> str:
    """The knative severity of a condition OME writes: Error (empty) for Ready and its
    dependents, Info for the others (DecoderReady, RouterReady)."""
    return "" if condition_type in _LIVING else "Info"


def _workload(base: str, workloads: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The component's Deployment or LeaderWorkerSet, by the names the renderer gives them."""
    wanted = {("Deployment", "apps/v1", base), ("LeaderWorkerSet", LWS_API_VERSION, lws_name(base))}
    found = [w for w in workloads if not _deleting(w) and (w.get("kind"), w.get("apiVersion"), _name(w)) in wanted]
    return max(found, key=lambda w: str(_mapping(w.get("metadata")).get("creationTimestamp", "")), default=None)


def _component_condition(
    component: str, workload: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> Condition:
    type_ = READY_CONDITIONS[component]
    available = _status_condition(workload, "Available")
    if available is None or available.get("status") not in ("True", "False", "Unknown"):
        condition = Condition("Unknown", "Initializing", f"{component} component initializing", type_)
    else:
        said = available
        if (workload or {}).get("kind") == "LeaderWorkerSet" and available["status"] == "False":
            raised = (_status_condition(workload, t) for t in _LWS_RAISED)
            said = next((c for c in raised if c is not None and c.get("status") == "True"), available)
        condition = Condition(available["status"], str(said.get("reason", "")), str(said.get("message", "")), type_)
    return condition if condition.ready else _with_unscheduled(condition, pods)


def _with_unscheduled(condition: Condition, pods: Sequence[Mapping[str, Any]]) -> Condition:
    """A not-ready component's condition, with why the scheduler leaves one of its pods unplaced."""
    for pod in sorted(pods, key=_name):
        scheduled = _status_condition(pod, "PodScheduled")
        if scheduled is None or scheduled.get("status") != "False":
            continue
        reason, message = str(scheduled.get("reason") or "Unschedulable"), str(scheduled.get("message") or "")
        detail = (
            f"Pod {_name(pod)} is unschedulable"
            if reason == "Unschedulable"
            else f"Pod {_name(pod)} is not scheduled ({reason})"
        )
        detail += f": {message}" if message else ""
        if condition.status == "False":
            said = condition.message.rstrip(".")
            return Condition("False", condition.reason, f"{said}. {detail}" if said else detail, condition.type)
        return Condition("False", reason, detail, condition.type)
    return condition


def _ready(dependents: Sequence[Condition]) -> Condition:
    """knative's happy condition over ``dependents`` in the order they are marked: False when one
    is (the last one's reason), else Unknown when one is, else True with no reason."""
    failing = [c for c in dependents if c.status == "False"] or [c for c in dependents if c.status == "Unknown"]
    if not failing:
        return Condition("True", "", "", READY)
    return Condition(failing[-1].status, failing[-1].reason, failing[-1].message, READY)


def _component_status(workload: Mapping[str, Any] | None, available: bool, url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if workload is not None and workload.get("kind") == "Deployment":
        revision = _mapping(_mapping(workload.get("metadata")).get("annotations")).get(_REVISION)
        if revision:
            out["latestCreatedRevision"] = str(revision)
    if available:
        out["url"] = url
    return out


def _model_status(previous: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], ready: bool) -> dict[str, Any]:
    """OME's UpdateModelRevisionStates over ``previous``, with the state PropagateModelStatus finds."""
    state, failure = _model_state(pods, ready)
    out = dict(previous)
    revisions = {"activeModelState": "Pending", **_mapping(previous.get("modelRevisionStates"))}
    revisions["targetModelState"] = state
    if state == "Loaded":
        revisions["activeModelState"] = "Loaded"
        out["modelCopies"] = {"failedCopies": 0, "totalCopies": len(pods)}
    out["modelRevisionStates"] = revisions
    out["transitionStatus"] = _TRANSITION[state]
    if failure is not None:
        out["lastFailureInfo"] = failure
    return out


def _model_state(pods: Sequence[Mapping[str, Any]], ready: bool) -> tuple[str, dict[str, Any] | None]:
    if not pods:
        return "Pending", None
    if ready:
        return "Loaded", None
    # OME looks at the newest pod only
    newest = max(pods, key=lambda p: (str(_mapping(p.get("metadata")).get("creationTimestamp", "")), _name(p)))
    status = _mapping(newest.get("status"))
    for container in _list(status.get("initContainerStatuses")):
        if container.get("name") == _STORAGE_INITIALIZER:
            state = _mapping(container.get("state"))
            if state.get("running") is not None:
                return "Loading", None
            found = _failure(container)
            if found is not None:
                return found
    for container in _list(status.get("containerStatuses")):
        if container.get("name") == DEFAULT_RUNNER_NAME:
            return _failure(container) or ("Pending", None)
    return "Pending", None  # the runner has not started yet


def _failure(container: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None] | None:
    """A container that ended in error, or crash-loops (Pending when it never ended), else None."""
    state = _mapping(container.get("state"))
    terminated = _mapping(state.get("terminated"))
    if terminated.get("reason") != "Error":
        if _mapping(state.get("waiting")).get("reason") != "CrashLoopBackOff":
            return None
        terminated = _mapping(_mapping(container.get("lastState")).get("terminated"))
        if not terminated:
            return "Pending", None
    info: dict[str, Any] = {"reason": "ModelLoadFailed"}
    if terminated.get("message"):
        info["message"] = str(terminated["message"])
    if terminated.get("exitCode"):
        info["exitCode"] = terminated["exitCode"]
    return "FailedToLoad", info


def _merge_patch(old: Any, new: Any) -> Any:
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch = {k: _merge_patch(old.get(k), v) for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch


def _status_condition(obj: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    conditions = _list(_mapping(obj.get("status") if obj is not None else None).get("conditions"))
    return next((c for c in conditions if c.get("type") == type_), None)


def _deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_mapping(obj.get("metadata")).get("deletionTimestamp"))


def _name(obj: Mapping[str, Any]) -> str:
    return str(_mapping(obj.get("metadata")).get("name", ""))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(_mapping(obj.get("metadata")).get("labels"))


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
