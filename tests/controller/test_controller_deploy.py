"""clients/controller/deploy and the policy-webhook beside it (clients/webhook/deploy) describe the
production topology and fit together: what the API server knows is server-side dry-run applied
(cert-manager's kinds are not installed: those are checked offline, against what refers to them);
policyd runs as replicas that watch the cluster, each ready only once in sync, behind a
disruption budget; the controller (one acting, one standing by) and the webhook balance their
calls over policyd's ready replicas through the headless Service; every TLS flag names a file a
mounted Secret of a shipped Certificate provides, all of one CA, and policyd's certificate names
every host the clients dial; --authz is the shipped ConfigMap, naming the Certificates' common
names as readers, nobody as a writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from testkit.cluster import Cluster, accepted_by_a_dry_run
from testkit.shared import REPO

from clients import channels

from .support import DEPLOY

WEBHOOK_DEPLOY = REPO / "clients" / "webhook" / "deploy"
CERT_MANAGER = "cert-manager.io/v1"
NAMESPACE = "ome"
HEADLESS = "policyd-headless"
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
# cert-manager's keys in a Certificate's Secret, and the flag that takes each
SECRET_KEYS = {"--tls-cert": "tls.crt", "--tls-key": "tls.key", "--tls-client-ca": "ca.crt", "--tls-ca": "ca.crt"}
# the clients of policyd's API: (Deployment, container) -> the shipped Certificate it calls with
CLIENTS = {
    ("policy-controller", "controller"): "policy-controller-client",
    ("policy-webhook", "webhook"): "policy-webhook-client",
}


def shipped(folder: Path) -> list[dict[str, Any]]:
    return [doc for path in sorted(folder.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def everything() -> list[dict[str, Any]]:
    return shipped(DEPLOY) + shipped(WEBHOOK_DEPLOY)


def named(kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in everything() if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def flags(container: dict[str, Any]) -> dict[str, str]:
    """A container's flags, written --flag=value or --flag value, in its command and args; a flag
    followed by another flag (or nothing) is a switch, given as ""."""
    words = [*container.get("command", []), *container.get("args", [])]
    found: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            following = words[i + 1] if i + 1 < len(words) else "--"
            found[name] = value if eq else "" if following.startswith("--") else following
    return found


def container_of(deployment: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = named("Deployment", deployment)["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == name]
    return pod, container


def mounted(pod: dict[str, Any], container: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The volume a file of the container is on, and the file's name in it."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"].rstrip("/") + "/")]
    assert mount.get("readOnly") is True, mount
    return volumes[mount["name"]], str(Path(path).relative_to(mount["mountPath"]))


def certificate_behind(pod: dict[str, Any], container: dict[str, Any], flag: str) -> dict[str, Any]:
    """The shipped Certificate whose Secret provides the file ``flag`` names, as cert-manager names it."""
    volume, key = mounted(pod, container, flags(container)[flag])
    assert key == SECRET_KEYS[flag], f"{flag} names {key} of {volume}"
    (certificate,) = [
        d
        for d in everything()
        if d["kind"] == "Certificate" and d["spec"]["secretName"] == volume["secret"]["secretName"]
    ]
    return certificate


def dialed(address: str) -> tuple[str, int]:
    """The host and port a --policyd address dials (``dns:///HOST:PORT`` or ``HOST:PORT``)."""
    host, _, port = address.removeprefix("dns:///").rpartition(":")
    return host, int(port)


def selected(selector: dict[str, str]) -> list[str]:
    """The shipped Deployments whose pods a label selector matches."""
    return [
        d["metadata"]["name"]
        for d in everything()
        if d["kind"] == "Deployment" and selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
    ]


def budget_of(deployment: str) -> dict[str, Any]:
    """The PodDisruptionBudget that covers the Deployment's pods."""
    (budget,) = [
        d
        for d in everything()
        if d["kind"] == "PodDisruptionBudget" and selected(d["spec"]["selector"]["matchLabels"]) == [deployment]
    ]
    return budget


def service_port(service: dict[str, Any]) -> dict[str, Any]:
    (port,) = service["spec"]["ports"]
    return dict(port)


def api_port(port: dict[str, Any]) -> int:
    """The container port of policyd's a Service port targets."""
    _, policyd = container_of("policyd", "policyd")
    (target,) = [p for p in policyd["ports"] if p["name"] == port["targetPort"]]
    return int(target["containerPort"])


def test_what_the_api_server_knows_is_accepted_by_a_server_side_dry_run(kube_cluster: Cluster) -> None:
    known = [doc for doc in shipped(DEPLOY) if doc["apiVersion"] != CERT_MANAGER]
    assert {doc["kind"] for doc in known} == {
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "ConfigMap",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    }
    api = kube_cluster.api()
    accepted_by_a_dry_run(api, known, NAMESPACE, "controller-deploy-test")
    api.close()


def test_everything_is_in_the_ome_namespace_and_each_selector_picks_one_deployments_pods() -> None:
    for doc in everything():
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]
        if doc["kind"] == "Deployment":
            assert selected(doc["spec"]["selector"]["matchLabels"]) == [doc["metadata"]["name"]]
        if doc["kind"] in ("Service", "PodDisruptionBudget"):
            selector = doc["spec"]["selector"]
            assert len(selected(selector.get("matchLabels", selector))) == 1, doc["metadata"]


