"""A RawDeployment component's objects, in the order OME's RawKubeReconciler makes them: the
Deployment, its Service, the autoscaler and the PodDisruptionBudget, all selecting the pods by
the ``app`` label; for the router first its ServiceAccount, Role and RoleBinding, with which it
discovers the engine's and decoder's pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.kube_service import service
from policyd.clients.renderer.metadata import LABEL_APP, ComponentMeta
from policyd.clients.renderer.names import truncated
from policyd.clients.renderer.scaling import autoscalers

_REVISION_HISTORY_LIMIT = 10
_PROGRESS_DEADLINE_SECONDS = 600
_RBAC = "rbac.authorization.k8s.io"


def raw_objects(meta: ComponentMeta, component: Mapping[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]]:
    """``pod`` is the component's finished PodSpec. The Deployment leaves ``replicas`` to the API
    server's default and then to the autoscaler, as OME does, so that applying it again never
    undoes a scale."""
    selector = {LABEL_APP: truncated(meta.name)}
    labels = {**meta.labels, **selector}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta.object(labels=labels),
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": meta.template(labels=labels), "spec": pod},
            "strategy": _strategy(component.get("deploymentStrategy")),
            "revisionHistoryLimit": _REVISION_HISTORY_LIMIT,
            "progressDeadlineSeconds": _PROGRESS_DEADLINE_SECONDS,
        },
    }
    return [
        deployment,
        service(meta, labels, selector, pod),
        *autoscalers(meta, labels, component),
        _pdb(meta, labels, selector, component),
    ]


def router_access(meta: ComponentMeta) -> list[dict[str, Any]]:
    """The router's ServiceAccount (named after it), and a Role bound to it to read pods."""
    subject = {"kind": "ServiceAccount", "name": meta.name, **({"namespace": meta.namespace} if meta.namespace else {})}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta.object(annotations={})},
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "Role",
            "metadata": meta.object(annotations={}),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": meta.object(annotations={}),
            "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": meta.name},
            "subjects": [subject],
        },
    ]


def _strategy(given: Any) -> dict[str, Any]:
    """The component's deploymentStrategy with OME's defaults: a rolling update that starts one
    new pod before it stops an old one."""
    strategy = dict(given) if isinstance(given, Mapping) else {}
    strategy["type"] = strategy.get("type") or "RollingUpdate"
    if strategy["type"] == "RollingUpdate" and strategy.get("rollingUpdate") is None:
        strategy["rollingUpdate"] = {"maxUnavailable": 0, "maxSurge": 1}
    return strategy


def _pdb(
    meta: ComponentMeta, labels: Mapping[str, str], selector: Mapping[str, str], component: Mapping[str, Any]
) -> dict[str, Any]:
    budget = {key: component[key] for key in ("minAvailable", "maxUnavailable") if component.get(key) is not None}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta.object(labels=labels),
        "spec": {**(budget or {"maxUnavailable": 1}), "selector": {"matchLabels": dict(selector)}},
    }
