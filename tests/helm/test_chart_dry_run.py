"""The chart's output as the API server takes it: ``helm template`` (against the cluster, so its
lookups read it) applied with ``kubectl apply --dry-run=server`` into a namespace where Pod
Security ``restricted`` is enforced, warned and audited: accepted, and not one warning, for the
defaults and for cert-manager, several replicas and an organisation's rule files."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from testkit.cluster import Cluster
from testkit.helm import objects, render, template
from testkit.shared import REPO

KUBECTL = REPO / "tests" / "cluster" / "bin" / "kubectl"
TEAM_RULE = (REPO / "rules" / "examples" / "namespace-runtime-label.yaml").read_text()
RESTRICTED = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")}

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "cert-manager": {"certManager": {"enabled": True}},
    "several-replicas": {"policyd": {"replicas": 5}, "controller": {"replicas": 3}, "webhook": {"replicas": 4}},
    "custom-rules": {"rules": {"files": {"team-a.yaml": TEAM_RULE}}},
    "scheduling-and-metrics": {
        "policyd": {
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "control", "effect": "NoSchedule"}],
            "priorityClassName": "system-cluster-critical",
            "nodeSelector": {"kubernetes.io/os": "linux"},
        },
        "networkPolicy": {"metricsNamespaces": ["monitoring"], "apiServerCIDRs": ["10.0.0.1/32"]},
        "logFormat": "text",
        "image": {"repository": "registry.example.com/policyd", "digest": "sha256:" + "ab" * 32},
    },
}


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def restricted(helm_cluster: Cluster) -> str:
    """A namespace of its own where Pod Security restricted is enforced, warned and audited."""
    name = f"restricted-{uuid.uuid4().hex[:6]}"
    helm_cluster.kubectl("create", "namespace", name)
    helm_cluster.kubectl("label", "namespace", name, *(f"{k}={v}" for k, v in RESTRICTED.items()))
    return name


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_rendered_chart_passes_a_server_side_dry_run_under_restricted_without_a_warning(
    helm_cluster: Cluster, restricted: str, variant: str
) -> None:
    rendered = template(VARIANTS[variant], namespace=restricted, kubeconfig=helm_cluster.kubeconfig)
    done = kubectl(helm_cluster, "apply", "--dry-run=server", "-n", restricted, "-f", "-", stdin=rendered)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    applied = [line for line in done.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(objects(rendered)) and "deployment.apps/policyd created (server dry run)" in applied


def test_the_namespace_would_warn_of_a_container_outside_restricted(helm_cluster: Cluster, restricted: str) -> None:
    """What the test above relies on: a warning, had any pod template broken the profile."""
    docs = objects(template({}, namespace=restricted))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "policyd"]
    del deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"]
    done = kubectl(
        helm_cluster, "apply", "--dry-run=server", "-n", restricted, "-f", "-", stdin=yaml.safe_dump(deployment)
    )
    # a workload is admitted with the warning; its pods would be refused
    assert done.returncode == 0
    assert 'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false' in done.stderr


def test_a_service_monitor_only_where_its_crd_is(helm_cluster: Cluster, restricted: str) -> None:
    served = objects(template({}, namespace=restricted, kubeconfig=helm_cluster.kubeconfig))
    assert [d["metadata"]["name"] for d in served if d["kind"] == "ServiceMonitor"] == ["policyd"]
    assert [d for d in render() if d["kind"] == "ServiceMonitor"] == []  # offline: no such CRD known
    assert [d for d in render({"metrics": {"enabled": False}}) if d["kind"] in ("ServiceMonitor", "Service")] == [
        d for d in render() if d["kind"] == "Service" and d["metadata"]["name"] != "policyd-metrics"
    ]


def test_the_bundled_and_the_organisations_rules_are_one_directory_policyd_loads(tmp_path: Path) -> None:
    (rules,) = [d for d in render(VARIANTS["custom-rules"]) if d["metadata"]["name"] == "policyd-rules"]
    bundled = sorted(p.name for p in (REPO / "rules").glob("*.yaml"))
    assert sorted(rules["data"]) == sorted([*bundled, "team-a.yaml"])
    for name, text in rules["data"].items():
        (tmp_path / name).write_text(text)
        if name in bundled:
            assert text == (REPO / "rules" / name).read_text(), name
    done = subprocess.run(
        ["policyctl", "rules", "check", str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
