"""The Cluster over the Kubernetes API, with the official ``kubernetes`` client."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from kubernetes import client, config, dynamic, watch

from clients.controller.cluster import Manifest, owner_reference
from clients.controller.outcome import Condition, Event

GROUP, VERSION = "ome.io", "v1beta1"
PLURALS = {
    "ClusterServingRuntime": "clusterservingruntimes",
    "ServingRuntime": "servingruntimes",
    "ClusterBaseModel": "clusterbasemodels",
    "BaseModel": "basemodels",
    "InferenceService": "inferenceservices",
}
FIELD_MANAGER = "policyd-controller"


def connect(kubeconfig: str | None) -> client.ApiClient:
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig)
    else:
        config.load_incluster_config()
    return client.ApiClient()


class KubernetesCluster:
    def __init__(self, api: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.dynamic = dynamic.DynamicClient(api)

    def watch(self, kind: str) -> Iterator[tuple[str, Manifest]]:
        # list_cluster_custom_object lists namespaced kinds across every namespace too
        stream = watch.Watch().stream(self.custom.list_cluster_custom_object, GROUP, VERSION, PLURALS[kind])
        for item in stream:
            yield item["type"], item["object"]

    def inference_services(self) -> list[Manifest]:
        listed: Any = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURALS["InferenceService"])
        return list(listed.get("items", []))

    def set_condition(self, isvc: Manifest, condition: Condition) -> None:
        meta = isvc["metadata"]
        conditions = [c for c in (isvc.get("status") or {}).get("conditions", []) if c.get("type") != condition.type]
        conditions.append(
            {
                "type": condition.type,
                "status": condition.status,
                "reason": condition.reason,
                "message": condition.message,
                "lastTransitionTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
        self.custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            meta["namespace"],
            PLURALS["InferenceService"],
            meta["name"],
            {"status": {"conditions": conditions}},
        )

    def record_event(self, isvc: Manifest, event: Event) -> None:
        meta = isvc["metadata"]
        now = datetime.datetime.now(datetime.UTC)
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name=f"{meta['name']}.", namespace=meta["namespace"]),
            involved_object=client.V1ObjectReference(
                api_version=isvc.get("apiVersion", f"{GROUP}/{VERSION}"),
                kind="InferenceService",
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid"),
            ),
            type=event.type,
            reason=event.reason,
            message=event.message,
            first_timestamp=now,
            last_timestamp=now,
            source=client.V1EventSource(component=FIELD_MANAGER),
        )
        self.core.create_namespaced_event(meta["namespace"], body)

    def apply(self, obj: Manifest, owner: Manifest) -> None:
        body = dict(obj)
        body["metadata"] = {**obj.get("metadata", {}), "ownerReferences": [owner_reference(owner)]}
        resource = self.dynamic.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        resource.server_side_apply(
            body=body,
            name=body["metadata"]["name"],
            namespace=body["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
        )