def test_policyd_runs_as_3_replicas_with_a_disruption_budget_and_a_readiness_probe_on_its_health_port() -> None:
    deployment = named("Deployment", "policyd")
    assert deployment["spec"]["replicas"] == 3
    # a rollout adds a replica and waits for it to be ready (listed the cluster) before removing one
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    budget = budget_of("policyd")
    assert budget["apiVersion"] == "policy/v1" and budget["spec"] == {
        "maxUnavailable": 1,
        "selector": deployment["spec"]["selector"],
    }
    _, policyd = container_of("policyd", "policyd")
    health = int(flags(policyd)["--health-listen"].rpartition(":")[2])
    assert policyd["readinessProbe"]["grpc"] == {"port": health}  # gRPC health: NOT_SERVING until in sync
    assert health in [p["containerPort"] for p in policyd["ports"]]
    # a replica still listing a large cluster is NOT_SERVING: a liveness probe there would restart it
    assert "livenessProbe" not in policyd


def test_policyd_reads_the_cluster_itself_with_its_own_service_account_and_keeps_no_state() -> None:
    pod, policyd = container_of("policyd", "policyd")
    given = flags(policyd)
    assert policyd["command"] == ["policyd"] and given["--cluster"] == ""
    # the pod's service account (in-cluster configuration); the catalog is the cluster's alone
    for absent in ("--kubeconfig", "--catalog", "--state-dir", "--processes"):
        assert absent not in given, absent
    assert pod["serviceAccountName"] == "policyd"
    assert pod.get("automountServiceAccountToken", True) is True
    assert [v for v in pod["volumes"] if "emptyDir" in v] == []  # nothing kept across restarts
    assert [c["name"] for c in pod["containers"]] == ["policyd"]


def test_one_ca_issues_every_certificate_of_policyds_connections() -> None:
    selfsigned = [d for d in everything() if d["kind"] == "Issuer" and "selfSigned" in d["spec"]]
    (ca,) = [d for d in everything() if d["kind"] == "Certificate" and d["spec"].get("isCA")]
    assert ca["spec"]["issuerRef"]["kind"] == "Issuer"
    assert ca["spec"]["issuerRef"]["name"] in [d["metadata"]["name"] for d in selfsigned]
    assert ca["spec"]["secretName"] == "policyd-ca"
    (ca_issuer,) = [d for d in everything() if d["kind"] == "Issuer" and "ca" in d["spec"]]
    assert ca_issuer["spec"]["ca"]["secretName"] == ca["spec"]["secretName"]
    leaves = [
        named("Certificate", name) for name in ("policyd-serving", "policy-controller-client", "policy-webhook-client")
    ]
    for doc in [ca, ca_issuer, *leaves, *selfsigned]:
        assert doc["apiVersion"] == CERT_MANAGER and doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]
    for leaf in leaves:
        assert leaf["spec"]["issuerRef"] == {"kind": "Issuer", "name": ca_issuer["metadata"]["name"]}, leaf
    server, controller, webhook = leaves
    assert "server auth" in server["spec"]["usages"] and "client auth" not in server["spec"]["usages"]
    # both Services' names, short and whole; no client dials policyd on localhost any more
    assert set(server["spec"]["dnsNames"]) == {
        f"{name}.{NAMESPACE}.svc{suffix}" for name in ("policyd", HEADLESS) for suffix in ("", ".cluster.local")
    }
    for leaf, name in ((controller, "policy-controller"), (webhook, "policy-webhook")):
        assert leaf["spec"]["commonName"] == name
        assert "client auth" in leaf["spec"]["usages"] and "server auth" not in leaf["spec"]["usages"]


def test_the_tls_flags_name_files_the_mounted_secrets_of_the_shipped_certificates_provide() -> None:
    pod, policyd = container_of("policyd", "policyd")
    served = {flag: certificate_behind(pod, policyd, flag) for flag in ("--tls-cert", "--tls-key", "--tls-client-ca")}
    assert {c["metadata"]["name"] for c in served.values()} == {"policyd-serving"}  # ca.crt: the CA that signed it
    for (deployment, name), expected in CLIENTS.items():
        client_pod, container = container_of(deployment, name)
        behind = {
            flag: certificate_behind(client_pod, container, flag) for flag in ("--tls-ca", "--tls-cert", "--tls-key")
        }
        assert {c["metadata"]["name"] for c in behind.values()} == {expected}, name
        # the host it dials is a name policyd's certificate carries
        host, _ = dialed(flags(container)["--policyd"])
        assert host in served["--tls-cert"]["spec"]["dnsNames"], (name, host)
        assert not [v for v in client_pod["volumes"] if v.get("secret", {}).get("secretName") == "policyd-ca"]


