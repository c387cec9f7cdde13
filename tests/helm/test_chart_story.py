"""Seed 002's story through the installed chart: ``helm install`` on the test control plane, then
the chart's containers run locally with the args, environment and files the installed Deployments
give them (tests/helm/pods.py: two policyd replicas, the controller with its renderer, the
webhook; each with its service account's token), and the story driven with kubectl as the page
drives it. Then a ``helm upgrade`` that adds an organisation's rule: the ConfigMap's files are
swapped as the kubelet swaps them, both policyd replicas reload it, nothing restarts, and the next
``kubectl`` write meets the rule through the webhook.

Two stand-ins for the pod network, which the fake nodes do not have: the webhook configurations
the API server calls are copies of the installed ones with ``url: https://127.0.0.1:PORT`` for the
Service (the installed ones are kept off every object by an objectSelector: the API server cannot
reach the fake pods), and the webhook serves a certificate of the chart's CA for 127.0.0.1, where
the chart's names the Service."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from controller.manifests import NAMED_ISVC, NAMED_RUNTIME, named_isvc, named_model, named_runtime
from controller.support import eventually
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testkit.cluster import Cluster, add_gpu_nodes
from testkit.helm import CHART, helm, webhook_configurations
from testkit.shared import REPO

from policyd.clients.renderer.names import model_node_label

from .pods import Pod, Pods

RELEASE, NAMESPACE, DEMO = "policyd", "ome", "llama-demo"
GPU_NODES = ("h100-0", "h100-1", "l40s-0", "l40s-1")
# the installed configurations' objectSelector: no object carries the label
UNREACHABLE = {"webhook": {"objectSelector": {"matchLabels": {"policyd.test/in-cluster-webhook": "unreachable"}}}}
TEAM_RULE = (
    (REPO / "rules" / "examples" / "namespace-runtime-label.yaml").read_text().replace("team-a", DEMO)
)  # fmt: skip
TEAM_LABEL = f"policy.example.com/team={DEMO}"


def loopback_pair(ca_secret: dict[str, str]) -> dict[str, bytes]:
    """A serving certificate for 127.0.0.1 signed by the chart's CA (Secret policyd-ca), laid out
    as the webhook's serving Secret is."""
    ca_pem = base64.b64decode(ca_secret["tls.crt"])
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(base64.b64decode(ca_secret["tls.key"]), None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "policy-webhook")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {"tls.crt": cert.public_bytes(serialization.Encoding.PEM), "tls.key": key_pem, "ca.crt": ca_pem}


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = cluster.kubectl(*args, stdin=stdin, check=False)
    return done.returncode, done.stdout, done.stderr


def apply(cluster: Cluster, manifest: dict[str, Any], *flags: str) -> tuple[int, str, str]:
    return kubectl(cluster, "apply", *flags, "-f", "-", stdin=yaml.safe_dump(manifest))


