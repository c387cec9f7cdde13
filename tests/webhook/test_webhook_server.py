"""policy-webhook over real HTTPS (a CA of the test's own) against a real policyd: policyd's
answers carried over as AdmissionReview responses, bad bodies refused with a one-line 400,
deletes allowed without asking, the defaulter's patch, a denial naming policyd when it does not
answer (within the review's timeout), the serving certificate reloaded, bad flags refused."""

from __future__ import annotations

import base64
import copy
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from controller.manifests import auto_isvc, auto_model, auto_runtime, named_isvc, named_model, named_runtime
from e2e.support import started
from testkit.ports import free_port
from testkit.shared import RULES

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .support import (
    PATHS,
    Certs,
    Webhook,
    admission_review,
    running_webhook,
    serving_certs,
    stop,
    unreachable_kubeconfig,
    webhook_command,
)

ISVC = PATHS["inferenceservice"]


@pytest.fixture(scope="module")
def policyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    catalog = tmp_path_factory.mktemp("webhook-catalog")
    for i, doc in enumerate((named_runtime(), named_model(), auto_runtime(), auto_model())):
        (catalog / f"{i}.yaml").write_text(yaml.safe_dump(doc))
    args = ["--rules", str(RULES), "--catalog", str(catalog), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address


@pytest.fixture(scope="module")
def webhook(policyd: str, certs: Certs) -> Iterator[Webhook]:
    with running_webhook(policyd, certs.cert_dir) as running:
        yield running


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A port nothing listens on (bound, never listened: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def admit_directly(policyd: str, obj: dict[str, Any]) -> pb.AdmitResponse:
    with grpc.insecure_channel(policyd) as channel:
        stub = policy_pb2_grpc.PolicyServiceStub(channel)
        reply: pb.AdmitResponse = stub.Admit(pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(obj))), timeout=30)
        return reply


def missing_runtime_isvc() -> dict[str, Any]:
    isvc = copy.deepcopy(named_isvc())
    isvc["spec"]["runtime"] = {"name": "srt-nowhere"}
    return isvc


# -- policyd's answers, carried over -----------------------------------------------------------


@pytest.mark.parametrize("make", [named_isvc, auto_isvc, missing_runtime_isvc], ids=["named", "auto", "missing"])
def test_the_response_is_policyds_answer(webhook: Webhook, certs: Certs, policyd: str, make: Any) -> None:
    isvc = make()
    review = admission_review(isvc)
    reply = webhook.client(certs.ca).post(ISVC, review)
    assert reply.status == 200, reply.text
    assert reply.json()["apiVersion"] == "admission.k8s.io/v1" and reply.json()["kind"] == "AdmissionReview"
    response = reply.response
    expected = admit_directly(policyd, isvc)
    assert response["uid"] == review["request"]["uid"]
    assert response["allowed"] is expected.allowed
    assert response.get("warnings", []) == list(expected.warnings)
    if expected.allowed:
        assert "status" not in response
    else:
        assert response["status"] == {
            "status": "Failure",
            "code": 403,
            "reason": "Forbidden",
            "message": expected.denial.message,
        }


def test_policyds_warnings_and_denials_reach_the_response(webhook: Webhook, certs: Certs) -> None:
    client = webhook.client(certs.ca)
    warned = client.post(ISVC, admission_review(auto_isvc())).response
    assert warned["allowed"] is True and warned["warnings"], warned
    denied = client.post(ISVC, admission_review(missing_runtime_isvc())).response
    assert denied["allowed"] is False
    assert "srt-nowhere" in denied["status"]["message"]
    # the missing runtime was looked for in the cluster (here: none reachable), the denial stands
    assert any("cannot read" in str(line.get("msg")) for line in webhook.logs())


def test_a_runtime_review_goes_to_its_endpoint(webhook: Webhook, certs: Certs) -> None:
    client = webhook.client(certs.ca)
    reply = client.post(PATHS["clusterservingruntime"], admission_review(named_runtime()))
    assert reply.status == 200 and reply.response["allowed"] is True, reply.text
    runtime = auto_runtime()
    reply = client.post(PATHS["servingruntime"], admission_review(runtime))
    assert reply.status == 200 and "allowed" in reply.response, reply.text


def test_one_connection_carries_many_reviews(webhook: Webhook, certs: Certs) -> None:
    client = webhook.client(certs.ca)
    for _ in range(20):
        assert client.post(ISVC, admission_review(named_isvc())).status == 200
    sock = client.connection.sock
    assert client.post(ISVC, admission_review(named_isvc())).status == 200
    assert client.connection.sock is sock  # kept alive: no new connection, no new handshake


