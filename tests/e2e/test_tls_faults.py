"""TLS that does not agree, as policyctl reports it: one line saying what disagrees (never "cannot
reach policyd … start it", never gRPC's own log lines), exit 1. Real daemons with TLS and mTLS,
real policyctl processes, certificates made in the test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from testkit.certs import CA, Pair
from testkit.ports import free_port

from policyd.clients.channels import Connection
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

from .conftest import Files
from .support import RULES, policyctl, started

DAEMON = [sys.executable, "-m", "policyd.daemon.main", "--rules", str(RULES), "--log-level", "warning"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    ca = CA(tmp_path_factory.mktemp("pki"))
    return {
        "ca": ca,
        "server": ca.issue("policyd", server=True),
        "client": ca.issue("dashboard"),
        "other": ca.issue("other"),
        "stranger": CA(tmp_path_factory.mktemp("elsewhere"), "another CA").issue("stranger"),
    }


def _serving(tmp: Path, *flags: str) -> Iterator[str]:
    address, ready = f"127.0.0.1:{free_port()}", tmp / "ready"
    with started([*DAEMON, "--listen", address, *flags, "--ready-file", str(ready)], ready):
        yield address


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory, pki: dict) -> Iterator[str]:
    server = pki["server"]
    yield from _serving(tmp_path_factory.mktemp("tls"), "--tls-cert", str(server.cert), "--tls-key", str(server.key))


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory, pki: dict) -> Iterator[str]:
    server, ca = pki["server"], pki["ca"]
    flags = ("--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(ca.path))
    yield from _serving(tmp_path_factory.mktemp("mtls"), *flags)


def _status(address: str, *flags: str) -> tuple[int, str]:
    result = policyctl("status", "--request-timeout", "30", *flags, address=address)
    return result.returncode, result.stderr


def _client(ca: CA, pair: Pair) -> tuple[str, ...]:
    return ("--tls-ca", str(ca.path), "--tls-cert", str(pair.cert), "--tls-key", str(pair.key))


def test_a_plaintext_client_of_a_tls_daemon_is_told_it_serves_tls(tls: str, mtls: str) -> None:
    for address in (tls, mtls):
        assert _status(address) == (
            1,
            f"error: policyd at {address} serves TLS and this connection is plaintext: "
            "pass --tls-ca with the CA that signed its certificate\n",
        )


def test_a_client_without_a_certificate_is_told_mtls_requires_one(mtls: str, pki: dict) -> None:
    assert _status(mtls, "--tls-ca", str(pki["ca"].path)) == (
        1,
        f"error: policyd at {mtls} requires a client certificate: pass --tls-cert and --tls-key\n",
    )


def test_a_key_that_is_not_the_certificates_is_refused_before_connecting(mtls: str, pki: dict) -> None:
    mixed = Pair(pki["client"].cert, pki["other"].key)
    assert _status(mtls, *_client(pki["ca"], mixed)) == (
        1,
        f"error: --tls-key {mixed.key} is not the key of the certificate --tls-cert {mixed.cert}\n",
    )


def test_a_client_certificate_of_another_ca_is_named_as_refused(mtls: str, pki: dict) -> None:
    stranger = pki["stranger"]
    assert _status(mtls, *_client(pki["ca"], stranger)) == (
        1,
        f"error: policyd at {mtls} refused the client certificate {stranger.cert} "
        "(signed by a CA it does not trust, or expired)\n",
    )


def test_a_tls_client_of_a_plaintext_daemon_is_told_it_does_not_serve_tls(daemon: str, pki: dict) -> None:
    assert _status(daemon, "--tls-ca", str(pki["ca"].path)) == (
        1,
        f"error: policyd at {daemon} does not serve TLS: connect without --tls-ca, --tls-cert and --tls-key\n",
    )


def test_a_server_certificate_of_another_ca_is_named_as_untrusted(tls: str, tmp_path: Path) -> None:
    other = CA(tmp_path / "other", "other CA")
    assert _status(tls, "--tls-ca", str(other.path)) == (
        1,
        f"error: policyd at {tls} serves a certificate this client does not trust "
        "(unable to get local issuer certificate): pass --tls-ca with the CA that signed it\n",
    )


def test_a_ca_file_that_is_no_certificate_is_refused(tls: str, pki: dict) -> None:
    key = pki["server"].key
    assert _status(tls, "--tls-ca", str(key)) == (1, f"error: --tls-ca {key} is not a PEM certificate\n")


def test_a_matching_client_certificate_still_connects(mtls: str, pki: dict) -> None:
    assert _status(mtls, *_client(pki["ca"], pki["client"])) == (0, "")


def test_every_channel_client_gets_the_fault_as_an_unavailable_call_that_says_what_disagrees(
    mtls: str, pki: dict
) -> None:
    """The controller and the webhook retry on UNAVAILABLE and log the details: the code stays, the details say why."""
    channel = Connection(pki["ca"].path, timeout=30).channel(mtls)
    with pytest.raises(grpc.RpcError) as failed:
        policy_pb2_grpc.PolicyServiceStub(channel).GetStatus(pb.GetStatusRequest())
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert failed.value.details() == f"{mtls} requires a client certificate: pass --tls-cert and --tls-key"


def test_render_names_the_renderer_when_its_tls_and_the_clients_disagree(daemon: str, tls: str, files: Files) -> None:
    """policyd answers in plaintext; the renderer's address serves TLS (any TLS server tells it)."""
    result = policyctl("render", "-f", str(files.isvc), "--renderer", tls, "--request-timeout", "30", address=daemon)
    assert (result.returncode, result.stderr) == (
        1,
        f"error: the renderer at {tls} serves TLS and this connection is plaintext: "
        "pass --tls-ca with the CA that signed its certificate\n",
    )