def serving(pod: Pod) -> bool:
    """policyd's readiness probe: gRPC health on its health port, plaintext."""
    with grpc.insecure_channel(f"127.0.0.1:{pod.containers['policyd'].ports['health']}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def webhook_healthy(pod: Pod, ca: bytes) -> bool:
    """The webhook's probes: /healthz over HTTPS."""
    context = ssl.create_default_context(cadata=ca.decode())
    url = f"https://127.0.0.1:{pod.containers['webhook'].ports['webhook']}/healthz"
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def status(pod: Pod, client: Pod) -> dict[str, Any]:
    """policyctl status of a policyd replica, with the controller's client certificate (a reader)."""
    tls = client.volumes["controller-cert"]
    done = subprocess.run(
        [
            "policyctl", "status", "-o", "json", "--address", f"127.0.0.1:{pod.containers['policyd'].ports['api']}",
            "--tls-ca", str(tls / "ca.crt"), "--tls-cert", str(tls / "tls.crt"), "--tls-key", str(tls / "tls.key"),
        ],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def register_locally(cluster: Cluster, webhook: Pod) -> None:
    """Copies of the installed webhook configurations that call the local webhook."""
    port = webhook.containers["webhook"].ports["webhook"]
    installed = webhook_configurations(cluster, RELEASE)
    assert len(installed) == 4
    for config in installed:
        hooks = []
        for hook in config["webhooks"]:
            service = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{service['path']}"
            hook.pop("objectSelector")
            hooks.append(hook)
        copy = {
            "apiVersion": config["apiVersion"],
            "kind": config["kind"],
            "metadata": {"name": f"{config['metadata']['name']}-local", "labels": {"policyd.test/local": "true"}},
            "webhooks": hooks,
        }
        cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(copy))


@pytest.fixture
def installed(helm_cluster: Cluster) -> Iterator[Cluster]:
    kubeconfig = helm_cluster.kubeconfig
    helm(
        "install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace", kubeconfig=kubeconfig, values=UNREACHABLE
    )
    try:
        yield helm_cluster
    finally:
        helm("uninstall", RELEASE, "-n", NAMESPACE, "--ignore-not-found", kubeconfig=kubeconfig)
        helm_cluster.kubectl("delete", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-l",
                             "policyd.test/local=true", "--ignore-not-found")  # fmt: skip


@pytest.fixture
def pods(installed: Cluster) -> Iterator[Pods]:
    # a short root: the renderer's unix socket path must stay within 107 bytes (pytest's tmp_path,
    # under xdist, does not)
    root = Path(tempfile.mkdtemp(prefix="pods-"))
    running = Pods(installed, NAMESPACE, root, Path(sys.executable).parent)
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_seed_002_through_the_installed_charts_containers_and_a_rule_added_by_helm_upgrade(
    installed: Cluster, pods: Pods
) -> None:
    cluster = installed
    add_gpu_nodes(cluster)
    # the model agent labels the nodes where the model is ready; here, by hand
    ready = f"{model_node_label(named_model()['metadata']['name'], None)}=Ready"
    cluster.kubectl("label", "node", *GPU_NODES, ready, "--overwrite")

    # the pods, as the installed Deployments describe them
    replicas = [pods.lay_out("policyd", i) for i in range(2)]
    headless = ",".join(f"127.0.0.1:{p.containers['policyd'].ports['api']}" for p in replicas)
    for replica in replicas:
        pods.start(replica, headless)
    for replica in replicas:  # ready once every kind is listed
        eventually(lambda r=replica: pods.alive() and serving(r), timeout=60, what=f"{replica.name} SERVING")  # type: ignore[misc]
    controller = pods.lay_out("policy-controller", 0)
    pods.start(controller, headless)
    ca_secret = json.loads(cluster.kubectl("get", "secret", "policyd-ca", "-n", NAMESPACE, "-o", "json").stdout)["data"]
    webhook = pods.lay_out("policy-webhook", 0, instead={"serving-cert": loopback_pair(ca_secret)})
    pods.start(webhook, headless)
    ca = base64.b64decode(ca_secret["tls.crt"])
    eventually(lambda: webhook_healthy(webhook, ca), timeout=60, what="the webhook's /healthz")
    pods.alive()
    register_locally(cluster, webhook)

    # prerequisites: the namespace and the model; the runtime, through its webhook
    cluster.kubectl("create", "namespace", DEMO)
    assert apply(cluster, named_model())[0] == 0
    isvc = named_isvc()
    # the tip: the webhook rejects an InferenceService whose runtime does not exist yet (retried
    # with a dry run until the API server calls the configurations just registered)
    denial = 'admission webhook "inferenceservice.ome-webhook-server.validator" denied the request'

    def denied() -> tuple[int, str, str] | None:
        got = apply(cluster, isvc, "--dry-run=server")
        return got if denial in got[2] else None

    code, _, err = eventually(denied, timeout=60, what="the webhook's denial")
    assert code == 1 and f"{NAMED_RUNTIME} not found" in err, err
    assert apply(cluster, named_runtime()) == (0, f"clusterservingruntime.ome.io/{NAMED_RUNTIME} created\n", "")

    # Step 2: apply the InferenceService, wait for it to become ready
    assert apply(cluster, isvc) == (0, f"inferenceservice.ome.io/{NAMED_ISVC} created\n", "")
    waited = kubectl(cluster, "wait", "--for=condition=Ready", f"inferenceservice/{NAMED_ISVC}", "-n", DEMO,
                     "--timeout=100s")  # fmt: skip
    assert waited == (0, f"inferenceservice.ome.io/{NAMED_ISVC} condition met\n", ""), (
        waited,
        cluster.kubectl("get", "inferenceservice,deployments,pods", "-n", DEMO, "-o", "yaml").stdout[-4000:],
        controller.containers["controller"].log.read_text()[-4000:],
    )

    # Step 3: the runtime it used, on the pods; no advisory
    columns = cluster.kubectl("get", "inferenceservice", NAMED_ISVC, "-n", DEMO).stdout.splitlines()
    shown = dict(zip(columns[0].split(), columns[1].split(), strict=False))
    assert shown["READY"] == "True" and shown["URL"] == f"http://{NAMED_ISVC}.{DEMO}.svc.cluster.local:8080"
    labels = cluster.kubectl(
        "get", "pods", "-n", DEMO, "-l", f"ome.io/inferenceservice={NAMED_ISVC}",
        "-o", "custom-columns=COMPONENT:.metadata.labels.component,RUNTIME:.metadata.labels.serving-runtime",
    ).stdout  # fmt: skip
    assert labels.split() == ["COMPONENT", "RUNTIME", "engine", NAMED_RUNTIME]
    advisories = f"--field-selector=involvedObject.name={NAMED_ISVC},reason=RuntimeCompatibilityAdvisory"
    events = kubectl(cluster, "get", "events", "-n", DEMO, advisories)
    assert events == (0, "", f"No resources found in {DEMO} namespace.\n")

    # helm upgrade adds the organisation's rule; the kubelet swaps the ConfigMap's files
    before = pods.alive()
    revisions = {status(r, controller)["revisions"]["rulesRevision"] for r in replicas}
    assert len(revisions) == 1
    helm("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", kubeconfig=cluster.kubeconfig,
         values={"rules": {"files": {"team.yaml": TEAM_RULE}}})  # fmt: skip
    for replica in replicas:
        replica.project(cluster)

    def reloaded(replica: Pod) -> bool:
        now = status(replica, controller)
        return bool(now["revisions"]["rulesRevision"] not in revisions and now["lastAttempt"]["ok"])

    for replica in replicas:
        eventually(lambda r=replica: reloaded(r), timeout=30, what=f"{replica.name} reloaded")  # type: ignore[misc]
    assert pods.alive() == before  # no process restarted
    for replica in replicas:
        assert serving(replica)

    # the rule, through the webhook: the runtime must carry the team's label in llama-demo
    code, _, err = kubectl(cluster, "label", "inferenceservice", NAMED_ISVC, "-n", DEMO, "tier=gold")
    assert code == 1 and denial in err, err
    assert f"runtime is not labelled {TEAM_LABEL}, which namespace {DEMO} requires" in err, err
    cluster.kubectl("label", "clusterservingruntime", NAMED_RUNTIME, TEAM_LABEL)
    eventually(
        lambda: kubectl(cluster, "label", "inferenceservice", NAMED_ISVC, "-n", DEMO, "tier=gold")[0] == 0,
        what="the label admitted once the runtime carries the team's",
    )
    waited = kubectl(cluster, "wait", "--for=condition=Ready", f"inferenceservice/{NAMED_ISVC}", "-n", DEMO,
                     "--timeout=60s")  # fmt: skip
    assert waited[0] == 0, waited

    # clean up: the InferenceService; every container stops cleanly on SIGTERM
    assert kubectl(cluster, "delete", "inferenceservice", NAMED_ISVC, "-n", DEMO)[0] == 0
    pods.alive()
    codes = pods.stop()
    assert set(codes.values()) == {0}, codes
    # HOME is the image's /nonexistent: the parse cache went to the emptyDir, nothing complained
    for pod in pods.pods:
        for container in pod.containers.values():
            assert "parse cache" not in container.log.read_text(), container.log
