"""The chart's objects (charts/policyd, rendered by helm) describe the production topology and fit
together: every object is valid Kubernetes (tests/helm/test_chart_dry_run.py applies them to a real
API server); policyd runs as replicas that watch the cluster, each ready only once in sync, behind a
disruption budget; the controller (one acting, one standing by) and the webhook balance their
calls over policyd's ready replicas through the headless Service; every TLS flag names a file a
mounted Secret of a Certificate provides (cert-manager's, or the chart's own Secret), all of one
CA, and policyd's certificate names every host the clients dial; --authz is the shipped
ConfigMap, naming the Certificates' common names as readers, nobody as a writer."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from testkit.helm import render

from policyd.clients import channels

CERT_MANAGER = "cert-manager.io/v1"
WITH_CERT_MANAGER = {"certManager": {"enabled": True}}
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


def everything() -> list[dict[str, Any]]:
    """With cert-manager: its Certificates say each Secret's names and usages."""
    return render(WITH_CERT_MANAGER)


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
    (container,) = [c for c in [*pod.get("initContainers", []), *pod["containers"]] if c["name"] == name]
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


@pytest.mark.parametrize("values", [{}, WITH_CERT_MANAGER], ids=["generated-tls", "cert-manager"])
def test_every_object_is_valid_kubernetes(values: dict[str, Any]) -> None:
    """cert-manager's kinds are not Kubernetes' own: the tests below check them against what refers
    to them, and the dry runs against their CRDs' fields."""
    for doc in render(values):
        if doc["apiVersion"] != CERT_MANAGER:
            kubernetes_validate.validate(doc, "1.32", strict=True)


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
    # nothing kept across restarts: the one emptyDir is /tmp (a cache), and no --state-dir
    assert [v["name"] for v in pod["volumes"] if "emptyDir" in v] == ["tmp"]
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
    # both Services' names, short and whole; localhost for policyctl through kubectl port-forward
    assert set(server["spec"]["dnsNames"]) == {
        f"{name}.{NAMESPACE}.svc{suffix}" for name in ("policyd", HEADLESS) for suffix in ("", ".cluster.local")
    } | {"localhost"}
    assert server["spec"]["ipAddresses"] == ["127.0.0.1"]
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
    # the Lease in the pod's namespace (policyd/clients/controller/leader.py reads POD_NAMESPACE)
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in controller[
        "env"
    ]
    assert "--leader-election-namespace" not in flags(controller)
    # the renderer on a unix socket in a volume both mount
    socket = flags(controller)["--renderer"]
    assert socket.startswith("unix:") and renderer["command"][:3] == ["policy-render", "--listen", socket]
    # a native sidecar: the kubelet starts the controller once the renderer's startup probe passes
    # (its ready file, written once the socket serves), and stops the renderer after the controller
    assert [c["name"] for c in pod["initContainers"]] == ["renderer"] and renderer["restartPolicy"] == "Always"
    ready = flags(renderer)["--ready-file"]
    assert renderer["startupProbe"]["exec"]["command"] == ["test", "-s", ready]
    assert [c["name"] for c in pod["containers"]] == ["controller"]
    shared = {m["name"] for m in controller["volumeMounts"]} & {m["name"] for m in renderer["volumeMounts"]}
    (volume,) = [v for v in pod["volumes"] if v["name"] in shared - {"tmp"}]  # each container's /tmp aside
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


def test_the_generated_secrets_are_of_one_ca_and_name_what_the_certificates_would() -> None:
    """Without cert-manager the chart's own Secrets, laid out as cert-manager's: the same names,
    the CA as ca.crt, the leaves signed by it with the Certificates' names."""
    generated = {d["metadata"]["name"]: d for d in render() if d["kind"] == "Secret"}
    certificates = {d["spec"]["secretName"]: d for d in everything() if d["kind"] == "Certificate"}
    assert set(generated) == set(certificates)
    ca_pem = base64.b64decode(generated["policyd-ca"]["data"]["tls.crt"])
    ca = x509.load_pem_x509_certificate(ca_pem)
    for name, secret in generated.items():
        assert secret["type"] == "kubernetes.io/tls" and base64.b64decode(secret["data"]["ca.crt"]) == ca_pem
        cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
        cert.verify_directly_issued_by(ca)
        spec = certificates[name]["spec"]
        if spec.get("commonName"):
            (cn,) = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
            assert cn.value == spec["commonName"], name
        if spec.get("dnsNames"):
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert set(sans.get_values_for_type(x509.DNSName)) == set(spec["dnsNames"]), name
            assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == spec.get("ipAddresses", []), name


def test_every_container_runs_under_restricted_with_a_read_only_root_and_writes_to_tmp() -> None:
    image = {"repository": "registry.example.com/policyd", "tag": "0.1.0", "digest": "sha256:" + "0" * 64}
    for values, expected in (({}, "policyd:0.1.0"), ({"image": image}, f"{image['repository']}@{image['digest']}")):
        pods = [d["spec"]["template"]["spec"] for d in render(values) if d["kind"] == "Deployment"]
        assert len(pods) == 3
        for pod in pods:
            assert pod["securityContext"]["runAsNonRoot"] is True
            assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            (tmp,) = [v for v in pod["volumes"] if v["name"] == "tmp"]
            assert tmp == {"name": "tmp", "emptyDir": {}}
            for container in [*pod.get("initContainers", []), *pod["containers"]]:
                assert container["image"] == expected  # one image for every container
                assert container["securityContext"] == {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                }, container["name"]
                assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
                # the image's HOME is /nonexistent: the parse cache goes under /tmp
                assert {"name": "XDG_CACHE_HOME", "value": "/tmp/cache"} in container["env"]


def test_the_rules_are_the_configmaps_mounted_where_policyd_reads_and_watches_them() -> None:
    pod, policyd = container_of("policyd", "policyd")
    volume, key = mounted(pod, policyd, flags(policyd)["--rules"] + "/00-admission.yaml")
    rules = named("ConfigMap", volume["configMap"]["name"])
    assert key in rules["data"]
    # no checksum of the rules on the pod template: a rule change must not restart the pods
    assert "annotations" not in named("Deployment", "policyd")["spec"]["template"]["metadata"]


def test_the_network_policies_let_only_the_clients_reach_policyds_api_and_the_api_server_the_webhook() -> None:
    values = {"networkPolicy": {"apiServerCIDRs": ["10.0.0.1/32"], "metricsNamespaces": ["monitoring"]}}
    policies = {d["metadata"]["name"]: d["spec"] for d in render(values) if d["kind"] == "NetworkPolicy"}
    api, health, metrics = policies["policyd"]["ingress"]
    assert api["ports"] == [{"port": "api", "protocol": "TCP"}]
    assert [p["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for p in api["from"]] == [
        "policy-controller",
        "policy-webhook",
    ]
    assert health == {"ports": [{"port": "health", "protocol": "TCP"}]}  # the kubelet's probe, plaintext status
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    controller = {"app.kubernetes.io/name": "policy-controller", "app.kubernetes.io/part-of": "policyd"}
    assert policies["policy-controller"] == {"podSelector": {"matchLabels": controller}, "policyTypes": ["Ingress"]}
    (webhook,) = policies["policy-webhook"]["ingress"]
    assert webhook["ports"] == [{"port": "webhook", "protocol": "TCP"}]
    assert webhook["from"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}]
    # no metrics namespaces named: nobody reaches the metrics port
    (default,) = [d for d in render() if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "policyd"]
    assert len(default["spec"]["ingress"]) == 2
    assert [d for d in render({"networkPolicy": {"enabled": False}}) if d["kind"] == "NetworkPolicy"] == []
