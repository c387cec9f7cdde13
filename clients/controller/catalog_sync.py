"""policyd's catalog kept equal to the cluster's (Cluster)ServingRuntimes, (Cluster)BaseModels,
AcceleratorClasses and InferenceServices:
each watch event updates one object; an audit replaces the whole catalog with a fresh listing."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import grpc

from clients.controller.kube import CatalogKey, Manifest
from clients.controller.reconcile import Unavailable
from clients.manifests import Item, catalog_item
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

log = logging.getLogger("policyd.controller.catalog")


def _refused(err: grpc.RpcError) -> bool:
    return bool(err.code() == grpc.StatusCode.INVALID_ARGUMENT)


class CatalogSync:
    def __init__(self, policy: policy_pb2_grpc.PolicyServiceStub, address: str = "") -> None:
        self.policy = policy
        self.address = address
        self._pushed: dict[CatalogKey, str] = {}  # key -> digest of what policyd holds
        self._refused: dict[CatalogKey, str] = {}  # key -> digest policyd refused (logged once)
        self.revision = ""  # policyd's catalog revision after our last change

    def replace(self, desired: Mapping[CatalogKey, Manifest]) -> list[CatalogKey]:
        """policyd's catalog becomes exactly ``desired`` but what policyd refuses; returns the keys
        whose content changed there."""
        items = {key: catalog_item(obj) for key, obj in desired.items()}
        accepted = {key: item for key, item in items.items() if self._refused.get(key) != item[1]}
        try:
            try:
                self._replace(accepted)
            except grpc.RpcError as err:
                if not _refused(err):
                    raise
                # one refused object fails the whole request: find which, then replace without them
                for key, item in list(accepted.items()):
                    try:
                        self.policy.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=item[0])]))
                    except grpc.RpcError as one:
                        if not _refused(one):
                            raise
                        self._log_refusal(key, item, one)
                        del accepted[key]
                self._replace(accepted)
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.address, err) from err
        before, self._pushed = self._pushed, {key: digest for key, (_, digest) in accepted.items()}
        return [key for key in before.keys() | self._pushed.keys() if before.get(key) != self._pushed.get(key)]

    def _replace(self, accepted: Mapping[CatalogKey, Item]) -> None:
        objects = [rpb.Object(manifest=manifest) for manifest, _ in accepted.values()]
        self.revision = self.policy.ApplyObjects(pb.ApplyObjectsRequest(objects=objects, replace=True)).catalog_revision

    def update(self, key: CatalogKey, obj: Manifest | None) -> list[CatalogKey]:
        """One object changed (None: deleted); returns [key] when policyd's copy changed."""
        try:
            if obj is None:
                self._refused.pop(key, None)
                return self._delete(key)
            item = catalog_item(obj)
            if item[1] in (self._pushed.get(key), self._refused.get(key)):
                return []
            try:
                reply = self.policy.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=item[0])]))
            except grpc.RpcError as err:
                if not _refused(err):
                    raise
                # What policyd refuses (as OME's webhook would) is not in the catalog, nor an older
                # version of it: deciding on a version the cluster no longer has would be wrong.
                self._log_refusal(key, item, err)
                return self._delete(key)
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.address, err) from err
        self.revision = reply.catalog_revision
        self._pushed[key] = item[1]
        self._refused.pop(key, None)
        return [key]

    def _delete(self, key: CatalogKey) -> list[CatalogKey]:
        kind, namespace, name = key
        request = pb.DeleteObjectsRequest(keys=[pb.ObjectKey(kind=kind, namespace=namespace, name=name)])
        self.revision = self.policy.DeleteObjects(request).catalog_revision
        return [key] if self._pushed.pop(key, None) is not None else []

    def _log_refusal(self, key: CatalogKey, item: Item, err: grpc.RpcError) -> None:
        self._refused[key] = item[1]
        kind, namespace, name = key
        log.warning(
            "policyd refused %s %s: %s",
            kind,
            f"{namespace}/{name}" if namespace else name,
            err.details(),
            extra={"kind": kind, "namespace": namespace, "object": name},
        )
