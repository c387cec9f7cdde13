"""The spec's cluster forms — `policyctl explain --isvc NAME -n NS` and `policyctl effective NAME
-n NS` — read the InferenceService from a real Kubernetes API server, finding it as kubectl does:
--kubeconfig, $KUBECONFIG, ~/.kube/config; the namespace from -n, else the context's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from testkit.cluster import Cluster

from .support import MODEL_NAME, RUNTIME_70B, isvc_manifest, no_traceback, policyctl, succeeded

NS = "policyctl-cluster"  # a namespace of this module's own; the daemon's ServingRuntime lives elsewhere
PINNED = "pinned-to-70b"  # names the 70B ClusterServingRuntime


@pytest.fixture(scope="module")
def cluster(kube_cluster: Cluster) -> Cluster:
    api = kube_cluster.api()
    try:
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    except ApiException as err:
        if err.status != 409:
            raise
    custom = client.CustomObjectsApi(api)
    for name, spec in ((MODEL_NAME, {}), (PINNED, {"runtime": {"name": RUNTIME_70B}})):
        isvc = isvc_manifest(**spec)
        isvc["metadata"] = {"name": name, "namespace": NS}
        custom.create_namespaced_custom_object("ome.io", "v1beta1", NS, "inferenceservices", isvc)
    return kube_cluster


def _table(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RUNTIME "))
    return [re.split(r" {2,}", line) for line in lines[start + 1 :]]


def test_explain_isvc_reads_the_inference_service_from_the_cluster(daemon: str, cluster: Cluster) -> None:
    result = policyctl(
        "explain", "--isvc", MODEL_NAME, "-n", NS, "--kubeconfig", str(cluster.kubeconfig), address=daemon
    )
    succeeded(result)
    assert result.stdout.startswith(f"MODEL {MODEL_NAME} ")
    ((name, kind, selectable, compatible, score, reason),) = _table(result.stdout)
    assert (name, kind, selectable, compatible, score) == (RUNTIME_70B, "ClusterServingRuntime", "No", "No", "<none>")
    assert "not in supported formats" in reason


def test_effective_name_finds_the_kubeconfig_in_the_environment(daemon: str, cluster: Cluster) -> None:
    result = policyctl("effective", PINNED, "-n", NS, address=daemon, env={"KUBECONFIG": str(cluster.kubeconfig)})
    succeeded(result)
    lines = result.stdout.splitlines()
    assert lines[0] == f"RUNTIME ClusterServingRuntime/{RUNTIME_70B}"
    assert re.split(r" {2,}", lines[2])[:2] == ["engine", "RawDeployment"]


def test_the_home_kubeconfig_and_its_contexts_namespace(daemon: str, cluster: Cluster, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = NS  # -n is left out: the context's namespace applies
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(yaml.safe_dump(config))
    result = policyctl("effective", PINNED, address=daemon, env={"HOME": str(tmp_path)})
    succeeded(result)
    assert result.stdout.splitlines()[0] == f"RUNTIME ClusterServingRuntime/{RUNTIME_70B}"


def test_an_inference_service_not_in_the_cluster_is_notfound(daemon: str, cluster: Cluster) -> None:
    result = policyctl("effective", "missing", "-n", NS, "--kubeconfig", str(cluster.kubeconfig), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == (
        f'Error from server (NotFound): inferenceservices.ome.io "missing" not found in namespace "{NS}"'
    )


def test_no_kubeconfig_and_no_cluster_is_a_clear_error(daemon: str, tmp_path: Path) -> None:
    result = policyctl("explain", "--isvc", MODEL_NAME, address=daemon, env={"HOME": str(tmp_path)})
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith("error: no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config)")


def test_render_of_a_file_is_accepted_by_a_server_side_dry_run_apply(
    daemon: str, renderer: str, cluster: Cluster, tmp_path: Path
) -> None:
    isvc = isvc_manifest(runtime={"name": RUNTIME_70B})
    isvc["metadata"] = {"name": "rendered-from-a-file", "namespace": NS}
    source = tmp_path / "isvc.yaml"
    source.write_text(yaml.safe_dump(isvc))
    rendered = policyctl("render", "-f", str(source), "--renderer", renderer, address=daemon)
    succeeded(rendered)
    (tmp_path / "out.yaml").write_text(rendered.stdout)
    applied = cluster.kubectl("apply", "--dry-run=server", "-f", str(tmp_path / "out.yaml"), check=False)
    assert applied.returncode == 0, applied.stderr
    assert "Warning" not in applied.stderr, applied.stderr


def test_render_of_a_cluster_inference_service_keeps_its_owner(daemon: str, renderer: str, cluster: Cluster) -> None:
    uid = cluster.kubectl("get", "inferenceservice", PINNED, "-n", NS, "-o", "jsonpath={.metadata.uid}").stdout
    rendered = policyctl(
        "render", PINNED, "-n", NS, "--renderer", renderer, "--kubeconfig", str(cluster.kubeconfig), address=daemon
    )
    succeeded(rendered)
    owners = [d["metadata"].get("ownerReferences") for d in yaml.safe_load_all(rendered.stdout)]
    assert owners and all(o == [{**o[0], "uid": uid}] for o in owners), owners
