"""How the clients (policyctl, the controller) reach policyd and the renderer: TLS with
``--tls-ca`` (the CA that signed the server's certificate; the system's CAs without it) and
``--tls-cert``/``--tls-key`` (a client certificate, for a server that asks for one), and a
deadline on every call. TLS is for host:port addresses; a ``unix:`` socket is local and
plaintext (its file permissions say who may connect)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

DEFAULT_TIMEOUT = 60.0  # seconds a call may take unless --request-timeout says otherwise


class TlsFlagError(ValueError):
    pass


@dataclass(frozen=True)
class Connection:
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    timeout: float | None = DEFAULT_TIMEOUT  # None: no deadline

    @property
    def tls(self) -> bool:
        return any(p is not None for p in (self.ca, self.cert, self.key))

    def credentials(self) -> grpc.ChannelCredentials:
        if (self.cert is None) != (self.key is None):
            raise TlsFlagError("--tls-cert and --tls-key go together")
        try:
            return grpc.ssl_channel_credentials(
                root_certificates=self.ca.read_bytes() if self.ca else None,
                private_key=self.key.read_bytes() if self.key else None,
                certificate_chain=self.cert.read_bytes() if self.cert else None,
            )
        except OSError as err:
            raise TlsFlagError(f"cannot read {err.filename}: {err.strerror}") from None

    def channel(self, address: str) -> grpc.Channel:
        """A channel whose calls carry this connection's deadline unless they set their own."""
        if not self.tls or address.startswith("unix:"):
            channel = grpc.insecure_channel(address)
        else:
            channel = grpc.secure_channel(address, self.credentials())
        if self.timeout is None:
            return channel
        return grpc.intercept_channel(channel, _Deadline(self.timeout))


@dataclass(frozen=True)
class _Details(grpc.ClientCallDetails):  # type: ignore[misc]  # grpc's classes are untyped
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: Any
    compression: Any


class _Deadline(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if details.timeout is None:
            details = _Details(
                details.method,
                self.timeout,
                details.metadata,
                details.credentials,
                details.wait_for_ready,
                details.compression,
            )
        return continuation(details, request)


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tls-ca", type=Path, help="connect with TLS, trusting this PEM CA")
    p.add_argument("--tls-cert", type=Path, help="client certificate (PEM), for servers that ask for one")
    p.add_argument("--tls-key", type=Path, help="the client certificate's PEM private key")
    p.add_argument(
        "--request-timeout",
        type=_timeout,
        help=f"seconds a call may take, 0 for no limit (default {DEFAULT_TIMEOUT:g})",
    )


def _timeout(text: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def of(args: argparse.Namespace) -> Connection:
    timeout = getattr(args, "request_timeout", None)
    return Connection(
        getattr(args, "tls_ca", None),
        getattr(args, "tls_cert", None),
        getattr(args, "tls_key", None),
        DEFAULT_TIMEOUT if timeout is None else (timeout or None),
    )
