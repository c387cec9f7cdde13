"""The webhook as users meet it: OME's webhook configurations registered with a real API server
(``clientConfig.url`` on 127.0.0.1 and a CA of the tests' own), and the real ``kubectl`` built
beside the API server (tests/cluster/build.sh), run as a subprocess, its output kept word for word.
The story tests and benchmarks/webhook.py share it."""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from testkit.helm import render
from testkit.shared import REPO

KUBECTL = REPO / "tests" / "cluster" / "bin" / "kubectl"

# OME's four webhooks (pkg/webhook/admission, their kubebuilder markers): name -> (path, plural);
# the configurations registered are the shipped ones (the chart's, charts/policyd), checked against these
VALIDATING = {
    "inferenceservice.ome-webhook-server.validator": ("/validate-ome-io-v1beta1-inferenceservice", "inferenceservices"),
    "servingruntime.ome-webhook-server.validator": ("/validate-ome-io-v1beta1-servingruntime", "servingruntimes"),
    "clusterservingruntime.ome-webhook-server.validator": (
        "/validate-ome-io-v1beta1-clusterservingruntime",
        "clusterservingruntimes",
    ),
}
MUTATING = {
    "inferenceservice.ome-webhook-server.defaulter": ("/mutate-ome-io-v1beta1-inferenceservice", "inferenceservices"),
}
# A webhook entry each configuration gets beside OME's, for the tests alone: it matches only objects
# carrying PROBE_LABEL and calls a port nothing listens on, so a server-side dry run of such an
# object fails once the API server calls the configuration's webhooks, and passes again once it
# has dropped them. That is how a test knows a registration (or its removal) is in effect.
PROBE_LABEL = "policyd.test/webhook-probe"


@dataclass(frozen=True)
class Ran:
    """One kubectl run: its exit code and its output, as the user saw it."""

    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> tuple[int, str, str]:
        return self.code, self.stdout, self.stderr


class Kubectl:
    """``kubectl --kubeconfig KUBECONFIG ...`` run in ``cwd``, where manifests are written under the
    file names the spec's commands use (kubectl prints them back in its errors)."""

    def __init__(self, kubeconfig: Path, cwd: Path) -> None:
        if not KUBECTL.exists():
            raise FileNotFoundError(f"{KUBECTL} is missing: run bash tests/cluster/build.sh")
        self.kubeconfig = kubeconfig
        self.cwd = cwd
        cwd.mkdir(parents=True, exist_ok=True)
        # kubectl's own state (discovery cache) under cwd, not the user's ~/.kube
        self.env = {**os.environ, "HOME": str(cwd), "KUBECACHEDIR": str(cwd / ".kube-cache")}
        self.env.pop("KUBECONFIG", None)

    def __call__(self, *args: str, timeout: float = 90.0) -> Ran:
        start = time.monotonic()
        done = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def write(self, file: str, *docs: dict[str, Any]) -> Path:
        path = self.cwd / file
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return path

    def apply(self, file: str, *docs: dict[str, Any]) -> Ran:
        """``kubectl apply -f FILE`` of ``docs``, written to FILE in order."""
        self.write(file, *docs)
        return self("apply", "-f", file)


