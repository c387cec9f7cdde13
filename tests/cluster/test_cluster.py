"""The test control plane itself: up.sh serves OME's and LeaderWorkerSet's CRDs with an admin
kubeconfig, survives an API server restart, and compacting etcd expires old watches."""

from __future__ import annotations

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from testkit.cluster import Cluster


def test_up_serves_omes_and_leaderworkersets_crds_to_the_admin_kubeconfig(kube_cluster: Cluster) -> None:
    crds = client.ApiextensionsV1Api(kube_cluster.api()).list_custom_resource_definition().items
    names = {crd.metadata.name for crd in crds}
    assert {
        "inferenceservices.ome.io",
        "servingruntimes.ome.io",
        "clusterservingruntimes.ome.io",
        "basemodels.ome.io",
        "clusterbasemodels.ome.io",
        "leaderworkersets.leaderworkerset.x-k8s.io",
    } <= names
    custom = client.CustomObjectsApi(kube_cluster.api())
    # served, whatever the session's other tests have created in it by now
    listed = custom.list_cluster_custom_object("ome.io", "v1beta1", "inferenceservices")
    assert listed["kind"] == "InferenceServiceList" and isinstance(listed["items"], list)


def test_the_api_server_restarts_on_the_same_address_with_its_data(kube_cluster: Cluster) -> None:
    core = client.CoreV1Api(kube_cluster.api())
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="restart-kept")))
    server = kube_cluster.server
    kube_cluster.restart_apiserver()
    assert kube_cluster.server == server
    assert client.CoreV1Api(kube_cluster.api()).read_namespace("restart-kept").metadata.name == "restart-kept"


def test_compacting_etcd_expires_a_watch_from_an_older_resource_version(kube_cluster: Cluster) -> None:
    core = client.CoreV1Api(kube_cluster.api())
    old = core.list_namespace().metadata.resource_version
    for name in ("compacted-1", "compacted-2"):  # history past the watch's first revision
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    kube_cluster.compact_etcd()
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(core.list_namespace, resource_version=old, timeout_seconds=5):
            pass
    assert gone.value.status == 410
