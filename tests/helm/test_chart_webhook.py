"""The chart's webhook (charts/policyd): OME's four webhook configurations under OME's names, with
failurePolicy, timeoutSeconds and the selectors from values, the caBundle the chart's CA or
cert-manager's injection; two replicas behind a disruption budget, calling policyd's replicas
through the headless Service (test_chart_topology.py checks that Service and the certificates'
names); and its RBAC is exactly enough for read-your-writes: a webhook with a token of its
ServiceAccount reads a runtime and a model policyd's catalog does not hold yet, and admits the
InferenceService that names them."""

from __future__ import annotations

import contextlib
import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from controller.manifests import named_isvc, named_model, named_runtime
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException
from testkit.cluster import Cluster
from testkit.helm import objects, rbac, render, template
from testkit.shared import RULES
from webhook.support import PATHS, admission_review, running_webhook, serving_certs

from policyd.clients import channels
from policyd.clients.policyctl.conformance.daemons import serving

NAMESPACE, SERVICE_ACCOUNT = "ome", "policy-webhook"
CERT_MANAGER = "cert-manager.io/v1"
WITH_CERT_MANAGER = {"certManager": {"enabled": True}}
CONFIGURATIONS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
# OME's configurations (ome-resources: templates/ome-controller/webhooks), by kind and name
OMES = {
    ("MutatingWebhookConfiguration", "inferenceservice.ome.io"),
    ("ValidatingWebhookConfiguration", "inferenceservice.ome.io"),
    ("ValidatingWebhookConfiguration", "servingruntime.ome.io"),
    ("ValidatingWebhookConfiguration", "clusterservingruntime.ome.io"),
}


