"""The simulated GPU cluster itself: up.sh serves OME's and LeaderWorkerSet's CRDs with an admin
kubeconfig, survives an API server restart, and compacting etcd expires old watches; the fake GPU
nodes of examples/cluster are Ready, the real scheduler places pods on them by their GPUs, labels
and taints, and KWOK runs them."""

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


def test_kwok_keeps_the_fake_gpu_nodes_ready_with_their_gpus(gpu_nodes: Cluster) -> None:
    shown = gpu_nodes.kubectl(
        "get",
        "nodes",
        "-l",
        "type=kwok",
        "-o",
        "custom-columns=NAME:.metadata.name,GPUS:.status.allocatable.nvidia\\.com/gpu,"
        "READY:.status.conditions[?(@.type=='Ready')].status",
        "--no-headers",
    ).stdout.split("\n")
    rows = {line.split()[0]: line.split()[1:] for line in shown if line}
    assert rows == {
        "h100-0": ["8", "True"], "h100-1": ["8", "True"], "l40s-0": ["4", "True"], "l40s-1": ["4", "True"],
        "cpu-0": ["<none>", "True"], "cpu-1": ["<none>", "True"],
    }  # fmt: skip


def _gpu_deployment(name: str, gpus: int) -> str:
    """A Deployment as OME renders one for a class: the class's node selector, the runtime's toleration."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: simulated}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-L40S}}
      tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
      containers:
      - name: ome-container
        image: docker.io/lmsysorg/sglang:v0.5.5
        resources:
          requests: {{nvidia.com/gpu: {gpus}}}
          limits: {{nvidia.com/gpu: {gpus}}}
"""


def test_the_scheduler_places_a_gpu_pod_on_a_node_of_its_class_and_kwok_runs_it(gpu_nodes: Cluster) -> None:
    gpu_nodes.kubectl("create", "namespace", "simulated", check=False)
    # one GPU: other tests of the session may hold some of the class's (the scheduler's business)
    gpu_nodes.kubectl("apply", "-f", "-", stdin=_gpu_deployment("fits", 1))
    gpu_nodes.kubectl("wait", "-n", "simulated", "--for=condition=Available", "deployment/fits", "--timeout=60s")
    pods = gpu_nodes.kubectl(
        "get", "pods", "-n", "simulated", "-l", "app=fits", "-o",
        "custom-columns=NODE:.spec.nodeName,PHASE:.status.phase", "--no-headers",
    ).stdout.split()  # fmt: skip
    assert pods[0] in {"l40s-0", "l40s-1"} and pods[1] == "Running"


def test_a_pod_asking_more_gpus_than_any_node_of_its_class_has_is_unschedulable_saying_why(gpu_nodes: Cluster) -> None:
    gpu_nodes.kubectl("create", "namespace", "simulated", check=False)
    gpu_nodes.kubectl("apply", "-f", "-", stdin=_gpu_deployment("too-big", 8))
    # its pod exists first (kubectl wait on a label finds no pod before that)
    gpu_nodes.kubectl("wait", "-n", "simulated", "deployment/too-big", "--for=jsonpath={.status.replicas}=1")
    gpu_nodes.kubectl(
        "wait", "-n", "simulated", "pod", "-l", "app=too-big",
        "--for=jsonpath={.status.conditions[?(@.type=='PodScheduled')].reason}=Unschedulable", "--timeout=60s",
    )  # fmt: skip
    message = gpu_nodes.kubectl(
        "get", "pods", "-n", "simulated", "-l", "app=too-big",
        "-o", "jsonpath={.items[0].status.conditions[?(@.type=='PodScheduled')].message}",
    ).stdout  # fmt: skip
    assert "Insufficient nvidia.com/gpu" in message
