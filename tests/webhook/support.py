"""The real ``policy-webhook`` for a test: a subprocess serving HTTPS with a certificate of the
test's own CA, and a keep-alive HTTPS client that POSTs AdmissionReviews to it.

    from .support import PATHS, admission_review, running_webhook, serving_certs

    certs = serving_certs(tmp_path / "certs")  # a CA, and a cert dir with tls.crt/tls.key for 127.0.0.1
    with running_webhook(policyd_address, certs.cert_dir, kubeconfig=kube_cluster.kubeconfig) as webhook:
        webhook.url  # https://127.0.0.1:PORT  (clientConfig.url is webhook.url + PATHS[...])
        reply = webhook.client(certs.ca).post(PATHS["inferenceservice"], admission_review(isvc))
        reply.status, reply.json()["response"]["allowed"]
        webhook.logs()  # its JSON log lines so far, parsed

``running_webhook(policyd, cert_dir, *flags, kubeconfig=None)`` passes ``flags`` through (e.g.
``"--request-timeout", "2"``); without a kubeconfig the webhook gets one naming an API server
nothing listens on (it reads the cluster only for what policyd's catalog lacks). The process is
always stopped when the block ends, also on failure; ``webhook.process`` is its Popen."""

from __future__ import annotations

import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from testkit.certs import CA
from testkit.shared import REPO

from policyd.resources import kinds as ome_kinds

PATHS = {
    "inferenceservice": "/validate-ome-io-v1beta1-inferenceservice",
    "servingruntime": "/validate-ome-io-v1beta1-servingruntime",
    "clusterservingruntime": "/validate-ome-io-v1beta1-clusterservingruntime",
    "defaulter": "/mutate-ome-io-v1beta1-inferenceservice",
}
START_TIMEOUT = 60.0  # a loaded 2-core machine imports grpc and kubernetes slowly


@dataclass(frozen=True)
class Certs:
    ca: Path  # the CA's PEM: trust it (caBundle, the client's context)
    cert_dir: Path  # --cert-dir: tls.crt and tls.key for 127.0.0.1 and localhost
    authority: CA

    def renew(self, name: str = "webhook-renewed") -> None:
        """Replace tls.crt and tls.key with a new certificate of the same CA, as cert-manager
        renews it (each file replaced whole, the key first)."""
        issued = self.authority.issue(name, server=True)
        for source, target in ((issued.key, "tls.key"), (issued.cert, "tls.crt")):
            partial = self.cert_dir / f".{target}.partial"
            partial.write_bytes(source.read_bytes())
            os.replace(partial, self.cert_dir / target)


def serving_certs(directory: Path, name: str = "webhook") -> Certs:
    authority = CA(directory / "ca")
    cert_dir = directory / "serving"
    cert_dir.mkdir(parents=True, exist_ok=True)
    issued = authority.issue(name, server=True)
    (cert_dir / "tls.crt").write_bytes(issued.cert.read_bytes())
    (cert_dir / "tls.key").write_bytes(issued.key.read_bytes())
    return Certs(authority.path, cert_dir, authority)


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def response(self) -> dict[str, Any]:
        """The AdmissionReview's response."""
        answer: dict[str, Any] = self.json()["response"]
        return answer


class Client:
    """One HTTPS connection, kept open between requests as the API server keeps its own."""

    def __init__(self, url: str, ca: Path, timeout: float = 60.0) -> None:
        host, port = url.removeprefix("https://").rsplit(":", 1)
        self.context = ssl.create_default_context(cafile=str(ca))
        self.connection = http.client.HTTPSConnection(host, int(port), context=self.context, timeout=timeout)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] | None = None
    ) -> Reply:
        self.connection.request(method, path, body=body, headers=dict(headers or {}))
        reply = self.connection.getresponse()
        return Reply(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())

    def post(self, path: str, review: Mapping[str, Any] | bytes | str) -> Reply:
        body = review if isinstance(review, bytes) else (review if isinstance(review, str) else json.dumps(review))
        data = body.encode() if isinstance(body, str) else body
        return self.request("POST", path, data, {"Content-Type": "application/json"})

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def close(self) -> None:
        self.connection.close()


@dataclass(frozen=True)
class Webhook:
    url: str  # https://127.0.0.1:PORT
    process: subprocess.Popen[bytes]
    log_file: Path

    def client(self, ca: Path, timeout: float = 60.0) -> Client:
        return Client(self.url, ca, timeout)

    def logs(self) -> list[dict[str, Any]]:
        """Its log lines so far (JSON), lines that are not JSON as {"raw": line}."""
        lines = []
        for line in self.log_file.read_text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                lines.append({"raw": line})
        return lines


def unreachable_kubeconfig(path: Path) -> Path:
    """A kubeconfig naming an API server on a port nothing listens on (port 9, discard)."""
    cluster = {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "none", "cluster": cluster}],
                "users": [{"name": "none", "user": {"token": "none"}}],
                "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
                "current-context": "none",
            }
        )
    )
    return path


def webhook_command(policyd: str, cert_dir: Path, *flags: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "policyd.clients.webhook.main",
        "--policyd",
        policyd,
        "--cert-dir",
        str(cert_dir),
        *flags,
    ]


@contextmanager
def running_webhook(
    policyd: str,
    cert_dir: Path,
    *flags: str,
    kubeconfig: Path | None = None,
    log_level: str = "debug",
    timeout: float = START_TIMEOUT,
) -> Iterator[Webhook]:
    with tempfile.TemporaryDirectory(prefix="policy-webhook-") as tmp:
        ready, log_file = Path(tmp) / "ready", Path(tmp) / "webhook.log"
        kubeconfig = kubeconfig or unreachable_kubeconfig(Path(tmp) / "kubeconfig")
        command = webhook_command(
            policyd,
            cert_dir,
            "--listen",
            "127.0.0.1:0",
            "--ready-file",
            str(ready),
            "--kubeconfig",
            str(kubeconfig),
            "--log-level",
            log_level,
            *flags,
        )
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        with log_file.open("wb") as log:
            process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + timeout
            while not ready.exists():
                if process.poll() is not None:
                    raise RuntimeError(f"policy-webhook exited with {process.returncode}: {log_file.read_text()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"policy-webhook did not start within {timeout}s: {log_file.read_text()}")
                time.sleep(0.05)
            yield Webhook(f"https://{ready.read_text()}", process, log_file)
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


def admission_review(
    obj: Mapping[str, Any] | None,
    operation: str = "CREATE",
    *,
    kind: str | None = None,
    uid: str | None = None,
    old: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An admission.k8s.io/v1 AdmissionReview as the API server sends it for ``obj`` (``kind``
    when ``obj`` is None, e.g. a DELETE, which carries only the old object)."""
    subject = obj or old or {}
    meta = subject.get("metadata") or {}
    kind = kind or subject["kind"]
    plural = ome_kinds.PLURALS[kind]
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": "ome.io", "version": "v1beta1", "kind": kind},
        "resource": {"group": "ome.io", "version": "v1beta1", "resource": plural},
        "requestKind": {"group": "ome.io", "version": "v1beta1", "kind": kind},
        "name": meta.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "test"},
        "object": dict(obj) if obj is not None else None,
        "oldObject": dict(old) if old is not None else None,
        "dryRun": False,
    }
    if meta.get("namespace"):
        request["namespace"] = meta["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