# -- the defaulter ------------------------------------------------------------------------------


def test_the_defaulter_returns_policyds_patch_base64_encoded(webhook: Webhook, certs: Certs) -> None:
    isvc = named_isvc()
    isvc["spec"]["engine"] = {}
    isvc["spec"]["decoder"] = {"minReplicas": 2}
    response = webhook.client(certs.ca).post(PATHS["defaulter"], admission_review(isvc)).response
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    assert {"op": "add", "path": "/spec/engine/minReplicas", "value": 1} in patch
    assert {"op": "add", "path": "/spec/decoder/maxReplicas", "value": 3} in patch


def test_nothing_to_default_is_no_patch(webhook: Webhook, certs: Certs) -> None:
    isvc = named_isvc()
    isvc["spec"]["engine"] = {"minReplicas": 1, "maxReplicas": 1}
    isvc["spec"].pop("decoder", None)
    isvc["spec"].pop("router", None)
    response = webhook.client(certs.ca).post(PATHS["defaulter"], admission_review(isvc)).response
    assert response["allowed"] is True
    assert "patch" not in response and "patchType" not in response


# -- bad requests ---------------------------------------------------------------------------------


def review_without(path: list[str]) -> dict[str, Any]:
    review = admission_review(named_isvc())
    target = review
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return review


def review_with(path: list[str], value: Any) -> dict[str, Any]:
    review = review_without(path)
    target = review
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return review


