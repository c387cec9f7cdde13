"""Read-your-writes: the catalog objects a review did not find in policyd's catalog, read from the
API server. policyd's catalog follows the controller's watch and can lag behind the API server:
a runtime created in the same ``kubectl apply`` just before the InferenceService that names it is
in the cluster already, and this reads it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from policyd.clients.manifests import catalog_item
from policyd.contract import policy_pb2 as pb
from policyd.resources import kinds as ome
from policyd.resources.kinds import GROUP, PLURALS, VERSION

log = logging.getLogger("policyd.webhook.reads")
CLUSTER_SCOPED = ome.CLUSTER_SCOPED
READABLE = frozenset({*CLUSTER_SCOPED, ome.SERVING_RUNTIME.name, ome.BASE_MODEL.name})


def _describe(key: pb.ObjectKey) -> str:
    return f"{key.kind} {key.namespace}/{key.name}" if key.namespace else f"{key.kind} {key.name}"


def reads_client() -> client.ApiClient:
    """An API client of the default configuration's without urllib3's retries: they give each
    attempt the whole timeout again (four attempts: a slow API server took a review's reads 36 s,
    past its deadline); a read here is bounded by the time the review has left, and not retried."""
    configuration = client.Configuration.get_default_copy()
    configuration.retries = False
    return client.ApiClient(configuration)


class ClusterReads:
    def __init__(self, api: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api)

    def manifests(self, keys: Iterable[pb.ObjectKey], deadline: float) -> list[str]:
        """Those of ``keys`` that exist, as policyd takes them, read before ``deadline`` (a
        time.monotonic() time). One that cannot be read is left out (logged): the answer without
        it stands, as the catalog gave it."""
        found = []
        for key in keys:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                log.warning("no time left to read %s from the API server", _describe(key))
                break
            obj = self._get(key, timeout)
            if obj is not None:
                obj.setdefault("kind", key.kind)
                found.append(catalog_item(obj)[0])
        return found

    def _get(self, key: pb.ObjectKey, timeout: float) -> dict[str, Any] | None:
        if key.kind not in READABLE:
            log.warning("policyd named %s as missing: not a kind the webhook reads", _describe(key))
            return None
        plural = PLURALS[key.kind]
        try:
            obj: Any  # the client's JSON, untyped
            if key.kind in CLUSTER_SCOPED:
                obj = self.custom.get_cluster_custom_object(GROUP, VERSION, plural, key.name, _request_timeout=timeout)
            else:
                obj = self.custom.get_namespaced_custom_object(
                    GROUP, VERSION, key.namespace, plural, key.name, _request_timeout=timeout
                )
            return dict(obj)
        except ApiException as err:
            if err.status != 404:
                log.warning("cannot read %s from the API server: %s %s", _describe(key), err.status, err.reason)
            return None
        except HTTPError as err:
            log.warning("cannot read %s from the API server: %s", _describe(key), err)
            return None
