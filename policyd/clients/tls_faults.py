"""What went wrong when a client's TLS and the server's do not agree, in one line. gRPC reports
every such fault as UNAVAILABLE, most as "Socket closed", which reads as a server that is down;
the client files are checked before gRPC takes them (a key that is not the certificate's makes
gRPC's C core log and fail every connection), and a failed connection is looked at again with a
TLS handshake of Python's own, which tells a server that speaks TLS, and one that closes the
connection on the certificate it was given (or not given)."""

from __future__ import annotations

import re
import socket
import ssl
from pathlib import Path
from typing import Any

import grpc

PROBE_SECONDS = 10.0  # for the handshake that looks again, after a call already failed


class TlsFlagError(ValueError):
    """Client TLS files that cannot be used, in one line."""


class TlsFault(grpc.RpcError):  # type: ignore[misc]  # grpc's classes are untyped
    """A call that failed because the two ends' TLS disagree: still UNAVAILABLE, for whoever
    retries, with details that say what disagrees."""

    def __init__(self, address: str, reason: str, failed: Any) -> None:
        super().__init__(f"{address} {reason}")
        self.address = address
        self.reason = reason
        self._failed = failed

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return f"{self.address} {self.reason}"

    def trailing_metadata(self) -> Any:
        return self._failed.trailing_metadata() if isinstance(self._failed, grpc.Call) else None


def check_files(ca: Path | None, cert: Path | None, key: Path | None) -> None:
    """TlsFlagError unless the CA is PEM certificates and the key is the certificate's."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca is not None:
        try:
            context.load_verify_locations(cadata=ca.read_text())
        except (ssl.SSLError, ValueError, UnicodeDecodeError):
            raise TlsFlagError(f"--tls-ca {ca} is not a PEM certificate") from None
    if cert is None or key is None:
        return
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as err:
        if err.reason == "KEY_VALUES_MISMATCH":
            raise TlsFlagError(f"--tls-key {key} is not the key of the certificate --tls-cert {cert}") from None
        raise TlsFlagError(f"--tls-cert {cert} and --tls-key {key} are not a PEM certificate and its key") from None


_UNTRUSTED = re.compile(r"CERTIFICATE_VERIFY_FAILED: ([^:]+)")


def diagnose(
    failed: grpc.RpcError, address: str, ca: Path | None, cert: Path | None, key: Path | None, tls: bool
) -> TlsFault | None:
    """A TlsFault for a call to ``address`` (one ``host:port``) that failed on TLS, else None."""
    if not isinstance(failed, grpc.Call) or failed.code() != grpc.StatusCode.UNAVAILABLE:
        return None
    details = failed.details() or ""
    if tls and "WRONG_VERSION_NUMBER" in details:
        return TlsFault(address, "does not serve TLS: connect without --tls-ca, --tls-cert and --tls-key", failed)
    untrusted = _UNTRUSTED.search(details)
    if tls and untrusted:
        reason = f"serves a certificate this client does not trust ({untrusted.group(1).strip()}): "
        return TlsFault(address, reason + "pass --tls-ca with the CA that signed it", failed)
    if "Socket closed" not in details:
        return None  # refused, unresolvable, timed out: not a TLS fault
    handshake = _handshake(address, cert, key)
    if not tls and handshake is not None:
        reason = "serves TLS and this connection is plaintext: pass --tls-ca with the CA that signed its certificate"
        return TlsFault(address, reason, failed)
    if tls and handshake == "closed":
        if cert is None:
            return TlsFault(address, "requires a client certificate: pass --tls-cert and --tls-key", failed)
        reason = f"refused the client certificate {cert} (signed by a CA it does not trust, or expired)"
        return TlsFault(address, reason, failed)
    return None


def _handshake(address: str, cert: Path | None, key: Path | None) -> str | None:
    """After a TLS handshake (trusting any certificate: only the conversation matters here) with
    ``address``: "closed" when the server then closed the connection (it refused the client's
    certificate, or its absence), "open" when it went on; None when it speaks no TLS or
    cannot be reached."""
    # a gRPC dns: target (dns:///name:port, dns://resolver/name:port) names its host after the last slash
    host, _, port = address.rpartition("/")[2].rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        if cert is not None and key is not None:
            context.load_cert_chain(cert, key)
        with (
            socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS) as raw,
            context.wrap_socket(raw) as tls,
        ):
            # TLS 1.3 finishes the client's side of the handshake before the server has judged
            # its certificate; a server that refuses it closes the connection instead of
            # sending HTTP/2's first frame
            try:
                return "open" if tls.recv(1) else "closed"
            except TimeoutError:
                return "open"
            except ssl.SSLError:  # an alert after the handshake: closed as well
                return "closed"
    except (OSError, ValueError):  # ssl.SSLError is an OSError
        return None