BAD_BODIES = {
    "not-json": (b"{not json", "the body is not JSON: "),
    "not-utf8": (b"\xff\xfe", "the body is not JSON: "),
    "a-list": (b"[]", "the body is not an admission.k8s.io/v1 AdmissionReview: a JSON list, not an object"),
    "v1beta1": (
        json.dumps({**admission_review(named_isvc()), "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
        "the body is not an admission.k8s.io/v1 AdmissionReview: apiVersion 'admission.k8s.io/v1beta1', "
        "kind 'AdmissionReview'",
    ),
    "no-request": (json.dumps(review_without(["request"])).encode(), "the AdmissionReview has no request"),
    "no-uid": (json.dumps(review_without(["request", "uid"])).encode(), "the AdmissionReview's request has no uid"),
    "no-object": (
        json.dumps(review_with(["request", "object"], None)).encode(),
        "the AdmissionReview's request has no object (operation CREATE)",
    ),
    "other-kind": (
        json.dumps(admission_review(named_runtime())).encode(),
        "this endpoint reviews InferenceService objects, the request is for ClusterServingRuntime",
    ),
}


@pytest.mark.parametrize("name", BAD_BODIES)
def test_a_bad_body_is_a_400_saying_what_is_wrong_in_one_line(webhook: Webhook, certs: Certs, name: str) -> None:
    body, message = BAD_BODIES[name]
    reply = webhook.client(certs.ca).post(ISVC, body)
    assert reply.status == 400
    assert reply.text.startswith(message), reply.text
    assert reply.text.count("\n") == 1 and reply.text.endswith("\n")
    assert "Traceback" not in webhook.log_file.read_text()


def test_an_unknown_path_is_a_404_and_a_wrong_method_a_400(webhook: Webhook, certs: Certs) -> None:
    client = webhook.client(certs.ca)
    reply = client.post("/validate-ome-io-v1beta1-basemodel", admission_review(named_isvc()))
    assert reply.status == 404
    assert reply.text.startswith("no webhook at /validate-ome-io-v1beta1-basemodel: the webhook's paths are ")
    reply = client.get(ISVC)
    assert (reply.status, reply.text) == (400, f"GET {ISVC}: POST an admission.k8s.io/v1 AdmissionReview here\n")
    reply = client.request("PUT", ISVC, b"{}")
    assert reply.status == 400
    assert client.post(ISVC, admission_review(named_isvc())).status == 200  # the connection is still good


def _exchange(webhook: Webhook, certs: Certs, request: bytes) -> bytes:
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


def test_a_body_without_a_length_is_refused(webhook: Webhook, certs: Certs) -> None:
    answer = _exchange(
        webhook, certs, f"POST {ISVC} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    )
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert answer.endswith(b"send the AdmissionReview with a Content-Length\n")


def test_header_names_are_read_whatever_their_case(webhook: Webhook, certs: Certs) -> None:
    body = json.dumps(admission_review(named_isvc())).encode()
    head = f"POST {ISVC} HTTP/1.1\r\nhost: x\r\ncontent-length: {len(body)}\r\nCONNECTION: close\r\n\r\n"
    answer = _exchange(webhook, certs, head.encode() + body)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"Connection: close" in answer  # and it closed: _exchange read to the end


def test_a_header_line_without_a_colon_is_a_400_quoting_it(webhook: Webhook, certs: Certs) -> None:
    answer = _exchange(webhook, certs, f"POST {ISVC} HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert answer.endswith(b"Bad header line ('no colon here')\n")


def test_an_http_1_0_request_is_answered_and_the_connection_closed(webhook: Webhook, certs: Certs) -> None:
    answer = _exchange(webhook, certs, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b"ok\n")


# -- deletes, health -------------------------------------------------------------------------------


def test_deletes_are_allowed_without_asking_policyd(certs: Certs, dead_port: int) -> None:
    with running_webhook(f"127.0.0.1:{dead_port}", certs.cert_dir) as webhook:
        client = webhook.client(certs.ca)
        for path, obj in ((ISVC, named_isvc()), (PATHS["clusterservingruntime"], named_runtime())):
            review = admission_review(None, "DELETE", old=obj)
            response = client.post(path, review).response
            assert response == {"uid": review["request"]["uid"], "allowed": True}


def test_healthz_and_readyz(webhook: Webhook, certs: Certs, dead_port: int) -> None:
    client = webhook.client(certs.ca)
    assert (client.get("/healthz").status, client.get("/readyz").status) == (200, 200)
    with running_webhook(f"127.0.0.1:{dead_port}", certs.cert_dir) as down:
        client = down.client(certs.ca)
        assert client.get("/healthz").status == 200
        reply = client.get("/readyz")
        assert reply.status == 503
        assert reply.text == f"policyd at 127.0.0.1:{dead_port} does not answer: UNAVAILABLE\n"


# -- policyd down: a denial naming it, in time -------------------------------------------------------


def test_policyd_refusing_connections_is_a_denial_naming_it(certs: Certs, dead_port: int) -> None:
    with running_webhook(f"127.0.0.1:{dead_port}", certs.cert_dir) as webhook:
        client = webhook.client(certs.ca)
        for path in (ISVC, PATHS["defaulter"]):
            start = time.monotonic()
            response = client.post(f"{path}?timeout=10s", admission_review(named_isvc())).response
            assert time.monotonic() - start < 10
            assert response["allowed"] is False
            status = response["status"]
            assert (status["code"], status["reason"]) == (503, "ServiceUnavailable")
            assert status["message"] == (
                f"policyd at 127.0.0.1:{dead_port} did not answer:"
                " it is unavailable (not running, or not reachable from the webhook)"
            )


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says anything: a policyd that hangs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def test_a_policyd_that_hangs_is_a_denial_within_the_reviews_timeout(certs: Certs, silent_port: int) -> None:
    with running_webhook(f"127.0.0.1:{silent_port}", certs.cert_dir, "--request-timeout", "0") as webhook:
        client = webhook.client(certs.ca)
        start = time.monotonic()
        response = client.post(f"{ISVC}?timeout=3s", admission_review(named_isvc())).response
        took = time.monotonic() - start
        assert took < 3, took  # the API server gives up at 3s: the denial comes before
        assert response["allowed"] is False
        assert response["status"]["message"].startswith(f"policyd at 127.0.0.1:{silent_port} did not answer: ")


def test_the_request_timeout_bounds_each_call(certs: Certs, silent_port: int) -> None:
    with running_webhook(f"127.0.0.1:{silent_port}", certs.cert_dir, "--request-timeout", "1") as webhook:
        start = time.monotonic()
        response = webhook.client(certs.ca).post(ISVC, admission_review(named_isvc())).response
        assert time.monotonic() - start < 8
        assert (
            response["status"]["message"] == f"policyd at 127.0.0.1:{silent_port} did not answer: no answer within 1s"
        )


# -- the serving certificate ----------------------------------------------------------------------------


def peer_certificate(webhook: Webhook, ca: Path) -> bytes:
    client = webhook.client(ca)
    try:
        client.get("/healthz")
        cert = client.connection.sock.getpeercert(binary_form=True)
        assert cert is not None
        return cert
    finally:
        client.close()


def test_a_renewed_certificate_is_served_to_new_connections(policyd: str, tmp_path: Path) -> None:
    certs = serving_certs(tmp_path / "certs")
    with running_webhook(policyd, certs.cert_dir) as webhook:
        kept = webhook.client(certs.ca)
        kept.get("/healthz")
        before = peer_certificate(webhook, certs.ca)
        certs.renew()
        after = peer_certificate(webhook, certs.ca)
        assert after != before
        assert after == ssl.PEM_cert_to_DER_cert((certs.cert_dir / "tls.crt").read_text())
        assert kept.get("/healthz").status == 200  # an open connection keeps going
        # a pair that does not load (the key of another certificate) keeps the last good one
        (certs.cert_dir / "tls.key").write_bytes(certs.authority.issue("other", server=True).key.read_bytes())
        assert peer_certificate(webhook, certs.ca) == after
        assert any("keeping the previous serving certificate" in str(line.get("msg")) for line in webhook.logs())


# -- starting and stopping ---------------------------------------------------------------------------


def start_once(*flags: str, cert_dir: Path, kubeconfig: Path | None = None, policyd: str = "127.0.0.1:1") -> Any:
    command = webhook_command(policyd, cert_dir, *flags)
    if kubeconfig is not None:
        command += ["--kubeconfig", str(kubeconfig)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_bad_flags_are_refused_with_exit_2_and_one_line(certs: Certs, tmp_path: Path) -> None:
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (["--listen", "nowhere"], certs.cert_dir, "policy-webhook: --listen 'nowhere': not host:port"),
        ([], empty, f"policy-webhook: --cert-dir {empty}: cannot load tls.crt and tls.key: {empty}/tls.crt: "),
        (
            ["--kubeconfig", str(tmp_path / "nope")],
            certs.cert_dir,
            "policy-webhook: no usable Kubernetes configuration",
        ),
        (
            ["--tls-ca", str(tmp_path / "no-ca.pem")],
            certs.cert_dir,
            f"policy-webhook: cannot read {tmp_path}/no-ca.pem",
        ),
    ]
    for flags, cert_dir, message in cases:
        done = start_once(*flags, cert_dir=cert_dir, kubeconfig=None if "--kubeconfig" in flags else kubeconfig)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(message), done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
    done = start_once(
        "--listen", "127.0.0.1:0", cert_dir=certs.cert_dir, kubeconfig=kubeconfig, policyd="127.0.0.1:1,unix:x"
    )
    assert done.returncode == 2
    assert done.stderr.startswith("policy-webhook: address '127.0.0.1:1,unix:x': 'unix:x' is not host:port"), (
        done.stderr
    )
    done = start_once("--request-timeout", "-1", cert_dir=certs.cert_dir, kubeconfig=kubeconfig)
    assert done.returncode == 2
    assert (
        done.stderr.splitlines()[-1] == "policy-webhook: error: argument --request-timeout: must be 0 or more, got -1"
    )


def test_a_port_in_use_is_refused(certs: Certs, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
        done = start_once("--listen", f"127.0.0.1:{port}", cert_dir=certs.cert_dir, kubeconfig=kubeconfig)
    assert done.returncode == 2
    assert done.stderr == f"policy-webhook: --listen 127.0.0.1:{port}: Address already in use\n"


def test_sigterm_stops_it_cleanly(policyd: str, certs: Certs) -> None:
    with running_webhook(policyd, certs.cert_dir, log_level="info") as webhook:
        client = webhook.client(certs.ca)
        assert client.post(ISVC, admission_review(named_isvc())).status == 200  # an idle keep-alive connection
        webhook.process.send_signal(signal.SIGTERM)
        assert webhook.process.wait(timeout=30) == 0
        assert webhook.logs()[-1]["msg"] == "stopped"
        assert "Traceback" not in webhook.log_file.read_text()
        stop(webhook.process)


def test_a_webhook_without_tls_to_a_policyd_serving_tls_is_a_denial_saying_so(certs: Certs, tmp_path: Path) -> None:
    """The webhook's calls carry no TLS diagnosis (it costs every review); an unanswered one is
    diagnosed, and the denial says what disagrees rather than "unavailable"."""
    served = certs.authority.issue("policyd", server=True)
    address, ready = f"127.0.0.1:{free_port()}", tmp_path / "ready"
    daemon = [sys.executable, "-m", "policyd.daemon.main", "--rules", str(RULES), "--log-level", "warning"]
    daemon += ["--listen", address, "--tls-cert", str(served.cert), "--tls-key", str(served.key)]
    with started([*daemon, "--ready-file", str(ready)], ready), running_webhook(address, certs.cert_dir) as webhook:
        response = webhook.client(certs.ca).post(ISVC, admission_review(named_isvc())).response
    assert response["allowed"] is False
    assert (response["status"]["code"], response["status"]["reason"]) == (503, "ServiceUnavailable")
    assert response["status"]["message"] == (
        f"policyd at {address} did not answer: it serves TLS and this connection is plaintext: "
        "pass --tls-ca with the CA that signed its certificate"
    )
