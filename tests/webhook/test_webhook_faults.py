"""policy-webhook under faults and hostile callers: policyd coming back after a hanging connection
attempt, a slow API server during read-your-writes, malformed and deeply nested bodies, clients
that trickle or hold connections, an expired serving certificate, a bad --policyd address; and
what it leaves behind in $TMPDIR."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from controller.manifests import named_isvc, named_model, named_runtime
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from testkit.relay import Relay
from testkit.shared import RULES

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.clients.webhook.connections import MAX_CONNECTIONS, REQUEST_READ_TIMEOUT

from .support import (
    PATHS,
    Certs,
    Webhook,
    admission_review,
    running_webhook,
    serving_certs,
    unreachable_kubeconfig,
    webhook_command,
)

ISVC = PATHS["inferenceservice"]


@pytest.fixture(scope="module")
def policyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    catalog = tmp_path_factory.mktemp("webhook-catalog")
    for i, doc in enumerate((named_runtime(), named_model())):
        (catalog / f"{i}.yaml").write_text(yaml.safe_dump(doc))
    args = ["--rules", str(RULES), "--catalog", str(catalog), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address


# -- policyd back ------------------------------------------------------------------------------------


def test_reviews_are_admitted_within_seconds_of_policyd_coming_back(certs: Certs, policyd: str) -> None:
    """Its last connection attempt hung (policyd's pod gone, its IP dropping the SYNs): gRPC alone
    gives such an attempt 20 s, denying every review meanwhile."""
    host, port = policyd.rsplit(":", 1)
    with Relay((host, int(port))) as relay, running_webhook(relay.address, certs.cert_dir) as webhook:
        client = webhook.client(certs.ca)
        assert client.post(f"{ISVC}?timeout=2s", admission_review(named_isvc())).response["allowed"] is False
        relay.wait_held(1)
        relay.forward()
        back = time.monotonic()
        while not client.post(f"{ISVC}?timeout=2s", admission_review(named_isvc())).response["allowed"]:
            assert time.monotonic() - back < 10, "still denied 10 s after policyd came back"  # gRPC alone: 20 s
            time.sleep(0.05)


# -- read-your-writes against a slow API server -------------------------------------------------------


@pytest.fixture
def silent_api_server(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig naming an API server that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
        kubeconfig.write_text(kubeconfig.read_text().replace("127.0.0.1:9", f"127.0.0.1:{sock.getsockname()[1]}"))
        yield kubeconfig


def test_reads_from_a_slow_api_server_end_within_the_reviews_timeout(
    certs: Certs, policyd: str, silent_api_server: Path
) -> None:
    """A runtime policyd's catalog lacks is read from the API server; the kubernetes client's
    retries gave each of four attempts the whole budget again."""
    isvc = named_isvc()
    isvc["spec"]["runtime"] = {"name": "srt-just-applied"}
    with running_webhook(policyd, certs.cert_dir, kubeconfig=silent_api_server) as webhook:
        client = webhook.client(certs.ca)
        start = time.monotonic()
        response = client.post(f"{ISVC}?timeout=4s", admission_review(isvc)).response
        took = time.monotonic() - start
        assert took < 4, took  # answered by timeout - 1 s (3 s), before the API server gives up
        assert response["allowed"] is False
        assert "srt-just-applied" in response["status"]["message"]
        assert any(
            "cannot read ClusterServingRuntime srt-just-applied" in str(line.get("msg")) for line in webhook.logs()
        )


# -- flags ---------------------------------------------------------------------------------------------


def test_a_bad_policyd_address_is_refused_before_serving(certs: Certs, tmp_path: Path) -> None:
    command = webhook_command("bogus:::", certs.cert_dir, "--listen", "127.0.0.1:0")
    command += ["--kubeconfig", str(unreachable_kubeconfig(tmp_path / "kubeconfig"))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "policy-webhook: address 'bogus:::': no port (give host:port)\n")


def test_the_help_names_the_files_cert_dir_holds() -> None:
    done = subprocess.run(
        webhook_command("127.0.0.1:1", Path("."), "--help"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "directory with tls.crt and tls.key, served as they change" in " ".join(done.stdout.split())


# -- hostile bodies: a one-line 400, never a dropped connection ---------------------------------------


def raw_exchange(webhook: Webhook, certs: Certs, request: bytes) -> bytes:
    """Everything the webhook answers one raw request, on a connection that then closes."""
    context = ssl.create_default_context(cafile=str(certs.ca))
    host, port = webhook.url.removeprefix("https://").rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname=host) as tls,
    ):
        tls.sendall(request)
        answer = b""
        while chunk := tls.recv(4096):
            answer += chunk
    return answer


def post(body: bytes, length: bytes | None = None) -> bytes:
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\nConnection: close\r\n\r\n"
    return head % (ISVC.encode(), str(len(body)).encode() if length is None else length) + body


def with_metadata(value: Any) -> bytes:
    review = admission_review(named_isvc())
    review["request"]["object"]["metadata"] = value
    return json.dumps(review).encode()


def nested_review(depth: int) -> bytes:
    review = admission_review(named_isvc())
    review["request"]["object"]["spec"] = "NESTED"
    return json.dumps(review).encode().replace(b'"NESTED"', b"[" * depth + b"]" * depth)


HOSTILE = {
    "metadata-list": (
        post(with_metadata(["a"])),
        "the AdmissionReview's object's metadata is a JSON list, not an object",
    ),
    "metadata-string": (
        post(with_metadata("a")),
        "the AdmissionReview's object's metadata is a JSON str, not an object",
    ),
    "metadata-number": (post(with_metadata(5)), "the AdmissionReview's object's metadata is a JSON int, not an object"),
    "length-not-ascii": (post(b"{}", "\xb2".encode("latin-1")), "Content-Length '\xb2' is not a number of bytes"),
    "nested-60000": (post(b"[" * 60000 + b"]" * 60000), "the body is nested too deep to read"),
    "nested-in-the-object": (post(nested_review(995)), "the body is nested too deep to read"),
}


@pytest.fixture(scope="module")
def webhook(policyd: str, certs: Certs) -> Iterator[Webhook]:
    with running_webhook(policyd, certs.cert_dir) as running:
        yield running


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_body_is_a_400_saying_what_is_wrong(webhook: Webhook, certs: Certs, name: str) -> None:
    request, message = HOSTILE[name]
    answer = raw_exchange(webhook, certs, request)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer[:200]
    assert answer.endswith(f"\r\n\r\n{message}\n".encode()), answer[-200:]
    assert "Traceback" not in webhook.log_file.read_text()


# -- clients that trickle or hold connections -----------------------------------------------------------


def tls_connection(webhook: Webhook, certs: Certs) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(certs.ca))
    host, port = webhook.url.removeprefix("https://").rsplit(":", 1)
    return context.wrap_socket(socket.create_connection((host, int(port)), timeout=30), server_hostname=host)


def test_a_request_trickled_a_byte_at_a_time_is_dropped_at_its_read_deadline(webhook: Webhook, certs: Certs) -> None:
    """Each byte within the idle timeout of the last: without a deadline of its own, the
    connection and its thread are held for as long as the client keeps sending."""
    trickle = f"POST {ISVC} HTTP/1.1\r\nHost: x\r\nX-Slow: {'a' * 1000}".encode()
    with tls_connection(webhook, certs) as tls:
        tls.settimeout(0.2)
        start = time.monotonic()
        for i in range(len(trickle)):
            assert time.monotonic() - start < REQUEST_READ_TIMEOUT + 10, "still reading the request"
            try:
                tls.sendall(trickle[i : i + 1])
                if tls.recv(1) == b"":  # closed by the webhook
                    break
            except TimeoutError:
                continue  # nothing to read: still open
            except OSError:  # reset by the webhook
                break
        took = time.monotonic() - start
    assert REQUEST_READ_TIMEOUT <= took < REQUEST_READ_TIMEOUT + 10, took
    assert webhook.client(certs.ca).get("/healthz").status == 200


def threads(process: subprocess.Popen[bytes]) -> int:
    status = Path(f"/proc/{process.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


def test_connections_are_bounded_and_a_new_one_takes_the_place_of_a_waiting_one(policyd: str, certs: Certs) -> None:
    """Idle connections past the bound: the webhook's threads stay within it, and a client
    arriving after them is answered."""
    with running_webhook(policyd, certs.cert_dir) as webhook:
        before = threads(webhook.process)
        idle = []
        try:
            for _ in range(MAX_CONNECTIONS + 50):
                idle.append(tls_connection(webhook, certs))
            # accepted in order: once this one is answered, every idle one was served or evicted
            reply = webhook.client(certs.ca).post(ISVC, admission_review(named_isvc()))
            assert reply.status == 200 and reply.response["allowed"] is True
            assert threads(webhook.process) <= before + MAX_CONNECTIONS
            assert any("connections open, the most served" in str(line.get("msg")) for line in webhook.logs())
        finally:
            for sock in idle:
                sock.close()


# -- a serving certificate out of its validity ----------------------------------------------------------


def write_serving_pair(certs: Certs, not_before: datetime.datetime, not_after: datetime.datetime) -> None:
    """tls.crt and tls.key valid from ``not_before`` to ``not_after``, of the test's CA, replaced
    as cert-manager replaces them (the key first)."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
        .issuer_name(certs.authority.name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(certs.authority.key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    for data, name in ((pem, "tls.key"), (cert.public_bytes(serialization.Encoding.PEM), "tls.crt")):
        partial = certs.cert_dir / f".{name}.partial"
        partial.write_bytes(data)
        os.replace(partial, certs.cert_dir / name)


def handshake(webhook: Webhook) -> None:
    """A new connection (the webhook takes the certificate on disk then), not verified: it is out of date."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    host, port = webhook.url.removeprefix("https://").rsplit(":", 1)
    with context.wrap_socket(socket.create_connection((host, int(port)), timeout=30)) as tls:
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert tls.recv(4096).startswith(b"HTTP/1.1 200 ")


def test_a_certificate_out_of_its_validity_is_logged_once(policyd: str, tmp_path: Path) -> None:
    certs = serving_certs(tmp_path / "certs")
    now = datetime.datetime.now(datetime.UTC)
    write_serving_pair(certs, now - datetime.timedelta(days=2), now - datetime.timedelta(days=1))
    with running_webhook(policyd, certs.cert_dir) as webhook:
        handshake(webhook)
        handshake(webhook)
        expired = [line for line in webhook.logs() if "expired at" in str(line.get("msg"))]
        assert [line["level"] for line in expired] == ["warning"]
        assert expired[0]["msg"].startswith(f"serving certificate {certs.cert_dir}/tls.crt expired at ")
        write_serving_pair(certs, now + datetime.timedelta(days=1), now + datetime.timedelta(days=2))
        handshake(webhook)
        handshake(webhook)
        early = [line for line in webhook.logs() if "is not valid before" in str(line.get("msg"))]
        assert len(early) == 1, early
