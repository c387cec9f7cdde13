"""The controller's reads and writes over the Kubernetes API, with the official ``kubernetes``
client: the catalog listing, InferenceService status, events, server-side apply and pruning."""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from policyd.clients.controller.observed import STATUS_KINDS, owner, trimmed
from policyd.clients.controller.outcome import Event
from policyd.clients.controller.pins import PIN_LABEL, SOURCE_KIND, SOURCE_NAME, Pin
from policyd.clients.renderer.metadata import LABEL_ISVC, owner_reference
from policyd.kubeconfig import discovery_cache
from policyd.resources import kinds as ome
from policyd.resources.cluster_content import catalog_content

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
WORKLOAD_API_VERSIONS = {kind: api_version for api_version, kind in WORKLOAD_KINDS}
APPLIED = "policyd.ome.io/applied"  # annotation: a digest of what the controller last applied
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
LIST_PAGE = 500  # objects per page of a listing: a page parsed at a time, not the whole cluster


@dataclass(frozen=True)
class Applied:
    digest: str  # of the body applied, as in its APPLIED annotation
    uid: str  # the object's; empty when the apply was skipped
    generation: int = 0  # the object's after the apply: a later one means its spec was changed since


class Conflict(Exception):
    """Server-side apply found fields another field manager owns with other values."""

    def __init__(self, obj: Manifest, error: ApiException) -> None:
        causes = ((_body(error).get("details") or {}).get("causes")) or []
        fields = "; ".join(f"{c.get('field', '')}: {c.get('message', '')}" for c in causes) or error.reason
        meta = obj.get("metadata") or {}
        super().__init__(f"{obj.get('kind')} {meta.get('name')}: {fields}")


def catalog_key(obj: Manifest) -> CatalogKey:
    meta = obj.get("metadata") or {}
    kind = obj.get("kind", "")
    return kind, "" if kind.startswith("Cluster") else meta.get("namespace", ""), meta.get("name", "")


def _snake(reference: Mapping[str, Any]) -> dict[str, Any]:
    """An owner reference as the client's model takes it (api_version, block_owner_deletion)."""
    names = {"apiVersion": "api_version", "blockOwnerDeletion": "block_owner_deletion"}
    return {names.get(k, k): v for k, v in reference.items()}