def test_the_controller_and_the_webhook_balance_over_policyds_replicas_through_the_headless_service() -> None:
    headless = named("Service", HEADLESS)
    assert headless["spec"]["clusterIP"] == "None"  # DNS answers with the replicas' own addresses
    # only ready replicas (listed the cluster) are in that answer
    assert headless["spec"].get("publishNotReadyAddresses", False) is False
    assert selected(headless["spec"]["selector"]) == ["policyd"]
    port = service_port(headless)
    _, policyd = container_of("policyd", "policyd")
    assert flags(policyd)["--listen"] == f"0.0.0.0:{api_port(port)}"
    meta = headless["metadata"]
    for deployment, name in CLIENTS:
        _, container = container_of(deployment, name)
        address = flags(container)["--policyd"]
        assert address == f"dns:///{meta['name']}.{meta['namespace']}.svc:{port['port']}", name
        # the clients' channel: round_robin over every address the name resolves to, each
        # replica's gRPC health checked (NOT_SERVING: no calls), UNAVAILABLE retried
        target, options = channels.target_of(address)
        assert target == address
        config = json.loads(dict(options)["grpc.service_config"])
        assert config["loadBalancingConfig"] == [{"round_robin": {}}], name
        assert config["healthCheckConfig"] == {"serviceName": ""}
        (retry,) = config["methodConfig"]
        assert "UNAVAILABLE" in retry["retryPolicy"]["retryableStatusCodes"]


def test_the_policyd_service_stays_for_clients_that_do_not_balance_and_health_stays_off_both() -> None:
    service = named("Service", "policyd")
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP" and "clusterIP" not in service["spec"]
    assert selected(service["spec"]["selector"]) == ["policyd"]
    port = service_port(service)
    assert port == service_port(named("Service", HEADLESS))
    _, policyd = container_of("policyd", "policyd")
    # health stays off the Services: plaintext for the kubelet alone
    assert int(flags(policyd)["--health-listen"].rpartition(":")[2]) != api_port(port)


def test_the_controller_runs_as_2_replicas_one_leading_with_the_renderer_beside_it() -> None:
    deployment = named("Deployment", "policy-controller")
    assert deployment["spec"]["replicas"] == 2
    pod, controller = container_of("policy-controller", "controller")
    _, renderer = container_of("policy-controller", "renderer")
    assert pod["serviceAccountName"] == "policy-controller"
    # the Lease in the pod's namespace (clients/controller/leader.py reads POD_NAMESPACE)
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in controller[
        "env"
    ]
    assert "--leader-election-namespace" not in flags(controller)
    # the renderer on a unix socket in a volume both mount
    socket = flags(controller)["--renderer"]
    assert socket.startswith("unix:") and renderer["command"] == ["policy-render", "--listen", socket]
    shared = {m["name"] for m in controller["volumeMounts"]} & {m["name"] for m in renderer["volumeMounts"]}
    (volume,) = [v for v in pod["volumes"] if v["name"] in shared]
    assert "emptyDir" in volume
    (mount,) = [m for m in renderer["volumeMounts"] if m["name"] == volume["name"]]
    assert socket.removeprefix("unix:").startswith(mount["mountPath"] + "/")
    budget = budget_of("policy-controller")
    assert budget["spec"]["maxUnavailable"] == 1  # a drain leaves a replica to hold the Lease


def test_the_webhook_runs_as_2_replicas_with_a_disruption_budget() -> None:
    deployment = named("Deployment", "policy-webhook")
    assert deployment["spec"]["replicas"] == 2
    budget = budget_of("policy-webhook")
    assert budget["spec"]["maxUnavailable"] == 1


def test_authz_is_the_shipped_configmap_names_the_certificates_common_names_as_readers_and_no_writer() -> None:
    pod, policyd = container_of("policyd", "policyd")
    volume, key = mounted(pod, policyd, flags(policyd)["--authz"])
    configmap = named("ConfigMap", volume["configMap"]["name"])
    authz = yaml.safe_load(configmap["data"][key])
    controller = named("Certificate", "policy-controller-client")["spec"]["commonName"]
    webhook = named("Certificate", "policy-webhook-client")["spec"]["commonName"]
    assert sorted(authz["read"]) == sorted([controller, webhook])
    # under --cluster the catalog is the cluster's: policyd refuses ApplyObjects and DeleteObjects
    assert authz["write"] == []
