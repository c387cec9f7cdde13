"""Feed policyd's catalog from watch events on runtimes and models."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import grpc

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

CATALOG_KINDS = ("ClusterServingRuntime", "ServingRuntime", "ClusterBaseModel", "BaseModel")
# InferenceServices are synced too (their own watch feeds them): what-if (policyctl diff) decides them
SYNCED_KINDS = (*CATALOG_KINDS, "InferenceService")
# the cluster's bookkeeping, not catalog content: it changes with every status write
BOOKKEEPING = ("managedFields", "resourceVersion", "generation")
log = logging.getLogger("policyd.controller.catalog")


class CatalogSync:
    def __init__(self, policy: policy_pb2_grpc.PolicyServiceStub) -> None:
        self.policy = policy

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> bool:
        """Apply ADDED/MODIFIED objects, delete DELETED ones; False when policyd refused the object."""
        kind = obj.get("kind", "")
        meta = obj.get("metadata") or {}
        if kind not in SYNCED_KINDS:
            return True
        try:
            if event_type == "DELETED":
                key = pb.ObjectKey(kind=kind, namespace=meta.get("namespace", ""), name=meta.get("name", ""))
                self.policy.DeleteObjects(pb.DeleteObjectsRequest(keys=[key]))
            else:
                body = {k: v for k, v in obj.items() if k != "status"}
                body["metadata"] = {k: v for k, v in meta.items() if k not in BOOKKEEPING}
                self.policy.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(body))]))
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.INVALID_ARGUMENT:
                raise
            log.warning(
                "policyd refused a catalog object",
                extra={"kind": kind, "object": meta.get("name"), "error": err.details()},
            )
            return False
        return True
