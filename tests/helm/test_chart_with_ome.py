"""Beside OME's own chart (ome-resources, from the shared reference), as docs/install.md says: OME's
controller turned off (ome.controller.replicaCount=0: its webhook server is the same process), and
OME's four webhook configurations handed to policyd's release, whose names are the same: helm
refuses to take them unless told (--take-ownership), an upgrade of OME's release takes them back
(policyd's upgrade with --take-ownership takes them again), and uninstalling OME leaves them to
policyd."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.cluster import Cluster
from testkit.helm import CHART, helm
from testkit.shared import SHARED

OME_CHART = SHARED / "reference" / "ome" / "charts" / "ome-resources"
NAMESPACE = "ome"  # OME's chart writes some of its objects into `ome` whatever the release's namespace
OFF = ("--set", "ome.controller.replicaCount=0")
CONFIGS = "validatingwebhookconfigurations,mutatingwebhookconfigurations"
FOUR = [
    ("ValidatingWebhookConfiguration", "clusterservingruntime.ome.io"),
    ("ValidatingWebhookConfiguration", "inferenceservice.ome.io"),
    ("ValidatingWebhookConfiguration", "servingruntime.ome.io"),
    ("MutatingWebhookConfiguration", "inferenceservice.ome.io"),
]


def owners(cluster: Cluster) -> dict[tuple[str, str], tuple[str, str]]:
    """Each of OME's four configurations: the release that owns it and the Service it calls."""
    items = json.loads(cluster.kubectl("get", CONFIGS, "-o", "json").stdout)["items"]
    found = {
        (c["kind"], c["metadata"]["name"]): (
            c["metadata"]["annotations"]["meta.helm.sh/release-name"],
            c["webhooks"][0]["clientConfig"]["service"]["name"],
        )
        for c in items
    }
    return {key: found[key] for key in FOUR}


@pytest.fixture
def ome_installed(helm_cluster: Cluster, tmp_path: Path) -> Iterator[Cluster]:
    chart = shutil.copytree(OME_CHART, tmp_path / "ome-resources")  # the shared folder is read-only
    kubeconfig = helm_cluster.kubeconfig
    helm("install", "ome", str(chart), "-n", NAMESPACE, "--create-namespace", *OFF, kubeconfig=kubeconfig)
    try:
        yield helm_cluster
    finally:
        for release in ("policyd", "ome"):
            helm("uninstall", release, "-n", NAMESPACE, "--ignore-not-found", kubeconfig=kubeconfig)
        helm_cluster.kubectl(
            "delete", CONFIGS, *(name for _, name in FOUR[:3]), "benchmarkjob.ome.io", "--ignore-not-found"
        )


def test_policyd_takes_omes_webhook_configurations_over_only_when_told(ome_installed: Cluster, tmp_path: Path) -> None:
    cluster, kubeconfig = ome_installed, ome_installed.kubeconfig
    ome = ("ome", "ome-webhook-server-service")
    assert set(owners(cluster).values()) == {ome}
    replicas = cluster.kubectl("get", "deployment", "ome-controller-manager", "-n", NAMESPACE,
                               "-o", "jsonpath={.spec.replicas}").stdout  # fmt: skip
    assert replicas == "0"

    refused = helm("install", "policyd", str(CHART), "-n", NAMESPACE, kubeconfig=kubeconfig, check=False)
    assert refused.returncode == 1
    assert "exists and cannot be imported into the current release" in refused.stderr
    assert 'key "meta.helm.sh/release-name" must equal "policyd": current value is "ome"' in refused.stderr

    policyd = ("policyd", "policy-webhook")
    helm("install", "policyd", str(CHART), "-n", NAMESPACE, "--take-ownership", kubeconfig=kubeconfig)
    assert set(owners(cluster).values()) == {policyd}

    # an upgrade of OME's release takes them back; policyd's, told again, takes them again
    helm("upgrade", "ome", str(tmp_path / "ome-resources"), "-n", NAMESPACE, "--reuse-values", kubeconfig=kubeconfig)
    assert set(owners(cluster).values()) == {ome}
    helm("upgrade", "policyd", str(CHART), "-n", NAMESPACE, "--reuse-values", "--take-ownership", kubeconfig=kubeconfig)
    assert set(owners(cluster).values()) == {policyd}

    # uninstalling OME leaves policyd's configurations
    helm("uninstall", "ome", "-n", NAMESPACE, kubeconfig=kubeconfig)
    assert set(owners(cluster).values()) == {policyd}
