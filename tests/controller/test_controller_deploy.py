"""clients/controller/deploy and the policy-webhook beside it (clients/webhook/deploy) fit
together: what the API server knows is server-side dry-run applied (cert-manager's kinds are not
installed: those are checked offline, against what refers to them); every TLS flag names a file
a mounted Secret of a shipped Certificate provides, all of one CA; the webhook dials the
`policyd` Service, whose port is policyd's API; --authz is the shipped ConfigMap, naming the
Certificates' common names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from testkit.cluster import Cluster, accepted_by_a_dry_run
from testkit.shared import REPO

from .support import DEPLOY

WEBHOOK_DEPLOY = REPO / "clients" / "webhook" / "deploy"
CERT_MANAGER = "cert-manager.io/v1"
NAMESPACE = "ome"
# cert-manager's keys in a Certificate's Secret, and the flag that takes each
SECRET_KEYS = {"--tls-cert": "tls.crt", "--tls-key": "tls.key", "--tls-ca": "ca.crt", "--tls-client-ca": "ca.crt"}


def shipped(folder: Path) -> list[dict[str, Any]]:
    return [doc for path in sorted(folder.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def everything() -> list[dict[str, Any]]:
    return shipped(DEPLOY) + shipped(WEBHOOK_DEPLOY)


def named(kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in everything() if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def flags(container: dict[str, Any]) -> dict[str, str]:
    """A container's flags, written --flag=value or --flag value, in its command and args."""
    words = [*container.get("command", []), *container.get("args", [])]
    found: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            found[name] = value if eq else words[i + 1]
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


def test_what_the_api_server_knows_is_accepted_by_a_server_side_dry_run(kube_cluster: Cluster) -> None:
    known = [doc for doc in shipped(DEPLOY) if doc["apiVersion"] != CERT_MANAGER]
    assert {"Deployment", "Service", "ConfigMap"} <= {doc["kind"] for doc in known}
    api = kube_cluster.api()
    accepted_by_a_dry_run(api, known, NAMESPACE, "controller-deploy-test")
    api.close()


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
    assert set(server["spec"]["dnsNames"]) == {"localhost", "policyd.ome.svc", "policyd.ome.svc.cluster.local"}
    for leaf, name in ((controller, "policy-controller"), (webhook, "policy-webhook")):
        assert leaf["spec"]["commonName"] == name
        assert "client auth" in leaf["spec"]["usages"] and "server auth" not in leaf["spec"]["usages"]


def test_the_tls_flags_name_files_the_mounted_secrets_of_the_shipped_certificates_provide() -> None:
    pod, policyd = container_of("policyd", "policyd")
    served = {flag: certificate_behind(pod, policyd, flag) for flag in ("--tls-cert", "--tls-key", "--tls-client-ca")}
    assert {c["metadata"]["name"] for c in served.values()} == {"policyd-serving"}  # ca.crt: the CA that signed it
    clients = {
        "controller": container_of("policyd", "controller"),
        "webhook": container_of("policy-webhook", "webhook"),
    }
    expected = {"controller": "policy-controller-client", "webhook": "policy-webhook-client"}
    for name, (client_pod, container) in clients.items():
        behind = {
            flag: certificate_behind(client_pod, container, flag) for flag in ("--tls-ca", "--tls-cert", "--tls-key")
        }
        assert {c["metadata"]["name"] for c in behind.values()} == {expected[name]}, name
        # the host it dials is a name policyd's certificate carries
        host = flags(container)["--policyd"].rpartition(":")[0]
        assert host in served["--tls-cert"]["spec"]["dnsNames"], (name, host)
    webhook_pod, _ = clients["webhook"]
    assert not [v for v in webhook_pod["volumes"] if v.get("secret", {}).get("secretName") == "policyd-ca"]


def test_the_webhook_dials_the_policyd_service_which_serves_policyds_api() -> None:
    service = named("Service", "policyd")
    (port,) = service["spec"]["ports"]
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP" and port["name"] == "grpc"
    _, webhook = container_of("policy-webhook", "webhook")
    meta = service["metadata"]
    assert flags(webhook)["--policyd"] == f"{meta['name']}.{meta['namespace']}.svc:{port['port']}"
    deployment = named("Deployment", "policyd")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert meta["namespace"] == deployment["metadata"]["namespace"]
    _, policyd = container_of("policyd", "policyd")
    (api,) = [p for p in policyd["ports"] if p["name"] == port["targetPort"]]
    assert flags(policyd)["--listen"] == f"0.0.0.0:{api['containerPort']}"
    # health stays off the Service: plaintext for the kubelet alone
    assert int(flags(policyd)["--health-listen"].rpartition(":")[2]) != api["containerPort"]


def test_authz_is_the_shipped_configmap_and_names_the_certificates_common_names() -> None:
    pod, policyd = container_of("policyd", "policyd")
    volume, key = mounted(pod, policyd, flags(policyd)["--authz"])
    configmap = named("ConfigMap", volume["configMap"]["name"])
    authz = yaml.safe_load(configmap["data"][key])
    controller = named("Certificate", "policy-controller-client")["spec"]["commonName"]
    webhook = named("Certificate", "policy-webhook-client")["spec"]["commonName"]
    assert sorted(authz["read"]) == sorted([controller, webhook])
    assert authz["write"] == [controller]  # only the controller changes the catalog
