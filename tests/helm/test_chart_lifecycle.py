"""The chart's life on a real API server with the real helm: install, upgrade (a rule changed
through values, then a replica count), rollback and uninstall, which leaves nothing of it. The
certificates the chart generates are kept across upgrades and rollbacks (a new CA would leave the
running pods with certificates their peers no longer trust), and a rule change does not touch
the pod template: the pods are not restarted, policyd reloads the ConfigMap's files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit.cluster import Cluster
from testkit.helm import CHART, helm, objects, webhook_configurations
from testkit.shared import REPO

RELEASE, NAMESPACE = "policyd", "policyd-life"
TEAM_RULE = (REPO / "rules" / "examples" / "namespace-runtime-label.yaml").read_text()
SECRETS = (
    "policyd-ca",
    "policyd-serving-cert",
    "policy-controller-client-cert",
    "policy-webhook-client-cert",
    "policy-webhook-serving-cert",
)
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}


def get(cluster: Cluster, kind: str, name: str) -> dict[str, Any] | None:
    where = [] if kind in CLUSTER_SCOPED else ["-n", NAMESPACE]
    done = cluster.kubectl("get", kind, name, *where, "-o", "json", "--ignore-not-found", check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout else None


def secrets(cluster: Cluster) -> dict[str, dict[str, str]]:
    return {name: get(cluster, "Secret", name)["data"] for name in SECRETS}  # type: ignore[index]


def ca_bundles(cluster: Cluster) -> set[str]:
    configs = webhook_configurations(cluster, RELEASE)
    return {hook["clientConfig"]["caBundle"] for config in configs for hook in config["webhooks"]}


def deployment(cluster: Cluster, name: str) -> dict[str, Any]:
    found = get(cluster, "Deployment", name)
    assert found is not None, name
    return found


def rule_files(cluster: Cluster) -> set[str]:
    return set(get(cluster, "ConfigMap", "policyd-rules")["data"])  # type: ignore[index]


def manifest(cluster: Cluster, revision: int) -> list[dict[str, Any]]:
    shown = helm(
        "get", "manifest", RELEASE, "-n", NAMESPACE, "--revision", str(revision), kubeconfig=cluster.kubeconfig
    )
    return objects(shown.stdout)


@pytest.fixture
def release(helm_cluster: Cluster) -> Iterator[Cluster]:
    """The chart installed; uninstalled afterwards, whatever happened."""
    kubeconfig = helm_cluster.kubeconfig
    done = helm("install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace", kubeconfig=kubeconfig)
    assert "STATUS: deployed" in done.stdout and "kubectl get inferenceservice -A" in done.stdout
    try:
        yield helm_cluster
    finally:
        helm("uninstall", RELEASE, "-n", NAMESPACE, "--ignore-not-found", kubeconfig=kubeconfig)


def test_install_upgrade_rollback_and_uninstall(release: Cluster) -> None:
    cluster, kubeconfig = release, release.kubeconfig
    installed = manifest(cluster, 1)
    for doc in installed:
        assert get(cluster, doc["kind"], doc["metadata"]["name"]) is not None, doc["metadata"]
    kept, bundles = secrets(cluster), ca_bundles(cluster)
    assert bundles == {kept["policyd-ca"]["tls.crt"]}  # the webhooks trust the chart's CA
    template = deployment(cluster, "policyd")["spec"]["template"]
    assert deployment(cluster, "policyd")["spec"]["replicas"] == 3
    bundled = rule_files(cluster)

    # a rule changed through values: the ConfigMap changes, the pod template does not (no restart)
    team = {"rules": {"files": {"team-a.yaml": TEAM_RULE}}}
    helm("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", kubeconfig=kubeconfig, values=team)
    assert rule_files(cluster) == bundled | {"team-a.yaml"}
    assert get(cluster, "ConfigMap", "policyd-rules")["data"]["team-a.yaml"] == TEAM_RULE  # type: ignore[index]
    assert deployment(cluster, "policyd")["spec"]["template"] == template
    assert secrets(cluster) == kept and ca_bundles(cluster) == bundles

    # a replica count
    helm("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", "--set", "policyd.replicas=5",
         kubeconfig=kubeconfig)  # fmt: skip
    assert deployment(cluster, "policyd")["spec"]["replicas"] == 5
    assert rule_files(cluster) == bundled | {"team-a.yaml"}
    assert secrets(cluster) == kept

    # back to the first revision: its rules and replicas, the same certificates
    helm("rollback", RELEASE, "1", "-n", NAMESPACE, kubeconfig=kubeconfig)
    assert rule_files(cluster) == bundled
    assert deployment(cluster, "policyd")["spec"]["replicas"] == 3
    assert secrets(cluster) == kept and ca_bundles(cluster) == bundles
    history = json.loads(helm("history", RELEASE, "-n", NAMESPACE, "-o", "json", kubeconfig=kubeconfig).stdout)
    assert [(h["revision"], h["status"]) for h in history] == [
        (1, "superseded"),
        (2, "superseded"),
        (3, "superseded"),
        (4, "deployed"),
    ]

    helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", kubeconfig=kubeconfig)
    for doc in installed:
        assert get(cluster, doc["kind"], doc["metadata"]["name"]) is None, doc["metadata"]
    left = cluster.kubectl(
        "get", "all,configmaps,secrets,serviceaccounts,roles,rolebindings,networkpolicies,poddisruptionbudgets,"
        "clusterroles,clusterrolebindings,validatingwebhookconfigurations,mutatingwebhookconfigurations",
        "-A", "-l", "app.kubernetes.io/part-of=policyd", "-o", "name",
    ).stdout  # fmt: skip
    assert left == ""
    assert helm("list", "-n", NAMESPACE, "-q", kubeconfig=kubeconfig).stdout == ""