def documents(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The webhook's objects and the configurations (with cert-manager: its Certificates)."""
    docs = render(values or WITH_CERT_MANAGER)
    return [
        d
        for d in docs
        if d["kind"] in CONFIGURATIONS
        or d["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "policy-webhook"
    ]


def by_kind(kind: str, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [doc for doc in documents(values) if doc["kind"] == kind]


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    with contextlib.suppress(ApiException):  # 409: there already
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))


def test_omes_four_webhooks_are_registered_as_ome_registers_them() -> None:
    configs = [d for d in documents() if d["kind"] in CONFIGURATIONS]
    assert {(c["kind"], c["metadata"]["name"]) for c in configs} == OMES
    hooks = {hook["name"]: hook for config in configs for hook in config["webhooks"]}
    assert {name: hook["clientConfig"]["service"]["path"] for name, hook in hooks.items()} == {
        "inferenceservice.ome-webhook-server.validator": PATHS["inferenceservice"],
        "servingruntime.ome-webhook-server.validator": PATHS["servingruntime"],
        "clusterservingruntime.ome-webhook-server.validator": PATHS["clusterservingruntime"],
        "inferenceservice.ome-webhook-server.defaulter": PATHS["defaulter"],
    }
    (service,) = by_kind("Service")
    for hook in hooks.values():
        (rule,) = hook["rules"]
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert (rule["apiGroups"], rule["apiVersions"]) == (["ome.io"], ["v1beta1"])
        assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        ref = hook["clientConfig"]["service"]
        assert (ref["name"], ref["namespace"], ref["port"]) == (
            service["metadata"]["name"],
            service["metadata"]["namespace"],
            service["spec"]["ports"][0]["port"],
        )


def test_the_cert_manager_objects_fit_what_refers_to_them() -> None:
    """The serving certificate, of policyd's CA Issuer (test_chart_topology.py checks the CA)."""
    (certificate,) = [doc for doc in by_kind("Certificate") if doc["spec"].get("dnsNames")]
    (deployment,) = by_kind("Deployment")
    (service,) = by_kind("Service")
    assert certificate["apiVersion"] == CERT_MANAGER
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": "policyd-ca"}
    assert "server auth" in certificate["spec"]["usages"]
    assert certificate["metadata"]["namespace"] == NAMESPACE
    svc = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert svc in certificate["spec"]["dnsNames"]
    # the API server trusts the Certificate's CA, which cert-manager injects into both configurations
    injected = f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    for config in [d for d in documents() if d["kind"] in CONFIGURATIONS]:
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == injected
        assert [hook["clientConfig"].get("caBundle") for hook in config["webhooks"]] == [None]
    # the Deployment serves the Certificate's Secret from --cert-dir
    pod = deployment["spec"]["template"]["spec"]
    (volume,) = [
        v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == certificate["spec"]["secretName"]
    ]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert f"--cert-dir={mount['mountPath']}" in container["args"]
    assert mount["readOnly"] is True
    assert deployment["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == SERVICE_ACCOUNT


def test_two_replicas_serve_and_a_drain_takes_one_at_a_time() -> None:
    (deployment,) = by_kind("Deployment")
    (budget,) = by_kind("PodDisruptionBudget")
    assert deployment["spec"]["replicas"] == 2
    assert budget["apiVersion"] == "policy/v1" and budget["spec"] == {
        "maxUnavailable": 1,
        "selector": deployment["spec"]["selector"],
    }
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"] == NAMESPACE


def test_the_webhook_balances_over_policyds_ready_replicas_by_the_headless_services_name() -> None:
    """dns:/// on policyd's headless Service: every ready replica the name resolves to, round_robin
    over those whose gRPC health says SERVING (policyd/clients/channels.py)."""
    (deployment,) = by_kind("Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (address,) = [arg.removeprefix("--policyd=") for arg in container["args"] if arg.startswith("--policyd=")]
    assert address == f"dns:///policyd-headless.{NAMESPACE}.svc:50051"
    config = json.loads(dict(channels.target_of(address)[1])["grpc.service_config"])
    assert config["loadBalancingConfig"] == [{"round_robin": {}}] and config["healthCheckConfig"]


def test_the_probes_do_not_depend_on_policyd() -> None:
    """With policyd down, a readiness probe on /readyz would leave the Service no endpoints: the API
    server would say "no endpoints available" instead of the webhook's denial naming policyd."""
    (deployment,) = by_kind("Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz", probe


def test_the_cluster_role_only_gets_the_five_kinds_it_reads() -> None:
    (role,) = by_kind("ClusterRole")
    assert role["rules"] == [
        {
            "apiGroups": ["ome.io"],
            "resources": [
                "clusterservingruntimes",
                "servingruntimes",
                "clusterbasemodels",
                "basemodels",
                "acceleratorclasses",
            ],
            "verbs": ["get"],
        }
    ]


# -- read-your-writes with the shipped RBAC ------------------------------------------------------------


def service_account_kubeconfig(cluster: Cluster, api: client.ApiClient, path: Path) -> Path:
    """Apply the chart's RBAC of the webhook; a kubeconfig with a bound token of its ServiceAccount,
    as a pod gets one."""
    ensure_namespace(api, NAMESPACE)
    resources = dynamic.DynamicClient(api).resources
    for doc in rbac("policy-webhook"):
        resource = resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(body=doc, field_manager="webhook-deploy-test", force_conflicts=True)
    return cluster.token_kubeconfig(NAMESPACE, SERVICE_ACCOUNT, path)


@pytest.fixture
def fresh_objects(kube_cluster: Cluster) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """A ClusterServingRuntime and a ClusterBaseModel of names of their own, and an
    InferenceService naming them; deleted from the cluster afterwards."""
    suffix = uuid.uuid4().hex[:8]
    runtime, model, isvc = named_runtime(), named_model(), copy.deepcopy(named_isvc())
    runtime["metadata"]["name"] = f"ryw-runtime-{suffix}"
    model["metadata"]["name"] = f"ryw-model-{suffix}"
    isvc["spec"]["runtime"] = {"name": runtime["metadata"]["name"]}
    isvc["spec"]["model"] = {"name": model["metadata"]["name"]}
    api = kube_cluster.api()
    custom = client.CustomObjectsApi(api)
    try:
        yield runtime, model, isvc
    finally:
        for plural, obj in (("clusterservingruntimes", runtime), ("clusterbasemodels", model)):
            with contextlib.suppress(ApiException):
                custom.delete_cluster_custom_object("ome.io", "v1beta1", plural, obj["metadata"]["name"])
        api.close()


def test_what_policyds_catalog_lacks_is_read_from_the_cluster_with_the_charts_rbac(
    kube_cluster: Cluster, tmp_path: Path, fresh_objects: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
) -> None:
    runtime, model, isvc = fresh_objects
    api = kube_cluster.api()
    kubeconfig = service_account_kubeconfig(kube_cluster, api, tmp_path / "sa.kubeconfig")
    certs = serving_certs(tmp_path / "certs")
    policyd_args = ["--rules", str(RULES), "--log-level", "warning"]  # an empty catalog: nothing synced it
    with (
        serving("policyd.daemon.main", policyd_args, "127.0.0.1:0") as policyd,
        running_webhook(policyd, certs.cert_dir, kubeconfig=kubeconfig) as webhook,
    ):
        reviews = webhook.client(certs.ca)
        before = reviews.post(PATHS["inferenceservice"], admission_review(isvc)).response
        assert before["allowed"] is False  # neither in policyd's catalog nor in the cluster
        custom = client.CustomObjectsApi(api)
        custom.create_cluster_custom_object("ome.io", "v1beta1", "clusterbasemodels", model)
        custom.create_cluster_custom_object("ome.io", "v1beta1", "clusterservingruntimes", runtime)
        after = reviews.post(PATHS["inferenceservice"], admission_review(isvc)).response
        assert after["allowed"] is True, after
        # read as records: a timestamp's digits may spell 403 too
        records = [json.loads(line) for line in webhook.log_file.read_text().splitlines()]
        refused = [r["msg"] for r in records if 'HTTP/1.1" 403' in r["msg"] or "orbidden" in r["msg"]]
        assert refused == [] and [r["msg"] for r in records if r["level"] in ("warning", "error")] == []
    api.close()


def test_the_generated_ca_is_every_configurations_ca_bundle() -> None:
    docs = render()
    (ca,) = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == "policyd-ca"]
    configs = [d for d in docs if d["kind"] in CONFIGURATIONS]
    assert len(configs) == 4
    for config in configs:
        assert "annotations" not in config["metadata"]
        assert [hook["clientConfig"]["caBundle"] for hook in config["webhooks"]] == [ca["data"]["tls.crt"]]


def test_failure_policy_timeout_and_selectors_are_values() -> None:
    selector = {"matchExpressions": [{"key": "policyd.example.com/skip", "operator": "DoesNotExist"}]}
    values = {
        "webhook": {
            "failurePolicy": "Ignore",
            "timeoutSeconds": 5,
            "namespaceSelector": {"matchLabels": {"ome-webhooks": "on"}},
            "objectSelector": selector,
        }
    }
    for config in by_kind("ValidatingWebhookConfiguration", values) + by_kind("MutatingWebhookConfiguration", values):
        (hook,) = config["webhooks"]
        assert (hook["failurePolicy"], hook["timeoutSeconds"], hook["objectSelector"]) == ("Ignore", 5, selector)
        # a namespaceSelector does not apply to cluster-scoped objects: not set on their webhook
        namespaced = hook["rules"][0]["resources"] != ["clusterservingruntimes"]
        assert hook.get("namespaceSelector") == ({"matchLabels": {"ome-webhooks": "on"}} if namespaced else None)
    for config in by_kind("ValidatingWebhookConfiguration"):  # the defaults: OME's
        (hook,) = config["webhooks"]
        assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Fail", 10)
        assert "namespaceSelector" not in hook and "objectSelector" not in hook


def test_taking_over_neither_part_leaves_policyd_alone() -> None:
    docs = render({"takeOver": {"controller": False, "webhooks": False}})
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"] == ["policyd"]
    assert [d for d in docs if d["kind"] in CONFIGURATIONS] == []


def test_the_api_servers_addresses_are_looked_up_when_not_given(helm_cluster: Cluster) -> None:
    """Only the API server may reach the webhook's port: its addresses are the `kubernetes`
    Service's EndpointSlice (the test control plane runs without the reconciler that writes it)."""
    endpoints = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.2.3"]}, {"addresses": ["10.1.2.4"]}],
        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
    }
    helm_cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(endpoints))
    try:
        rendered = template({}, kubeconfig=helm_cluster.kubeconfig)
    finally:
        helm_cluster.kubectl("delete", "endpointslice", "kubernetes", "-n", "default")
    (policy,) = [
        d for d in objects(rendered) if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "policy-webhook"
    ]
    assert policy["spec"]["ingress"][0]["from"] == [
        {"ipBlock": {"cidr": "10.1.2.3/32"}},
        {"ipBlock": {"cidr": "10.1.2.4/32"}},
    ]
    # offline there is nothing to look up: any address, and NOTES.txt says so
    (offline,) = [d for d in render() if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "policy-webhook"]
    assert "from" not in offline["spec"]["ingress"][0]
