"""clients/webhook/deploy against a real API server: what it knows is server-side dry-run applied
(cert-manager's kinds are not installed: those are checked offline, against what refers to them);
two replicas behind a disruption budget, calling policyd's replicas through the headless Service
(tests/controller/test_controller_deploy.py checks that Service and the certificate's names); and
the shipped RBAC is exactly enough for read-your-writes: a webhook with a token of its
ServiceAccount reads a runtime and a model policyd's catalog does not hold yet, and admits the
InferenceService that names them."""

from __future__ import annotations

import base64
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
from testkit.cluster import Cluster, accepted_by_a_dry_run
from testkit.shared import REPO, RULES

from clients import channels
from clients.policyctl.conformance.daemons import serving

from .support import PATHS, admission_review, running_webhook, serving_certs

DEPLOY = REPO / "clients" / "webhook" / "deploy"
NAMESPACE, SERVICE_ACCOUNT = "ome", "policy-webhook"
CERT_MANAGER = "cert-manager.io/v1"


def documents() -> list[dict[str, Any]]:
    return [doc for path in sorted(DEPLOY.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents() if doc["kind"] == kind]


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    with contextlib.suppress(ApiException):  # 409: there already
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))


def test_what_the_api_server_knows_is_accepted_by_a_server_side_dry_run(kube_cluster: Cluster) -> None:
    known = [doc for doc in documents() if doc["apiVersion"] != CERT_MANAGER]
    assert {doc["kind"] for doc in known} == {
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    }
    api = kube_cluster.api()
    accepted_by_a_dry_run(api, known, NAMESPACE, "webhook-deploy-test")
    api.close()


def test_omes_four_webhooks_are_registered_as_ome_registers_them() -> None:
    (validating,) = by_kind("ValidatingWebhookConfiguration")
    (mutating,) = by_kind("MutatingWebhookConfiguration")
    hooks = {hook["name"]: hook for config in (validating, mutating) for hook in config["webhooks"]}
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
    """The serving certificate; the client certificate for policyd is policyd's CA's
    (tests/controller/test_controller_deploy.py)."""
    (issuer,) = by_kind("Issuer")
    (certificate,) = [doc for doc in by_kind("Certificate") if doc["spec"].get("dnsNames")]
    (deployment,) = by_kind("Deployment")
    (service,) = by_kind("Service")
    assert issuer["apiVersion"] == certificate["apiVersion"] == CERT_MANAGER
    assert "selfSigned" in issuer["spec"]
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]}
    assert issuer["metadata"]["namespace"] == certificate["metadata"]["namespace"] == NAMESPACE
    svc = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert svc in certificate["spec"]["dnsNames"]
    # the API server trusts the Certificate's CA, which cert-manager injects into both configurations
    injected = f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        (config,) = by_kind(kind)
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == injected
    # the Deployment serves the Certificate's Secret from --cert-dir
    pod = deployment["spec"]["template"]["spec"]
    (volume,) = [
        v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == certificate["spec"]["secretName"]
    ]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert f"--cert-dir={mount['mountPath']}" in container["args"]
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
    over those whose gRPC health says SERVING (clients/channels.py)."""
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
    """Apply rbac.yaml; a kubeconfig with a bound token of its ServiceAccount, as a pod gets one."""
    ensure_namespace(api, NAMESPACE)
    resources = dynamic.DynamicClient(api).resources
    for doc in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()):
        resource = resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(body=doc, field_manager="webhook-deploy-test", force_conflicts=True)
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    token = client.CoreV1Api(api).create_namespaced_service_account_token(SERVICE_ACCOUNT, NAMESPACE, request)
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
    assert base64.b64decode(ca)
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "test", "cluster": {"server": cluster.server, "certificate-authority-data": ca}}],
                "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token.status.token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "test", "user": SERVICE_ACCOUNT}}],
                "current-context": "sa",
            }
        )
    )
    return path


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


def test_what_policyds_catalog_lacks_is_read_from_the_cluster_with_the_shipped_rbac(
    kube_cluster: Cluster, tmp_path: Path, fresh_objects: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
) -> None:
    runtime, model, isvc = fresh_objects
    api = kube_cluster.api()
    kubeconfig = service_account_kubeconfig(kube_cluster, api, tmp_path / "sa.kubeconfig")
    certs = serving_certs(tmp_path / "certs")
    policyd_args = ["--rules", str(RULES), "--log-level", "warning"]  # an empty catalog: nothing synced it
    with (
        serving("policyd.server.main", policyd_args, "127.0.0.1:0") as policyd,
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
