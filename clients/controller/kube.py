"""The controller's reads and writes over the Kubernetes API, with the official ``kubernetes``
client: the catalog listing, InferenceService status, events, server-side apply and pruning."""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from clients.controller.outcome import Event
from clients.renderer.metadata import LABEL_ISVC
from policyd.resources import kinds as ome

GROUP, VERSION = ome.GROUP, ome.VERSION
PLURALS = ome.PLURALS
# AcceleratorClass is cluster-scoped: its objects carry no namespace, so catalog_key needs no case for it
CATALOG_KINDS = tuple(kind.name for kind in ome.OME_KINDS if kind is not ome.INFERENCE_SERVICE)
# what an audit lists into policyd's catalog: the catalog kinds and the InferenceServices
SYNCED_KINDS = (*CATALOG_KINDS, ome.INFERENCE_SERVICE.name)
FIELD_MANAGER = "policyd-controller"
# Every kind the renderer produces: objects of these kinds that an InferenceService owns and no
# longer renders (a component it stopped declaring) are deleted.
WORKLOAD_KINDS = (
    ("apps/v1", "Deployment"),
    ("v1", "Service"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("policy/v1", "PodDisruptionBudget"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    # the router's identity: its pods read the engine's and decoder's pods
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
)
Manifest = Mapping[str, Any]
CatalogKey = tuple[str, str, str]  # (kind, namespace or "" at cluster scope, name)
WorkloadKey = tuple[str, str]  # (kind, name)


class ConfigError(Exception):
    pass


class Conflict(Exception):
    """Server-side apply found fields another field manager owns with other values."""

    def __init__(self, obj: Manifest, error: ApiException) -> None:
        causes = ((_body(error).get("details") or {}).get("causes")) or []
        fields = "; ".join(f"{c.get('field', '')}: {c.get('message', '')}" for c in causes) or error.reason
        meta = obj.get("metadata") or {}
        super().__init__(f"{obj.get('kind')} {meta.get('name')}: {fields}")


def load_configuration(kubeconfig: str | None) -> None:
    """--kubeconfig, else kubectl's lookup: $KUBECONFIG, ~/.kube/config, then the in-cluster service account."""
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig)
        else:
            config.load_config()
    except (ConfigException, OSError) as err:
        where = kubeconfig or "$KUBECONFIG, ~/.kube/config or the in-cluster service account"
        raise ConfigError(f"no usable Kubernetes configuration in {where}: {err}") from err


def catalog_key(obj: Manifest) -> CatalogKey:
    meta = obj.get("metadata") or {}
    kind = obj.get("kind", "")
    return kind, "" if kind.startswith("Cluster") else meta.get("namespace", ""), meta.get("name", "")


def owner_reference(isvc: Manifest) -> dict[str, Any]:
    meta = isvc.get("metadata") or {}
    return {
        "apiVersion": isvc.get("apiVersion", f"{GROUP}/{VERSION}"),
        "kind": "InferenceService",
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def event_name(isvc: Manifest, event: Event) -> str:
    """One name per (InferenceService, cause): the same cause is the same Event object, whichever
    controller process records it."""
    meta = isvc["metadata"]
    cause = f"{meta.get('uid')}/{event.type}/{event.reason}/{event.message}"
    return f"{meta['name']}.{hashlib.sha256(cause.encode()).hexdigest()[:16]}"


def _body(error: ApiException) -> dict[str, Any]:
    try:
        parsed: dict[str, Any] = json.loads(error.body or "{}")
        return parsed
    except ValueError:
        return {}


class Kube:
    def __init__(self, api: client.ApiClient, identity: str = "") -> None:
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.identity = identity
        self._dynamic: dynamic.DynamicClient | None = None

    def _resources(self) -> Any:
        if self._dynamic is None:  # discovery needs the API server: made on first use, not at start
            self._dynamic = dynamic.DynamicClient(self.api)
        return self._dynamic.resources

    def list_catalog(self) -> dict[CatalogKey, dict[str, Any]]:
        objects: dict[CatalogKey, dict[str, Any]] = {}
        for kind in SYNCED_KINDS:
            # list_cluster_custom_object lists namespaced kinds across every namespace too
            listed: Any = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURALS[kind])
            for item in listed.get("items", []):
                item.setdefault("kind", kind)
                objects[catalog_key(item)] = item
        return objects

    def write_status(self, isvc: Manifest, update: Mapping[str, Any]) -> None:
        """Merge-patch the status subresource, on the resourceVersion it was computed from (409 when stale)."""
        meta = isvc["metadata"]
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": dict(update)}
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, meta["namespace"], PLURALS["InferenceService"], meta["name"], body
        )

    def create_event(self, isvc: Manifest, event: Event) -> bool:
        """Record ``event``; False when an Event for the same cause already exists."""
        meta = isvc["metadata"]
        at = datetime.datetime.now(datetime.UTC)
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=event_name(isvc, event), namespace=meta["namespace"]),
            involved_object=client.V1ObjectReference(
                api_version=isvc.get("apiVersion", f"{GROUP}/{VERSION}"),
                kind="InferenceService",
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid"),
                resource_version=meta.get("resourceVersion"),
            ),
            type=event.type,
            reason=event.reason,
            message=event.message,
            count=1,
            first_timestamp=at,
            last_timestamp=at,
            source=client.V1EventSource(component=FIELD_MANAGER),
            reporting_component=FIELD_MANAGER,
            reporting_instance=self.identity,
        )
        try:
            self.core.create_namespaced_event(meta["namespace"], body)
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True

    def repeat_event(self, isvc: Manifest, event: Event) -> None:
        """The cause came back after it had cleared: count it again on its Event."""
        meta = isvc["metadata"]
        name = event_name(isvc, event)
        current = self.core.read_namespaced_event(name, meta["namespace"])
        at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"count": (current.count or 1) + 1, "lastTimestamp": at}
        self.core.patch_namespaced_event(name, meta["namespace"], patch)

    def apply(self, obj: Manifest, owner: Manifest) -> None:
        """Server-side apply as FIELD_MANAGER, never forcing: a field another manager owns with
        another value raises Conflict and nothing of the object is changed."""
        meta = dict(obj.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), LABEL_ISVC: owner["metadata"]["name"]}
        meta["ownerReferences"] = [owner_reference(owner)]
        body = {**obj, "metadata": meta}
        resource = self._resources().get(api_version=body["apiVersion"], kind=body["kind"])
        try:
            resource.server_side_apply(
                body=body,
                name=meta["name"],
                namespace=meta.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=False,
            )
        except ApiException as err:
            if err.status == 409:
                raise Conflict(obj, err) from err
            raise

    def prune(self, isvc: Manifest, keep: Iterable[WorkloadKey]) -> list[WorkloadKey]:
        """Delete the objects ``isvc`` owns that are not in ``keep``; returns what was deleted."""
        meta = isvc["metadata"]
        kept, deleted = set(keep), []
        for api_version, kind in WORKLOAD_KINDS:
            try:
                resource = self._resources().get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                continue  # e.g. LeaderWorkerSet's CRD is not installed: nothing of that kind to own
            listed = resource.get(namespace=meta["namespace"], label_selector=f"{LABEL_ISVC}={meta['name']}")
            for item in listed.to_dict().get("items", []):
                item_meta = item.get("metadata") or {}
                owned = any(
                    ref.get("uid") == meta.get("uid") and ref.get("controller")
                    for ref in item_meta.get("ownerReferences") or []
                )
                if owned and (kind, item_meta.get("name")) not in kept:
                    resource.delete(
                        name=item_meta["name"],
                        namespace=meta["namespace"],
                        body={"propagationPolicy": "Background", "preconditions": {"uid": item_meta.get("uid")}},
                    )
                    deleted.append((kind, item_meta["name"]))
        return deleted