def event_name(isvc: Manifest, event: Event) -> str:
    """One name per InferenceService and reason (as client-go's EventCorrelator aggregates similar
    events): a cause repeating with other details is the same Event object, counted, whichever
    controller process records it."""
    meta = isvc["metadata"]
    cause = f"{meta.get('uid')}/{event.type}/{event.reason}"
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
        self.apps = client.AppsV1Api(api)
        self.identity = identity
        self._dynamic: dynamic.DynamicClient | None = None
        self._discovery = threading.Lock()  # several workers: discovery once

    def _resource(self, api_version: str, kind: str) -> Any:
        with self._discovery:
            if self._dynamic is None:  # discovery needs the API server: made on first use, not at start
                # its discovery cache in this process's own directory, not $TMPDIR's shared osrcp-*.json
                self._dynamic = dynamic.DynamicClient(self.api, cache_file=discovery_cache())
            return self._dynamic.resources.get(api_version=api_version, kind=kind)

    def list_catalog(self) -> dict[CatalogKey, dict[str, Any]]:
        objects: dict[CatalogKey, dict[str, Any]] = {}
        for kind in SYNCED_KINDS:
            # list_cluster_custom_object lists namespaced kinds across every namespace too
            listed: Any = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURALS[kind])
            for item in listed.get("items", []):
                item.setdefault("kind", kind)
                objects[catalog_key(item)] = item
        return objects

    def write_status(self, isvc: Manifest, update: Mapping[str, Any]) -> dict[str, Any]:
        """Merge-patch the status subresource, on the resourceVersion it was computed from (409
        when stale); the InferenceService as written."""
        meta = isvc["metadata"]
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": dict(update)}
        written: Any = self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, meta["namespace"], PLURALS["InferenceService"], meta["name"], body
        )
        return dict(written)

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

    def repeat_event(self, isvc: Manifest, event: Event, again: bool) -> None:
        """The Event of this reason exists: count ``event`` on it (its message and last timestamp
        become ``event``'s) when ``again`` (the cause came back, or its details changed) or its
        message is another; nothing when it already says this (a restarted controller)."""
        meta = isvc["metadata"]
        name = event_name(isvc, event)
        try:
            current = self.core.read_namespaced_event(name, meta["namespace"])
        except ApiException as err:
            if err.status == 404 and self.create_event(isvc, event):  # expired (the API server's event TTL)
                return
            raise
        if current.message == event.message and not again:
            return
        at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"count": (current.count or 1) + 1, "lastTimestamp": at, "message": event.message}
        self.core.patch_namespaced_event(name, meta["namespace"], patch)

    def pins(self, isvc: Manifest) -> list[Pin]:
        """The runtime snapshots ``isvc`` owns, oldest first."""
        meta = isvc["metadata"]
        answer: Any = self.apps.list_namespaced_controller_revision(
            meta["namespace"], label_selector=f"{PIN_LABEL}={meta['name']}", _preload_content=False
        )
        found = []
        for item in json.loads(answer.data).get("items") or []:
            own = item.get("metadata") or {}
            annotations = own.get("annotations") or {}
            if any(ref.get("uid") == meta.get("uid") for ref in own.get("ownerReferences") or []):
                kind, name = annotations.get(SOURCE_KIND, ""), annotations.get(SOURCE_NAME, "")
                found.append(
                    Pin(own.get("name", ""), int(item.get("revision") or 0), kind, name, item.get("data") or {})
                )
        return sorted(found, key=lambda pin: pin.revision)

    def make_pin(self, isvc: Manifest, kind: str, name: str, runtime: Manifest, revision: int) -> Pin:
        """A snapshot of ``runtime`` (as the catalog takes it) owned by ``isvc``, named by its content."""
        meta = isvc["metadata"]
        data = catalog_content(runtime)
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
        pin_name = f"{meta['name']}-{digest}"
        body = client.V1ControllerRevision(
            metadata=client.V1ObjectMeta(
                name=pin_name,
                namespace=meta["namespace"],
                labels={PIN_LABEL: meta["name"]},
                annotations={SOURCE_KIND: kind, SOURCE_NAME: name},
                owner_references=[client.V1OwnerReference(**_snake(owner_reference(isvc)))],
            ),
            data=data,
            revision=revision,
        )
        try:
            self.apps.create_namespaced_controller_revision(meta["namespace"], body)
        except ApiException as err:
            if err.status != 409:  # made already (by a reconcile before a restart): the same content
                raise
        return Pin(pin_name, revision, kind, name, data)

    def apply(self, obj: Manifest, owner: Manifest, unless: str = "") -> Applied:
        """Server-side apply as FIELD_MANAGER, never forcing: a field another manager owns with
        another value raises Conflict and nothing of the object is changed. Not sent when the
        object already carries what would be applied (``unless``, the digest it was applied with)."""
        meta = dict(obj.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), LABEL_ISVC: owner["metadata"]["name"]}
        meta["ownerReferences"] = [owner_reference(owner)]
        body = {**obj, "metadata": meta}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
        if digest == unless:
            return Applied(digest, "")
        # the digest rides along, so a restarted controller knows what is there without reading it back
        meta["annotations"] = {**(meta.get("annotations") or {}), APPLIED: digest}
        resource = self._resource(body["apiVersion"], body["kind"])
        try:
            # serialize=False: the answer's uid is all it needs, not the dynamic client's wrapper of it
            answer = resource.server_side_apply(
                body=body,
                name=meta["name"],
                namespace=meta.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=False,
                serialize=False,
            )
        except ApiException as err:
            if err.status == 409:
                raise Conflict(obj, err) from err
            raise
        written = json.loads(answer.data)["metadata"]
        return Applied(digest, str(written["uid"]), int(written.get("generation") or 0))

    def list_owned(self) -> dict[str, dict[WorkloadKey, Applied]]:
        """Every workload an InferenceService owns, by its uid: what it was applied with and its
        own uid. Metadata only, one listing per kind for the whole cluster, in pages."""
        owned: dict[str, dict[WorkloadKey, Applied]] = {}
        for api_version, kind in WORKLOAD_KINDS:
            for item in self._pages(api_version, kind, {"Accept": METADATA_LIST}):
                meta = item.get("metadata") or {}
                found = owner({**item, "kind": kind})
                if found is not None and found[1]:
                    applied = Applied(
                        (meta.get("annotations") or {}).get(APPLIED, ""),
                        meta.get("uid", ""),
                        int(meta.get("generation") or 0),
                    )
                    owned.setdefault(found[1], {})[(kind, meta.get("name", ""))] = applied
        return owned

    def list_status_objects(self) -> list[Manifest]:
        """Every object InferenceServices own that their readiness reads (their workloads' status,
        their Services' ports, their pods), one listing per kind for the whole cluster, the kinds at
        once (the API server reads one while this process parses another), each page trimmed to
        what readiness reads before the next is asked for: whole, thousands of pods and
        Deployments are most of the controller's memory."""
        with ThreadPoolExecutor(len(STATUS_KINDS)) as pool:
            listed = list(pool.map(lambda kind: self._list_trimmed(*kind), STATUS_KINDS))
        return [item for items in listed for item in items]

    def _list_trimmed(self, api_version: str, kind: str) -> list[Manifest]:
        # a list's items come without kind and apiVersion, and readiness reads both
        return [trimmed({**item, "kind": kind, "apiVersion": api_version}) for item in self._pages(api_version, kind)]

    def _pages(self, api_version: str, kind: str, headers: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """The objects of ``kind`` carrying the InferenceService label, a page at a time (none
        when the kind's CRD is not installed, e.g. LeaderWorkerSet's)."""
        try:
            resource = self._resource(api_version, kind)
        except ResourceNotFoundError:
            return
        token: str | None = None
        while True:
            answer = resource.get(
                label_selector=LABEL_ISVC,
                limit=LIST_PAGE,
                _continue=token,
                header_params=dict(headers or {}),
                serialize=False,
            )
            page = json.loads(answer.data)
            yield from page.get("items") or []  # null when there are none
            token = (page.get("metadata") or {}).get("continue") or None
            if token is None:
                return

    def delete(self, isvc: Manifest, workload: WorkloadKey, uid: str) -> None:
        """Delete a workload ``isvc`` no longer renders (``uid``: that object, not a newer one of its name)."""
        kind, name = workload
        resource = self._resource(WORKLOAD_API_VERSIONS[kind], kind)
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            resource.delete(name=name, namespace=isvc["metadata"]["namespace"], body=body, serialize=False)
        except ApiException as err:
            if err.status not in (404, 409):  # gone already, or another object of that name now
                raise
