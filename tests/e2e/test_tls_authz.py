"""TLS, mTLS and who may change the catalog: policyd --tls-cert/--tls-key/--tls-client-ca/--authz,
policyctl --tls-ca/--tls-cert/--tls-key, the renderer's TLS, plaintext only on loopback unless
--insecure. Certificates are made in the test; everything runs over real sockets."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testkit.certs import CA, Pair
from testkit.ports import free_port

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .support import RULES, RUNTIME_NAME, isvc_manifest, model_manifest, policyctl, spec_manifest, started, write_yaml

DAEMON = [sys.executable, "-m", "policyd.daemon.main"]
RENDERER = [sys.executable, "-m", "policyd.clients.renderer.main"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    ca = CA(tmp_path_factory.mktemp("pki"))
    return {
        "ca": ca,
        "server": ca.issue("policyd", server=True),
        "controller": ca.issue("policy-controller", uris=("spiffe://cluster.local/ns/ome/sa/policyd",)),
        "reader": ca.issue("dashboard"),
        "stranger": CA(tmp_path_factory.mktemp("other"), "another CA").issue("policy-controller"),
    }


def _credentials(ca: CA, client: Pair | None = None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        ca.path.read_bytes(),
        client.key.read_bytes() if client else None,
        client.cert.read_bytes() if client else None,
    )


@contextmanager
def _daemon(tmp_path: Path, *flags: str, listen: str | None = None) -> Iterator[str]:
    catalog = tmp_path / "catalog"
    catalog.mkdir(exist_ok=True)
    write_yaml(catalog / "runtime.yaml", spec_manifest("004", "ServingRuntime", RUNTIME_NAME))
    write_yaml(catalog / "model.yaml", model_manifest())
    ready = tmp_path / "ready"
    ready.unlink(missing_ok=True)
    address = listen or f"127.0.0.1:{free_port()}"
    command = [*DAEMON, "--rules", str(RULES), "--catalog", str(catalog), "--log-level", "warning"]
    with started([*command, "--listen", address, *flags, "--ready-file", str(ready)], ready):
        yield address


def _status(
    address: str, credentials: grpc.ChannelCredentials | None, timeout: float = 10, wait: bool = True
) -> pb.GetStatusResponse:
    """GetStatus; ``wait``: until the channel connects (False: a refused handshake fails the call at once)."""
    channel = grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
    with channel:
        reply: pb.GetStatusResponse = policy_pb2_grpc.PolicyServiceStub(channel).GetStatus(
            pb.GetStatusRequest(), timeout=timeout, wait_for_ready=wait
        )
        return reply


def _apply(address: str, credentials: grpc.ChannelCredentials) -> pb.ApplyObjectsResponse:
    doc = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    with grpc.secure_channel(address, credentials) as channel:
        reply: pb.ApplyObjectsResponse = policy_pb2_grpc.PolicyServiceStub(channel).ApplyObjects(
            pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(doc))]), timeout=10
        )
        return reply


def _code(call: object) -> grpc.StatusCode:
    try:
        call()  # type: ignore[operator]
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return,attr-defined]
    return grpc.StatusCode.OK


def test_tls_serves_policyctl_with_tls_ca_and_refuses_plaintext_clients(tmp_path: Path, pki: dict) -> None:
    ca, server = pki["ca"], pki["server"]
    with _daemon(tmp_path, "--tls-cert", str(server.cert), "--tls-key", str(server.key)) as address:
        assert _status(address, _credentials(ca)).runtimes == 1
        result = policyctl("status", "--tls-ca", str(ca.path), address=address)
        assert result.returncode == 0, result.stderr
        # a list of addresses (calls balanced over them) checks the certificate by the first one's host
        listed = policyctl("status", "--tls-ca", str(ca.path), address=f"{address},{address}")
        assert listed.returncode == 0, listed.stderr
        plaintext = policyctl("status", "--request-timeout", "3", address=address)
        assert plaintext.returncode == 1 and "error:" in plaintext.stderr and "Traceback" not in plaintext.stderr


def test_mtls_refuses_a_client_without_a_certificate_or_with_one_from_another_ca(tmp_path: Path, pki: dict) -> None:
    ca, server = pki["ca"], pki["server"]
    flags = ("--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(ca.path))
    with _daemon(tmp_path, *flags) as address:
        assert _status(address, _credentials(ca, pki["reader"])).runtimes == 1
        assert _code(lambda: _status(address, _credentials(ca), wait=False)) == grpc.StatusCode.UNAVAILABLE
        stranger = _credentials(ca, pki["stranger"])
        assert _code(lambda: _status(address, stranger, wait=False)) == grpc.StatusCode.UNAVAILABLE
        cert, key = pki["controller"].cert, pki["controller"].key
        ok = policyctl(
            "status", "--tls-ca", str(ca.path), "--tls-cert", str(cert), "--tls-key", str(key), address=address
        )
        assert ok.returncode == 0, ok.stderr


def test_authz_lets_readers_read_and_only_writers_change_the_catalog(tmp_path: Path, pki: dict) -> None:
    ca, server = pki["ca"], pki["server"]
    authz = write_yaml(
        tmp_path / "authz.yaml",
        {"read": ["dashboard", "policy-controller"], "write": ["spiffe://cluster.local/ns/ome/sa/policyd"]},
    )
    flags = ("--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(ca.path))
    with _daemon(tmp_path, *flags, "--authz", str(authz)) as address:
        reader, controller = _credentials(ca, pki["reader"]), _credentials(ca, pki["controller"])
        assert _status(address, reader).runtimes == 1
        with grpc.secure_channel(address, reader) as channel:  # a what-if is a read: it applies nothing
            lint = policy_pb2_grpc.PolicyServiceStub(channel).Lint(pb.LintRequest(), timeout=10)
        assert lint.revisions.catalog_revision
        assert _code(lambda: _apply(address, reader)) == grpc.StatusCode.PERMISSION_DENIED
        assert _apply(address, controller).changes[0].action == "unchanged"  # the SAN is the writer's identity
        denied = policyctl(
            "delete",
            "servingruntime",
            RUNTIME_NAME,
            "-n",
            "llama-demo",
            "--tls-ca",
            str(ca.path),
            "--tls-cert",
            str(pki["reader"].cert),
            "--tls-key",
            str(pki["reader"].key),
            address=address,
        )
        assert denied.returncode == 1 and denied.stderr.splitlines() == [
            "Error from server (Forbidden): dashboard may not call DeleteObjects (`policyctl delete`)"
        ]
        # the file is read again when it changes
        write_yaml(authz, {"read": ["*"], "write": ["dashboard"]})
        deadline = time.monotonic() + 20
        while _code(lambda: _apply(address, reader)) != grpc.StatusCode.OK:
            assert time.monotonic() < deadline, "the changed authorization file was not read again"
            time.sleep(0.2)


def test_certificates_are_read_again_when_their_files_change(tmp_path: Path, pki: dict) -> None:
    ca, server = pki["ca"], pki["server"]
    served = Pair(tmp_path / "tls.crt", tmp_path / "tls.key")
    served.cert.write_bytes(server.cert.read_bytes())
    served.key.write_bytes(server.key.read_bytes())
    with _daemon(tmp_path, "--tls-cert", str(served.cert), "--tls-key", str(served.key)) as address:
        assert _status(address, _credentials(ca)).runtimes == 1
        renewed_ca = CA(tmp_path / "renewed", "renewed CA")
        renewed = renewed_ca.issue("policyd-renewed", server=True)
        served.key.write_bytes(renewed.key.read_bytes())
        served.cert.write_bytes(renewed.cert.read_bytes())
        deadline = time.monotonic() + 20
        while _code(lambda: _status(address, _credentials(renewed_ca), wait=False)) != grpc.StatusCode.OK:
            assert time.monotonic() < deadline, "the renewed certificate is not served"
            time.sleep(0.2)


def test_plaintext_beyond_loopback_needs_insecure(tmp_path: Path) -> None:
    port = free_port()
    refused = _run([*DAEMON, "--rules", str(RULES), "--listen", f"0.0.0.0:{port}"])
    assert refused.returncode == 2
    assert "plaintext beyond this machine" in refused.stderr and "--insecure" in refused.stderr
    with _daemon(tmp_path, "--insecure", listen=f"0.0.0.0:{port}") as address:
        assert _status(address.replace("0.0.0.0", "127.0.0.1"), None).runtimes == 1


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_the_renderer_serves_tls_the_same_way_and_policyctl_renders_through_it(tmp_path: Path, pki: dict) -> None:
    ca, server = pki["ca"], pki["server"]
    ready = tmp_path / "renderer-ready"
    renderer = f"127.0.0.1:{free_port()}"
    tls = ("--tls-cert", str(server.cert), "--tls-key", str(server.key))
    refused = _run([*RENDERER, "--listen", "0.0.0.0:0"])  # as policyd: no plaintext beyond loopback
    assert refused.returncode == 2 and "--insecure" in refused.stderr
    with started([*RENDERER, "--listen", renderer, *tls, "--ready-file", str(ready)], ready):
        with grpc.secure_channel(renderer, _credentials(ca)) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10, wait_for_ready=True
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with _daemon(tmp_path, *tls) as address:
            isvc = write_yaml(tmp_path / "isvc.yaml", isvc_manifest())
            result = policyctl(
                "render", "-f", str(isvc), "--renderer", renderer, "--tls-ca", str(ca.path), address=address
            )
            assert result.returncode == 0, result.stderr
            assert "kind: Deployment" in result.stdout