def closed_port() -> socket.socket:
    """A loopback port bound but not listening (connections to it are refused); keep the socket
    open while the port must stay closed, so nothing else takes it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def shipped() -> list[dict[str, Any]]:
    """The webhook configurations the chart ships: OME's four webhooks, by name and path."""
    docs = [d for d in render() if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")]
    paths = {w["name"]: w["clientConfig"]["service"]["path"] for d in docs for w in d["webhooks"]}
    expected = {name: path for name, (path, _) in (VALIDATING | MUTATING).items()}
    assert paths == expected, f"the chart ships {paths}, not OME's {expected}"
    return docs


def registrations(
    url: str,
    ca_pem: bytes,
    suffix: str,
    namespaces: Sequence[str] | None,
    cluster_label: tuple[str, str] | None,
    probe_port: int,
    timeout_seconds: int = 10,
) -> list[dict[str, Any]]:
    """The shipped configurations pointed at ``url`` (``https://127.0.0.1:PORT``) instead of their
    Service, with ``ca_pem`` as their caBundle, named ``<name>-<suffix>``. Registrations are
    cluster-wide: with ``namespaces``, the namespaced kinds' webhooks see only those namespaces;
    with ``cluster_label`` (key, value), the ClusterServingRuntime webhook sees only runtimes with
    the label (a namespaceSelector does not apply to cluster-scoped objects)."""
    ca = base64.b64encode(ca_pem).decode()
    configs = []
    for config_shipped in shipped():
        config = copy.deepcopy(config_shipped)
        config["metadata"] = {"name": f"{config_shipped['metadata']['name']}-{suffix}"}
        for webhook in config["webhooks"]:
            service = webhook["clientConfig"].pop("service")
            webhook["clientConfig"] = {"url": url + (service.get("path") or ""), "caBundle": ca}
            webhook.setdefault("timeoutSeconds", timeout_seconds)
            plurals = {r for rule in webhook.get("rules", []) for r in rule.get("resources", [])}
            if plurals & {"clusterservingruntimes", "acceleratorclasses", "clusterbasemodels"}:
                if cluster_label is not None:
                    key, value = cluster_label
                    webhook["objectSelector"] = {"matchLabels": {key: value}}
            elif namespaces is not None:
                webhook["namespaceSelector"] = {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}
                    ]
                }
        mutating = config["kind"] == "MutatingWebhookConfiguration"
        config["webhooks"].append(_probe(suffix, mutating, probe_port))
        configs.append(config)
    return configs


def _probe(suffix: str, mutating: bool, port: int) -> dict[str, Any]:
    kind = "mutate" if mutating else "validate"
    return {
        "name": f"{kind}-probe.{suffix}.policyd.test",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": f"https://127.0.0.1:{port}/probe"},
        "rules": [
            {
                "apiGroups": ["ome.io"],
                "apiVersions": ["v1beta1"],
                "operations": ["CREATE"],
                "resources": ["inferenceservices"],
            }
        ],
        "objectSelector": {"matchLabels": {PROBE_LABEL: f"{kind}-{suffix}"}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "timeoutSeconds": 2,
    }


def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.1)


def _probed(api: client.ApiClient, namespace: str, kind: str, suffix: str) -> bool:
    """Whether the API server calls the configuration's probe webhook now: a server-side dry run
    of an InferenceService only that probe matches."""
    body = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": f"probe-{suffix}", "namespace": namespace, "labels": {PROBE_LABEL: f"{kind}-{suffix}"}},
        "spec": {},
    }
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            "ome.io", "v1beta1", namespace, "inferenceservices", body, dry_run="All"
        )
    except ApiException as err:
        if f"{kind}-probe.{suffix}.policyd.test" in str(err.body):
            return True
        raise
    return False


def _dropped(api: client.ApiClient, namespace: str, kind: str, suffix: str) -> bool:
    return not _probed(api, namespace, kind, suffix)


@contextlib.contextmanager
def registered(
    api: client.ApiClient, configs: list[dict[str, Any]], suffix: str, namespace: str, timeout: float = 60.0
) -> Iterator[None]:
    """``configs`` (made by ``registrations(..., suffix, ...)``) registered for the block, in effect
    when it starts, and always deleted at its end; the block is left only once the API server calls
    them no more, so the tests after it are not affected. ``namespace``: one that exists, for the
    probes' dry runs."""
    admission = client.AdmissionregistrationV1Api(api)
    create: dict[str, Callable[..., Any]] = {
        "ValidatingWebhookConfiguration": admission.create_validating_webhook_configuration,
        "MutatingWebhookConfiguration": admission.create_mutating_webhook_configuration,
    }
    delete: dict[str, Callable[..., Any]] = {
        "ValidatingWebhookConfiguration": admission.delete_validating_webhook_configuration,
        "MutatingWebhookConfiguration": admission.delete_mutating_webhook_configuration,
    }
    kinds = {"mutate" if c["kind"] == "MutatingWebhookConfiguration" else "validate" for c in configs}
    made = []
    try:
        for config in configs:
            create[config["kind"]](config)
            made.append(config)
        for kind in sorted(kinds):
            until(partial(_probed, api, namespace, kind, suffix), timeout, f"the {kind} configuration in effect")
        yield
    finally:
        for config in made:
            with contextlib.suppress(ApiException):
                delete[config["kind"]](config["metadata"]["name"])
        for kind in sorted(kinds):
            until(partial(_dropped, api, namespace, kind, suffix), timeout, f"the {kind} configuration gone")
