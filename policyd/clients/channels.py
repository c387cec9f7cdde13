"""How the clients (policyctl, the controller) reach policyd and the renderer: TLS with
``--tls-ca`` (the CA that signed the server's certificate; the system's CAs without it) and
``--tls-cert``/``--tls-key`` (a client certificate, for a server that asks for one), and a
deadline on every call. TLS is for host:port addresses; a ``unix:`` socket is local and
plaintext (its file permissions say who may connect)."""

from __future__ import annotations

import argparse
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from policyd.clients.tls_faults import TlsFault, check_files, diagnose
from policyd.clients.tls_faults import TlsFlagError as TlsFlagError

DEFAULT_TIMEOUT = 60.0  # seconds a call may take unless --request-timeout says otherwise


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
            check_files(self.ca, self.cert, self.key)
            return grpc.ssl_channel_credentials(
                root_certificates=self.ca.read_bytes() if self.ca else None,
                private_key=self.key.read_bytes() if self.key else None,
                certificate_chain=self.cert.read_bytes() if self.cert else None,
            )
        except OSError as err:
            raise TlsFlagError(f"cannot read {err.filename}: {err.strerror}") from None

    def channel(self, address: str, diagnosed: bool = True) -> grpc.Channel:
        """A channel whose calls carry this connection's deadline unless they set their own.
        Several ``host:port`` addresses, comma-separated, are one channel that sends each call
        to the next of them (gRPC's round_robin): the processes of ``policyd --processes`` (its
        GetStatus lists their endpoints) or replicas behind no balancer. ``diagnosed``: a call
        that fails on TLS raises a TlsFault saying why; a caller on the hot path (the webhook,
        where an interceptor's Python costs a tenth of a review) asks ``fault`` itself instead."""
        target, options = target_of(address)
        authority = dict(options).get("grpc.default_authority")
        if authority and self.tls:  # a list: the certificate names the first host
            options.append(("grpc.ssl_target_name_override", _host(authority)))
        unix = address.startswith("unix:")
        if not self.tls or unix:
            channel = grpc.insecure_channel(target, options=options)
        else:
            channel = grpc.secure_channel(target, self.credentials(), options=options)
        interceptors: list[grpc.UnaryUnaryClientInterceptor] = (
            [_TlsDiagnosis(address, self)] if diagnosed and not unix else []
        )
        if self.timeout is not None:
            interceptors.append(_Deadline(self.timeout))
        # the first is the outermost: a TlsFault it raises leaves the call as it is
        return grpc.intercept_channel(channel, *interceptors) if interceptors else channel

    def fault(self, failed: grpc.RpcError, address: str) -> TlsFault | None:
        """What disagrees, when a call to ``address`` failed on TLS; None otherwise (the first
        address of a list stands for all: they are one server's processes)."""
        return diagnose(failed, address.split(",")[0].strip(), self.ca, self.cert, self.key, self.tls)


class AddressError(ValueError):
    """A server address the client cannot connect to as written."""


# What every channel to policyd does: a call that found a replica unavailable (stopping, killed,
# or still listing the cluster) goes again, to the next replica when there are several; a
# policyd that went away is dialled again within a second or two of coming back. gRPC's defaults
# take up to two minutes: its reconnect backoff grows to two minutes, and a connection attempt that
# hangs (a vanished pod's IP drops the SYN, a stopped process never completes the handshake) is
# given 20 s (min_reconnect_backoff_ms) before the next one starts.
_RETRY = {
    "name": [{}],  # every method of every service: the renderer's too
    "retryPolicy": {
        "maxAttempts": 5,
        "initialBackoff": "0.05s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    },
}
RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    # an attempt's deadline, TCP connect and TLS handshake included: ample on a loaded machine
    ("grpc.min_reconnect_backoff_ms", 2000),
]


def service_config(balanced: bool) -> str:
    """The channel's service config: retries; over several addresses also round_robin, sending
    calls only to a replica whose gRPC health says SERVING (the server's: a policyd listing the
    cluster is not yet; the renderer always is)."""
    config: dict[str, Any] = {"methodConfig": [_RETRY]}
    if balanced:
        config["loadBalancingConfig"] = [{"round_robin": {}}]
        config["healthCheckConfig"] = {"serviceName": ""}
    return json.dumps(config)


def _host(address: str) -> str:
    return address.rpartition(":")[0].removeprefix("[").removesuffix("]")


def target_of(address: str) -> tuple[str, list[tuple[str, Any]]]:
    """gRPC's target for an address as a flag gives it, and the channel options it needs;
    AddressError for an address or a list that cannot be one. A ``dns:///`` name is balanced over
    every address it resolves to (a headless Service's pods: policyd's replicas)."""
    if "," in address:
        return balanced(address)
    _check(address)
    many = address.startswith("dns:")
    return address, [("grpc.service_config", service_config(many)), *RECONNECT]


def _check(address: str) -> None:
    """AddressError unless ``address`` is ``host:port``, ``dns:[//authority/]host:port`` or a
    ``unix:`` socket: gRPC would take anything else as a name to resolve, and fail every call."""
    if address.startswith(("unix:", "unix-abstract:")):
        return
    name = address.removeprefix("dns:")
    if name != address and name.startswith("//"):
        name = name[2:].partition("/")[2]  # the DNS server's authority, usually empty
    host, sep, port = name.rpartition(":")
    bare = host.removeprefix("[").removesuffix("]")
    if "://" in name:
        raise AddressError(f"address {address!r}: give host:port, without a URL scheme")
    if not sep or not port:
        raise AddressError(f"address {address!r}: no port (give host:port)")
    if not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise AddressError(f"address {address!r}: port {port!r} is not a number from 1 to 65535")
    if not bare or (":" in bare and bare == host) or any(c in bare for c in "/[]@ "):
        raise AddressError(f"address {address!r}: {host!r} is not a host name or IP address (IPv6 in brackets)")


def balanced(addresses: str) -> tuple[str, list[tuple[str, Any]]]:
    """gRPC's target for comma-separated ``host:port`` addresses, and the channel options that
    balance calls over them. gRPC takes a list of IP addresses of one family only: each host
    stands for its first address of a family every host has (IPv4 when they all have it)."""
    resolved: list[tuple[dict[int, str], str]] = []
    for address in (a.strip() for a in addresses.split(",")):
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or address.startswith("unix:"):
            raise AddressError(f"address {addresses!r}: {address!r} is not host:port (a list takes host:port only)")
        host = _host(address)
        try:
            infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as err:
            raise AddressError(f"address {addresses!r}: cannot resolve {host!r}: {err}") from None
        ips: dict[int, str] = {}
        for family, _, _, _, sockaddr in infos:
            ips.setdefault(family, str(sockaddr[0]))
        resolved.append((ips, port))
    common = set.intersection(*(set(ips) for ips, _ in resolved))
    if not common:
        raise AddressError(f"address {addresses!r}: mixes IPv4 and IPv6 addresses (gRPC balances over one family)")
    family = socket.AF_INET if socket.AF_INET in common else socket.AF_INET6
    v6 = family == socket.AF_INET6
    listed = [f"[{ips[family]}]:{port}" if v6 else f"{ips[family]}:{port}" for ips, port in resolved]
    scheme = "ipv6" if v6 else "ipv4"
    first = addresses.split(",")[0].strip()
    options = [("grpc.service_config", service_config(True)), ("grpc.default_authority", first), *RECONNECT]
    return f"{scheme}:{','.join(listed)}", options


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


class _TlsDiagnosis(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """A call that failed on TLS raises a TlsFault saying what disagrees."""

    def __init__(self, address: str, connection: Connection) -> None:
        self.address = address
        self.connection = connection

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(details, request)
        # a blocking call's failure; a future's is not done yet, and is left to its caller
        if isinstance(outcome, grpc.RpcError) and outcome.done():
            fault = self.connection.fault(outcome, self.address)
            if fault is not None:
                raise fault
        return outcome


def add_flags(p: argparse.ArgumentParser, default_timeout: float = DEFAULT_TIMEOUT) -> None:
    p.add_argument("--tls-ca", type=Path, help="connect with TLS, trusting this PEM CA")
    p.add_argument("--tls-cert", type=Path, help="client certificate (PEM), for servers that ask for one")
    p.add_argument("--tls-key", type=Path, help="the client certificate's PEM private key")
    p.add_argument(
        "--request-timeout",
        type=_timeout,
        default=None if default_timeout == DEFAULT_TIMEOUT else default_timeout,
        help=f"seconds a call may take, 0 for no limit (default {default_timeout:g})",
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
